"""Indexing kernels: bounds checks (run before anything touches memory) and scatter-add."""

import numpy as np
from numba import njit

from .. import JIT


@njit(**JIT)
def check_bounds_cpu(idx, n):
    """Return the first index outside [-n, n), or n (meaning: all in range)."""
    for i in range(idx.size):
        v = idx[i]
        if v < -n or v >= n:
            return v
    return n


@njit(**JIT)
def scatter_add_flat_cpu(out, lin, src):
    """out[lin[i]] += src[i] over 1-D buffers (duplicates accumulate)."""
    for i in range(lin.size):
        out[lin[i]] += src[i]


@njit(**JIT)
def scatter_flat_cpu(out, lin, src):
    for i in range(lin.size):
        out[lin[i]] = src[i]


def check_index(idx, n, dim, size_word="size"):
    idx = np.ascontiguousarray(idx).reshape(-1)
    if idx.size:
        if idx.dtype != np.int64:
            idx = idx.astype(np.int64)
        bad = check_bounds_cpu(idx, n)
        if bad != n:
            raise IndexError(
                "index %d is out of bounds for dimension %d with size %d" % (bad, dim, n)
            )


def scatter_add(shape, dtype, lin, src):
    """A new zero array of ``shape`` with ``src`` added at flat positions ``lin``."""
    out = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    lin = np.ascontiguousarray(lin, dtype=np.int64).reshape(-1)
    src = np.ascontiguousarray(src).reshape(-1).astype(dtype, copy=False)
    if lin.size:
        scatter_add_flat_cpu(out, lin, src)
    return out.reshape(shape)
