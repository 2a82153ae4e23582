"""CUDA twins of kernels/cpu/norm.py: layer norm over the rows of (M, N), batch norm over the
channels of (N, C, L), group norm over the groups of (N, G, D, L); forward and backward, same
launchers and arguments, outputs written in place.

Mapping: one block per normalised set (a layer-norm row, a batch-norm channel, a group of one
sample) whose threads stride over its elements, meet in float64 shared-memory trees
(reduce._bsum) for the statistics, then write the normalised elements.  Parameter gradients
summed over rows (layer norm) or samples (group norm) are a second launch with one thread per
parameter adding the per-row terms in the CPU twin's order (no atomics: deterministic, and the
same float64 sum as the CPU's).  Batch norm's channel block owns its parameter gradients.

NOTE [normalisation formula order] (cpu/norm.py) holds here too: the elementwise formulas are
the CPU twin's term for term, and products that feed an addition go through ``_mul``, which on
a GPU is libdevice's ``dmul_rn``: NVVM contracts ``a * b + c`` into an FMA by default (numba's
``fastmath=False`` does not turn that off), and ``x * s - m * s`` must stay exactly 0 where
x == m (an infinite weight then gives PyTorch's NaN, not +-inf).  The statistics use plain
arithmetic (a sum's NaN pattern does not depend on rounding).

Divisions by an empty count are selected to the values the CPU twin's numpy error model gives
(the simulator would raise ZeroDivisionError), and accumulators start as ``float64(0.0)``:
under the simulator a Python float is NumPy 2's "weak" scalar and float32 + 0.0 stays float32.
"""

import functools
import math

import numba
import numpy as np
from numba import cuda, float64

from .config import SIM, grid
from .reduce import RT, _bsum

__all__ = [
    "layer_norm_fwd_cuda",
    "layer_norm_bwd_cuda",
    "batch_norm_stats_cuda",
    "batch_norm_fwd_cuda",
    "batch_norm_fwd_generic_cuda",
    "batch_norm_bwd_cuda",
    "group_norm_fwd_cuda",
    "group_norm_bwd_cuda",
]

if SIM:

    @cuda.jit(device=True)
    def _mul(a, b):
        return float64(a) * float64(b)

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def _mul(a, b):
        """a * b rounded on its own: never contracted into an FMA with a following add."""
        return libdevice.dmul_rn(float64(a), float64(b))


@cuda.jit(device=True)
def _rsqrt(v):
    """1 / sqrt(v) for v >= 0 or NaN; 1 / sqrt(0) = inf as in the CPU twin."""
    return float64(math.inf) if v == 0.0 else float64(1.0) / math.sqrt(v)


# ---- layer norm ----


@cuda.jit
def _ln_fwd(x, w, b, eps, y, mean, rstd):
    sm = cuda.shared.array(RT, float64)
    M, N = x.shape
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for m in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        # _row_moments: two passes, the mean corrected by the mean of the deviations
        acc = float64(0.0)
        for k in range(tid, N, nt):
            acc += x[m, k]
        s = _bsum(sm, acc)
        mu = s / N if N > 0 else float64(math.nan)
        acc = float64(0.0)
        acc2 = float64(0.0)
        for k in range(tid, N, nt):
            d = x[m, k] - mu
            acc += d
            acc2 += d * d
        c = _bsum(sm, acc)
        v = _bsum(sm, acc2)
        if N > 0:
            var = (v - c * c / N) / N
            mu = mu + c / N
        else:
            var = float64(math.nan)  # mean stays NaN
        if not var > 0.0:  # NaN too, as the CPU twin's clamp
            var = 0.0
        r = _rsqrt(var + eps)
        if tid == 0:
            mean[m] = mu
            rstd[m] = r
        bias = -mu * r
        for k in range(tid, N, nt):
            y[m, k] = _mul(_mul(x[m, k], r) + bias, w[k]) + b[k]


def layer_norm_fwd_cuda(x, w, b, eps, y, mean, rstd):
    """y = (x * rstd - mean * rstd) * w + b per row (PyTorch's LayerNormKernelImpl order);
    mean/rstd (M,) float64 are saved for backward."""
    M, N = x.shape
    if M:
        _ln_fwd[grid(M * RT, RT)](x, w, b, eps, y, mean, rstd)


@cuda.jit
def _ln_bwd_rows(g, x, mean, rstd, w, gx):
    sm = cuda.shared.array(RT, float64)
    M, N = x.shape
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    scale = float64(1.0) / N  # launched with N > 0
    for m in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        mu = mean[m]
        a = rstd[m]
        acc = float64(0.0)
        acc2 = float64(0.0)
        for k in range(tid, N, nt):
            acc += g[m, k] * x[m, k] * w[k]  # ds, in the data's dtype then float64
            acc2 += g[m, k] * w[k]  # db
        ds = _bsum(sm, acc)
        db = _bsum(sm, acc2)
        bb = (_mul(db, mu) - ds) * a * a * a * scale
        cc = -_mul(bb, mu) - db * a * scale
        for k in range(tid, N, nt):
            gx[m, k] = _mul(_mul(a, g[m, k]), w[k]) + _mul(bb, x[m, k]) + cc


@cuda.jit
def _ln_bwd_params(g, x, mean, rstd, gw, gb):
    M, N = x.shape
    for k in range(cuda.grid(1), N, cuda.gridsize(1)):
        sw = float64(0.0)
        sb = float64(0.0)
        for m in range(M):
            a = rstd[m]
            sw += _mul(g[m, k], _mul(a, x[m, k]) + -a * mean[m])
            sb += g[m, k]
        gw[k] = sw
        gb[k] = sb


def layer_norm_bwd_cuda(g, x, mean, rstd, w, gx, gw, gb):
    """PyTorch's layer_norm_backward_frame (see the CPU twin): gx per row; gw = sum_rows
    g * (rstd * x - rstd * mean), gb = sum_rows g (float64, written whole)."""
    M, N = x.shape
    if N == 0:
        return
    if M:
        _ln_bwd_rows[grid(M * RT, RT)](g, x, mean, rstd, w, gx)
    _ln_bwd_params[grid(N)](g, x, mean, rstd, gw, gb)


# ---- batch norm ----


@functools.lru_cache(maxsize=None)
def _bn_stats_kernel(dtype):
    """batch_norm_stats for one data dtype: the mean is rounded to it (a cast needs the type)."""
    T = numba.from_dtype(dtype)

    @cuda.jit
    def stats(x, mean, var):
        sm = cuda.shared.array(RT, float64)
        ss = cuda.shared.array(1, float64)
        N, C, L = x.shape
        cnt = N * L
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            acc = float64(0.0)
            for j in range(tid, cnt, nt):
                acc += x[j // L, c, j % L]
            s = _bsum(sm, acc)
            v = float64(0.0)
            mu = T(0)
            for again in range(2):
                if again == 1:  # at rounding level: PyTorch's sequential sum decides
                    if tid == 0:
                        seq = float64(0.0)
                        for n in range(N):
                            for k in range(L):
                                seq += x[n, c, k]
                        ss[0] = seq
                    cuda.syncthreads()
                    s = ss[0]
                mu = T(s / cnt)
                acc = float64(0.0)
                for j in range(tid, cnt, nt):
                    d = x[j // L, c, j % L] - mu  # in the data's dtype
                    acc += d * d
                v = _bsum(sm, acc)
                if v > cnt * (float64(abs(mu)) * 1e-15) ** 2:  # the order is moot: uniform
                    break
            if tid == 0:
                mean[c] = mu
                var[c] = v / cnt

    return stats


def batch_norm_stats_cuda(x, mean, var):
    """Per-channel mean and biased variance of (N, C, L) into float64 (C,) arrays, as PyTorch's
    batch_norm_cpu_collect_stats (see the CPU twin, whose rounding-level re-sum in PyTorch's
    order is kept).  An empty channel (N * L == 0) gives NaN and NaN, as the CPU twin."""
    N, C, L = x.shape
    if C == 0:
        return
    if N * L == 0:
        _fill2[grid(C)](mean, var, math.nan)
        return
    _bn_stats_kernel(x.dtype)[grid(C * RT, RT)](x, mean, var)


@cuda.jit
def _fill2(a, b, v):
    for j in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[j] = v
        b[j] = v


@cuda.jit
def _bn_fwd(x, mean, rstd, w, b, y, generic):
    N, C, L = x.shape
    for j in range(cuda.grid(1), N * C * L, cuda.gridsize(1)):
        k = j % L
        c = (j // L) % C
        n = j // (L * C)
        if generic:  # ((x - mean) * rstd) * w + b: PyTorch's TensorIterator path
            y[n, c, k] = _mul(_mul(x[n, c, k] - mean[c], rstd[c]), w[c]) + b[c]
        else:  # x * alpha + beta, alpha = rstd * w, beta = b - mean * alpha
            sc = _mul(rstd[c], w[c])
            sh = b[c] - _mul(mean[c], sc)
            y[n, c, k] = _mul(x[n, c, k], sc) + sh


def batch_norm_fwd_cuda(x, mean, rstd, w, b, y):
    """y = x * alpha + beta, alpha = rstd * w, beta = b - mean * alpha per channel (PyTorch's
    batch_norm_cpu_transform_input order)."""
    if x.size:
        _bn_fwd[grid(x.size)](x, mean, rstd, w, b, y, False)


def batch_norm_fwd_generic_cuda(x, mean, rstd, w, b, y):
    """y = ((x - mean) * rstd) * w + b: PyTorch's generic (TensorIterator) path, taken for an
    input that is not contiguous in any memory format."""
    if x.size:
        _bn_fwd[grid(x.size)](x, mean, rstd, w, b, y, True)


@cuda.jit
def _bn_bwd(g, x, mean, rstd, w, training, gx, gw, gb):
    sm = cuda.shared.array(RT, float64)
    N, C, L = x.shape
    cnt = N * L
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
        mu = mean[c]
        r = rstd[c]
        acc = float64(0.0)
        acc2 = float64(0.0)
        for j in range(tid, cnt, nt):
            n = j // L
            k = j - n * L
            acc += g[n, c, k]
            acc2 += (x[n, c, k] - mu) * g[n, c, k]
        sg = _bsum(sm, acc)
        dotp = _bsum(sm, acc2)
        if tid == 0:
            gw[c] = dotp * r
            gb[c] = sg
        kk = float64(0.0)
        gm = float64(0.0)
        if cnt > 0:
            kk = dotp * r * r / cnt
            gm = sg / cnt
        for j in range(tid, cnt, nt):
            n = j // L
            k = j - n * L
            if training:
                dx = _mul(x[n, c, k] - mu, kk)
                gx[n, c, k] = (g[n, c, k] - gm - dx) * r * w[c]
            else:
                gx[n, c, k] = g[n, c, k] * r * w[c]


def batch_norm_bwd_cuda(g, x, mean, rstd, w, training, gx, gw, gb):
    """PyTorch's batch_norm_cpu_backward_contiguous_impl (see the CPU twin): one block per
    channel reduces sum g and sum (x - mean) * g, then writes the channel's gx, gw and gb."""
    N, C, L = x.shape
    if C:
        _bn_bwd[grid(C * RT, RT)](g, x, mean, rstd, w, training, gx, gw, gb)


# ---- group norm ----


@cuda.jit
def _gn_fwd(x, w, b, eps, y, mean, rstd):
    sm = cuda.shared.array(RT, float64)
    N, G, D, L = x.shape
    cnt = D * L
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(cuda.blockIdx.x, N * G, cuda.gridDim.x):
        n = j // G
        gi = j - n * G
        acc = float64(0.0)
        for e in range(tid, cnt, nt):
            acc += x[n, gi, e // L, e % L]
        s = _bsum(sm, acc)
        mu = s / cnt if cnt > 0 else float64(math.nan)
        acc = float64(0.0)
        for e in range(tid, cnt, nt):
            dv = x[n, gi, e // L, e % L] - mu
            acc += dv * dv
        v = _bsum(sm, acc)
        r = _rsqrt(v / cnt + eps) if cnt > 0 else float64(math.nan)
        if tid == 0:
            mean[n, gi] = mu
            rstd[n, gi] = r
        for e in range(tid, cnt, nt):
            d = e // L
            k = e - d * L
            c = gi * D + d
            sc = _mul(r, w[c])
            sh = b[c] - _mul(mu, sc)
            y[n, gi, d, k] = _mul(x[n, gi, d, k], sc) + sh


def group_norm_fwd_cuda(x, w, b, eps, y, mean, rstd):
    """Group norm of x (N, G, D, L): C = G*D channels of L elements, each group of D channels
    normalised together; y = (x - mean) * rstd * w[c] + b[c] (w, b: (C,)).  mean/rstd (N, G)
    float64 are saved for backward."""
    N, G, D, L = x.shape
    if N * G:
        _gn_fwd[grid(N * G * RT, RT)](x, w, b, eps, y, mean, rstd)


@cuda.jit
def _gn_bwd_groups(g, x, mean, rstd, w, gx, dxh_nc, db_nc):
    sm = cuda.shared.array(RT, float64)
    N, G, D, L = x.shape
    cnt = D * L
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(cuda.blockIdx.x, N * G, cuda.gridDim.x):
        n = j // G
        gi = j - n * G
        mu = mean[n, gi]
        r = rstd[n, gi]
        a = float64(0.0)
        cc = float64(0.0)
        for d in range(D):
            c = gi * D + d
            acc = float64(0.0)
            acc2 = float64(0.0)
            for k in range(tid, L, nt):
                acc += g[n, gi, d, k] * x[n, gi, d, k]
                acc2 += g[n, gi, d, k]
            ds = _bsum(sm, acc)
            db = _bsum(sm, acc2)
            dxh = (ds - _mul(db, mu)) * r  # sum g * xhat over the channel's elements
            if tid == 0:
                dxh_nc[n, c] = dxh
                db_nc[n, c] = db
            a += _mul(w[c], db)
            cc += _mul(w[c], dxh)
        if cnt > 0:
            a /= cnt
            cc /= cnt
        for e in range(tid, cnt, nt):
            d = e // L
            k = e - d * L
            wc = w[gi * D + d]
            gr = g[n, gi, d, k]  # gr * wc: in the data dtype, as the CPU twin
            t = gr * wc - a - _mul(_mul(x[n, gi, d, k] - mu, r), cc)
            gx[n, gi, d, k] = r * t


@cuda.jit
def _gn_bwd_params(dxh_nc, db_nc, gw, gb):
    N, C = dxh_nc.shape
    for c in range(cuda.grid(1), C, cuda.gridsize(1)):
        sw = float64(0.0)
        sb = float64(0.0)
        for n in range(N):  # the CPU twin's order
            sw += dxh_nc[n, c]
            sb += db_nc[n, c]
        gw[c] = sw
        gb[c] = sb


def group_norm_bwd_cuda(g, x, mean, rstd, w, gx, gw, gb):
    """gx = rstd * (gxh - mean(gxh) - xhat * mean(gxh * xhat)) per group, gxh = g * w[c];
    gw[c] = sum g * xhat, gb[c] = sum g over the batch and the channel's elements (float64,
    written whole).  Per-(sample, channel) terms go through an (N, C) float64 scratch so that
    gw/gb sum them over the batch in order (one thread per channel, no atomics)."""
    N, G, D, L = x.shape
    C = G * D
    if C == 0:
        return
    dxh_nc = cuda.device_array((N, C), np.float64)
    db_nc = cuda.device_array((N, C), np.float64)
    if N:
        _gn_bwd_groups[grid(N * G * RT, RT)](g, x, mean, rstd, w, gx, dxh_nc, db_nc)
    _gn_bwd_params[grid(C)](dxh_nc, db_nc, gw, gb)
