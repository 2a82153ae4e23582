"""Indexing kernels: bounds checks (run before anything touches memory) and scatter-add.

NOTE [user indices]: every kernel that indexes memory with data from the user validates it
first, in backward too (a saved index can be changed through ``.data`` after the forward, which
bumps no version).  ``first_out_of_range`` finds the first bad index; the scatter kernels also
check every flat position they write, so even an index computed wrongly upstream can only raise.
"""

import numpy as np
from numba import njit

from .. import JIT


@njit(**JIT)
def first_out_of_range_cpu(idx, lo, hi):
    """The position of the first index outside [lo, hi), or -1 (all in range)."""
    for i in range(idx.size):
        v = idx[i]
        if v < lo or v >= hi:
            return i
    return -1


@njit(**JIT)
def scatter_add_flat_cpu(out, lin, src):
    """out[lin[i]] += src[i] over 1-D buffers (duplicates accumulate); returns the position
    of the first flat index outside ``out`` (nothing written from there on), or -1."""
    n = out.size
    for i in range(lin.size):
        k = lin[i]
        if k < 0 or k >= n:
            return i
        out[k] += src[i]
    return -1


@njit(**JIT)
def scatter_flat_cpu(out, lin, src):
    """out[lin[i]] = src[i]; returns like ``scatter_add_flat_cpu``."""
    n = out.size
    for i in range(lin.size):
        k = lin[i]
        if k < 0 or k >= n:
            return i
        out[k] = src[i]
    return -1


def _flat64(idx):
    if idx.dtype != np.int64:
        idx = idx.astype(np.int64)
    return idx if idx.ndim == 1 else idx.reshape(-1)


def first_bad(idx, lo, hi):
    """The first value of ``idx`` outside [lo, hi), or None."""
    idx = _flat64(idx)
    if not idx.size:
        return None
    k = first_out_of_range_cpu(idx, lo, hi)
    return None if k < 0 else int(idx[k])


def check_index(idx, n, dim, exc=IndexError, negative=True):
    """Raise ``exc`` ("index %d is out of bounds for dimension %d with size %d") unless every
    index is in [-n, n) (``negative``: Python-style wrapping allowed) or [0, n)."""
    bad = first_bad(idx, -n if negative else 0, n)
    if bad is not None:
        raise exc("index %d is out of bounds for dimension %d with size %d" % (bad, dim, n))


def _flat_error(k):
    # unreachable when the callers validated their indices: a last line of defence
    return RuntimeError("index %d is out of bounds for the flat buffer being written" % k)


def scatter_flat(out, lin, src, add):
    """``out.reshape(-1)[lin] (+)= src`` over 1-D contiguous buffers, bounds-checked."""
    lin = _flat64(lin)
    src = np.ascontiguousarray(src).reshape(-1)
    if lin.size:
        k = (scatter_add_flat_cpu if add else scatter_flat_cpu)(out, lin, src)
        if k >= 0:
            raise _flat_error(int(lin[k]))


def scatter_add(shape, dtype, lin, src):
    """A new zero array of ``shape`` with ``src`` added at flat positions ``lin``."""
    out = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    scatter_flat(out, lin, np.ascontiguousarray(src).reshape(-1).astype(dtype, copy=False), True)
    return out.reshape(shape)


@njit(**JIT)
def scatter_reduce_cpu(out, idx, src, outer_off, inner_off, stride, mode, include_self, identity,
                       count):  # fmt: skip
    """scatter_reduce into the flat buffer ``out``: ``idx`` and ``src`` are (outer, k, inner)
    views of the index and the source, and the element [o, j, i] goes to flat position
    ``outer_off[o] + idx[o, j, i] * stride + inner_off[i]``; out[p] = reduce(out[p], src) with
    mode 0 sum, 1 prod, 2 mean (sums, and ``count`` the values per position), 3 amax, 4 amin
    (NaN propagates, as PyTorch's).  Positions written start from ``identity`` unless
    ``include_self``.  Every position is checked before anything is written; returns the first
    bad index value, or -1 (and -2 for none: index values are never negative when valid)."""
    outer, k, inner = idx.shape
    n = out.size
    for o in range(outer):
        for j in range(k):
            for i in range(inner):
                p = outer_off[o] + idx[o, j, i] * stride + inner_off[i]
                if idx[o, j, i] < 0 or p >= n:
                    return o * k * inner + j * inner + i
    if not include_self:
        for o in range(outer):
            for j in range(k):
                for i in range(inner):
                    out[outer_off[o] + idx[o, j, i] * stride + inner_off[i]] = identity
    for o in range(outer):
        for j in range(k):
            for i in range(inner):
                p = outer_off[o] + idx[o, j, i] * stride + inner_off[i]
                v = src[o, j, i]
                r = out[p]
                if mode == 0:
                    out[p] = r + v
                elif mode == 1:
                    out[p] = r * v
                elif mode == 2:
                    out[p] = r + v
                    count[p] += 1
                elif mode == 3:  # a select, not a branch (random positions mispredict)
                    out[p] = v if (r < v) | (v != v) else r
                else:
                    out[p] = v if (v < r) | (v != v) else r
    return -1


@njit(**JIT)
def index_put_dim_cpu(out, idx, src, accumulate):
    """index_add / index_copy over the (outer, n, inner) layout: out[o, idx[j], i] (+)= src[o, j,
    i].  Every index is checked first (nothing is written if one is bad); returns the position
    of the first index outside [0, n), or -1."""
    outer, n, inner = out.shape
    for j in range(idx.size):
        if idx[j] < 0 or idx[j] >= n:
            return j
    for o in range(outer):
        for j in range(idx.size):
            t = idx[j]
            if accumulate:
                for i in range(inner):
                    out[o, t, i] += src[o, j, i]
            else:
                for i in range(inner):
                    out[o, t, i] = src[o, j, i]
    return -1


def index_put_dim(out, d, idx, src, accumulate):
    """``index_add`` (``accumulate``) or ``index_copy`` of ``src`` into the C-contiguous ``out``
    at ``idx`` along dim ``d`` (``src``: ``out``'s shape with dim ``d`` of length ``len(idx)``;
    0-d arrays are one element)."""
    shape = out.shape if out.ndim else (1,)
    outer = int(np.prod(shape[:d], dtype=np.int64))
    inner = int(np.prod(shape[d + 1 :], dtype=np.int64))
    o3 = out.reshape(outer, shape[d], inner)
    s3 = np.ascontiguousarray(src, dtype=out.dtype).reshape(outer, idx.size, inner)
    k = index_put_dim_cpu(o3, _flat64(idx), s3, accumulate)
    if k >= 0:
        raise _flat_error(int(_flat64(idx)[k]))
