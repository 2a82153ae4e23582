"""Issue #10 (trust), pointwise and reductions: NaN/Inf semantics of elementwise ops and their
backward (select, never multiply by a mask), what pointwise nodes save, node names, layouts,
0-d/empty reductions and complex backward.

Every expected value below was checked against PyTorch 2.13 (CPU); the ``needs_torch`` tests
re-check a sweep of them against the installed oracle.
"""

import math

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.autograd.forward_ad as fwAD

nan, inf = math.nan, math.inf


def _grad(f, vals, upstream=None, dtype=nbgrad.float64):
    x = nbgrad.tensor(vals, dtype=dtype, requires_grad=True)
    y = f(x)
    g = nbgrad.ones_like(y) if upstream is None else nbgrad.tensor(upstream, dtype=y.dtype)
    y.backward(g)
    return y.detach().numpy(), x.grad.numpy()


def _same(got, expected):
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(expected, float))


# -- item 1: backward selects; NaN/Inf from upstream never leak through an unselected branch -----

F = nbgrad.nn.functional
ONE3 = [1.0, 1.0, 1.0]

# (name, f, inputs, upstream gradient, expected grad) -- each expected row is PyTorch 2.13's
SELECT_CASES = [
    ("sqrt(relu)", lambda x: nbgrad.sqrt(nbgrad.relu(x)), [-1.0, 0.0, 4.0], None, [0, 0, 0.25]),
    ("relu", nbgrad.relu, [-1.0, 0.0, 1.0], [nan, inf, nan], [0, 0, nan]),
    ("F.relu", F.relu, [-1.0, 0.0, 1.0], [nan, inf, nan], [0, 0, nan]),
    ("clamp", lambda x: x.clamp(-1, 1), [-2.0, 0.0, 2.0, nan], [nan, nan, inf, 1], [0, nan, 0, 0]),
    (
        "clamp_min",
        lambda x: x.clamp_min(0),
        [-2.0, 0.0, 2.0, nan],
        [nan, nan, inf, 1],
        [0, nan, inf, 0],
    ),
    (
        "clamp_max",
        lambda x: x.clamp_max(0),
        [-2.0, 0.0, 2.0, nan],
        [nan, nan, inf, 1],
        [nan, nan, 0, 0],
    ),
    ("floor", nbgrad.floor, [1.5, nan, inf], [nan, inf, 1.0], [0, 0, 0]),
    ("ceil", nbgrad.ceil, [1.5, nan, inf], [nan, inf, 1.0], [0, 0, 0]),
    ("round", nbgrad.round, [1.5, nan, inf], [nan, inf, 1.0], [0, 0, 0]),
    ("trunc", nbgrad.trunc, [1.5, nan, inf], [nan, inf, 1.0], [0, 0, 0]),
    ("sign", nbgrad.sign, [1.5, nan, 0.0], [nan, inf, 1.0], [0, 0, 0]),
    ("pow0", lambda x: x**0, [1.0, 2.0], [nan, inf], [0, 0]),
    ("where", lambda x: nbgrad.where(x > 0, x, 0.0), [-1.0, 1.0], [nan, nan], [0, nan]),
    ("masked_fill", lambda x: x.masked_fill(x > 0, 3.0), [-1.0, 1.0], [nan, nan], [nan, 0]),
    (
        "maximum",
        lambda x: nbgrad.maximum(x, nbgrad.ones_like(x)),
        [0.0, 1.0, 2.0],
        [nan, inf, nan],
        [0, inf, nan],
    ),
    (
        "minimum",
        lambda x: nbgrad.minimum(x, nbgrad.ones_like(x)),
        [0.0, 1.0, 2.0],
        [nan, inf, nan],
        [nan, inf, 0],
    ),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.0), [-1.0, 1.0], [nan, nan], [nan, nan]),
    ("abs", nbgrad.abs, [0.0, -0.0, nan, 1.0], [nan, inf, 1.0, 1.0], [nan, nan, 0, 1]),
    ("mul0", lambda x: x * 0.0, [1.0], [nan], [nan]),
]


@pytest.mark.parametrize("name,f,vals,up,expected", SELECT_CASES, ids=[c[0] for c in SELECT_CASES])
def test_backward_selects_like_pytorch(name, f, vals, up, expected):
    _, g = _grad(f, vals, up)
    _same(g, expected)


@pytest.mark.parametrize("name,f,vals,up,expected", SELECT_CASES, ids=[c[0] for c in SELECT_CASES])
def test_create_graph_backward_selects_too(name, f, vals, up, expected):
    x = nbgrad.tensor(vals, dtype=nbgrad.float64, requires_grad=True)
    y = f(x)
    gy = nbgrad.ones_like(y) if up is None else nbgrad.tensor(up, dtype=y.dtype)
    (g,) = nbgrad.autograd.grad(y, x, gy, create_graph=True)
    _same(g.detach().numpy(), expected)


def test_constant_zero_partials_give_zeros_whatever_the_gradient_holds():
    x = nbgrad.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    gy = nbgrad.tensor([nan, inf, -inf], requires_grad=True)
    (g,) = nbgrad.autograd.grad(nbgrad.floor(x), x, gy, create_graph=True)
    _same(g.detach().numpy(), [0, 0, 0])
    (gg,) = nbgrad.autograd.grad(g.sum(), gy)  # zero second derivative, not NaN
    _same(gg.numpy(), [0, 0, 0])


# (name, f, primal, tangent, expected tangent) -- PyTorch 2.13's forward-mode results
JVP_CASES = [
    ("relu", nbgrad.relu, [-1.0, 0.0, 1.0, nan], [nan, nan, 1.0, 1.0], [0, 0, 1, 1]),
    ("floor", nbgrad.floor, [-1.0, 0.0, 1.0, nan], [nan, nan, 1.0, 1.0], [0, 0, 0, 0]),
    (
        "clamp",
        lambda t: t.clamp(0, 0.5),
        [-1.0, 0.0, 1.0, nan],
        [nan, nan, 1.0, 1.0],
        [0, nan, 0, 0],
    ),
    ("sign", nbgrad.sign, [-1.0, 0.0, 1.0, nan], [nan, nan, 1.0, 1.0], [0, 0, 0, 0]),
    ("abs", nbgrad.abs, [-1.0, 0.0, 1.0, nan], [nan, nan, 1.0, 1.0], [nan, nan, 1, 0]),
    (
        "where",
        lambda t: nbgrad.where(t > 0, t, 0.0),
        [-1.0, 0.0, 1.0, nan],
        [nan, nan, 1.0, 1.0],
        [0, 0, 1, 0],
    ),
    (
        "maximum",
        lambda t: nbgrad.maximum(t, nbgrad.zeros_like(t)),
        [-1.0, 0.0, 1.0, nan],
        [nan, nan, 1.0, 1.0],
        [nan, nan, 1, 0],
    ),
]


@pytest.mark.parametrize("name,f,p,t,expected", JVP_CASES, ids=[c[0] for c in JVP_CASES])
def test_forward_mode_nan_semantics_like_pytorch(name, f, p, t, expected):
    with fwAD.dual_level():
        x = fwAD.make_dual(nbgrad.tensor(p), nbgrad.tensor(t))
        tan = fwAD.unpack_dual(f(x)).tangent
    _same(tan.numpy(), expected)


# -- item 2: forward values and gradients at NaN/Inf/ties -----------------------------------------


def test_relu_of_nan_is_nan_with_gradient_one():
    y, g = _grad(nbgrad.relu, [nan, -0.0, -1.0, 2.0])
    _same(y, [nan, -0.0, 0, 2])
    assert np.signbit(y[1])  # relu(-0.0) is -0.0 in PyTorch
    _same(g, [1, 0, 0, 1])


def test_std_of_a_constant_has_zero_gradient():
    _, g = _grad(lambda x: x.std(), [2.0, 2.0, 2.0])
    _same(g, [0, 0, 0])
    _, g = _grad(lambda x: x.std(correction=0), [1.0, 1.0], nan)  # masked_fill, not multiply
    _same(g, [0, 0])
    x = nbgrad.tensor([[2.0, 2.0], [1.0, 3.0]], dtype=nbgrad.float64, requires_grad=True)
    x.std(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0], [-(0.5**0.5), 0.5**0.5]], rtol=1e-15)
    _, g = _grad(lambda x: x.std(), [2.0])  # one element: nan result, nan gradient
    _same(g, [nan])


def test_full_max_min_with_nan_send_the_gradient_to_the_nans():
    _same(_grad(lambda x: x.max(), [1.0, nan, 3.0])[1], [0, 1, 0])
    _same(_grad(lambda x: x.min(), [1.0, nan, 3.0])[1], [0, 1, 0])
    _same(_grad(lambda x: x.max(), [1.0, nan, nan])[1], [0, 0.5, 0.5])
    _same(_grad(lambda x: x.max(), [3.0, 1.0, 3.0])[1], [0.5, 0, 0.5])
    _same(_grad(lambda x: x.max(), [1.0, 2.0, 3.0, 3.0], nan)[1], [0, 0, nan, nan])
    # amax/amin scale by the count and multiply (PyTorch): NaN everywhere here
    _same(_grad(lambda x: x.amax(), [1.0, nan, 3.0])[1], [nan, nan, nan])
    _same(_grad(lambda x: x.amax(), [1.0, 2.0, 3.0, 3.0], nan)[1], [nan] * 4)


def test_maximum_minimum_with_nan_give_both_inputs_the_gradient():
    for fn in (nbgrad.maximum, nbgrad.minimum):
        a = nbgrad.tensor([nan, 1.0, 2.0, 1.0], requires_grad=True)
        b = nbgrad.tensor([1.0, nan, 1.0, 1.0], requires_grad=True)
        fn(a, b).sum().backward()
        big = 1.0 if fn is nbgrad.maximum else 0.0
        _same(a.grad.numpy(), [1, 1, big, 0.5])
        _same(b.grad.numpy(), [1, 1, 1 - big, 0.5])


def test_clamp_with_min_above_max_gives_max():
    y, g = _grad(lambda x: x.clamp(1, -1), [-2.0, 0.0, 2.0, nan])
    _same(y, [-1, -1, -1, nan])
    _same(g, [0, 0, 0, 0])
    _same(nbgrad.clamp(nbgrad.tensor([1, 5, -3]), 1, -1).numpy(), [-1, -1, -1])
    lo, hi = nbgrad.tensor(1.0), nbgrad.tensor(-1.0)
    _same(nbgrad.clamp(nbgrad.tensor([0.0, 5, -3]), lo, hi).numpy(), [-1, -1, -1])


def test_clamp_nan_bounds_and_signed_zero():
    x = nbgrad.tensor([1.0, nan, -0.0])
    _same(nbgrad.clamp(x, min=nan).numpy(), [nan] * 3)
    _same(nbgrad.clamp(x, max=nan).numpy(), [nan] * 3)
    _same(nbgrad.clamp_min(x, nan).numpy(), [nan] * 3)
    y = nbgrad.clamp(nbgrad.tensor([-0.0, 0.0]), 0.0)
    assert np.signbit(y.numpy()).tolist() == [True, False]
    _, g = _grad(lambda x: x.clamp(min=nan), [1.0, nan, -0.0])
    _same(g, [0, 0, 0])


def test_rsqrt_float32_of_zero_and_inf():
    for dt in (nbgrad.float32, nbgrad.float64):
        y = nbgrad.rsqrt(nbgrad.tensor([0.0, -0.0, inf, -1.0, 4.0], dtype=dt)).numpy()
        _same(y, [inf, -inf, 0, nan, 0.5])
    x = nbgrad.tensor([0.3, 2.0, 1e-30, 7e30], dtype=nbgrad.float32)
    expected = (1 / np.sqrt(x.numpy().astype(np.float64))).astype(np.float32)
    np.testing.assert_array_max_ulp(nbgrad.rsqrt(x).numpy(), expected, maxulp=1)


def test_sign_of_nan_is_zero():
    x = nbgrad.tensor([nan, -0.0, 0.0, -inf, inf, -2.0])
    y = nbgrad.sign(x).numpy()
    _same(y, [0, 0, 0, -1, 1, -1])
    assert not np.signbit(y[:3]).any()
    _same(nbgrad.sign(nbgrad.tensor([3, -2, 0])).numpy(), [1, -1, 0])


def test_lerp_with_infinite_input_uses_the_weight_split():
    a = nbgrad.tensor([inf, -inf, 1.0])
    e = nbgrad.zeros(3)
    _same(nbgrad.lerp(a, e, 0.5).numpy(), [inf, -inf, 0.5])
    _same(nbgrad.lerp(a, e, 0.7).numpy(), np.array([inf, -inf, 0.3], np.float32))
    _same(nbgrad.lerp(a, e, 1.0).numpy(), [nan, nan, 0])
    _same(nbgrad.lerp(a, e, 0.3).numpy(), [nan, nan, np.float32(0.7)])
    a = nbgrad.tensor([inf, -inf, 1.0, inf])
    e = nbgrad.tensor([0.0, 0.0, 2.0, inf])
    w = nbgrad.tensor([0.5, 0.3, 0.7, 0.5])
    _same(nbgrad.lerp(a, e, w).numpy(), np.array([inf, nan, 1.7, nan], np.float32))


# -- oracle sweep ---------------------------------------------------------------------------------

SPECIAL = [-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, inf, nan]
UPSTREAM = [nan, inf, -inf, 1.0, 0.0]


def _unary_cases(T):
    Fn = T.nn.functional
    return {
        "relu": T.relu,
        "abs": T.abs,
        "sign": T.sign,
        "floor": T.floor,
        "ceil": T.ceil,
        "round": T.round,
        "trunc": T.trunc,
        "clamp": lambda x: T.clamp(x, -1, 1),
        "clamp_lo_hi_swapped": lambda x: T.clamp(x, 1, -1),
        "clamp_min": lambda x: T.clamp_min(x, 0.5),
        "clamp_max": lambda x: T.clamp_max(x, 0.5),
        "pow0": lambda x: x**0,
        "pow2": lambda x: x**2,
        "where": lambda x: T.where(x > 0, x, 0.0),
        "masked_fill": lambda x: x.masked_fill(x < 0, 2.0),
        "maximum": lambda x: T.maximum(x, T.full_like(x, 0.5)),
        "minimum": lambda x: T.minimum(x, T.full_like(x, 0.5)),
        "max_other": lambda x: T.maximum(T.full_like(x, 0.5), x),
        "leaky_relu": lambda x: Fn.leaky_relu(x, 0.1),
        "softplus": lambda x: Fn.softplus(x, 1.0, 1.0),
        "sigmoid": T.sigmoid,
        "tanh": T.tanh,
        "exp": T.exp,
        "rsqrt": T.rsqrt,
        "sqrt": T.sqrt,
        "lerp": lambda x: T.lerp(x, T.zeros_like(x), 0.5),
        "remainder": lambda x: T.remainder(x, 1.5),
    }


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nan_inf_sweep_against_torch(dtype):
    """Every op above, every special value, every special upstream gradient: forward values and
    gradients identical to PyTorch's (NaN where PyTorch has NaN, never elsewhere)."""
    bad = []
    ours, theirs = _unary_cases(nbgrad), _unary_cases(torch)
    n = len(SPECIAL)
    vals = SPECIAL * len(UPSTREAM)
    ups = [u for u in UPSTREAM for _ in range(n)]
    for name in ours:
        res = []
        for T, f in ((nbgrad, ours[name]), (torch, theirs[name])):
            x = T.tensor(vals, dtype=getattr(T, dtype), requires_grad=True)
            y = f(x)
            y.backward(T.tensor(ups, dtype=y.dtype))
            res.append((y.detach().numpy().astype(np.float64), x.grad.numpy().astype(np.float64)))
        (y0, g0), (y1, g1) = res
        for what, a, b in (("value", y0, y1), ("grad", g0, g1)):
            tol = 0 if dtype == "float64" else 1e-6
            ok = np.isclose(a, b, rtol=tol, atol=0, equal_nan=True) | (a == b)
            if not ok.all():
                i = int(np.argmin(ok))
                bad.append(
                    "%s %s at x=%r up=%r: nbgrad %r torch %r"
                    % (name, what, vals[i], ups[i], a[i], b[i])
                )
    assert not bad, "\n".join(bad)


@needs_torch
def test_jvp_nan_sweep_against_torch():
    import torch.autograd.forward_ad as tfw

    bad = []
    ours, theirs = _unary_cases(nbgrad), _unary_cases(torch)
    n = len(SPECIAL)
    vals = SPECIAL * len(UPSTREAM)
    tans = [u for u in UPSTREAM for _ in range(n)]
    for name in ours:
        res = []
        for T, fw, f in ((nbgrad, fwAD, ours[name]), (torch, tfw, theirs[name])):
            with fw.dual_level():
                x = fw.make_dual(T.tensor(vals, dtype=T.float64), T.tensor(tans, dtype=T.float64))
                t = fw.unpack_dual(f(x)).tangent
                res.append(np.zeros(len(vals)) if t is None else t.numpy().astype(np.float64))
        a, b = res
        ok = np.isclose(a, b, rtol=1e-14, atol=0, equal_nan=True) | (a == b)
        if not ok.all():
            i = int(np.argmin(ok))
            bad.append(
                "%s tangent at x=%r t=%r: nbgrad %r torch %r" % (name, vals[i], tans[i], a[i], b[i])
            )
    assert not bad, "\n".join(bad)
