"""Activation kernels that are not one formula: glu over the (outer, 2, m) view of its input
(the two halves of the split dim, each flattened with the dims after it)."""

import numpy as np
from numba import njit

from .. import JIT


@njit(**JIT)
def glu_fwd_cpu(x, out):
    """out = a * sigmoid(b), with a = x[:, 0] and b = x[:, 1] (PyTorch's 1 / (1 + exp(-b)),
    in x's dtype like PyTorch's kernel)."""
    outer, _, m = x.shape
    one = np.ones(1, x.dtype)[0]
    for o in range(outer):
        for j in range(m):
            out[o, j] = x[o, 0, j] * (one / (one + np.exp(-x[o, 1, j])))


@njit(**JIT)
def glu_bwd_cpu(x, g, gx):
    """d/da = sigmoid(b) * g;  d/db = (1 - sigmoid(b)) * sigmoid(b) * a * g."""
    outer, _, m = x.shape
    one = np.ones(1, x.dtype)[0]
    for o in range(outer):
        for j in range(m):
            s = one / (one + np.exp(-x[o, 1, j]))
            gj = g[o, j]
            gx[o, 0, j] = s * gj
            gx[o, 1, j] = (one - s) * s * x[o, 0, j] * gj
