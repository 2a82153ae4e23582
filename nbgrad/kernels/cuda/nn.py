"""Small CUDA kernels of the nn ops' own array code (ops/nn/*.py) where the CPU side uses
numpy rather than a kernels/cpu kernel, so there is no twin to call: argument checks that read
one flag back to the host, and the like.  Grid-stride loops, correct for any launch."""

import numpy as np
from numba import cuda

from .config import grid

__all__ = ["any_outside_unit_cuda"]


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
