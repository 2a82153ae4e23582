"""CUDA kernels for the indexing and sorting ops' array work that numpy does on the CPU (fancy
indexing, ``take_along_axis``, ``nonzero``, ``argsort``, ``unique``, ``repeat``).

Every gather-like op reads its source at *flat positions* (NOTE [linear-index backward] in
ops/indexing.py); the kernels here compute those positions on the device from the (already
validated) index arrays, and ``kernels/cuda/index.py`` gathers / scatters at them.  All
kernels are grid-stride loops, correct for any launch configuration.

* ``adv_lin``: numpy advanced indexing of a C-order source: per output element, basic dims
  contribute ``coordinate * stride`` and the broadcast index arrays ``index * stride`` (negative
  indices wrapped).
* ``dim_lin`` (gather/scatter along a dim) and ``select_lin`` (index_select).
* ``compact``: positions of the nonzero elements in flat order -- a count per chunk, an
  exclusive scan of the chunk counts (one thread: there are at most ``CHUNKS`` of them), then
  every chunk writes its positions from its offset.  ``nonzero``, ``masked_select``,
  ``masked_scatter`` and boolean-mask indices are built on it.
* ``argsort_rows``: a stable bottom-up merge sort of each row's indices (PyTorch's order: NaN
  last ascending, first descending, ties in input order); each pass merges pairs of runs, one
  thread per (row, pair), into a scratch buffer.  Keys may be vectors (``unique(dim=...)``
  compares slices lexicographically).
"""

import numpy as np
from numba import cuda

from .config import SIM, grid

__all__ = [
    "adv_lin",
    "dim_lin",
    "select_lin",
    "compact",
    "coords",
    "argsort_rows",
    "take_rows",
    "first_equal",
    "repeat_index",
    "fill_dim",
    "run_flags",
    "iota",
    "count_nonzero",
    "count_scan",
    "inverse_counts",
    "mean_divide",
]

CHUNKS = 64 if SIM else 8192


def _dev(a, dtype=np.int64):
    # A copy in C order: np.ascontiguousarray keeps a one-element view's negative stride (a
    # reversed slice), and a real device then sizes the transfer as 0 bytes ("incompatible
    # shape: (0,) vs. (1,)"); the simulator does not mind.
    return cuda.to_device(np.array(a, dtype=dtype, order="C", copy=True))


@cuda.jit
def _iota(out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = i


def iota(n):
    """A 1-D int64 device array 0 .. n-1."""
    out = cuda.device_array(max(n, 1), np.int64)[:n]
    if n:
        _iota[grid(n)](out)
    return out


# -- flat positions ------------------------------------------------------------------------


@cuda.jit
def _adv_lin(out, shape, coef, bcoef, base, idx, sizes, sstr):
    nd = shape.shape[0]
    nk = idx.shape[0]
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        r = i
        pos = base
        bpos = 0
        for d in range(nd - 1, -1, -1):
            c = r % shape[d]
            r = r // shape[d]
            pos += c * coef[d]
            bpos += c * bcoef[d]
        for k in range(nk):
            v = idx[k, bpos]
            if v < 0:
                v += sizes[k]
            pos += v * sstr[k]
        out[i] = pos


def adv_lin(shape, coef, bcoef, base, idx, sizes, sstr):
    """Flat source positions of an advanced index: ``shape`` the result's, ``coef`` each result
    dim's source stride (0 for broadcast dims), ``bcoef`` its stride in the broadcast index
    shape (0 for basic dims), ``idx`` the (K, prod(broadcast)) int64 index arrays, ``sizes`` /
    ``sstr`` the size and stride of the source dim each indexes."""
    n = int(np.prod(shape, dtype=np.int64))
    out = cuda.device_array(max(n, 1), np.int64)[:n]
    if n:
        _adv_lin[grid(n)](
            out, _dev(shape), _dev(coef), _dev(bcoef), base, idx, _dev(sizes), _dev(sstr)
        )
    return out


@cuda.jit
def _dim_lin(index, ishape, sstr, d, out):
    nd = ishape.shape[0]
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        r = i
        pos = 0
        for k in range(nd - 1, -1, -1):
            c = r % ishape[k]
            r = r // ishape[k]
            pos += (index[i] if k == d else c) * sstr[k]
        out[i] = pos


def dim_lin(index, ishape, shape, d):
    """Flat positions in a C-order array of ``shape`` that gather(d, index) reads: ``index``
    a flat int64 device array of ``ishape`` (validated)."""
    n = index.shape[0]
    out = cuda.device_array(max(n, 1), np.int64)[:n]
    st = np.cumprod((1,) + tuple(shape[::-1]), dtype=np.int64)[-2::-1]
    if n:
        _dim_lin[grid(n)](index, _dev(ishape), _dev(st), d, out)
    return out


@cuda.jit
def _select_lin(idx, n, inner, out):
    k = idx.shape[0]
    for q in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        o = q // (k * inner)
        j = (q // inner) % k
        i = q % inner
        v = idx[j]
        if v < 0:
            v += n
        out[q] = (o * n + v) * inner + i


def select_lin(idx, outer, n, inner):
    """Flat positions of ``take(a, idx, axis=d)`` for ``a`` of (outer, n, inner) layout."""
    m = outer * idx.shape[0] * inner
    out = cuda.device_array(max(m, 1), np.int64)[:m]
    if m:
        _select_lin[grid(m)](idx, n, inner, out)
    return out


# -- compaction (nonzero) ---------------------------------------------------------------------


@cuda.jit
def _chunk_count(x, L, counts):
    n = x.shape[0]
    for c in range(cuda.grid(1), counts.shape[0], cuda.gridsize(1)):
        s = 0
        for i in range(c * L, min(n, (c + 1) * L)):
            if x[i] != 0:
                s += 1
        counts[c] = s


@cuda.jit
def _exclusive_scan(counts, offs):
    if cuda.grid(1) == 0:
        acc = 0
        for c in range(counts.shape[0]):
            offs[c] = acc
            acc += counts[c]
        offs[counts.shape[0]] = acc


@cuda.jit
def _chunk_write(x, L, offs, out):
    n = x.shape[0]
    for c in range(cuda.grid(1), offs.shape[0] - 1, cuda.gridsize(1)):
        p = offs[c]
        for i in range(c * L, min(n, (c + 1) * L)):
            if x[i] != 0:
                out[p] = i
                p += 1


def _scan_counts(x):
    n = x.shape[0]
    chunks = min(n, CHUNKS)
    L = -(-n // chunks)
    chunks = -(-n // L)
    counts = cuda.device_array(chunks, np.int64)
    offs = cuda.device_array(chunks + 1, np.int64)
    _chunk_count[grid(chunks)](x, L, counts)
    _exclusive_scan[1, 1](counts, offs)
    return L, chunks, offs


def compact(x):
    """Flat positions (int64, ascending) of the nonzero elements of the 1-D device array
    ``x``; the count is read back (one number) to size the result."""
    n = x.shape[0]
    if not n:
        return cuda.device_array(1, np.int64)[:0]
    L, chunks, offs = _scan_counts(x)
    total = int(offs[chunks : chunks + 1].copy_to_host()[0])
    out = cuda.device_array(max(total, 1), np.int64)[:total]
    if total:
        _chunk_write[grid(chunks)](x, L, offs, out)
    return out


@cuda.jit
def _coords(lin, cst, shape, out):
    nd = out.shape[0]
    m = lin.shape[0]
    for q in range(cuda.grid(1), nd * m, cuda.gridsize(1)):
        d = q // m
        p = q % m
        out[d, p] = (lin[p] // cst[d]) % shape[d]


def coords(lin, shape):
    """(ndim, m) int64 coordinates in ``shape`` of the flat positions ``lin``."""
    nd, m = len(shape), lin.shape[0]
    out = cuda.device_array((nd, m), np.int64)
    cst = np.cumprod((1,) + tuple(shape[::-1]), dtype=np.int64)[-2::-1]
    if nd * m:
        _coords[grid(nd * m)](lin, _dev(cst), _dev(shape), out)
    return out


# -- stable merge sort per row --------------------------------------------------------------


@cuda.jit(device=True)
def _before(keys, r, a, b, descending):
    """Whether item ``a`` sorts strictly before item ``b`` in row ``r`` (lexicographic over
    the key vector; NaN greatest)."""
    for t in range(keys.shape[2]):
        x = keys[r, a, t]
        y = keys[r, b, t]
        xn = x != x
        yn = y != y
        if xn and yn:
            continue
        if descending:
            if xn or (not yn and x > y):
                return True
            if yn or y > x:
                return False
        else:
            if yn and not xn:
                return True
            if xn or y < x:
                return False
            if x < y:
                return True
    return False


@cuda.jit
def _init_rows(idx):
    m, n = idx.shape
    for q in range(cuda.grid(1), m * n, cuda.gridsize(1)):
        idx[q // n, q % n] = q % n


@cuda.jit
def _merge_pass(keys, src, dst, w, descending):
    m, n = src.shape
    pairs = (n + 2 * w - 1) // (2 * w)
    for q in range(cuda.grid(1), m * pairs, cuda.gridsize(1)):
        r = q // pairs
        lo = (q % pairs) * 2 * w
        mid = min(lo + w, n)
        hi = min(lo + 2 * w, n)
        i = lo
        j = mid
        for k in range(lo, hi):
            # take from the right run only when strictly before: stable
            if i < mid and (j >= hi or not _before(keys, r, src[r, j], src[r, i], descending)):
                dst[r, k] = src[r, i]
                i += 1
            else:
                dst[r, k] = src[r, j]
                j += 1


def argsort_rows(keys, descending):
    """Stable argsort of each row of the (m, n, L) device array ``keys`` (L-vectors compared
    lexicographically): an (m, n) int64 device array."""
    m, n = keys.shape[0], keys.shape[1]
    a = cuda.device_array((m, n), np.int64)
    if not m * n:
        return a
    _init_rows[grid(m * n)](a)
    b = cuda.device_array((m, n), np.int64)
    w = 1
    while w < n:
        pairs = (n + 2 * w - 1) // (2 * w)
        _merge_pass[grid(m * pairs)](keys, a, b, w, bool(descending))
        a, b = b, a
        w *= 2
    return a


@cuda.jit
def _take_rows(x, idx, out):
    m, k = idx.shape
    for q in range(cuda.grid(1), m * k, cuda.gridsize(1)):
        r = q // k
        j = q % k
        out[r, j] = x[r, idx[r, j]]


def take_rows(x, idx):
    """``take_along_axis(x, idx, 1)`` for (m, n) device ``x`` and (m, k) int64 ``idx``."""
    out = cuda.device_array(idx.shape, x.dtype)
    if idx.size:
        _take_rows[grid(idx.size)](x, idx, out)
    return out


@cuda.jit
def _first_equal(x, kth, out):
    m, n = x.shape
    for r in range(cuda.grid(1), m, cuda.gridsize(1)):
        v = kth[r, 0]
        at = 0
        for j in range(n):
            y = x[r, j]
            if y == v or (v != v and y != y):
                at = j
                break
        out[r, 0] = at


def first_equal(x, kth):
    """Per row of (m, n) ``x``: the first position equal to ``kth[r, 0]`` (NaN matches NaN)."""
    out = cuda.device_array((x.shape[0], 1), np.int64)
    if x.shape[0]:
        _first_equal[grid(x.shape[0])](x, kth, out)
    return out


# -- repeat / fill / runs -----------------------------------------------------------------


@cuda.jit
def _repeat_write(r, offs, out):
    for i in range(cuda.grid(1), r.shape[0], cuda.gridsize(1)):
        for p in range(offs[i], offs[i] + r[i]):
            out[p] = i


@cuda.jit
def _inclusive_offsets(r, offs):
    if cuda.grid(1) == 0:
        acc = 0
        for i in range(r.shape[0]):
            offs[i] = acc
            acc += r[i]
        offs[r.shape[0]] = acc


def repeat_index(r, dtype):
    """``np.repeat(arange(len(r)), r)`` for a 1-D non-negative int64 device array ``r``
    (offsets by a one-thread scan, then a thread per entry writes its run)."""
    n = r.shape[0]
    offs = cuda.device_array(n + 1, np.int64)
    _inclusive_offsets[1, 1](r, offs)
    total = int(offs[n : n + 1].copy_to_host()[0])
    out = cuda.device_array(max(total, 1), dtype)[:total]
    if total and n:
        _repeat_write[grid(n)](r, offs, out)
    return out


@cuda.jit
def _fill_dim(out, idx, value):
    outer, n, inner = out.shape
    k = idx.shape[0]
    for q in range(cuda.grid(1), outer * k * inner, cuda.gridsize(1)):
        o = q // (k * inner)
        j = (q // inner) % k
        i = q % inner
        v = idx[j]
        if v < 0:
            v += n
        out[o, v, i] = value  # the same value: repeated indices race harmlessly


def fill_dim(out3, idx, value):
    """``out3[:, idx, :] = value`` (indices validated, negatives wrapped)."""
    m = out3.shape[0] * idx.shape[0] * out3.shape[2]
    if m:
        _fill_dim[grid(m)](out3, idx, out3.dtype.type(value))


@cuda.jit
def _run_flags(keys, flags):
    n, L = keys.shape
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        f = i == 0
        if not f:
            for t in range(L):
                x = keys[i, t]
                y = keys[i - 1, t]
                if x != y and not (x != x and y != y):
                    f = True
                    break
        flags[i] = 1 if f else 0


def run_flags(keys):
    """1 where a row of the sorted (n, L) ``keys`` starts a new run of equal rows (NaNs
    equal), else 0 (int64)."""
    n = keys.shape[0]
    flags = cuda.device_array(max(n, 1), np.int64)[:n]
    if n:
        _run_flags[grid(n)](keys, flags)
    return flags


@cuda.jit
def _inclusive_scan_chunks(x, L, offs, out):
    # out[i] = offs[chunk] + (nonzeros of x up to and including i within the chunk)
    n = x.shape[0]
    for c in range(cuda.grid(1), offs.shape[0] - 1, cuda.gridsize(1)):
        acc = offs[c]
        for i in range(c * L, min(n, (c + 1) * L)):
            if x[i] != 0:
                acc += 1
            out[i] = acc


def count_scan(x):
    """Inclusive running count of the nonzeros of the 1-D device array ``x`` (int64)."""
    n = x.shape[0]
    out = cuda.device_array(max(n, 1), np.int64)[:n]
    if n:
        L, chunks, offs = _scan_counts(x)
        _inclusive_scan_chunks[grid(chunks)](x, L, offs, out)
    return out


@cuda.jit
def _unique_post(perm, group, flag_pos, n, inverse, counts):
    m = perm.shape[0]
    for i in range(cuda.grid(1), m, cuda.gridsize(1)):
        inverse[perm[i]] = group[i] - 1
    u = flag_pos.shape[0]
    for j in range(cuda.grid(1), u, cuda.gridsize(1)):
        end = flag_pos[j + 1] if j + 1 < u else n
        counts[j] = end - flag_pos[j]


def inverse_counts(perm, group, flag_pos, n):
    """inverse (the run of each original item) and counts (run lengths) of a unique."""
    inverse = cuda.device_array(max(n, 1), np.int64)[:n]
    u = flag_pos.shape[0]
    counts = cuda.device_array(max(u, 1), np.int64)[:u]
    if n:
        _unique_post[grid(n)](perm, group, flag_pos, n, inverse, counts)
    return inverse, counts


def count_nonzero(x):
    """The number of nonzero elements of the 1-D device array ``x`` (one number read back)."""
    n = x.shape[0]
    if not n:
        return 0
    _, chunks, offs = _scan_counts(x)
    return int(offs[chunks : chunks + 1].copy_to_host()[0])


@cuda.jit
def _mean_div(out, count, extra):
    for p in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        c = count[p] + extra
        if c == 0:
            c = 1
        out[p] = out[p] / c


@cuda.jit
def _mean_floordiv(out, count, extra):
    for p in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        c = count[p] + extra
        if c == 0:
            c = 1
        out[p] = out[p] // c


def mean_divide(out, count, extra):
    """scatter_reduce's mean: ``out[p] /= max(count[p] + extra, 1)`` over the flat ``out``
    (integers: floor division, as numpy's ``floor_divide``)."""
    n = out.shape[0]
    if n:
        k = _mean_floordiv if np.dtype(out.dtype).kind in "iu" else _mean_div
        k[grid(n)](out, count, extra)
