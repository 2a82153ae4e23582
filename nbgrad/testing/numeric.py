"""Finite-difference checks in float64: a directional <v, J u> check (cheap, any size) and the
full Jacobian (small samples).  Used by tests until/alongside autograd.gradcheck."""

import numpy as np

import nbgrad

from .._tensor import Tensor


def _flat_outputs(out):
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor) and o._dtype.is_inexact]


def _eval(fn, args):
    # grad mode stays on: fn may itself differentiate (second-order checks)
    return [o._data.astype(np.float64).copy() for o in _flat_outputs(fn(*args))]


def directional_check(fn, args, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Compare <v, J u> from central differences with <J^T v, u> from backward."""
    rng = np.random.default_rng(seed)
    diff = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    outs = _flat_outputs(fn(*args))
    vs = [rng.standard_normal(o._data.shape) for o in outs]
    us = {i: rng.standard_normal(args[i]._data.shape) for i in diff}
    # analytical: sum_k <v_k, out_k> backward -> grads . u
    grads = nbgrad.autograd.grad(
        [o for o in outs],
        [args[i] for i in diff],
        grad_outputs=[nbgrad.tensor(v, dtype=o.dtype) for v, o in zip(vs, outs)],
        allow_unused=True,
    )
    analytical = sum(float((g._data * us[i]).sum()) for g, i in zip(grads, diff) if g is not None)

    def shifted(sign):
        new = list(args)
        for i in diff:
            new[i] = nbgrad.tensor(
                args[i]._data + sign * eps * us[i], dtype=args[i].dtype, requires_grad=True
            )
        return _eval(fn, new)

    plus, minus = shifted(1), shifted(-1)
    numerical = sum(float(((p - m) / (2 * eps) * v).sum()) for p, m, v in zip(plus, minus, vs))
    ok = abs(numerical - analytical) <= atol + rtol * max(abs(numerical), abs(analytical))
    return ok, numerical, analytical


def full_jacobian_check(fn, args, eps=1e-6, rtol=1e-4, atol=1e-6):
    """Element-by-element Jacobians (numerical vs analytical) for every differentiable input."""
    diff = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    outs = _flat_outputs(fn(*args))
    for k, out in enumerate(outs):
        n_out = out._data.size
        for i in diff:
            x = args[i]
            n_in = x._data.size
            num = np.zeros((n_in, n_out))
            base = x._data.astype(np.float64)
            for j in range(n_in):
                d = np.zeros(n_in)
                d[j] = eps
                new = list(args)
                new[i] = nbgrad.tensor(
                    base + d.reshape(base.shape), dtype=x.dtype, requires_grad=True
                )
                plus = _eval(fn, new)[k]
                new[i] = nbgrad.tensor(
                    base - d.reshape(base.shape), dtype=x.dtype, requires_grad=True
                )
                minus = _eval(fn, new)[k]
                num[j] = ((plus - minus) / (2 * eps)).reshape(-1)
            ana = np.zeros((n_in, n_out))
            for m in range(n_out):
                e = np.zeros(n_out)
                e[m] = 1.0
                outs2 = _flat_outputs(fn(*args))
                (g,) = nbgrad.autograd.grad(
                    outs2[k],
                    x,
                    grad_outputs=nbgrad.tensor(e.reshape(out._data.shape), dtype=out.dtype),
                    allow_unused=True,
                )
                if g is not None:
                    ana[:, m] = g._data.reshape(-1)
            if not np.allclose(num, ana, rtol=rtol, atol=atol):
                return False, num, ana
    return True, None, None
