"""glu over kernels/cpu/activation.py (the elementwise activations are formula lines in
ops/pointwise.py).  The backward runs the fused kernel, or the same gradient from nbgrad ops
when a graph is being built (double backward)."""

import numpy as np

from ..._tensor import Tensor, _wrap_dim
from ...grad_mode import STATE
from ...kernels.cpu import activation as KA
from ..cuda import kernel_for, xp_of
from ..registry import REGISTRY, op
from ._common import carray, compute_dtype

CPU = {"cpu": KA}
_make = Tensor._make


def _split3(shape, d):
    """(outer, 2, half * inner): the two halves of dim ``d`` as a free view of a C array."""
    outer = int(np.prod(shape[:d], dtype=np.int64))
    inner = int(np.prod(shape[d + 1 :], dtype=np.int64))
    return outer, 2, shape[d] // 2 * inner


def _glu_vjp(node, grads):
    g = grads[0]
    (d,) = node.attrs
    x = node.unpack("x")
    if STATE.enabled:  # create_graph: the same gradient from differentiable ops
        a, b = x.chunk(2, d)
        s = b.sigmoid()
        return (REGISTRY["cat"].fn([g * s, g * a * s * (1 - s)], d),)
    shape = tuple(x.shape)
    cd = compute_dtype(g._dtype)
    x3 = carray(x, cd).reshape(_split3(shape, d))
    gx = xp_of(x3).empty(x3.shape, cd)
    kernel_for(x3, KA.glu_bwd_cpu)(x3, carray(g, cd).reshape(x3.shape[0], x3.shape[2]), gx)
    return (_make(gx.reshape(shape).astype(g._dtype.np, copy=False)),)


@op("glu", "nn", node="GluBackward0", vjp=_glu_vjp, saves=("x",), kernels=CPU, double=True)
def glu(x, dim=-1):
    """``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``x`` along ``dim`` (F.glu checks the
    argument types and rejects 0-d input first)."""
    shape = tuple(x.shape)
    d = _wrap_dim(dim, len(shape))
    if shape[d] % 2:
        raise RuntimeError(
            "Halving dimension must be even, but dimension %d is size %d" % (d, shape[d])
        )
    if not x._dtype.is_floating_point:
        raise NotImplementedError("\"glu_cpu\" not implemented for '%s'" % x._dtype._legacy)
    cd = compute_dtype(x._dtype)
    x3 = carray(x, cd).reshape(_split3(shape, d))
    out = xp_of(x3).empty((x3.shape[0], x3.shape[2]), cd)
    kernel_for(x3, KA.glu_fwd_cpu)(x3, out)
    res = out.reshape(shape[:d] + (shape[d] // 2,) + shape[d + 1 :])
    return glu.op.record(res.astype(x._dtype.np, copy=False), (x,), attrs=(d,))
