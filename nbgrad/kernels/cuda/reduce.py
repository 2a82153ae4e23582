"""CUDA twins of kernels/cpu/reduce.py: reductions over the middle axis of a C-contiguous
(outer, n, inner) device array, same launchers, same arguments, outputs written in place.

Two mappings, both correct for any launch and any shape (``_columns`` only picks the faster):
  * block: one block per (outer, inner) output (grid-stride over outputs by block), the block's
    threads stride over ``n`` and meet in a shared-memory tree (``_bsum`` and friends).  For
    long reductions with few outputs (a full sum, a row of a matrix).
  * columns: one thread per output looping over ``n`` in order, so adjacent threads read
    adjacent ``inner`` elements (coalesced) and the sum is the CPU twin's own order.  For many
    outputs or short reductions.
Scans (cumsum, cumprod and its backward) are sequential by nature: always columns.

Float sums accumulate in float64 and complex sums in complex128 like the CPU twin, so the two
agree to the last bit of the output dtype (float64 outputs: to rounding, the tree's order is
not the CPU's 16-lane order).  max/min/argmax/argmin and the row max of logsumexp reduce
*indices* of candidates (int64 shared memory) rather than values: a NaN wins, then the extreme,
ties go to the lower index -- exactly the CPU's sequential scan (the first NaN, the first of
equal values, so even max(0.0, -0.0) keeps the first sign), and no shared array per dtype.
Integer sums and products keep shared memory in the output's dtype (a kernel per dtype,
``_typed``); a block product is the CPU's product in another order, so a float product that
overflows in one order and not the other may differ (rounding otherwise).

No kernel divides by zero (the simulator would raise Python's ZeroDivisionError where the CPU
twin's numpy error model gives inf/NaN): those cases are selected explicitly.  Accumulators
start as ``float64(0.0)``, not ``0.0``: under the simulator a Python float is NumPy 2's "weak"
scalar, so ``0.0 + float32`` would stay float32 there (on a GPU both are float64).
"""

import functools
import math

import numba
from numba import complex128, cuda, float64, int64

from .config import REDUCE_THREADS, grid

__all__ = [
    "sum_fwd_cuda",
    "csum_fwd_cuda",
    "isum_fwd_cuda",
    "prod_fwd_cuda",
    "amax_fwd_cuda",
    "argmax_fwd_cuda",
    "var_fwd_cuda",
    "cumsum_fwd_cuda",
    "logsumexp_fwd_cuda",
    "cumprod_fwd_cuda",
    "cumprod_bwd_cuda",
]

RT = REDUCE_THREADS  # shared-array length (compile-time); blocks launch with at most RT threads
COLS_MIN = 16 if REDUCE_THREADS < 32 else 8192  # outputs enough to fill the GPU thread by thread


def _columns(outer, n, inner):
    """True: one thread per output; False: one block per output.  Either is correct."""
    return outer * inner >= COLS_MIN or n <= 4


# ---- block-level helpers (every thread of the block must call them: they synchronise) ----


@cuda.jit(device=True)
def _bsum(sm, v):
    """Sum of every thread's ``v`` over the block, returned to all threads (any block size up
    to ``RT``: the tree skips the partners past ``blockDim``)."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    sm[tid] = v
    cuda.syncthreads()
    s = RT // 2
    while s > 0:
        if tid < s and tid + s < nt:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s //= 2
    r = sm[0]
    cuda.syncthreads()  # sm is reused by the next call
    return r


@cuda.jit(device=True)
def _bprod(sm, v):
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    sm[tid] = v
    cuda.syncthreads()
    s = RT // 2
    while s > 0:
        if tid < s and tid + s < nt:
            sm[tid] *= sm[tid + s]
        cuda.syncthreads()
        s //= 2
    r = sm[0]
    cuda.syncthreads()
    return r


@cuda.jit(device=True)
def _better(x, o, i, a, b, take_max):
    """Whether candidate index ``b`` beats ``a`` along axis 1 of ``x``: a NaN wins, then the
    larger (take_max) or smaller value, ties (NaN and NaN too) to the lower index."""
    va = x[o, a, i]
    vb = x[o, b, i]
    an = va != va
    bn = vb != vb
    if an or bn:
        return bn and (not an or b < a)
    if va == vb:
        return b < a
    return (vb > va) if take_max else (vb < va)


@cuda.jit(device=True)
def _thread_best(x, o, i, n, take_max):
    """This thread's best index over its elements tid, tid + blockDim, ... (0 when it has
    none: a real element, harmless for an idempotent reduction; needs n >= 1)."""
    kk = 0
    for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        if _better(x, o, i, kk, k, take_max):
            kk = k
    return kk


@cuda.jit(device=True)
def _bbest(sm, x, o, i, kk, take_max):
    """The block's best candidate index (``_better``), returned to all threads."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    sm[tid] = kk
    cuda.syncthreads()
    s = RT // 2
    while s > 0:
        if tid < s and tid + s < nt:
            if _better(x, o, i, sm[tid], sm[tid + s], take_max):
                sm[tid] = sm[tid + s]
        cuda.syncthreads()
        s //= 2
    r = sm[0]
    cuda.syncthreads()
    return r


@cuda.jit(device=True)
def _over_zero(s):
    """``s / 0.0`` for ``s >= 0`` or NaN, as IEEE (and the CPU twin) gives it."""
    return math.inf if s > 0 else math.nan


# ---- sum ----


@cuda.jit
def _sum_b(x, out):
    sm = cuda.shared.array(RT, float64)
    outer, n, inner = x.shape
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        acc = float64(0.0)
        for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
            acc += x[o, k, i]
        r = _bsum(sm, acc)
        if cuda.threadIdx.x == 0:
            out[o, i] = r


@cuda.jit
def _sum_c(x, out):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        acc = float64(0.0)
        for k in range(n):
            acc += x[o, k, i]
        out[o, i] = acc


@cuda.jit
def _csum_b(x, out):
    sm = cuda.shared.array(RT, complex128)
    outer, n, inner = x.shape
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        acc = complex128(0)
        for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
            acc += x[o, k, i]
        r = _bsum(sm, acc)
        if cuda.threadIdx.x == 0:
            out[o, i] = r


@cuda.jit
def _csum_c(x, out):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        acc = complex128(0)
        for k in range(n):
            acc += x[o, k, i]
        out[o, i] = acc


@functools.lru_cache(maxsize=None)
def _typed(kind, dtype):
    """Block and column kernels of the integer sum (kind 'sum') or the product ('prod') whose
    accumulator and shared memory have the output's dtype (the CPU twin accumulates in out)."""
    T = numba.from_dtype(dtype)
    prod = kind == "prod"
    ident = 1 if prod else 0

    @cuda.jit
    def block(x, out):
        sm = cuda.shared.array(RT, T)
        outer, n, inner = x.shape
        for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
            o = j // inner
            i = j - o * inner
            acc = T(ident)
            for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                if prod:
                    acc *= x[o, k, i]
                else:
                    acc += x[o, k, i]
            r = _bprod(sm, acc) if prod else _bsum(sm, acc)
            if cuda.threadIdx.x == 0:
                out[o, i] = r

    @cuda.jit
    def columns(x, out):
        outer, n, inner = x.shape
        for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
            o = j // inner
            i = j - o * inner
            out[o, i] = ident
            for k in range(n):
                if prod:
                    out[o, i] *= x[o, k, i]
                else:
                    out[o, i] += x[o, k, i]

    return block, columns


def _launch(block, columns, x, *args):
    """One launch of the block or the column kernel over x's (outer, inner) outputs."""
    outer, n, inner = x.shape
    total = outer * inner
    if total == 0:
        return
    if _columns(outer, n, inner):
        columns[grid(total)](x, *args)
    else:
        block[grid(total * RT, RT)](x, *args)


def sum_fwd_cuda(x, out):
    _launch(_sum_b, _sum_c, x, out)


def csum_fwd_cuda(x, out):
    """sum_fwd_cuda for complex dtypes: accumulates in complex128."""
    _launch(_csum_b, _csum_c, x, out)


def isum_fwd_cuda(x, out):
    _launch(*_typed("sum", out.dtype), x, out)


def prod_fwd_cuda(x, out):
    _launch(*_typed("prod", out.dtype), x, out)


# ---- max / min and their indices ----


@cuda.jit
def _best_b(x, out, take_max, arg):
    sm = cuda.shared.array(RT, int64)
    outer, n, inner = x.shape
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        r = _bbest(sm, x, o, i, _thread_best(x, o, i, n, take_max), take_max)
        if cuda.threadIdx.x == 0:
            if arg:
                out[o, i] = r
            else:
                out[o, i] = x[o, r, i]


@cuda.jit
def _best_c(x, out, take_max, arg):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        kk = 0
        for k in range(1, n):
            if _better(x, o, i, kk, k, take_max):
                kk = k
        if arg:
            out[o, i] = kk
        else:
            out[o, i] = x[o, kk, i]


def amax_fwd_cuda(x, out, take_max):
    """max (take_max) or min over axis 1; NaN propagates like PyTorch.  An empty axis (n == 0,
    where the CPU twin reads past the end; callers raise before) leaves ``out`` untouched."""
    if x.shape[1] > 0:
        _launch(_best_b, _best_c, x, out, take_max, False)


def argmax_fwd_cuda(x, out, take_max):
    """First index of the max (min); a NaN counts as the extreme value.  n == 0: as amax."""
    if x.shape[1] > 0:
        _launch(_best_b, _best_c, x, out, take_max, True)


# ---- var ----


@cuda.jit(device=True)
def _var_out(s, n, correction):
    dof = n - correction
    return s / dof if dof > 0 else _over_zero(s)  # PyTorch: M2 / max(0, dof): inf or nan


@cuda.jit
def _var_b(x, out, correction):
    sm = cuda.shared.array(RT, float64)
    outer, n, inner = x.shape
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        acc = float64(0.0)
        for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
            acc += x[o, k, i]
        m = _bsum(sm, acc)
        if n > 0:
            m /= n
        acc = float64(0.0)
        for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
            d = x[o, k, i] - m
            acc += d * d
        s = _bsum(sm, acc)
        if cuda.threadIdx.x == 0:
            out[o, i] = _var_out(s, n, correction)


@cuda.jit
def _var_c(x, out, correction):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        m = float64(0.0)
        for k in range(n):
            m += x[o, k, i]
        if n > 0:
            m /= n
        s = float64(0.0)
        for k in range(n):
            d = x[o, k, i] - m
            s += d * d
        out[o, i] = _var_out(s, n, correction)


def var_fwd_cuda(x, out, correction):
    _launch(_var_b, _var_c, x, out, correction)


# ---- logsumexp ----


@cuda.jit
def _lse_b(x, out):
    sm = cuda.shared.array(RT, float64)
    si = cuda.shared.array(RT, int64)
    outer, n, inner = x.shape
    for j in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = j // inner
        i = j - o * inner
        m = x[o, _bbest(si, x, o, i, _thread_best(x, o, i, n, True), True), i]
        fin = m != math.inf and m != -math.inf  # uniform over the block
        acc = float64(0.0)
        if fin:
            for k in range(cuda.threadIdx.x, n, cuda.blockDim.x):
                acc += math.exp(x[o, k, i] - m)
        s = _bsum(sm, acc)
        if cuda.threadIdx.x == 0:
            out[o, i] = float64(math.log(s)) + m if fin else m


@cuda.jit
def _lse_c(x, out):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        m = x[o, 0, i]
        for k in range(1, n):
            v = x[o, k, i]
            if v > m or v != v:  # PyTorch's amax: NaN wins, so [nan, inf] gives nan
                m = v
        if m == math.inf or m == -math.inf:
            out[o, i] = m
            continue
        s = float64(0.0)
        for k in range(n):
            s += math.exp(x[o, k, i] - m)
        out[o, i] = float64(math.log(s)) + m  # float64 (a Python float would round to x's type)


@cuda.jit
def _fill(out, v):
    for j in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[j] = v


def logsumexp_fwd_cuda(x, out):
    """An empty axis (n == 0, where the CPU twin reads past the end) gives PyTorch's -inf."""
    if x.shape[1] == 0:
        if out.size:
            _fill[grid(out.size)](out.reshape(out.size), -math.inf)
        return
    _launch(_lse_b, _lse_c, x, out)


# ---- scans: one thread per (outer, inner) line ----


@cuda.jit
def _cumsum_c(x, out, zero):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        acc = zero
        for k in range(n):
            acc += x[o, k, i]
            out[o, k, i] = acc


def cumsum_fwd_cuda(x, out, zero):
    """PyTorch's running sum: an accumulator of ``zero``'s type starting at 0, each partial sum
    rounded into ``out`` (as the CPU twin)."""
    outer, n, inner = x.shape
    if outer * inner and n:
        _cumsum_c[grid(outer * inner)](x, out, zero)


@cuda.jit
def _cumprod_c(x, out, acc0):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
        acc = acc0
        for k in range(n):
            acc *= x[o, k, i]
            out[o, k, i] = acc


def cumprod_fwd_cuda(x, out, acc0):
    """Running products along axis 1, accumulated in ``acc0``'s type."""
    outer, n, inner = x.shape
    if outer * inner and n:
        _cumprod_c[grid(outer * inner)](x, out, acc0)


@cuda.jit
def _cumprod_bwd_c(x, y, g, gi):
    outer, n, inner = x.shape
    for j in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = j // inner
        i = j - o * inner
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
        for jj in range(z1 + 1, n):
            if x[o, jj, i] == 0:
                z2 = jj
                break
            c *= x[o, jj, i]
            s += c * g[o, jj, i]
        if z2 < n:  # later positions add c * 0 (NaN if the product overflowed)
            s += c * 0
        gi[o, z1, i] = s * y[o, z1 - 1, i] if z1 > 0 else s


def cumprod_bwd_cuda(x, y, g, gi):
    """PyTorch's O(n) cumprod_backward along axis 1 (see the CPU twin), a thread per line."""
    outer, n, inner = x.shape
    if outer * inner and n:
        _cumprod_bwd_c[grid(outer * inner)](x, y, g, gi)
