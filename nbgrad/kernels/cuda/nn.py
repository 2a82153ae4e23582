"""Small CUDA kernels of the nn ops' own array code (ops/nn/*.py) where the CPU side uses
numpy rather than a kernels/cpu kernel, so there is no twin to call: argument checks that read
one flag back to the host, and the like.  Grid-stride loops, correct for any launch."""

import numpy as np
from numba import cuda

from .config import grid

__all__ = [
    "any_outside_unit_cuda",
    "take_rows_cuda",
    "embedding_mult_cuda",
    "take_axis1_cuda",
    "any_true_cuda",
    "minmax_i64_cuda",
    "one_hot_cuda",
]


@cuda.jit
def _outside_unit(x, flag):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        v = x[i]
        if not (v >= 0 and v <= 1):  # NaN is outside too, as numpy's comparisons say
            flag[0] = 1  # (every writer stores the same value: no atomics needed)


def any_outside_unit_cuda(x):
    """Whether a 1-D device array has an element outside [0, 1] (or a NaN): one flag read
    back to the host."""
    if x.size == 0:
        return False
    flag = cuda.to_device(np.zeros(1, np.int32))
    _outside_unit[grid(x.size)](x, flag)
    return bool(flag.copy_to_host()[0])


# -- embedding -----------------------------------------------------------------------------------


@cuda.jit
def _take_rows(w, idx, out):
    n, D = out.shape
    for q in range(cuda.grid(1), n * D, cuda.gridsize(1)):
        i = q // D
        out[i, q - i * D] = w[idx[i], q - i * D]


def take_rows_cuda(w, idx, out):
    """out[i, :] = w[idx[i], :] (``np.take(w, idx, axis=0)``); ``idx`` (int64, 1-D) already
    range-checked."""
    if out.size:
        _take_rows[grid(out.size)](w, idx, out)


@cuda.jit
def _count(idx, counts):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(counts, idx[i], 1)


@cuda.jit
def _embedding_mult(idx, counts, use_freq, pad, mult):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        j = idx[i]
        m = 1.0 / counts[j] if use_freq else 1.0
        if pad >= 0 and j == pad:
            m = 0.0
        mult[i] = m


def embedding_mult_cuda(idx, V, freq, pad):
    """Per-entry float64 multiplier of embedding's weight gradient: ``1 / count(idx[i])``
    when ``freq`` (``np.bincount``'s counts, by atomic adds), 1 otherwise; 0 where
    ``idx[i] == pad`` (``pad`` >= 0)."""
    n = idx.shape[0]
    counts = cuda.to_device(np.zeros(max(V, 1), np.int64))
    mult = cuda.device_array(max(n, 1), np.float64)
    if n:
        if freq:
            _count[grid(n)](idx, counts)
        _embedding_mult[grid(n)](idx, counts, bool(freq), int(pad), mult)
    return mult[:n]


# -- gathers along one axis ----------------------------------------------------------------------


@cuda.jit
def _take_axis1(a, idx, out):
    A, K, B = out.shape
    for q in range(cuda.grid(1), A * K * B, cuda.gridsize(1)):
        b = q % B
        t = q // B
        k = t % K
        out[t // K, k, b] = a[t // K, idx[k], b]


def take_axis1_cuda(a, idx, out):
    """out[i, k, j] = a[i, idx[k], j] (``np.take(a, idx, axis=1)`` of a 3-D view); ``idx``
    (int64) already in range."""
    if out.size:
        _take_axis1[grid(out.size)](a, idx, out)


@cuda.jit
def _any_true(x, flag):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if x[i]:
            flag[0] = 1  # (every writer stores the same value: no atomics needed)


def any_true_cuda(x):
    """``x.any()`` of a 1-D device array: one flag read back to the host."""
    if x.size == 0:
        return False
    flag = cuda.to_device(np.zeros(1, np.int32))
    _any_true[grid(x.size)](x, flag)
    return bool(flag.copy_to_host()[0])


# -- one_hot -------------------------------------------------------------------------------------


@cuda.jit
def _minmax(a, res):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        cuda.atomic.min(res, 0, a[i])
        cuda.atomic.max(res, 1, a[i])


def minmax_i64_cuda(a):
    """(min, max) of a non-empty 1-D int64 device array: two numbers read back to the host."""
    res = cuda.to_device(np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64))
    _minmax[grid(a.shape[0])](a, res)
    lo, hi = res.copy_to_host()
    return int(lo), int(hi)


@cuda.jit
def _one_hot(a, out):
    n, C = out.shape
    for q in range(cuda.grid(1), n * C, cuda.gridsize(1)):
        i = q // C
        out[i, q - i * C] = 1 if a[i] == q - i * C else 0


def one_hot_cuda(a, out):
    """out[i, c] = (a[i] == c) for a 1-D int64 ``a`` (values already in range)."""
    if out.size:
        _one_hot[grid(out.size)](a, out)
