"""Loss kernels, forward and fused backward.

* ``nll_*``: negative log-likelihood over the class axis of (outer, C, inner), optionally fused
  with a max-shifted log-softmax (cross_entropy): logits of +-1e4 stay finite.  Per-sample
  outputs (loss, target weight, and the row's max and log-sum-exp) are reduced by the caller;
  the backward takes one upstream gradient per sample (or a single scalar for mean/sum) and
  never forms log-probs.  The fused forward reads each row twice (max, sum of exp: vectorised
  with kernels/cpu/vmath.py, NOTE [vmath]), the backward once (softmax - onehot from the saved
  max and log-sum-exp).
* ``bce_*`` / ``bcel_*``: binary cross-entropy on probabilities / logits over 1-D buffers.
* ``mse_*``: squared error over 1-D buffers.
Forward kernels return the float64 sum of the per-element losses they write.  The NLL kernels
index memory with user targets: ops/nn/loss.py validates them first, forward and backward, and
the kernels check each one again (NOTE [user indices] in kernels/cpu/index.py).
"""

import numpy as np
from numba import njit

from .. import JIT
from .vmath import cast_like, exp_flush, exp_sub2, row_max, sub2, sum_exp


@njit(**JIT)
def nll_fwd_cpu(x, t, w, ignore_index, smoothing, fused, loss, wt, stats):
    """Per-sample losses into ``loss`` and target weights into ``wt`` (outer, inner); returns
    their float64 sum.  fused (cross_entropy): log-softmax first, from the row's max m and
    log(sum exp(x - m)), kept in ``stats`` (outer, inner, 2) for the backward."""
    outer, C, inner = x.shape
    zero = cast_like(0.0, x[0, 0, 0])
    total = 0.0
    if fused and inner == 1:  # rows: vectorised passes over each (cached) row
        x2 = x.reshape((outer, C))
        for o in range(outer):
            ti = t[o, 0]
            if ti == ignore_index:
                loss[o, 0] = 0
                wt[o, 0] = 0
                stats[o, 0, 0] = 0
                stats[o, 0, 1] = 0
                continue
            if ti < 0 or ti >= C:  # the caller validated: a last line of defence
                raise IndexError("Target is out of bounds.")
            row = x2[o]
            m = row_max(row)
            m = zero if m == -np.inf else m
            ls = np.log(sum_exp(row, m))
            stats[o, 0, 0] = m
            stats[o, 0, 1] = ls
            mf = np.float64(m)
            wi = w[ti]
            val = -wi * sub2(row[ti], mf, ls)  # log-probabilities as (x - m) - ls: x - (m + ls)
            if smoothing > 0:  # would lose ls next to a large m (logits of 1e30)
                sm = 0.0
                for k in range(C):
                    sm -= w[k] * sub2(row[k], mf, ls)
                val = (1.0 - smoothing) * val + smoothing / C * sm
            loss[o, 0] = val
            wt[o, 0] = wi
            total += val
        return total
    if fused:  # (outer, C, inner): the same passes, vectorised across inner
        m = np.empty(inner, x.dtype)
        s = np.empty(inner, np.float64)
        for o in range(outer):
            xo = x[o]
            m[:] = xo[0]
            for k in range(1, C):
                xr = xo[k]
                for i in range(inner):
                    v = xr[i]
                    m[i] = v if v > m[i] else m[i]
            for i in range(inner):
                m[i] = zero if m[i] == -np.inf else m[i]
            s[:] = 0.0
            for k in range(C):
                xr = xo[k]
                for i in range(inner):
                    s[i] += exp_flush(xr[i] - m[i])
            for i in range(inner):
                stats[o, i, 0] = m[i]
                stats[o, i, 1] = np.log(s[i])
    for o in range(outer):
        for i in range(inner):
            ti = t[o, i]
            if ti == ignore_index:
                loss[o, i] = 0
                wt[o, i] = 0
                if fused:
                    stats[o, i, 0] = 0
                    stats[o, i, 1] = 0
                continue
            if ti < 0 or ti >= C:
                raise IndexError("Target is out of bounds.")
            mf = stats[o, i, 0] if fused else 0.0
            ls = stats[o, i, 1] if fused else 0.0
            wi = w[ti]
            val = -wi * sub2(x[o, ti, i], mf, ls)
            if smoothing > 0:
                sm = 0.0
                for k in range(C):
                    sm -= w[k] * sub2(x[o, k, i], mf, ls)
                val = (1.0 - smoothing) * val + smoothing / C * sm
            loss[o, i] = val
            wt[o, i] = wi
            total += val
    return total


@njit(**JIT)
def nll_bwd_cpu(x, t, w, ignore_index, smoothing, fused, stats, gs, gx):
    """gs: (outer, inner) per-sample upstream gradients, or (1, 1) for one shared scalar.
    fused: d/dx_c = gs * ((1-eps) * w_t * (p_c - [c == t]) + eps/C * (sum(w) * p_c - w_c)),
    p_c = exp((x_c - m) - log s) from the forward's ``stats``: one pass over x."""
    outer, C, inner = x.shape
    shared = gs.shape[0] == 1 and gs.shape[1] == 1
    ref = x[0, 0, 0]
    wsum = 0.0
    if smoothing > 0:
        for k in range(C):
            wsum += w[k]
    wsf = cast_like(wsum, ref)
    if not fused:
        for o in range(outer):
            for k in range(C):
                for i in range(inner):
                    gx[o, k, i] = 0
            for i in range(inner):
                ti = t[o, i]
                if ti == ignore_index:
                    continue
                if ti < 0 or ti >= C:
                    raise IndexError("Target is out of bounds.")
                gi = gs[0, 0] if shared else gs[o, i]
                gx[o, ti, i] = -gi * w[ti]
        return
    if inner == 1:
        x2 = x.reshape((outer, C))
        g2 = gx.reshape((outer, C))
        for o in range(outer):
            grow = g2[o]
            ti = t[o, 0]
            if ti == ignore_index:
                grow[:] = 0
                continue
            if ti < 0 or ti >= C:
                raise IndexError("Target is out of bounds.")
            row = x2[o]
            gi = gs[0, 0] if shared else gs[o, 0]
            a = cast_like(gi * (1.0 - smoothing) * w[ti], ref)
            m = cast_like(stats[o, 0, 0], ref)
            lsm = cast_like(stats[o, 0, 1], ref)
            if smoothing > 0:
                b = cast_like(gi * smoothing / C, ref)
                for k in range(C):
                    p = exp_sub2(row[k], m, lsm)
                    grow[k] = a * p + b * (wsf * p - w[k])
            else:
                for k in range(C):
                    grow[k] = a * exp_sub2(row[k], m, lsm)
            grow[ti] -= a
        return
    a = np.empty(inner, x.dtype)
    b = np.empty(inner, x.dtype)
    m = np.empty(inner, x.dtype)
    lsm = np.empty(inner, x.dtype)
    for o in range(outer):
        for i in range(inner):
            ti = t[o, i]
            if ti == ignore_index:  # zeroed below
                a[i] = 0
                b[i] = 0
                m[i] = 0
                lsm[i] = 0
                continue
            if ti < 0 or ti >= C:
                raise IndexError("Target is out of bounds.")
            gi = gs[0, 0] if shared else gs[o, i]
            a[i] = gi * (1.0 - smoothing) * w[ti]
            b[i] = gi * smoothing / C
            m[i] = stats[o, i, 0]
            lsm[i] = stats[o, i, 1]
        xo = x[o]
        go = gx[o]
        for k in range(C):
            xr = xo[k]
            gr = go[k]
            wk = w[k]
            if smoothing > 0:
                for i in range(inner):
                    p = exp_sub2(xr[i], m[i], lsm[i])
                    gr[i] = a[i] * p + b[i] * (wsf * p - wk)
            else:
                for i in range(inner):
                    gr[i] = a[i] * exp_sub2(xr[i], m[i], lsm[i])
        for i in range(inner):
            ti = t[o, i]
            if ti == ignore_index:
                for k in range(C):
                    go[k, i] = 0
            else:
                go[ti, i] -= a[i]


@njit(**JIT)
def bce_fwd_cpu(x, t, w, out):
    """-w * (t * max(log x, -100) + (1 - t) * max(log1p(-x), -100))."""
    total = 0.0
    for k in range(x.size):
        xi = x[k]
        lx = max(np.log(xi), -100.0)
        l1 = max(np.log1p(-xi), -100.0)
        v = w[k] * ((t[k] - 1.0) * l1 - t[k] * lx)
        out[k] = v
        total += v
    return total


@njit(**JIT)
def bce_bwd_cpu(x, t, w, g, scale, gx, gt):
    """gx = g * w * (x - t) / max((1 - x) * x, 1e-12);  gt = g * w * (log1p(-x) - log x).
    g has one element (shared) or x.size elements; results are multiplied by ``scale``."""
    shared = g.size == 1
    for k in range(x.size):
        gk = (g[0] if shared else g[k]) * scale * w[k]
        xi = x[k]
        gx[k] = gk * (xi - t[k]) / max((1.0 - xi) * xi, 1e-12)
        gt[k] = gk * (np.log1p(-xi) - np.log(xi))


@njit(**JIT)
def _softplus_neg(x):
    """log(1 + exp(-x)) without overflow."""
    return np.log1p(np.exp(-abs(x))) + max(-x, 0.0)


@njit(**JIT)
def bcel_fwd_cpu(x, t, w, pw, out):
    """w * ((1 - t) * x + (1 + (pw - 1) * t) * softplus(-x))."""
    total = 0.0
    for k in range(x.size):
        xi = x[k]
        lw = (pw[k] - 1.0) * t[k] + 1.0
        v = w[k] * ((1.0 - t[k]) * xi + lw * _softplus_neg(xi))
        out[k] = v
        total += v
    return total


@njit(**JIT)
def bcel_bwd_cpu(x, t, w, pw, g, scale, gx, gt):
    """gx = g * w * ((pw*t + 1 - t) * sigmoid(x) - pw*t);
    gt = g * w * ((pw - 1) * softplus(-x) - x)."""
    shared = g.size == 1
    for k in range(x.size):
        gk = (g[0] if shared else g[k]) * scale * w[k]
        xi = x[k]
        if xi >= 0:
            sig = 1.0 / (1.0 + np.exp(-xi))
        else:
            e = np.exp(xi)
            sig = e / (1.0 + e)
        pt = pw[k] * t[k]
        gx[k] = gk * ((pt + 1.0 - t[k]) * sig - pt)
        gt[k] = gk * ((pw[k] - 1.0) * _softplus_neg(xi) - xi)


@njit(**JIT)
def mse_fwd_cpu(x, t, out):
    total = 0.0
    for k in range(x.size):
        d = x[k] - t[k]
        v = d * d
        out[k] = v
        total += v
    return total


@njit(**JIT)
def mse_bwd_cpu(x, t, g, scale, gx):
    """gx = 2 * g * (x - t) * scale (the target's gradient is -gx)."""
    shared = g.size == 1
    for k in range(x.size):
        gk = (g[0] if shared else g[k]) * scale
        gx[k] = 2.0 * gk * (x[k] - t[k])


@njit(**JIT)
def smooth_l1_fwd_cpu(x, t, beta, huber, out):
    """smooth_l1 (``huber`` False): 0.5 z^2 / beta below beta, z - 0.5 beta above;
    huber: 0.5 z^2 below delta (= beta), delta (z - 0.5 delta) above; z = |x - t|."""
    total = 0.0
    for k in range(x.size):
        z = abs(x[k] - t[k])
        if huber:
            v = 0.5 * z * z if z < beta else beta * (z - 0.5 * beta)
        else:
            v = 0.5 * z * z / beta if z < beta else z - 0.5 * beta
        out[k] = v
        total += v
    return total


@njit(**JIT)
def smooth_l1_bwd_cpu(x, t, g, beta, huber, scale, gx):
    """gx = g * scale * (d / beta inside (-beta, beta), else sign(d)), times delta for huber;
    d = x - t (NaN stays NaN; the target's gradient is -gx)."""
    shared = g.size == 1
    cap = beta if huber else 1.0
    inv = 1.0 if huber else 1.0 / beta
    for k in range(x.size):
        gk = (g[0] if shared else g[k]) * scale
        d = x[k] - t[k]
        if d >= beta:
            gx[k] = cap * gk
        elif d <= -beta:
            gx[k] = -cap * gk
        else:
            gx[k] = d * inv * gk
