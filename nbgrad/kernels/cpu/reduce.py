"""Reductions over the middle axis of a C-contiguous (outer, n, inner) array.

Any reduction over a set of dims is turned into this shape by ops/reduction.py (a reshape when
the reduced dims are adjacent, otherwise one transpose-copy), so each kernel has one signature
per dtype.  Float sums accumulate in float64 for accuracy (NUMBA-NOTES section 2.2).
"""

import numpy as np
from numba import njit, prange  # noqa: F401

from .. import JIT


@njit(**JIT)
def _row_sum(row, n):
    """Sum of ``row[:n]`` in float64: 16 interleaved partial sums over full blocks (an
    unrolled fixed-length inner loop LLVM vectorises without fastmath: ~4x the sequential
    sum's speed), then the tail; NaN and inf propagate as in a sequential sum."""
    acc = np.zeros(16, np.float64)
    nb = n - n % 16
    for k in range(0, nb, 16):
        for j in range(16):
            acc[j] += row[k + j]
    s = 0.0
    for j in range(16):
        s += acc[j]
    for k in range(nb, n):
        s += row[k]
    return s


@njit(**JIT)
def sum_fwd_cpu(x, out):
    outer, n, inner = x.shape
    for o in range(outer):
        if inner == 1:
            out[o, 0] = _row_sum(x[o, :, 0], n)
        else:
            acc1 = np.zeros(inner, np.float64)
            for k in range(n):
                row = x[o, k]
                for i in range(inner):
                    acc1[i] += row[i]
            for i in range(inner):
                out[o, i] = acc1[i]


@njit(**JIT)
def csum_fwd_cpu(x, out):
    """sum_fwd_cpu for complex dtypes: accumulates in complex128."""
    outer, n, inner = x.shape
    for o in range(outer):
        acc1 = np.zeros(inner, np.complex128)
        for k in range(n):
            row = x[o, k]
            for i in range(inner):
                acc1[i] += row[i]
        for i in range(inner):
            out[o, i] = acc1[i]


@njit(**JIT)
def isum_fwd_cpu(x, out):
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            out[o, i] = 0
        for k in range(n):
            row = x[o, k]
            for i in range(inner):
                out[o, i] += row[i]


@njit(**JIT)
def prod_fwd_cpu(x, out):
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            out[o, i] = 1
        for k in range(n):
            row = x[o, k]
            for i in range(inner):
                out[o, i] *= row[i]


@njit(**JIT)
def amax_fwd_cpu(x, out, take_max):
    """max (take_max) or min over axis 1; NaN propagates like PyTorch."""
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            best = x[o, 0, i]
            for k in range(1, n):
                v = x[o, k, i]
                if best != best:
                    break
                if v != v:
                    best = v
                elif (v > best) if take_max else (v < best):
                    best = v
            out[o, i] = best


@njit(**JIT)
def argmax_fwd_cpu(x, out, take_max):
    """First index of the max (min); a NaN counts as the extreme value."""
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            best = x[o, 0, i]
            bi = 0
            for k in range(1, n):
                if best != best:
                    break
                v = x[o, k, i]
                if v != v or ((v > best) if take_max else (v < best)):
                    best = v
                    bi = k
            out[o, i] = bi


@njit(**JIT)
def var_fwd_cpu(x, out, correction):
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            m = 0.0
            for k in range(n):
                m += x[o, k, i]
            m /= n
            s = 0.0
            for k in range(n):
                d = x[o, k, i] - m
                s += d * d
            dof = n - correction
            out[o, i] = s / (dof if dof > 0 else 0.0)  # PyTorch: M2 / max(0, dof): inf or nan


@njit(**JIT)
def cumsum_fwd_cpu(x, out, zero):
    """PyTorch's running sum: an accumulator of ``zero``'s type (its CPU acc_type: float64 for
    float32) starting at 0 (0 + -inf is -inf, 0 + -0.0 is 0.0), each partial sum rounded into
    ``out``."""
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            acc = zero
            for k in range(n):
                acc += x[o, k, i]
                out[o, k, i] = acc


@njit(**JIT)
def logsumexp_fwd_cpu(x, out):
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            m = x[o, 0, i]
            for k in range(1, n):
                v = x[o, k, i]
                if v > m or v != v:  # PyTorch's amax: NaN wins, so [nan, inf] gives nan
                    m = v
            if m == np.inf or m == -np.inf:
                out[o, i] = m
                continue
            s = 0.0
            for k in range(n):
                s += np.exp(x[o, k, i] - m)
            out[o, i] = np.log(s) + m


@njit(**JIT)
def cumprod_fwd_cpu(x, out, acc0):
    """Running products along axis 1, accumulated in ``acc0``'s type (float64/complex128 for
    float32/complex64 inputs, PyTorch's CPU acc_type) and rounded to ``out``'s at each step."""
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            acc = acc0
            for k in range(n):
                acc *= x[o, k, i]
                out[o, k, i] = acc


@njit(**JIT)
def cumprod_bwd_cpu(x, y, g, gi):
    """PyTorch's O(n) cumprod_backward (first order) along axis 1; ``x``, ``y``: the input and
    the result (conjugated for complex), ``g`` the gradient.  Before the first zero z1 of a
    line: reversed running sums of y * g divided by x; at z1: the gradient through the
    products that z1 zeroes, up to the second zero, times y[z1 - 1]; after z1: 0."""
    outer, n, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            z1 = n
            for k in range(n):
                gi[o, k, i] = 0
                if z1 == n and x[o, k, i] == 0:
                    z1 = k
            acc = gi[o, 0, i]
            for k in range(z1 - 1, -1, -1):
                acc += y[o, k, i] * g[o, k, i]
                gi[o, k, i] = acc / x[o, k, i]
            if z1 == n:
                continue
            c = x[o, z1, i] - x[o, z1, i] + 1  # prod of x over (z1, j], in x's type
            s = g[o, z1, i] * c
            z2 = n
            for j in range(z1 + 1, n):
                if x[o, j, i] == 0:
                    z2 = j
                    break
                c *= x[o, j, i]
                s += c * g[o, j, i]
            if z2 < n:  # later positions add c * 0 (NaN if the product overflowed)
                s += c * 0
            gi[o, z1, i] = s * y[o, z1 - 1, i] if z1 > 0 else s
