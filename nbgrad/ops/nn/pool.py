"""max_pool2d and avg_pool2d: window geometry, forward and backward over kernels/cpu/pool.py.
Average pooling is linear: its backward is an op whose backward is the forward again."""

import numpy as np

from ..._tensor import Tensor
from ...creation import zeros
from ...grad_mode import STATE
from ...kernels.cpu import pool as KP
from ..cuda import kernel_for, xp_of
from ..registry import internal_op, op
from ._common import carray, check_float, compute_dtype

CPU = {"cpu": KP}
_make = Tensor._make


def _pool_tuple(v, name, fn):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return (int(v[0]),) * 2
        if len(v) != 2:
            raise RuntimeError(
                "%s: %s must either be a single int, or a tuple of two ints" % (fn, name)
            )
        return (int(v[0]), int(v[1]))
    return (int(v), int(v))


def _pool_out(n, k, p, s, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _check_window(k, s, d):
    if any(v <= 0 for v in k):
        raise RuntimeError("kernel size should be greater than zero, but got kH: %d kW: %d" % k)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in s):
        raise RuntimeError("stride should be greater than zero, but got dH: %d dW: %d" % s)
    if any(v <= 0 for v in d):
        raise RuntimeError(
            "dilation should be greater than zero, but got dilationH: %d dilationW: %d" % d
        )


def _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, fn):
    """Checked (k, s, p, d, OH, OW) of a 2-D pooling window over ``x`` (PyTorch's checks)."""
    k = _pool_tuple(kernel_size, "kernel_size", fn)
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        s = k
    else:
        s = _pool_tuple(stride, "stride", fn)
    p = _pool_tuple(padding, "padding", fn)
    d = _pool_tuple(dilation, "dilation", fn)
    _check_window(k, s, d)
    if x.ndim not in (3, 4) or any(v == 0 for v in x.shape[-3:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    for kk, pp, dd in zip(k, p, d):
        if pp < 0:
            raise RuntimeError("pad must be non-negative, but got pad: %d" % pp)
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(
                "pad should be at most half of effective kernel size, but got "
                "pad=%d, kernel_size=%d and dilation=%d" % (pp, kk, dd)
            )
    C, H, W = x.shape[-3:]
    OH = _pool_out(H, k[0], p[0], s[0], d[0], ceil_mode)
    OW = _pool_out(W, k[1], p[1], s[1], d[1], ceil_mode)
    if OH < 1 or OW < 1:
        raise RuntimeError(
            "Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). "
            "Output size is too small" % (C, H, W, C, max(OH, 0), max(OW, 0))
        )
    return k, s, p, d, OH, OW


# -- max pooling -------------------------------------------------------------------------------


def _maxpool_vjp(node, grads):
    g = grads[0]
    xshape, P, H, W = node.attrs
    idx = node.array("idx")
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        gx = xp_of(idx).empty((P, H * W), cd)
        kernel_for(idx, KP.maxpool2d_bwd_cpu)(
            carray(g, cd).reshape(P, idx.shape[-2], idx.shape[-1]),
            idx.reshape(P, idx.shape[-2], idx.shape[-1]),
            gx,
        )
        return (_make(gx.reshape(xshape).astype(g._dtype.np, copy=False)),)
    n = idx.shape[-2] * idx.shape[-1]
    gx = zeros((P, H * W), dtype=g.dtype, device=g.device).scatter_add(
        1, _make(idx.reshape(P, n)), g.reshape(P, n)
    )
    return (gx.reshape(xshape),)


@op(
    "max_pool2d",
    "nn",
    node="MaxPool2DWithIndicesBackward0",
    vjp=_maxpool_vjp,
    saves=("x",),
    double=True,  # NOTE [backward nodes]
    kernels=CPU,
)
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Returns (values, flat H*W argmax indices) like PyTorch's max_pool2d_with_indices."""
    check_float(x, "max_pool2d")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), OH, OW = _pool_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d"
    )
    H, W = x.shape[-2:]
    P = int(np.prod(x.shape[:-2]))
    cd = compute_dtype(x._dtype)
    xa = carray(x, cd).reshape(P, H, W)
    xp = xp_of(xa)
    out = xp.empty((P, OH, OW), cd)
    idx = xp.empty((P, OH, OW), np.int64)
    if (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1) and 2 * OH <= H and 2 * OW <= W:
        kernel_for(xa, KP.maxpool2x2_fwd_cpu)(xa, out, idx)  # NOTE [max pool fast path]
    else:
        kernel_for(xa, KP.maxpool2d_fwd_cpu)(xa, out, idx, kh, kw, sh, sw, ph, pw, dh, dw)
    oshape = tuple(x.shape[:-2]) + (OH, OW)
    # the returned indices tensor is what is saved: an in-place change to it is a version error
    indices = _make(idx.reshape(oshape))
    y = max_pool2d.op.record(
        out.reshape(oshape).astype(x._dtype.np, copy=False),
        (x,),
        saved={"idx": indices},
        attrs=(tuple(x.shape), P, H, W),
    )
    return y, indices


# -- average pooling ---------------------------------------------------------------------------


class AvgGeom:
    """Shapes and kernel arguments of one average pooling."""

    __slots__ = ("H", "OH", "OW", "P", "W", "args", "dtype", "xshape", "yshape")


def avg_pool2d_geometry(
    x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    """The checked ``AvgGeom`` of ``F.avg_pool2d(x, ...)``."""
    check_float(x, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    (kh, kw), (sh, sw), (ph, pw), _, OH, OW = _pool_geometry(
        x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d"
    )
    geo = AvgGeom()
    geo.H, geo.W = x.shape[-2:]
    geo.P = int(np.prod(x.shape[:-2]))
    geo.OH, geo.OW = OH, OW
    geo.xshape = tuple(x.shape)
    geo.yshape = tuple(x.shape[:-2]) + (OH, OW)
    geo.args = (kh, kw, sh, sw, ph, pw, bool(count_include_pad), int(divisor_override or 0))
    geo.dtype = x._dtype
    return geo


def _avg_vjp(node, grads):
    return (avg_pool2d_backward(grads[0], node.attrs),)


def _avg_backward_vjp(node, grads):
    return (avg_pool2d(grads[0], node.attrs),)


@op("avg_pool2d", "nn", node="AvgPool2DBackward0", vjp=_avg_vjp, kernels=CPU, double=True)
def avg_pool2d(x, geo):
    """Average pooling of ``x`` over the window geometry ``geo`` (``avg_pool2d_geometry``)."""
    cd = compute_dtype(geo.dtype)
    xa = carray(x, cd).reshape(geo.P, geo.H, geo.W)
    out = xp_of(xa).empty((geo.P, geo.OH, geo.OW), cd)
    kernel_for(xa, KP.avgpool2d_fwd_cpu)(xa, out, *geo.args)
    return avg_pool2d.op.record(
        out.reshape(geo.yshape).astype(geo.dtype.np, copy=False), (x,), attrs=geo
    )


@internal_op(
    "avg_pool2d_backward",
    "nn",
    node="AvgPool2DBackwardBackward0",
    vjp=_avg_backward_vjp,
    args=("g",),
    kernels=CPU,
)
def avg_pool2d_backward(g, geo):
    """The adjoint of ``avg_pool2d``: y-shaped ``g`` spread back over the windows."""
    cd = compute_dtype(geo.dtype)
    ga = carray(g, cd).reshape(geo.P, geo.OH, geo.OW)
    gx = xp_of(ga).empty((geo.P, geo.H, geo.W), cd)
    kernel_for(ga, KP.avgpool2d_bwd_cpu)(ga, gx, *geo.args)
    return avg_pool2d_backward.op.record(
        gx.reshape(geo.xshape).astype(geo.dtype.np, copy=False), (g,), attrs=geo
    )


# -- adaptive average pooling ------------------------------------------------------------------


class AdaptiveGeom:
    """Shapes of one adaptive average pooling over (planes, H, W)."""

    __slots__ = ("H", "OH", "OW", "P", "W", "dtype", "xshape", "yshape")


def adaptive_output_size(output_size):
    """The checked (OH, OW) of ``adaptive_avg_pool2d`` (a sequence, None entries resolved)."""
    if len(output_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    OH, OW = (int(v) for v in output_size)
    if OH < 0 or OW < 0:
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
            "but received {%d, %d}" % (OH, OW)
        )
    return OH, OW


def adaptive_avg_pool2d_geometry(x, output_size):
    """PyTorch's checks of ``adaptive_avg_pool2d(x, output_size)`` (two ints, None resolved)
    and the ``AdaptiveGeom``."""
    OH, OW = adaptive_output_size(output_size)
    if x.ndim not in (3, 4):
        raise RuntimeError(
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got %s" % list(x.shape)
        )
    for i in (-2, -1):
        if x.shape[i] == 0:
            raise RuntimeError(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes %s with dimension %d being empty"
                % (list(x.shape), i + x.ndim)
            )
    if not x._dtype.is_floating_point:
        raise NotImplementedError(
            "\"adaptive_avg_pool2d\" not implemented for '%s'" % x._dtype._legacy
        )
    geo = AdaptiveGeom()
    geo.H, geo.W = x.shape[-2:]
    geo.P = int(np.prod(x.shape[:-2]))
    geo.OH, geo.OW = OH, OW
    geo.xshape = tuple(x.shape)
    geo.yshape = tuple(x.shape[:-2]) + (OH, OW)
    geo.dtype = x._dtype
    return geo


def _adaptive_vjp(node, grads):
    return (adaptive_avg_pool2d_backward(grads[0], node.attrs),)


def _adaptive_backward_vjp(node, grads):
    return (adaptive_avg_pool2d(grads[0], node.attrs),)


@op(
    "adaptive_avg_pool2d",
    "nn",
    node="AdaptiveAvgPool2DBackward0",
    vjp=_adaptive_vjp,
    kernels=CPU,
    double=True,  # NOTE [backward nodes]
)
def adaptive_avg_pool2d(x, geo):
    """Adaptive average pooling of ``x`` to ``geo``'s output size
    (``adaptive_avg_pool2d_geometry``): window o spans [floor(o*n/out), ceil((o+1)*n/out))."""
    cd = compute_dtype(geo.dtype)
    xa = carray(x, cd).reshape(geo.P, geo.H, geo.W)
    out = xp_of(xa).empty((geo.P, geo.OH, geo.OW), cd)
    if out.size:
        kernel_for(xa, KP.adaptive_avgpool2d_fwd_cpu)(xa, out)
    return adaptive_avg_pool2d.op.record(
        out.reshape(geo.yshape).astype(geo.dtype.np, copy=False), (x,), attrs=geo
    )


@internal_op(
    "adaptive_avg_pool2d_backward",
    "nn",
    node="AdaptiveAvgPool2DBackwardBackward0",
    vjp=_adaptive_backward_vjp,
    args=("g",),
    kernels=CPU,
)
def adaptive_avg_pool2d_backward(g, geo):
    """The adjoint of ``adaptive_avg_pool2d``: each window's gradient spread evenly over it."""
    cd = compute_dtype(geo.dtype)
    ga = carray(g, cd).reshape(geo.P, geo.OH, geo.OW)
    gx = xp_of(ga).empty((geo.P, geo.H, geo.W), cd)
    if gx.size:
        kernel_for(ga, KP.adaptive_avgpool2d_bwd_cpu)(ga, gx)
    else:
        gx[...] = 0
    return adaptive_avg_pool2d_backward.op.record(
        gx.reshape(geo.xshape).astype(geo.dtype.np, copy=False), (g,), attrs=geo
    )
