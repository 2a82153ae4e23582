"""``nbgrad.nn.functional``: PyTorch's signatures over the nn ops of ops/nn/ and the pointwise
activations, plus what PyTorch itself composes (l1_loss, normalize, bilinear, soft-target
cross_entropy, ...), composed the same way here so that the node names match PyTorch's."""

import math
import warnings

import numpy as np

from .. import dtypes as _dt, random as _random
from .._tensor import Tensor
from ..autograd import inplace as _inplace
from ..creation import _type_name, full_like as _full_like, zeros_like as _zeros_like
from ..grad_mode import no_grad as _no_grad
from ..ops import pointwise_fns as _api, softmax as _softmax
from ..ops.dispatch import (
    broadcast_error as _broadcast_error,
    pointwise as _pointwise,
    unary as _unary,
)
from ..ops.linalg import einsum as _einsum, matmul as _matmul
from ..ops.nn import (
    activation as _activation,
    attention as _attention,
    conv as _conv,
    distance as _distance,
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
from ..ops.pointwise import UNLISTED as _UNLISTED
from ..ops.registry import REGISTRY as _R, write_out as _write_out
from ..ops.shape import broadcast_tensors as _broadcast_tensors

_XLOGY = _UNLISTED["xlogy"]

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
    "multi_head_attention_forward",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "relu_",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]
__all__ += [  # second tier
    "cosine_embedding_loss",
    "cosine_similarity",
    "elu",
    "elu_",
    "glu",
    "hardtanh",
    "hardtanh_",
    "huber_loss",
    "kl_div",
    "margin_ranking_loss",
    "mish",
    "pairwise_distance",
    "prelu",
    "relu6",
    "smooth_l1_loss",
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
    b = bias._data
    fusable = (b.ndim == 1 or sum(n != 1 for n in b.shape) == 1) and b.flags.c_contiguous
    if not (fusable and input._data.flags.c_contiguous):
        # PyTorch's linear: matmul, then an in-place add of the bias (AddBackward0)
        out = _matmul(input, weight.t())
        return out.add_(bias)
    lead = tuple(input.shape[:-1])  # contiguous: flattened through addmm (ViewBackward0)
    rows = math.prod(lead)  # not -1: ambiguous over zero in-features
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
    if input.is_cuda:
        m = _make(_cuda_dropout_mask(input._data, p))
    elif p == 1:
        m = _make(np.zeros((), input._data.dtype))
    else:
        keep = _random.rng().random(
            input.shape, dtype=np.float64 if input._dtype is _dt.float64 else np.float32
        ) < (1.0 - p)
        m = _make((keep * (1.0 / (1.0 - p))).astype(input._data.dtype))
    return input.mul_(m) if inplace else _api.mul(input, m)


def _cuda_dropout_mask(a, p):
    """The scaled keep mask (``1 / (1 - p)`` or 0) of a CUDA input, drawn on the device by its
    generator (kernels/cuda/random.py)."""
    from ..kernels.cuda import array as cuda_array, random as cuda_random  # cycle: CUDA path
    from ..kernels.cuda.elementwise import run  # cycle: the CUDA path loads on first use

    cd = np.float32 if a.dtype == np.float16 else a.dtype
    keep = cuda_array.empty(a.shape, cd)
    if p < 1:
        cuda_random.bernoulli_cuda(keep.dense(), 1.0 - p)
    else:
        keep[...] = 0
    return run(
        "dropout_scale",
        ("k", "s"),
        "k * s",
        np.dtype(cd).name,
        (keep, 1.0 / (1.0 - p) if p < 1 else 0.0),
        out_dtype=a.dtype,
    )


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
# attention (NOTE [attention paths] in ops/nn/attention.py)


def _cat(tensors, dim=0):
    return _R["cat"].fn(tensors, dim)


def _bmm(a, b):
    return _R["bmm"].fn(a, b)


def _real_arg(x, fn, name):
    """A float argument as PyTorch's parser takes one: Python and numpy numbers (bool
    included) and one-element tensors."""
    if isinstance(x, Tensor) and x.numel() == 1:
        return float(x.item())
    if not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError("%s(): argument '%s' must be float, not %s" % (fn, name, _type_name(x)))
    return float(x)


def _bool_arg(x, fn, name):
    """A bool argument: only ``True``/``False`` (PyTorch rejects ints and numpy bools)."""
    if not isinstance(x, bool):
        raise TypeError("%s(): argument '%s' must be bool, not %s" % (fn, name, _type_name(x)))
    return x


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    *,
    scale=None,
    enable_gqa=False,
):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims, with PyTorch's
    choice between its fused kernel (a Numba flash-attention kernel here: online softmax, no
    stored attention matrix) and the composite path (dropout, 3-D inputs, masks that require
    grad, ...).  A bool mask marks the positions that take part; a float mask is added."""
    fn = "scaled_dot_product_attention"
    q = _tensor_arg(query, fn, "query", 1)
    k = _tensor_arg(key, fn, "key", 2)
    v = _tensor_arg(value, fn, "value", 3)
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise TypeError(
            "%s(): argument 'attn_mask' must be Tensor, not %s" % (fn, type(attn_mask).__name__)
        )
    dropout_p = _real_arg(dropout_p, fn, "dropout_p")
    is_causal = _bool_arg(is_causal, fn, "is_causal")
    if scale is not None:
        scale = _real_arg(scale, fn, "scale")
    enable_gqa = _bool_arg(enable_gqa, fn, "enable_gqa")
    if not (q._dtype is k._dtype and q._dtype is v._dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
            "key.dtype: %s and value.dtype: %s instead."
            % (q._dtype.c_name, k._dtype.c_name, v._dtype.c_name)
        )
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            "query.dim: %d key.dim: %d and value.dim: %d instead." % (q.ndim, k.ndim, v.ndim)
        )
    if attn_mask is not None and attn_mask._dtype not in (_dt.bool, _dt.float32, q._dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            "attn_mask.dtype: %s and  query.dtype: %s instead."
            % (attn_mask._dtype.c_name, q._dtype.c_name)
        )
    if v.numel() == 0 or q.shape[-2] == 0:  # PyTorch's empty result: zeros, zero gradients
        return _attention.sdpa_empty(q, k, v)
    if _attention.use_fused(q, k, v, attn_mask, dropout_p, enable_gqa):
        if dropout_p != 0.0:
            raise RuntimeError(
                "scaled_dot_product_attention_flash_attention: Currently do not support dropout > 0"
            )
        mask = _attention.additive_mask(attn_mask, q._dtype)
        return _attention.scaled_dot_product_attention(q, k, v, mask, is_causal, scale)
    mask = _attention.additive_mask(attn_mask, q._dtype)
    return _attention.sdpa_math(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa, dropout)


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out, the MultiheadAttention convention) as an additive float
    mask of ``target_type``; a float mask unchanged (PyTorch's ``F._canonical_mask``)."""
    if mask is None:
        return None
    is_float = mask._dtype.is_floating_point
    if mask._dtype is not _dt.bool and not is_float:
        raise AssertionError("only bool and floating types of %s are supported" % mask_name)
    if check_other and other_type is not None and mask._dtype is not other_type:
        warnings.warn(
            "Support for mismatched %s and %s is deprecated. Use same type for both instead."
            % (mask_name, other_name),
            stacklevel=2,
        )
    if not is_float:
        tt = _dt.as_dtype(target_type)
        mask = _make(np.where(mask._data, -np.inf, 0.0).astype(tt.np))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-D query) or not (2-D), with PyTorch's AssertionErrors."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                "%d-D and %d-D tensors respectively" % (key.ndim, value.ndim)
            )
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                "but found %d-D tensor instead" % key_padding_mask.ndim
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                "but found %d-D tensor instead" % attn_mask.ndim
            )
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                "%d-D and %d-D tensors respectively" % (key.ndim, value.ndim)
            )
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                "but found %d-D tensor instead" % key_padding_mask.ndim
            )
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                    "3-D but found %d-D tensor instead" % attn_mask.ndim
                )
            if attn_mask.ndim == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        "Expected `attn_mask` shape to be %s but got %s"
                        % (expected, attn_mask.shape)
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received %d-D query tensor"
        % query.ndim
    )


def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v projected by the packed (3E, E) weight, with PyTorch's shortcuts (one linear for
    self-attention, one for key and value in encoder-decoder attention)."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
            proj = proj.contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = linear(q, w_q, b_q)
        kv_proj = linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
        kv_proj = kv_proj.contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for name, t, shape in (
        ("query weights", w_q, (Eq, Eq)),
        ("key weights", w_k, (Eq, Ek)),
        ("value weights", w_v, (Eq, Ev)),
        ("query bias", b_q, (Eq,)),
        ("key bias", b_k, (Eq,)),
        ("value bias", b_v, (Eq,)),
    ):
        if t is not None and tuple(t.shape) != shape:
            raise AssertionError("expecting %s shape of %s, but got %s" % (name, shape, t.shape))
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """PyTorch's multi-head attention, step for step: in-projection, heads, masks merged, then
    the explicit softmax(q k^T) when ``need_weights`` (it returns them) or
    ``scaled_dot_product_attention`` otherwise, and the out-projection.  Inputs are
    (L, N, E) (or unbatched (L, E)); returns ``(attn_output, attn_weights or None)``."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(
        key_padding_mask,
        "key_padding_mask",
        _none_or_dtype(attn_mask),
        "attn_mask",
        query.dtype,
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # SDPA applies the causal mask from the hint
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            "was expecting embedding dimension of %s, but got %s" % (embed_dim_to_check, embed_dim)
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError("embed_dim %s not divisible by num_heads %s" % (embed_dim, num_heads))
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                "key's sequence and batch dims %s do not match value's %s"
                % (key.shape[:2], value.shape[:2])
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            "key shape %s does not match value shape %s" % (key.shape, value.shape)
        )

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(
                    "use_separate_proj_weight is True but %s_proj_weight is None" % name
                )
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(
            query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v
        )

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    "The shape of the 2D attn_mask is %s, but should be %s."
                    % (attn_mask.shape, (tgt_len, src_len))
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    "The shape of the 3D attn_mask is %s, but should be %s."
                    % (attn_mask.shape, (bsz * num_heads, tgt_len, src_len))
                )
        else:
            raise RuntimeError("attn_mask's dimension %d is not supported" % attn_mask.ndim)

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _cat([k, bias_k.repeat(1, bsz, 1)])
        v = _cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        _check_static(static_k, "static_k", bsz * num_heads, head_dim)
        k = static_k
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        _check_static(static_v, "static_v", bsz * num_heads, head_dim)
        v = static_v

    if add_zero_attn:
        zeros = _make(np.zeros((bsz * num_heads, 1, head_dim), k._data.dtype))
        k = _cat([k, zeros], 1)
        v = _cat([v, _make(np.zeros((bsz * num_heads, 1, head_dim), v._data.dtype))], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(
                "Expected key_padded_mask.shape[0] to be %d, but got %d"
                % (bsz, key_padding_mask.shape[0])
            )
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(
                "Expected key_padded_mask.shape[1] to be %d, but got %d"
                % (src_len, key_padding_mask.shape[1])
            )
        key_padding_mask = (
            key_padding_mask.view(bsz, 1, 1, src_len)
            .expand(-1, num_heads, -1, -1)
            .reshape(bsz * num_heads, 1, src_len)
        )
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[2]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        weights = _bmm(q_scaled, k.transpose(-2, -1))
        if attn_mask is not None:  # PyTorch: baddbmm(attn_mask, q_scaled, k^T)
            weights = attn_mask + weights
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = _bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _check_static(t, name, n, head_dim):
    if t.size(0) != n:
        raise AssertionError("expecting %s.size(0) of %d, but got %d" % (name, n, t.size(0)))
    if t.size(2) != head_dim:
        raise AssertionError("expecting %s.size(2) of %d, but got %d" % (name, head_dim, t.size(2)))


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
    _float_only(input, "GeluKernelImpl")
    if approximate == "none":
        return _unary(_R["gelu"], input)
    if approximate == "tanh":
        return _unary(_R["gelu.tanh"], input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input, inplace=False):
    _tensor_arg(input, "silu")
    _float_only(input, "silu_cpu")
    if inplace:
        return _inplace.inplace(input, silu)
    return _unary(_R["silu"], input)


def softplus(input, beta=1.0, threshold=20.0):
    _tensor_arg(input, "softplus")
    _float_only(input, "softplus_cpu")
    return _pointwise(_R["softplus"], (input,), (float(beta), float(threshold)))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _tensor_arg(input, "leaky_relu")
    _float_only(input, "leaky_relu_cpu")
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


def _size_warning(input, target, stacklevel):
    """PyTorch's warning for a target that broadcasts to the input, attributed ``stacklevel``
    frames up from the caller of this function."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            "Using a target size (%s) that is different to the input size (%s). This "
            "will likely lead to incorrect results due to broadcasting. Please ensure "
            "they have the same size." % (_size(target.shape), _size(input.shape)),
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _broadcast_pair(input, target):
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    try:
        return _broadcast_tensors(input, target)
    except (RuntimeError, ValueError):
        raise _broadcast_error((input, target)) from None


def _elementwise_loss_args(input, target, size_average, reduce, reduction, fname):
    """The mse_loss / l1_loss / smooth_l1_loss prelude: checks, PyTorch's size warning, the
    reduction, and ``input``/``target`` broadcast to one shape."""
    _tensor_arg(input, fname)
    _tensor_arg(target, fname, "target", 2)
    _size_warning(input, target, 3)
    reduction = _reduction(size_average, reduce, reduction, stacklevel=4)
    x, t = _broadcast_pair(input, target)
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
# second-tier activations (registry ops), losses and distances (composed as PyTorch composes
# them, so the node names match; smooth_l1 and huber are fused Numba ops)


def _number_arg(x, fn, name, pos):
    """A Scalar argument as PyTorch's parser takes one: Python and numpy numbers, bool."""
    if isinstance(x, (bool, int, float, np.integer, np.floating)):
        return float(x)
    raise TypeError(
        "%s(): argument '%s' (position %d) must be Number, not %s" % (fn, name, pos, _type_name(x))
    )


def _int_arg(x, fn, name, pos):
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    raise TypeError(
        "%s(): argument '%s' (position %d) must be int, not %s" % (fn, name, pos, _type_name(x))
    )


def _float_only(input, kernel):
    """PyTorch's error for an integer or bool tensor given to a float-only kernel."""
    if not input._dtype.is_inexact:
        raise NotImplementedError(
            "\"%s\" not implemented for '%s'" % (kernel, input._dtype._legacy)
        )


def elu(input, alpha=1.0, inplace=False):
    """``x`` above 0, ``alpha * (exp(x) - 1)`` below.  In place the node is PyTorch's
    EluBackward1 (its backward reads the result, and rejects a negative ``alpha``)."""
    _tensor_arg(input, "elu")
    alpha = _number_arg(alpha, "elu", "alpha", 2)
    _float_only(input, "elu_cpu")
    if inplace:
        return _inplace.inplace(input, _elu_result, alpha)
    return _pointwise(_R["elu"], (input,), (alpha,))


def _elu_result(input, alpha):
    return _pointwise(_R["elu.result"], (input,), (alpha,))


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))`` (MishBackward0, in place too, as in PyTorch)."""
    _tensor_arg(input, "mish")
    _float_only(input, "mish_cpu")
    if inplace:
        return _inplace.inplace(input, _mish)
    return _mish(input)


def _mish(input):
    return _unary(_R["mish"], input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)`` recorded as HardtanhBackward0; integer tensors keep their
    dtype with the bounds truncated (PyTorch's legacy rule), bool tensors are rejected."""
    _tensor_arg(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _inplace.inplace(input, _hardtanh, min_val, max_val)
    return _hardtanh(input, min_val, max_val)


def _hardtanh(input, min_val, max_val):
    dt = input._dtype
    if dt is _dt.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not dt.is_inexact:
        lo, hi = int(min_val), int(max_val)
        if dt is _dt.uint8 and (lo < 0 or hi < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        return _api.clamp(input, lo, hi)
    return _pointwise(_R["hardtanh"], (input,), (float(min_val), float(max_val)))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``hardtanh(x, 0, 6)`` (HardtanhBackward0, as in PyTorch)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def prelu(input, weight):
    """``x`` above 0, ``weight * x`` below, ``weight`` (one value, or one per channel: dim 1)
    broadcast like PyTorch's prelu (PreluKernelBackward0 over the reshaped weight)."""
    _tensor_arg(input, "prelu")
    _tensor_arg(weight, "prelu", "weight", 2)
    if input._dtype is not weight._dtype:
        raise RuntimeError(
            "prelu: Type promoting not supported. Got %s and %s"
            % (input._dtype._legacy, weight._dtype._legacy)
        )
    nd, nw = input.ndim, weight.numel()
    if nw != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if nd > 1 else 1
        if channels != nw:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                "= %d and channel size = %d." % (nw, channels)
            )
    if weight.ndim > 1:
        raise RuntimeError(
            "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = %d" % weight.ndim
        )
    _float_only(input, "prelu_cpu")
    if nd != weight.ndim:
        shape = [1] * nd
        if nd > 1:
            shape[1] = nw
        weight = weight.reshape(shape)
    return _pointwise(_R["prelu"], (input, weight))


def glu(input, dim=-1):
    """``a * sigmoid(b)`` for the two halves of ``input`` along ``dim`` (one Numba kernel each
    way, GluBackward0)."""
    _tensor_arg(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return _activation.glu(input, _int_arg(dim, "glu", "dim", 2))


def _apply_reduction(loss, reduction):
    """ATen's apply_loss_reduction."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Fused Numba forward and backward (SmoothL1LossBackward0); ``beta == 0`` is l1_loss, as
    in PyTorch."""
    x, t, reduction = _elementwise_loss_args(
        input, target, size_average, reduce, reduction, "smooth_l1_loss"
    )
    if beta == 0.0:
        return _apply_reduction((x - t).abs(), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _loss.smooth_l1_loss(x, t, reduction, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Fused Numba forward and backward (HuberLossBackward0); ``weight`` multiplies the
    unreduced loss (PyTorch's composite)."""
    _tensor_arg(input, "huber_loss")
    _tensor_arg(target, "huber_loss", "target", 2)
    _size_warning(input, target, 2)
    x, t = _broadcast_pair(input, target)
    if weight is None:
        reduction = _reduction(None, None, reduction)
        return _loss.huber_loss(x, t, reduction, _huber_delta(delta))
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = _loss.huber_loss(x, t, "none", _huber_delta(delta)) * weight
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(
            "Invalid reduction mode: %s. Expected one of 'none', 'mean', 'sum'." % reduction
        )
    return _apply_reduction(loss, reduction)


def _huber_delta(delta):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return float(delta)


_KL_MEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release."
)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """PyTorch's composite: ``xlogy(t, t) - t * input`` (or ``exp(t) * (t - input)`` with
    ``log_target``), reduced; ``'batchmean'`` is the sum over the batch size."""
    _tensor_arg(input, "kl_div")
    _tensor_arg(target, "kl_div", "target", 2)
    if size_average is not None or reduce is not None:
        red = _reduction(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn(_KL_MEAN_WARNING, stacklevel=2)
        red = "sum" if reduction == "batchmean" else _reduction(None, None, reduction)
    if input._dtype.is_complex or target._dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if not (input._dtype.is_inexact and target._dtype.is_inexact):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        out = target.exp() * (target - input)
    else:
        out = _pointwise(_XLOGY, (target, target)) - target * input
    out = _apply_reduction(out, red)
    if reduction == "batchmean" and input.ndim != 0:
        out = out / input.shape[0]
    return out


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """PyTorch's composite: each input divided by its norm along ``dim`` (clamped to ``eps``
    without recording the clamp), then the product summed (SumBackward1)."""
    _tensor_arg(x1, "cosine_similarity", "x1")
    _tensor_arg(x2, "cosine_similarity", "x2", 2)
    dt = _dt.result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(
            "expected common dtype to be floating point, yet common dtype is %s" % dt._legacy
        )
    x1 = x1 if x1._dtype.is_inexact else x1.to(dt)
    x2 = x2 if x2._dtype.is_inexact else x2.to(dt)
    if tuple(x1.shape) != tuple(x2.shape):
        try:
            shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        except ValueError:
            raise _broadcast_error((x1, x2)) from None
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = x1.norm(2, dim, keepdim=True).clone()
    n2 = x2.norm(2, dim, keepdim=True).clone()
    with _no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``norm(x1 - x2 + eps, p)`` over the last dim (PyTorch's at::norm: NormBackward1)."""
    _tensor_arg(x1, "pairwise_distance", "x1")
    _tensor_arg(x2, "pairwise_distance", "x2", 2)
    d = _loss.add_scalar(x1 - x2, eps)
    return _distance.aten_norm(d, p, max(x1.ndim, x2.ndim) - 1, keepdim)


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """PyTorch's composite: ``1 - cos`` where target is 1, ``max(cos - margin, 0)`` where it is
    -1, 0 elsewhere; ``cos`` over dim 1 (2-D inputs, 1-D target) or 0 (1-D inputs, 0-D)."""
    fn = "cosine_embedding_loss"
    _tensor_arg(input1, fn, "input1")
    _tensor_arg(input2, fn, "input2", 2)
    _tensor_arg(target, fn, "target", 3)
    reduction = _reduction(size_average, reduce, reduction)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != td + 1 or input2.ndim != td + 1:
        raise RuntimeError(
            "%dD target tensor expects %dD input tensors, but found inputs with sizes %s and %s."
            % (td, td + 1, list(input1.shape), list(input2.shape))
        )
    eps = 1e-12  # ATen's EPSILON
    prod_sum = (input1 * input2).sum(td)
    mag_square1 = _loss.add_scalar((input1 * input1).sum(td), eps)
    mag_square2 = _loss.add_scalar((input2 * input2).sum(td), eps)
    cos = prod_sum / (mag_square1 * mag_square2).sqrt_()
    zeros = _zeros_like(cos)
    pos = _full_like(cos, 1) - cos  # ATen's Scalar - Tensor: empty_like(b).fill_(a).sub_(b)
    neg = _loss.sub_scalar(cos, margin).clamp_min_(0)
    out = _api.where(target == 1, pos, zeros) + _api.where(target == -1, neg, zeros)
    return _apply_reduction(out, reduction)


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """PyTorch's composite: ``max(-target * (input1 - input2) + margin, 0)``, reduced."""
    fn = "margin_ranking_loss"
    _tensor_arg(input1, fn, "input1")
    _tensor_arg(input2, fn, "input2", 2)
    _tensor_arg(target, fn, "target", 3)
    reduction = _reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            "input1: %s, input2: %s, target: %s "
            % (_size(input1.shape), _size(input2.shape), _size(target.shape))
        )
    out = _loss.add_scalar(-target * (input1 - input2), float(margin)).clamp_min_(0)
    return _apply_reduction(out, reduction)


# ---------------------------------------------------------------------------------------------
# one_hot, pad, normalize


def one_hot(tensor, num_classes=-1):
    _tensor_arg(tensor, "one_hot", "tensor")
    if tensor._dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if type(a) is not np.ndarray:
        from ..ops.cuda.nn import one_hot as _one_hot_cuda  # lazy: the CUDA path

        return _make(_one_hot_cuda(a, num_classes))
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


# ---------------------------------------------------------------------------------------------
# second tier: group / instance norm, transposed convolution, adaptive pooling, interpolate,
# embedding_bag, dropout2d

from ..ops.nn import upsample as _upsample  # noqa: E402

__all__ += [
    "adaptive_avg_pool2d",
    "conv_transpose2d",
    "dropout2d",
    "embedding_bag",
    "group_norm",
    "instance_norm",
    "interpolate",
]


def _verify_batch_size(size):
    prod = size[0]
    for v in size[2:]:
        prod *= v
    if prod == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size %s" % size
        )


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """PyTorch's group_norm: NativeGroupNormBackward0, fused Numba kernels both ways."""
    x = _tensor_arg(input, "group_norm")
    if x.ndim < 2:
        raise RuntimeError(
            "Expected at least 2 dimensions for input tensor but received %d" % x.ndim
        )
    _verify_batch_size([x.shape[0] * x.shape[1] // num_groups, num_groups] + list(x.shape[2:]))
    return _norm.group_norm(x.contiguous(), num_groups, weight, bias, eps)


def _verify_spatial_size(shape):
    prod = 1
    for v in shape[2:]:
        prod *= v
    if prod == 1:
        raise ValueError(
            "Expected more than 1 spatial element when training, got input size %s" % _size(shape)
        )


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """PyTorch's instance_norm: batch norm of the input viewed as (1, N*C, ...) with the
    parameters and running statistics repeated N times (ViewBackward0 over
    NativeBatchNormBackward0); the running statistics get the mean over the batch."""
    x = _tensor_arg(input, "instance_norm")
    if use_input_stats:
        _verify_spatial_size(x.shape)
    elif running_mean is None or running_var is None:
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    b, c = x.shape[0], x.shape[1]
    rep = [None if t is None else t.repeat(b) for t in (weight, bias, running_mean, running_var)]
    xr = x.contiguous().view(1, b * c, *x.shape[2:])
    out = batch_norm(xr, rep[2], rep[3], rep[0], rep[1], use_input_stats, momentum, eps)
    if use_input_stats:
        for buf, r in ((running_mean, rep[2]), (running_var, rep[3])):
            if buf is not None:
                buf.copy_(r.view(b, c).mean(0))
    return out.view(*x.shape)


def _pair_arg(v):
    """An int argument of an IntArrayRef[2] parameter becomes (v, v), as PyTorch's parser does."""
    return v if isinstance(v, (list, tuple)) else (v, v)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The transposed 2-D convolution (ConvolutionBackward0): the adjoint of conv2d in its
    input, weight laid out (C_in, C_out / groups, kh, kw)."""
    fname = "conv_transpose2d"
    x = _tensor_arg(input, fname)
    _tensor_arg(weight, fname, "weight", 2)
    if isinstance(padding, str):
        raise TypeError("conv_transpose2d(): argument 'padding' must be tuple of ints, not str")
    args = [_pair_arg(v) for v in (stride, padding, output_padding)]
    dilation = _pair_arg(dilation)
    if x.ndim not in (3, 4):
        raise RuntimeError(
            "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input "
            "of size: %s" % list(x.shape)
        )
    if x.ndim == 3:
        y = _conv.conv_transpose2d(x.unsqueeze(0), weight, bias, *args, groups, dilation)
        return y.squeeze(0)
    return _conv.conv_transpose2d(x, weight, bias, *args, groups, dilation)


def _list_with_default(out_size, defaults):
    if isinstance(out_size, (int, np.integer)):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError("Input dimension should be at least %d" % (len(out_size) + 1))
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def adaptive_avg_pool2d(input, output_size):
    """Adaptive average pooling (AdaptiveAvgPool2DBackward0); an output size of 1 x 1 is the
    mean over the last two dims (MeanBackward1), as in PyTorch."""
    x = _tensor_arg(input, "adaptive_avg_pool2d")
    size = _list_with_default(output_size, list(x.shape))
    size = _pool.adaptive_output_size(_pair_arg(size))
    if size == (1, 1):
        return x.mean((-1, -2), keepdim=True)
    return _pool.adaptive_avg_pool2d(x, _pool.adaptive_avg_pool2d_geometry(x, size))


def _adaptive_avg_pool1d(x, output_size):
    if x.ndim not in (2, 3):
        raise RuntimeError(
            "adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got %s" % list(x.shape)
        )
    return adaptive_avg_pool2d(x.unsqueeze(-2), (1, int(output_size[0]))).squeeze(-2)


_INTERP_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _is_integer(v):
    if isinstance(v, Tensor):
        return v.numel() == 1 and not v._dtype.is_inexact
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """PyTorch's F.interpolate for modes nearest, nearest-exact (1-3 spatial dims), linear
    (1-D), bilinear (2-D) and area (1-D, 2-D); PyTorch's argument handling and errors."""
    x = _tensor_arg(input, "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    "input with spatial dimensions of %s and output size of %s. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                    "(o1, o2, ...,oK) format." % (list(x.shape[2:]), size)
                )
            if not all(_is_integer(v) for v in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    "Tuple[int, int, int], but got size with types %s" % [type(v) for v in size]
                )
            output_size = [int(v) for v in size]
        else:
            output_size = [int(size) for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    "but got input with spatial dimensions of %s and scale_factor of shape %s. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format." % (list(x.shape[2:]), scale_factor)
                )
            scale_factors = list(scale_factor)
        else:
            scale_factors = [scale_factor for _ in range(dim)]
        if any(isinstance(s, Tensor) for s in scale_factors):
            raise TypeError(
                "upsample(): argument 'scale_factors' must be a tuple of floats, not Tensor"
            )
        scale_factors = [float(s) for s in scale_factors]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(x.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    if output_size is None:  # PyTorch's compute_output_size: floor(in * scale) in double
        output_size = [math.floor(float(x.shape[i + 2]) * scale_factors[i]) for i in range(dim)]
    supported = {
        ("nearest", 3),
        ("nearest", 4),
        ("nearest", 5),
        ("nearest-exact", 3),
        ("nearest-exact", 4),
        ("nearest-exact", 5),
        ("linear", 3),
        ("bilinear", 4),
    }
    if (mode, x.ndim) in supported and not antialias:
        geo = _upsample.upsample_geometry(x, output_size, scale_factors, mode, align_corners)
        if mode in ("linear", "bilinear"):
            return _upsample.upsample_linear(x, geo)
        return _upsample.upsample_nearest(x, geo)
    if mode == "area" and x.ndim == 3:
        return _adaptive_avg_pool1d(x, output_size)
    if mode == "area" and x.ndim == 4:
        return adaptive_avg_pool2d(x, output_size)
    if mode == "lanczos" and x.ndim == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    known = {"area": 5, "trilinear": 5, "bicubic": 4, "bilinear": 4, "lanczos": 4}
    if known.get(mode) == x.ndim:
        raise NotImplementedError(
            "nbgrad: F.interpolate(mode=%r%s) on %dD input is not implemented (nearest, "
            "nearest-exact, linear, bilinear and 1-D/2-D area are)"
            % (mode, ", antialias=True" if antialias else "", x.ndim)
        )
    for m, need in (("bilinear", 4), ("trilinear", 5), ("linear", 3)):
        if mode == m and x.ndim in (3, 4, 5):
            raise NotImplementedError(
                "Got %dD input, but %s mode needs %dD input" % (x.ndim, mode, need)
            )
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: %s "
        "(got %s)" % (x.ndim, _INTERP_MODES, mode)
    )


_BAG_INDEX_TYPES = (_dt.int64, _dt.int32)


def _bag_index_arg(t):
    if t._dtype not in _BAG_INDEX_TYPES:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            "types: Long, Int; but got torch.%sTensor instead (while checking arguments for "
            "embedding_bag)" % t._dtype._legacy
        )


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """PyTorch's embedding_bag (EmbeddingBagBackward0): sums, means or maxima of bags of rows
    without materialising the looked-up rows; gradients for ``weight`` and, in mode 'sum', for
    ``per_sample_weights``."""
    _tensor_arg(input, "embedding_bag")
    _tensor_arg(weight, "embedding_bag", "weight", 2)
    if weight._dtype is _dt.int64 and input._dtype.is_floating_point:
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
            "`embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    psw = per_sample_weights
    if psw is not None and tuple(input.shape) != tuple(psw.shape):
        raise ValueError(
            "embedding_bag: If per_sample_weights (%s) is not None, then it must have the same "
            "shape as the input (%s)" % (_size(psw.shape), _size(input.shape))
        )
    if weight.ndim != 2:
        raise ValueError(
            "weight has to be a 2D Tensor, but got Tensor of dimension %d" % weight.ndim
        )
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type %s"
                % type(offsets)
            )
        if input.shape[1] == 0:
            raise RuntimeError("step must be nonzero")
        offsets = np.arange(0, input.numel(), input.shape[1], dtype=input._data.dtype)
        if type(input._data) is not np.ndarray:  # (made from the sizes alone)
            from ..kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use

            offsets = from_host(offsets)
        offsets = _make(offsets)
        include_last_offset = False
        input = input.reshape(-1)
        if psw is not None:
            psw = psw.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            "input has to be 1D or 2D Tensor, but got Tensor of dimension %d" % input.ndim
        )
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _embedding.embedding_renorm_(weight, input, max_norm, norm_type)
    if psw is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            "supported for mode='sum' (got mode='%s'). Please open a feature request on "
            "GitHub." % mode
        )
    V = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif not -V <= padding_idx < V:
        raise RuntimeError(
            "padding_idx must be within the number of embeddings, -%d through %d, but got %d"
            % (V, V - 1, padding_idx)
        )
    elif padding_idx < 0:
        padding_idx += V
    _bag_index_arg(input)
    _bag_index_arg(offsets)
    if not weight._dtype.is_floating_point:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have one of the following scalar "
            "types: Half, BFloat16, Float, Double; but got torch.%sTensor instead (while "
            "checking arguments for embedding_bag)" % weight._dtype._legacy
        )
    if psw is not None and psw._dtype is not weight._dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            "argument #1 'per_sample_weights'; but type torch.%sTensor does not equal "
            "torch.%sTensor (while checking arguments for embedding_bag)"
            % (weight._dtype._legacy, psw._dtype._legacy)
        )
    if include_last_offset and offsets.shape[0] < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    return _embedding.embedding_bag(
        input, weight, offsets, mode, psw, include_last_offset, padding_idx, scale_grad_by_freq
    )


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout: whole (N, C) feature maps are zeroed with probability ``p`` and the
    rest scaled by 1/(1-p) (MulBackward0); a 3-D input is read as (N, C, L), as PyTorch does."""
    _tensor_arg(input, "dropout2d")
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
    nd = input.ndim
    if nd not in (3, 4):
        warnings.warn(
            "dropout2d: Received a %d-D input to dropout2d, which is deprecated and will result "
            "in an error in a future release. To retain the behavior and silence this warning, "
            "please use dropout instead. Note that dropout2d exists to provide channel-wise "
            "dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional "
            "batch dimension (i.e. 3D or 4D inputs)." % nd,
            stacklevel=2,
        )
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        mask = np.zeros((), input._data.dtype)
    elif nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    else:
        noise = tuple(input.shape[:2]) + (1,) * (nd - 2)
        keep = _random.rng().random(
            noise, dtype=np.float64 if input._dtype is _dt.float64 else np.float32
        ) < (1.0 - p)
        mask = (keep * (1.0 / (1.0 - p))).astype(input._data.dtype)
    m = _make(mask)
    return input.mul_(m) if inplace else _api.mul(input, m)
