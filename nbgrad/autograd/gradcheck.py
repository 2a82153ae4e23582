"""gradcheck / gradgradcheck: compare analytical gradients with float64 finite differences.

``nbgrad.autograd.gradcheck`` is the function; this module stays importable by its full name
(``from nbgrad.autograd.gradcheck import GradcheckError``), as in PyTorch.
"""

import warnings

import numpy as np

from .._tensor import Tensor
from ..creation import tensor, zeros_like
from ..dtypes import float64
from .graph import Node, edge

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails (raise_exception=True)."""


def _grad(*args, **kwargs):
    from . import grad  # cycle: the autograd package imports this module before defining grad

    return grad(*args, **kwargs)


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,), True
    return tuple(x), False


def _outputs(func, inputs):
    out = func(*inputs)
    outs, _ = _as_tuple(out) if not isinstance(out, (list, tuple)) else (tuple(out), False)
    return tuple(o for o in outs if isinstance(o, Tensor))


def _differentiable(outs):
    return [o for o in outs if o._dtype.is_inexact]


def _numerical_jacobians(func, inputs, idx, eps):
    """J[k][i]: (n_in_i, n_out_k) central differences, perturbing inputs[i] element-wise."""
    outs0 = _differentiable(_outputs(func, inputs))
    jac = [[None] * len(inputs) for _ in outs0]
    for i in idx:
        x = inputs[i]
        flat = x._data.reshape(-1) if x._data.flags.c_contiguous else None
        n = x._data.size
        cols = [np.zeros((n, o._data.size)) for o in outs0]
        for j in range(n):
            orig = x._data.reshape(-1)[j] if flat is not None else x._data.flat[j]

            def run(v):
                # grad mode stays on: func may differentiate internally (gradgradcheck)
                x._data.flat[j] = v
                return [
                    o._data.astype(np.complex128 if o._dtype.is_complex else np.float64)
                    .reshape(-1)
                    .copy()
                    for o in _differentiable(_outputs(func, inputs))
                ]

            plus = run(orig + eps)
            minus = run(orig - eps)
            x._data.flat[j] = orig
            for k in range(len(outs0)):
                cols[k][j] = ((plus[k] - minus[k]) / (2 * eps)).real
        for k in range(len(outs0)):
            jac[k][i] = cols[k]
    return jac


def _analytical_jacobians(func, inputs, idx, check_grad_dtypes):
    outs = _differentiable(_outputs(func, inputs))
    return [_jacobian_of(o, inputs, idx, check_grad_dtypes) for o in outs]


def _jacobian_of(o, inputs, idx, check_grad_dtypes):
    """[i] -> (n_in_i, n_out) analytical Jacobian of output ``o`` (zeros where unused)."""
    jac = [np.zeros((inputs[i]._data.size, o._data.size)) for i in range(len(inputs))]
    if not o._requires_grad:
        return jac
    diff_inputs = [inputs[i] for i in idx]
    for m in range(o._data.size):
        e = np.zeros(o._data.size)
        e[m] = 1.0
        go = tensor(e.reshape(o._data.shape), dtype=o._dtype)
        grads = _grad(o, diff_inputs, go, retain_graph=True, allow_unused=True)
        for i, g in zip(idx, grads):
            if g is None:
                continue
            if check_grad_dtypes and g._dtype is not inputs[i]._dtype:
                raise GradcheckError("Gradient has dtype mismatch")
            jac[i][:, m] = g._data.reshape(-1).real
    return jac


def _fmt(a):
    return repr(tensor(a, dtype=float64))


def _prepare(inputs, fname="gradcheck"):
    inputs, _ = _as_tuple(inputs)
    idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    if not idx:
        raise ValueError(
            "%s expects at least one input tensor to require gradient, but none "
            "of them have requires_grad=True." % fname
        )
    for i in idx:
        if inputs[i]._dtype.name not in ("float64", "complex128"):
            warnings.warn(
                "Input #%d requires gradient and is not a double precision floating "
                "point or complex. This check will likely fail if all the inputs are "
                "not of double precision floating point or complex. " % i,
                UserWarning,
                stacklevel=3,
            )
    return inputs, idx


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-06,
    atol=1e-05,
    rtol=0.001,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    """Check ``func``'s gradients at ``inputs`` against central finite differences."""
    try:
        return _gradcheck(
            func,
            inputs,
            eps,
            atol,
            rtol,
            nondet_tol,
            check_undefined_grad,
            check_grad_dtypes,
            check_batched_grad,
            check_batched_forward_grad,
            check_forward_ad,
            check_backward_ad,
            fast_mode,
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(
    func,
    inputs,
    eps,
    atol,
    rtol,
    nondet_tol,
    check_undefined_grad,
    check_grad_dtypes,
    check_batched_grad,
    check_batched_forward_grad,
    check_forward_ad,
    check_backward_ad,
    fast_mode,
):
    inputs, idx = _prepare(inputs)
    outs = _differentiable(_outputs(func, inputs))
    # PyTorch's order: reverse-mode Jacobians, forward-mode Jacobians, batched forward grads,
    # batched grads, undefined output grads
    if check_backward_ad:
        if fast_mode:
            _fast_check(func, inputs, idx, outs, eps, atol, rtol, nondet_tol)
        else:
            num = _numerical_jacobians(func, inputs, idx, eps)
            for k, o in enumerate(outs):
                # as PyTorch: each Jacobian is computed twice (reentrancy), then compared
                ana = _jacobian_of(o, inputs, idx, check_grad_dtypes)
                ana2 = _jacobian_of(o, inputs, idx, False)
                for i in idx:
                    if np.max(np.abs(ana2[i] - ana[i]), initial=0.0) > nondet_tol:
                        raise GradcheckError(_NOT_REENTRANT % nondet_tol)
                for i in idx:
                    if not np.allclose(ana[i], num[k][i], rtol=rtol, atol=atol):
                        raise GradcheckError(
                            "Jacobian mismatch for output %d with respect to input %d,\n"
                            "numerical:%s\nanalytical:%s\n" % (k, i, _fmt(num[k][i]), _fmt(ana[i]))
                        )
    if check_forward_ad:
        from .forward_ad import _check_forward_ad  # cycle: forward_ad sits above ops

        if not _check_forward_ad(func, inputs, idx, eps, atol, rtol):
            raise GradcheckError(
                "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"
            )
    if check_batched_forward_grad and not _batched_forward_check(func, inputs, idx, atol, rtol):
        raise GradcheckError(
            "gradcheck or gradgradcheck failed while testing batched gradient "
            "computation. This could have been invoked in a number of ways (via a test "
            "that calls gradcheck/gradgradcheck directly or via an autogenerated test). "
            "(forward-mode AD, batched tangents)"
        )
    if not check_backward_ad:
        return True
    if check_batched_grad:
        if not _batched_check(_differentiable(_outputs(func, inputs)), inputs, idx, atol, rtol):
            raise GradcheckError(
                "gradcheck or gradgradcheck failed while testing batched gradient computation."
            )
    if check_undefined_grad:
        _check_undefined_grad(func, inputs, idx)
    return True


_NOT_REENTRANT = (
    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
    "times gives different values, although analytical gradient matches numerical gradient."
    "The tolerance for nondeterminism was %s.\n\n"
    "NOTE: If your op relies on non-deterministic operations i.e., it is listed here:\n"
    "https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html\n"
    "this failure might be expected.\n\n"
    "If you are adding a new operator, please file an issue and then use one of the\n"
    "workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.\n"
    "If the test\n"
    "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
    "  with `nondet_tol=<tol>` as a keyword argument.\n"
    "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n"
    "  to have `gradcheck_nondet_tol=<tol>`.\n"
    "- is a Module test (e.g., in common_nn.py), then modify the corresponding\n"
    "  module_test entry to have `gradcheck_nondet_tol=<tol>`\n"
)

_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' + (
    '"tools/autograd/derivatives.yaml"'
)


class _UndefinedGradBackward(Node):
    """PyTorch's ``UndefinedGrad``: an identity whose backward passes an undefined (None)
    gradient on, so the function under test sees no output gradient at all."""

    _name = "UndefinedGradBackward"

    def apply(self, grads):
        return (None,)


def _undefined(o):
    node = _UndefinedGradBackward((edge(o),), ((o._data.shape, o._dtype),))
    return Tensor._make(o._data, node, 0)


def _check_undefined_grad(func, inputs, idx):
    """PyTorch's ``_test_undefined_backward_mode``: backward must accept undefined output grads
    (all of them, then one at a time) and give undefined or zero input grads."""
    diff = [inputs[i] for i in idx]

    def warn_bc_breaking():
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking feature is "
            "enabled by default, but it may break existing callers of this function. If this "
            'is true for you, you can call this function with "check_undefined_grad=False" to '
            "disable the feature",
            UserWarning,
            stacklevel=4,
        )

    def check(outs):
        try:
            grads = _grad(outs, diff, [zeros_like(o) for o in outs], allow_unused=True)
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. " + _UNDEFINED_NOTE
            ) from e
        for g in grads:
            if g is not None and np.any(g._data != 0):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    "undefined or zero. " + _UNDEFINED_NOTE
                )

    live = [o for o in _differentiable(_outputs(func, inputs)) if o._requires_grad]
    if not live:
        return
    check([_undefined(o) for o in live])
    if len(live) > 1:
        for j in range(len(live)):
            outs = [o for o in _differentiable(_outputs(func, inputs)) if o._requires_grad]
            check([_undefined(o) if k == j else o for k, o in enumerate(outs)])


def _batched_forward_check(func, inputs, idx, atol, rtol):
    """check_batched_forward_grad: one forward pass with batched tangents equals one forward
    pass per tangent row."""
    from . import forward_ad as fwAD  # cycle: forward_ad sits above ops (autograd/__init__)

    rng = np.random.default_rng(1)
    diff = [inputs[i] for i in idx]
    us = [tensor(rng.standard_normal((3,) + x._data.shape), dtype=x._dtype) for x in diff]

    def tangents(run):
        args = list(inputs)
        try:
            duals = run()
            for i, d in zip(idx, duals):
                args[i] = d
            outs = _differentiable(_outputs(func, args))
            return [fwAD.unpack_dual(o).tangent for o in outs]
        finally:
            fwAD.exit_dual_level()

    batched = tangents(
        lambda: fwAD.batched_dual_level(
            [x.detach().requires_grad_(x.requires_grad) for x in diff], us
        )
    )

    def row(b):
        fwAD.enter_dual_level()
        return [
            fwAD.make_dual(x.detach().requires_grad_(x.requires_grad), u[b])
            for x, u in zip(diff, us)
        ]

    rows = [tangents(lambda b=b: row(b)) for b in range(3)]
    for k, t in enumerate(batched):
        for b in range(3):
            want = rows[b][k]
            got = t._data[b] if t is not None else None
            if want is None or got is None:
                if (want is not None and np.any(want._data)) or (got is not None and np.any(got)):
                    return False
            elif not np.allclose(got, want._data, rtol=rtol, atol=atol):
                return False
    return True


def _batched_check(outs, inputs, idx, atol, rtol):
    """check_batched_grad: one batched backward (is_grads_batched) equals one backward per
    row of the cotangents, as PyTorch checks its vmap path against a loop."""
    live = [o for o in outs if o._requires_grad]
    if not live:
        return True
    rng = np.random.default_rng(0)
    diff = [inputs[i] for i in idx]
    vs = [tensor(rng.standard_normal((3,) + o._data.shape), dtype=o._dtype) for o in live]
    batched = _grad(live, diff, vs, retain_graph=True, allow_unused=True, is_grads_batched=True)
    rows = [
        _grad(live, diff, [v[b] for v in vs], retain_graph=True, allow_unused=True)
        for b in range(3)
    ]
    for k, g in enumerate(batched):
        want = [r[k] for r in rows]
        if g is None:
            if any(w is not None and np.any(w._data) for w in want):
                return False
            continue
        for b, w in enumerate(want):
            ref = w._data if w is not None else np.zeros_like(g._data[b])
            if not np.allclose(g._data[b], ref, rtol=rtol, atol=atol):
                return False
    return True


def _fast_check(func, inputs, idx, outs, eps, atol, rtol, nondet_tol):
    """Fast mode: compare v^T J u (random u, v) numerically and analytically; v^T J is
    computed twice on one graph to check reentrancy first, as PyTorch does."""
    rng = np.random.default_rng(0)
    for k, o in enumerate(outs):
        v = rng.standard_normal(o._data.shape)
        for i in idx:
            x = inputs[i]
            u = rng.standard_normal(x._data.shape)
            orig = x._data.copy()
            x._data[...] = orig + eps * u
            plus = _differentiable(_outputs(func, inputs))[k]._data.astype(np.float64)
            x._data[...] = orig - eps * u
            minus = _differentiable(_outputs(func, inputs))[k]._data.astype(np.float64)
            x._data[...] = orig
            numerical = float((((plus - minus) / (2 * eps)) * v).sum())
            outs2 = _differentiable(_outputs(func, inputs))
            analytical = 0.0
            if outs2[k]._requires_grad:
                vt = tensor(v, dtype=o._dtype)
                (g,) = _grad(outs2[k], [x], vt, retain_graph=True, allow_unused=True)
                (g2,) = _grad(outs2[k], [x], vt, allow_unused=True)
                if (g is None) != (g2 is None) or (
                    g is not None and np.max(np.abs(g._data - g2._data), initial=0.0) > nondet_tol
                ):
                    raise GradcheckError(_NOT_REENTRANT % nondet_tol)
                if g is not None:
                    analytical = float((g._data * u).sum())
            if not abs(numerical - analytical) <= atol + rtol * abs(numerical):
                num = _numerical_jacobians(func, inputs, [i], eps)[k][i]
                ana = _analytical_jacobians(func, inputs, [i], False)[k][i]
                raise GradcheckError(
                    "Jacobian mismatch for output %d with respect to input %d,\nnumerical:%r\n"
                    "analytical:%r\n\nThe above quantities relating the numerical and analytical "
                    "jacobians are computed in fast mode. See: https://github.com/pytorch/pytorch/"
                    "issues/53876 for more background about fast mode. Below, we recompute "
                    "numerical and analytical jacobians in slow mode:\n\nNumerical:\n %s\n"
                    "Analytical:\n%s\n\nThe max per-element difference (slow mode) is: %r.\n"
                    % (
                        k,
                        i,
                        numerical,
                        analytical,
                        _fmt(num),
                        _fmt(ana),
                        float(np.max(np.abs(num - ana), initial=0.0)),
                    )
                )
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-06,
    atol=1e-05,
    rtol=0.001,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
):
    """gradcheck of the first-order gradients (computed with create_graph=True)."""
    inputs, idx = _prepare(inputs, "gradgradcheck")
    outs = _differentiable(_outputs(func, inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            tensor(rng.standard_normal(o._data.shape), dtype=o._dtype, requires_grad=True)
            for o in outs
        )
    else:
        grad_outputs, _ = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        o = [t for t in _differentiable(_outputs(func, ins)) if t._requires_grad]
        diff = [ins[i] for i in idx]
        grads = _grad(o, diff, list(gos[: len(o)]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    # rev-over-rev: reverse-mode gradcheck of the gradient; fwd-over-rev: forward-mode
    return gradcheck(
        first_order,
        tuple(inputs) + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
    )
