"""Layer norm over the rows of (M, N) and batch norm over the channels of (N, C, L): forward
and fused backward.  Statistics and parameter gradients accumulate in float64 (two-pass
variance), whatever the data dtype."""

import numpy as np
from numba import njit

from .. import JIT


@njit(**JIT)
def layer_norm_fwd_cpu(x, w, b, eps, y, mean, rstd):
    """y = (x - mean) * rstd * w + b per row; mean/rstd (M,) float64 are saved for backward."""
    M, N = x.shape
    for m in range(M):
        row = x[m]
        s = 0.0
        for k in range(N):
            s += row[k]
        mu = s / N
        v = 0.0
        for k in range(N):
            d = row[k] - mu
            v += d * d
        r = 1.0 / np.sqrt(v / N + eps)
        mean[m] = mu
        rstd[m] = r
        yr = y[m]
        for k in range(N):
            yr[k] = (row[k] - mu) * r * w[k] + b[k]


@njit(**JIT)
def layer_norm_bwd_cpu(g, x, mean, rstd, w, gx, gw, gb):
    """gx = rstd * (gxh - mean(gxh) - xhat * mean(gxh * xhat)), gxh = g * w;
    gw += sum_rows g * xhat, gb += sum_rows g (gw, gb float64, zeroed here)."""
    M, N = x.shape
    gw[:] = 0.0
    gb[:] = 0.0
    for m in range(M):
        row = x[m]
        gr = g[m]
        mu = mean[m]
        r = rstd[m]
        a = 0.0
        c = 0.0
        for k in range(N):
            xh = (row[k] - mu) * r
            gxh = gr[k] * w[k]
            a += gxh
            c += gxh * xh
            gw[k] += gr[k] * xh
            gb[k] += gr[k]
        a /= N
        c /= N
        out = gx[m]
        for k in range(N):
            xh = (row[k] - mu) * r
            out[k] = r * (gr[k] * w[k] - a - xh * c)


@njit(**JIT)
def batch_norm_stats_cpu(x, mean, var):
    """Per-channel mean and biased variance of (N, C, L) into float64 (C,) arrays."""
    N, C, L = x.shape
    cnt = N * L
    for c in range(C):
        s = 0.0
        for n in range(N):
            row = x[n, c]
            for k in range(L):
                s += row[k]
        mu = s / cnt
        v = 0.0
        for n in range(N):
            row = x[n, c]
            for k in range(L):
                d = row[k] - mu
                v += d * d
        mean[c] = mu
        var[c] = v / cnt


@njit(**JIT)
def batch_norm_fwd_cpu(x, mean, rstd, w, b, y):
    N, C, L = x.shape
    for n in range(N):
        for c in range(C):
            sc = rstd[c] * w[c]
            sh = b[c] - mean[c] * sc
            row = x[n, c]
            out = y[n, c]
            for k in range(L):
                out[k] = row[k] * sc + sh


@njit(**JIT)
def batch_norm_bwd_cpu(g, x, mean, rstd, w, training, gx, gw, gb):
    """training: gx = w*rstd*(g - mean(g) - xhat*mean(g*xhat)); eval: gx = w*rstd*g.
    gw = sum g*xhat, gb = sum g per channel (float64)."""
    N, C, L = x.shape
    cnt = N * L
    for c in range(C):
        mu = mean[c]
        r = rstd[c]
        sg = 0.0
        sgx = 0.0
        for n in range(N):
            row = x[n, c]
            gr = g[n, c]
            for k in range(L):
                sg += gr[k]
                sgx += gr[k] * (row[k] - mu) * r
        gw[c] = sgx
        gb[c] = sg
        sc = w[c] * r
        a = sg / cnt if training else 0.0
        b = sgx / cnt if training else 0.0
        for n in range(N):
            row = x[n, c]
            gr = g[n, c]
            out = gx[n, c]
            for k in range(L):
                out[k] = sc * (gr[k] - a - (row[k] - mu) * r * b)


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
