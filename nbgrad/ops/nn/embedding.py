"""embedding: a row lookup whose backward scatter-adds rows (kernels/cpu/conv.py's index_add),
and the in-place max_norm renormalisation PyTorch applies before it.

The indices are saved as a tensor (NOTE [saved indices] in ops/indexing.py): version-checked,
and range-checked again in backward, since ``.data`` can change them after the forward."""

import numpy as np

from ..._tensor import Tensor
from ...creation import zeros
from ...grad_mode import STATE
from ...kernels.cpu import conv as KC, index as KI
from ..registry import op
from ._common import carray, compute_dtype

_make = Tensor._make


def _embedding_vjp(node, grads):
    g = grads[0]
    V, D, pad_idx, freq, ishape = node.attrs
    idx = node.array("idx")
    if idx.shape != ishape or idx.dtype.kind not in "iu":
        raise RuntimeError("embedding: the indices were replaced after the forward")
    idx = idx.astype(np.int64).reshape(-1)
    _check_range(idx, V)  # PyTorch skips rows out of range here; nbgrad refuses them
    n = idx.shape[0]
    scale = None
    if freq:
        counts = np.bincount(idx, minlength=V)
        scale = 1.0 / counts[idx]
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        g3 = carray(g, cd).reshape(1, n, D)
        if scale is not None:
            g3 = np.ascontiguousarray(g3 * scale.astype(cd)[None, :, None])
        gw = np.empty((1, V, D), cd)
        KC.index_add_axis1_cpu(g3, idx, gw)
        if pad_idx >= 0:
            gw[0, pad_idx] = 0
        return (_make(gw.reshape(V, D).astype(g._dtype.np, copy=False)),)
    g2 = g.reshape(n, D)
    mult = np.ones(n) if scale is None else scale
    if pad_idx >= 0:
        mult = mult * (idx != pad_idx)
    if scale is not None or pad_idx >= 0:
        g2 = g2 * _make(mult.astype(g._data.dtype).reshape(n, 1))
    index = _make(np.ascontiguousarray(np.broadcast_to(idx.reshape(n, 1), (n, D))))
    return (zeros((V, D), dtype=g.dtype).scatter_add(0, index, g2),)


def _check_range(ia, V):
    if KI.first_bad(ia, 0, V) is not None:
        raise IndexError("index out of range in self")


# the indices take no gradient: the node's one input slot is the weight
@op(
    "embedding",
    "nn",
    node="EmbeddingBackward0",
    vjp=_embedding_vjp,
    args=("weight",),
    kernels={"cpu": KC},
)
def embedding(input, weight, padding_idx=-1, scale_grad_by_freq=False):
    """Rows ``weight[input]``; ``padding_idx`` (-1: none) gets no gradient."""
    w = weight._data
    _check_range(input._data, w.shape[0])
    out = np.take(w, input._data.astype(np.int64, copy=False), axis=0)
    return embedding.op.record(
        out,
        (weight,),
        saved={"idx": input},
        attrs=(w.shape[0], w.shape[1], padding_idx, bool(scale_grad_by_freq), input._data.shape),
    )


def embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescale, in place, the rows of ``weight`` that ``input`` looks up to norm <= max_norm."""
    V = weight.shape[0]
    rows = np.unique(input._data.reshape(-1)).astype(np.int64)
    bad = KI.first_bad(rows, -V, V)  # PyTorch selects the sorted unique rows one by one
    if bad is not None:
        raise IndexError(
            "select(): index %d out of range for tensor of size %s at dimension 0"
            % (bad, list(weight.shape))
        )
    _check_range(rows, V)
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if np.any(big):
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (w[rows[big]] * scale[:, None]).astype(w.dtype)
        weight._vc[0] += 1
