"""Diagonals: diagonal (a view), diag (embed a vector / copy a diagonal), trace.

``diagonal`` and ``embed_diagonal`` are each other's adjoint, so derivatives of any order stay
in these two ops.
"""

import numpy as np

from .._devarray import DeviceArray
from .._tensor import _wrap_dim
from ..autograd.batching import BATCH, batched
from .registry import FUNCTION, LINEAR, METHOD, internal_op, op

FM = (FUNCTION, METHOD)


def _geometry(shape, offset, d1, d2):
    """(start index along d1, along d2, diagonal length) of the ``offset`` diagonal."""
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        return 0, offset, max(0, min(n1, n2 - offset))
    return -offset, 0, max(0, min(n1 + offset, n2))


def _diagonal_view(a, offset, d1, d2):
    """A writable numpy view of the diagonal (numpy's own is read-only), last dim = diagonal."""
    s1, s2, n = _geometry(a.shape, offset, d1, d2)
    keep = [k for k in range(a.ndim) if k not in (d1, d2)]
    if type(a) is DeviceArray:  # a strided view of the same buffer
        st = a.estrides
        off = a.offset + (s1 * st[d1] + s2 * st[d2] if n else 0)
        return DeviceArray(
            a.buf, [a.shape[k] for k in keep] + [n], [st[k] for k in keep] + [st[d1] + st[d2]], off
        )
    start = (
        tuple(
            min(s1, a.shape[d1] - 1) if k == d1 else min(s2, a.shape[d2] - 1) if k == d2 else 0
            for k in range(a.ndim)
        )
        if n
        else (0,) * a.ndim
    )
    base = a[tuple(slice(i, None) for i in start)] if a.size else a
    return np.lib.stride_tricks.as_strided(
        base,
        [a.shape[k] for k in keep] + [n],
        [a.strides[k] for k in keep] + [a.strides[d1] + a.strides[d2]],
        writeable=a.flags.writeable,
    )


def _dims(ndim, dim1, dim2):
    d1, d2 = _wrap_dim(dim1, ndim), _wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
    return d1, d2


@batched
def _diagonal_vjp(node, grads):
    shape, offset, d1, d2 = node.attrs
    nb = BATCH.dims
    g = grads[0]
    return (embed_diagonal(g, tuple(g.shape[:nb]) + shape, offset, d1 + nb, d2 + nb),)


@op("diagonal", "diagonal", node="DiagonalBackward0", vjp=_diagonal_vjp, variants=FM, jvp=LINEAR)
def diagonal(input, offset=0, dim1=0, dim2=1):
    d1, d2 = _dims(input._data.ndim, dim1, dim2)
    view = _diagonal_view(input._data, offset, d1, d2)
    return diagonal.op.record(
        view, (input,), view_of=input, attrs=(input._data.shape, offset, d1, d2)
    )


@batched
def _embed_vjp(node, grads):
    _, offset, d1, d2 = node.attrs
    return (diagonal(grads[0], offset, d1, d2),)


@internal_op(
    "embed_diagonal", "diagonal", node="DiagonalBackwardBackward0", vjp=_embed_vjp, jvp=LINEAR
)
def embed_diagonal(g, shape, offset, d1, d2):
    """zeros(shape) with ``g`` (its last dim) on the ``offset`` diagonal of dims d1, d2."""
    out = _zeros(g._data, shape)
    _diagonal_view(out, offset, d1, d2)[...] = g._data
    return embed_diagonal.op.record(out, (g,), attrs=(shape, offset, d1, d2))


def _zeros(like, shape):
    if type(like) is DeviceArray:
        from .cuda import xp  # lazy: the CUDA path loads on first use

        return xp.zeros(shape, like.dtype)
    return np.zeros(shape, like.dtype)


@batched
def _diag_vjp(node, grads):
    kind, shape, offset = node.attrs
    g = grads[0]
    if kind == "embed":  # vector -> matrix: the gradient is the matrix's diagonal
        return (diagonal(g, offset, -2, -1),)
    nb = BATCH.dims
    return (embed_diagonal(g, tuple(g.shape[:nb]) + shape, offset, nb, nb + 1),)


@op(
    "diag",
    "diagonal",
    node={"embed": "DiagEmbedBackward0", "copy": "DiagonalBackward0_copy"},
    vjp=_diag_vjp,
    variants=FM,
    jvp=LINEAR,
)
def diag(input, diagonal=0):
    a = input._data
    if a.ndim == 1:
        n = a.shape[0] + abs(diagonal)
        out = _zeros(a, (n, n))
        _diagonal_view(out, diagonal, 0, 1)[...] = a
        return diag.op.record(out, (input,), overload="embed", attrs=("embed", a.shape, diagonal))
    if a.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got %dD" % a.ndim)
    v = _diagonal_view(a, diagonal, 0, 1)
    out = v.copy() if type(a) is DeviceArray else np.ascontiguousarray(v)
    return diag.op.record(out, (input,), overload="copy", attrs=("copy", a.shape, diagonal))


@batched
def _trace_vjp(node, grads):
    (shape,) = node.attrs
    g = grads[0]
    nb = BATCH.dims
    lead = tuple(g.shape[:nb])
    ones = g.reshape(lead + (1,)).expand(*lead, min(shape))
    return (embed_diagonal(ones, lead + shape, 0, nb, nb + 1),)


@op("trace", "diagonal", node="TraceBackward0", vjp=_trace_vjp, variants=FM, jvp=LINEAR)
def trace(input):
    a = input._data
    if a.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim %d" % a.ndim)
    if type(a) is DeviceArray:
        return trace.op.record(_trace_cuda(a), (input,), attrs=(a.shape,))
    r = np.trace(a)
    if a.dtype.kind in "biu":
        r = np.int64(r)
    return trace.op.record(
        np.asarray(r, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype),
        (input,),
        attrs=(a.shape,),
    )


def _trace_cuda(a):
    """The diagonal's sum on the device (kernels/cuda/reduce.py: float sums accumulate in
    float64, integer ones in int64, as ``np.trace``)."""
    from ..kernels.cuda import reduce as R  # lazy: the CUDA path loads on first use
    from .cuda import xp  # lazy: the CUDA path loads on first use

    v = _diagonal_view(a, 0, 0, 1)
    ints = a.dtype.kind in "biu"
    x = v.astype(np.int64) if ints else v.contiguous()
    out = xp.empty((1, 1), np.int64 if ints else a.dtype)
    if ints:
        R.isum_fwd_cuda(x.dense().reshape(1, x.size, 1), out.dense())
    elif a.dtype.kind == "c":
        R.csum_fwd_cuda(x.dense().reshape(1, x.size, 1), out.dense())
    else:
        R.sum_fwd_cuda(x.dense().reshape(1, x.size, 1), out.dense())
    return out.reshape(())
