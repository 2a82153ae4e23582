"""Per-parameter update maths for the optimizers, on the tensors' numpy storage.

Each ``*_update`` writes the parameter and its state in place and bumps their version counters
by as many in-place writes as PyTorch's single-tensor implementation makes (``param.add_`` is one;
AdamW's ``param.mul_`` + ``param.addcdiv_`` are two; ``exp_avg_sq.mul_().addcmul_()`` is two).

Two bindings of the same maths:

* the fused Numba kernels in kernels/cpu/optim.py (one pass, no temporaries), used when the
  parameter and its state are C-contiguous float32/float64 (complex: viewed as real);
* numpy ufuncs with ``out=`` below, for everything else (float16, non-contiguous storage) and as
  the reference the kernels are tested against (``USE_KERNELS = False`` forces it).

Scalars are cast to the parameter's dtype first, as ATen does for a float tensor and a Python
scalar.  An optimizer passes one ``cache`` dict per group and step: the cast scalars are built
once per (dtype, step) rather than once per parameter (the per-parameter Python cost is what
dominates models with many small tensors).  docs/optim-performance.md has the measurements.
"""

import numpy as np

from .._tensor import Tensor
from ..kernels.cpu import optim as _k
from ..kernels.cuda import twin
from ..kernels.cuda.array import DeviceArray, empty as cuda_empty

__all__ = [
    "sgd_update",
    "adam_update",
    "rmsprop_update",
    "adagrad_update",
    "adadelta_update",
    "adamax_update",
    "nadam_update",
    "radam_update",
]

USE_KERNELS = True
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _as_real(a):
    """A real view of a complex array (trailing axis of 2), as torch.view_as_real; else ``a``."""
    if a.dtype.kind != "c":
        return a
    r = a.real
    return np.lib.stride_tricks.as_strided(
        r, a.shape + (2,), a.strides + (r.itemsize,), writeable=a.flags.writeable
    )


def _grad_array(grad, dtype):
    g = _as_real(grad._data)
    if g.dtype != dtype:
        g = g.astype(dtype)
    return g


def _kernel_ok(arrays):
    """True if every array can go to a fused kernel as a flat view."""
    if not USE_KERNELS:
        return False
    dt = arrays[0].dtype
    if dt not in _KERNEL_DTYPES:
        return False
    for a in arrays:
        if a.dtype != dt or not a.flags.c_contiguous or not a.flags.writeable:
            return False
    return True


def _kernel(p, k):
    """The fused kernel ``k`` for parameter array ``p``: its CUDA twin for a CUDA tensor."""
    return k if type(p) is not DeviceArray else twin(k)


def _flat(a):
    if type(a) is DeviceArray:  # the kernel's flat device buffer (NOTE [device storage])
        return a.dense().reshape(a.size)
    return a.reshape(-1)


def _contig(g):
    if type(g) is DeviceArray:
        return g.dense().reshape(g.size)
    return g.reshape(-1) if g.flags.c_contiguous else np.ascontiguousarray(g).reshape(-1)


def _empty_like(a):
    if type(a) is DeviceArray:
        return cuda_empty(a.shape, a.dtype)
    return np.empty(a.shape, a.dtype)


def _bump(t, n=1):
    t._vc[0] += n


def _increment(step_t):
    """``step_t += 1`` on a 0-d step tensor; returns the new value as a Python float."""
    a = step_t._data
    a[()] = a.item() + 1  # (the float32 rounding of ``+ 1`` happens on the store)
    step_t._vc[0] += 1
    return a.item()


def _cached(cache, dtype, step, build, *args):
    """``build(dtype.type, *args)`` memoised in ``cache`` by (dtype, step)."""
    if cache is None:
        return build(dtype.type, *args)
    key = (dtype, step)
    c = cache.get(key)
    if c is None:
        c = cache[key] = build(dtype.type, *args)
    return c


def _lerp_weight(w, s):
    """ATen's lerp branches on |w| < 0.5; the complementary weight is computed in the dtype."""
    w = s(w)
    return w, s(1) - w, bool(abs(w) < 0.5)


def _lerp_(a, b, w, one_minus_w, small):
    """a <- lerp(a, b, w) in place, ATen's formula (numpy binding)."""
    if small:
        np.add(a, w * (b - a), out=a)
    else:
        np.subtract(b, (b - a) * one_minus_w, out=a)


# ------------------------------------------------------------------------------------------
# SGD


def _sgd_consts(s, lr, momentum, dampening, weight_decay):
    return (s(weight_decay), weight_decay != 0, s(momentum), s(1 - dampening), s(-lr))


def sgd_update(
    param, grad, state, *, lr, momentum, dampening, weight_decay, nesterov, maximize, cache=None
):
    """One SGD step for one parameter; ``state`` receives ``momentum_buffer``."""
    p = _as_real(param._data)
    c = _cached(cache, p.dtype, None, _sgd_consts, lr, momentum, dampening, weight_decay)
    g = _grad_array(grad, p.dtype)
    use_momentum = momentum != 0
    first = False
    buf_t = None
    if use_momentum:
        buf_t = state.get("momentum_buffer")
        if buf_t is None:
            buf_t = Tensor._make(_empty_like(param._data))
            state["momentum_buffer"] = buf_t
            first = True
        buf = _as_real(buf_t._data)
    else:
        buf = p
    if _kernel_ok((p, buf)):
        _kernel(p, _k.sgd_step)(
            _flat(p),
            _contig(g),
            _flat(buf),
            bool(maximize),
            first,
            use_momentum,
            bool(nesterov),
            *c,
        )
    else:
        wd, use_wd, mom, one_minus_damp, neg_lr = c
        if maximize:
            g = -g
        if use_wd:
            g = g + wd * p
        if use_momentum:
            if first:
                np.copyto(buf, g)
            else:
                np.multiply(buf, mom, out=buf)
                np.add(buf, one_minus_damp * g, out=buf)
            g = g + mom * buf if nesterov else buf
        np.add(p, neg_lr * g, out=p)
    _bump(param)
    if use_momentum and not first:
        _bump(buf_t, 2)  # buf.mul_(momentum).add_(grad, alpha=1 - dampening)


# ------------------------------------------------------------------------------------------
# Adam / AdamW


def _adam_consts(s, step, lr, beta1, beta2, eps, weight_decay, decoupled_weight_decay):
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2**0.5
    decoupled = weight_decay != 0 and decoupled_weight_decay
    coupled = weight_decay != 0 and not decoupled_weight_decay
    w1, one_minus_w1, w1_small = _lerp_weight(1 - beta1, s)
    return (
        s(weight_decay),
        coupled,
        s(1 - lr * weight_decay),
        decoupled,
        w1,
        one_minus_w1,
        w1_small,
        s(beta2),
        s(1 - beta2),
        s(bias_correction2_sqrt),
        s(eps),
        s(-step_size),
    )


def adam_update(
    param,
    grad,
    state,
    *,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    amsgrad,
    maximize,
    decoupled_weight_decay,
    cache=None,
):
    """One Adam step for one parameter; ``state`` holds step, exp_avg, exp_avg_sq
    [, max_exp_avg_sq] (created by the optimizer)."""
    step = _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(
        cache,
        p.dtype,
        step,
        _adam_consts,
        step,
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled_weight_decay,
    )
    g = _grad_array(grad, p.dtype)
    m_t, v_t = state["exp_avg"], state["exp_avg_sq"]
    m, v = _as_real(m_t._data), _as_real(v_t._data)
    vmax_t = state["max_exp_avg_sq"] if amsgrad else None
    vmax = _as_real(vmax_t._data) if amsgrad else v

    if _kernel_ok((p, m, v, vmax)):
        _kernel(p, _k.adam_step)(
            _flat(p), _contig(g), _flat(m), _flat(v), _flat(vmax), bool(maximize), bool(amsgrad), *c
        )
    else:
        (
            wd,
            coupled,
            decay_mul,
            decoupled,
            w1,
            one_minus_w1,
            w1_small,
            b2,
            one_minus_b2,
            bc2_sqrt,
            eps_,
            neg_step_size,
        ) = c
        if decoupled:
            np.multiply(p, decay_mul, out=p)
        if maximize:
            g = -g
        if coupled:
            g = g + wd * p
        _lerp_(m, g, w1, one_minus_w1, w1_small)
        np.multiply(v, b2, out=v)
        np.add(v, one_minus_b2 * g * g, out=v)
        if amsgrad:
            np.maximum(vmax, v, out=vmax)
        denom = np.sqrt(vmax if amsgrad else v)
        denom /= bc2_sqrt
        denom += eps_
        np.add(p, neg_step_size * m / denom, out=p)
    _bump(param, 2 if c[3] else 1)  # param.mul_ (decoupled decay) + param.addcdiv_
    _bump(m_t)  # exp_avg.lerp_
    _bump(v_t, 2)  # exp_avg_sq.mul_().addcmul_()
    if amsgrad:
        _bump(vmax_t)  # torch.maximum(..., out=max_exp_avg_sq)


# ------------------------------------------------------------------------------------------
# RMSprop


def _rmsprop_consts(s, lr, alpha, eps, weight_decay, momentum):
    w, one_minus_w, w_small = _lerp_weight(1 - alpha, s)
    return (
        s(weight_decay),
        weight_decay != 0,
        s(alpha),
        w,
        w_small,
        one_minus_w,
        s(momentum),
        s(eps),
        s(-lr),
    )


def rmsprop_update(
    param, grad, state, *, lr, alpha, eps, weight_decay, momentum, centered, maximize, cache=None
):
    """One RMSprop step for one parameter; ``state`` holds step, square_avg
    [, momentum_buffer] [, grad_avg] (created by the optimizer)."""
    _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(cache, p.dtype, None, _rmsprop_consts, lr, alpha, eps, weight_decay, momentum)
    g = _grad_array(grad, p.dtype)
    sq_t = state["square_avg"]
    sq = _as_real(sq_t._data)
    use_momentum = momentum > 0
    buf_t = state["momentum_buffer"] if use_momentum else None
    gavg_t = state["grad_avg"] if centered else None
    buf = _as_real(buf_t._data) if use_momentum else p
    gavg = _as_real(gavg_t._data) if centered else p

    if _kernel_ok((p, sq, buf, gavg)):
        _kernel(p, _k.rmsprop_step)(
            _flat(p),
            _contig(g),
            _flat(sq),
            _flat(gavg),
            _flat(buf),
            bool(maximize),
            bool(centered),
            use_momentum,
            *c,
        )
    else:
        wd, use_wd, a, w, w_small, one_minus_w, mom, eps_, neg_lr = c
        if maximize:
            g = -g
        if use_wd:
            g = g + wd * p
        np.multiply(sq, a, out=sq)
        np.add(sq, w * g * g, out=sq)
        if centered:
            _lerp_(gavg, g, w, one_minus_w, w_small)
            avg = sq + (-gavg) * gavg
            np.sqrt(avg, out=avg)
        else:
            avg = np.sqrt(sq)
        avg += eps_
        if use_momentum:
            np.multiply(buf, mom, out=buf)
            np.add(buf, g / avg, out=buf)
            np.add(p, neg_lr * buf, out=p)
        else:
            np.add(p, neg_lr * g / avg, out=p)
    _bump(param)  # param.add_ / param.addcdiv_
    _bump(sq_t, 2)  # square_avg.mul_().addcmul_()
    if centered:
        _bump(gavg_t)  # grad_avg.lerp_
    if use_momentum:
        _bump(buf_t, 2)  # buf.mul_().addcdiv_()


# ------------------------------------------------------------------------------------------
# Adagrad


def _adagrad_consts(s, step, lr, lr_decay, eps, weight_decay):
    clr = lr / (1 + (step - 1) * lr_decay)
    return (s(weight_decay), weight_decay != 0, s(eps), s(-clr))


def adagrad_update(
    param, grad, state, *, lr, lr_decay, eps, weight_decay, maximize, fused=False, cache=None
):
    """One Adagrad step for one parameter; ``state`` holds step, sum.  With ``fused`` only the
    step's version moves (PyTorch's fused kernel writes param and sum without bumping them)."""
    step = _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(cache, p.dtype, step, _adagrad_consts, step, lr, lr_decay, eps, weight_decay)
    g = _grad_array(grad, p.dtype)
    s_t = state["sum"]
    s = _as_real(s_t._data)

    if _kernel_ok((p, s)):
        _kernel(p, _k.adagrad_step)(_flat(p), _contig(g), _flat(s), bool(maximize), *c)
    else:
        wd, use_wd, eps_, neg_clr = c
        if maximize:
            g = -g
        if use_wd:
            g = g + wd * p
        np.add(s, g * g, out=s)
        std = np.sqrt(s)
        std += eps_
        np.add(p, neg_clr * g / std, out=p)
    if not fused:
        _bump(param)  # param.addcdiv_
        _bump(s_t)  # state_sum.addcmul_


# ------------------------------------------------------------------------------------------
# Adadelta


def _adadelta_consts(s, lr, rho, eps, weight_decay):
    return (s(weight_decay), weight_decay != 0, s(rho), s(1 - rho), s(eps), s(-lr))


def adadelta_update(param, grad, state, *, lr, rho, eps, weight_decay, maximize, cache=None):
    """One Adadelta step for one parameter; ``state`` holds step, square_avg, acc_delta."""
    _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(cache, p.dtype, None, _adadelta_consts, lr, rho, eps, weight_decay)
    g = _grad_array(grad, p.dtype)
    sq_t, acc_t = state["square_avg"], state["acc_delta"]
    sq, acc = _as_real(sq_t._data), _as_real(acc_t._data)

    if _kernel_ok((p, sq, acc)):
        _kernel(p, _k.adadelta_step)(
            _flat(p), _contig(g), _flat(sq), _flat(acc), bool(maximize), *c
        )
    else:
        wd, use_wd, rho_, one_minus_rho, eps_, neg_lr = c
        if maximize:
            g = -g
        if use_wd:
            g = g + wd * p
        np.multiply(sq, rho_, out=sq)
        np.add(sq, one_minus_rho * g * g, out=sq)
        std = np.sqrt(sq + eps_)
        delta = np.sqrt(acc + eps_)
        delta /= std
        delta *= g
        np.multiply(acc, rho_, out=acc)
        np.add(acc, one_minus_rho * delta * delta, out=acc)
        np.add(p, neg_lr * delta, out=p)
    _bump(param)  # param.add_
    _bump(sq_t, 2)  # square_avg.mul_().addcmul_()
    _bump(acc_t, 2)  # acc_delta.mul_().addcmul_()


# ------------------------------------------------------------------------------------------
# Adamax


def _adamax_consts(s, step, lr, beta1, beta2, eps, weight_decay):
    clr = lr / (1 - beta1**step)
    w1, one_minus_w1, w1_small = _lerp_weight(1 - beta1, s)
    return (
        s(weight_decay),
        weight_decay != 0,
        w1,
        one_minus_w1,
        w1_small,
        s(beta2),
        s(eps),
        s(-clr),
    )


def adamax_update(param, grad, state, *, lr, beta1, beta2, eps, weight_decay, maximize, cache=None):
    """One Adamax step for one parameter; ``state`` holds step, exp_avg, exp_inf."""
    step = _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(cache, p.dtype, step, _adamax_consts, step, lr, beta1, beta2, eps, weight_decay)
    g = _grad_array(grad, p.dtype)
    m_t, u_t = state["exp_avg"], state["exp_inf"]
    m, u = _as_real(m_t._data), _as_real(u_t._data)

    if _kernel_ok((p, m, u)):
        _kernel(p, _k.adamax_step)(_flat(p), _contig(g), _flat(m), _flat(u), bool(maximize), *c)
    else:
        wd, use_wd, w1, one_minus_w1, w1_small, b2, eps_, neg_clr = c
        if maximize:
            g = -g
        if use_wd:
            g = g + wd * p
        _lerp_(m, g, w1, one_minus_w1, w1_small)
        np.multiply(u, b2, out=u)
        norm = np.abs(g)
        norm += eps_
        np.maximum(u, norm, out=u)
        np.add(p, neg_clr * m / u, out=p)
    _bump(param)  # param.addcdiv_
    _bump(m_t)  # exp_avg.lerp_
    _bump(u_t, 2)  # exp_inf.mul_() + torch.maximum(..., out=exp_inf)


# ------------------------------------------------------------------------------------------
# NAdam


def _nadam_consts(
    s, step, mu_product, lr, beta1, beta2, eps, weight_decay, momentum_decay, decoupled
):
    # mu_product is the state's value after ``mu_product *= mu`` (a Python float)
    bias_correction2 = 1 - beta2**step
    mu = nadam_mu(step, beta1, momentum_decay)
    mu_next = nadam_mu(step + 1, beta1, momentum_decay)
    mu_product_next = mu_product * mu_next
    w1, one_minus_w1, w1_small = _lerp_weight(1 - beta1, s)
    use_decoupled = weight_decay != 0 and decoupled
    return (
        s(weight_decay),
        weight_decay != 0 and not decoupled,
        s(1 - lr * weight_decay),
        use_decoupled,
        w1,
        one_minus_w1,
        w1_small,
        s(beta2),
        s(1 - beta2),
        s(bias_correction2),
        s(eps),
        s(-lr * (1.0 - mu) / (1.0 - mu_product)),
        s((-lr * mu_next) / (1.0 - mu_product_next)),
    )


def nadam_mu(step, beta1, momentum_decay):
    """NAdam's momentum coefficient mu_t."""
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def nadam_update(
    param,
    grad,
    state,
    *,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    momentum_decay,
    decoupled_weight_decay,
    maximize,
    cache=None,
):
    """One NAdam step for one parameter; ``state`` holds step, mu_product, exp_avg,
    exp_avg_sq (``mu_product`` is a 0-d tensor in the scalar dtype, updated in its dtype)."""
    step = _increment(state["step"])
    mp_t = state["mu_product"]
    mp = mp_t._data
    mp[()] = mp * mp.dtype.type(nadam_mu(step, beta1, momentum_decay))  # mu_product *= mu
    mp_t._vc[0] += 1
    mu_product = mp.item()

    p = _as_real(param._data)
    key = (step, mu_product)
    c = _cached(
        cache,
        p.dtype,
        key,
        _nadam_consts,
        step,
        mu_product,
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        momentum_decay,
        decoupled_weight_decay,
    )
    g = _grad_array(grad, p.dtype)
    m_t, v_t = state["exp_avg"], state["exp_avg_sq"]
    m, v = _as_real(m_t._data), _as_real(v_t._data)

    if _kernel_ok((p, m, v)):
        _kernel(p, _k.nadam_step)(_flat(p), _contig(g), _flat(m), _flat(v), bool(maximize), *c)
    else:
        (
            wd,
            coupled,
            decay_mul,
            decoupled,
            w1,
            one_minus_w1,
            w1_small,
            b2,
            one_minus_b2,
            bc2,
            eps_,
            c_grad,
            c_avg,
        ) = c
        if decoupled:
            np.multiply(p, decay_mul, out=p)
        if maximize:
            g = -g
        if coupled:
            g = g + wd * p
        _lerp_(m, g, w1, one_minus_w1, w1_small)
        np.multiply(v, b2, out=v)
        np.add(v, one_minus_b2 * g * g, out=v)
        denom = np.sqrt(v / bc2)
        denom += eps_
        np.add(p, c_grad * g / denom, out=p)
        np.add(p, c_avg * m / denom, out=p)
    _bump(param, 3 if c[3] else 2)  # [param.mul_] + two param.addcdiv_
    _bump(m_t)  # exp_avg.lerp_
    _bump(v_t, 2)  # exp_avg_sq.mul_().addcmul_()


# ------------------------------------------------------------------------------------------
# RAdam


def _radam_consts(s, step, lr, beta1, beta2, eps, weight_decay, decoupled):
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    rectify = rho_t > 5.0
    rect = (
        ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        if rectify
        else 0.0
    )
    w1, one_minus_w1, w1_small = _lerp_weight(1 - beta1, s)
    use_decoupled = weight_decay != 0 and decoupled
    return (
        s(weight_decay),
        weight_decay != 0 and not decoupled,
        s(1 - lr * weight_decay),
        use_decoupled,
        w1,
        one_minus_w1,
        w1_small,
        s(beta2),
        s(1 - beta2),
        s(bias_correction1),
        s(lr),
        rectify,
        s(1),
        s(bias_correction2**0.5),
        s(eps),
        s(rect),
    )


def radam_update(
    param,
    grad,
    state,
    *,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    decoupled_weight_decay,
    maximize,
    cache=None,
):
    """One RAdam step for one parameter; ``state`` holds step, exp_avg, exp_avg_sq."""
    step = _increment(state["step"])

    p = _as_real(param._data)
    c = _cached(
        cache,
        p.dtype,
        step,
        _radam_consts,
        step,
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled_weight_decay,
    )
    g = _grad_array(grad, p.dtype)
    m_t, v_t = state["exp_avg"], state["exp_avg_sq"]
    m, v = _as_real(m_t._data), _as_real(v_t._data)

    if _kernel_ok((p, m, v)):
        _kernel(p, _k.radam_step)(_flat(p), _contig(g), _flat(m), _flat(v), bool(maximize), *c)
    else:
        (
            wd,
            coupled,
            decay_mul,
            decoupled,
            w1,
            one_minus_w1,
            w1_small,
            b2,
            one_minus_b2,
            bc1,
            lr_,
            rectify,
            one,
            bc2_sqrt,
            eps_,
            rect,
        ) = c
        if decoupled:
            np.multiply(p, decay_mul, out=p)
        if maximize:
            g = -g
        if coupled:
            g = g + wd * p
        _lerp_(m, g, w1, one_minus_w1, w1_small)
        np.multiply(v, b2, out=v)
        np.add(v, one_minus_b2 * g * g, out=v)
        update = m / bc1
        update *= lr_
        if rectify:
            adaptive = np.sqrt(v)
            adaptive += eps_
            np.divide(one, adaptive, out=adaptive)
            adaptive *= bc2_sqrt
            update *= adaptive
            update *= rect
        np.subtract(p, update, out=p)
    _bump(param, 2 if c[3] else 1)  # [param.mul_] + param.add_
    _bump(m_t)  # exp_avg.lerp_
    _bump(v_t, 2)  # exp_avg_sq.mul_().addcmul_()
