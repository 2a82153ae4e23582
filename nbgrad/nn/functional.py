"""``nbgrad.nn.functional``: the functional forms of the layers and losses (PyTorch signatures).

Structure (see nn/ops_table.py for the registry entries):
  * elementwise activations are registry pointwise ops (formula + partial derivative);
  * conv, pooling, layer/batch norm, embedding, padding and the losses are structured ops whose
    forward AND backward run Numba kernels (kernels/cpu/{conv,pool,norm,loss}.py).  A backward
    runs the fused kernel when no graph is being built (``create_graph=False``: grad mode is off
    inside the vjp); with ``create_graph=True`` it returns the same gradient built from
    differentiable nbgrad ops, so double backward works.  For the linear ops (convolution,
    average pooling, constant padding) the backward is itself a recorded op of the same family
    whose backward is the forward again, so derivatives of any order run the Numba kernels;
  * everything PyTorch itself composes (l1_loss, normalize, bilinear, soft-target
    cross_entropy, linear without bias, ...) is composed the same way here, so the Node names
    match PyTorch's (SEMANTICS.md section 14).
All argument checks run before any kernel indexes memory.
"""
import math
import numbers
import warnings

import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from .._tensor import Tensor
from ..autograd.batching import batched
from ..autograd.forward_ad import with_jvp
from ..grad_mode import STATE
from ..kernels.cpu import conv as KC
from ..kernels.cpu import loss as KL
from ..kernels.cpu import norm as KN
from ..kernels.cpu import pool as KP
from ..autograd import inplace as _inplace
from ..ops import pointwise_fns as _api
from ..ops import linalg as _linalg
from ..ops import softmax as _softmax
from ..ops.dispatch import pointwise as _pointwise
from ..ops.registry import result as _result
from ..ops.dispatch import unary as _unary
from ..ops.registry import REGISTRY as _R
from ..ops.registry import write_out as _write_out
from . import ops_table as _ops_table  # noqa: F401  (fills the registry)

__all__ = ["linear", "bilinear", "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "dropout",
           "embedding", "layer_norm", "batch_norm", "relu", "relu_", "gelu", "tanh", "sigmoid",
           "softplus", "silu", "leaky_relu", "softmax", "log_softmax", "mse_loss", "l1_loss",
           "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "one_hot", "pad", "normalize"]

_make = Tensor._make


# ---------------------------------------------------------------------------------------------
# helpers

def _tensor_arg(x, fn, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                        % (fn, name, pos, type(x).__name__))
    return x


def _float_arg(x, fn):
    if x._dtype.category < 2:
        raise RuntimeError("\"%s\" not implemented for '%s'" % (fn, x._dtype._legacy))
    if x._dtype.category > 2:
        raise RuntimeError("%s: complex tensors are not supported" % fn)


def _cd(dt):
    """numpy compute dtype of an nbgrad float dtype (float16 is storage-only on CPU)."""
    return np.dtype(np.float32) if dt is _dt.float16 else np.dtype(dt.np)


def _arr(t, cd):
    """A C-contiguous compute-dtype array of tensor ``t`` (no copy when it already is one)."""
    return np.ascontiguousarray(t._data, dtype=cd)


def _needs(node, i):
    return node.next_functions[i][0] is not None


def _size(shape):
    return "torch.Size(%s)" % (list(shape),)


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='%s' "
                  "instead." % ret, UserWarning, stacklevel=4)
    return ret


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    return reduction


def _no_grad_arg(t, fn, name):
    if t is not None and STATE.enabled and t._requires_grad:
        raise RuntimeError("The function '%s' is not differentiable with respect to argument "
                           "'%s'. This input cannot have requires_grad True." % (fn, name))


@batched
def _div_scalar_vjp(node, grads):
    return (grads[0] / node.attrs,)


@with_jvp
def _div_scalar(t, c):
    """``t / c`` for a Python number ``c`` recorded as PyTorch's Tensor-by-Scalar DivBackward1."""
    return _result(np.asarray(t._data / t._data.dtype.type(c)), "DivBackward1", (t,),
                   _div_scalar_vjp, attrs=c)


# ---------------------------------------------------------------------------------------------
# linear, bilinear

@batched  # written over the last two dims, so batch dims in front pass through
def _addmm_vjp(node, grads):
    g = grads[0]
    x, w = node.unpack("x"), node.unpack("w")
    bshape = node.attrs
    gx = g @ w if _needs(node, 0) else None
    gw = g.mT @ x if _needs(node, 1) else None
    gb = None
    if _needs(node, 2):
        gb = g.sum(-2) if len(bshape) == 1 else g.sum((-2, -1))
        if len(bshape) == 1 and bshape[0] == 1 and g.shape[-1] != 1:
            gb = g.sum((-2, -1), keepdim=True).squeeze(-1)
    return gx, gw, gb


@with_jvp
def _addmm(x, w, b):
    """bias + x @ w.T for 2-D x (PyTorch's AddmmBackward0)."""
    _linalg._same_dtype(x, w)
    if x._data.shape[1] != w._data.shape[1]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (x._data.shape[0], x._data.shape[1], w._data.shape[1],
                              w._data.shape[0]))
    if b._dtype is not x._dtype:
        raise RuntimeError("self and mat2 must have the same dtype, but got %s and %s"
                           % (b._dtype._legacy, w._dtype._legacy))
    if b._data.ndim > 1 or (b._data.ndim == 1 and b._data.shape[0] not in (1, w._data.shape[0])):
        raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                           "non-singleton dimension 1" % (b._data.shape[-1], w._data.shape[0]))
    from .._fpstate import call_quiet
    arr = call_quiet(np.matmul, (x._data, w._data.T))
    arr = arr + b._data
    return _result(arr, "AddmmBackward0", (x, w, b), _addmm_vjp, saved={"x": x, "w": w},
                   attrs=b._data.shape)


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias (PyTorch: MmBackward0 / AddmmBackward0 / ViewBackward0)."""
    _tensor_arg(input, "linear")
    _tensor_arg(weight, "linear", "weight", 2)
    if bias is None:
        return _linalg.matmul(input, weight.t())
    if input.ndim == 2:
        return _addmm(input, weight, bias)
    if input.ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           "and %dD" % weight.ndim)
    lead = tuple(input.shape[:-1])
    out = _addmm(input.reshape(-1, input.shape[-1]), weight, bias)
    return out.view(*lead, out.shape[-1])


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o]."""
    x1, x2 = _tensor_arg(input1, "bilinear", "input1"), _tensor_arg(input2, "bilinear", "input2", 2)
    if x1.ndim != x2.ndim:
        raise RuntimeError("bilinear(): input dimensions do not match: got %d and %d"
                           % (x1.ndim, x2.ndim))
    for d in range(x1.ndim - 1):
        if x1.shape[d] != x2.shape[d]:
            raise RuntimeError("bilinear(): input batch dimensions do not match at dim %d: got "
                               "%d and %d" % (d, x1.shape[d], x2.shape[d]))
    if weight.ndim != 3:
        raise RuntimeError("bilinear(): weight must be three-dimensional, got %d dimensions"
                           % weight.ndim)
    if x1.shape[-1] != weight.shape[1]:
        raise RuntimeError("bilinear(): input1 size does not match weight size: got %d but "
                           "expected %d" % (x1.shape[-1], weight.shape[1]))
    if x2.shape[-1] != weight.shape[2]:
        raise RuntimeError("bilinear(): input2 size does not match weight size: got %d but "
                           "expected %d" % (x2.shape[-1], weight.shape[2]))
    from ..ops.linalg import einsum
    lead = tuple(x1.shape[:-1])
    y = einsum("bi,oij,bj->bo", x1.reshape(-1, x1.shape[-1]), weight,
               x2.reshape(-1, x2.shape[-1]))
    if len(lead) != 1:
        y = y.view(*lead, weight.shape[0])
    if bias is not None:
        y = y + bias
    return y


# ---------------------------------------------------------------------------------------------
# convolution: one trilinear form T(x, w, y) = <y, conv(x, w)> and its three partials

class _ConvGeom:
    """Shapes and window arithmetic of one convolution (1-D convs use H = KH = 1)."""
    __slots__ = ("N", "C", "H", "W", "O", "G", "KH", "KW", "OH", "OW", "sh", "sw", "ph", "pw",
                 "dh", "dw", "xs", "ws", "ys", "dtype")

    def x4(self):
        return (self.N, self.C, self.H, self.W)

    def w4(self):
        return (self.O, self.C // self.G, self.KH, self.KW)

    def y4(self):
        return (self.N, self.O, self.OH, self.OW)

    def kargs(self):
        return (self.KH, self.KW, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw,
                self.OH, self.OW)


def _im2col(xa, geo):
    """(C*KH*KW, N*OH*OW) columns of every image side by side (Numba)."""
    cols = np.empty((geo.C * geo.KH * geo.KW, geo.N * geo.OH * geo.OW), xa.dtype)
    if cols.size:
        KC.im2col_cpu(xa, cols, *geo.kargs())
    return cols


def _per_image(cols, geo):
    """The (C*KK, N*L) column buffer viewed as (N, G, CgKK, L): per-image BLAS-able blocks."""
    N, G, L = geo.N, geo.G, geo.OH * geo.OW
    return cols.reshape(G, cols.shape[0] // G, N, L).transpose(2, 0, 1, 3)


# NOTE [conv GEMMs]: one GEMM per image and group, each reading/writing its block of the shared
# column buffer in place (``out=`` views).  That avoids transposing y or the columns, and with
# them two large temporaries whose first-touch page faults cost more than the GEMMs (measured:
# ~960 faults and 2 ms per forward of batch 64 x 8 x 26 x 26 when y was transposed).

def _conv_y_arr(xa, wa, geo):
    """y = conv(x, w): im2col (Numba), then GEMMs (BLAS) straight into y."""
    N, G, O, L = geo.N, geo.G, geo.O, geo.OH * geo.OW
    cols = _im2col(xa, geo)
    y = np.empty((N, G, O // G, L), xa.dtype)
    np.matmul(wa.reshape(G, O // G, -1), _per_image(cols, geo), out=y)
    return y.reshape(geo.y4())


def _conv_x_arr(ga, wa, geo):
    """dT/dx given y-like ``ga``: GEMMs into the column buffer, then col2im (Numba)."""
    N, G, O, L = geo.N, geo.G, geo.O, geo.OH * geo.OW
    cols = np.empty((geo.C * geo.KH * geo.KW, N * L), ga.dtype)
    np.matmul(wa.reshape(G, O // G, -1).transpose(0, 2, 1), ga.reshape(N, G, O // G, L),
              out=_per_image(cols, geo))
    gx = np.empty(geo.x4(), ga.dtype)
    if gx.size:
        KC.col2im_cpu(cols, gx, *geo.kargs())
    return gx


def _conv_w_arr(xa, ga, geo):
    """dT/dw given x and y-like ``ga``: im2col, then GEMMs summed over the batch."""
    N, G, O, L = geo.N, geo.G, geo.O, geo.OH * geo.OW
    cols = _im2col(xa, geo)
    K = cols.shape[0] // G
    g4 = ga.reshape(N, G, O // G, L)
    if N == 0:
        return np.zeros(geo.w4(), ga.dtype)
    if K <= L:  # the (N, G, Og, K) partial products are the smaller temporary
        gw = np.matmul(g4, _per_image(cols, geo).transpose(0, 1, 3, 2)).sum(0)
    else:       # one GEMM per group over all images: transpose the (smaller) gradient instead
        gt = np.ascontiguousarray(g4.transpose(1, 2, 0, 3)).reshape(G, O // G, N * L)
        gw = np.matmul(gt, cols.reshape(G, K, N * L).transpose(0, 2, 1))
    return gw.reshape(geo.w4())


_TRI = {"y": ("ConvolutionBackward0", "ys"), "x": ("ConvolutionBackwardBackward0", "xs"),
        "w": ("ConvolutionBackwardBackward0", "ws")}


def _tri_vjp(node, grads):
    kind, geo = node.attrs
    h = grads[0]
    a, b = node.unpack("a"), node.unpack("b")
    na, nb = _needs(node, 0), _needs(node, 1)
    if kind == "y":    # a = x, b = w
        return (_tri("x", h, b, geo) if na else None, _tri("w", a, h, geo) if nb else None)
    if kind == "x":    # a = y-like, b = w
        return (_tri("y", h, b, geo) if na else None, _tri("w", h, a, geo) if nb else None)
    # kind == "w": a = x, b = y-like
    return (_tri("x", b, h, geo) if na else None, _tri("y", a, h, geo) if nb else None)


@with_jvp  # also a backward op: forward-over-reverse needs its tangent
def _tri(kind, a, b, geo):
    """One partial of T: 'y' = conv(a=x, b=w); 'x' = dT/dx (a=y-like, b=w);
    'w' = dT/dw (a=x, b=y-like).  Each is bilinear, and its vjp is two other partials."""
    cd = _cd(geo.dtype)
    if kind == "y":
        arr = _conv_y_arr(_arr(a, cd).reshape(geo.x4()), _arr(b, cd).reshape(geo.w4()), geo)
    elif kind == "x":
        arr = _conv_x_arr(_arr(a, cd).reshape(geo.y4()), _arr(b, cd).reshape(geo.w4()), geo)
    else:
        arr = _conv_w_arr(_arr(a, cd).reshape(geo.x4()), _arr(b, cd).reshape(geo.y4()), geo)
    name, shape_attr = _TRI[kind]
    arr = arr.reshape(getattr(geo, shape_attr)).astype(geo.dtype.np, copy=False)
    return _result(arr, name, (a, b), _tri_vjp, saved={"a": a, "b": b}, attrs=(kind, geo))


def _conv_vjp(node, grads):
    g = grads[0]
    geo = node.attrs
    x, w = node.unpack("x"), node.unpack("w")
    gx = _tri("x", g, w, geo) if _needs(node, 0) else None
    gw = _tri("w", x, g, geo) if _needs(node, 1) else None
    gb = None
    if _needs(node, 2):
        if STATE.enabled:
            gb = g.sum((0, 2, 3) if len(geo.ys) == 4 else (0, 2))
        else:  # contiguous inner-axis sums first (numpy's pairwise float sums)
            ga = _arr(g, _cd(g._dtype)).reshape(geo.N, geo.O, geo.OH * geo.OW)
            gb = _make(ga.sum(2).sum(0).astype(g._data.dtype, copy=False))
    return gx, gw, gb


def _tuple_arg(v, n, name):
    if isinstance(v, (list, tuple)):
        v = tuple(int(a) for a in v)
        if len(v) == 1 and n > 1:
            v = v * n
        if len(v) != n:
            raise RuntimeError("expected %s to be a single integer value or a list of %d values "
                               "to match the convolution dimensions, but got %s=%s"
                               % (name, n, name, list(v)))
        return v
    return (int(v),) * n


@with_jvp
def _conv(x, w, b, stride, padding, dilation, groups, nd):
    fname = "conv%dd" % nd
    _float_arg(x, fname)
    if w.ndim != nd + 2:
        raise RuntimeError("Expected %d-dimensional weight for %d-dimensional input %s, but got "
                           "%d-dimensional weight of size %s instead"
                           % (nd + 2, nd + 2, list(x.shape), w.ndim, list(w.shape)))
    s = _tuple_arg(stride, nd, "stride")
    d = _tuple_arg(dilation, nd, "dilation")
    k = tuple(w.shape[2:])
    sp = tuple(x.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for kk, dd in zip(k, d):
                total = dd * (kk - 1)
                pads.append((total // 2, total - total // 2))
            if any(dd % 2 == 1 and kk % 2 == 0 for kk, dd in zip(k, d)):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                              "require a zero-padded copy of the input be created", UserWarning,
                              stacklevel=4)
        else:
            raise RuntimeError("Invalid padding string: '%s'" % padding)
    else:
        p = _tuple_arg(padding, nd, "padding")
        pads = [(v, v) for v in p]
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v < 0 for pr in pads for v in pr):
        raise RuntimeError("negative padding is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    O = w.shape[0]
    if O % groups != 0:
        raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension 0, "
                           "but got weight of size [%s] instead" % (groups, groups, list(w.shape)))
    C = x.shape[1]
    if C != w.shape[1] * groups:
        raise RuntimeError("Given groups=%d, weight of size %s, expected input%s to have %d "
                           "channels, but got %d channels instead"
                           % (groups, list(w.shape), list(x.shape), w.shape[1] * groups, C))
    if b is not None and (b.ndim != 1 or b.shape[0] != O):
        raise RuntimeError("Given weight of size %s, expected bias to be 1-dimensional with %d "
                           "elements, but got bias of size %s instead"
                           % (list(w.shape), O, list(b.shape)))
    padded = [n + pl + pr for n, (pl, pr) in zip(sp, pads)]
    eff = [dd * (kk - 1) + 1 for kk, dd in zip(k, d)]
    if any(pn < e for pn, e in zip(padded, eff)):
        raise RuntimeError("Calculated padded input size per channel: (%s). Kernel size: (%s). "
                           "Kernel size can't be greater than actual input size"
                           % (" x ".join(map(str, padded)), " x ".join(map(str, eff))))
    if w._dtype is not x._dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (x._dtype._legacy, w._dtype._legacy))
    if b is not None and b._dtype is not x._dtype:
        raise RuntimeError("Input type (%s) and bias type (%s) should be the same"
                           % (_C_NAMES.get(x._dtype.name, x._dtype.name),
                              _C_NAMES.get(b._dtype.name, b._dtype.name)))
    out = [(pn - e) // ss + 1 for pn, e, ss in zip(padded, eff, s)]
    geo = _ConvGeom()
    geo.N, geo.C, geo.O, geo.G = x.shape[0], C, O, groups
    if nd == 1:
        geo.H, geo.KH, geo.OH, geo.sh, geo.ph, geo.dh = 1, 1, 1, 1, 0, 1
        (geo.W,), (geo.KW,), (geo.OW,) = sp, k, out
        geo.sw, geo.pw, geo.dw = s[0], pads[0][0], d[0]
    else:
        geo.H, geo.W = sp
        geo.KH, geo.KW = k
        geo.OH, geo.OW = out
        geo.sh, geo.sw = s
        geo.ph, geo.pw = pads[0][0], pads[1][0]
        geo.dh, geo.dw = d
    geo.xs, geo.ws = tuple(x.shape), tuple(w.shape)
    geo.ys = (x.shape[0], O) + tuple(out)
    geo.dtype = x._dtype
    cd = _cd(x._dtype)
    y = _conv_y_arr(_arr(x, cd).reshape(geo.x4()), _arr(w, cd).reshape(geo.w4()), geo)
    if b is not None:
        y += _arr(b, cd).reshape(1, O, 1, 1)
    y = y.reshape(geo.ys).astype(x._dtype.np, copy=False)
    return _result(y, "ConvolutionBackward0", (x, w, b), _conv_vjp, saved={"x": x, "w": w},
                   attrs=geo)


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half"}


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd):
    fname = "conv%dd" % nd
    x = _tensor_arg(input, fname)
    _tensor_arg(weight, fname, "weight", 2)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError("Expected %dD (unbatched) or %dD (batched) input to %s, but got input "
                           "of size: %s" % (nd + 1, nd + 2, fname, list(x.shape)))
    if x.ndim == nd + 1:
        return _conv(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups,
                     nd).squeeze(0)
    return _conv(x, weight, bias, stride, padding, dilation, groups, nd)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


# ---------------------------------------------------------------------------------------------
# pooling

def _pool_tuple(v, name, fn):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return (int(v[0]),) * 2
        if len(v) != 2:
            raise RuntimeError("%s: %s must either be a single int, or a tuple of two ints"
                               % (fn, name))
        return (int(v[0]), int(v[1]))
    return (int(v), int(v))


def _pool_out(n, k, p, s, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, fn):
    k = _pool_tuple(kernel_size, "kernel_size", fn)
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        s = k
    else:
        s = _pool_tuple(stride, "stride", fn)
    p = _pool_tuple(padding, "padding", fn)
    d = _pool_tuple(dilation, "dilation", fn)
    if any(v <= 0 for v in k):
        raise RuntimeError("kernel size should be greater than zero, but got kH: %d kW: %d"
                           % k)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in s):
        raise RuntimeError("stride should be greater than zero, but got dH: %d dW: %d" % s)
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero, but got dilationH: %d "
                           "dilationW: %d" % d)
    if x.ndim not in (3, 4) or any(v == 0 for v in x.shape[-3:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    for kk, pp, dd in zip(k, p, d):
        if pp < 0:
            raise RuntimeError("pad must be non-negative, but got pad: %d" % pp)
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError("pad should be at most half of effective kernel size, but got "
                               "pad=%d, kernel_size=%d and dilation=%d" % (pp, kk, dd))
    C, H, W = x.shape[-3:]
    OH = _pool_out(H, k[0], p[0], s[0], d[0], ceil_mode)
    OW = _pool_out(W, k[1], p[1], s[1], d[1], ceil_mode)
    if OH < 1 or OW < 1:
        raise RuntimeError("Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). "
                           "Output size is too small" % (C, H, W, C, max(OH, 0), max(OW, 0)))
    return k, s, p, d, OH, OW


def _maxpool_vjp(node, grads):
    g = grads[0]
    xshape, P, H, W = node.attrs
    idx = node.array("idx")
    if not STATE.enabled:
        cd = _cd(g._dtype)
        gx = np.empty((P, H * W), cd)
        KP.maxpool2d_bwd_cpu(_arr(g, cd).reshape(P, idx.shape[-2], idx.shape[-1]),
                             idx.reshape(P, idx.shape[-2], idx.shape[-1]), gx)
        return (_make(gx.reshape(xshape).astype(g._dtype.np, copy=False)),)
    from ..creation import zeros
    n = idx.shape[-2] * idx.shape[-1]
    gx = zeros((P, H * W), dtype=g.dtype).scatter_add(1, _make(idx.reshape(P, n)),
                                                       g.reshape(P, n))
    return (gx.reshape(xshape),)


@with_jvp
def _max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode):
    _float_arg(x, "max_pool2d")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), OH, OW = _pool_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    H, W = x.shape[-2:]
    P = int(np.prod(x.shape[:-2]))
    cd = _cd(x._dtype)
    out = np.empty((P, OH, OW), cd)
    idx = np.empty((P, OH, OW), np.int64)
    KP.maxpool2d_fwd_cpu(_arr(x, cd).reshape(P, H, W), out, idx, kh, kw, sh, sw, ph, pw, dh, dw)
    oshape = tuple(x.shape[:-2]) + (OH, OW)
    idx = idx.reshape(oshape)
    y = _result(out.reshape(oshape).astype(x._dtype.np, copy=False),
                "MaxPool2DWithIndicesBackward0", (x,), _maxpool_vjp,
                saved={"x": x, "idx": idx}, attrs=(tuple(x.shape), P, H, W))
    return y, _make(idx)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _tensor_arg(input, "max_pool2d")
    y, idx = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (y, idx) if return_indices else y


max_pool2d_with_indices = max_pool2d


class _AvgGeom:
    __slots__ = ("xshape", "yshape", "P", "H", "W", "OH", "OW", "args", "dtype")


def _avg_fwd_vjp(node, grads):
    return (_avg_bwd(grads[0], node.attrs),)


def _avg_bwd_vjp(node, grads):
    return (_avg_fwd(grads[0], node.attrs),)


@with_jvp  # also a backward op: forward-over-reverse needs its tangent
def _avg_fwd(x, geo):
    cd = _cd(geo.dtype)
    out = np.empty((geo.P, geo.OH, geo.OW), cd)
    KP.avgpool2d_fwd_cpu(_arr(x, cd).reshape(geo.P, geo.H, geo.W), out, *geo.args)
    return _result(out.reshape(geo.yshape).astype(geo.dtype.np, copy=False), "AvgPool2DBackward0",
                   (x,), _avg_fwd_vjp, attrs=geo)


@with_jvp  # also a backward op: forward-over-reverse needs its tangent
def _avg_bwd(g, geo):
    cd = _cd(geo.dtype)
    gx = np.empty((geo.P, geo.H, geo.W), cd)
    KP.avgpool2d_bwd_cpu(_arr(g, cd).reshape(geo.P, geo.OH, geo.OW), gx, *geo.args)
    return _result(gx.reshape(geo.xshape).astype(geo.dtype.np, copy=False),
                   "AvgPool2DBackwardBackward0", (g,), _avg_bwd_vjp, attrs=geo)


@with_jvp
def _avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    _float_arg(x, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    (kh, kw), (sh, sw), (ph, pw), _, OH, OW = _pool_geometry(
        x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    geo = _AvgGeom()
    geo.H, geo.W = x.shape[-2:]
    geo.P = int(np.prod(x.shape[:-2]))
    geo.OH, geo.OW = OH, OW
    geo.xshape = tuple(x.shape)
    geo.yshape = tuple(x.shape[:-2]) + (OH, OW)
    geo.args = (kh, kw, sh, sw, ph, pw, bool(count_include_pad), int(divisor_override or 0))
    geo.dtype = x._dtype
    return _avg_fwd(x, geo)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    _tensor_arg(input, "avg_pool2d")
    return _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


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
        keep = _random.rng().random(input.shape, dtype=np.float64 if input._dtype is _dt.float64
                                    else np.float32) < (1.0 - p)
        mask = (keep * (1.0 / (1.0 - p))).astype(input._data.dtype)
    m = _make(mask)
    return input.mul_(m) if inplace else _api.mul(input, m)


def _embedding_vjp(node, grads):
    g = grads[0]
    V, D, pad_idx, freq = node.attrs
    idx = node.array("idx").reshape(-1)
    n = idx.shape[0]
    scale = None
    if freq:
        counts = np.bincount(idx, minlength=V)
        scale = 1.0 / counts[idx]
    if not STATE.enabled:
        cd = _cd(g._dtype)
        g3 = _arr(g, cd).reshape(1, n, D)
        if scale is not None:
            g3 = np.ascontiguousarray(g3 * scale.astype(cd)[None, :, None])
        gw = np.empty((1, V, D), cd)
        KC.index_add_axis1_cpu(g3, idx, gw)
        if pad_idx >= 0:
            gw[0, pad_idx] = 0
        return (_make(gw.reshape(V, D).astype(g._dtype.np, copy=False)),)
    from ..creation import zeros
    g2 = g.reshape(n, D)
    mult = np.ones(n) if scale is None else scale
    if pad_idx >= 0:
        mult = mult * (idx != pad_idx)
    if scale is not None or pad_idx >= 0:
        g2 = g2 * _make(mult.astype(g._data.dtype).reshape(n, 1))
    index = _make(np.ascontiguousarray(np.broadcast_to(idx.reshape(n, 1), (n, D))))
    return (zeros((V, D), dtype=g.dtype).scatter_add(0, index, g2),)


@with_jvp
def _embedding(idx, weight, padding_idx, scale_grad_by_freq):
    w = weight._data
    ia = idx._data
    if ia.size and (ia.min() < 0 or ia.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    ia = ia.astype(np.int64, copy=False)
    out = np.take(w, ia, axis=0)
    return _result(out, "EmbeddingBackward0", (weight,), _embedding_vjp,
                   saved={"idx": np.ascontiguousarray(ia)},
                   attrs=(w.shape[0], w.shape[1], padding_idx, bool(scale_grad_by_freq)))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    _tensor_arg(input, "embedding")
    _tensor_arg(weight, "embedding", "weight", 2)
    if input._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got torch.%sTensor instead "
                           "(while checking arguments for embedding)" % input._dtype._legacy)
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
        ia = input._data
        if ia.size and (ia.min() < 0 or ia.max() >= V):
            raise IndexError("index out of range in self")
        rows = np.unique(ia.reshape(-1))
        w = weight._data
        norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
        big = norms > max_norm
        if np.any(big):
            scale = max_norm / (norms[big] + 1e-7)
            w[rows[big]] = (w[rows[big]] * scale[:, None]).astype(w.dtype)
            weight._vc[0] += 1
    return _embedding(input, weight, padding_idx, scale_grad_by_freq)


# ---------------------------------------------------------------------------------------------
# normalisation

def _ln_vjp(node, grads):
    g = grads[0]
    k, eps, M, N = node.attrs
    x = node.unpack("x")
    w = node.unpack("w") if node.saved.get("w") is not None else None
    nx, nw, nb = _needs(node, 0), _needs(node, 1), _needs(node, 2)
    if not STATE.enabled:
        cd = _cd(g._dtype)
        wa = _arr(w, cd).reshape(N) if w is not None else np.ones(N, cd)
        gx = np.empty((M, N), cd)
        gw = np.empty(N, np.float64)
        gb = np.empty(N, np.float64)
        KN.layer_norm_bwd_cpu(_arr(g, cd).reshape(M, N), _arr(x, cd).reshape(M, N),
                              node.array("mean"), node.array("rstd"), wa, gx, gw, gb)
        dt = g._dtype.np
        pshape = tuple(x.shape[x.ndim - k:])
        return (_make(gx.reshape(x.shape).astype(dt)) if nx else None,
                _make(gw.reshape(pshape).astype(dt)) if nw else None,
                _make(gb.reshape(pshape).astype(dt)) if nb else None)
    dims = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    gxh = g * w if w is not None else g
    gx = gw = gb = None
    if nx:
        gx = rstd * (gxh - gxh.mean(dims, keepdim=True)
                     - xhat * (gxh * xhat).mean(dims, keepdim=True))
    if nw:
        gw = (g * xhat).sum(lead) if lead else g * xhat
    if nb:
        gb = g.sum(lead) if lead else g * 1
    return gx, gw, gb


@with_jvp
def _layer_norm(x, normalized_shape, w, b, eps):
    k = len(normalized_shape)
    N = int(np.prod(normalized_shape))
    M = int(np.prod(x.shape[:x.ndim - k]))
    cd = _cd(x._dtype)
    wa = _arr(w, cd).reshape(N) if w is not None else np.ones(N, cd)
    ba = _arr(b, cd).reshape(N) if b is not None else np.zeros(N, cd)
    y = np.empty((M, N), cd)
    mean = np.empty(M, np.float64)
    rstd = np.empty(M, np.float64)
    KN.layer_norm_fwd_cpu(_arr(x, cd).reshape(M, N), wa, ba, float(eps), y, mean, rstd)
    return _result(y.reshape(x.shape).astype(x._dtype.np, copy=False), "NativeLayerNormBackward0",
                   (x, w, b), _ln_vjp, saved={"x": x, "w": w, "mean": mean, "rstd": rstd},
                   attrs=(k, eps, M, N))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    x = _tensor_arg(input, "layer_norm")
    _float_arg(x, "LayerNormKernelImpl")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    ns = tuple(int(v) for v in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError("Expected %s to be of same shape as normalized_shape, but got %s "
                               "of shape %s and normalized_shape = %s"
                               % (name, name, list(t.shape), list(ns)))
    if x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise RuntimeError("Given normalized_shape=%s, expected input with shape [*, %s], but "
                           "got input of size%s" % (list(ns), ", ".join(map(str, ns)),
                                                    list(x.shape)))
    for t in (weight, bias):
        if t is not None and t._dtype is not x._dtype:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of %s"
                               % x._dtype._legacy)
    return _layer_norm(x, ns, weight, bias, eps)


def _bn_vjp(node, grads):
    g = grads[0]
    training, eps, shape3 = node.attrs
    x = node.unpack("x")
    w = node.unpack("w") if node.saved.get("w") is not None else None
    nx, nw, nb = _needs(node, 0), _needs(node, 1), _needs(node, 2)
    mean, rstd = node.array("mean"), node.array("rstd")
    C = shape3[1]
    if not STATE.enabled:
        cd = _cd(g._dtype)
        wa = _arr(w, cd) if w is not None else np.ones(C, cd)
        gx = np.empty(shape3, cd)
        gw = np.empty(C, np.float64)
        gb = np.empty(C, np.float64)
        KN.batch_norm_bwd_cpu(_arr(g, cd).reshape(shape3), _arr(x, cd).reshape(shape3), mean,
                              rstd, wa, bool(training), gx, gw, gb)
        dt = g._dtype.np
        return (_make(gx.reshape(x.shape).astype(dt)) if nx else None,
                _make(gw.astype(dt)) if nw else None,
                _make(gb.astype(dt)) if nb else None)
    dims = (0,) + tuple(range(2, x.ndim))
    bshape = (1, C) + (1,) * (x.ndim - 2)
    if training:
        mu = x.mean(dims, keepdim=True)
        xc = x - mu
        r = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        xc = x - _make(mean.reshape(bshape).astype(x._data.dtype))
        r = _make(rstd.reshape(bshape).astype(x._data.dtype))
    xhat = xc * r
    wb = w.reshape(bshape) if w is not None else None
    gx = gw = gb = None
    if nx:
        gxh = g * wb if wb is not None else g
        if training:
            gx = r * (gxh - gxh.mean(dims, keepdim=True)
                      - xhat * (gxh * xhat).mean(dims, keepdim=True))
        else:
            gx = gxh * r
    if nw:
        gw = (g * xhat).sum(dims)
    if nb:
        gb = g.sum(dims)
    return gx, gw, gb


@with_jvp
def _batch_norm(x, w, b, mean, rstd, training, eps):
    C = x.shape[1]
    shape3 = (x.shape[0], C, int(np.prod(x.shape[2:])))
    cd = _cd(x._dtype)
    wa = _arr(w, cd) if w is not None else np.ones(C, cd)
    ba = _arr(b, cd) if b is not None else np.zeros(C, cd)
    y = np.empty(shape3, cd)
    KN.batch_norm_fwd_cpu(_arr(x, cd).reshape(shape3), mean, rstd, wa, ba, y)
    return _result(y.reshape(x.shape).astype(x._dtype.np, copy=False), "NativeBatchNormBackward0",
                   (x, w, b), _bn_vjp, saved={"x": x, "w": w, "mean": mean, "rstd": rstd},
                   attrs=(bool(training), eps, shape3))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch statistics in training (updating the running buffers in place with ``momentum``
    and the unbiased variance), running statistics in evaluation mode."""
    x = _tensor_arg(input, "batch_norm")
    _float_arg(x, "batch_norm")
    if x.ndim < 2:
        raise ValueError("Expected 2D or higher input (got %dD input)" % x.ndim)
    C = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError("%s should contain %d elements not %d" % (name, C, t.numel()))
    if training:
        size = x.numel() // C
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             "size %s" % _size(x.shape))
        shape3 = (x.shape[0], C, size // x.shape[0])
        cd = _cd(x._dtype)
        mean = np.empty(C, np.float64)
        var = np.empty(C, np.float64)
        KN.batch_norm_stats_cpu(_arr(x, cd).reshape(shape3), mean, var)
        rstd = 1.0 / np.sqrt(var + eps)
        m = 0.1 if momentum is None else momentum
        if running_mean is not None:
            rm = running_mean._data
            rm[...] = ((1 - m) * rm + m * mean).astype(rm.dtype)
            running_mean._vc[0] += 1
        if running_var is not None:
            rv = running_var._data
            rv[...] = ((1 - m) * rv + m * var * (size / (size - 1))).astype(rv.dtype)
            running_var._vc[0] += 1
    else:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        mean = running_mean._data.astype(np.float64).reshape(C)
        rstd = 1.0 / np.sqrt(running_var._data.astype(np.float64).reshape(C) + eps)
    w = weight.reshape(C) if weight is not None and weight.ndim != 1 else weight
    b = bias.reshape(C) if bias is not None and bias.ndim != 1 else bias
    return _batch_norm(x, w, b, mean, rstd, bool(training), eps)


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

def _reduce_scale(reduction, n):
    return 1.0 / n if reduction == "mean" else 1.0


def _reduced(out, total, reduction, n, dtype):
    if reduction == "none":
        return out
    if reduction == "sum":
        return np.asarray(total, dtype)
    return np.asarray(total / n if n else np.nan, dtype)


def _mse_vjp(node, grads):
    g = grads[0]
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    scale = _reduce_scale(reduction, n)
    if not STATE.enabled:
        cd = _cd(g._dtype)
        gx = np.empty(x.shape, cd)
        KL.mse_bwd_cpu(_arr(x, cd).reshape(-1), _arr(t, cd).reshape(-1),
                       _arr(g, cd).reshape(-1), scale, gx.reshape(-1))
        gx = gx.astype(g._dtype.np, copy=False)
        return (_make(gx) if _needs(node, 0) else None,
                _make(-gx) if _needs(node, 1) else None)
    d = (x - t) * g * (2.0 * scale)
    return (d if _needs(node, 0) else None, -d if _needs(node, 1) else None)


@with_jvp
def _mse(x, t, reduction):
    dt = _dt.result_type(x, t)
    cd = _cd(dt)
    out = np.empty(x.shape, cd)
    total = KL.mse_fwd_cpu(_arr(x, cd).reshape(-1), _arr(t, cd).reshape(-1), out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(dt.np, copy=False)
    return _result(res, "MseLossBackward0", (x, t), _mse_vjp, saved={"x": x, "t": t},
                   attrs=(reduction, out.size))


def _size_warning(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn("Using a target size (%s) that is different to the input size (%s). This "
                      "will likely lead to incorrect results due to broadcasting. Please ensure "
                      "they have the same size." % (_size(target.shape), _size(input.shape)),
                      UserWarning, stacklevel=3)


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
    _tensor_arg(input, "mse_loss")
    _tensor_arg(target, "mse_loss", "target", 2)
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, t = input, target
    if tuple(x.shape) != tuple(t.shape):
        from ..ops.shape import broadcast_tensors
        try:
            x, t = broadcast_tensors(x, t)
        except (RuntimeError, ValueError):
            from ..ops.dispatch import broadcast_error
            raise broadcast_error((input, target)) from None
    if weight is not None:
        return _weighted((x - t) ** 2, weight, input, reduction)
    return _mse(x, t, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _tensor_arg(input, "l1_loss")
    _tensor_arg(target, "l1_loss", "target", 2)
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, t = input, target
    if tuple(x.shape) != tuple(t.shape):
        from ..ops.shape import broadcast_tensors
        try:
            x, t = broadcast_tensors(x, t)
        except (RuntimeError, ValueError):
            from ..ops.dispatch import broadcast_error
            raise broadcast_error((input, target)) from None
    err = (x - t).abs()
    if weight is not None:
        return _weighted(err, weight, input, reduction)
    if reduction == "none":
        return err
    return err.sum() if reduction == "sum" else err.mean()


# -- negative log-likelihood / cross-entropy (class indices) ----------------------------------

def _check_nll(x, target, weight, ignore_index, fname):
    """PyTorch's nll_loss_nd checks, in its order; returns (class dim, C, 3-D shape)."""
    if x.ndim < 1:
        raise ValueError("Expected 1 or more dimensions (got %d)" % x.ndim)
    if x.ndim != 1 and (target.ndim == 0 or x.shape[0] != target.shape[0]):
        raise ValueError("Expected input batch_size (%d) to match target batch_size (%d)."
                         % (x.shape[0], target.shape[0] if target.ndim else 0))
    if x.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if x.ndim == 1 and target.ndim != 0 and tuple(target.shape) != (1,):
            raise RuntimeError("size mismatch (got input: %s, target: %s)"
                               % (list(x.shape), list(target.shape)))
    elif x.ndim == 4:
        if target.ndim != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               "targets of dimension: %d" % target.ndim)
        if tuple(target.shape) != (x.shape[0],) + tuple(x.shape[2:]):
            raise RuntimeError("size mismatch (got input: %s , target: %s"
                               % (list(x.shape), list(target.shape)))
    else:
        want = (x.shape[0],) + tuple(x.shape[2:])
        if tuple(target.shape) != want:
            raise RuntimeError("Expected target size %s, got %s" % (list(want),
                                                                    list(target.shape)))
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError("weight tensor should be defined either for all %d classes or no "
                           "classes but got weight tensor of shape: %s" % (C, list(weight.shape)))
    if target._dtype not in (_dt.int64, _dt.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got %s"
                           % target._dtype._legacy)
    if weight is not None and weight._dtype is not x._dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (x._dtype._legacy, weight._dtype._legacy))
    ta = target._data.astype(np.int64, copy=False)
    if ta.size:
        bad = (ta != ignore_index) & ((ta < 0) | (ta >= C))
        if bad.any():
            raise IndexError("Target %d is out of bounds." % ta[bad].reshape(-1)[0])
    if x.ndim == 1:
        shape3 = (1, C, 1)
    else:
        shape3 = (x.shape[0], C, int(np.prod(x.shape[2:])))
    return cdim, C, shape3, np.ascontiguousarray(ta).reshape(shape3[0], shape3[2])


def _nll_vjp(node, grads):
    g = grads[0]
    reduction, ignore_index, smoothing, fused, shape3, total_w = node.attrs
    x = node.unpack("x")
    t = node.array("t")
    wa = node.array("w")
    outer, C, inner = shape3
    if reduction == "none":
        gscale = None
    else:
        # mean over zero total weight: NaN like PyTorch (ignored rows still get exact zeros)
        gscale = (1.0 / total_w if total_w else float("nan")) if reduction == "mean" else 1.0
    if not STATE.enabled:
        cd = _cd(g._dtype)
        if gscale is None:
            gs = _arr(g, cd).reshape(outer, inner)
        else:
            gs = (_arr(g, cd).reshape(1, 1) * cd.type(gscale)).astype(cd)
        gx = np.empty(shape3, cd)
        KL.nll_bwd_cpu(_arr(x, cd).reshape(shape3), t, wa.astype(cd, copy=False),
                       ignore_index, float(smoothing), fused, node.array("lse"), gs, gx)
        return (_make(gx.reshape(x.shape).astype(g._dtype.np, copy=False)),)
    # create_graph: the same gradient from differentiable ops, in the (outer, C, inner) view
    dt = x._data.dtype
    x3 = x.reshape(shape3)
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    onehot = np.zeros(shape3, dt)
    np.put_along_axis(onehot, tc[:, None, :], 1, axis=1)
    wt = np.where(valid, wa[tc], 0).astype(dt)[:, None, :]
    gs = g.reshape(outer, 1, inner) if gscale is None else g * gscale
    if fused:
        p = x3.softmax(1)
        gx = (p - _make(onehot)) * _make(((1.0 - smoothing) * wt).astype(dt))
        if smoothing > 0:
            wsum = float(wa.sum())
            gx = gx + (p * wsum - _make(wa.astype(dt).reshape(1, C, 1))) * _make(
                (valid[:, None, :] * (smoothing / C)).astype(dt))
        gx = gx * gs
    else:
        gx = gs * _make(-onehot * wt)
    if gscale is not None and math.isnan(gscale):
        gx = _api.where(_make(np.broadcast_to(valid[:, None, :], shape3).copy()), gx, 0.0)
    return (gx.reshape(x.shape),)


@with_jvp
def _nll(x, t3, weight, ignore_index, reduction, smoothing, fused, shape3, tshape, name):
    cd = _cd(x._dtype)
    C = shape3[1]
    wa = _arr(weight, cd) if weight is not None else np.ones(C, cd)
    loss = np.empty((shape3[0], shape3[2]), cd)
    wt = np.empty((shape3[0], shape3[2]), cd)
    lse = np.empty((shape3[0], shape3[2]), np.float64)
    total = KL.nll_fwd_cpu(_arr(x, cd).reshape(shape3), t3, wa, int(ignore_index),
                           float(smoothing), bool(fused), loss, wt, lse)
    total_w = float(wt.sum(dtype=np.float64))
    if reduction == "none":
        res = loss.reshape(tshape)
    elif reduction == "sum":
        res = np.asarray(total, cd)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            res = np.asarray(np.float64(total) / total_w, cd)
    return _result(res.astype(x._dtype.np, copy=False), name, (x,), _nll_vjp,
                   saved={"x": x, "t": t3, "w": wa, "lse": lse},
                   attrs=(reduction, int(ignore_index), float(smoothing), bool(fused), shape3,
                          total_w))


def _nll_node_name(x, reduction, smoothing):
    if smoothing > 0:
        return "AddBackward0"
    return "NllLossBackward0" if x.ndim <= 2 else "NllLoss2DBackward0"


def _nll_loss(input, target, weight, ignore_index, reduction, smoothing, fused, fname):
    x = input
    _float_arg(x, fname)
    _no_grad_arg(weight, "nll_loss_forward", "weight")
    cdim, C, shape3, t3 = _check_nll(x, target, weight, ignore_index, fname)
    tshape = tuple(target.shape) if x.ndim > 1 else ()
    out = _nll(x, t3, weight, ignore_index, reduction, smoothing, fused, shape3, tshape,
               _nll_node_name(x, reduction, smoothing))
    if reduction == "none" and smoothing == 0 and (x.ndim == 3 or x.ndim > 4):
        out = out.view(tshape)  # PyTorch reshapes through nll_loss2d: ViewBackward0
    return out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    _tensor_arg(input, "nll_loss")
    _tensor_arg(target, "nll_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    return _nll_loss(input, target, weight, ignore_index, reduction, 0.0, False, "nll_loss")


def _ce_probs(x, target, weight, reduction, smoothing):
    if target._dtype.category < 2:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           "got %s" % target._dtype._legacy)
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError("weight tensor should be defined either for all %d classes or no "
                           "classes but got weight tensor of shape: %s" % (C, list(weight.shape)))
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
    return _div_scalar(-(prod.sum()), x.numel() / C)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Class indices: one fused Numba log-softmax + NLL kernel forward and backward (stable for
    logits of any magnitude).  Class probabilities: log_softmax composed like PyTorch."""
    x = _tensor_arg(input, "cross_entropy")
    _tensor_arg(target, "cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s"
                           % label_smoothing)
    if tuple(x.shape) == tuple(target.shape):
        _float_arg(x, "cross_entropy")
        return _ce_probs(x, target, weight, reduction, float(label_smoothing))
    return _nll_loss(x, target, weight, ignore_index, reduction, float(label_smoothing), True,
                     "cross_entropy")


# -- binary cross-entropy ---------------------------------------------------------------------

def _bce_common_bwd(node, g, kernel, extra):
    reduction, n = node.attrs[0], node.attrs[1]
    x, t = node.unpack("x"), node.unpack("t")
    cd = _cd(g._dtype)
    gx = np.empty(x.shape, cd)
    gt = np.empty(x.shape, cd)
    kernel(_arr(x, cd).reshape(-1), _arr(t, cd).reshape(-1), *extra,
           _arr(g, cd).reshape(-1), _reduce_scale(reduction, n), gx.reshape(-1), gt.reshape(-1))
    dt = g._dtype.np
    return (_make(gx.astype(dt, copy=False)) if _needs(node, 0) else None,
            _make(gt.astype(dt, copy=False)) if _needs(node, 1) else None)


def _bce_vjp(node, grads):
    g = grads[0]
    wa = node.array("w")
    if not STATE.enabled:
        return _bce_common_bwd(node, g, KL.bce_bwd_cpu, (wa,))
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    gw = g * _reduce_scale(reduction, n) * _make(wa.astype(x._data.dtype).reshape(x.shape))
    gx = gw * (x - t) / ((1 - x) * x).clamp(min=1e-12) if _needs(node, 0) else None
    gt = gw * ((-x).log1p() - x.log()) if _needs(node, 1) else None
    return gx, gt


def _bcast_arr(t, shape, cd):
    """``t`` broadcast to ``shape`` as a writable contiguous 1-D buffer (ones for None)."""
    if t is None:
        return np.ones(int(np.prod(shape)), cd)
    a = t._data.astype(cd, copy=False)
    if a.shape != tuple(shape):
        a = np.array(np.broadcast_to(a, shape), order="C")
    return np.ascontiguousarray(a).reshape(-1)


@with_jvp
def _bce(x, t, weight, reduction):
    cd = _cd(x._dtype)
    xa = _arr(x, cd).reshape(-1)
    if xa.size and not bool(np.all((xa >= 0) & (xa <= 1))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    wa = _bcast_arr(weight, x.shape, cd)
    out = np.empty(x.shape, cd)
    total = KL.bce_fwd_cpu(xa, _arr(t, cd).reshape(-1), wa, out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(x._dtype.np, copy=False)
    return _result(res, "BinaryCrossEntropyBackward0", (x, t), _bce_vjp,
                   saved={"x": x, "t": t, "w": wa}, attrs=(reduction, out.size))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    x = _tensor_arg(input, "binary_cross_entropy")
    _tensor_arg(target, "binary_cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError("Using a target size (%s) that is different to the input size (%s) is "
                         "deprecated. Please ensure they have the same size."
                         % (_size(target.shape), _size(x.shape)))
    _float_arg(x, "binary_cross_entropy")
    _no_grad_arg(weight, "binary_cross_entropy", "weight")
    if weight is not None:
        np.broadcast_shapes(tuple(weight.shape), tuple(x.shape))
    return _bce(x, target, weight, reduction)


def _bcel_vjp(node, grads):
    g = grads[0]
    wa, pwa = node.array("w"), node.array("pw")
    if not STATE.enabled:
        return _bce_common_bwd(node, g, KL.bcel_bwd_cpu, (wa, pwa))
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    dt = x._data.dtype
    shape = tuple(x.shape)
    gw = g * _reduce_scale(reduction, n) * _make(wa.astype(dt).reshape(shape))
    pw = _make(pwa.astype(dt).reshape(shape))
    gx = gt = None
    if _needs(node, 0):
        pt = pw * t
        gx = gw * ((pt + 1 - t) * x.sigmoid() - pt)
    if _needs(node, 1):
        sp_neg = (-(x.abs())).exp().log1p() + (-x).relu()  # softplus(-x), exact
        gt = gw * ((pw - 1) * sp_neg - x)
    return gx, gt


@with_jvp
def _bcel(x, t, weight, pos_weight, reduction):
    cd = _cd(x._dtype)
    shape = tuple(x.shape)
    wa = _bcast_arr(weight, shape, cd)
    pwa = _bcast_arr(pos_weight, shape, cd)
    out = np.empty(shape, cd)
    total = KL.bcel_fwd_cpu(_arr(x, cd).reshape(-1), _arr(t, cd).reshape(-1), wa, pwa,
                            out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(x._dtype.np, copy=False)
    return _result(res, "BinaryCrossEntropyWithLogitsBackward0", (x, t), _bcel_vjp,
                   saved={"x": x, "t": t, "w": wa, "pw": pwa}, attrs=(reduction, out.size))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    x = _tensor_arg(input, "binary_cross_entropy_with_logits")
    _tensor_arg(target, "binary_cross_entropy_with_logits", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError("Target size (%s) must be the same as input size (%s)"
                         % (_size(target.shape), _size(x.shape)))
    _float_arg(x, "binary_cross_entropy_with_logits")
    _no_grad_arg(weight, "binary_cross_entropy_with_logits", "weight")
    _no_grad_arg(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    for t in (weight, pos_weight):
        if t is not None:
            np.broadcast_shapes(tuple(t.shape), tuple(x.shape))
    return _bcel(x, target, weight, pos_weight, reduction)


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
    out = np.zeros(a.shape + (int(num_classes),), np.int64)
    if a.size:
        np.put_along_axis(out, a[..., None], 1, axis=-1)
    return _make(out)


def _pad_pairs(pad, ndim):
    """[(dim, left, right), ...] from PyTorch's last-dim-first flat pad list."""
    return [(ndim - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]


def _constant_pad_vjp(node, grads):
    pad, _ = node.attrs
    return (_constant_pad(grads[0], tuple(-p for p in pad), 0.0),)


@with_jvp
def _constant_pad(x, pad, value):
    a = x._data
    shape = list(a.shape)
    src = [slice(None)] * a.ndim
    dst = [slice(None)] * a.ndim
    for d, lo, hi in _pad_pairs(pad, a.ndim):
        n = shape[d]
        new = n + lo + hi
        if new < 0:
            raise RuntimeError("The input size %d, plus negative padding %d and %d resulted in a "
                               "negative output size, which is invalid. Check dimension %d of "
                               "your input." % (n, lo, hi, d))
        s0, s1 = max(-lo, 0), n - max(-hi, 0)
        d0 = max(lo, 0)
        length = max(s1 - s0, 0)
        src[d] = slice(s0, s0 + length)
        dst[d] = slice(d0, d0 + length)
        shape[d] = new
    out = np.full(shape, value, a.dtype)
    out[tuple(dst)] = a[tuple(src)]
    return _result(out, "ConstantPadNdBackward0", (x,), _constant_pad_vjp, attrs=(pad, value))


def _index_map(n, lo, hi, mode):
    j = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "reflect":
        j = np.abs(j)
        j = np.where(j >= n, 2 * (n - 1) - j, j)
    elif mode == "replicate":
        j = np.clip(j, 0, n - 1)
    else:
        j = np.mod(j, n)
    return j


def _index_pad_vjp(node, grads):
    g = grads[0]
    maps, in_shape = node.attrs
    if not STATE.enabled:
        cd = _cd(g._dtype)
        a = _arr(g, cd)
        for d, idx in reversed(maps):
            shp = a.shape
            A, B = int(np.prod(shp[:d])), int(np.prod(shp[d + 1:]))
            out = np.empty((A, in_shape[d], B), cd)
            KC.index_add_axis1_cpu(a.reshape(A, shp[d], B), idx, out)
            a = out.reshape(shp[:d] + (in_shape[d],) + shp[d + 1:])
        return (_make(a.astype(g._dtype.np, copy=False)),)
    from ..creation import zeros
    for d, idx in reversed(maps):
        shp = list(g.shape)
        view = [1] * len(shp)
        view[d] = shp[d]
        index = _make(np.ascontiguousarray(np.broadcast_to(idx.reshape(view), shp)))
        shp[d] = in_shape[d]
        g = zeros(tuple(shp), dtype=g.dtype).scatter_add(d, index, g)
    return (g,)


_PAD_NODES = {"reflect": "ReflectionPad%dDBackward0", "replicate": "ReplicationPad%dDBackward0",
              "circular": "torch::autograd::CopySlices"}


@with_jvp
def _index_pad(x, pad, mode):
    a = x._data
    maps = []
    for d, lo, hi in _pad_pairs(pad, a.ndim):
        n = a.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                               "input dimension, but got: padding (%d, %d) at dimension %d of "
                               "input %s" % (lo, hi, d, list(a.shape)))
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi < 0 or (mode == "replicate" and n == 0):
            raise RuntimeError("input tensor must be non-empty and the padded size positive")
        maps.append((d, _index_map(n, lo, hi, mode)))
    for d, idx in maps:
        a = np.take(a, idx, axis=d)
    name = _PAD_NODES[mode]
    if "%d" in name:
        name = name % (len(pad) // 2)
    return _result(np.ascontiguousarray(a), name, (x,), _index_pad_vjp,
                   attrs=(maps, tuple(x.shape)))


def pad(input, pad, mode="constant", value=None):  # noqa: A002 - PyTorch's name
    x = _tensor_arg(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > x.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length %d and input of dimension %d"
                           % (len(pad), x.ndim))
    if mode == "constant":
        return _constant_pad(x, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError('Padding mode "%s" doesn\'t take in value argument' % mode)
    if mode not in _PAD_NODES:
        raise NotImplementedError("Unrecognised padding mode %s" % mode)
    k = len(pad) // 2
    if x.ndim not in (k + 1, k + 2) or k > 3:
        raise NotImplementedError("Padding size %d is not supported for %dD input tensor."
                                  % (len(pad), x.ndim))
    _float_arg(x, "pad")
    return _index_pad(x, pad, mode)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)  (DivBackward0, like PyTorch)."""
    _tensor_arg(input, "normalize")
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    res = input / denom
    if out is not None:
        return _write_out(res, out, "normalize")
    return res
