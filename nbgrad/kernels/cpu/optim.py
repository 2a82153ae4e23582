"""Fused optimizer updates: one pass over a parameter and its state per step.

Each kernel takes 1-D C-contiguous arrays of one float dtype and scalars already cast to that
dtype (a float64 scalar would make the loop compute in double).  The arithmetic follows the
order of PyTorch's single-tensor (for-loop) CPU implementation op by op, so results agree to
rounding; see nbgrad/optim/_functional.py for the same maths written with numpy ufuncs.

NOTE [optim kernel flags]: strict IEEE arithmetic (no fastmath: ``contract``/``arcp``/``afn``
would fuse or approximate the ops PyTorch rounds one by one), ``error_model='numpy'`` so the
divisions do not block vectorisation.  Measured in docs/optim-performance.md.
"""

import numpy as np
from numba import njit

from ... import _config

_OPT_JIT = dict(nogil=True, cache=_config.USE_DISK_CACHE, error_model="numpy")


@njit(**_OPT_JIT)
def _lerp(a, b, w, one_minus_w, small):
    # ATen lerp: small weight (|w| < 0.5) -> a + w (b - a), else b - (b - a)(1 - w)
    if small:
        return a + w * (b - a)
    return b - (b - a) * one_minus_w


@njit(**_OPT_JIT)
def sgd_step(
    p, g, buf, maximize, first, use_momentum, nesterov, wd, use_wd, momentum, one_minus_damp, neg_lr
):
    """g <- (+/-)g [+ wd p]; buf <- g (first step) or momentum buf + (1-dampening) g;
    g <- g + momentum buf (nesterov) or buf; p <- p - lr g."""
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        if use_momentum:
            if first:
                b = gi
            else:
                b = buf[i] * momentum + one_minus_damp * gi
            buf[i] = b
            if nesterov:
                gi = gi + momentum * b
            else:
                gi = b
        p[i] = p[i] + neg_lr * gi


@njit(**_OPT_JIT)
def adam_step(
    p,
    g,
    m,
    v,
    vmax,
    maximize,
    amsgrad,
    wd,
    coupled_wd,
    decay_mul,
    decoupled_wd,
    w1,
    one_minus_w1,
    w1_small,
    beta2,
    one_minus_beta2,
    bc2_sqrt,
    eps,
    neg_step_size,
):
    """Adam/AdamW: [p <- p (1 - lr wd)]; g <- (+/-)g [+ wd p]; m <- lerp(m, g, 1-beta1);
    v <- beta2 v + (1-beta2) g g; [vmax <- max(vmax, v)];
    p <- p - step_size m / (sqrt(v or vmax) / sqrt(1-beta2^t) + eps)."""
    for i in range(p.size):
        pi = p[i]
        if decoupled_wd:
            pi = pi * decay_mul
        gi = -g[i] if maximize else g[i]
        if coupled_wd:
            gi = gi + wd * pi
        mi = _lerp(m[i], gi, w1, one_minus_w1, w1_small)
        m[i] = mi
        vi = v[i] * beta2 + one_minus_beta2 * gi * gi
        v[i] = vi
        if amsgrad:
            vm = vmax[i]
            if vi > vm or vi != vi:
                vm = vi
            vmax[i] = vm
            vi = vm
        denom = np.sqrt(vi) / bc2_sqrt + eps
        p[i] = pi + neg_step_size * mi / denom


@njit(**_OPT_JIT)
def rmsprop_step(
    p,
    g,
    sq,
    gavg,
    buf,
    maximize,
    centered,
    use_momentum,
    wd,
    use_wd,
    alpha,
    one_minus_alpha,
    oma_small,
    alpha_lerp,
    momentum,
    eps,
    neg_lr,
):
    """RMSprop: g <- (+/-)g [+ wd p]; sq <- alpha sq + (1-alpha) g g;
    avg <- sqrt(sq - gavg^2), gavg <- lerp(gavg, g, 1-alpha) (centered), or sqrt(sq); avg += eps;
    buf <- momentum buf + g / avg, p <- p - lr buf (momentum) or p <- p - lr g / avg."""
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        s = sq[i] * alpha + one_minus_alpha * gi * gi
        sq[i] = s
        if centered:
            ga = _lerp(gavg[i], gi, one_minus_alpha, alpha_lerp, oma_small)
            gavg[i] = ga
            avg = np.sqrt(s + (-ga) * ga)
        else:
            avg = np.sqrt(s)
        avg = avg + eps
        if use_momentum:
            b = buf[i] * momentum + gi / avg
            buf[i] = b
            p[i] = p[i] + neg_lr * b
        else:
            p[i] = p[i] + neg_lr * gi / avg


@njit(**_OPT_JIT)
def adagrad_step(p, g, s, maximize, wd, use_wd, eps, neg_clr):
    """Adagrad: g <- (+/-)g [+ wd p]; s <- s + g g; p <- p - clr g / (sqrt(s) + eps)."""
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        si = s[i] + gi * gi
        s[i] = si
        p[i] = p[i] + neg_clr * gi / (np.sqrt(si) + eps)


@njit(**_OPT_JIT)
def adadelta_step(p, g, sq, acc, maximize, wd, use_wd, rho, one_minus_rho, eps, neg_lr):
    """Adadelta: g <- (+/-)g [+ wd p]; sq <- rho sq + (1-rho) g g;
    delta <- sqrt(acc + eps) / sqrt(sq + eps) g; acc <- rho acc + (1-rho) delta delta;
    p <- p - lr delta."""
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        si = sq[i] * rho + one_minus_rho * gi * gi
        sq[i] = si
        delta = np.sqrt(acc[i] + eps) / np.sqrt(si + eps) * gi
        acc[i] = acc[i] * rho + one_minus_rho * delta * delta
        p[i] = p[i] + neg_lr * delta


@njit(**_OPT_JIT)
def adamax_step(p, g, m, u, maximize, wd, use_wd, w1, one_minus_w1, w1_small, beta2, eps, neg_clr):
    """Adamax: g <- (+/-)g [+ wd p]; m <- lerp(m, g, 1-beta1); u <- max(beta2 u, |g| + eps)
    (NaN propagates, as torch.maximum); p <- p - lr / (1 - beta1^t) m / u."""
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        mi = _lerp(m[i], gi, w1, one_minus_w1, w1_small)
        m[i] = mi
        a = u[i] * beta2
        b = np.abs(gi) + eps
        ui = a if (a > b or a != a) else b
        u[i] = ui
        p[i] = p[i] + neg_clr * mi / ui


@njit(**_OPT_JIT)
def nadam_step(
    p,
    g,
    m,
    v,
    maximize,
    wd,
    coupled_wd,
    decay_mul,
    decoupled_wd,
    w1,
    one_minus_w1,
    w1_small,
    beta2,
    one_minus_beta2,
    bc2,
    eps,
    c_grad,
    c_avg,
):
    """NAdam: [p <- p (1 - lr wd)]; g <- (+/-)g [+ wd p]; m <- lerp(m, g, 1-beta1);
    v <- beta2 v + (1-beta2) g g; d <- sqrt(v / (1-beta2^t)) + eps;
    p <- p + c_grad g / d, then p <- p + c_avg m / d (two addcdiv_, rounded one by one)."""
    for i in range(p.size):
        pi = p[i]
        if decoupled_wd:
            pi = pi * decay_mul
        gi = -g[i] if maximize else g[i]
        if coupled_wd:
            gi = gi + wd * pi
        mi = _lerp(m[i], gi, w1, one_minus_w1, w1_small)
        m[i] = mi
        vi = v[i] * beta2 + one_minus_beta2 * gi * gi
        v[i] = vi
        d = np.sqrt(vi / bc2) + eps
        pi = pi + c_grad * gi / d
        p[i] = pi + c_avg * mi / d


@njit(**_OPT_JIT)
def radam_step(
    p,
    g,
    m,
    v,
    maximize,
    wd,
    coupled_wd,
    decay_mul,
    decoupled_wd,
    w1,
    one_minus_w1,
    w1_small,
    beta2,
    one_minus_beta2,
    bc1,
    lr,
    rectify,
    one,
    bc2_sqrt,
    eps,
    rect,
):
    """RAdam: [p <- p (1 - lr wd)]; g <- (+/-)g [+ wd p]; m <- lerp(m, g, 1-beta1);
    v <- beta2 v + (1-beta2) g g; then with rho_t > 5 (``rectify``)
    p <- p - m / bc1 * lr * (1 / (sqrt(v) + eps) * sqrt(bc2)) * rect, else p <- p - m / bc1 * lr
    (PyTorch's op order: ``float / tensor`` is a reciprocal times the float)."""
    for i in range(p.size):
        pi = p[i]
        if decoupled_wd:
            pi = pi * decay_mul
        gi = -g[i] if maximize else g[i]
        if coupled_wd:
            gi = gi + wd * pi
        mi = _lerp(m[i], gi, w1, one_minus_w1, w1_small)
        m[i] = mi
        vi = v[i] * beta2 + one_minus_beta2 * gi * gi
        v[i] = vi
        u = mi / bc1 * lr
        if rectify:
            u = u * (one / (np.sqrt(vi) + eps) * bc2_sqrt) * rect
        p[i] = pi - u
