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
def scatter_reduce_flat_cpu(out, lin, src, mode, include_self, identity, count):
    """scatter_reduce over 1-D buffers: out[lin[i]] = reduce(out[lin[i]], src[i]) with mode 0
    sum, 1 prod, 2 mean (sums, and ``count`` the values per position), 3 amax, 4 amin (NaN
    propagates, as PyTorch's); positions written start from ``identity`` unless
    ``include_self``.  Every flat position is checked before anything is written; returns
    the position of the first bad one, or -1."""
    n = out.size
    for i in range(lin.size):
        k = lin[i]
        if k < 0 or k >= n:
            return i
    if not include_self:
        for i in range(lin.size):
            out[lin[i]] = identity
    for i in range(lin.size):
        k = lin[i]
        v = src[i]
        if mode == 0 or mode == 2:
            out[k] += v
            if mode == 2:
                count[k] += 1
        elif mode == 1:
            out[k] *= v
        elif mode == 3:
            if v != v or out[k] < v:
                out[k] = v
        elif v != v or v < out[k]:
            out[k] = v
    return -1
