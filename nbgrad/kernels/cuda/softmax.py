"""CUDA twins of kernels/cpu/softmax.py: softmax / log-softmax over the middle axis of
(outer, n, inner), forward and backward, same launchers and arguments.

One block per (outer, inner) line (block max by candidate index and a float64 tree sum: the
helpers of cuda/reduce.py) or one thread per line, whichever ``reduce._columns`` picks; both
are correct for any shape.  Element formulas follow the CPU twin term for term, including its
two log-softmax orders: contiguous lines (inner == 1) give ``x - (m + log s)``, strided ones
``x - m - log s``.  exp runs in x's dtype, sums and logs in float64.  An all -inf line is
shifted by 0 of x's dtype (passed in as ``zero``): its exps are 0, its sum 0 and the result NaN,
as PyTorch's; ``1 / 0`` and ``log 0`` are selected explicitly (the simulator would raise).
"""

import math

from numba import cuda, float64, int64

from . import reduce as _r
from .config import grid
from .reduce import RT, _bbest, _bsum, _thread_best

__all__ = ["softmax_fwd_cuda", "softmax_bwd_cuda"]


@cuda.jit(device=True)
def _log(s):
    """log of a non-negative float64 sum (or NaN): log(0) = -inf."""
    return float64(-math.inf) if s == 0.0 else float64(math.log(s))  # float64 in the simulator too


@cuda.jit(device=True)
def _inv(s):
    return float64(math.inf) if s == 0.0 else float64(1.0) / s


@cuda.jit(device=True)
def _fwd_val(xv, m, s, log, row1):
    if log:
        if row1:
            return xv - (m + _log(s))  # m + log s in float64, as the CPU's contiguous path
        return xv - m - _log(s)
    return math.exp(xv - m) * _inv(s)


@cuda.jit
def _fwd_b(x, out, log, zero):
    sm = cuda.shared.array(RT, float64)
    si = cuda.shared.array(RT, int64)
    outer, n, inner = x.shape
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        m = x[o, _bbest(si, x, o, i, _thread_best(x, o, i, n, True), True), i]
        if m == -math.inf:
            m = zero
        acc = float64(0.0)
        for k in range(tid, n, nt):
            acc += math.exp(x[o, k, i] - m)
        s = _bsum(sm, acc)
        for k in range(tid, n, nt):
            out[o, k, i] = _fwd_val(x[o, k, i], m, s, log, inner == 1)


@cuda.jit
def _fwd_c(x, out, log, zero):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        m = x[o, 0, i]
        for k in range(1, n):
            v = x[o, k, i]
            if v > m or v != v:
                m = v
        if m == -math.inf:  # an all -inf line: PyTorch gives nan, exp(-inf - 0) / 0 does too
            m = zero
        s = float64(0.0)
        for k in range(n):
            s += math.exp(x[o, k, i] - m)
        for k in range(n):
            out[o, k, i] = _fwd_val(x[o, k, i], m, s, log, inner == 1)


def softmax_fwd_cuda(x, out, log):
    outer, n, inner = x.shape
    if outer * inner == 0 or n == 0:
        return
    zero = x.dtype.type(0)  # keeps the shifted exps in x's dtype
    if _r._columns(outer, n, inner):
        _fwd_c[grid(outer * inner)](x, out, log, zero)
    else:
        _fwd_b[grid(outer * inner * RT, RT)](x, out, log, zero)


@cuda.jit(device=True)
def _bwd_term(gv, yv, log):
    return gv if log else gv * yv


@cuda.jit(device=True)
def _bwd_val(gv, yv, s, log):
    if log:
        return gv - math.exp(yv) * s
    return yv * (gv - s)


@cuda.jit
def _bwd_b(g, y, out, log):
    sm = cuda.shared.array(RT, float64)
    outer, n, inner = g.shape
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        acc = float64(0.0)
        for k in range(tid, n, nt):
            acc += _bwd_term(g[o, k, i], y[o, k, i], log)
        s = _bsum(sm, acc)
        for k in range(tid, n, nt):
            out[o, k, i] = _bwd_val(g[o, k, i], y[o, k, i], s, log)


@cuda.jit
def _bwd_c(g, y, out, log):
    outer, n, inner = g.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        s = float64(0.0)
        for k in range(n):
            s += _bwd_term(g[o, k, i], y[o, k, i], log)
        for k in range(n):
            out[o, k, i] = _bwd_val(g[o, k, i], y[o, k, i], s, log)


def softmax_bwd_cuda(g, y, out, log):
    """softmax: y * (g - sum(g*y));  log_softmax: g - exp(y) * sum(g)."""
    outer, n, inner = g.shape
    if outer * inner == 0 or n == 0:
        return
    if _r._columns(outer, n, inner):
        _bwd_c[grid(outer * inner)](g, y, out, log)
    else:
        _bwd_b[grid(outer * inner * RT, RT)](g, y, out, log)
