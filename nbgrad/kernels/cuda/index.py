"""CUDA twins of kernels/cpu/index.py: bounds checks that run before anything touches memory, and
the scatter kernels (NOTE [user indices] there).

A kernel cannot raise, so every check is a min-reduction of the bad positions into a one-element
int64 device array (``cuda.atomic.min``, blockred.sentinel), and the host copies that one number
(and, for a message, the one bad index value) before launching the kernel that would use it.
The launchers return what the CPU kernels return: the first bad position, or -1.

Writes where positions can repeat:
* Adds (scatter_add, index_add, scatter_reduce sum / mean) use ``cuda.atomic.add`` for float32,
  float64, int32, uint32, int64 and uint64 (the order of float additions then varies from run to
  run, as PyTorch's CUDA scatter_add).  Other dtypes (bool, 8/16-bit ints, complex) run the CPU
  loop in one thread: correct, slow, and rare on a GPU.
* ``scatter_flat_cuda`` (assignment, the last write wins as on the CPU): each position's
  winner is claimed first with ``cuda.atomic.max`` of the entry number into an int64 scratch
  of ``out``'s size, then only the winners write.
* ``scatter_reduce_cuda`` prod / amax / amin (and the dtypes without atomics) and
  ``index_put_dim_cuda`` copies: one thread per (outer, inner) pair loops over the index in
  order, exactly the CPU's order.  Two pairs never share a position in the layouts the ops build
  (the pair's offsets are the coordinates of the other dims; the index along ``dim`` is checked
  against its size first), so no two threads write one place.
"""

from functools import lru_cache

import numpy as np
from numba import cuda

from .blockred import as_numba_type, read_first, sentinel
from .config import grid

__all__ = [
    "first_out_of_range_cuda",
    "scatter_add_flat_cuda",
    "scatter_flat_cuda",
    "scatter_reduce_cuda",
    "index_put_dim_cuda",
    "gather_flat_cuda",
    "first_bad_device",
    "check_index_device",
    "scatter_flat_device",
    "scatter_add_device",
    "index_put_dim_device",
    "has_atomic_add",
]

_ATOMIC = frozenset(
    np.dtype(t) for t in ("float32", "float64", "int32", "uint32", "int64", "uint64")
)


def has_atomic_add(dtype):
    """Whether ``cuda.atomic.add`` takes arrays of ``dtype``."""
    return np.dtype(dtype) in _ATOMIC


# -- checks -------------------------------------------------------------------------------------


@cuda.jit
def _first_out(idx, lo, hi, res):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        v = idx[i]
        if v < lo or v >= hi:
            cuda.atomic.min(res, 0, i)


def first_out_of_range_cuda(idx, lo, hi):
    """The position of the first index of the 1-D ``idx`` outside [lo, hi), or -1."""
    n = idx.shape[0]
    if not n:
        return -1
    res = sentinel(n)
    _first_out[grid(n)](idx, lo, hi, res)
    return read_first(res, n)


def _flat(idx):
    return idx if idx.ndim == 1 else idx.reshape(-1)  # (C-contiguous device arrays)


def _value(flat, k):
    return int(flat[k : k + 1].copy_to_host()[0])


def first_bad_device(idx, lo, hi):
    """The first value of the device array ``idx`` outside [lo, hi), or None."""
    flat = _flat(idx)
    if not flat.shape[0]:
        return None
    k = first_out_of_range_cuda(flat, lo, hi)
    return None if k < 0 else _value(flat, k)


def check_index_device(idx, n, dim, exc=IndexError, negative=True):
    """``check_index`` on a device array: raise ``exc`` ("index %d is out of bounds for dimension
    %d with size %d") unless every index is in [-n, n) (``negative``) or [0, n)."""
    bad = first_bad_device(idx, -n if negative else 0, n)
    if bad is not None:
        raise exc("index %d is out of bounds for dimension %d with size %d" % (bad, dim, n))


def _flat_error(k):
    # unreachable when the callers validated their indices: a last line of defence
    return RuntimeError("index %d is out of bounds for the flat buffer being written" % k)


# -- flat scatters and gather ---------------------------------------------------------------------


@lru_cache(maxsize=None)
def _atomic_add_flat(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def k(out, lin, src, m):
        for i in range(cuda.grid(1), m, cuda.gridsize(1)):
            cuda.atomic.add(out, lin[i], cast(src[i]))

    return k


@cuda.jit
def _add_flat_serial(out, lin, src, m):
    if cuda.grid(1) == 0:
        for i in range(m):
            out[lin[i]] += src[i]


def scatter_add_flat_cuda(out, lin, src):
    """out[lin[i]] += src[i] over 1-D device buffers (duplicates accumulate); returns the
    position of the first flat index outside ``out`` (nothing written from there on), or -1."""
    k = first_out_of_range_cuda(lin, 0, out.shape[0])
    m = lin.shape[0] if k < 0 else k
    if m:
        if has_atomic_add(out.dtype):
            _atomic_add_flat(np.dtype(out.dtype))[grid(m)](out, lin, src, m)
        else:
            _add_flat_serial[1, 1](out, lin, src, m)
    return k


@cuda.jit
def _fill_i64(a, v):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[i] = v


@cuda.jit
def _claim(lin, m, winner):
    for i in range(cuda.grid(1), m, cuda.gridsize(1)):
        cuda.atomic.max(winner, lin[i], i)


@cuda.jit
def _write_winners(out, lin, src, m, winner):
    for i in range(cuda.grid(1), m, cuda.gridsize(1)):
        p = lin[i]
        if winner[p] == i:
            out[p] = src[i]


def scatter_flat_cuda(out, lin, src):
    """out[lin[i]] = src[i] (the last of duplicates wins); returns like
    ``scatter_add_flat_cuda``."""
    n = out.shape[0]
    k = first_out_of_range_cuda(lin, 0, n)
    m = lin.shape[0] if k < 0 else k
    if m:
        winner = cuda.device_array(n, np.int64)
        _fill_i64[grid(n)](winner, -1)
        _claim[grid(m)](lin, m, winner)
        _write_winners[grid(m)](out, lin, src, m, winner)
    return k


@cuda.jit
def _gather_flat(src, lin, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = src[lin[i]]


def gather_flat_cuda(src, lin, out):
    """out[i] = src[lin[i]] over 1-D device buffers; ``lin`` (int64) is already validated."""
    if out.shape[0]:
        _gather_flat[grid(out.shape[0])](src, lin, out)


def scatter_flat_device(out, lin, src, add):
    """``out.reshape(-1)[lin] (+)= src`` over 1-D (or C-contiguous) device buffers,
    bounds-checked: raises the CPU helper's RuntimeError for a flat index outside ``out``."""
    lin = _flat(lin)
    src = _flat(src)
    if lin.shape[0]:
        k = (scatter_add_flat_cuda if add else scatter_flat_cuda)(_flat(out), lin, src)
        if k >= 0:
            raise _flat_error(_value(lin, k))


@cuda.jit
def _zero(a):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[i] = 0


def scatter_add_device(shape, dtype, lin, src):
    """A new zero device array of ``shape`` with ``src`` added at flat positions ``lin``."""
    n = int(np.prod(shape, dtype=np.int64))
    out = cuda.device_array(n, dtype)
    if n:
        _zero[grid(n)](out)
    scatter_flat_device(out, lin, src, True)
    return out.reshape(shape)


# -- scatter_reduce ---------------------------------------------------------------------------


@cuda.jit
def _sr_check(n, idx, outer_off, inner_off, stride, res):
    outer, k, inner = idx.shape
    for q in range(cuda.grid(1), outer * k * inner, cuda.gridsize(1)):
        o = q // (k * inner)
        j = (q // inner) % k
        i = q % inner
        v = idx[o, j, i]
        if v < 0 or outer_off[o] + v * stride + inner_off[i] >= n:
            cuda.atomic.min(res, 0, q)


@cuda.jit
def _sr_fill(out, idx, outer_off, inner_off, stride, identity):
    outer, k, inner = idx.shape
    for q in range(cuda.grid(1), outer * k * inner, cuda.gridsize(1)):
        o = q // (k * inner)
        j = (q // inner) % k
        i = q % inner
        out[outer_off[o] + idx[o, j, i] * stride + inner_off[i]] = identity  # same value: no race


@lru_cache(maxsize=None)
def _sr_atomic(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def kern(out, idx, src, outer_off, inner_off, stride, mode, count):
        outer, k, inner = idx.shape
        for q in range(cuda.grid(1), outer * k * inner, cuda.gridsize(1)):
            o = q // (k * inner)
            j = (q // inner) % k
            i = q % inner
            p = outer_off[o] + idx[o, j, i] * stride + inner_off[i]
            cuda.atomic.add(out, p, cast(src[o, j, i]))
            if mode == 2:
                cuda.atomic.add(count, p, 1)

    return kern


@cuda.jit
def _sr_pairs(out, idx, src, outer_off, inner_off, stride, mode, count):
    # one thread per (o, i): the CPU's loop over j, in order
    outer, k, inner = idx.shape
    for q in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = q // inner
        i = q % inner
        for j in range(k):
            p = outer_off[o] + idx[o, j, i] * stride + inner_off[i]
            v = src[o, j, i]
            r = out[p]
            if mode == 0:
                out[p] = r + v
            elif mode == 1:
                out[p] = r * v
            elif mode == 2:
                out[p] = r + v
                count[p] += 1
            elif mode == 3:
                out[p] = v if (r < v) or (v != v) else r
            else:
                out[p] = v if (v < r) or (v != v) else r


def scatter_reduce_cuda(out, idx, src, outer_off, inner_off, stride, mode, include_self, identity,
                        count):  # fmt: skip
    """``scatter_reduce_cpu`` on device arrays: ``out`` the flat buffer, ``idx`` / ``src``
    (outer, k, inner), modes 0 sum, 1 prod, 2 mean (``count`` counts), 3 amax, 4 amin.  Every
    position is checked first (nothing written if one is bad); returns the first bad position
    in (outer, k, inner) order, or -1."""
    outer, k, inner = idx.shape
    total = outer * k * inner
    if not total:
        return -1
    res = sentinel(total)
    _sr_check[grid(total)](out.shape[0], idx, outer_off, inner_off, stride, res)
    bad = read_first(res, total)
    if bad >= 0:
        return bad
    if not include_self:
        ident = out.dtype.type(identity)
        _sr_fill[grid(total)](out, idx, outer_off, inner_off, stride, ident)
    if mode in (0, 2) and has_atomic_add(out.dtype):
        _sr_atomic(np.dtype(out.dtype))[grid(total)](
            out, idx, src, outer_off, inner_off, stride, mode, count
        )
    else:
        _sr_pairs[grid(outer * inner)](out, idx, src, outer_off, inner_off, stride, mode, count)
    return -1


# -- index_add / index_copy along one dim --------------------------------------------------------


@lru_cache(maxsize=None)
def _ip_atomic(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def kern(out, idx, src):
        outer, _, inner = out.shape
        k = idx.shape[0]
        for q in range(cuda.grid(1), outer * k * inner, cuda.gridsize(1)):
            o = q // (k * inner)
            j = (q // inner) % k
            i = q % inner
            cuda.atomic.add(out, (o, idx[j], i), cast(src[o, j, i]))

    return kern


@cuda.jit
def _ip_pairs(out, idx, src, accumulate):
    outer, _, inner = out.shape
    for q in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = q // inner
        i = q % inner
        for j in range(idx.shape[0]):
            t = idx[j]
            if accumulate:
                out[o, t, i] += src[o, j, i]
            else:
                out[o, t, i] = src[o, j, i]


def index_put_dim_cuda(out, idx, src, accumulate):
    """index_add / index_copy over the (outer, n, inner) layout: out[o, idx[j], i] (+)= src[o, j,
    i].  Every index is checked first (nothing written if one is bad); returns the position of
    the first index outside [0, n), or -1."""
    outer, n, inner = out.shape
    k = first_out_of_range_cuda(idx, 0, n)
    if k >= 0:
        return k
    m = idx.shape[0]
    if not (outer * m * inner):
        return -1
    if accumulate and has_atomic_add(out.dtype):
        _ip_atomic(np.dtype(out.dtype))[grid(outer * m * inner)](out, idx, src)
    else:
        _ip_pairs[grid(outer * inner)](out, idx, src, bool(accumulate))
    return -1


def index_put_dim_device(out, d, idx, src, accumulate):
    """``index_add`` (``accumulate``) or ``index_copy`` of the device array ``src`` into the
    C-contiguous device array ``out`` at ``idx`` along dim ``d`` (``src``: C-contiguous, ``out``'s
    shape with dim ``d`` of length ``len(idx)``; cast to ``out``'s dtype as it is written)."""
    shape = out.shape if out.ndim else (1,)
    outer = int(np.prod(shape[:d], dtype=np.int64))
    inner = int(np.prod(shape[d + 1 :], dtype=np.int64))
    flat_idx = _flat(idx)
    o3 = out.reshape(outer, shape[d], inner)
    s3 = src.reshape(outer, flat_idx.shape[0], inner)
    k = index_put_dim_cuda(o3, flat_idx, s3, accumulate)
    if k >= 0:
        raise _flat_error(_value(flat_idx, k))
