"""Scan kernels over the rows of a C-contiguous (m, n) array (the scanned dim moved last).

Sorting itself is numpy's stable argsort: measured 1.1-1.7x faster than a Numba merge sort over
rows (docs/performance.md), with the same order (NaN last ascending, ties in input order).
"""

from numba import njit

from .. import JIT


@njit(**JIT)
def cumextreme_rows_cpu(x, values, indices, take_max):
    """Running max (take_max) or min along each row; a tie takes the later index, and a NaN
    wins from where it stands (each later NaN moves the index), as PyTorch's cummax/cummin."""
    m, n = x.shape
    for r in range(m):
        best = x[r, 0]
        at = 0
        for j in range(n):
            v = x[r, j]
            if v != v or (best == best and (v >= best if take_max else v <= best)):
                best = v
                at = j
            values[r, j] = best
            indices[r, j] = at
