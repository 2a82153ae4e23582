"""Launch configuration shared by every CUDA kernel module in this package.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs one Python thread per CUDA thread, so a launch
of 64 x 16 threads over 1,000 elements costs 0.1 s where 1 x 32 costs 5 ms: under the
simulator blocks are small and few (grid-stride loops and block reductions stay correct for any
launch).  On a GPU: 256 threads a block, at most 32 blocks per SM's worth (NUMBA-NOTES 6.3).
"""

import os

from numba import cuda

__all__ = ["SIM", "THREADS", "REDUCE_THREADS", "grid", "TILE"]

SIM = bool(cuda.config.ENABLE_CUDASIM) or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# threads per block for elementwise kernels; REDUCE_THREADS is a power of two (tree reductions)
THREADS = 8 if SIM else 256
REDUCE_THREADS = 8 if SIM else 256
MAX_BLOCKS = 4 if SIM else 4096
TILE = 4 if SIM else 16  # matmul tile edge (shared memory TILE x TILE per operand)


def grid(n, threads=None):
    """``(blocks, threads)`` for a grid-stride kernel over ``n`` items."""
    t = THREADS if threads is None else threads
    return max(1, min((n + t - 1) // t, MAX_BLOCKS)), t
