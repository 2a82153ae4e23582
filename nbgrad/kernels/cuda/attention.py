"""CUDA twins of kernels/cpu/attention.py: scaled dot-product attention, forward and backward,
flash-attention style (no (L, S) matrix is stored; the forward saves the per-row logsumexp).

Same layout and arguments as the CPU kernels: q (B, H, L, E), k (B, Hk, S, E), v (B, Hk, S, Ev),
query head h reads key/value head h // (H // Hk); the additive mask (Bm, Hm, Lm, Sm) broadcasts
along its size-1 dims; ``causal`` keeps key j <= i; ``scale`` has the data's dtype.

Forward: one block per query row (grid-stride over the B*H*L rows).  The keys go by in chunks
of one per thread: each thread computes the score of its key into shared memory, every thread
scans the chunk's maximum (the same NaN-propagating select as the CPU), each thread turns its
score into a probability, and thread e folds the chunk into output column e with the online
softmax rescale (the output row itself is the accumulator, so no per-thread array of length
Ev is needed).  A fully masked row gives zeros and logsumexp -inf, a NaN score a NaN row.

Backward: deterministic, no atomics.  ``rowsum(g * out)`` goes to a scratch array first; then
dq is computed one block per query row (keys in chunks, dS in shared memory, thread e sums
dS k[:, e]), and dk, dv one block per key row (query rows of every head of the group in
chunks, P and dS in shared memory).  Each probability is recomputed from the saved
logsumexp in both, as on the CPU; rows whose logsumexp is -inf contribute nothing (a select:
``0 * g`` would turn an Inf in g into NaN).

``_exp``/``_log`` are ``math``'s on a GPU (numba-cuda lowers no ``np.exp``) and numpy's under
the simulator (float32 stays float32; ``log(0)`` is -inf, not a ``ValueError``).

The chunk length is the block size (the CPU's is 64 keys), so the sums run in another order:
results agree with the CPU to rounding.
"""

import math

import numpy as np
from numba import cuda, float32, float64, int32

from .config import REDUCE_THREADS, SIM, grid

__all__ = ["sdpa_fwd_cuda", "sdpa_bwd_cuda"]

_exp, _log = (np.exp, np.log) if SIM else (math.exp, math.log)

TPB = REDUCE_THREADS  # threads per block = keys (or query rows) per chunk


def _kernels(ftype):
    """The kernels for one dtype (shared arrays need their dtype at compile time)."""

    @cuda.jit
    def fwd(q, k, v, mask, causal, scale, out, lse, zero, one, ninf):
        B, H, L, E = q.shape
        Hk, S = k.shape[1], k.shape[2]
        Ev = v.shape[3]
        G = H // Hk
        Bm, Hm, Lm, Sm = mask.shape
        ms = 1 if Sm > 1 else 0
        sbuf = cuda.shared.array(TPB, ftype)
        pbuf = cuda.shared.array(TPB, ftype)
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for r in range(cuda.blockIdx.x, B * H * L, cuda.gridDim.x):
            b = r // (H * L)
            h = (r // L) % H
            i = r % L
            hk = h // G
            mb = b if Bm > 1 else 0
            mh = h if Hm > 1 else 0
            mi = i if Lm > 1 else 0
            n = min(S, i + 1) if causal else S
            for e in range(tid, Ev, nt):
                out[b, h, i, e] = zero
            m = ninf
            l = zero
            for j0 in range(0, n, nt):
                j = j0 + tid
                s = ninf
                if j < n:
                    acc = zero
                    for e in range(E):
                        acc += q[b, h, i, e] * k[b, hk, j, e]
                    s = acc * scale + mask[mb, mh, mi, j * ms]
                sbuf[tid] = s
                cuda.syncthreads()
                cnt = min(nt, n - j0)
                bm = ninf
                for t in range(cnt):
                    st = sbuf[t]
                    if st > bm or st != st:
                        bm = st
                mnew = bm if (bm != bm or bm > m) else m
                live = mnew != ninf  # the same in every thread: every key so far masked?
                pbuf[tid] = _exp(s - mnew) if live else zero
                cuda.syncthreads()
                if live:
                    alpha = _exp(m - mnew)
                    l = l * alpha
                    for t in range(cnt):
                        l += pbuf[t]
                    for e in range(tid, Ev, nt):
                        a = out[b, h, i, e] * alpha
                        for t in range(cnt):
                            a += pbuf[t] * v[b, hk, j0 + t, e]
                        out[b, h, i, e] = a
                    m = mnew
            if m == ninf:  # fully masked row: zeros (PyTorch's _safe_softmax)
                if tid == 0:
                    lse[b, h, i] = ninf
            else:
                inv = one / l
                for e in range(tid, Ev, nt):
                    out[b, h, i, e] = out[b, h, i, e] * inv
                if tid == 0:
                    lse[b, h, i] = m + _log(l)

    @cuda.jit
    def bwd_dq(q, k, v, mask, causal, scale, g, lse, D, dq, zero, ninf):
        B, H, L, E = q.shape
        Hk, S = k.shape[1], k.shape[2]
        Ev = v.shape[3]
        G = H // Hk
        Bm, Hm, Lm, Sm = mask.shape
        ms = 1 if Sm > 1 else 0
        dsbuf = cuda.shared.array(TPB, ftype)
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for r in range(cuda.blockIdx.x, B * H * L, cuda.gridDim.x):
            b = r // (H * L)
            h = (r // L) % H
            i = r % L
            hk = h // G
            mb = b if Bm > 1 else 0
            mh = h if Hm > 1 else 0
            mi = i if Lm > 1 else 0
            for e in range(tid, E, nt):
                dq[b, h, i, e] = zero
            li = lse[b, h, i]
            n = min(S, i + 1) if causal else S
            if li == ninf:  # fully masked row: no gradient (uniform over the block)
                n = 0
            d = D[b, h, i]
            for j0 in range(0, n, nt):
                j = j0 + tid
                ds = zero
                if j < n:
                    s = zero
                    for e in range(E):
                        s += q[b, h, i, e] * k[b, hk, j, e]
                    p = _exp(s * scale + mask[mb, mh, mi, j * ms] - li)
                    dp = zero
                    for e in range(Ev):
                        dp += g[b, h, i, e] * v[b, hk, j, e]
                    ds = p * (dp - d) * scale
                dsbuf[tid] = ds
                cuda.syncthreads()
                cnt = min(nt, n - j0)
                for e in range(tid, E, nt):
                    a = dq[b, h, i, e]
                    for t in range(cnt):
                        a += dsbuf[t] * k[b, hk, j0 + t, e]
                    dq[b, h, i, e] = a
                cuda.syncthreads()

    @cuda.jit
    def bwd_dkdv(q, k, v, mask, causal, scale, g, lse, D, dk, dv, zero, ninf):
        B, H, L, E = q.shape
        Hk, S = k.shape[1], k.shape[2]
        Ev = v.shape[3]
        G = H // Hk
        Bm, Hm, Lm, Sm = mask.shape
        ms = 1 if Sm > 1 else 0
        pbuf = cuda.shared.array(TPB, ftype)
        dsbuf = cuda.shared.array(TPB, ftype)
        vbuf = cuda.shared.array(TPB, int32)  # 1: the row has a gradient (lse > -inf)
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for r in range(cuda.blockIdx.x, B * Hk * S, cuda.gridDim.x):
            b = r // (Hk * S)
            hk = (r // S) % Hk
            j = r % S
            mb = b if Bm > 1 else 0
            for e in range(tid, E, nt):
                dk[b, hk, j, e] = zero
            for e in range(tid, Ev, nt):
                dv[b, hk, j, e] = zero
            i0 = j if causal else 0  # causal: key j is seen by the rows i >= j
            for h in range(hk * G, hk * G + G):
                mh = h if Hm > 1 else 0
                for c0 in range(i0, L, nt):
                    i = c0 + tid
                    p = zero
                    ds = zero
                    ok = 0
                    if i < L:
                        li = lse[b, h, i]
                        if li != ninf:
                            ok = 1
                            s = zero
                            for e in range(E):
                                s += q[b, h, i, e] * k[b, hk, j, e]
                            mi = i if Lm > 1 else 0
                            p = _exp(s * scale + mask[mb, mh, mi, j * ms] - li)
                            dp = zero
                            for e in range(Ev):
                                dp += g[b, h, i, e] * v[b, hk, j, e]
                            ds = p * (dp - D[b, h, i]) * scale
                    pbuf[tid] = p
                    dsbuf[tid] = ds
                    vbuf[tid] = ok
                    cuda.syncthreads()
                    cnt = min(nt, L - c0)
                    for e in range(tid, Ev, nt):
                        a = dv[b, hk, j, e]
                        for t in range(cnt):
                            if vbuf[t] != 0:
                                a += pbuf[t] * g[b, h, c0 + t, e]
                        dv[b, hk, j, e] = a
                    for e in range(tid, E, nt):
                        a = dk[b, hk, j, e]
                        for t in range(cnt):
                            if vbuf[t] != 0:
                                a += dsbuf[t] * q[b, h, c0 + t, e]
                        dk[b, hk, j, e] = a
                    cuda.syncthreads()

    return fwd, bwd_dq, bwd_dkdv


@cuda.jit
def _rowdot(g, out, D, zero):
    # D[b, h, i] = sum_e g * out (one thread per row)
    B, H, L, Ev = g.shape
    for r in range(cuda.grid(1), B * H * L, cuda.gridsize(1)):
        b = r // (H * L)
        h = (r // L) % H
        i = r % L
        d = zero
        for e in range(Ev):
            d += g[b, h, i, e] * out[b, h, i, e]
        D[b, h, i] = d


_K = {np.dtype(np.float32): _kernels(float32), np.dtype(np.float64): _kernels(float64)}


def _blocks(rows):
    return grid(rows * TPB, TPB)


def _consts(a):
    t = np.dtype(a.dtype).type
    return t(0), t(-np.inf)


def sdpa_fwd_cuda(q, k, v, mask, causal, scale, out, lse):
    """out (B, H, L, Ev) and lse (B, H, L) are written here."""
    B, H, L, _ = q.shape
    rows = B * H * L
    if rows == 0:
        return
    fwd = _K[np.dtype(q.dtype)][0]
    zero, ninf = _consts(q)
    one = np.dtype(q.dtype).type(1)
    fwd[_blocks(rows)](q, k, v, mask, bool(causal), scale, out, lse, zero, one, ninf)


def sdpa_bwd_cuda(q, k, v, mask, causal, scale, out, g, lse, dq, dk, dv):
    """dq (B, H, L, E), dk (B, Hk, S, E), dv (B, Hk, S, Ev) are overwritten.  With
    P = exp(s - lse): dV = P^T g, dS = P * (g v^T - rowsum(g * out)), dQ = scale dS k,
    dK = scale dS^T q, each probability recomputed from the saved logsumexp."""
    B, H, L, _ = q.shape
    Hk, S = k.shape[1], k.shape[2]
    _, bwd_dq, bwd_dkdv = _K[np.dtype(q.dtype)]
    zero, ninf = _consts(q)
    rows, keys = B * H * L, B * Hk * S
    D = cuda.device_array((B, H, L), q.dtype)
    if rows:
        _rowdot[grid(rows)](g, out, D, zero)
        bwd_dq[_blocks(rows)](q, k, v, mask, bool(causal), scale, g, lse, D, dq, zero, ninf)
    if keys:
        bwd_dkdv[_blocks(keys)](q, k, v, mask, bool(causal), scale, g, lse, D, dk, dv, zero, ninf)
