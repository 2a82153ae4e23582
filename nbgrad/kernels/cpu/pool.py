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


# NOTE [max pool fast path]: the common ``max_pool2d(x, 2)`` (2x2 windows, stride 2, no padding,
# dilation 1, every window inside the plane).  The generic kernel's per-output compare chain is
# scalar and data-dependent: LLVM turns its float selects back into branches, which random data
# mispredicts (5.4 ms for 64x16x26x26 float32; all-zero input 2.5 ms), and the vectoriser skips
# inner loops shorter than ~20 outputs.  Here a block of planes is first copied into four "tap"
# arrays (one per window position, plain strided copies), then one flat loop over the block's
# outputs picks the winner with selects; that loop vectorises (0.42 ms for the same input,
# docs/performance.md "CNN step").  The compare order is the generic kernel's (row-major,
# ``v > best or v != v``), so values, indices, ties and NaNs (the last NaN wins) are identical.


@njit(**JIT)
def maxpool2x2_fwd_cpu(x, out, idx):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    n = OH * OW
    nb = min(P, max(1, 512 // max(n, 1)))  # planes per block: >= 512 outputs when small
    m = nb * n
    A = np.empty(m, x.dtype)
    B = np.empty(m, x.dtype)
    C = np.empty(m, x.dtype)
    D = np.empty(m, x.dtype)
    off = np.empty(m, np.int64)  # flat in-plane index of each output's top-left tap
    for b in range(nb):
        for oy in range(OH):
            for ox in range(OW):
                off[b * n + oy * OW + ox] = 2 * oy * W + 2 * ox
    of = out.reshape(P * n)
    jf = idx.reshape(P * n)
    for p0 in range(0, P, nb):
        p1 = min(P, p0 + nb)
        for p in range(p0, p1):
            xp = x[p]
            for oy in range(OH):
                r0 = xp[2 * oy]
                r1 = xp[2 * oy + 1]
                k0 = (p - p0) * n + oy * OW
                for ox in range(OW):
                    A[k0 + ox] = r0[2 * ox]
                    B[k0 + ox] = r0[2 * ox + 1]
                    C[k0 + ox] = r1[2 * ox]
                    D[k0 + ox] = r1[2 * ox + 1]
        o = of[p0 * n : p1 * n]
        ii = jf[p0 * n : p1 * n]
        for k in range((p1 - p0) * n):
            best = A[k]
            q = 0
            v = B[k]
            t = (v > best) | (v != v)
            best = v if t else best
            q = 1 if t else q
            v = C[k]
            t = (v > best) | (v != v)
            best = v if t else best
            q = W if t else q
            v = D[k]
            t = (v > best) | (v != v)
            best = v if t else best
            q = W + 1 if t else q
            o[k] = best
            ii[k] = off[k] + q
