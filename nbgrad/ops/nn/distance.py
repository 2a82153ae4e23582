"""pairwise_distance's norm: PyTorch's ``at::norm(x1 - x2 + eps, p, dim, keepdim)`` records
NormBackward1 where ``Tensor.norm`` records LinalgVectorNormBackward0; same values, same
backward (ops/reduction.py's norm and its vjp), another node name."""

from ...grad_mode import no_grad
from ..reduction import _dims, _norm_vjp, norm as _norm
from ..registry import internal_op


@internal_op("norm.aten", "reduction", node="NormBackward1", vjp=_norm_vjp, saves=("x", "out"))
def aten_norm(x, p, dim, keepdim=False):
    with no_grad():
        r = _norm.op.impl(x, p, dim, keepdim)
    attrs = (x._data.shape, _dims(dim, x._data.ndim), keepdim, float(p))
    return aten_norm.op.record(r._data, (x,), attrs=attrs)
