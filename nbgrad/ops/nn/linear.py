"""``linear``: bias + x @ w.T for 2-D x, recorded as PyTorch's AddmmBackward0 (BLAS matmul).
F.linear composes the bias-free and batched forms around it."""

from ...autograd.batching import batched
from .. import linalg as _linalg
from ..cuda.linalg import mm_arrays
from ..registry import op
from ._common import needs


@batched  # written over the last two dims, so batch dims in front pass through
def _addmm_vjp(node, grads):
    g = grads[0]
    x, w = node.unpack("x"), node.unpack("w")
    bshape = node.attrs
    gx = g @ w if needs(node, 0) else None
    gw = g.mT @ x if needs(node, 1) else None
    gb = None
    if needs(node, 2):
        # a 2-D bias broadcast over (n, out): the engine sums the gradient to its shape
        gb = g if len(bshape) == 2 else g.sum(-2) if len(bshape) == 1 else g.sum((-2, -1))
        if len(bshape) == 1 and bshape[0] == 1 and g.shape[-1] != 1:
            gb = g.sum((-2, -1), keepdim=True).squeeze(-1)
    return gx, gw, gb


@op("linear", "nn", node="AddmmBackward0", vjp=_addmm_vjp, args=("x", "w", "b"), saves=("x", "w"))
def addmm(x, w, b):
    """bias + x @ w.T for 2-D x (PyTorch's AddmmBackward0)."""
    _linalg._same_dtype(x, w)
    if x._data.shape[1] != w._data.shape[1]:
        raise RuntimeError(
            "mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
            % (x._data.shape[0], x._data.shape[1], w._data.shape[1], w._data.shape[0])
        )
    if b._dtype is not x._dtype:
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got %s and %s"
            % (b._dtype._legacy, w._dtype._legacy)
        )
    bs, target = b._data.shape, (x._data.shape[0], w._data.shape[0])
    if len(bs) > 2:
        raise RuntimeError(
            "expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (2) must be "
            "greater or equal to the number of dimensions in the tensor (%d)"
            % (b._dtype._legacy, list(bs), list(target), len(bs))
        )
    if len(bs) == 1 and bs[0] not in (1, target[1]):
        raise RuntimeError(
            "The size of tensor a (%d) must match the size of tensor b (%d) at "
            "non-singleton dimension 1" % (bs[0], target[1])
        )
    if len(bs) == 2:
        for d in (0, 1):
            if bs[d] not in (1, target[d]):
                raise RuntimeError(
                    "The expanded size of the tensor (%d) must match the existing size (%d) at "
                    "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s"
                    % (target[d], bs[d], d, list(target), list(bs))
                )
    arr = mm_arrays(x._data, w._data.T)
    arr = arr + b._data
    return addmm.op.record(arr, (x, w, b), attrs=b._data.shape)
