"""CUDA twin of kernels/cpu/sort.py: the running max/min scan over the rows of a C-contiguous
(m, n) device array.  A scan is sequential along its row, so one thread per row (grid-stride
over rows; adjacent threads read rows n apart, which is fine for the short rows cummax sees)."""

from numba import cuda

from .config import grid

__all__ = ["cumextreme_rows_cuda"]


@cuda.jit
def _cumextreme(x, values, indices, take_max):
    m, n = x.shape
    for r in range(cuda.grid(1), m, cuda.gridsize(1)):
        best = x[r, 0]
        at = 0
        for j in range(n):
            v = x[r, j]
            if v != v or (best == best and (v >= best if take_max else v <= best)):
                best = v
                at = j
            values[r, j] = best
            indices[r, j] = at


def cumextreme_rows_cuda(x, values, indices, take_max):
    """Running max (take_max) or min along each row; a tie takes the later index, and a NaN
    wins from where it stands (each later NaN moves the index), as PyTorch's cummax/cummin."""
    m, n = x.shape
    if m and n:
        _cumextreme[grid(m)](x, values, indices, take_max)
