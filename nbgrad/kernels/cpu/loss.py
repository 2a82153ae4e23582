"""Loss kernels, forward and fused backward.

* ``nll_*``: negative log-likelihood over the class axis of (outer, C, inner), optionally fused
  with a max-shifted log-softmax (cross_entropy): logits of +-1e4 stay finite.  Per-sample
  outputs (loss, target weight, log-sum-exp) are reduced by the caller; the backward takes one
  upstream gradient per sample (or a single scalar for mean/sum) and never forms log-probs.
* ``bce_*`` / ``bcel_*``: binary cross-entropy on probabilities / logits over 1-D buffers.
* ``mse_*``: squared error over 1-D buffers.
Forward kernels return the float64 sum of the per-element losses they write.  The NLL kernels
index memory with user targets: ops/nn/loss.py validates them first, forward and backward, and
the kernels check each one again (NOTE [user indices] in kernels/cpu/index.py).
"""

import numpy as np
from numba import njit

from .. import JIT
from .vformula import as_type_of, vexp


@njit(inline="always")
def _row_max(row, n, zero):
    """The max of a contiguous row, NaN if any element is NaN; an all -inf row is shifted by
    ``zero`` (its exps are then 0 and the result NaN, as PyTorch's).  ``zero`` is of the row's
    dtype, so that float32 rows stay float32 (and vectorised) downstream."""
    m = row[0]
    for k in range(1, n):
        v = row[k]
        if v > m or v != v:
            m = v
    if m == -np.inf:
        m = zero
    return m


@njit(inline="always")
def _row_expsum(row, m, n):
    """sum(exp(row - m)) in float64 over a contiguous row: ``vexp`` keeps float32 rows
    vectorised (NOTE [vectorised gates]), float64 rows use libm."""
    s = 0.0
    for k in range(n):
        s += vexp(row[k] - m)
    return s


@njit(**JIT)
def nll_fwd_cpu(x, t, w, ignore_index, smoothing, fused, loss, wt, lse):
    outer, C, inner = x.shape
    zero = np.zeros(1, x.dtype)[0]  # keeps the row max (and so every exp) in x's dtype
    total = 0.0
    for o in range(outer):
        for i in range(inner):
            ti = t[o, i]
            if ti == ignore_index:
                loss[o, i] = 0
                wt[o, i] = 0
                lse[o, i] = 0
                continue
            if ti < 0 or ti >= C:  # the caller validated: a last line of defence
                raise IndexError("Target is out of bounds.")
            ls = 0.0
            if fused:
                m = x[o, 0, i]
                for k in range(1, C):
                    v = x[o, k, i]
                    if v > m or v != v:
                        m = v
                if m == -np.inf:
                    m = zero
                s = 0.0
                for k in range(C):
                    s += np.exp(x[o, k, i] - m)
                ls = m + np.log(s)
            lse[o, i] = ls
            wi = w[ti]
            val = -wi * (x[o, ti, i] - ls)
            if smoothing > 0:
                sm = 0.0
                for k in range(C):
                    sm -= w[k] * (x[o, k, i] - ls)
                val = (1.0 - smoothing) * val + smoothing / C * sm
            loss[o, i] = val
            wt[o, i] = wi
            total += val
    return total


@njit(**JIT)
def nll_bwd_cpu(x, t, w, ignore_index, smoothing, fused, lse, gs, gx):
    """gs: (outer, inner) per-sample upstream gradients, or (1, 1) for one shared scalar.
    fused: d/dx_c = gs * ((1-eps) * w_t * (p_c - [c == t]) + eps/C * (sum(w) * p_c - w_c))."""
    outer, C, inner = x.shape
    shared = gs.shape[0] == 1 and gs.shape[1] == 1
    buf = np.zeros(1, x.dtype)  # casts log(sum) to x's dtype so exp runs in x's dtype
    wsum = 0.0
    if smoothing > 0:
        for k in range(C):
            wsum += w[k]
    for o in range(outer):
        for i in range(inner):
            ti = t[o, i]
            if ti == ignore_index:
                for k in range(C):
                    gx[o, k, i] = 0
                continue
            if ti < 0 or ti >= C:
                raise IndexError("Target is out of bounds.")
            gi = gs[0, 0] if shared else gs[o, i]
            if fused:
                a = gi * (1.0 - smoothing) * w[ti]
                b = gi * smoothing / C
                m = x[o, 0, i]
                for k in range(1, C):
                    v = x[o, k, i]
                    if v > m or v != v:
                        m = v
                if m == -np.inf:
                    m = buf[0] * 0
                buf[0] = lse[o, i] - m  # log(sum exp(x - m)): small, exact enough
                lsm = buf[0]
                for k in range(C):
                    p = np.exp((x[o, k, i] - m) - lsm)
                    gx[o, k, i] = a * p + b * (wsum * p - w[k])
                gx[o, ti, i] -= a
            else:
                for k in range(C):
                    gx[o, k, i] = 0
                gx[o, ti, i] = -gi * w[ti]


@njit(**JIT)
def ce_rows_fwd_cpu(x, t, w, ignore_index, loss, wt, lse):
    """cross_entropy without label smoothing over the rows of a C-contiguous (N, C) array:
    ``nll_fwd_cpu``'s fused case with contiguous, vectorised rows (``vexp``).  A kernel of its
    own, so that a 2-D input compiles only this (NOTE [first run])."""
    N, C = x.shape
    zero = np.zeros(1, x.dtype)[0]  # keeps the row max (and so every exp) in x's dtype
    total = 0.0
    for o in range(N):
        ti = t[o]
        if ti == ignore_index:
            loss[o] = 0
            wt[o] = 0
            lse[o] = 0
            continue
        if ti < 0 or ti >= C:  # the caller validated: a last line of defence
            raise IndexError("Target is out of bounds.")
        row = x[o]
        m = _row_max(row, C, zero)
        ls = m + np.log(_row_expsum(row, m, C))
        lse[o] = ls
        wi = w[ti]
        val = -wi * (row[ti] - ls)
        loss[o] = val
        wt[o] = wi
        total += val
    return total


@njit(**JIT)
def ce_rows_bwd_cpu(x, t, w, ignore_index, lse, gs, gx):
    """The backward of ``ce_rows_fwd_cpu``: gx = g * w_t * (softmax(x) - onehot(t)); ``gs``
    is (N,) per-row upstream gradients or (1,) for one shared scalar."""
    N, C = x.shape
    zero = np.zeros(1, x.dtype)[0]
    shared = gs.shape[0] == 1
    for o in range(N):
        ti = t[o]
        grow = gx[o]
        if ti == ignore_index:
            for k in range(C):
                grow[k] = 0
            continue
        if ti < 0 or ti >= C:
            raise IndexError("Target is out of bounds.")
        a = (gs[0] if shared else gs[o]) * w[ti]
        row = x[o]
        ls = lse[o]  # float64: x - lse is exact enough before the cast, and fast-math
        for k in range(C):  # cannot re-associate it into float32 rounding
            grow[k] = a * vexp(as_type_of(row[k] - ls, zero))
        grow[ti] -= a


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
