"""Block reductions shared by the CUDA loss, index and embedding kernels (a module of its own:
cuda/reduce.py is the twin of kernels/cpu/reduce.py).

* ``tree_sum`` / ``tree_max``: device functions that reduce a float64 shared array of
  ``REDUCE_THREADS`` slots (one per thread of the block) and hand the result to every thread.
  The max propagates NaN (as the CPU kernels' ``v > m or v != v`` scan) by a select.
* ``sum_f64_cuda(a, out)``: out[0] = the float64 sum of a 1-D or 2-D device array, in two
  passes (per-block partials, then one block), so the order is fixed for a launch
  configuration: no atomics, the same result every run.
* ``first_true(n, ...)``: the min-reduction of "bad" positions that every index check uses: a
  one-element int64 device array starts at ``n`` and ``cuda.atomic.min`` lowers it; the host
  reads that one number (the only device->host copy an index check makes).
* ``exp`` / ``log`` / ``log1p``: ``math``'s on a GPU; numpy's under the simulator, where
  kernels run as Python and ``math.log(0)`` or ``math.exp(1e4)`` would raise instead of
  giving -inf / inf as the device's libm (and numpy keeps float32 in float32, as the GPU).
"""

import math

import numba
import numpy as np
from numba import cuda, float64

from .config import REDUCE_THREADS, SIM, grid

__all__ = [
    "tree_sum",
    "tree_max",
    "sum_f64_cuda",
    "sentinel",
    "read_first",
    "as_numba_type",
    "exp",
    "log",
    "log1p",
]

if SIM:
    exp, log, log1p = np.exp, np.log, np.log1p
else:
    exp, log, log1p = math.exp, math.log, math.log1p


@cuda.jit(device=True)
def tree_sum(sm, tid):
    """Sum of sm[0:REDUCE_THREADS] (each thread wrote its slot); every thread of the block must
    call it.  Returns the sum to every thread; ``sm`` may be reused after a ``syncthreads``."""
    cuda.syncthreads()
    s = REDUCE_THREADS // 2
    while s > 0:
        if tid < s:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s //= 2
    return sm[0]


@cuda.jit(device=True)
def tree_max(sm, tid):
    """Max of sm[0:REDUCE_THREADS], NaN if any slot is NaN (empty slots hold -inf)."""
    cuda.syncthreads()
    s = REDUCE_THREADS // 2
    while s > 0:
        if tid < s:
            a = sm[tid]
            b = sm[tid + s]
            sm[tid] = b if (b > a or b != b) else a
        cuda.syncthreads()
        s //= 2
    return sm[0]


@cuda.jit
def _partial_1d(a, part):
    sm = cuda.shared.array(REDUCE_THREADS, float64)
    tid = cuda.threadIdx.x
    acc = float64(0.0)  # typed: under the simulator 0.0 + float32 is float32 (NEP 50)
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        acc += a[i]
    sm[tid] = acc
    s = tree_sum(sm, tid)
    if tid == 0:
        part[cuda.blockIdx.x] = s


@cuda.jit
def _partial_2d(a, part):
    sm = cuda.shared.array(REDUCE_THREADS, float64)
    tid = cuda.threadIdx.x
    rows, cols = a.shape
    acc = float64(0.0)
    for i in range(cuda.grid(1), rows * cols, cuda.gridsize(1)):
        acc += a[i // cols, i % cols]
    sm[tid] = acc
    s = tree_sum(sm, tid)
    if tid == 0:
        part[cuda.blockIdx.x] = s


def sum_f64_cuda(a, out):
    """out[0] = sum(a) in float64 (``a``: a 1-D or 2-D device array, any real dtype; empty: 0)."""
    n = a.size
    blocks, t = grid(n, REDUCE_THREADS)
    part = cuda.device_array(blocks, np.float64)
    (_partial_1d if a.ndim == 1 else _partial_2d)[blocks, t](a, part)
    _partial_1d[1, t](part, out)
    return out


def sentinel(n):
    """A one-element int64 device array holding ``n`` (no position found yet)."""
    return cuda.to_device(np.array([n], np.int64))


def read_first(res, n):
    """The position a check kernel left in ``res`` (one tiny copy), or -1 if none."""
    k = int(res.copy_to_host()[0])
    return -1 if k >= n else k


def as_numba_type(dtype):
    """The numba scalar type of ``dtype``, callable in a kernel as a cast (``float32(v)``)."""
    return numba.from_dtype(np.dtype(dtype))
