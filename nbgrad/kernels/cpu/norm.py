"""Layer norm over the rows of (M, N) and batch norm over the channels of (N, C, L): forward
and fused backward.  Statistics and parameter gradients accumulate in float64 (two-pass
variance), whatever the data dtype."""

import numpy as np
from numba import njit

from .. import JIT

# NOTE [normalisation formula order]: the elementwise parts follow PyTorch's CPU kernels term
# for term (y = (x * rstd + (-mean * rstd)) * w + b, dx = a * dy * w + b * x + c, ...) and are
# compiled without fastmath: ``reassoc`` would let LLVM factor ``x * s - m * s`` into
# ``(x - m) * s`` (the same value for finite numbers, another NaN/Inf pattern when a weight is
# infinite: PyTorch's ``inf - inf`` is NaN where the factored form gives an infinity),
# ``contract`` fuse ``x * s + b`` into an FMA (``x * s - x * s`` is then not exactly 0) and
# ``arcp`` turn a division into a multiplication.  Elementwise loops vectorise without it;
# the reductions keep fastmath (a sum's NaN pattern does not depend on its order).
ORDERED = dict(JIT, fastmath=False)


@njit(**JIT)
def _row_moments(row):
    """Mean and biased variance of a 1-D row, in float64: two passes, the mean corrected by the
    mean of the deviations, so a row of equal values has exactly that mean (PyTorch's Welford
    moments do; 5 x 0.19 summed and divided is 0.19000000000000003, and an infinite weight
    then makes +-inf where PyTorch's exact 0 * inf is NaN)."""
    N = row.shape[0]
    s = 0.0
    for k in range(N):
        s += row[k]
    mu = s / N
    c = 0.0
    v = 0.0
    for k in range(N):
        d = row[k] - mu
        c += d
        v += d * d
    var = (v - c * c / N) / N
    return mu + c / N, var if var > 0.0 else 0.0


@njit(**ORDERED)
def _ln_fwd_row(row, w, b, scale, bias, yr):
    for k in range(row.shape[0]):
        yr[k] = (row[k] * scale + bias) * w[k] + b[k]


@njit(**JIT)
def layer_norm_fwd_cpu(x, w, b, eps, y, mean, rstd):
    """y = (x * rstd - mean * rstd) * w + b per row (PyTorch's LayerNormKernelImpl order);
    mean/rstd (M,) float64 are saved for backward."""
    M, N = x.shape
    for m in range(M):
        mu, var = _row_moments(x[m])
        r = 1.0 / np.sqrt(var + eps)
        mean[m] = mu
        rstd[m] = r
        _ln_fwd_row(x[m], w, b, r, -mu * r, y[m])


@njit(**JIT)
def _ln_row_dots(gr, row, w):
    """PyTorch's ds = sum(dy * x * w) and db = sum(dy * w) of one row, in float64."""
    ds = 0.0
    db = 0.0
    for k in range(row.shape[0]):
        gw = gr[k] * w[k]
        ds += gr[k] * row[k] * w[k]
        db += gw
    return ds, db


@njit(**ORDERED)
def _ln_bwd_row(gr, row, w, a, b, c, out, gw, gb, pb):
    for k in range(row.shape[0]):
        out[k] = a * gr[k] * w[k] + b * row[k] + c
        gw[k] += gr[k] * (a * row[k] + pb)
        gb[k] += gr[k]


@njit(**JIT)
def layer_norm_bwd_cpu(g, x, mean, rstd, w, gx, gw, gb):
    """PyTorch's layer_norm_backward_frame: with ds = sum(g * x * w), db = sum(g * w) per row,
    a = rstd, b = (db * mean - ds) * a^3 / N, c = -b * mean - db * a / N:
    gx = a * g * w + b * x + c; gw += sum_rows g * (a * x - a * mean), gb += sum_rows g
    (gw, gb float64, zeroed here)."""
    M, N = x.shape
    gw[:] = 0.0
    gb[:] = 0.0
    scale = 1.0 / N
    for m in range(M):
        mu = mean[m]
        a = rstd[m]
        ds, db = _ln_row_dots(g[m], x[m], w)
        b = (db * mu - ds) * a * a * a * scale
        c = -b * mu - db * a * scale
        _ln_bwd_row(g[m], x[m], w, a, b, c, gx[m], gw, gb, -a * mu)


@njit(**ORDERED)
def _bn_channel_mean(x, c, s, sequential):
    """PyTorch's mean of channel ``c``: ``s / count`` (a true division), rounded to the input's
    dtype; ``sequential``: ``s`` summed again in PyTorch's loop order first."""
    N, C, L = x.shape
    if sequential:
        s = 0.0
        for n in range(N):
            row = x[n, c]
            for k in range(L):
                s += row[k]
    return x.dtype.type(s / (N * L))


@njit(**JIT)
def batch_norm_stats_cpu(x, mean, var):
    """Per-channel mean and biased variance of (N, C, L) into float64 (C,) arrays, as PyTorch's
    batch_norm_cpu_collect_stats: a float64 sum, the mean rounded to the input's dtype, then
    the sum of squared deviations from it.  The sum is vectorised (PyTorch's is a sequential
    loop), so its last bit may differ; where the deviations are at rounding level (a channel
    of equal values) that bit decides between a normalised 0 and +-tiny, so NaN or +-inf once
    a weight is infinite, and the channel is summed again in PyTorch's order."""
    N, C, L = x.shape
    cnt = N * L
    for c in range(C):
        s = 0.0
        for n in range(N):
            row = x[n, c]
            for k in range(L):
                s += row[k]
        for again in range(2):
            mu = _bn_channel_mean(x, c, s, again == 1)
            v = 0.0
            for n in range(N):
                row = x[n, c]
                for k in range(L):
                    d = row[k] - mu
                    v += d * d
            if v > cnt * (abs(mu) * 1e-15) ** 2:  # not at rounding level: the order is moot
                break
        mean[c] = mu
        var[c] = v / cnt


@njit(**ORDERED)
def batch_norm_fwd_cpu(x, mean, rstd, w, b, y):
    """y = x * alpha + beta, alpha = rstd * w, beta = b - mean * alpha per channel (PyTorch's
    batch_norm_cpu_transform_input order)."""
    N, C, L = x.shape
    for n in range(N):
        for c in range(C):
            sc = rstd[c] * w[c]
            sh = b[c] - mean[c] * sc
            row = x[n, c]
            out = y[n, c]
            for k in range(L):
                out[k] = row[k] * sc + sh


@njit(**ORDERED)
def batch_norm_fwd_generic_cpu(x, mean, rstd, w, b, y):
    """y = ((x - mean) * rstd) * w + b: PyTorch's generic (TensorIterator) path, taken for an
    input that is not contiguous in any memory format."""
    N, C, L = x.shape
    for n in range(N):
        for c in range(C):
            mu = mean[c]
            r = rstd[c]
            wc = w[c]
            bc = b[c]
            row = x[n, c]
            out = y[n, c]
            for k in range(L):
                out[k] = ((row[k] - mu) * r) * wc + bc


@njit(**ORDERED)
def _bn_bwd_train(x, g, mean, k, grad_mean, invstd, w, out):
    for j in range(x.shape[0]):
        dx = (x[j] - mean) * k
        out[j] = (g[j] - grad_mean - dx) * invstd * w


@njit(**ORDERED)
def _bn_bwd_eval(g, invstd, w, out):
    for j in range(g.shape[0]):
        out[j] = g[j] * invstd * w


@njit(**JIT)
def batch_norm_bwd_cpu(g, x, mean, rstd, w, training, gx, gw, gb):
    """PyTorch's batch_norm_cpu_backward_contiguous_impl: per channel sum = sum g and
    dotp = sum (x - mean) * g; training: gx = (g - sum / n - (x - mean) * k) * rstd * w with
    k = dotp * rstd^2 / n; eval: gx = g * rstd * w.  gw = dotp * rstd, gb = sum (float64)."""
    N, C, L = x.shape
    cnt = N * L
    for c in range(C):
        mu = mean[c]
        r = rstd[c]
        sg = 0.0
        dotp = 0.0
        for n in range(N):
            row = x[n, c]
            gr = g[n, c]
            for k in range(L):
                sg += gr[k]
                dotp += (row[k] - mu) * gr[k]
        gw[c] = dotp * r
        gb[c] = sg
        if training:
            kk = dotp * r * r / cnt
            gm = sg / cnt
            for n in range(N):
                _bn_bwd_train(x[n, c], g[n, c], mu, kk, gm, r, w[c], gx[n, c])
        else:
            for n in range(N):
                _bn_bwd_eval(g[n, c], r, w[c], gx[n, c])


@njit(**JIT)
def group_norm_fwd_cpu(x, w, b, eps, y, mean, rstd):
    """Group norm of x (N, G, D, L): C = G*D channels of L elements, each group of D channels
    normalised together; y = (x - mean) * rstd * w[c] + b[c] (w, b: (C,)).  mean/rstd (N, G)
    float64 are saved for backward."""
    N, G, D, L = x.shape
    cnt = D * L
    for n in range(N):
        for gi in range(G):
            xg = x[n, gi]
            s = 0.0
            for d in range(D):
                row = xg[d]
                for k in range(L):
                    s += row[k]
            mu = s / cnt
            v = 0.0
            for d in range(D):
                row = xg[d]
                for k in range(L):
                    e = row[k] - mu
                    v += e * e
            r = 1.0 / np.sqrt(v / cnt + eps)
            mean[n, gi] = mu
            rstd[n, gi] = r
            for d in range(D):
                c = gi * D + d
                sc = r * w[c]
                sh = b[c] - mu * sc
                row = xg[d]
                out = y[n, gi, d]
                for k in range(L):
                    out[k] = row[k] * sc + sh


@njit(**JIT)
def group_norm_bwd_cpu(g, x, mean, rstd, w, gx, gw, gb):
    """gx = rstd * (gxh - mean(gxh) - xhat * mean(gxh * xhat)) per group, gxh = g * w[c];
    gw[c] = sum g * xhat, gb[c] = sum g over the batch and the channel's elements (float64,
    zeroed here)."""
    N, G, D, L = x.shape
    cnt = D * L
    gw[:] = 0.0
    gb[:] = 0.0
    for n in range(N):
        for gi in range(G):
            mu = mean[n, gi]
            r = rstd[n, gi]
            a = 0.0
            cc = 0.0
            for d in range(D):
                c = gi * D + d
                row = x[n, gi, d]
                gr = g[n, gi, d]
                ds = 0.0
                db = 0.0
                for k in range(L):
                    ds += gr[k] * row[k]
                    db += gr[k]
                dxh = (ds - db * mu) * r  # sum g * xhat over the channel's elements
                gw[c] += dxh
                gb[c] += db
                a += w[c] * db
                cc += w[c] * dxh
            a /= cnt
            cc /= cnt
            for d in range(D):
                c = gi * D + d
                wc = w[c]
                row = x[n, gi, d]
                gr = g[n, gi, d]
                out = gx[n, gi, d]
                for k in range(L):
                    out[k] = r * (gr[k] * wc - a - (row[k] - mu) * r * cc)
