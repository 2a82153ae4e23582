"""Convolution lowering: im2col / col2im over C-contiguous (N, C, H, W) arrays.

The GEMMs around them go through numpy/BLAS (NUMBA-NOTES section 4.2).  Padding is given as the
top/left amounts only: the bottom/right padding is implied by the output size, so asymmetric
('same' with an even kernel) padding needs no copy.  Out-of-range taps read as zero.
"""

from numba import njit

from .. import JIT


@njit(**JIT)
def _span(n_out, stride, offset, size):
    """Output positions o in [lo, hi) whose input position o*stride + offset lies in [0, size)."""
    lo = 0
    if offset < 0:
        lo = (-offset + stride - 1) // stride
    hi = 0
    if size - offset > 0:
        hi = (size - offset - 1) // stride + 1
    if hi > n_out:
        hi = n_out
    if lo > hi:
        lo = hi
    return lo, hi


@njit(**JIT)
def im2col_cpu(x, cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """cols[(c*kh + i)*kw + j, n*oh*ow + y*ow + z] = x[n, c, y*sh - ph + i*dh, z*sw - pw + j*dw].

    Image n owns columns [n*oh*ow, (n+1)*oh*ow); ops/nn code runs its GEMMs on strided
    per-image views of this one buffer (NOTE [conv GEMMs] in ops/nn/conv.py)."""
    N, C, H, W = x.shape
    L = oh * ow
    for n in range(N):
        for c in range(C):
            for i in range(kh):
                ylo, yhi = _span(oh, sh, i * dh - ph, H)
                for j in range(kw):
                    row = cols[(c * kh + i) * kw + j, n * L : (n + 1) * L]
                    off = j * dw - pw
                    zlo, zhi = _span(ow, sw, off, W)
                    for y in range(oh):
                        dst = row[y * ow : (y + 1) * ow]
                        if y < ylo or y >= yhi:
                            for z in range(ow):
                                dst[z] = 0
                            continue
                        src = x[n, c, y * sh - ph + i * dh]
                        for z in range(zlo):
                            dst[z] = 0
                        if sw == 1:
                            s = src[zlo + off : zhi + off]
                            d = dst[zlo:zhi]
                            for z in range(zhi - zlo):
                                d[z] = s[z]
                        else:
                            for z in range(zlo, zhi):
                                dst[z] = src[z * sw + off]
                        for z in range(zhi, ow):
                            dst[z] = 0


@njit(**JIT)
def col2im_cpu(cols, x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """The transpose of im2col: x (zeroed here) accumulates every tap that read it."""
    N, C, H, W = x.shape
    L = oh * ow
    x[...] = 0
    for n in range(N):
        for c in range(C):
            for i in range(kh):
                ylo, yhi = _span(oh, sh, i * dh - ph, H)
                for j in range(kw):
                    row = cols[(c * kh + i) * kw + j, n * L : (n + 1) * L]
                    off = j * dw - pw
                    zlo, zhi = _span(ow, sw, off, W)
                    for y in range(ylo, yhi):
                        src = row[y * ow : (y + 1) * ow]
                        dst = x[n, c, y * sh - ph + i * dh]
                        if sw == 1:
                            d = dst[zlo + off : zhi + off]
                            s = src[zlo:zhi]
                            for z in range(zhi - zlo):
                                d[z] += s[z]
                        else:
                            for z in range(zlo, zhi):
                                dst[z * sw + off] += src[z]


@njit(**JIT)
def index_add_axis1_cpu(src, idx, out):
    """out[a, idx[k], b] += src[a, k, b]  (out zeroed here): embedding backward and the
    backward of index-map padding (reflect / replicate / circular)."""
    A, K, B = src.shape
    out[...] = 0
    for a in range(A):
        for k in range(K):
            s = src[a, k]
            d = out[a, idx[k]]
            for b in range(B):
                d[b] += s[b]
