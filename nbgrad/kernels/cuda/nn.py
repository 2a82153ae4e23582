"""Small CUDA kernels of the nn ops' own array code (ops/nn/*.py) where the CPU side uses
numpy rather than a kernels/cpu kernel, so there is no twin to call: argument checks that read
one flag back to the host, and the like.  Grid-stride loops, correct for any launch."""

import math

import numpy as np
from numba import cuda, float64, int64

from .blockred import read_first, sentinel
from .config import SIM, grid

__all__ = [
    "any_outside_unit_cuda",
    "take_rows_cuda",
    "embedding_mult_cuda",
    "take_axis1_cuda",
    "any_true_cuda",
    "minmax_i64_cuda",
    "one_hot_cuda",
    "first_decrease_cuda",
    "bag_of_cuda",
    "bag_mean_mult_cuda",
    "bag_freq_scale_cuda",
    "nonzero_1d_cuda",
    "bag_live_cuda",
    "min_at_least_cuda",
    "embedding_renorm_cuda",
]


@cuda.jit
def _outside_unit(x, flag):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        v = x[i]
        if not (v >= 0 and v <= 1):  # NaN is outside too, as numpy's comparisons say
            flag[0] = 1  # (every writer stores the same value: no atomics needed)


def any_outside_unit_cuda(x):
    """Whether a 1-D device array has an element outside [0, 1] (or a NaN): one flag read
    back to the host."""
    if x.size == 0:
        return False
    flag = cuda.to_device(np.zeros(1, np.int32))
    _outside_unit[grid(x.size)](x, flag)
    return bool(flag.copy_to_host()[0])


# -- embedding -----------------------------------------------------------------------------------


@cuda.jit
def _take_rows(w, idx, out):
    n, D = out.shape
    for q in range(cuda.grid(1), n * D, cuda.gridsize(1)):
        i = q // D
        out[i, q - i * D] = w[idx[i], q - i * D]


def take_rows_cuda(w, idx, out):
    """out[i, :] = w[idx[i], :] (``np.take(w, idx, axis=0)``); ``idx`` (int64, 1-D) already
    range-checked."""
    if out.size:
        _take_rows[grid(out.size)](w, idx, out)


@cuda.jit
def _count(idx, counts):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(counts, idx[i], 1)


@cuda.jit
def _embedding_mult(idx, counts, use_freq, pad, mult):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        j = idx[i]
        m = 1.0 / counts[j] if use_freq else 1.0
        if pad >= 0 and j == pad:
            m = 0.0
        mult[i] = m


def embedding_mult_cuda(idx, V, freq, pad):
    """Per-entry float64 multiplier of embedding's weight gradient: ``1 / count(idx[i])``
    when ``freq`` (``np.bincount``'s counts, by atomic adds), 1 otherwise; 0 where
    ``idx[i] == pad`` (``pad`` >= 0)."""
    n = idx.shape[0]
    counts = cuda.to_device(np.zeros(max(V, 1), np.int64))
    mult = cuda.device_array(max(n, 1), np.float64)
    if n:
        if freq:
            _count[grid(n)](idx, counts)
        _embedding_mult[grid(n)](idx, counts, bool(freq), int(pad), mult)
    return mult[:n]


# -- gathers along one axis ----------------------------------------------------------------------


@cuda.jit
def _take_axis1(a, idx, out):
    A, K, B = out.shape
    for q in range(cuda.grid(1), A * K * B, cuda.gridsize(1)):
        b = q % B
        t = q // B
        k = t % K
        out[t // K, k, b] = a[t // K, idx[k], b]


def take_axis1_cuda(a, idx, out):
    """out[i, k, j] = a[i, idx[k], j] (``np.take(a, idx, axis=1)`` of a 3-D view); ``idx``
    (int64) already in range."""
    if out.size:
        _take_axis1[grid(out.size)](a, idx, out)


@cuda.jit
def _any_true(x, flag):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if x[i]:
            flag[0] = 1  # (every writer stores the same value: no atomics needed)


def any_true_cuda(x):
    """``x.any()`` of a 1-D device array: one flag read back to the host."""
    if x.size == 0:
        return False
    flag = cuda.to_device(np.zeros(1, np.int32))
    _any_true[grid(x.size)](x, flag)
    return bool(flag.copy_to_host()[0])


# -- one_hot -------------------------------------------------------------------------------------


@cuda.jit
def _minmax(a, res):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        cuda.atomic.min(res, 0, a[i])
        cuda.atomic.max(res, 1, a[i])


def minmax_i64_cuda(a):
    """(min, max) of a non-empty 1-D int64 device array: two numbers read back to the host."""
    res = cuda.to_device(np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64))
    _minmax[grid(a.shape[0])](a, res)
    lo, hi = res.copy_to_host()
    return int(lo), int(hi)


@cuda.jit
def _one_hot(a, out):
    n, C = out.shape
    for q in range(cuda.grid(1), n * C, cuda.gridsize(1)):
        i = q // C
        out[i, q - i * C] = 1 if a[i] == q - i * C else 0


def one_hot_cuda(a, out):
    """out[i, c] = (a[i] == c) for a 1-D int64 ``a`` (values already in range)."""
    if out.size:
        _one_hot[grid(out.size)](a, out)


# -- embedding_bag -------------------------------------------------------------------------------


@cuda.jit
def _first_decrease(oa, res):
    for k in range(cuda.grid(1), oa.shape[0] - 1, cuda.gridsize(1)):
        if oa[k + 1] < oa[k]:
            cuda.atomic.min(res, 0, k)


def first_decrease_cuda(oa):
    """The first k with oa[k + 1] < oa[k] (1-D int64 device array), or -1: one number read
    back."""
    n = oa.shape[0]
    if n < 2:
        return -1
    res = sentinel(n)
    _first_decrease[grid(n)](oa, res)
    return read_first(res, n)


@cuda.jit
def _bag_of(starts, ends, bag_of):
    for b in range(cuda.grid(1), starts.shape[0], cuda.gridsize(1)):
        for i in range(starts[b], ends[b]):
            bag_of[i] = b


def bag_of_cuda(starts, ends, bag_of):
    """bag_of[i] = b for i in [starts[b], ends[b]) (validated offsets: the ranges are disjoint
    and in bounds); other entries keep their value."""
    if starts.shape[0]:
        _bag_of[grid(starts.shape[0])](starts, ends, bag_of)


@cuda.jit
def _bag_mean_mult(bag_of, count, mult):
    for i in range(cuda.grid(1), bag_of.shape[0], cuda.gridsize(1)):
        b = bag_of[i]
        if b >= 0:
            c = count[b]
            mult[i] = 1.0 / (c if c > 1 else 1)
        else:
            mult[i] = 0.0


def bag_mean_mult_cuda(bag_of, count, mult):
    """mult[i] = 1 / max(count[bag_of[i]], 1) for entries in a bag, else 0 (float64)."""
    if bag_of.shape[0]:
        _bag_mean_mult[grid(bag_of.shape[0])](bag_of, count, mult)


@cuda.jit
def _freq_prefix(counts, rank, cum):
    # one thread: exclusive count of distinct values below v, inclusive count of entries <= v
    if cuda.grid(1) == 0:
        r = 0
        c = 0
        for v in range(counts.shape[0]):
            rank[v] = r
            if counts[v] > 0:
                r += 1
            c += counts[v]
            cum[v] = c


@cuda.jit
def _freq_scale(idx, counts, rank, cum, out):
    V = counts.shape[0]
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        r = rank[idx[i]]
        lo = 0
        hi = V - 1
        while lo < hi:  # the smallest u with cum[u] > r: sorted(idx)[r]
            mid = (lo + hi) // 2
            if cum[mid] > r:
                hi = mid
            else:
                lo = mid + 1
        out[i] = 1.0 / counts[lo]


def bag_freq_scale_cuda(idx, V, out):
    """NOTE [bag frequency scale] (ops/nn/embedding.py): out[i] = 1 / count(sorted(idx)[k])
    where k is the rank of idx[i] among the distinct indices (float64; ``idx`` in [0, V))."""
    n = idx.shape[0]
    if not n:
        return
    counts = cuda.to_device(np.zeros(V, np.int64))
    _count[grid(n)](idx, counts)
    rank = cuda.device_array(V, np.int64)
    cum = cuda.device_array(V, np.int64)
    _freq_prefix[1, 1](counts, rank, cum)
    _freq_scale[grid(n)](idx, counts, rank, cum, out)


_CT = 8 if SIM else 256  # threads of the one-block compaction


@cuda.jit
def _compact(flag, pos, total):
    sm = cuda.shared.array(_CT, int64)
    t = cuda.threadIdx.x
    n = flag.shape[0]
    chunk = (n + _CT - 1) // _CT
    lo = min(t * chunk, n)
    hi = min(lo + chunk, n)
    c = 0
    for i in range(lo, hi):
        if flag[i]:
            c += 1
    sm[t] = c
    cuda.syncthreads()
    if t == 0:  # exclusive prefix over the threads' counts
        acc = 0
        for k in range(_CT):
            v = sm[k]
            sm[k] = acc
            acc += v
        total[0] = acc
    cuda.syncthreads()
    w = sm[t]
    for i in range(lo, hi):
        if flag[i]:
            pos[w] = i
            w += 1


def nonzero_1d_cuda(flag):
    """The positions of the true entries of a 1-D device array, in order (``np.nonzero``):
    one block, a chunk per thread; the count is read back to size the result."""
    n = flag.shape[0]
    pos = cuda.device_array(max(n, 1), np.int64)
    total = cuda.to_device(np.zeros(1, np.int64))
    if n:
        _compact[1, _CT](flag, pos, total)
    m = int(total.copy_to_host()[0])
    return pos[:m]


@cuda.jit
def _bag_live(bag_of, idx, pad, flag):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        flag[i] = 1 if bag_of[i] >= 0 and idx[i] != pad else 0


def bag_live_cuda(bag_of, idx, pad):
    """flag[i] = entry i is in a bag and not padding (int8 device array)."""
    n = idx.shape[0]
    flag = cuda.device_array(max(n, 1), np.int8)
    if n:
        _bag_live[grid(n)](bag_of, idx, int(pad), flag)
    return flag[:n]


# -- embedding max_norm renormalisation ----------------------------------------------------------


@cuda.jit
def _min_at_least(a, lo, res):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        if a[i] >= lo:
            cuda.atomic.min(res, 0, a[i])


def min_at_least_cuda(a, lo):
    """The smallest value >= ``lo`` of a non-empty 1-D int64 device array (one number read
    back; int64 max when there is none)."""
    res = cuda.to_device(np.array([np.iinfo(np.int64).max], np.int64))
    _min_at_least[grid(a.shape[0])](a, lo, res)
    return int(res.copy_to_host()[0])


@cuda.jit
def _mark(idx, present):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        present[idx[i]] = 1


@cuda.jit
def _renorm(w, present, max_norm, p, changed):
    V, D = w.shape
    for r in range(cuda.grid(1), V, cuda.gridsize(1)):
        if not present[r]:
            continue
        acc = float64(0.0)
        for d in range(D):
            a = abs(float64(w[r, d]))
            if p == math.inf:
                acc = max(acc, a) if d else a
            elif p == -math.inf:
                acc = min(acc, a) if d else a
            elif p == 0:
                acc += 1.0 if a != 0 else 0.0
            elif p == 1:
                acc += a
            elif p == 2:
                acc += a * a
            else:
                acc += a**p
        if p == 2:
            acc = math.sqrt(acc)
        elif p != 0 and p != 1 and p != math.inf and p != -math.inf:
            acc = acc ** (1.0 / p)
        if acc > max_norm:
            scale = max_norm / (acc + 1e-7)
            for d in range(D):
                w[r, d] = float64(w[r, d]) * scale
            changed[0] = 1  # (every writer stores the same value)


def embedding_renorm_cuda(w, idx, max_norm, norm_type):
    """Rows ``idx`` (int64, in [0, V)) of ``w`` (V, D) with a ``norm_type``-norm (float64,
    summed in order) above ``max_norm`` scaled in place to ``max_norm / (norm + 1e-7)`` times
    themselves, each row once however often it repeats; returns whether any row changed."""
    V = w.shape[0]
    if not (idx.shape[0] and V):
        return False
    present = cuda.to_device(np.zeros(V, np.int8))
    _mark[grid(idx.shape[0])](idx, present)
    changed = cuda.to_device(np.zeros(1, np.int32))
    _renorm[grid(V)](w, present, float(max_norm), float(norm_type), changed)
    return bool(changed.copy_to_host()[0])
