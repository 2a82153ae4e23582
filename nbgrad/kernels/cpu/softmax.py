"""Softmax / log-softmax over the middle axis of (outer, n, inner), forward and backward."""

import numpy as np
from numba import njit

from .. import JIT
from .loss import _row_expsum, _row_max
from .vformula import vexp


@njit(**JIT)
def softmax_fwd_cpu(x, out, log):
    outer, n, inner = x.shape
    zero = np.zeros(1, x.dtype)[0]  # x's dtype: float32 rows stay float32 (SIMD-friendly)
    if inner == 1:  # contiguous rows: vectorised (vexp, NOTE [vectorised gates])
        for o in range(outer):
            row = x[o].ravel()
            orow = out[o].ravel()
            m = _row_max(row, n, zero)
            if log:
                ls = m + np.log(_row_expsum(row, m, n))  # float64, so no re-association
                for k in range(n):
                    orow[k] = row[k] - ls
            else:  # one exp pass: the exps go to the output, then one scaling pass
                s = 0.0
                for k in range(n):
                    e = vexp(row[k] - m)
                    orow[k] = e
                    s += e
                inv = 1.0 / s
                for k in range(n):
                    orow[k] = orow[k] * inv
        return
    for o in range(outer):
        for i in range(inner):
            m = x[o, 0, i]
            for k in range(1, n):
                v = x[o, k, i]
                if v > m or v != v:
                    m = v
            if m == -np.inf:  # an all -inf row: PyTorch gives nan, exp(-inf - -inf) does too
                m = zero
            # exp in x's dtype (float32 stays float32), sum and log in float64: the float64
            # ``ls`` also stops fast-math from re-associating (x - m) - ls into x - (m + ls)
            s = 0.0
            for k in range(n):
                s += np.exp(x[o, k, i] - m)
            if log:
                ls = np.log(s)
                for k in range(n):
                    out[o, k, i] = x[o, k, i] - m - ls
            else:
                inv = 1.0 / s
                for k in range(n):
                    out[o, k, i] = np.exp(x[o, k, i] - m) * inv


@njit(**JIT)
def softmax_bwd_cpu(g, y, out, log):
    """softmax: y * (g - sum(g*y));  log_softmax: g - exp(y) * sum(g)."""
    outer, n, inner = g.shape
    if inner == 1 and log:  # contiguous rows: the exp vectorised
        for o in range(outer):
            grow, yrow, orow = g[o].ravel(), y[o].ravel(), out[o].ravel()
            s = 0.0
            for k in range(n):
                s += grow[k]
            for k in range(n):
                orow[k] = grow[k] - vexp(yrow[k]) * s
        return
    for o in range(outer):
        for i in range(inner):
            s = 0.0
            if log:
                for k in range(n):
                    s += g[o, k, i]
                for k in range(n):
                    out[o, k, i] = g[o, k, i] - np.exp(y[o, k, i]) * s
            else:
                for k in range(n):
                    s += g[o, k, i] * y[o, k, i]
                for k in range(n):
                    out[o, k, i] = y[o, k, i] * (g[o, k, i] - s)
