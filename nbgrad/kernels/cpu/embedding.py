"""embedding_bag: per-bag sum / mean / max of weight rows, and the backward for the weight and
for per-sample weights.  A bag is entries [starts[b], ends[b]) of the flat index array;
``bag_of[i]`` is entry i's bag (-1: in none).  Entries equal to ``pad`` (-1: none) are skipped
(not counted in a mean).  NOTE [user indices] (kernels/cpu/index.py): the ops validate the
indices first; the kernels check every row they touch again and return the position of the
first bad one (or -1) without writing past the arrays."""

import numpy as np
from numba import njit

from .. import JIT

SUM, MEAN, MAX = 0, 1, 2


@njit(**JIT)
def embedding_bag_fwd_cpu(w, idx, starts, ends, psw, has_psw, mode, pad, out, maxidx, count):
    """out[b] = sum (mode 0, times psw[i] when ``has_psw``), mean (1) or elementwise max (2) of
    the rows w[idx[i]] of bag b; an empty bag gives zeros (maxidx -1).  Accumulates in float64;
    the max keeps the first row and replaces on a strictly greater value, as PyTorch."""
    B, D = out.shape
    V = w.shape[0]
    acc = np.empty(D, np.float64)
    for b in range(B):
        for d in range(D):
            acc[d] = 0.0
        cnt = 0
        for i in range(starts[b], ends[b]):
            j = idx[i]
            if j < 0 or j >= V:
                return i
            if j == pad:
                continue
            row = w[j]
            if mode == MAX:
                if cnt == 0:
                    for d in range(D):
                        acc[d] = row[d]
                        maxidx[b, d] = j
                else:
                    for d in range(D):
                        if row[d] > acc[d]:
                            acc[d] = row[d]
                            maxidx[b, d] = j
            else:
                s = psw[i] if has_psw else 1.0
                for d in range(D):
                    acc[d] += s * row[d]
            cnt += 1
        count[b] = cnt
        if cnt == 0:
            for d in range(D):
                out[b, d] = 0
                maxidx[b, d] = -1
        elif mode == MEAN:
            for d in range(D):
                out[b, d] = acc[d] / cnt
        else:
            for d in range(D):
                out[b, d] = acc[d]
    return -1


@njit(**JIT)
def embedding_bag_bwd_cpu(g, idx, bag_of, mult, pad, gw):
    """gw (zeroed here) += mult[i] * g[bag_of[i]] at row idx[i] for every entry in a bag that is
    not padding (sum and mean: ``mult`` holds 1, psw[i] or 1 / bag size, times the frequency
    scale)."""
    V, D = gw.shape
    gw[...] = 0
    for i in range(idx.shape[0]):
        b = bag_of[i]
        j = idx[i]
        if j < 0 or j >= V or b >= g.shape[0]:
            return i
        if b < 0 or j == pad:
            continue
        m = mult[i]
        src = g[b]
        dst = gw[j]
        for d in range(D):
            dst[d] += m * src[d]
    return -1


@njit(**JIT)
def embedding_bag_max_bwd_cpu(g, maxidx, gw):
    """gw (zeroed here): every output element's gradient goes to the row that was its max."""
    V, D = gw.shape
    gw[...] = 0
    for b in range(g.shape[0]):
        for d in range(D):
            j = maxidx[b, d]
            if j < 0:
                continue
            if j >= V:
                return b
            gw[j, d] += g[b, d]
    return -1


@njit(**JIT)
def embedding_bag_psw_bwd_cpu(g, w, idx, bag_of, pad, out):
    """out[i] = <g[bag_of[i]], w[idx[i]]> (0 for padding and entries in no bag)."""
    V, D = w.shape
    for i in range(idx.shape[0]):
        b = bag_of[i]
        j = idx[i]
        if j < 0 or j >= V or b >= g.shape[0]:
            return i
        if b < 0 or j == pad:
            out[i] = 0
            continue
        acc = 0.0
        for d in range(D):
            acc += g[b, d] * w[j, d]
        out[i] = acc
    return -1
