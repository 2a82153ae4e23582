"""softmax / log_softmax: fused Numba row kernels forward and backward (numerically stable)."""

import numpy as np

from .._tensor import Tensor, _wrap_dim
from ..autograd.batching import BATCH, batched
from ..grad_mode import STATE
from ..kernels.cpu import softmax as K
from .cuda import kernel_for, xp_of
from .reduction import to3d
from .registry import FUNCTION, METHOD, op

_make = Tensor._make


def _from3d(o3, shape, d, xp=np):
    nd = len(shape)
    keep = [k for k in range(nd) if k != d]
    if o3.shape[2] == 1 and d != nd - 1:
        r = o3.reshape([shape[k] for k in keep] + [shape[d]])
        return xp.moveaxis(r, -1, d)
    return o3.reshape(shape)


@batched
def _softmax_vjp(node, grads):
    d, log = node.attrs
    g = grads[0]
    if not STATE.enabled and not BATCH.dims:
        ya = node.array("out")  # (version-checked) NOTE [per-node cost]: arrays, no Tensor
        if ya.ndim:
            xp = xp_of(ya)
            ga = g._data.astype(ya.dtype, copy=False)
            g3 = to3d(xp.ascontiguousarray(ga), (d,))
            y3 = to3d(xp.ascontiguousarray(ya), (d,))
            o3 = xp.empty_like(g3)
            if g3.size:
                kernel_for(ya, K.softmax_bwd_cpu)(g3, y3, o3, log)
            return (_make(xp.ascontiguousarray(_from3d(o3, ya.shape, d, xp))),)
    y = node.unpack("out")
    if BATCH.dims:  # batched gradients: the op formula below, over a negative dim
        d -= y.ndim
    elif y.ndim == 0:  # the formula below without the sum: 0, or NaN from a NaN/inf input
        return (g - y.exp() * g,) if log else (y * (g - g * y),)
    if log:
        return (g - y.exp() * g.sum(d, keepdim=True),)
    return (y * (g - (g * y).sum(d, keepdim=True)),)


def _softmax(input, dim, dtype, log, opdef):
    x = input
    if dtype is not None:
        x = x.to(dtype)
    if not x._dtype.is_inexact or x._dtype.is_complex:
        raise NotImplementedError(
            "\"%s_lastdim_kernel_impl\" not implemented for '%s'"
            % ("log_softmax" if log else "softmax", x._dtype._legacy)
        )
    if x._data.ndim == 0:
        _wrap_dim(dim, 0)  # 0 or -1
        a = x._data.reshape(1, 1, 1)
        d = 0
    else:
        d = _wrap_dim(dim, x._data.ndim)
        a = x._data
    xp = xp_of(a)
    cd = np.float32 if a.dtype == np.float16 else a.dtype
    x3 = to3d(a.astype(cd, copy=False), (d,)) if a.ndim else a.astype(cd)
    o3 = xp.empty_like(x3)
    if x3.size:
        kernel_for(a, K.softmax_fwd_cpu)(x3, o3, log)
    out = _from3d(o3, x._data.shape, d, xp) if x._data.ndim else o3.reshape(())
    out = xp.asarray(out, order="C").astype(x._data.dtype, copy=False)  # 0-d stays 0-d
    return opdef.record(out, (x,), attrs=(d, log))


def _default_dim(input, dim, name):
    if dim is None:
        import warnings

        warnings.warn(
            "Implicit dimension choice for %s has been deprecated. Change the call to "
            "include dim=X as an argument." % name,
            UserWarning,
            stacklevel=3,
        )
        return 0 if input.ndim in (0, 1, 3) else 1
    return dim


@op(
    "softmax",
    "softmax",
    node="SoftmaxBackward0",
    vjp=_softmax_vjp,
    saves=("out",),
    double=(True, "SoftmaxBackwardDataBackward0"),  # NOTE [backward nodes] (a 0-d input)
    variants=(FUNCTION, METHOD),
    kernels={"cpu": K},
)
def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax(input, _default_dim(input, dim, "softmax"), dtype, False, softmax.op)


@op(
    "log_softmax",
    "softmax",
    node="LogSoftmaxBackward0",
    vjp=_softmax_vjp,
    saves=("out",),
    double=(True, "LogSoftmaxBackwardDataBackward0"),  # NOTE [backward nodes] (a 0-d input)
    variants=(FUNCTION, METHOD),
    kernels={"cpu": K},
)
def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax(input, _default_dim(input, dim, "log_softmax"), dtype, True, log_softmax.op)
