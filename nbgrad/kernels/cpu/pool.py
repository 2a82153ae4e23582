"""2-D max / average pooling over C-contiguous (planes, H, W) arrays, forward and backward.

Window arithmetic follows PyTorch's CPU kernels (aten/src/ATen/native/cpu/*Pool*), so ceil_mode
windows, count_include_pad divisors, NaN propagation and argmax indices (flat h*W + w within
the plane) match exactly.
"""

import numpy as np
from numba import njit

from .. import JIT


@njit(**JIT)
def maxpool2d_fwd_cpu(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for p in range(P):
        xp = x[p]
        for oy in range(OH):
            hs = oy * sh - ph
            he = min(hs + (kh - 1) * dh + 1, H)
            while hs < 0:
                hs += dh
            for ox in range(OW):
                ws = ox * sw - pw
                we = min(ws + (kw - 1) * dw + 1, W)
                while ws < 0:
                    ws += dw
                best = -np.inf
                bi = hs * W + ws
                for ih in range(hs, he, dh):
                    row = xp[ih]
                    for iw in range(ws, we, dw):
                        v = row[iw]
                        if v > best or v != v:  # NaN wins, like PyTorch
                            best = v
                            bi = ih * W + iw
                out[p, oy, ox] = best
                idx[p, oy, ox] = bi


@njit(**JIT)
def maxpool2d_bwd_cpu(g, idx, gx):
    """gx (planes, H*W) zeroed here; every output's gradient goes to its argmax.  The indices
    are checked: the forward returns them to the user, who can change them before backward."""
    P = g.shape[0]
    n = g.shape[1] * g.shape[2]
    m = gx.shape[1]
    gx[...] = 0
    for p in range(P):
        gp = g[p].reshape(n)
        ip = idx[p].reshape(n)
        dst = gx[p]
        for k in range(n):
            j = ip[k]
            if j < 0 or j >= m:
                raise RuntimeError(
                    "max_pool2d_with_indices_backward(): found an invalid max index (the "
                    "indices were changed after the forward)"
                )
            dst[j] += gp[k]


@njit(**JIT)
def _window(o, s, p, k, n):
    """(start, end, pool size) of one window: PyTorch's avg_pool2d arithmetic."""
    st = o * s - p
    en = min(st + k, n + p)
    size = en - st
    st = max(st, 0)
    en = min(en, n)
    return st, en, size


@njit(**JIT)
def avgpool2d_fwd_cpu(x, out, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for p in range(P):
        xp = x[p]
        for oy in range(OH):
            hs, he, hsize = _window(oy, sh, ph, kh, H)
            for ox in range(OW):
                ws, we, wsize = _window(ox, sw, pw, kw, W)
                if hs >= he or ws >= we:
                    out[p, oy, ox] = 0
                    continue
                acc = 0.0
                for ih in range(hs, he):
                    row = xp[ih]
                    for iw in range(ws, we):
                        acc += row[iw]
                if divisor != 0:
                    d = divisor
                elif count_include_pad:
                    d = hsize * wsize
                else:
                    d = (he - hs) * (we - ws)
                out[p, oy, ox] = acc / d


@njit(**JIT)
def avgpool2d_bwd_cpu(g, gx, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    """The transpose of avgpool2d_fwd_cpu; gx (planes, H, W) zeroed here."""
    P, H, W = gx.shape
    OH, OW = g.shape[1], g.shape[2]
    gx[...] = 0
    for p in range(P):
        gp = gx[p]
        for oy in range(OH):
            hs, he, hsize = _window(oy, sh, ph, kh, H)
            for ox in range(OW):
                ws, we, wsize = _window(ox, sw, pw, kw, W)
                if hs >= he or ws >= we:
                    continue
                if divisor != 0:
                    d = divisor
                elif count_include_pad:
                    d = hsize * wsize
                else:
                    d = (he - hs) * (we - ws)
                v = g[p, oy, ox] / d
                for ih in range(hs, he):
                    row = gp[ih]
                    for iw in range(ws, we):
                        row[iw] += v


@njit(**JIT)
def _adaptive_range(o, n_out, n_in):
    """[start, end) of adaptive window o: floor(o*n/n_out) to ceil((o+1)*n/n_out) (PyTorch's
    start_index / end_index)."""
    return (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out


@njit(**JIT)
def adaptive_avgpool2d_fwd_cpu(x, out):
    """out[p, oy, ox] = mean of x[p] over the adaptive window (sum / kh / kw, as PyTorch)."""
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for p in range(P):
        xp = x[p]
        for oy in range(OH):
            hs, he = _adaptive_range(oy, OH, H)
            for ox in range(OW):
                ws, we = _adaptive_range(ox, OW, W)
                acc = 0.0
                for ih in range(hs, he):
                    row = xp[ih]
                    for iw in range(ws, we):
                        acc += row[iw]
                out[p, oy, ox] = acc / (he - hs) / (we - ws)


@njit(**JIT)
def adaptive_avgpool2d_bwd_cpu(g, gx):
    """The transpose of adaptive_avgpool2d_fwd_cpu; gx (planes, H, W) zeroed here."""
    P, H, W = gx.shape
    OH, OW = g.shape[1], g.shape[2]
    gx[...] = 0
    for p in range(P):
        gp = gx[p]
        for oy in range(OH):
            hs, he = _adaptive_range(oy, OH, H)
            for ox in range(OW):
                ws, we = _adaptive_range(ox, OW, W)
                v = g[p, oy, ox] / (he - hs) / (we - ws)
                for ih in range(hs, he):
                    row = gp[ih]
                    for iw in range(ws, we):
                        row[iw] += v
