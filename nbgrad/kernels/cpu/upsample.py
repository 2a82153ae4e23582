"""Upsampling (F.interpolate) over C-contiguous (planes, *spatial) arrays, forward and backward.

The index maps and weights come from ops/nn/upsample.py (one array per spatial axis, computed
with PyTorch's arithmetic); these loops only gather and scatter.  Nearest works on
(planes, D, H, W) with D = 1 / H = 1 for 1-D and 2-D; linear on (planes, H, W) with H = 1 for
1-D.  Linear output is ``l0 * a + l1 * b`` even where a weight is 0, as in PyTorch (an Inf
neighbour then gives NaN there too).
"""

from numba import njit

from .. import JIT


@njit(**JIT)
def upsample_nearest_fwd_cpu(x, i0, i1, i2, out):
    """out[p, a, b, c] = x[p, i0[a], i1[b], i2[c]]."""
    P = out.shape[0]
    A, B, C = out.shape[1], out.shape[2], out.shape[3]
    for p in range(P):
        for a in range(A):
            xa = x[p, i0[a]]
            for b in range(B):
                src = xa[i1[b]]
                dst = out[p, a, b]
                for c in range(C):
                    dst[c] = src[i2[c]]


@njit(**JIT)
def upsample_nearest_bwd_cpu(g, i0, i1, i2, gx):
    """The transpose: gx (zeroed here) accumulates g at the positions the forward read."""
    P = g.shape[0]
    A, B, C = g.shape[1], g.shape[2], g.shape[3]
    gx[...] = 0
    for p in range(P):
        for a in range(A):
            ga = gx[p, i0[a]]
            for b in range(B):
                dst = ga[i1[b]]
                src = g[p, a, b]
                for c in range(C):
                    dst[i2[c]] += src[c]


@njit(**JIT)
def upsample_linear_fwd_cpu(x, h0, h1, hl0, hl1, w0, w1, wl0, wl1, out, two_d):
    """Bilinear (``two_d``) or linear (H = 1) interpolation: out = hl0 * (wl0 * x[h0, w0] +
    wl1 * x[h0, w1]) + hl1 * (...x[h1, .]), per axis index pairs and weights."""
    P, OH, OW = out.shape
    for p in range(P):
        xp = x[p]
        for oy in range(OH):
            dst = out[p, oy]
            if two_d:
                r0 = xp[h0[oy]]
                r1 = xp[h1[oy]]
                a0 = hl0[oy]
                a1 = hl1[oy]
                for ox in range(OW):
                    j0 = w0[ox]
                    j1 = w1[ox]
                    t0 = r0[j0] * wl0[ox] + r0[j1] * wl1[ox]
                    t1 = r1[j0] * wl0[ox] + r1[j1] * wl1[ox]
                    dst[ox] = t0 * a0 + t1 * a1
            else:
                r0 = xp[0]
                for ox in range(OW):
                    dst[ox] = r0[w0[ox]] * wl0[ox] + r0[w1[ox]] * wl1[ox]


@njit(**JIT)
def upsample_linear_bwd_cpu(g, h0, h1, hl0, hl1, w0, w1, wl0, wl1, gx, two_d):
    """The transpose of upsample_linear_fwd_cpu; gx (planes, H, W) zeroed here."""
    P, OH, OW = g.shape
    gx[...] = 0
    for p in range(P):
        gp = gx[p]
        for oy in range(OH):
            src = g[p, oy]
            if two_d:
                r0 = gp[h0[oy]]
                r1 = gp[h1[oy]]
                a0 = hl0[oy]
                a1 = hl1[oy]
                for ox in range(OW):
                    v = src[ox]
                    j0 = w0[ox]
                    j1 = w1[ox]
                    r0[j0] += a0 * wl0[ox] * v
                    r0[j1] += a0 * wl1[ox] * v
                    r1[j0] += a1 * wl0[ox] * v
                    r1[j1] += a1 * wl1[ox] * v
            else:
                r0 = gp[0]
                for ox in range(OW):
                    v = src[ox]
                    r0[w0[ox]] += wl0[ox] * v
                    r0[w1[ox]] += wl1[ox] * v
