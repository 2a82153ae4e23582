"""``nbgrad.nn.functional``: PyTorch's signatures over the nn ops of ops/nn/ and the pointwise
activations, plus what PyTorch itself composes (l1_loss, normalize, bilinear, soft-target
cross_entropy, ...), composed the same way here so that the node names match PyTorch's."""

import warnings

import numpy as np

from .. import dtypes as _dt, random as _random
from .._tensor import Tensor
from ..autograd import inplace as _inplace
from ..ops import pointwise_fns as _api, softmax as _softmax
from ..ops.dispatch import (
    broadcast_error as _broadcast_error,
    pointwise as _pointwise,
    unary as _unary,
)
from ..ops.linalg import einsum as _einsum, matmul as _matmul
from ..ops.nn import (
    conv as _conv,
    embedding as _embedding,
    linear as _linear,
    loss as _loss,
    norm as _norm,
    pad as _pad,
    pool as _pool,
)
from ..ops.nn._common import (
    check_float as _float_arg,
    check_no_grad as _no_grad_arg,
    size_str as _size,
)
from ..ops.registry import REGISTRY as _R, write_out as _write_out
from ..ops.shape import broadcast_tensors as _broadcast_tensors

__all__ = [
    "avg_pool2d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "relu_",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]

_make = Tensor._make


def _tensor_arg(x, fn, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(
            "%s(): argument '%s' (position %d) must be Tensor, not %s"
            % (fn, name, pos, type(x).__name__)
        )
    return x


# ---------------------------------------------------------------------------------------------
# linear, bilinear


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias (PyTorch: MmBackward0 / AddmmBackward0 / ViewBackward0)."""
    _tensor_arg(input, "linear")
    _tensor_arg(weight, "linear", "weight", 2)
    if bias is None:
        return _matmul(input, weight.t())
    if input.ndim == 2:
        return _linear.addmm(input, weight, bias)
    if input.ndim == 0:
        raise RuntimeError(
            "both arguments to linear need to be at least 1D, but they are 0D and %dD" % weight.ndim
        )
    lead = tuple(input.shape[:-1])
    rows = int(np.prod(lead, dtype=np.int64))  # not -1: ambiguous over zero in-features
    out = _linear.addmm(input.reshape(rows, input.shape[-1]), weight, bias)
    return out.view(*lead, out.shape[-1])


def _check_bilinear(x1, x2, weight):
    if x1.ndim != x2.ndim:
        raise RuntimeError(
            "bilinear(): input dimensions do not match: got %d and %d" % (x1.ndim, x2.ndim)
        )
    for d in range(x1.ndim - 1):
        if x1.shape[d] != x2.shape[d]:
            raise RuntimeError(
                "bilinear(): input batch dimensions do not match at dim %d: got "
                "%d and %d" % (d, x1.shape[d], x2.shape[d])
            )
    if weight.ndim != 3:
        raise RuntimeError(
            "bilinear(): weight must be three-dimensional, got %d dimensions" % weight.ndim
        )
    if x1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            "bilinear(): input1 size does not match weight size: got %d but "
            "expected %d" % (x1.shape[-1], weight.shape[1])
        )
    if x2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            "bilinear(): input2 size does not match weight size: got %d but "
            "expected %d" % (x2.shape[-1], weight.shape[2])
        )


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o]."""
    x1, x2 = _tensor_arg(input1, "bilinear", "input1"), _tensor_arg(input2, "bilinear", "input2", 2)
    _check_bilinear(x1, x2, weight)
    lead = tuple(x1.shape[:-1])
    y = _einsum("bi,oij,bj->bo", x1.reshape(-1, x1.shape[-1]), weight, x2.reshape(-1, x2.shape[-1]))
    if len(lead) != 1:
        y = y.view(*lead, weight.shape[0])
    if bias is not None:
        y = y + bias
    return y


# ---------------------------------------------------------------------------------------------
# convolution, pooling


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, conv):
    fname = "conv%dd" % nd
    x = _tensor_arg(input, fname)
    _tensor_arg(weight, fname, "weight", 2)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            "Expected %dD (unbatched) or %dD (batched) input to %s, but got input "
            "of size: %s" % (nd + 1, nd + 2, fname, list(x.shape))
        )
    if x.ndim == nd + 1:
        return conv(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    return conv(x, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, _conv.conv1d)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, _conv.conv2d)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    _tensor_arg(input, "max_pool2d")
    y, idx = _pool.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (y, idx) if return_indices else y


max_pool2d_with_indices = max_pool2d


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    _tensor_arg(input, "avg_pool2d")
    geo = _pool.avg_pool2d_geometry(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    return _pool.avg_pool2d(input, geo)


# ---------------------------------------------------------------------------------------------
# dropout, embedding


def dropout(input, p=0.5, training=True, inplace=False):
    """Train mode: ``input * mask / (1 - p)`` (MulBackward0), the mask drawn from nbgrad's
    default generator; eval mode (or p == 0): the input itself, like PyTorch."""
    _tensor_arg(input, "dropout")
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        mask = np.zeros((), input._data.dtype)
    else:
        keep = _random.rng().random(
            input.shape, dtype=np.float64 if input._dtype is _dt.float64 else np.float32
        ) < (1.0 - p)
        mask = (keep * (1.0 / (1.0 - p))).astype(input._data.dtype)
    m = _make(mask)
    return input.mul_(m) if inplace else _api.mul(input, m)


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    _tensor_arg(input, "embedding")
    _tensor_arg(weight, "embedding", "weight", 2)
    if input._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the "
            "following scalar types: Long, Int; but got torch.%sTensor instead "
            "(while checking arguments for embedding)" % input._dtype._legacy
        )
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    V = weight.shape[0]
    if padding_idx is not None:
        if padding_idx >= V or padding_idx < -V:  # PyTorch asserts
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx = V + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _embedding.embedding_renorm_(weight, input, max_norm, norm_type)
    return _embedding.embedding(input, weight, padding_idx, scale_grad_by_freq)


# ---------------------------------------------------------------------------------------------
# normalisation


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _norm.layer_norm(_tensor_arg(input, "layer_norm"), normalized_shape, weight, bias, eps)


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Batch statistics in training (updating the running buffers in place with ``momentum``
    and the unbiased variance), running statistics in evaluation mode."""
    x = _tensor_arg(input, "batch_norm")
    if not x._data.size:
        return _norm.batch_norm_empty(x, weight, bias, training)
    mean, rstd = _norm.batch_norm_stats(
        x, running_mean, running_var, weight, bias, training, momentum, eps
    )
    C = x.shape[1]
    w = weight.reshape(C) if weight is not None and weight.ndim != 1 else weight
    b = bias.reshape(C) if bias is not None and bias.ndim != 1 else bias
    return _norm.batch_norm(x, w, b, mean, rstd, bool(training), eps)


# ---------------------------------------------------------------------------------------------
# activations (registry pointwise ops)


def relu(input, inplace=False):
    return input.relu_() if inplace else _api.relu(input)


def relu_(input):
    return input.relu_()


def tanh(input):
    return _api.tanh(input)


def sigmoid(input):
    return _api.sigmoid(input)


def gelu(input, approximate="none"):
    _tensor_arg(input, "gelu")
    if approximate == "none":
        return _unary(_R["gelu"], input)
    if approximate == "tanh":
        return _unary(_R["gelu.tanh"], input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input, inplace=False):
    _tensor_arg(input, "silu")
    if inplace:
        return _inplace.inplace(input, silu)
    return _unary(_R["silu"], input)


def softplus(input, beta=1.0, threshold=20.0):
    _tensor_arg(input, "softplus")
    return _pointwise(_R["softplus"], (input,), (float(beta), float(threshold)))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _tensor_arg(input, "leaky_relu")
    if inplace:
        return _inplace.inplace(input, leaky_relu, negative_slope)
    return _pointwise(_R["leaky_relu"], (input,), (float(negative_slope),))


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.log_softmax(input, dim, dtype)


# ---------------------------------------------------------------------------------------------
# losses


def _reduction(size_average, reduce, reduction, stacklevel=4):
    """The ``reduction`` string, from the deprecated size_average/reduce pair when given (with
    PyTorch's warning, attributed ``stacklevel`` frames up: the loss function's caller)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
        warnings.warn(
            "size_average and reduce args will be deprecated, please use "
            "reduction='%s' instead." % reduction,
            UserWarning,
            stacklevel=stacklevel,
        )
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    return reduction


def _elementwise_loss_args(input, target, size_average, reduce, reduction, fname):
    """The mse_loss / l1_loss prelude: checks, PyTorch's size warning, the reduction, and
    ``input``/``target`` broadcast to one shape."""
    _tensor_arg(input, fname)
    _tensor_arg(target, fname, "target", 2)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            "Using a target size (%s) that is different to the input size (%s). This "
            "will likely lead to incorrect results due to broadcasting. Please ensure "
            "they have the same size." % (_size(target.shape), _size(input.shape)),
            UserWarning,
            stacklevel=3,
        )
    reduction = _reduction(size_average, reduce, reduction, stacklevel=4)
    x, t = input, target
    if tuple(x.shape) != tuple(t.shape):
        try:
            x, t = _broadcast_tensors(x, t)
        except (RuntimeError, ValueError):
            raise _broadcast_error((input, target)) from None
    return x, t, reduction


def _weighted(err, weight, input, reduction):
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    err = err * weight
    if reduction == "none":
        return err
    if reduction == "sum":
        return err.sum()
    return err.sum() / weight.sum()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    x, t, reduction = _elementwise_loss_args(
        input, target, size_average, reduce, reduction, "mse_loss"
    )
    if weight is not None:
        return _weighted((x - t) ** 2, weight, input, reduction)
    return _loss.mse_loss(x, t, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    x, t, reduction = _elementwise_loss_args(
        input, target, size_average, reduce, reduction, "l1_loss"
    )
    err = (x - t).abs()
    if weight is not None:
        return _weighted(err, weight, input, reduction)
    if reduction == "none":
        return err
    return err.sum() if reduction == "sum" else err.mean()


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    _tensor_arg(input, "nll_loss")
    _tensor_arg(target, "nll_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


def _ce_probs(x, target, weight, reduction, smoothing):
    if not target._dtype.is_inexact:
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, "
            "got %s" % target._dtype._legacy
        )
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(
            "weight tensor should be defined either for all %d classes or no "
            "classes but got weight tensor of shape: %s" % (C, list(weight.shape))
        )
    lp = _softmax.log_softmax(x, cdim)
    if smoothing > 0:
        target = target * (1 - smoothing) + smoothing / C
    prod = lp * target
    if weight is not None:
        shape = [1] * x.ndim
        shape[cdim] = C
        prod = prod * weight.view(shape)
    if reduction == "none":
        return -(prod.sum(cdim))
    if reduction == "sum":
        return -(prod.sum())
    if x.numel() == 0:
        return -(prod.sum()) * float("nan")
    return _loss.div_scalar(-(prod.sum()), x.numel() / C)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Class indices: one fused Numba log-softmax + NLL kernel forward and backward (stable for
    logits of any magnitude).  Class probabilities: log_softmax composed like PyTorch."""
    x = _tensor_arg(input, "cross_entropy")
    _tensor_arg(target, "cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s" % label_smoothing)
    if tuple(x.shape) == tuple(target.shape):
        _float_arg(x, "cross_entropy")
        return _ce_probs(x, target, weight, reduction, float(label_smoothing))
    return _loss.cross_entropy(x, target, weight, ignore_index, reduction, float(label_smoothing))


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    x = _tensor_arg(input, "binary_cross_entropy")
    _tensor_arg(target, "binary_cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(
            "Using a target size (%s) that is different to the input size (%s) is "
            "deprecated. Please ensure they have the same size."
            % (_size(target.shape), _size(x.shape))
        )
    _no_grad_arg(weight, "binary_cross_entropy", "weight")
    if target.dtype is not x.dtype:  # PyTorch's kernel: same dtypes, checked before the rest
        raise RuntimeError(
            "Found dtype %s but expected %s" % (target.dtype._legacy, x.dtype._legacy)
        )
    _float_arg(x, "binary_cross_entropy")
    if weight is not None:
        np.broadcast_shapes(tuple(weight.shape), tuple(x.shape))
    return _loss.binary_cross_entropy(x, target, weight, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    x = _tensor_arg(input, "binary_cross_entropy_with_logits")
    _tensor_arg(target, "binary_cross_entropy_with_logits", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(
            "Target size (%s) must be the same as input size (%s)"
            % (_size(target.shape), _size(x.shape))
        )
    _float_arg(x, "binary_cross_entropy_with_logits")
    _no_grad_arg(weight, "binary_cross_entropy_with_logits", "weight")
    _no_grad_arg(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    # PyTorch computes (1 - target).mul_(input)...: the result takes the target's dtype, and a
    # bool or integer target fails in those steps
    if target.dtype is _dt.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead."
        )
    if not target.dtype.is_inexact:
        raise RuntimeError(
            "result type %s can't be cast to the desired output type %s"
            % (_dt.result_type(x, target)._legacy, target.dtype._legacy)
        )
    for t in (weight, pos_weight):
        if t is not None:
            np.broadcast_shapes(tuple(t.shape), tuple(x.shape))
    return _loss.binary_cross_entropy_with_logits(x, target, weight, pos_weight, reduction)


# ---------------------------------------------------------------------------------------------
# one_hot, pad, normalize


def one_hot(tensor, num_classes=-1):
    _tensor_arg(tensor, "one_hot", "tensor")
    if tensor._dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size:
        if a.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if a.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    shape = a.shape + (int(num_classes),)
    nbytes = 8
    for n in shape:
        nbytes *= n
    if nbytes >= 2**63:
        raise RuntimeError("Storage size calculation overflowed with sizes=%s" % list(shape))
    try:
        out = np.zeros(shape, np.int64)
    except (MemoryError, ValueError):
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate %d bytes." % nbytes
        ) from None
    if a.size:
        np.put_along_axis(out, a[..., None], 1, axis=-1)
    return _make(out)


def pad(input, pad, mode="constant", value=None):
    return _pad.pad(_tensor_arg(input, "pad"), pad, mode, value)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)  (DivBackward0, like PyTorch)."""
    _tensor_arg(input, "normalize")
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    res = input / denom
    if out is not None:
        return _write_out(res, out, "normalize")
    return res
