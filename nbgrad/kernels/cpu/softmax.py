"""Softmax / log-softmax over the middle axis of (outer, n, inner), forward and backward.

The rows (inner == 1) take three vectorised passes over a row that stays in cache: the max
(an integer max over ``vmath.ordered`` bits), the sum of exp (``vmath.sum_exp``), the output;
with inner > 1 the same passes run over the (n, inner) plane, vectorised across ``inner``.
``exp`` is kernels/cpu/vmath.py's (NOTE [vmath]), sums are float64 (blocked float32 partial
sums along rows), and ``exp`` stays in the input dtype.

Special rows, as PyTorch: any NaN makes the whole row NaN (exp(NaN) poisons the sum, whatever
the max picked); +inf gives NaN (inf - inf); an all -inf row gives NaN (its max is taken as 0,
so the sum is 0: log(0) - -inf and 0 * (1 / 0) are NaN).
"""

import numpy as np
from numba import njit

from .. import JIT
from .vmath import cast_like, exp_flush, row_dot, row_max, row_sum, store_exp, sub2, sum_exp


@njit(**JIT)
def softmax_fwd_cpu(x, out, log):
    outer, n, inner = x.shape
    zero = cast_like(0.0, x[0, 0, 0])
    if inner == 1:
        x2 = x.reshape((outer, n))
        o2 = out.reshape((outer, n))
        for o in range(outer):
            row = x2[o]
            orow = o2[o]
            m = row_max(row)
            m = zero if m == -np.inf else m
            if log:
                ls = cast_like(np.log(sum_exp(row, m)), m)
                for k in range(n):
                    orow[k] = sub2(row[k], m, ls)
            else:
                inv = cast_like(1.0 / store_exp(row, m, orow), m)
                for k in range(n):
                    orow[k] *= inv
        return
    m = np.empty(inner, x.dtype)
    s = np.empty(inner, np.float64)
    c = np.empty(inner, x.dtype)
    for o in range(outer):
        xo = x[o]
        oo = out[o]
        m[:] = xo[0]
        for k in range(1, n):
            xr = xo[k]
            for i in range(inner):
                v = xr[i]
                m[i] = v if v > m[i] else m[i]
        for i in range(inner):
            m[i] = zero if m[i] == -np.inf else m[i]
        s[:] = 0.0
        for k in range(n):
            xr = xo[k]
            orr = oo[k]
            for i in range(inner):
                e = exp_flush(xr[i] - m[i])
                if not log:
                    orr[i] = e
                s[i] += e
        if log:
            for i in range(inner):
                c[i] = np.log(s[i])
            for k in range(n):
                xr = xo[k]
                orr = oo[k]
                for i in range(inner):
                    orr[i] = sub2(xr[i], m[i], c[i])
        else:
            for i in range(inner):
                c[i] = 1.0 / s[i]
            for k in range(n):
                orr = oo[k]
                for i in range(inner):
                    orr[i] *= c[i]


@njit(**JIT)
def softmax_bwd_cpu(g, y, out, log):
    """softmax: y * (g - sum(g*y));  log_softmax: g - exp(y) * sum(g)."""
    outer, n, inner = g.shape
    if inner == 1:
        g2 = g.reshape((outer, n))
        y2 = y.reshape((outer, n))
        o2 = out.reshape((outer, n))
        for o in range(outer):
            gr = g2[o]
            yr = y2[o]
            orow = o2[o]
            if log:
                s = cast_like(row_sum(gr), gr[0])
                for k in range(n):
                    orow[k] = gr[k] - exp_flush(yr[k]) * s
            else:
                s = cast_like(row_dot(gr, yr), gr[0])
                for k in range(n):
                    orow[k] = yr[k] * (gr[k] - s)
        return
    acc = np.empty(inner, np.float64)
    s = np.empty(inner, g.dtype)
    for o in range(outer):
        go = g[o]
        yo = y[o]
        oo = out[o]
        acc[:] = 0.0
        for k in range(n):
            gr = go[k]
            yr = yo[k]
            for i in range(inner):
                acc[i] += gr[i] if log else gr[i] * yr[i]
        s[:] = acc
        for k in range(n):
            gr = go[k]
            yr = yo[k]
            orr = oo[k]
            for i in range(inner):
                if log:
                    orr[i] = gr[i] - exp_flush(yr[i]) * s[i]
                else:
                    orr[i] = yr[i] * (gr[i] - s[i])
