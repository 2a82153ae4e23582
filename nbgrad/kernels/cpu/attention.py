"""Scaled dot-product attention, forward and backward, flash-attention style: the scores of one
query row are computed a block of keys at a time and folded into a running (max, sum, output)
with the online softmax, so no (L, S) attention matrix is ever stored; the forward saves the
per-row logsumexp, from which the backward recomputes each probability.

Layout: q (B, H, L, E), k (B, Hk, S, E), v (B, Hk, S, Ev), C-contiguous, one float dtype;
query head h reads key/value head h // (H // Hk) (grouped-query attention when Hk < H).  The
additive float mask has shape (Bm, Hm, Lm, Sm), each dim either 1 (broadcast) or full; a
(1, 1, 1, 1) zero array stands for no mask.  ``causal`` keeps key j <= i for query row i
(top-left aligned, PyTorch's ``ones(L, S).tril()``).  ``scale`` has the data's dtype so float32
rows stay float32 (SIMD-friendly).

A row whose scores are all -inf (fully masked) gives a zero output row, logsumexp -inf and zero
gradients, as PyTorch's ``_safe_softmax``; a NaN score makes the row NaN."""

import numpy as np
from numba import njit

from .. import JIT

BLOCK = 64  # keys per online-softmax step (one score buffer of this length per row)


@njit(**JIT)
def sdpa_fwd_cpu(q, k, v, mask, causal, scale, out, lse):
    """out (B, H, L, Ev) and lse (B, H, L) are written here."""
    B, H, L, E = q.shape
    Hk, S = k.shape[1], k.shape[2]
    Ev = v.shape[3]
    G = H // Hk
    Bm, Hm, Lm, Sm = mask.shape
    ms = 1 if Sm > 1 else 0
    consts = np.zeros(2, q.dtype)
    consts[1] = -np.inf
    zero, ninf = consts[0], consts[1]
    sbuf = np.empty(BLOCK, q.dtype)
    acc = np.empty(Ev, q.dtype)
    for b in range(B):
        mb = b if Bm > 1 else 0
        for h in range(H):
            hk = h // G
            mh = h if Hm > 1 else 0
            kb = k[b, hk]
            vb = v[b, hk]
            for i in range(L):
                mrow = mask[mb, mh, i if Lm > 1 else 0]
                qi = q[b, h, i]
                n = min(S, i + 1) if causal else S
                m = ninf
                l = zero
                for e in range(Ev):
                    acc[e] = zero
                for j0 in range(0, n, BLOCK):
                    j1 = min(n, j0 + BLOCK)
                    bm = ninf
                    for j in range(j0, j1):
                        kj = kb[j]
                        s = zero
                        for e in range(E):
                            s += qi[e] * kj[e]
                        s = s * scale + mrow[j * ms]
                        sbuf[j - j0] = s
                        if s > bm or s != s:
                            bm = s
                    if bm != bm or bm > m:
                        mnew = bm
                    else:
                        mnew = m
                    if mnew == ninf:  # every key so far masked: nothing to add yet
                        continue
                    alpha = np.exp(m - mnew)
                    l *= alpha
                    for e in range(Ev):
                        acc[e] *= alpha
                    for j in range(j0, j1):
                        p = np.exp(sbuf[j - j0] - mnew)
                        l += p
                        vj = vb[j]
                        for e in range(Ev):
                            acc[e] += p * vj[e]
                    m = mnew
                orow = out[b, h, i]
                if m == ninf:  # fully masked row: zeros (PyTorch's _safe_softmax)
                    for e in range(Ev):
                        orow[e] = zero
                    lse[b, h, i] = ninf
                else:
                    inv = 1 / l
                    for e in range(Ev):
                        orow[e] = acc[e] * inv
                    lse[b, h, i] = m + np.log(l)


@njit(**JIT)
def sdpa_bwd_cpu(q, k, v, mask, causal, scale, out, g, lse, dq, dk, dv):
    """dq (B, H, L, E), dk (B, Hk, S, E), dv (B, Hk, S, Ev) are overwritten.  With
    P = exp(s - lse): dV += P^T g, dS = P * (g v^T - rowsum(g * out)), dQ = scale dS k,
    dK = scale dS^T q, each probability recomputed from the saved logsumexp."""
    B, H, L, E = q.shape
    Hk, S = k.shape[1], k.shape[2]
    Ev = v.shape[3]
    G = H // Hk
    Bm, Hm, Lm, Sm = mask.shape
    ms = 1 if Sm > 1 else 0
    consts = np.zeros(2, q.dtype)
    consts[1] = -np.inf
    zero, ninf = consts[0], consts[1]
    dq[...] = zero
    dk[...] = zero
    dv[...] = zero
    for b in range(B):
        mb = b if Bm > 1 else 0
        for h in range(H):
            hk = h // G
            mh = h if Hm > 1 else 0
            kb = k[b, hk]
            vb = v[b, hk]
            dkb = dk[b, hk]
            dvb = dv[b, hk]
            for i in range(L):
                li = lse[b, h, i]
                if li == ninf:  # fully masked row: no gradient
                    continue
                mrow = mask[mb, mh, i if Lm > 1 else 0]
                qi = q[b, h, i]
                gi = g[b, h, i]
                oi = out[b, h, i]
                dqi = dq[b, h, i]
                d = zero
                for e in range(Ev):
                    d += gi[e] * oi[e]
                n = min(S, i + 1) if causal else S
                for j in range(n):
                    kj = kb[j]
                    s = zero
                    for e in range(E):
                        s += qi[e] * kj[e]
                    p = np.exp(s * scale + mrow[j * ms] - li)
                    vj = vb[j]
                    dvj = dvb[j]
                    dp = zero
                    for e in range(Ev):
                        dp += gi[e] * vj[e]
                        dvj[e] += p * gi[e]
                    ds = p * (dp - d) * scale
                    dkj = dkb[j]
                    for e in range(E):
                        dqi[e] += ds * kj[e]
                        dkj[e] += ds * qi[e]
