"""CUDA sides of nn functions whose CPU code is numpy rather than an op's kernel
(nn/functional.py): the same checks and results with device kernels (kernels/cuda/nn.py),
reading back only the numbers a check needs."""

import numpy as np

from ...kernels.cuda import nn as KN
from . import xp

__all__ = ["one_hot"]


def one_hot(a, num_classes):
    """``F.one_hot``'s array for the int64 device array ``a``: PyTorch's checks (min and max
    read back), then the ones written by a kernel."""
    flat = a.contiguous().reshape(-1)
    lo = hi = None
    if a.size:
        lo, hi = KN.minmax_i64_cuda(flat.dense())
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = hi + 1
    if a.size:
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = xp.empty((a.size, int(num_classes)), np.int64)
    KN.one_hot_cuda(flat.dense(), out.dense())
    return out.reshape(tuple(a.shape) + (int(num_classes),))
