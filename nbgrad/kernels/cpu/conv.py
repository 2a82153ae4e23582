"""Convolution lowering: im2col / col2im over C-contiguous (N, C, H, W) arrays.

The GEMMs around them go through numpy/BLAS (NUMBA-NOTES section 4.2).  Padding is given as the
top/left amounts only: the bottom/right padding is implied by the output size, so asymmetric
('same' with an even kernel) padding needs no copy.  Out-of-range taps read as zero.
"""

import numpy as np
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


# NOTE [flat unsigned indexing]: the copy loops below index flat 1-D views with np.uint64
# offsets.  With int64 offsets Numba adds a negative-index wraparound select to every access,
# which blocks vectorisation (3-4x slower on 11-float rows), and slicing a view per row costs more
# than the row itself when rows are short (11 floats in the CNN benchmark's second conv).  All
# offsets here are non-negative by construction (``_span`` clips them).  Measured in
# docs/performance.md, "CNN step".
U64 = np.uint64


@njit(**JIT)
def im2col_cpu(x, cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """cols[(c*kh + i)*kw + j, n*oh*ow + y*ow + z] = x[n, c, y*sh - ph + i*dh, z*sw - pw + j*dw].

    Image n owns columns [n*oh*ow, (n+1)*oh*ow); ops/nn code runs its GEMMs on strided
    per-image views of this one buffer (NOTE [conv GEMMs] in ops/nn/conv.py)."""
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    xf = x.reshape(N * C * H * W)
    cf = cols.reshape(cols.shape[0] * NL)
    usw = U64(sw)
    uow = U64(ow)
    sstep = U64(sh * W)
    for c in range(C):
        for n in range(N):  # one input plane per (c, n): its kh*kw rows read it from L1
            xb = (n * C + c) * H * W
            for i in range(kh):
                ylo, yhi = _span(oh, sh, i * dh - ph, H)
                for j in range(kw):
                    off = j * dw - pw
                    zlo, zhi = _span(ow, sw, off, W)
                    uzlo, uzhi, m = U64(zlo), U64(zhi), U64(zhi - zlo)
                    db = ((c * kh + i) * kw + j) * NL + n * L
                    for z in range(U64(db), U64(db + ylo * ow)):
                        cf[z] = 0
                    d = U64(db + ylo * ow)
                    s = U64(xb + (ylo * sh - ph + i * dh) * W + off + zlo * sw)  # >= 0
                    if zlo == 0 and zhi == ow and sw == 1:  # whole rows in range
                        for _ in range(ylo, yhi):
                            for z in range(uow):
                                cf[d + z] = xf[s + z]
                            d += uow
                            s += sstep
                    else:
                        for _ in range(ylo, yhi):
                            for z in range(uzlo):
                                cf[d + z] = 0
                            dz = d + uzlo
                            if sw == 1:
                                for z in range(m):
                                    cf[dz + z] = xf[s + z]
                            else:
                                for z in range(m):
                                    cf[dz + z] = xf[s + z * usw]
                            for z in range(uzhi, uow):
                                cf[d + z] = 0
                            d += uow
                            s += sstep
                    for z in range(U64(db + yhi * ow), U64(db + L)):
                        cf[z] = 0


@njit(**JIT)
def col2im_cpu(cols, x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """The transpose of im2col: x (zeroed here) accumulates every tap that read it."""
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    HW = H * W
    xf = x.reshape(N * C * HW)
    cf = cols.reshape(cols.shape[0] * NL)
    usw = U64(sw)
    uow = U64(ow)
    sstep = U64(sh * W)
    for c in range(C):
        for n in range(N):  # one plane of x per (c, n): zeroed, then its taps added in L1
            xb = (n * C + c) * HW
            for z in range(U64(xb), U64(xb + HW)):
                xf[z] = 0
            for i in range(kh):
                ylo, yhi = _span(oh, sh, i * dh - ph, H)
                for j in range(kw):
                    off = j * dw - pw
                    zlo, zhi = _span(ow, sw, off, W)
                    m = U64(zhi - zlo)
                    d = U64(((c * kh + i) * kw + j) * NL + n * L + ylo * ow + zlo)
                    s = U64(xb + (ylo * sh - ph + i * dh) * W + off + zlo * sw)  # >= 0
                    for _ in range(ylo, yhi):
                        if sw == 1:
                            for z in range(m):
                                xf[s + z] += cf[d + z]
                        else:
                            for z in range(m):
                                xf[s + z * usw] += cf[d + z]
                        d += uow
                        s += sstep


@njit(**JIT)
def im2col_valid_cpu(x, cols, kh, kw, dh, dw, oh, ow):
    """im2col_cpu for stride 1 and no padding (every tap in range): whole-row copies only,
    without the window clipping (30% faster on the CNN benchmark's second conv)."""
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    xf = x.reshape(N * C * H * W)
    cf = cols.reshape(cols.shape[0] * NL)
    uow = U64(ow)
    uW = U64(W)
    for c in range(C):
        for n in range(N):
            xb = (n * C + c) * H * W
            for i in range(kh):
                for j in range(kw):
                    d = U64(((c * kh + i) * kw + j) * NL + n * L)
                    s = U64(xb + i * dh * W + j * dw)
                    for _ in range(oh):
                        for z in range(uow):
                            cf[d + z] = xf[s + z]
                        d += uow
                        s += uW


@njit(**JIT)
def col2im_valid_cpu(cols, x, kh, kw, dh, dw, oh, ow):
    """col2im_cpu for stride 1 and no padding (the transpose of im2col_valid_cpu)."""
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    HW = H * W
    xf = x.reshape(N * C * HW)
    cf = cols.reshape(cols.shape[0] * NL)
    uow = U64(ow)
    uW = U64(W)
    for c in range(C):
        for n in range(N):
            xb = (n * C + c) * HW
            for z in range(U64(xb), U64(xb + HW)):
                xf[z] = 0
            for i in range(kh):
                for j in range(kw):
                    d = U64(((c * kh + i) * kw + j) * NL + n * L)
                    s = U64(xb + i * dh * W + j * dw)
                    for _ in range(oh):
                        for z in range(uow):
                            xf[s + z] += cf[d + z]
                        d += uow
                        s += uW


@njit(**JIT)
def swap01_bias_cpu(src, b, dst, has_bias):
    """dst[n, o, :] = src[o, n, :] (+ b[o]): the (O, N, L) result of one batch-wide GEMM
    turned into (N, O, L), the bias added in the same pass."""
    O, N, L = src.shape
    sf = src.reshape(O * N * L)
    df = dst.reshape(N * O * L)
    uL = U64(L)
    for n in range(N):
        for o in range(O):
            s = U64((o * N + n) * L)
            d = U64((n * O + o) * L)
            if has_bias:
                bv = b[o]
                for k in range(uL):
                    df[d + k] = sf[s + k] + bv
            else:
                for k in range(uL):
                    df[d + k] = sf[s + k]


@njit(**JIT)
def grad_rows_cpu(g, gt, gb, want_bias):
    """gt[o, n, :] = g[n, o, :] (the (O, N*L) GEMM operand of the input and weight gradients)
    and, when ``want_bias``, gb[o] = the sum of g[:, o, :] (the bias gradient) in the same
    pass, each row summed in float64."""
    N, O, L = g.shape
    gf = g.reshape(N * O * L)
    tf = gt.reshape(O * N * L)
    uL = U64(L)
    if want_bias:
        for o in range(O):
            gb[o] = 0
    for n in range(N):
        for o in range(O):
            s = U64((n * O + o) * L)
            d = U64((o * N + n) * L)
            if want_bias:
                acc = 0.0
                for k in range(uL):
                    v = gf[s + k]
                    tf[d + k] = v
                    acc += v
                gb[o] += acc
            else:
                for k in range(uL):
                    tf[d + k] = gf[s + k]


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
