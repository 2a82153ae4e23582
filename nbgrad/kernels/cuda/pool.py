"""CUDA twins of kernels/cpu/pool.py: 2-D max / average / adaptive-average pooling over
C-contiguous (planes, H, W) device arrays, forward and backward.

Same launchers, parameters and in-place outputs as the CPU file.  Choices:
- Forwards: one thread per output (grid-stride), each running the CPU kernel's window loop
  verbatim (same compare order, float64 accumulation): max values and argmax indices are
  bitwise the CPU's, NaN winning included; averages match up to the CPU's fastmath
  (reassoc/arcp) rounding.  Scalars are cast to float64 explicitly where Numba's typing
  promotes (float32 / int is float64) but the simulator's NumPy scalars would not.
- Average backwards are gathers: each input element sums the outputs whose window holds it, in
  the CPU's (oy, ox) order and rounded into its dtype per add, as the CPU's ``row[iw] += v``;
  deterministic.  The candidate output range is computed with a margin of
  one and every candidate is checked against its window, so it never misses one.
- Max backward scatters with ``cuda.atomic.add``: outputs name their argmax, which may be any
  position (the user can edit the indices), so there is no cheap inverse map.  Overlapping
  windows can then add in a different order than the CPU (last bits).  The indices are checked
  first by a small kernel whose one-element flag is the only device->host copy; a bad index
  raises the CPU kernel's RuntimeError before anything is written.
"""

import math

import numpy as np
from numba import cuda, float64

from .config import grid

__all__ = [
    "maxpool2d_fwd_cuda",
    "maxpool2d_bwd_cuda",
    "avgpool2d_fwd_cuda",
    "avgpool2d_bwd_cuda",
    "adaptive_avgpool2d_fwd_cuda",
    "adaptive_avgpool2d_bwd_cuda",
    "maxpool2x2_fwd_cuda",
]

_BAD_INDEX = (
    "max_pool2d_with_indices_backward(): found an invalid max index (the "
    "indices were changed after the forward)"
)


def _flat(a):
    return a.reshape(a.size)


@cuda.jit
def _zero(a):
    for e in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[e] = 0


@cuda.jit
def _maxpool_fwd(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        hs = oy * sh - ph
        he = min(hs + (kh - 1) * dh + 1, H)
        while hs < 0:
            hs += dh
        ws = ox * sw - pw
        we = min(ws + (kw - 1) * dw + 1, W)
        while ws < 0:
            ws += dw
        best = -math.inf
        bi = hs * W + ws
        for ih in range(hs, he, dh):
            for iw in range(ws, we, dw):
                v = x[p, ih, iw]
                if v > best or v != v:  # NaN wins, like PyTorch
                    best = v
                    bi = ih * W + iw
        out[p, oy, ox] = best
        idx[p, oy, ox] = bi


def maxpool2d_fwd_cuda(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):
    if out.size:
        _maxpool_fwd[grid(out.size)](x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw)


@cuda.jit
def _check_index(jf, m, bad):
    for e in range(cuda.grid(1), jf.shape[0], cuda.gridsize(1)):
        j = jf[e]
        if j < 0 or j >= m:
            bad[0] = 1  # every writer writes 1: the race is benign


@cuda.jit
def _maxpool_bwd(gf, jf, gx, n):
    for e in range(cuda.grid(1), gf.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(gx, (e // n, jf[e]), gf[e])


def maxpool2d_bwd_cuda(g, idx, gx):
    """gx (planes, H*W) zeroed here; every output's gradient goes to its argmax.  The indices
    are checked (RuntimeError) before anything is written."""
    n = g.shape[1] * g.shape[2]
    m = gx.shape[1]
    if idx.size:
        bad = cuda.to_device(np.zeros(1, np.int32))
        _check_index[grid(idx.size)](_flat(idx), m, bad)
        if bad.copy_to_host()[0]:
            raise RuntimeError(_BAD_INDEX)
    if gx.size:
        _zero[grid(gx.size)](_flat(gx))
    if g.size:
        _maxpool_bwd[grid(g.size)](_flat(g), _flat(idx), gx, n)


@cuda.jit(device=True)
def _window(o, s, p, k, n):
    """(start, end, pool size) of one window: PyTorch's avg_pool2d arithmetic."""
    st = o * s - p
    en = min(st + k, n + p)
    size = en - st
    st = max(st, 0)
    en = min(en, n)
    return st, en, size


@cuda.jit
def _avgpool_fwd(x, out, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        hs, he, hsize = _window(oy, sh, ph, kh, H)
        ws, we, wsize = _window(ox, sw, pw, kw, W)
        if hs >= he or ws >= we:
            out[p, oy, ox] = 0
            continue
        acc = float64(0.0)  # a float64 sum as the CPU's (the simulator needs it spelt out)
        for ih in range(hs, he):
            for iw in range(ws, we):
                acc += x[p, ih, iw]
        if divisor != 0:
            d = divisor
        elif count_include_pad:
            d = hsize * wsize
        else:
            d = (he - hs) * (we - ws)
        out[p, oy, ox] = acc / d


def avgpool2d_fwd_cuda(x, out, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    if out.size:
        _avgpool_fwd[grid(out.size)](
            x, out, kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor
        )


@cuda.jit
def _avgpool_bwd(g, gx, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    P, H, W = gx.shape
    OH, OW = g.shape[1], g.shape[2]
    acc = cuda.local.array(1, gx.dtype)  # gx's dtype, rounded per add as the CPU's +=
    for e in range(cuda.grid(1), P * H * W, cuda.gridsize(1)):
        iw = e % W
        t = e // W
        ih = t % H
        p = t // H
        acc[0] = 0
        # windows holding ih: oy*sh - ph <= ih < oy*sh - ph + kh (lower bound one early)
        oy0 = max((ih + ph - kh) // sh, 0)
        oy1 = min((ih + ph) // sh, OH - 1)
        ox0 = max((iw + pw - kw) // sw, 0)
        ox1 = min((iw + pw) // sw, OW - 1)
        for oy in range(oy0, oy1 + 1):
            hs, he, hsize = _window(oy, sh, ph, kh, H)
            if ih < hs or ih >= he:
                continue
            for ox in range(ox0, ox1 + 1):
                ws, we, wsize = _window(ox, sw, pw, kw, W)
                if iw < ws or iw >= we:
                    continue
                if divisor != 0:
                    d = divisor
                elif count_include_pad:
                    d = hsize * wsize
                else:
                    d = (he - hs) * (we - ws)
                acc[0] += float64(g[p, oy, ox]) / d  # float64, as Numba types g / int
        gx[p, ih, iw] = acc[0]


def avgpool2d_bwd_cuda(g, gx, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    """The transpose of avgpool2d_fwd_cuda; gx (planes, H, W) overwritten."""
    if gx.size:
        _avgpool_bwd[grid(gx.size)](g, gx, kh, kw, sh, sw, ph, pw, bool(count_include_pad), divisor)


@cuda.jit(device=True)
def _adaptive_range(o, n_out, n_in):
    """[start, end) of adaptive window o (PyTorch's start_index / end_index)."""
    return (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out


@cuda.jit
def _adaptive_fwd(x, out):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        hs, he = _adaptive_range(oy, OH, H)
        ws, we = _adaptive_range(ox, OW, W)
        acc = float64(0.0)  # a float64 sum as the CPU's (the simulator needs it spelt out)
        for ih in range(hs, he):
            for iw in range(ws, we):
                acc += x[p, ih, iw]
        out[p, oy, ox] = acc / (he - hs) / (we - ws)


def adaptive_avgpool2d_fwd_cuda(x, out):
    """out[p, oy, ox] = mean of x[p] over the adaptive window (sum / kh / kw, as PyTorch)."""
    if out.size:
        _adaptive_fwd[grid(out.size)](x, out)


@cuda.jit
def _adaptive_bwd(g, gx):
    P, H, W = gx.shape
    OH, OW = g.shape[1], g.shape[2]
    acc = cuda.local.array(1, gx.dtype)
    for e in range(cuda.grid(1), P * H * W, cuda.gridsize(1)):
        iw = e % W
        t = e // W
        ih = t % H
        p = t // H
        acc[0] = 0
        # windows holding ih: floor(ih*OH/H) <= oy <= ((ih+1)*OH - 1) // H (a margin of one)
        oy0 = max((ih * OH) // H - 1, 0)
        oy1 = min(((ih + 1) * OH - 1) // H + 1, OH - 1)
        ox0 = max((iw * OW) // W - 1, 0)
        ox1 = min(((iw + 1) * OW - 1) // W + 1, OW - 1)
        for oy in range(oy0, oy1 + 1):
            hs, he = _adaptive_range(oy, OH, H)
            if ih < hs or ih >= he:
                continue
            for ox in range(ox0, ox1 + 1):
                ws, we = _adaptive_range(ox, OW, W)
                if iw < ws or iw >= we:
                    continue
                acc[0] += float64(g[p, oy, ox]) / (he - hs) / (we - ws)
        gx[p, ih, iw] = acc[0]


def adaptive_avgpool2d_bwd_cuda(g, gx):
    """The transpose of adaptive_avgpool2d_fwd_cuda; gx (planes, H, W) overwritten."""
    if gx.size:
        _adaptive_bwd[grid(gx.size)](g, gx)


@cuda.jit
def _maxpool2x2_fwd(x, out, idx):
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        y0 = 2 * oy
        x0 = 2 * ox
        best = x[p, y0, x0]  # the generic kernel's row-major compare order
        q = 0
        v = x[p, y0, x0 + 1]
        if v > best or v != v:
            best = v
            q = 1
        v = x[p, y0 + 1, x0]
        if v > best or v != v:
            best = v
            q = W
        v = x[p, y0 + 1, x0 + 1]
        if v > best or v != v:
            best = v
            q = W + 1
        out[p, oy, ox] = best
        idx[p, oy, ox] = y0 * W + x0 + q


def maxpool2x2_fwd_cuda(x, out, idx):
    """max_pool2d(x, 2) with every window inside the plane (the CPU's fast path)."""
    if out.size:
        _maxpool2x2_fwd[grid(out.size)](x, out, idx)
