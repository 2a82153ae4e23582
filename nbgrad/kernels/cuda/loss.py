"""CUDA twins of kernels/cpu/loss.py: same parameters, same formulas, device arrays in and out.

* ``nll_fwd_cuda`` / ``nll_bwd_cuda``: one thread per sample (o, i) of the (outer, C, inner)
  layout, the class axis scanned in order as the CPU kernel does (the general layout: spatial
  targets have many samples and few classes).
* ``ce_rows_fwd_cuda``: one block per row of a (N, C) array: the row max (NaN-propagating) and
  the float64 sum of exps are shared-memory tree reductions.  ``ce_rows_bwd_cuda`` needs no
  reduction (log-sum-exp is saved): a grid-stride loop over all N * C elements.
* bce / bcel / mse / smooth_l1: grid-stride loops over the 1-D buffers.

Differences from the CPU twins (the caller's contract is otherwise the same):
* Forward kernels return the float64 total as a one-element float64 DEVICE array (reading it
  would cost a device->host copy per loss; the caller reduces on the device).  Each writes its
  per-element float64 values to a scratch buffer and sums that (``blockred.sum_f64_cuda``),
  so the total is the CPU's sum of float64 values, in another (fixed) order.
* A kernel cannot raise: the NLL launchers find the first target that is neither
  ``ignore_index`` nor in [0, C) with a min-reduction, copy that one number to the host and raise
  the CPU's ``IndexError("Target is out of bounds.")`` before launching.  The kernels still skip
  such a target (its outputs are left alone) so that no launch indexes memory with it.
* Where the CPU casts a float64 into x's dtype (``lse - m`` before the exp, the ``vexp`` cast of
  ``ce_rows_bwd``), the kernel is built per dtype with that dtype's numba type as the cast.
* Float64 accumulators start from ``float64(0.0)``, not ``0.0``: the same type on a GPU, and
  under the simulator (plain Python, NEP 50) ``0.0 + float32`` would stay float32.
"""

import math
from functools import lru_cache

import numpy as np
from numba import cuda, float64

from .blockred import (
    as_numba_type,
    exp,
    log,
    log1p,
    read_first,
    sentinel,
    sum_f64_cuda,
    tree_max,
    tree_sum,
)
from .config import REDUCE_THREADS, grid

__all__ = [
    "nll_fwd_cuda",
    "nll_bwd_cuda",
    "ce_rows_fwd_cuda",
    "ce_rows_bwd_cuda",
    "bce_fwd_cuda",
    "bce_bwd_cuda",
    "bcel_fwd_cuda",
    "bcel_bwd_cuda",
    "mse_fwd_cuda",
    "mse_bwd_cuda",
    "smooth_l1_fwd_cuda",
    "smooth_l1_bwd_cuda",
]

_TARGET_ERROR = "Target is out of bounds."


# -- target validation ------------------------------------------------------------------------


@cuda.jit
def _bad_target_2d(t, ignore_index, C, res):
    outer, inner = t.shape
    for p in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        ti = t[p // inner, p % inner]
        if ti != ignore_index and (ti < 0 or ti >= C):
            cuda.atomic.min(res, 0, p)


@cuda.jit
def _bad_target_1d(t, ignore_index, C, res):
    for p in range(cuda.grid(1), t.shape[0], cuda.gridsize(1)):
        ti = t[p]
        if ti != ignore_index and (ti < 0 or ti >= C):
            cuda.atomic.min(res, 0, p)


def _check_targets(t, ignore_index, C):
    """Raise the CPU kernels' IndexError if a target is neither ignored nor in [0, C)."""
    n = t.size
    if not n:
        return
    res = sentinel(n)
    (_bad_target_1d if t.ndim == 1 else _bad_target_2d)[grid(n)](t, ignore_index, C, res)
    if read_first(res, n) >= 0:
        raise IndexError(_TARGET_ERROR)


def _total(vals):
    out = cuda.device_array(1, np.float64)
    return sum_f64_cuda(vals, out)


# -- nll / cross-entropy over (outer, C, inner) -----------------------------------------------


@cuda.jit
def _nll_fwd(x, t, w, ignore_index, smoothing, fused, zero, loss, wt, lse, vals):
    outer, C, inner = x.shape
    for p in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = p // inner
        i = p % inner
        ti = t[o, i]
        if ti == ignore_index:
            loss[o, i] = 0
            wt[o, i] = 0
            lse[o, i] = 0
            vals[o, i] = 0.0
            continue
        if ti < 0 or ti >= C:  # validated by the launcher: never index with it
            continue
        ls = float64(0.0)
        if fused:
            m = x[o, 0, i]
            for k in range(1, C):
                v = x[o, k, i]
                if v > m or v != v:
                    m = v
            if m == -math.inf:
                m = zero
            s = float64(0.0)
            for k in range(C):
                s += exp(x[o, k, i] - m)
            ls = m + log(s)
        lse[o, i] = ls
        wi = w[ti]
        val = -wi * (x[o, ti, i] - ls)
        if smoothing > 0:
            sm = float64(0.0)
            for k in range(C):
                sm -= w[k] * (x[o, k, i] - ls)
            val = (1.0 - smoothing) * val + smoothing / C * sm
        loss[o, i] = val
        wt[o, i] = wi
        vals[o, i] = val


def nll_fwd_cuda(x, t, w, ignore_index, smoothing, fused, loss, wt, lse):
    """``nll_fwd_cpu`` on device arrays; returns the total as a (1,) float64 device array."""
    outer, C, inner = x.shape
    _check_targets(t, ignore_index, C)
    vals = cuda.device_array((outer, inner), np.float64)
    _nll_fwd[grid(outer * inner)](
        x, t, w, ignore_index, float(smoothing), bool(fused), x.dtype.type(0), loss, wt, lse, vals
    )
    return _total(vals)


@cuda.jit
def _wsum(w, out):
    # one thread: C is small and the sum's order is the CPU's
    if cuda.grid(1) == 0:
        s = float64(0.0)
        for k in range(w.shape[0]):
            s += w[k]
        out[0] = s


@lru_cache(maxsize=None)
def _nll_bwd_kernel(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def k(x, t, w, ignore_index, smoothing, fused, lse, gs, wsum_a, zero, gx):
        outer, C, inner = x.shape
        shared = gs.shape[0] == 1 and gs.shape[1] == 1
        wsum = wsum_a[0]
        for p in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
            o = p // inner
            i = p % inner
            ti = t[o, i]
            if ti == ignore_index:
                for c in range(C):
                    gx[o, c, i] = 0
                continue
            if ti < 0 or ti >= C:
                continue
            gi = gs[0, 0] if shared else gs[o, i]
            if fused:
                a = gi * (1.0 - smoothing) * w[ti]
                b = gi * smoothing / C
                m = x[o, 0, i]
                for c in range(1, C):
                    v = x[o, c, i]
                    if v > m or v != v:
                        m = v
                if m == -math.inf:
                    m = zero
                lsm = cast(lse[o, i] - m)  # log(sum exp(x - m)) in x's dtype, as the CPU's
                for c in range(C):
                    q = exp((x[o, c, i] - m) - lsm)
                    gx[o, c, i] = a * q + b * (wsum * q - w[c])
                gx[o, ti, i] -= a
            else:
                for c in range(C):
                    gx[o, c, i] = 0
                gx[o, ti, i] = -gi * w[ti]

    return k


def nll_bwd_cuda(x, t, w, ignore_index, smoothing, fused, lse, gs, gx):
    """``nll_bwd_cpu`` on device arrays (``gs``: (outer, inner), or (1, 1) shared)."""
    outer, C, inner = x.shape
    _check_targets(t, ignore_index, C)
    wsum = cuda.to_device(np.zeros(1, np.float64))
    if smoothing > 0:
        _wsum[1, 1](w, wsum)
    _nll_bwd_kernel(np.dtype(x.dtype))[grid(outer * inner)](
        x, t, w, ignore_index, float(smoothing), bool(fused), lse, gs, wsum, x.dtype.type(0), gx
    )


# -- cross-entropy over contiguous (N, C) rows -------------------------------------------------


@lru_cache(maxsize=None)
def _ce_rows_fwd_kernel(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def k(x, t, w, ignore_index, zero, loss, wt, lse, vals):
        sm = cuda.shared.array(REDUCE_THREADS, float64)
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        N, C = x.shape
        for o in range(cuda.blockIdx.x, N, cuda.gridDim.x):  # one row per block
            ti = t[o]  # the same for the whole block: every branch below is uniform
            if ti == ignore_index:
                if tid == 0:
                    loss[o] = 0
                    wt[o] = 0
                    lse[o] = 0
                    vals[o] = 0.0
                continue
            if ti < 0 or ti >= C:
                continue
            mx = -math.inf
            for c in range(tid, C, nt):
                v = float64(x[o, c])
                if v > mx or v != v:
                    mx = v
            sm[tid] = mx
            m = cast(tree_max(sm, tid))  # exact: the max is one of the row's values
            if m == -math.inf:
                m = zero
            cuda.syncthreads()  # every thread has read sm[0] before it is reused
            s = float64(0.0)
            for c in range(tid, C, nt):
                s += exp(x[o, c] - m)
            sm[tid] = s
            s = tree_sum(sm, tid)
            if tid == 0:
                ls = m + log(s)
                lse[o] = ls
                wi = w[ti]
                val = -wi * (x[o, ti] - ls)
                loss[o] = val
                wt[o] = wi
                vals[o] = val
            cuda.syncthreads()

    return k


def ce_rows_fwd_cuda(x, t, w, ignore_index, loss, wt, lse):
    """``ce_rows_fwd_cpu`` on device arrays; returns the total as a (1,) float64 device array."""
    N, C = x.shape
    _check_targets(t, ignore_index, C)
    vals = cuda.device_array(N, np.float64)
    blocks, threads = grid(N * REDUCE_THREADS, REDUCE_THREADS)  # blocks: min(N, cap)
    _ce_rows_fwd_kernel(np.dtype(x.dtype))[blocks, threads](
        x, t, w, ignore_index, x.dtype.type(0), loss, wt, lse, vals
    )
    return _total(vals)


@lru_cache(maxsize=None)
def _ce_rows_bwd_kernel(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def k(x, t, w, ignore_index, lse, gs, gx):
        N, C = x.shape
        shared = gs.shape[0] == 1
        for p in range(cuda.grid(1), N * C, cuda.gridsize(1)):
            o = p // C
            c = p % C
            ti = t[o]
            if ti == ignore_index:
                gx[o, c] = 0
                continue
            if ti < 0 or ti >= C:
                continue
            a = (gs[0] if shared else gs[o]) * w[ti]
            v = a * exp(cast(x[o, c] - lse[o]))  # x - lse in float64, exp in x's dtype
            if c == ti:
                gx[o, c] = v  # rounded to gx's dtype first, as the CPU's grow[ti] -= a
                v = gx[o, c] - a
            gx[o, c] = v

    return k


def ce_rows_bwd_cuda(x, t, w, ignore_index, lse, gs, gx):
    """``ce_rows_bwd_cpu`` on device arrays (``gs``: (N,), or (1,) shared)."""
    N, C = x.shape
    _check_targets(t, ignore_index, C)
    _ce_rows_bwd_kernel(np.dtype(x.dtype))[grid(N * C)](x, t, w, ignore_index, lse, gs, gx)


# -- binary cross-entropy, mse, smooth_l1 over 1-D buffers --------------------------------------


@cuda.jit(device=True)
def _max_keep_nan(a, b):
    """``max(a, b)`` as numba's CPU ``max`` gives it: NaN in ``a`` wins.  CUDA's ``max`` lowers
    to ``fmax``, which drops a NaN (seen on an H100: a NaN input gave a finite loss)."""
    return b if a < b else a


@cuda.jit
def _bce_fwd(x, t, w, out, vals):
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        xi = x[k]
        lx = _max_keep_nan(log(xi), -100.0)
        l1 = _max_keep_nan(log1p(-xi), -100.0)
        v = w[k] * ((t[k] - 1.0) * l1 - t[k] * lx)
        out[k] = v
        vals[k] = v


def bce_fwd_cuda(x, t, w, out):
    """``bce_fwd_cpu``; returns the total as a (1,) float64 device array."""
    vals = cuda.device_array(x.shape[0], np.float64)
    _bce_fwd[grid(x.shape[0])](x, t, w, out, vals)
    return _total(vals)


@cuda.jit
def _bce_bwd(x, t, w, g, scale, gx, gt):
    shared = g.shape[0] == 1
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        gk = (g[0] if shared else g[k]) * scale * w[k]
        xi = x[k]
        gx[k] = gk * (xi - t[k]) / _max_keep_nan((1.0 - xi) * xi, 1e-12)
        gt[k] = gk * (log1p(-xi) - log(xi))


def bce_bwd_cuda(x, t, w, g, scale, gx, gt):
    """``bce_bwd_cpu`` (``g``: one element, shared, or x.size elements)."""
    _bce_bwd[grid(x.shape[0])](x, t, w, g, float(scale), gx, gt)


@cuda.jit(device=True)
def _softplus_neg(x):
    """log(1 + exp(-x)) without overflow."""
    return log1p(exp(-abs(x))) + max(-x, 0.0)


@cuda.jit
def _bcel_fwd(x, t, w, pw, out, vals):
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        xi = x[k]
        lw = (pw[k] - 1.0) * t[k] + 1.0
        v = w[k] * ((1.0 - t[k]) * xi + lw * _softplus_neg(xi))
        out[k] = v
        vals[k] = v


def bcel_fwd_cuda(x, t, w, pw, out):
    """``bcel_fwd_cpu``; returns the total as a (1,) float64 device array."""
    vals = cuda.device_array(x.shape[0], np.float64)
    _bcel_fwd[grid(x.shape[0])](x, t, w, pw, out, vals)
    return _total(vals)


@cuda.jit
def _bcel_bwd(x, t, w, pw, g, scale, gx, gt):
    shared = g.shape[0] == 1
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        gk = (g[0] if shared else g[k]) * scale * w[k]
        xi = x[k]
        if xi >= 0:
            sig = 1.0 / (1.0 + exp(-xi))
        else:
            e = exp(xi)
            sig = e / (1.0 + e)
        pt = pw[k] * t[k]
        gx[k] = gk * ((pt + 1.0 - t[k]) * sig - pt)
        gt[k] = gk * ((pw[k] - 1.0) * _softplus_neg(xi) - xi)


def bcel_bwd_cuda(x, t, w, pw, g, scale, gx, gt):
    """``bcel_bwd_cpu`` (``g``: one element, shared, or x.size elements)."""
    _bcel_bwd[grid(x.shape[0])](x, t, w, pw, g, float(scale), gx, gt)


@cuda.jit
def _mse_fwd(x, t, out, vals):
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        d = x[k] - t[k]
        v = d * d
        out[k] = v
        vals[k] = v


def mse_fwd_cuda(x, t, out):
    """``mse_fwd_cpu``; returns the total as a (1,) float64 device array."""
    vals = cuda.device_array(x.shape[0], np.float64)
    _mse_fwd[grid(x.shape[0])](x, t, out, vals)
    return _total(vals)


@cuda.jit
def _mse_bwd(x, t, g, scale, gx):
    shared = g.shape[0] == 1
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        gk = (g[0] if shared else g[k]) * scale
        gx[k] = 2.0 * gk * (x[k] - t[k])


def mse_bwd_cuda(x, t, g, scale, gx):
    """``mse_bwd_cpu``: gx = 2 * g * (x - t) * scale."""
    _mse_bwd[grid(x.shape[0])](x, t, g, float(scale), gx)


@cuda.jit
def _smooth_l1_fwd(x, t, beta, huber, out, vals):
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        z = abs(x[k] - t[k])
        if huber:
            v = 0.5 * z * z if z < beta else beta * (z - 0.5 * beta)
        else:
            v = 0.5 * z * z / beta if z < beta else z - 0.5 * beta
        out[k] = v
        vals[k] = v


def smooth_l1_fwd_cuda(x, t, beta, huber, out):
    """``smooth_l1_fwd_cpu``; returns the total as a (1,) float64 device array."""
    vals = cuda.device_array(x.shape[0], np.float64)
    _smooth_l1_fwd[grid(x.shape[0])](x, t, float(beta), bool(huber), out, vals)
    return _total(vals)


@cuda.jit
def _smooth_l1_bwd(x, t, g, beta, huber, scale, gx):
    shared = g.shape[0] == 1
    cap = beta if huber else 1.0
    inv = 1.0 if huber else 1.0 / beta
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        gk = (g[0] if shared else g[k]) * scale
        d = x[k] - t[k]
        if d >= beta:
            gx[k] = cap * gk
        elif d <= -beta:
            gx[k] = -cap * gk
        else:
            gx[k] = d * inv * gk


def smooth_l1_bwd_cuda(x, t, g, beta, huber, scale, gx):
    """``smooth_l1_bwd_cpu`` (NaN stays NaN; the target's gradient is -gx)."""
    _smooth_l1_bwd[grid(x.shape[0])](x, t, g, float(beta), bool(huber), float(scale), gx)
