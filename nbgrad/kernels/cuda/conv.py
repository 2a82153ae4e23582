"""CUDA twins of kernels/cpu/conv.py: im2col / col2im and the layout passes around the GEMMs.

Same launchers, parameters and in-place outputs as the CPU file, on numba device arrays.
Choices:
- im2col: one thread per column entry (grid-stride), zero for out-of-range taps.
- col2im is a gather, not a scatter: each x element sums the (at most kh*kw) column entries
  that read it, in the CPU kernel's (i, j) order and in x's dtype, so results are deterministic
  (no atomics) and match the CPU's up to its fastmath reassociation.  The ``_valid`` variants
  are the general kernels with stride 1 and no padding (the CPU's whole-row fast path buys
  nothing on a GPU).
- grad_rows: one block per output channel o copies g[:, o, :] to gt[o] and tree-reduces the
  bias gradient in float64 shared memory (the CPU sums each (n, o) row in float64 and rounds
  into gb per n; here the whole sum is float64 and rounded once: same or closer to exact).
- index_add_axis1: the indices may repeat (embedding backward), so a scatter with
  ``cuda.atomic.add`` (summation order, hence last bits, may vary between runs).  Negative
  indices wrap as in the CPU kernel (Numba's indexing).
Flat indexing: arrays are reshaped (views) to 1-D on the host where the CPU kernel does so.
"""

from numba import cuda, float64

from .config import REDUCE_THREADS, grid

__all__ = [
    "im2col_cuda",
    "col2im_cuda",
    "im2col_valid_cuda",
    "col2im_valid_cuda",
    "swap01_bias_cuda",
    "grad_rows_cuda",
    "index_add_axis1_cuda",
]

RT = REDUCE_THREADS  # a power of two, the block size of _grad_rows


def _flat(a):
    return a.reshape(a.size)


@cuda.jit
def _im2col(x, cf, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    kk = kh * kw
    for e in range(cuda.grid(1), C * kk * NL, cuda.gridsize(1)):
        r = e // NL
        col = e - r * NL
        c = r // kk
        ij = r - c * kk
        i = ij // kw
        j = ij - i * kw
        n = col // L
        yz = col - n * L
        y = yz // ow
        z = yz - y * ow
        yy = y * sh - ph + i * dh
        xx = z * sw - pw + j * dw
        if yy >= 0 and yy < H and xx >= 0 and xx < W:
            cf[e] = x[n, c, yy, xx]
        else:
            cf[e] = 0


@cuda.jit
def _col2im(cf, x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    N, C, H, W = x.shape
    L = oh * ow
    NL = N * L
    acc = cuda.local.array(1, x.dtype)  # x's dtype, rounded per add as the CPU's x[...] +=
    for e in range(cuda.grid(1), N * C * H * W, cuda.gridsize(1)):
        xx = e % W
        t = e // W
        yy = t % H
        t //= H
        c = t % C
        n = t // C
        acc[0] = 0
        for i in range(kh):
            ty = yy + ph - i * dh  # = y * sh for the output row y that tap i reads here
            if ty < 0 or ty % sh != 0 or ty // sh >= oh:
                continue
            y = ty // sh
            for j in range(kw):
                tz = xx + pw - j * dw
                if tz < 0 or tz % sw != 0 or tz // sw >= ow:
                    continue
                acc[0] += cf[((c * kh + i) * kw + j) * NL + n * L + y * ow + tz // sw]
        x[n, c, yy, xx] = acc[0]


def im2col_cuda(x, cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """cols[(c*kh + i)*kw + j, n*oh*ow + y*ow + z] = x[n, c, y*sh - ph + i*dh, z*sw - pw + j*dw]
    (zero out of range)."""
    if cols.size:
        _im2col[grid(cols.size)](x, _flat(cols), kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)


def col2im_cuda(cols, x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    """The transpose of im2col: x (overwritten) = the sum of every tap that read it."""
    if x.size:
        _col2im[grid(x.size)](_flat(cols), x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)


def im2col_valid_cuda(x, cols, kh, kw, dh, dw, oh, ow):
    """im2col_cuda for stride 1 and no padding."""
    im2col_cuda(x, cols, kh, kw, 1, 1, 0, 0, dh, dw, oh, ow)


def col2im_valid_cuda(cols, x, kh, kw, dh, dw, oh, ow):
    """col2im_cuda for stride 1 and no padding."""
    col2im_cuda(cols, x, kh, kw, 1, 1, 0, 0, dh, dw, oh, ow)


@cuda.jit
def _swap01_bias(sf, b, df, O, N, L, has_bias):
    for e in range(cuda.grid(1), N * O * L, cuda.gridsize(1)):
        k = e % L
        t = e // L
        o = t % O
        n = t // O
        v = sf[(o * N + n) * L + k]
        if has_bias:
            df[e] = v + b[o]
        else:
            df[e] = v


def swap01_bias_cuda(src, b, dst, has_bias):
    """dst[n, o, :] = src[o, n, :] (+ b[o] when ``has_bias``; b is not read otherwise)."""
    O, N, L = src.shape
    if dst.size:
        _swap01_bias[grid(dst.size)](_flat(src), b, _flat(dst), O, N, L, bool(has_bias))


@cuda.jit
def _grad_rows(gf, tf, gb, O, N, L, want_bias):
    sm = cuda.shared.array(RT, float64)
    tid = cuda.threadIdx.x
    NL = N * L
    for o in range(cuda.blockIdx.x, O, cuda.gridDim.x):  # one block per output channel
        acc = float64(0.0)
        for m in range(tid, NL, cuda.blockDim.x):
            n = m // L
            k = m - n * L
            v = gf[(n * O + o) * L + k]
            tf[o * NL + m] = v
            acc += v
        if want_bias:
            sm[tid] = acc
            cuda.syncthreads()
            s = RT // 2
            while s > 0:
                if tid < s:
                    sm[tid] += sm[tid + s]
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                gb[o] = sm[0]
            cuda.syncthreads()  # sm is reused by the next channel


def grad_rows_cuda(g, gt, gb, want_bias):
    """gt[o, n, :] = g[n, o, :] and, when ``want_bias``, gb[o] = sum of g[:, o, :] (float64)."""
    N, O, L = g.shape
    if O == 0:
        return
    blocks = grid(O * RT, RT)[0]
    _grad_rows[blocks, RT](_flat(g), _flat(gt), gb, O, N, L, bool(want_bias))


@cuda.jit
def _zero(a):
    for e in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[e] = 0


def _zero_all(a):
    """a[...] = 0 (shared by the scatter-add backward kernels)."""
    if a.size:
        _zero[grid(a.size)](_flat(a))


@cuda.jit
def _index_add_axis1(src, idx, out):
    A, K, B = src.shape
    R = out.shape[1]
    for e in range(cuda.grid(1), A * K * B, cuda.gridsize(1)):
        b = e % B
        t = e // B
        k = t % K
        a = t // K
        r = idx[k]
        if r < 0:
            r += R
        cuda.atomic.add(out, (a, r, b), src[a, k, b])


def index_add_axis1_cuda(src, idx, out):
    """out[a, idx[k], b] += src[a, k, b] (out zeroed here)."""
    _zero_all(out)
    if src.size:
        _index_add_axis1[grid(src.size)](src, idx, out)
