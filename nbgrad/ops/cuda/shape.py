"""Copying shape ops on CUDA arrays (cat, stack, flip, roll, repeat, tril/triu): each result is
a new dense array filled by the strided copy kernel (kernels/cuda/elementwise.py ``assign``)
through views of it, or by the triangle kernel -- no host round trip."""

from numba import cuda

from ...kernels.cuda.array import empty
from ...kernels.cuda.config import grid
from ...kernels.cuda.elementwise import assign

__all__ = ["cat", "stack", "flip", "roll", "tile", "tri"]


def _along(a, d, start, stop):
    return a.getitem_basic((slice(None),) * d + (slice(start, stop),))


def cat(arrays, d, shape, npdtype):
    out = empty(shape, npdtype)
    off = 0
    for a in arrays:
        n = a.shape[d]
        assign(_along(out, d, off, off + n), a)  # (cast on store, as numpy's unsafe casting)
        off += n
    return out


def stack(arrays, d, npdtype):
    s = arrays[0].shape
    out = empty(s[:d] + (len(arrays),) + s[d:], npdtype)
    for i, a in enumerate(arrays):
        assign(out.getitem_basic((slice(None),) * d + (i,)), a)
    return out


def flip(a, dims):
    key = tuple(slice(None, None, -1) if k in dims else slice(None) for k in range(a.ndim))
    return a.getitem_basic(key).contiguous()  # a negative-stride view, then one copy


def roll(a, shift, d):
    """numpy's ``roll`` of ``a`` by ``shift`` along ``d``: two strided copies."""
    n = a.shape[d]
    out = empty(a.shape, a.dtype)
    s = shift % n if n else 0
    assign(_along(out, d, s, n), _along(a, d, 0, n - s))
    if s:
        assign(_along(out, d, 0, s), _along(a, d, n - s, n))
    return out


def tile(a, reps, target):
    """numpy's ``tile``: the result seen as (r0, s0, r1, s1, ...) takes ``a`` broadcast."""
    padded = (1,) * (len(reps) - a.ndim) + a.shape
    out = empty(target, a.dtype)
    split, src = [], []
    for r, s in zip(reps, padded):
        split += [r, s]
        src += [1, s]
    assign(out.view_shape(tuple(split)), a.reshape(tuple(src)))
    return out


@cuda.jit
def _tri_kernel(x, out, n, m, k, upper, zero):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        c = i % m
        r = (i // m) % n
        keep = (c - r >= k) if upper else (c - r <= k)
        out[i] = x[i] if keep else zero  # a select: NaN outside the triangle becomes 0


def tri(a, k, upper):
    """``tril`` / ``triu`` of the last two dims (a dense copy)."""
    x = a.contiguous()
    out = empty(a.shape, a.dtype)
    size = x.size
    if size:
        n, m = a.shape[-2], a.shape[-1]
        flat_x = x.dense().reshape(size)
        flat_o = out.dense().reshape(size)
        _tri_kernel[grid(size)](flat_x, flat_o, n, m, int(k), bool(upper), a.dtype.type(0))
    return out
