"""CUDA twins of kernels/cpu/embedding.py (embedding_bag forward, weight and per-sample-weight
backward); same parameters, device arrays.  A bag is entries [starts[b], ends[b]) of the flat
index array, ``bag_of[i]`` entry i's bag (-1: none), entries equal to ``pad`` are skipped.

* Forward: one thread per output element (b, d) walks its bag in order, accumulating in float64
  as the CPU kernel (the same sums, the same first-max-wins ties).
* Weight backward: one thread per (entry, d) adds into gw with ``cuda.atomic.add`` (rows repeat
  across entries); dtypes without atomic add (not a compute dtype) run the CPU loop in one thread.
* Per-sample-weight backward: one thread per entry (a dot product over D).

Indices come from the user (NOTE [user indices], kernels/cpu/index.py): each launcher first finds
the first bad entry on the device (a min-reduction, one number copied back) and returns it
before launching anything that would index with it.  Unlike the CPU kernels, which write the bags
before the bad entry, nothing is written then (the weight backwards have zeroed gw, as the CPU's).
The returned position is the smallest bad entry, the CPU's first one for bags in order.
"""

from functools import lru_cache

import numpy as np
from numba import cuda, float64

from .blockred import as_numba_type, read_first, sentinel
from .config import grid
from .index import has_atomic_add

__all__ = [
    "SUM",
    "MEAN",
    "MAX",
    "embedding_bag_fwd_cuda",
    "embedding_bag_bwd_cuda",
    "embedding_bag_max_bwd_cuda",
    "embedding_bag_psw_bwd_cuda",
]

SUM, MEAN, MAX = 0, 1, 2


@cuda.jit
def _bad_in_bags(idx, starts, ends, V, res):
    for b in range(cuda.grid(1), starts.shape[0], cuda.gridsize(1)):
        for i in range(starts[b], ends[b]):
            j = idx[i]
            if j < 0 or j >= V:
                cuda.atomic.min(res, 0, i)
                break


@cuda.jit
def _fwd(w, idx, starts, ends, psw, has_psw, mode, pad, out, maxidx, count):
    B, D = out.shape
    for q in range(cuda.grid(1), B * D, cuda.gridsize(1)):
        b = q // D
        d = q % D
        acc = float64(0.0)
        cnt = 0
        for i in range(starts[b], ends[b]):
            j = idx[i]
            if j == pad:
                continue
            v = w[j, d]
            if mode == MAX:
                if cnt == 0 or v > acc:
                    acc = v
                    maxidx[b, d] = j
            else:
                s = psw[i] if has_psw else 1.0
                acc += s * v
            cnt += 1
        if d == 0:
            count[b] = cnt
        if cnt == 0:
            out[b, d] = 0
            maxidx[b, d] = -1
        elif mode == MEAN:
            out[b, d] = acc / cnt
        else:
            out[b, d] = acc


def embedding_bag_fwd_cuda(w, idx, starts, ends, psw, has_psw, mode, pad, out, maxidx, count):
    """``embedding_bag_fwd_cpu`` on device arrays: out[b] = sum (times psw when ``has_psw``),
    mean or elementwise max of the rows w[idx[i]] of bag b; returns the first bad entry or -1."""
    B, D = out.shape
    if B:
        res = sentinel(idx.shape[0])
        _bad_in_bags[grid(B)](idx, starts, ends, w.shape[0], res)
        k = read_first(res, idx.shape[0])
        if k >= 0:
            return k
        _fwd[grid(B * D)](w, idx, starts, ends, psw, bool(has_psw), mode, pad, out, maxidx, count)
    return -1


@cuda.jit
def _zero2(a):
    R, C = a.shape
    for q in range(cuda.grid(1), R * C, cuda.gridsize(1)):
        a[q // C, q % C] = 0


@cuda.jit
def _bad_entry(idx, bag_of, V, B, res):
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        j = idx[i]
        if j < 0 or j >= V or bag_of[i] >= B:
            cuda.atomic.min(res, 0, i)


def _check_entries(idx, bag_of, V, B):
    n = idx.shape[0]
    if not n:
        return -1
    res = sentinel(n)
    _bad_entry[grid(n)](idx, bag_of, V, B, res)
    return read_first(res, n)


@lru_cache(maxsize=None)
def _bwd_atomic(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def kern(g, idx, bag_of, mult, pad, gw):
        D = gw.shape[1]
        n = idx.shape[0]
        for q in range(cuda.grid(1), n * D, cuda.gridsize(1)):
            i = q // D
            d = q % D
            b = bag_of[i]
            j = idx[i]
            if b < 0 or j == pad:
                continue
            cuda.atomic.add(gw, (j, d), cast(mult[i] * g[b, d]))

    return kern


@cuda.jit
def _bwd_serial(g, idx, bag_of, mult, pad, gw):
    if cuda.grid(1) == 0:
        for i in range(idx.shape[0]):
            b = bag_of[i]
            j = idx[i]
            if b < 0 or j == pad:
                continue
            for d in range(gw.shape[1]):
                gw[j, d] += mult[i] * g[b, d]


def embedding_bag_bwd_cuda(g, idx, bag_of, mult, pad, gw):
    """gw (zeroed here) += mult[i] * g[bag_of[i]] at row idx[i] for every entry in a bag that is
    not padding; returns the first bad entry (nothing added then) or -1."""
    V, D = gw.shape
    if V * D:
        _zero2[grid(V * D)](gw)
    k = _check_entries(idx, bag_of, V, g.shape[0])
    if k >= 0 or not (idx.shape[0] * D):
        return k
    if has_atomic_add(gw.dtype):
        _bwd_atomic(np.dtype(gw.dtype))[grid(idx.shape[0] * D)](g, idx, bag_of, mult, pad, gw)
    else:
        _bwd_serial[1, 1](g, idx, bag_of, mult, pad, gw)
    return -1


@cuda.jit
def _max_bad(maxidx, V, res):
    B, D = maxidx.shape
    for q in range(cuda.grid(1), B * D, cuda.gridsize(1)):
        if maxidx[q // D, q % D] >= V:
            cuda.atomic.min(res, 0, q // D)


@lru_cache(maxsize=None)
def _max_bwd_atomic(dtype):
    cast = as_numba_type(dtype)

    @cuda.jit
    def kern(g, maxidx, gw):
        B, D = maxidx.shape
        for q in range(cuda.grid(1), B * D, cuda.gridsize(1)):
            b = q // D
            d = q % D
            j = maxidx[b, d]
            if j >= 0:
                cuda.atomic.add(gw, (j, d), cast(g[b, d]))

    return kern


@cuda.jit
def _max_bwd_serial(g, maxidx, gw):
    if cuda.grid(1) == 0:
        B, D = maxidx.shape
        for b in range(B):
            for d in range(D):
                j = maxidx[b, d]
                if j >= 0:
                    gw[j, d] += g[b, d]


def embedding_bag_max_bwd_cuda(g, maxidx, gw):
    """gw (zeroed here): every output element's gradient goes to the row that was its max;
    returns the first bag whose saved max row is outside gw (nothing added then), or -1."""
    V, D = gw.shape
    if V * D:
        _zero2[grid(V * D)](gw)
    B = g.shape[0]
    if not (B * D):
        return -1
    res = sentinel(B)
    _max_bad[grid(B * D)](maxidx, V, res)
    k = read_first(res, B)
    if k >= 0:
        return k
    if has_atomic_add(gw.dtype):
        _max_bwd_atomic(np.dtype(gw.dtype))[grid(B * D)](g, maxidx, gw)
    else:
        _max_bwd_serial[1, 1](g, maxidx, gw)
    return -1


@cuda.jit
def _psw_bwd(g, w, idx, bag_of, pad, out):
    D = w.shape[1]
    for i in range(cuda.grid(1), idx.shape[0], cuda.gridsize(1)):
        b = bag_of[i]
        j = idx[i]
        if b < 0 or j == pad:
            out[i] = 0
            continue
        acc = float64(0.0)
        for d in range(D):
            acc += g[b, d] * w[j, d]
        out[i] = acc


def embedding_bag_psw_bwd_cuda(g, w, idx, bag_of, pad, out):
    """out[i] = <g[bag_of[i]], w[idx[i]]> (0 for padding and entries in no bag); returns the
    first bad entry (nothing written then) or -1."""
    k = _check_entries(idx, bag_of, w.shape[0], g.shape[0])
    if k >= 0:
        return k
    if idx.shape[0]:
        _psw_bwd[grid(idx.shape[0])](g, w, idx, bag_of, pad, out)
    return -1
