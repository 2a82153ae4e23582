"""CUDA twins of kernels/cpu/optim.py: fused optimizer updates over flat device buffers.

``foo_step_cuda(args...)`` takes exactly the arguments of the CPU ``foo_step`` (1-D C-contiguous
device arrays of one float dtype, bool flags, scalars already cast to that dtype so float32
stays float32) and updates the parameter and its state in place.  Each element is independent,
so every kernel is one grid-stride loop whose body is the CPU loop body line for line (same op
order, same NaN selects: ``vi > vm or vi != vi`` keeps NaN as torch.maximum does).

``_sqrt`` is ``math.sqrt`` on a GPU (libdevice; numba-cuda has no ``np.sqrt`` lowering) and
``np.sqrt`` under the simulator, where kernels run as Python: numpy keeps float32 scalars
float32 and gives NaN for a negative radicand, where ``math.sqrt`` would raise ``ValueError``.
On a GPU, NVVM contracts ``a * b + c`` into fused multiply-adds (its default ``fma=1``;
numba-cuda has no per-kernel switch), so results agree with the CPU twin to rounding, not bit
for bit.
"""

import math

import numpy as np
from numba import cuda

from .config import SIM, grid

__all__ = [
    "sgd_step_cuda",
    "adam_step_cuda",
    "rmsprop_step_cuda",
    "adagrad_step_cuda",
    "adadelta_step_cuda",
    "adamax_step_cuda",
    "nadam_step_cuda",
    "radam_step_cuda",
]

_sqrt = np.sqrt if SIM else math.sqrt


@cuda.jit(device=True)
def _lerp(a, b, w, one_minus_w, small):
    # ATen lerp: small weight (|w| < 0.5) -> a + w (b - a), else b - (b - a)(1 - w)
    if small:
        return a + w * (b - a)
    return b - (b - a) * one_minus_w


@cuda.jit
def _sgd(
    p, g, buf, maximize, first, use_momentum, nesterov, wd, use_wd, momentum, one_minus_damp, neg_lr
):
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
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


def sgd_step_cuda(
    p, g, buf, maximize, first, use_momentum, nesterov, wd, use_wd, momentum, one_minus_damp, neg_lr
):
    """g <- (+/-)g [+ wd p]; buf <- g (first step) or momentum buf + (1-dampening) g;
    g <- g + momentum buf (nesterov) or buf; p <- p - lr g."""
    n = p.shape[0]
    if n == 0:
        return
    _sgd[grid(n)](
        p,
        g,
        buf,
        maximize,
        first,
        use_momentum,
        nesterov,
        wd,
        use_wd,
        momentum,
        one_minus_damp,
        neg_lr,
    )


@cuda.jit
def _adam(
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
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
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
        denom = _sqrt(vi) / bc2_sqrt + eps
        p[i] = pi + neg_step_size * mi / denom


def adam_step_cuda(
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
    n = p.shape[0]
    if n == 0:
        return
    _adam[grid(n)](
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
    )


@cuda.jit
def _rmsprop(
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
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        s = sq[i] * alpha + one_minus_alpha * gi * gi
        sq[i] = s
        if centered:
            ga = _lerp(gavg[i], gi, one_minus_alpha, alpha_lerp, oma_small)
            gavg[i] = ga
            avg = _sqrt(s + (-ga) * ga)
        else:
            avg = _sqrt(s)
        avg = avg + eps
        if use_momentum:
            b = buf[i] * momentum + gi / avg
            buf[i] = b
            p[i] = p[i] + neg_lr * b
        else:
            p[i] = p[i] + neg_lr * gi / avg


def rmsprop_step_cuda(
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
    n = p.shape[0]
    if n == 0:
        return
    _rmsprop[grid(n)](
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
    )


@cuda.jit
def _adagrad(p, g, s, maximize, wd, use_wd, eps, neg_clr):
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        si = s[i] + gi * gi
        s[i] = si
        p[i] = p[i] + neg_clr * gi / (_sqrt(si) + eps)


def adagrad_step_cuda(p, g, s, maximize, wd, use_wd, eps, neg_clr):
    """Adagrad: g <- (+/-)g [+ wd p]; s <- s + g g; p <- p - clr g / (sqrt(s) + eps)."""
    n = p.shape[0]
    if n == 0:
        return
    _adagrad[grid(n)](p, g, s, maximize, wd, use_wd, eps, neg_clr)


@cuda.jit
def _adadelta(p, g, sq, acc, maximize, wd, use_wd, rho, one_minus_rho, eps, neg_lr):
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        si = sq[i] * rho + one_minus_rho * gi * gi
        sq[i] = si
        delta = _sqrt(acc[i] + eps) / _sqrt(si + eps) * gi
        acc[i] = acc[i] * rho + one_minus_rho * delta * delta
        p[i] = p[i] + neg_lr * delta


def adadelta_step_cuda(p, g, sq, acc, maximize, wd, use_wd, rho, one_minus_rho, eps, neg_lr):
    """Adadelta: g <- (+/-)g [+ wd p]; sq <- rho sq + (1-rho) g g;
    delta <- sqrt(acc + eps) / sqrt(sq + eps) g; acc <- rho acc + (1-rho) delta delta;
    p <- p - lr delta."""
    n = p.shape[0]
    if n == 0:
        return
    _adadelta[grid(n)](p, g, sq, acc, maximize, wd, use_wd, rho, one_minus_rho, eps, neg_lr)


@cuda.jit
def _adamax(p, g, m, u, maximize, wd, use_wd, w1, one_minus_w1, w1_small, beta2, eps, neg_clr):
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
        gi = -g[i] if maximize else g[i]
        if use_wd:
            gi = gi + wd * p[i]
        mi = _lerp(m[i], gi, w1, one_minus_w1, w1_small)
        m[i] = mi
        a = u[i] * beta2
        b = abs(gi) + eps
        ui = a if (a > b or a != a) else b
        u[i] = ui
        p[i] = p[i] + neg_clr * mi / ui


def adamax_step_cuda(
    p, g, m, u, maximize, wd, use_wd, w1, one_minus_w1, w1_small, beta2, eps, neg_clr
):
    """Adamax: g <- (+/-)g [+ wd p]; m <- lerp(m, g, 1-beta1); u <- max(beta2 u, |g| + eps)
    (NaN propagates, as torch.maximum); p <- p - lr / (1 - beta1^t) m / u."""
    n = p.shape[0]
    if n == 0:
        return
    _adamax[grid(n)](
        p, g, m, u, maximize, wd, use_wd, w1, one_minus_w1, w1_small, beta2, eps, neg_clr
    )


@cuda.jit
def _nadam(
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
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
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
        d = _sqrt(vi / bc2) + eps
        pi = pi + c_grad * gi / d
        p[i] = pi + c_avg * mi / d


def nadam_step_cuda(
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
    n = p.shape[0]
    if n == 0:
        return
    _nadam[grid(n)](
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
    )


@cuda.jit
def _radam(
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
    for i in range(cuda.grid(1), p.shape[0], cuda.gridsize(1)):
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
            u = u * (one / (_sqrt(vi) + eps) * bc2_sqrt) * rect
        p[i] = pi - u


def radam_step_cuda(
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
    n = p.shape[0]
    if n == 0:
        return
    _radam[grid(n)](
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
    )
