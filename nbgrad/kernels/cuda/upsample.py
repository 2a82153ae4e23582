"""CUDA twins of kernels/cpu/upsample.py: F.interpolate's gathers and their transposes on
C-contiguous device arrays.

Same launchers, parameters and in-place outputs as the CPU file; the index maps and weights
(ops/nn/upsample.py, PyTorch's arithmetic) are device arrays too.  Forwards are one thread per
output (grid-stride), with the CPU's expressions (``l0 * a + l1 * b`` even where a weight is 0,
so an Inf neighbour gives NaN as in PyTorch; a GPU may fuse a multiply-add, last bit only).
Backwards zero ``gx`` and scatter with ``cuda.atomic.add``: the maps are many-to-one with no
cheap inverse, so a gather would scan whole axes; the order of the adds into one input element
(hence its last bits) may vary between runs.
"""

from numba import cuda

from .config import grid

__all__ = [
    "upsample_nearest_fwd_cuda",
    "upsample_nearest_bwd_cuda",
    "upsample_linear_fwd_cuda",
    "upsample_linear_bwd_cuda",
]


def _flat(a):
    return a.reshape(a.size)


@cuda.jit
def _zero(a):
    for e in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[e] = 0


def _zero_all(a):
    if a.size:
        _zero[grid(a.size)](_flat(a))


@cuda.jit
def _nearest_fwd(x, i0, i1, i2, out):
    P, A, B, C = out.shape
    for e in range(cuda.grid(1), P * A * B * C, cuda.gridsize(1)):
        c = e % C
        t = e // C
        b = t % B
        t //= B
        a = t % A
        p = t // A
        out[p, a, b, c] = x[p, i0[a], i1[b], i2[c]]


def upsample_nearest_fwd_cuda(x, i0, i1, i2, out):
    """out[p, a, b, c] = x[p, i0[a], i1[b], i2[c]]."""
    if out.size:
        _nearest_fwd[grid(out.size)](x, i0, i1, i2, out)


@cuda.jit
def _nearest_bwd(g, i0, i1, i2, gx):
    P, A, B, C = g.shape
    for e in range(cuda.grid(1), P * A * B * C, cuda.gridsize(1)):
        c = e % C
        t = e // C
        b = t % B
        t //= B
        a = t % A
        p = t // A
        cuda.atomic.add(gx, (p, i0[a], i1[b], i2[c]), g[p, a, b, c])


def upsample_nearest_bwd_cuda(g, i0, i1, i2, gx):
    """The transpose: gx (zeroed here) accumulates g at the positions the forward read."""
    _zero_all(gx)
    if g.size:
        _nearest_bwd[grid(g.size)](g, i0, i1, i2, gx)


@cuda.jit
def _linear_fwd(x, h0, h1, hl0, hl1, w0, w1, wl0, wl1, out, two_d):
    P, OH, OW = out.shape
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        j0 = w0[ox]
        j1 = w1[ox]
        if two_d:
            y0 = h0[oy]
            y1 = h1[oy]
            t0 = x[p, y0, j0] * wl0[ox] + x[p, y0, j1] * wl1[ox]
            t1 = x[p, y1, j0] * wl0[ox] + x[p, y1, j1] * wl1[ox]
            out[p, oy, ox] = t0 * hl0[oy] + t1 * hl1[oy]
        else:
            out[p, oy, ox] = x[p, 0, j0] * wl0[ox] + x[p, 0, j1] * wl1[ox]


def upsample_linear_fwd_cuda(x, h0, h1, hl0, hl1, w0, w1, wl0, wl1, out, two_d):
    """Bilinear (``two_d``) or linear (H = 1) interpolation, per-axis index pairs and weights."""
    if out.size:
        _linear_fwd[grid(out.size)](x, h0, h1, hl0, hl1, w0, w1, wl0, wl1, out, bool(two_d))


@cuda.jit
def _linear_bwd(g, h0, h1, hl0, hl1, w0, w1, wl0, wl1, gx, two_d):
    P, OH, OW = g.shape
    for e in range(cuda.grid(1), P * OH * OW, cuda.gridsize(1)):
        ox = e % OW
        t = e // OW
        oy = t % OH
        p = t // OH
        v = g[p, oy, ox]
        j0 = w0[ox]
        j1 = w1[ox]
        if two_d:
            y0 = h0[oy]
            y1 = h1[oy]
            a0 = hl0[oy]
            a1 = hl1[oy]
            cuda.atomic.add(gx, (p, y0, j0), a0 * wl0[ox] * v)
            cuda.atomic.add(gx, (p, y0, j1), a0 * wl1[ox] * v)
            cuda.atomic.add(gx, (p, y1, j0), a1 * wl0[ox] * v)
            cuda.atomic.add(gx, (p, y1, j1), a1 * wl1[ox] * v)
        else:
            cuda.atomic.add(gx, (p, 0, j0), wl0[ox] * v)
            cuda.atomic.add(gx, (p, 0, j1), wl1[ox] * v)


def upsample_linear_bwd_cuda(g, h0, h1, hl0, hl1, w0, w1, wl0, wl1, gx, two_d):
    """The transpose of upsample_linear_fwd_cuda; gx (planes, H, W) zeroed here."""
    _zero_all(gx)
    if g.size:
        _linear_bwd[grid(g.size)](g, h0, h1, hl0, hl1, w0, w1, wl0, wl1, gx, bool(two_d))
