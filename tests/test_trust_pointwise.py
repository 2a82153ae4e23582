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
    ("rpow0", lambda x: 0.0**x, [0.0, 1.0, -1.0, 2.0], None, [0, 0, -inf, 0]),
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
    # PyTorch's zeros_like(grad): a constant, even under create_graph
    assert not g.requires_grad and g.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        nbgrad.autograd.grad(g.sum(), gy)


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
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
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


# -- item 3: shapes of dim reductions, 0-d and empty inputs ---------------------------------------


def test_max_min_over_the_only_dim_of_a_1d_tensor_are_0d():
    x = nbgrad.tensor([1.0, 3.0, 2.0], requires_grad=True)
    for r in (x.max(0), x.min(0), nbgrad.max(x, -1), nbgrad.min(x, dim=0)):
        assert r.values.shape == () and r.indices.shape == ()
    assert x.max(0, keepdim=True).values.shape == (1,)
    x.max(0).values.backward()
    _same(x.grad.numpy(), [0, 1, 0])


def test_dim_reductions_of_a_0d_tensor():
    s = nbgrad.tensor(2.0, requires_grad=True)
    for f in (
        lambda: s.max(0).values,
        lambda: s.max(-1).values,
        lambda: s.min(0, keepdim=True).values,
        lambda: s.amax(0),
        lambda: s.sum(0),
        lambda: s.cumsum(0),
        lambda: s.logsumexp(0),
        lambda: s.norm(dim=0),
    ):
        s.grad = None
        y = f()
        assert y.shape == () and y.item() == 2.0
        y.backward()
        assert s.grad.item() == 1.0
    r = s.max(0)
    assert r.indices.shape == () and r.indices.item() == 0
    assert s.argmax(0).shape == () and s.argmin(0, keepdim=True).item() == 0
    for log, value in ((False, 1.0), (True, 0.0)):
        s.grad = None
        y = s.log_softmax(0) if log else s.softmax(0)
        assert y.shape == () and y.item() == value
        y.backward()
        assert s.grad.item() == 0.0
    s.grad = None
    y = s.std(0, correction=0)
    y.backward()
    assert y.item() == 0.0 and s.grad.item() == 0.0
    b = nbgrad.tensor(True)
    assert b.all(0).shape == () and b.any(0).item() is True
    with pytest.raises(IndexError, match="Dimension out of range"):
        s.max(1)


def test_reductions_over_empty_tensors():
    e = nbgrad.ones(0, 2, requires_grad=True)
    for f in (lambda: e.max(1), lambda: e.min(1), lambda: e.max(1, keepdim=True)):
        r = f()
        assert r.values.shape == r.indices.shape and r.values.shape[0] == 0
        assert r.indices.dtype is nbgrad.int64
        r.values.sum().backward()
        assert e.grad.shape == (0, 2)
    assert e.argmax(1).shape == (0,) and e.argmin(1, keepdim=True).shape == (0, 1)
    assert nbgrad.ones(2, 0, 3).sum((0, 2)).shape == (0,)
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim 0 to have non-zero"):
        e.amax(0)
    with pytest.raises(IndexError, match=r"^amin\(\): Expected reduction dim -2 to have non-zero"):
        e.amin((1, -2))
    with pytest.raises(IndexError, match=r"^argmin\(\): Expected reduction dim 0 to have non-zero"):
        e.argmin(-2)
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified"):
        e.argmax()
    with pytest.raises(RuntimeError, match=r"^amax\(\): Expected reduction dim to be specified"):
        e.amax()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        e.norm(inf)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on the dimension 0"):
        e.norm(inf, 0)
    assert e.norm(inf, 1).shape == (0,)


def _reduction_cases(T):
    return {
        "sum": lambda x, d: x.sum(d),
        "sum_kd": lambda x, d: x.sum(d, keepdim=True),
        "mean": lambda x, d: x.mean(d),
        "prod": lambda x, d: x.prod(d),
        "amax": lambda x, d: x.amax(d),
        "amin_kd": lambda x, d: x.amin(d, keepdim=True),
        "max": lambda x, d: x.max(d),
        "min_kd": lambda x, d: x.min(d, keepdim=True),
        "argmax": lambda x, d: x.argmax(d),
        "argmin_kd": lambda x, d: x.argmin(d, keepdim=True),
        "var": lambda x, d: x.var(d),
        "std0": lambda x, d: x.std(d, correction=0),
        "logsumexp": lambda x, d: x.logsumexp(d),
        "cumsum": lambda x, d: x.cumsum(d),
        "softmax": lambda x, d: x.softmax(d),
        "log_softmax": lambda x, d: x.log_softmax(d),
        "norm": lambda x, d: x.norm(dim=d),
        "norm_inf": lambda x, d: x.norm(inf, d),
        "all": lambda x, d: (x > 0).all(d),
        "any": lambda x, d: (x > 0).any(d),
    }


def _results_match(a, b):
    """Nested lists/tuples equal, floats to 1e-12 relative (NaN equals NaN)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_results_match(u, v) for u, v in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return bool(np.isclose(a, b, rtol=1e-12, atol=0, equal_nan=True))
    return a == b and type(a) is type(b)


@needs_torch
def test_reductions_of_0d_and_empty_tensors_against_torch():
    """Shapes, dtypes, values, gradients and exception types of dim reductions on 0-d and empty
    tensors, as PyTorch's."""
    import warnings

    shapes_dims = [
        ((), 0),
        ((), -1),
        ((), 1),
        ((0,), 0),
        ((0, 2), 0),
        ((0, 2), 1),
        ((2, 0), 1),
        ((2, 0), 0),
        ((2, 0, 3), 1),
        ((2, 0, 3), 2),
        ((3,), 0),
        ((2, 3), -1),
    ]
    bad = []
    for name in _reduction_cases(nbgrad):
        for shape, d in shapes_dims:
            res = []
            for T in (nbgrad, torch):
                f = _reduction_cases(T)[name]
                x = T.arange(int(np.prod(shape)), dtype=T.float64).reshape(shape) + 1
                x.requires_grad_(True)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        y = f(x, d)
                    if isinstance(y, tuple):
                        idx, y = y[1], y[0]
                        extra = (tuple(idx.shape), str(idx.dtype).split(".")[-1], idx.tolist())
                    else:
                        extra = ()
                    out = [tuple(y.shape), str(y.dtype).split(".")[-1], y.tolist(), extra]
                    if y.requires_grad:
                        y.sum().backward()
                        out.append(x.grad.tolist())
                except Exception as e:  # noqa: BLE001
                    out = [type(e).__name__]
                res.append(out)
            if not _results_match(*res):
                bad.append("%s%s dim=%s: nbgrad %s torch %s" % (name, shape, d, *res))
    assert not bad, "\n".join(bad)


# -- item 4: a pointwise node saves only what the partials of its differentiable inputs need ------


def _nonleaf(vals):
    return nbgrad.tensor(vals, requires_grad=True) * 1


def test_mul_div_by_a_scalar_save_no_input():
    for f in (lambda x: x * 2, lambda x: 2 * x, lambda x: x / 2, lambda x: x - 2 * x.detach()):
        x0 = nbgrad.tensor([1.0, 2.0], requires_grad=True)
        x = x0 * 1
        y = f(x)
        x.add_(1)  # x is not saved: no "modified by an inplace operation" error
        y.sum().backward()
    y = nbgrad.tensor([1.0, 2.0], requires_grad=True) * 2
    assert y.grad_fn._saved_self is None and y.grad_fn._saved_other == 2


def test_mul_saves_only_the_other_operand_of_the_input_that_requires_grad():
    x = _nonleaf([1.0, 2.0])
    c = nbgrad.tensor([3.0, 4.0])
    y = x * c
    assert y.grad_fn._saved_self is None
    _same(y.grad_fn._saved_other.numpy(), [3, 4])
    x.mul_(5)  # not saved
    y.sum().backward()
    c2 = c * 1
    y = x * c2
    c2.add_(1)  # saved: d/dx needs it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # y requires grad, x does not: div saves both (d/dy = -x / y^2), mul only x
    w = _nonleaf([1.0, 2.0])
    assert (c / w).grad_fn._saved_self is not None and (c / w).grad_fn._saved_other is not None
    assert (c * w).grad_fn._saved_other is None


def test_pack_hook_computing_on_its_input_does_not_recurse():
    calls = []

    def pack(t):
        calls.append(1)
        assert len(calls) < 10, "recursion"
        return 2 * t  # records MulBackward0, which saves no tensor

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with nbgrad.autograd.graph.saved_tensors_hooks(pack, lambda t: t / 2):
        z = (x * x).sum()
    assert len(calls) == 2
    z.backward()
    _same(x.grad.numpy(), [2, 4])


def test_saved_values_have_pytorchs_names():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    n = (x**2).grad_fn
    assert n._saved_exponent == 2 and n._saved_self is not None
    n = (2**x).grad_fn
    assert n._saved_self == 2 and n._saved_exponent is not None and n._saved_result is not None
    n = (x**x).grad_fn
    assert all(
        getattr(n, a) is not None for a in ("_saved_self", "_saved_exponent", "_saved_result")
    )
    n = nbgrad.clamp(x, 0, 1).grad_fn
    assert (n._saved_min, n._saved_max) == (0, 1)
    assert nbgrad.lerp(x, x, 0.3).grad_fn._saved_weight == 0.3
    _same(nbgrad.where(x > 1, x, x).grad_fn._saved_condition.numpy(), [False, True])
    _same(x.masked_fill(x > 1, 2.0).grad_fn._saved_mask.numpy(), [False, True])
    assert F.leaky_relu(x, 0.1).grad_fn._saved_negative_slope == 0.1
    with pytest.raises(AttributeError):
        nbgrad.where(x > 1, x, x).grad_fn._saved_self  # noqa: B018


@needs_torch
def test_saved_attributes_match_torch():
    """Every ``_saved_*`` PyTorch's node has, nbgrad's has with the same value (None where the
    node does not need it)."""

    def value(v):
        return None if v is None else (v.tolist() if hasattr(v, "tolist") else v)

    cases = {
        "mul": lambda T, x, y: x * y,
        "div": lambda T, x, y: x / y,
        "mul_scalar": lambda T, x, y: x * 2,
        "pow": lambda T, x, y: x**y,
        "pow_scalar": lambda T, x, y: x**2,
        "rpow": lambda T, x, y: 2**y,
        "maximum": lambda T, x, y: T.maximum(x, y),
        "lerp": lambda T, x, y: T.lerp(x, y, y),
        "lerp_scalar": lambda T, x, y: T.lerp(x, y, 0.25),
        "remainder": lambda T, x, y: T.remainder(x, y),
        "square": lambda T, x, y: x * x,
        "exp": lambda T, x, y: y.exp(),
        "where": lambda T, x, y: T.where(x > 1, x, y),
        "masked_fill": lambda T, x, y: y.masked_fill(x > 1, 2.0),
        "clamp": lambda T, x, y: y.clamp(0, 1),
        "relu": lambda T, x, y: y.relu(),
        "leaky_relu": lambda T, x, y: T.nn.functional.leaky_relu(y, 0.2),
        "softplus": lambda T, x, y: T.nn.functional.softplus(y, 2, 3),
    }
    bad = []
    for rx, ry in ((True, False), (False, True), (True, True)):
        for name, f in cases.items():
            nodes = []
            for T in (nbgrad, torch):
                x = T.tensor([1.0, 2.0], requires_grad=rx)
                y = T.tensor([3.0, 4.0], requires_grad=ry)
                nodes.append(f(T, x, y).grad_fn)
            ours, theirs = nodes
            if theirs is None:
                continue
            for k in dir(theirs):
                if k.startswith("_saved_") and not k.endswith("sym_sizes"):
                    try:
                        got = value(getattr(ours, k))
                    except AttributeError:
                        got = "missing"
                    if got != value(getattr(theirs, k)):
                        bad.append(
                            "%s rg=%s %s: %r, torch %r"
                            % (name, (rx, ry), k, got, value(getattr(theirs, k)))
                        )
    assert not bad, "\n".join(bad)


# -- item 5: node names of pointwise overloads ----------------------------------------------------


def _name_cases(T):
    def rg(v):
        return T.tensor(v, requires_grad=True)

    return {
        "clamp_T": lambda x, y: T.clamp(x, y, y + 1),
        "clamp_min_kw_T": lambda x, y: T.clamp(x, min=y),
        "clamp_max_kw_T": lambda x, y: T.clamp(x, max=y),
        "clip_T": lambda x, y: T.clip(x, y),
        "clamp_0d_number": lambda x, y: T.clamp(x, T.tensor(-1.0), 1.0),
        "clamp_min_T": lambda x, y: T.clamp_min(x, y),
        "clamp_max_T": lambda x, y: T.clamp_max(x, y),
        "rsub_T": lambda x, y: T.rsub(x, y),
        "rsub_s": lambda x, y: T.rsub(x, 2.0),
        "div_trunc": lambda x, y: T.div(x, y, rounding_mode="trunc"),
        "div_floor": lambda x, y: T.div(x, y, rounding_mode="floor"),
        "div_floor_s": lambda x, y: T.div(x, 2.0, rounding_mode="floor"),
        "round_dec": lambda x, y: T.round(x, decimals=1),
        "round_dec0": lambda x, y: T.round(x, decimals=0),
        "round_dec_neg": lambda x, y: T.round(x * 100, decimals=-2),
        "masked_fill_T": lambda x, y: x.masked_fill(x > 0, T.tensor(5.0)),
        "masked_fill_T_rg": lambda x, y: x.masked_fill(x > 0, rg(5.0)),
        "floor_divide": lambda x, y: T.floor_divide(x, y),
        "pow_T": lambda x, y: x**y,
        "rpow": lambda x, y: 2**x,
        "remainder_T": lambda x, y: T.remainder(x, y),
        "lerp_T": lambda x, y: T.lerp(x, y, y),
        "where": lambda x, y: T.where(x > 0, x, y),
    }


@needs_torch
def test_pointwise_node_names_values_and_grads_match_torch():
    bad = []
    up = [nan, 1.0, -2.0, inf, 0.5]
    for name in _name_cases(nbgrad):
        res = []
        for T in (nbgrad, torch):
            x = T.tensor([1.25, -2.5, 3.0, nan, 0.0], dtype=T.float64, requires_grad=True)
            y = T.tensor([2.0, 1.5, 3.0, 1.0, -1.0], dtype=T.float64, requires_grad=True)
            try:
                z = _name_cases(T)[name](x, y)
                r = [type(z.grad_fn).__name__, z.grad_fn.name(), z.detach().tolist()]
                try:
                    z.backward(T.tensor(up, dtype=z.dtype))
                    r += [None if v.grad is None else v.grad.tolist() for v in (x, y)]
                except RuntimeError as e:
                    r.append(str(e))
            except Exception as e:  # noqa: BLE001
                r = [type(e).__name__]
            res.append(r)
        if not _results_match(*res):
            bad.append("%s: nbgrad %s\n     torch %s" % (name, *res))
    assert not bad, "\n".join(bad)


def test_clamp_with_tensor_bounds_is_clamp_backward0_with_bound_gradients():
    x = nbgrad.tensor([0.5, -1.0, 3.0, nan], requires_grad=True)
    lo = nbgrad.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
    hi = nbgrad.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    z = nbgrad.clamp(x, lo, hi)
    assert z.grad_fn.name() == "ClampBackward0"
    z.backward(nbgrad.tensor([1.0, 2.0, 4.0, 8.0]))
    _same(x.grad.numpy(), [1, 0, 0, 0])
    _same(lo.grad.numpy(), [0, 2, 0, 0])
    _same(hi.grad.numpy(), [0, 0, 4, 0])
    x = nbgrad.tensor([0.5], requires_grad=True)
    assert nbgrad.clamp_min(x, nbgrad.tensor(0.0)).grad_fn.name() == "ClampMinBackward1"
    assert nbgrad.clamp(x, nbgrad.tensor(0.0), 1.0).grad_fn.name() == "ClampBackward1"
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        nbgrad.clamp(x, nbgrad.tensor([0.0]), 1.0)
    assert nbgrad.clamp(nbgrad.tensor([1, 5, -3]), 1.5).dtype is nbgrad.float32


def test_div_rounding_modes_and_round_decimals_have_zero_gradients():
    x = nbgrad.tensor([1.25, -2.5], requires_grad=True)
    y = nbgrad.tensor([2.0, 1.5], requires_grad=True)
    for mode in ("trunc", "floor"):
        x.grad = y.grad = None
        z = nbgrad.div(x, y, rounding_mode=mode)
        assert z.grad_fn.name() == "DivBackward2"
        z.backward(nbgrad.tensor([nan, inf]))
        _same(x.grad.numpy(), [0, 0])
        _same(y.grad.numpy(), [0, 0])
    z = nbgrad.round(x, decimals=1)
    assert z.grad_fn.name() == "RoundBackward1"
    _same(z.detach().numpy(), np.array([1.2, -2.5], np.float32))
    _same(
        nbgrad.round(nbgrad.tensor([150.0, 250.0, -150.0]), decimals=-2).numpy(), [200, 200, -200]
    )
    with pytest.raises(NotImplementedError, match="round_cpu"):
        nbgrad.round(nbgrad.tensor([1, 2]), decimals=1)
    assert nbgrad.round(x).grad_fn.name() == "RoundBackward0"


def test_masked_fill_with_a_tensor_value_gives_it_a_gradient():
    x = nbgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    v = nbgrad.tensor(5.0, requires_grad=True)
    z = x.masked_fill(x > 0, v)
    assert z.grad_fn.name() == "MaskedFillBackward1"
    z.backward(nbgrad.tensor([nan, nan, 2.0]))
    _same(x.grad.numpy(), [0, nan, 0])
    assert v.grad.shape == () and math.isnan(v.grad.item())


def test_floor_divide_records_a_node_whose_backward_raises():
    x = nbgrad.tensor([1.5, -2.5], requires_grad=True)
    z = nbgrad.floor_divide(x, 2.0)
    assert type(z.grad_fn).__name__ == "NotImplemented"
    assert z.grad_fn.name() == "torch::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        z.sum().backward()


# -- item 6: elementwise results keep PyTorch's memory layout -------------------------------------


def test_first_operand_layout_wins_a_conflict():
    a = nbgrad.arange(24.0).reshape(2, 3, 4)
    t = a.transpose(0, 2)
    assert (t + t.contiguous()).stride() == (1, 4, 12)  # PyTorch: the first operand decides
    assert (t.contiguous() + t).stride() == (6, 2, 1)
    _same((t + t.contiguous()).numpy(), 2 * t.numpy())
    assert nbgrad.where(t > 3, t, t.contiguous()).stride() == (1, 4, 12)
    assert a.mT.masked_fill(a.mT > 3, 0.0).stride() == (12, 3, 1)  # masked_fill: contiguous
    assert a.mT.exp().stride() == (12, 1, 4)


def _layout_views(T, rng):
    """(name, tensor) pairs of one shape, each a different memory layout of the same values."""
    base = T.tensor(rng.standard_normal((3, 4, 5)))
    return [
        ("c", base),
        ("t02", base.permute(2, 1, 0).contiguous().permute(2, 1, 0)),
        ("p120", base.permute(1, 2, 0).contiguous().permute(2, 0, 1)),
        ("f", base.permute(2, 1, 0).contiguous().permute(2, 1, 0)),
        ("slice", T.tensor(rng.standard_normal((3, 8, 5)))[:, ::2]),
        ("exp1", base[:, :1].expand(3, 4, 5)),
    ]


@needs_torch
def test_elementwise_strides_match_torch():
    bad = []
    ops = {
        "add": lambda T, a, b: a + b,
        "mul": lambda T, a, b: a * b,
        "sub_scalar": lambda T, a, b: a - 2.0,
        "exp": lambda T, a, b: a.exp(),
        "maximum": lambda T, a, b: T.maximum(a, b),
        "where": lambda T, a, b: T.where(a > 0, a, b),
        "where_cond_b": lambda T, a, b: T.where(b > 0, a, b),
        "lerp_T": lambda T, a, b: T.lerp(a, b, b),
        "clamp_T": lambda T, a, b: T.clamp(a, b, b + 1),
        "clamp": lambda T, a, b: a.clamp(-0.5, 0.5),
        "pow_T": lambda T, a, b: a.abs() ** b,
        "masked_fill": lambda T, a, b: a.masked_fill(b > 0, 1.0),
        "bcast_row": lambda T, a, b: a + b[0, 0],
    }
    for name, f in ops.items():
        for i in range(6):
            for j in range(6):
                res = []
                for T in (nbgrad, torch):
                    views = _layout_views(T, np.random.default_rng(7))
                    (na, a), (nb, b) = views[i], views[j]
                    res.append(f(T, a, b).stride())
                if res[0] != res[1]:
                    bad.append("%s(%s, %s): nbgrad %s torch %s" % (name, na, nb, *res))
    assert not bad, "\n".join(bad)


# -- item 7: complex forward and backward ---------------------------------------------------------

ZX = [1 + 2j, -0.5 + 0.25j, 2 - 1j]
ZY = [0.5 - 1j, 1 + 1j, -2 + 0.5j]


def test_complex_mul_backward_conjugates():
    """PyTorch's convention: the gradient of a holomorphic f is g * conj(f'(z))."""
    x = nbgrad.tensor(ZX, dtype=nbgrad.complex128, requires_grad=True)
    (x * x).backward(nbgrad.ones(3, dtype=nbgrad.complex128))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.conj(np.array(ZX)), rtol=1e-15)
    x = nbgrad.tensor(ZX, dtype=nbgrad.complex128, requires_grad=True)
    (x**2).sum().backward(nbgrad.tensor(1 + 0j, dtype=nbgrad.complex128))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.conj(np.array(ZX)), rtol=1e-15)


def test_real_to_complex_backward_takes_the_real_part():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    z = x.to(nbgrad.complex64)
    (z * (1 + 1j)).abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2**0.5, 2**0.5], rtol=1e-6)
    assert x.grad.dtype is nbgrad.float32
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    (x * nbgrad.tensor([1j, 1 + 1j])).abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 2**0.5], rtol=1e-6)
    assert x.grad.dtype is nbgrad.float32


def test_complex_abs_is_real():
    x = nbgrad.tensor(ZX, requires_grad=True)
    y = x.abs()
    assert y.dtype is nbgrad.float32 and y.grad_fn.name() == "AbsBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.array(ZX) / np.abs(ZX), rtol=1e-6)


def _complex_unary(T):
    return {
        "neg": lambda x: -x,
        "exp": T.exp,
        "exp2": T.exp2,
        "log": T.log,
        "log2": T.log2,
        "log1p": T.log1p,
        "expm1": T.expm1,
        "sqrt": T.sqrt,
        "rsqrt": T.rsqrt,
        "sin": T.sin,
        "cos": T.cos,
        "tan": T.tan,
        "tanh": T.tanh,
        "sigmoid": T.sigmoid,
        "reciprocal": T.reciprocal,
        "square": T.square,
        "pow": lambda x: x**2.5,
        "pow_int": lambda x: x**3,
        "rpow": lambda x: 2**x,
        "abs": T.abs,
        "mul_scalar": lambda x: x * 2,
        "mul_imag": lambda x: x * 1j,
        "div_scalar": lambda x: x / (1 - 2j),
        "rsub": lambda x: 2 - x,
        "lerp": lambda x: T.lerp(x, x * x, 0.3),
        "masked_fill": lambda x: x.masked_fill(x.abs() > 1, 2.0),
        "sum": lambda x: x.sum(),
        "sum0": lambda x: x.sum(0),
        "mean": lambda x: x.mean(),
        "prod": lambda x: x.prod(),
        "cumsum": lambda x: x.cumsum(0),
        "var": lambda x: x.var(),
        "std": lambda x: x.std(),
        "norm": lambda x: x.norm(),
        "to_c128": lambda x: x.to(T.complex128),
    }


def _complex_binary(T):
    return {
        "b_add": lambda x, y: x + y,
        "b_sub": lambda x, y: x - y,
        "b_mul": lambda x, y: x * y,
        "b_div": lambda x, y: x / y,
        "b_pow": lambda x, y: x**y,
        "b_where": lambda x, y: T.where(x.abs() > 1, x, y),
        "b_lerp_T": lambda x, y: T.lerp(x, y, y),
    }


def _cplx_run(T, f, args, dtype):
    xs = [T.tensor(a, dtype=getattr(T, dtype), requires_grad=True) for a in args]
    z = f(*xs)
    loss = (z.abs() ** 2).sum() if z.is_complex() else z.sum()
    loss.backward()
    return [str(z.dtype).split(".")[-1], z.detach().numpy()] + [x.grad.numpy() for x in xs]


def _cplx_close(a, b, rtol):
    if isinstance(a, str):
        return a == b
    return np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)


@needs_torch
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_values_and_gradients_match_torch(dtype):
    rtol = 1e-5 if dtype == "complex64" else 1e-12
    bad = []
    cases = [(n, f, [ZX]) for n, f in _complex_unary(nbgrad).items()]
    cases += [(n, f, [ZX, ZY]) for n, f in _complex_binary(nbgrad).items()]
    theirs = {**_complex_unary(torch), **_complex_binary(torch)}
    for name, f, args in cases:
        try:
            ours = _cplx_run(nbgrad, f, args, dtype)
        except Exception as e:  # noqa: BLE001
            bad.append("%s: nbgrad raised %s: %s" % (name, type(e).__name__, e))
            continue
        ref = _cplx_run(torch, theirs[name], args, dtype)
        if len(ours) != len(ref) or not all(_cplx_close(a, b, rtol) for a, b in zip(ours, ref)):
            bad.append("%s:\n  nbgrad %s\n  torch  %s" % (name, ours, ref))
    assert not bad, "\n".join(bad)


@needs_torch
def test_complex_create_graph_and_forward_mode_match_torch():
    import torch.autograd.forward_ad as tfw

    for name in ("b_mul", "b_div", "b_pow"):
        res = []
        for T in (nbgrad, torch):
            x = T.tensor(ZX, dtype=T.complex128, requires_grad=True)
            y = T.tensor(ZY, dtype=T.complex128, requires_grad=True)
            z = _complex_binary(T)[name](x, y)
            (gx,) = T.autograd.grad(z.abs().pow(2).sum(), x, create_graph=True)
            (ggy,) = T.autograd.grad(gx.abs().pow(2).sum(), y)
            res.append((gx.detach().numpy(), ggy.numpy()))
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)
    for name in ("exp", "pow", "sigmoid", "mul_imag"):
        res = []
        for T, fw in ((nbgrad, fwAD), (torch, tfw)):
            with fw.dual_level():
                x = fw.make_dual(T.tensor(ZX, dtype=T.complex128), T.tensor(ZY, dtype=T.complex128))
                res.append(fw.unpack_dual(_complex_unary(T)[name](x)).tangent.numpy())
        np.testing.assert_allclose(res[0], res[1], rtol=1e-12, err_msg=name)


def _complex_errors(T):
    F_ = T.nn.functional
    c = T.tensor(ZY)
    return {
        "relu": T.relu,
        "clamp": lambda x: x.clamp(0, 1),
        "clamp_min": lambda x: x.clamp_min(0),
        "clamp_T": lambda x: x.clamp(c, c),
        "sign": T.sign,
        "floor": T.floor,
        "ceil": T.ceil,
        "round": T.round,
        "round_dec": lambda x: T.round(x, decimals=1),
        "trunc": T.trunc,
        "maximum": lambda x: T.maximum(x, c),
        "minimum": lambda x: T.minimum(x, c),
        "remainder": lambda x: T.remainder(x, 2),
        "erf": T.erf,
        "leaky_relu": lambda x: F_.leaky_relu(x, 0.1),
        "softplus": F_.softplus,
        "gelu": F_.gelu,
        "div_floor": lambda x: T.div(x, c, rounding_mode="floor"),
        "div_trunc": lambda x: T.div(x, c, rounding_mode="trunc"),
        "floor_divide": lambda x: T.floor_divide(x, c),
        "max": lambda x: x.max(),
        "amax": lambda x: x.amax(),
        "max0": lambda x: x.max(0),
        "argmax": lambda x: x.argmax(),
        "softmax": lambda x: x.softmax(0),
    }


@needs_torch
def test_complex_ops_pytorch_rejects_raise_its_error():
    bad = []
    for name in _complex_errors(nbgrad):
        res = []
        for T in (nbgrad, torch):
            x = T.tensor(ZX, requires_grad=True)
            try:
                _complex_errors(T)[name](x)
                res.append(None)
            except Exception as e:  # noqa: BLE001
                res.append((type(e).__name__, str(e)))
        if res[0] != res[1]:
            bad.append("%s: nbgrad %s torch %s" % (name, *res))
    assert not bad, "\n".join(bad)


def test_elementwise_formulas_select_and_agree_with_the_registry_at_nan_and_ties():
    from nbgrad.kernels.vocab import maximum, sqrt, where

    @nbgrad.elementwise
    def sqrt_relu(x):
        return sqrt(where(x > 0, x, 0))

    @nbgrad.elementwise
    def my_max(a, b):
        return maximum(a, b)

    _, g = _grad(sqrt_relu, [-1.0, 0.0, 4.0])
    _same(g, [0, 0, 0.25])  # the where selects: no 0 * inf
    for fused in (True, False):
        a = nbgrad.tensor([nan, 1.0, 2.0, 1.0], dtype=nbgrad.float64, requires_grad=True)
        b = nbgrad.tensor([1.0, nan, 1.0, 1.0], dtype=nbgrad.float64, requires_grad=True)
        ga, gb = nbgrad.autograd.grad(my_max(a, b).sum(), (a, b), create_graph=not fused)
        _same(ga.detach().numpy(), [1, 1, 1, 0.5])
        _same(gb.detach().numpy(), [1, 1, 0, 0.5])


# -- more silently wrong values found by the sweeps below -----------------------------------------


def test_remainder_by_a_scalar_is_pytorchs_fmod_based_remainder():
    x = nbgrad.tensor([1.0, 1e20, -1.0, 7.0, inf], dtype=nbgrad.float64)
    # x - floor(x / y) * y gave -5.6e-17 for 1 % 0.1 and -5551 for 1e20 % 0.1
    with np.errstate(invalid="ignore"):
        _same((x % 0.1).numpy(), np.remainder(x.numpy(), 0.1))
    a = nbgrad.tensor([7, -7, 7, -7, 0])
    _same(nbgrad.remainder(a, 3).numpy(), [1, 2, 1, 2, 0])
    _same((a % -3).numpy(), [-2, -1, -2, -1, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        nbgrad.remainder(a, 0)
    # d/dy of remainder(x, y) is -floor_divide(x, y): NaN for an infinite x (fmod), as PyTorch
    x = nbgrad.tensor([-inf, 1.0], dtype=nbgrad.float64, requires_grad=True)
    y = nbgrad.tensor([-2.0, 0.1], dtype=nbgrad.float64, requires_grad=True)
    nbgrad.remainder(x, y).sum().backward()
    _same(y.grad.numpy(), [nan, -9.0])


def test_pow_by_a_scalar_uses_pytorchs_special_cases():
    x = nbgrad.tensor([-inf, -0.0, 4.0], dtype=nbgrad.float64, requires_grad=True)
    _same((x**0.5).detach().numpy(), [nan, -0.0, 2.0])  # sqrt, not C pow (which gives inf)
    _same((x**-0.5).detach().numpy(), [nan, -inf, 0.5])  # rsqrt
    (x**0.5).backward(nbgrad.tensor([1.0, inf, 1.0], dtype=nbgrad.float64))
    _same(x.grad.numpy(), [nan, -inf, 0.25])
    big = nbgrad.tensor([3037000499, -3], dtype=nbgrad.int64)
    _same((big**2).numpy(), [3037000499**2, 9])  # integers: exact


def test_pow_exponent_gradient_multiplies_its_mask_like_pytorch():
    # pow_backward_exponent is grad * where(base == 0 & exp >= 0, 0, result * log(base)):
    # a multiply, so a NaN gradient stays NaN there (the base gradient selects)
    x = nbgrad.tensor([0.0, 0.0], dtype=nbgrad.float64, requires_grad=True)
    y = nbgrad.tensor([0.0, 2.0], dtype=nbgrad.float64, requires_grad=True)
    (x**y).backward(nbgrad.tensor([nan, 1.0], dtype=nbgrad.float64))
    _same(y.grad.numpy(), [nan, 0])
    _same(x.grad.numpy(), [0, 0])


def _binary_cases(T):
    Fn = T.nn.functional
    return {
        "add": lambda x, y: x + y,
        "sub": lambda x, y: x - y,
        "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y,
        "pow": lambda x, y: x**y,
        "maximum": lambda x, y: T.maximum(x, y),
        "minimum": lambda x, y: T.minimum(x, y),
        "lerp_T": lambda x, y: T.lerp(x, y, T.full_like(x, 0.3)),
        "lerp_weight": lambda x, y: T.lerp(x, T.zeros_like(x), y),
        "where": lambda x, y: T.where(x > y, x, y),
        "remainder_T": lambda x, y: T.remainder(x, y),
        "clamp_T": lambda x, y: T.clamp(x, y, y + 1),
        "clamp_min_T": lambda x, y: T.clamp_min(x, y),
        "clamp_max_T": lambda x, y: T.clamp_max(x, y),
        "rsub_T": lambda x, y: T.rsub(x, y),
        "div_floor": lambda x, y: T.div(x, y, rounding_mode="floor"),
        "div_trunc": lambda x, y: T.div(x, y, rounding_mode="trunc"),
        "rpow": lambda x, y: 2.0**x,
        "rpow0": lambda x, y: 0.0**x,
        "pow_half": lambda x, y: x**0.5,
        "pow_m1": lambda x, y: x**-1.0,
        "pow3": lambda x, y: x**3,
        "pow_1_5": lambda x, y: x**1.5,
        "round_dec": lambda x, y: T.round(x, decimals=1),
        "remainder_s": lambda x, y: T.remainder(x, 0.75),
        "reciprocal": T.reciprocal,
        "log": T.log,
        "log1p": T.log1p,
        "expm1": T.expm1,
        "tan": T.tan,
        "exp2": T.exp2,
        "log2": T.log2,
        "gelu_tanh": lambda x, y: Fn.gelu(x, approximate="tanh"),
        "silu": Fn.silu,
        "softplus": lambda x, y: Fn.softplus(x, 2.0, 3.0),
    }


@needs_torch
def test_binary_nan_inf_sweep_against_torch():
    """Every pair of special values, and NaN/Inf/0 upstream gradients: float64 values and both
    gradients identical to PyTorch's."""
    import itertools

    pairs = list(itertools.product(SPECIAL, SPECIAL))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    bad = []
    for up in (1.0, nan, inf, 0.0):
        for name in _binary_cases(nbgrad):
            res = []
            for T in (nbgrad, torch):
                f = _binary_cases(T)[name]
                x = T.tensor(xs, dtype=T.float64, requires_grad=True)
                y = T.tensor(ys, dtype=T.float64, requires_grad=True)
                z = (
                    f(x, y)
                    if name
                    not in ("reciprocal", "log", "log1p", "expm1", "tan", "exp2", "log2", "silu")
                    else f(x)
                )
                if z.requires_grad:
                    z.backward(T.full_like(z, up))
                res.append(
                    [z.detach().numpy()]
                    + [np.zeros(len(xs)) if v.grad is None else v.grad.numpy() for v in (x, y)]
                )
            for what, a, b in zip(("value", "dx", "dy"), *res):
                ok = np.isclose(a, b, rtol=1e-12, atol=0, equal_nan=True) | (a == b)
                if not ok.all():
                    i = int(np.argmin(ok))
                    bad.append(
                        "%s up=%r %s at x=%r y=%r: nbgrad %r torch %r"
                        % (name, up, what, xs[i], ys[i], a[i], b[i])
                    )
    assert not bad, "\n".join(bad)


@needs_torch
def test_binary_forward_mode_nan_inf_sweep_against_torch():
    """Forward-mode tangents of the same ops over all pairs of special values, with NaN/Inf
    tangents and missing tangents (PyTorch's zero tensors: a strong zero)."""
    import itertools

    import torch.autograd.forward_ad as tfw

    one_arg = ("reciprocal", "log", "log1p", "expm1", "tan", "exp2", "log2", "silu")
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    bad = []
    for tx, ty in ((1.0, None), (nan, 1.0), (inf, None), (None, nan), (1.0, 1.0)):
        for name in _binary_cases(nbgrad):
            res = []
            for T, fw in ((nbgrad, fwAD), (torch, tfw)):
                f = _binary_cases(T)[name]
                with fw.dual_level():
                    x, y = T.tensor(xs, dtype=T.float64), T.tensor(ys, dtype=T.float64)
                    if tx is not None:
                        x = fw.make_dual(x, T.full((len(xs),), tx, dtype=T.float64))
                    if ty is not None:
                        y = fw.make_dual(y, T.full((len(xs),), ty, dtype=T.float64))
                    t = fw.unpack_dual(f(x) if name in one_arg else f(x, y)).tangent
                    res.append(np.zeros(len(xs)) if t is None else t.numpy())
            a, b = res
            ok = np.isclose(a, b, rtol=1e-12, atol=0, equal_nan=True) | (a == b)
            if not ok.all():
                i = int(np.argmin(ok))
                bad.append(
                    "%s t=(%r, %r) at x=%r y=%r: nbgrad %r torch %r"
                    % (name, tx, ty, xs[i], ys[i], a[i], b[i])
                )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("v", [float("nan"), float("inf"), 1.0])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_a_0d_tensor_propagates_nan_as_pytorch(v, name):
    """PyTorch's 0-d softmax backward is its general formula: NaN in, NaN gradient."""
    x = nbgrad.tensor(v, requires_grad=True)
    y = getattr(x, name)(-1)
    (g,) = nbgrad.autograd.grad(y, x, nbgrad.tensor(2.0))
    want = 0.0 if v == 1.0 else float("nan")
    _same(np.array(g.item()), np.array(want))


# -- issue 10 fuzz findings: mixed dtypes in backward, dtype checks, empty means, NaN patterns ---
#
# Each case is a function of the library (nbgrad or torch) returning plain data: tensors as
# (dtype, shape, values), exceptions as (type, message).  nbgrad must give the hard-coded
# PyTorch 2.13 result; with torch installed, torch is checked to give it too.


def _plain(v):
    if isinstance(v, (nbgrad.Tensor,) + ((torch.Tensor,) if torch is not None else ())):
        return (str(v.dtype).split(".")[-1], tuple(v.shape), v.detach().tolist())
    if isinstance(v, (list, tuple)):
        return [_plain(u) for u in v]
    return v


def _outcome(T, f):
    try:
        return _plain(f(T))
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return [type(e).__name__, str(e)]


def _close(a, b, rtol):
    """Nested results equal, floats to ``rtol`` (NaN equals NaN, infinities exactly)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(u, v, rtol) for u, v in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return bool(np.isclose(a, b, rtol=rtol, atol=0, equal_nan=True))
    return a == b


def _like_pytorch(f, expected, rtol=1e-6):
    got = _outcome(nbgrad, f)
    assert _close(got, _plain(expected), rtol), "nbgrad %r\nexpected %r" % (got, expected)
    if torch is not None:  # the hard-coded expectation is PyTorch's
        ref = _outcome(torch, f)
        assert _close(ref, _plain(expected), rtol), "torch %r\nexpected %r" % (ref, expected)


def _mixed_backward(op, create_graph=False):
    """float32 [1, -2] (op) float64 0-d 0.5: the result, each input's gradient."""

    def f(T):
        a = T.tensor([1.0, -2.0], dtype=T.float32, requires_grad=True)
        b = T.tensor(0.5, dtype=T.float64, requires_grad=True)
        y = op(T, a, b)
        ga, gb = T.autograd.grad(y.sum(), [a, b], create_graph=create_graph, allow_unused=True)
        return y, ga, gb

    return f


F32, F64 = "float32", "float64"
LN_HALF = math.log(0.5)
# (name, op, result, grad of the float32 input, grad of the float64 0-d input)
MIXED_CASES = [
    ("mul", lambda T, a, b: a * b, [0.5, -1.0], [0.5, 0.5], -1.0),
    ("div", lambda T, a, b: a / b, [2.0, -4.0], [2.0, 2.0], 4.0),
    ("pow_t", lambda T, a, b: b**a, [0.5, 4.0], [0.5 * LN_HALF, 4.0 * LN_HALF], -15.0),
    ("remainder", lambda T, a, b: T.remainder(a, b), [0.0, 0.0], [1.0, 1.0], 2.0),
    ("minimum", lambda T, a, b: T.minimum(a, b), [0.5, -2.0], [0.0, 1.0], 1.0),
    ("maximum", lambda T, a, b: T.maximum(b, a), [1.0, 0.5], [1.0, 0.0], 1.0),
    ("sub_alpha", lambda T, a, b: T.sub(a, b, alpha=0.5), [0.75, -2.25], [1.0, 1.0], -1.0),
    ("lerp_0d_weight", lambda T, a, b: T.lerp(a, a * 3, b), [2.0, -4.0], [2.0, 2.0], -2.0),
]


@pytest.mark.parametrize("create_graph", [False, True], ids=["fused", "create_graph"])
@pytest.mark.parametrize("name,op,y,ga,gb", MIXED_CASES, ids=[c[0] for c in MIXED_CASES])
def test_backward_with_float32_and_float64_operands_gives_each_input_its_dtype(
    name, op, y, ga, gb, create_graph
):
    """A float64 0-d operand does not promote a float32 tensor; the backward (a kernel compiled
    for float32) casts the saved float64 operand like the forward did (it raised TypeError: no
    ufunc signature for the mixed dtypes), and each gradient comes back in its input's dtype."""
    _like_pytorch(
        _mixed_backward(op, create_graph), [(F32, (2,), y), (F32, (2,), ga), (F64, (), gb)]
    )


def test_backward_with_an_integer_operand_casts_it_to_the_compute_dtype():
    def f(T):
        a = T.tensor([1.0, -2.0], dtype=T.float32, requires_grad=True)
        c = T.tensor([3, 1])
        return [T.autograd.grad(op(a, c).sum(), [a])[0] for op in (T.mul, T.div, T.pow)]

    _like_pytorch(f, [(F32, (2,), [3.0, 1.0]), (F32, (2,), [1 / 3, 1.0]), (F32, (2,), [3.0, 1.0])])


LERP_CASES = [
    ("end_f64", lambda T: T.lerp(T.ones(2), T.ones(2, dtype=T.float64), 0.3),
     ["RuntimeError", "expected dtype float for `end` but got dtype double"]),
    ("end_0d_f64", lambda T: T.lerp(T.ones(2), T.tensor(1.0, dtype=T.float64), 0.3),
     ["RuntimeError", "expected dtype float for `end` but got dtype double"]),
    ("end_int", lambda T: T.lerp(T.ones(2, dtype=T.float64), T.ones(2, dtype=T.int64), 0.5),
     ["RuntimeError", "expected dtype double for `end` but got dtype long int"]),
    ("weight_f32", lambda T: T.lerp(T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64),
                                    T.ones(2)),
     ["RuntimeError", "expected dtype double for `weight` but got dtype float"]),
    ("method", lambda T: T.ones(2).lerp(T.ones(2, dtype=T.float16), 0.3),
     ["RuntimeError", "expected dtype float for `end` but got dtype c10::Half"]),
    ("inplace_weight", lambda T: T.ones(2).lerp_(T.ones(2), T.ones(2, dtype=T.float64)),
     ["RuntimeError", "expected dtype float for `weight` but got dtype double"]),
    ("weight_0d_f64_promotes_like_a_scalar",
     lambda T: T.lerp(T.zeros(2), T.ones(2), T.tensor(0.25, dtype=T.float64)),
     (F32, (2,), [0.25, 0.25])),
    ("int_scalar_weight", lambda T: T.lerp(T.ones(2, dtype=T.int32), T.ones(2, dtype=T.int32), 1),
     ["NotImplementedError", "\"lerp_kernel_scalar\" not implemented for 'Int'"]),
    ("int_tensor_weight",
     lambda T: T.lerp(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64)),
     ["NotImplementedError", "\"lerp_kernel_tensor\" not implemented for 'Long'"]),
    ("int_0d_float_weight",
     lambda T: T.lerp(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64), T.tensor(0.5)),
     (F32, (2,), [1.0, 1.0])),
]  # fmt: skip


@pytest.mark.parametrize("name,f,expected", LERP_CASES, ids=[c[0] for c in LERP_CASES])
def test_lerp_takes_no_type_promotion_like_pytorch(name, f, expected):
    """lerp's end (and a weight of one dim or more) must have the input's dtype (it promoted
    them); a 0-d weight is promoted like a scalar; integer lerp has no kernel."""
    _like_pytorch(f, expected)


BCE_DTYPE_CASES = [
    ("f32_f64", lambda T: T.nn.functional.binary_cross_entropy(
        T.full((3,), 0.5), T.ones(3, dtype=T.float64)),
     ["RuntimeError", "Found dtype Double but expected Float"]),
    ("f64_f32_sum", lambda T: T.nn.functional.binary_cross_entropy(
        T.full((3,), 0.5, dtype=T.float64), T.ones(3), reduction="sum"),
     ["RuntimeError", "Found dtype Float but expected Double"]),
    ("empty_none", lambda T: T.nn.functional.binary_cross_entropy(
        T.ones(0, requires_grad=True), T.ones(0, dtype=T.float16), reduction="none"),
     ["RuntimeError", "Found dtype Half but expected Float"]),
    ("checked_before_the_range", lambda T: T.nn.functional.binary_cross_entropy(
        T.full((3,), 2.0), T.ones(3, dtype=T.float64)),
     ["RuntimeError", "Found dtype Double but expected Float"]),
    ("long_input", lambda T: T.nn.functional.binary_cross_entropy(
        T.ones(3, dtype=T.int64), T.ones(3)),
     ["RuntimeError", "Found dtype Float but expected Long"]),
    ("module", lambda T: T.nn.BCELoss()(T.full((3,), 0.5), T.ones(3, dtype=T.float64)),
     ["RuntimeError", "Found dtype Double but expected Float"]),
    ("weight_of_another_dtype_is_fine", lambda T: T.nn.functional.binary_cross_entropy(
        T.full((2,), 0.5), T.ones(2), weight=T.ones(2, dtype=T.float64), reduction="sum"),
     (F32, (), 2 * math.log(2.0))),
]  # fmt: skip


@pytest.mark.parametrize("name,f,expected", BCE_DTYPE_CASES, ids=[c[0] for c in BCE_DTYPE_CASES])
def test_binary_cross_entropy_target_must_have_the_input_dtype(name, f, expected):
    _like_pytorch(f, expected)


def _bcel_f32_input_f64_target(T):
    x = T.tensor([0.5, -2.0], requires_grad=True)
    t = T.tensor([1.0, 0.0], dtype=T.float64)
    r = T.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="sum")
    r.backward()
    return r, x.grad


BCEL_DTYPE_CASES = [
    ("f32_input_f64_target", _bcel_f32_input_f64_target,
     [(F64, (), 0.6010050773620605), (F32, (2,), [-0.377540647983551, 0.11920291930437088])]),
    ("f64_input_f32_target", lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.tensor([0.5, -2.0], dtype=T.float64), T.tensor([1.0, 0.0]), reduction="none"),
     (F32, (2,), [0.4740769863128662, 0.12692801654338837])),
    ("long_target", lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.ones(3), T.ones(3, dtype=T.int64)),
     ["RuntimeError", "result type Float can't be cast to the desired output type Long"]),
    ("bool_target", lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.ones(3, dtype=T.float64), T.ones(3, dtype=T.bool)),
     ["RuntimeError", "Subtraction, the `-` operator, with two bool tensors is not supported. "
      "Use the `^` or `logical_xor()` operator instead."]),
]  # fmt: skip


@pytest.mark.parametrize("name,f,expected", BCEL_DTYPE_CASES, ids=[c[0] for c in BCEL_DTYPE_CASES])
def test_binary_cross_entropy_with_logits_takes_the_target_dtype(name, f, expected):
    """PyTorch computes ``(1 - target).mul_(input).sub_(...)``: the loss has the target's dtype
    (it had the input's) and an integer or bool target raises (it was accepted)."""
    _like_pytorch(f, expected)


def _empty_mean_loss(loss, create_graph):
    def f(T):
        x = T.zeros((2, 0), dtype=T.float64, requires_grad=True)
        t = T.zeros((2, 0), dtype=T.float64)
        y = loss(T, x, t)
        (g,) = T.autograd.grad(y, [x], create_graph=create_graph)
        out = [y, g, g.requires_grad]
        if create_graph:
            (gg,) = T.autograd.grad((g * g).sum(), [x], allow_unused=True)
            out.append(gg)
        return out

    return f


EMPTY_LOSSES = {
    "bce": lambda T, x, t: T.nn.functional.binary_cross_entropy(T.sigmoid(x), t),
    "bce_logits": lambda T, x, t: T.nn.functional.binary_cross_entropy_with_logits(x, t),
    "bce_logits_pos_weight": lambda T, x, t: T.nn.functional.binary_cross_entropy_with_logits(
        x, t, pos_weight=T.ones(0, dtype=T.float64)
    ),
    "mse": lambda T, x, t: T.nn.functional.mse_loss(x, t),
    "bce_of_repeat": lambda T, x, t: T.nn.functional.binary_cross_entropy(
        T.sigmoid(x.repeat(2, 1, 3)), t.repeat(2, 1, 3)
    ),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["fused", "create_graph"])
@pytest.mark.parametrize("name", sorted(EMPTY_LOSSES))
def test_mean_reduced_loss_of_an_empty_input_has_empty_gradients(name, create_graph):
    """A mean over no elements is NaN and its backward scales by 1/0 (it raised
    ZeroDivisionError): an empty gradient, in the graph when one is built."""
    empty = (F64, (2, 0), [[], []])
    expected = [(F64, (), nan), empty, create_graph]
    if create_graph:
        expected.append(empty)
    _like_pytorch(_empty_mean_loss(EMPTY_LOSSES[name], create_graph), expected)


BN_EMPTY_CASES = [
    ("no_channels", (2, 0, 3), dict(training=True), (F64, (2, 0, 3), [[], []]), None),
    ("no_batch_affine_running", (0, 3),
     dict(affine=True, running=True, training=True), (F64, (0, 3), []), [0.0, 0.0, 0.0]),
    ("no_batch_eval_no_buffers", (0, 3), dict(training=False), (F64, (0, 3), []), None),
    ("no_length_running", (2, 3, 0),
     dict(affine=True, running=True, training=True), (F64, (2, 3, 0), [[[], [], []]] * 2),
     [0.0, 0.0, 0.0]),
]  # fmt: skip


@pytest.mark.parametrize("name,shape,kw,y,gw", BN_EMPTY_CASES, ids=[c[0] for c in BN_EMPTY_CASES])
def test_batch_norm_of_an_empty_input_is_pytorchs_clone_path(name, shape, kw, y, gw):
    """PyTorch's batch norm of no elements: ``x.clone() * w[0] + b[0]``, no statistics (a
    channel-less input divided by zero) and running buffers untouched (they became NaN)."""

    def f(T):
        C = shape[1]
        x = T.ones(shape, dtype=T.float64, requires_grad=True)
        running = kw.get("running")
        rm = T.zeros(C, dtype=T.float64) if running else None
        rv = T.ones(C, dtype=T.float64) if running else None
        affine = kw.get("affine")
        w = T.full((C,), 2.0, dtype=T.float64, requires_grad=True) if affine else None
        b = T.full((C,), 0.5, dtype=T.float64, requires_grad=True) if affine else None
        out = T.nn.functional.batch_norm(x, rm, rv, w, b, training=kw["training"])
        out.sum().backward()
        res = [out, x.grad]
        if affine:
            res += [w.grad, b.grad, rm, rv]
        return res

    expected = [y, (F64, shape, y[2])]
    if gw is not None:
        C = shape[1]
        expected += [
            (F64, (C,), gw),
            (F64, (C,), gw),
            (F64, (C,), [0.0] * C),
            (F64, (C,), [1.0] * C),
        ]
    _like_pytorch(f, expected)


def test_batch_norm_checks_one_value_per_channel_without_dividing_by_the_channels():
    f = lambda T: T.nn.functional.batch_norm(T.ones(1, 0), None, None, training=True)  # noqa: E731
    _like_pytorch(
        f,
        [
            "ValueError",
            "Expected more than 1 value per channel when training, got input size "
            "torch.Size([1, 0])",
        ],
    )


CUMSUM_CASES = [
    ("neg_inf", lambda T: T.tensor([-inf], dtype=T.float64).cumsum(-1), (F64, (1,), [-inf])),
    ("inf_then_finite", lambda T: T.tensor([inf, 1.0, -2.0]).cumsum(0), (F32, (3,), [inf] * 3)),
    ("neg_zero_starts_from_zero", lambda T: T.tensor([[-0.0, -0.0]]).cumsum(1),
     (F32, (1, 2), [[0.0, 0.0]])),
    ("float32_accumulates_in_double", lambda T: T.tensor([1e8, 1.0, -1e8]).cumsum(0),
     (F32, (3,), [1e8, 1e8, 1.0])),
    ("float32_partial_sum_beyond_range", lambda T: T.tensor([3e38, 3e38, -3e38]).cumsum(0),
     (F32, (3,), [float(np.float32(3e38)), inf, float(np.float32(3e38))])),
    ("0d_keeps_neg_zero", lambda T: T.tensor(-0.0).cumsum(0), (F32, (), -0.0)),
]  # fmt: skip


@pytest.mark.parametrize("name,f,expected", CUMSUM_CASES, ids=[c[0] for c in CUMSUM_CASES])
def test_cumsum_is_pytorchs_running_sum_from_zero(name, f, expected):
    """The running sum starts at a 0 of PyTorch's accumulator type (float64 for float32): it
    started at ``x[0] - x[0]``, NaN at an infinity, and accumulated in float32."""
    _like_pytorch(f, expected, rtol=0)
    if name == "neg_zero_starts_from_zero":  # +0.0, not -0.0 (== cannot tell them apart)
        assert math.copysign(1.0, f(nbgrad)[0, 0].item()) == 1.0


LSE_CASES = [
    ("nan_and_inf", [1.0, nan, inf], nan, [nan, nan, nan]),
    ("inf_then_nan", [inf, nan], nan, [nan, nan]),
    ("nan_first", [nan, -inf], nan, [nan, nan]),
    ("inf", [1.0, inf], inf, [0.0, nan]),
    ("all_neg_inf", [-inf, -inf], -inf, [nan, nan]),
]


@pytest.mark.parametrize("name,vals,y,g", LSE_CASES, ids=[c[0] for c in LSE_CASES])
def test_logsumexp_nan_wins_over_infinities(name, vals, y, g):
    """PyTorch's max shift is amax, which propagates NaN: [nan, inf] is NaN (it was inf)."""

    def f(T):
        x = T.tensor(vals, dtype=T.float64, requires_grad=True)
        out = T.logsumexp(x, 0)
        out.backward()
        return out, x.grad

    _like_pytorch(f, [(F64, (), y), (F64, (len(vals),), g)], rtol=0)


FILL_CASES = {
    "zero_": lambda y: y.zero_(),
    "fill_": lambda y: y.fill_(3.0),
    "fill_tensor": lambda y: y.fill_(y.new_tensor(3.0)),
    "copy_": lambda y: y.copy_(y.new_tensor([5.0, 6.0])),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["fused", "create_graph"])
@pytest.mark.parametrize("name", sorted(FILL_CASES))
def test_overwritten_values_get_exact_zero_gradients(name, create_graph):
    """zero_/fill_/copy_ give the overwritten input zeros_like(grad) (it was grad * 0, NaN where
    the upstream gradient is inf or NaN), which do not require grad."""

    def f(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        FILL_CASES[name](y)
        z = (y * T.tensor([inf, nan])).sum()
        (g,) = T.autograd.grad(z, [x], create_graph=create_graph)
        return g, g.requires_grad

    _like_pytorch(f, [(F32, (2,), [0.0, 0.0]), False], rtol=0)


def _bn_inf_weight(T, create_graph):
    x = T.tensor([[[0.0], [-2.0]], [[-1.0], [-1.0]]], dtype=T.float64, requires_grad=True)
    w = T.tensor([1.0, -inf], dtype=T.float64, requires_grad=True)
    b = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.batch_norm(x, None, None, w, b, training=True)
    up = T.tensor([[[1.0], [1.0]], [[0.0], [2.0]]], dtype=T.float64)
    return [y] + list(T.autograd.grad(y, [x, w, b], up, create_graph=create_graph))


def _ln_inf_weight(T, create_graph):
    x = T.tensor([[-0.5, 1.5, 2.0]], dtype=T.float64, requires_grad=True)
    w = T.tensor([1.0, inf, 1.0], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.layer_norm(x, (3,), w)
    return [y] + list(T.autograd.grad(y.sum(), [x, w], create_graph=create_graph))


def _bn_strided_inf_weight(T, create_graph):
    x = T.tensor([[[-1.0, 1.0], [-1.0, 2.0]]], dtype=T.float64).mT.requires_grad_()
    w = T.tensor([1.0, inf], dtype=T.float64, requires_grad=True)
    b = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.batch_norm(x, None, None, w, b, training=True)
    return [y] + list(T.autograd.grad(y.sum(), [x, w, b], create_graph=create_graph))


def _bn_eval_inf_input(T, create_graph):
    x = T.tensor([[1.0, inf], [2.0, 3.0]], dtype=T.float64, requires_grad=True)
    rm, rv = T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)
    y = T.nn.functional.batch_norm(x, rm, rv, training=False)
    return [y] + list(T.autograd.grad(y.sum(), [x], create_graph=create_graph))


R5 = 1 / math.sqrt(1 + 1e-5)  # rstd of a unit variance
NORM_CASES = [
    ("batch_norm_inf_weight", _bn_inf_weight, [
        (F64, (2, 2, 1), [[[1.99998000059998], [nan]], [[1.9999400020065394e-05], [nan]]]),
        (F64, (2, 2, 1), [[[3.999760012007546e-05], [inf]], [[-3.999760012007546e-05], [-inf]]]),
        (F64, (2,), [0.9999800005999799, 0.9999800005999799]),
        (F64, (2,), [1.0, 3.0]),
    ]),
    ("layer_norm_inf_weight", _ln_inf_weight, [
        (F64, (1, 3), [[-1.3887241979964466, inf, 0.925816131997631]]),
        (F64, (1, 3), [[nan, nan, nan]]),
        (F64, (3,), [-1.3887241979964466, 0.4629080659988155, 0.925816131997631]),
    ]),
    # a non-contiguous input takes PyTorch's generic path, ((x - mean) * rstd) * w + b
    ("batch_norm_strided_inf_weight", _bn_strided_inf_weight, [
        (F64, (1, 2, 2), [[[1.0, 1.0], [-inf, inf]]]),
        (F64, (1, 2, 2), [[[0.0, 0.0], [nan, nan]]]),
        (F64, (2,), [0.0, 0.0]),
        (F64, (2,), [2.0, 2.0]),
    ]),
    ("batch_norm_eval_inf_input", _bn_eval_inf_input, [
        (F64, (2, 2), [[R5, inf], [2 * R5, 3 * R5]]),
        (F64, (2, 2), [[R5, R5], [R5, R5]]),
    ]),
]  # fmt: skip


def _ln_constant_row(T):
    x = T.tensor([[[0.19] * 5]], dtype=T.float64, requires_grad=True)
    w = T.tensor([1.0, inf, -inf, 1.0, 1.0], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.layer_norm(x, (5,), w, T.ones(5, dtype=T.float64))
    gx, gw = T.autograd.grad(y.sum(), [x, w])
    return y, gx, [abs(v) < 1e-12 for v in gw.tolist()]


def _bn_constant_channel(v, n, inf_w):
    def f(T):
        x = T.full((n, 2, 3), v, dtype=T.float64)
        x[:, 1] = T.arange(3 * n, dtype=T.float64).reshape(n, 3) / 4
        x.requires_grad_()
        w = T.tensor([inf_w, 1.0], dtype=T.float64, requires_grad=True)
        y = T.nn.functional.batch_norm(x, None, None, w, training=True)
        (gx,) = T.autograd.grad(y.sum(), [x])
        return y[:, 0], gx[:, 0]

    return f


@pytest.mark.parametrize(
    "name,f,expected",
    [
        # PyTorch's Welford row moments: a row of equal values has exactly that mean, so it
        # normalises to 0 and an infinite weight gives NaN (the plain mean 0.19000000000000003
        # gave +-inf)
        ("layer_norm", _ln_constant_row, [
            (F64, (1, 1, 5), [[[1.0, nan, nan, 1.0, 1.0]]]),
            (F64, (1, 1, 5), [[[nan] * 5]]),
            [True] * 5,
        ]),
        # PyTorch sums a batch-norm channel sequentially: 6 x 0.42082412505635486 / 6 is exact
        # (gradient NaN), 9 x -0.010913289016957092 / 9 is not (+-inf); a vectorised sum
        # rounded these the other way
        ("batch_norm_exact_mean", _bn_constant_channel(0.42082412505635486, 2, -inf), [
            (F64, (2, 3), [[nan] * 3] * 2), (F64, (2, 3), [[nan] * 3] * 2),
        ]),
        ("batch_norm_inexact_mean", _bn_constant_channel(-0.010913289016957092, 3, inf), [
            (F64, (3, 3), [[nan] * 3] * 3), (F64, (3, 3), [[-inf] * 3] * 3),
        ]),
    ],
    ids=["layer_norm", "batch_norm_exact_mean", "batch_norm_inexact_mean"],
)  # fmt: skip
def test_normalising_equal_values_matches_pytorchs_mean_rounding(name, f, expected):
    """Equal values normalise to exactly 0 when the mean is exactly their value; with an
    infinite weight that decides between NaN and +-inf, so the mean is rounded as PyTorch's."""
    _like_pytorch(f, expected, rtol=0)


@pytest.mark.parametrize("create_graph", [False, True], ids=["fused", "create_graph"])
@pytest.mark.parametrize("name,f,expected", NORM_CASES, ids=[c[0] for c in NORM_CASES])
def test_normalisation_follows_pytorchs_formula_order_at_infinities(
    name, f, expected, create_graph
):
    """NOTE [normalisation formula order]: batch_norm's ``x * alpha + beta`` (LLVM's reassoc
    had factored it into ``(x - mean) * alpha + b``: inf where PyTorch's inf - inf is NaN),
    layer_norm's backward ``a * g * w + b * x + c`` (the textbook form gave -inf where PyTorch
    gives NaN), and eval-mode batch_norm's ``g * rstd * w`` (``(x - mean) * 0`` made NaN of an
    infinite input); the create_graph backward evaluates the same formulas."""
    _like_pytorch(lambda T: f(T, create_graph), expected, rtol=1e-9)


REMAINDER_ZERO_CASES = [
    ("tensor", lambda T: T.remainder(T.tensor([-2.0, 2.0, -0.0, 0.0]),
                                     T.tensor([1.0, -1.0, 1.0, -1.0]))),
    ("scalar", lambda T: T.remainder(T.tensor([-2.0, 2.0, -0.0, 0.0]), 1.0)),
    ("negative_scalar", lambda T: T.tensor([-2.0, 2.0, -0.0, 0.0]) % -1.0),
    ("scalar_self", lambda T: T.remainder(-2.0, T.tensor([1.0, -1.0]))),
]  # fmt: skip


@pytest.mark.parametrize("name,f", REMAINDER_ZERO_CASES, ids=[c[0] for c in REMAINDER_ZERO_CASES])
def test_remainder_zero_keeps_the_sign_of_x_like_pytorchs_fmod(name, f):
    """PyTorch's remainder is fmod moved by y where the signs differ, so a zero result has x's
    sign (numpy's remainder gives it y's: 2 / (-2 % 1) was inf, PyTorch's -inf)."""
    want = {"scalar_self": [-1.0, -1.0]}.get(name, [-1.0, 1.0, -1.0, 1.0])
    for T in (nbgrad,) + ((torch,) if torch is not None else ()):
        r = f(T).tolist()
        assert r == [0.0] * len(want)
        assert [math.copysign(1.0, v) for v in r] == want, (T.__name__, r)


ALPHA_CASES = [
    ("add", lambda T, a, b: T.add(a, b, alpha=2), [2.0, 6.0], [1.0, 1.0], [2.0, 2.0]),
    ("sub", lambda T, a, b: T.sub(a, b, alpha=0.5), [1.375, -4.0], [1.0, 1.0], [-0.5, -0.5]),
    ("method", lambda T, a, b: a.sub(b, alpha=-2), [2.0, 6.0], [1.0, 1.0], [2.0, 2.0]),
]


@pytest.mark.parametrize("name,f,y,ga,gb", ALPHA_CASES, ids=[c[0] for c in ALPHA_CASES])
def test_add_sub_with_alpha_are_one_node_with_saved_alpha(name, f, y, ga, gb):
    """add/sub with alpha record PyTorch's single AddBackward0/SubBackward0 (``_saved_alpha``)
    straight to both inputs; there was a MulBackward0 in front of ``other``."""

    def run(T):
        a = T.tensor([1.5, -2.0], requires_grad=True)
        b = T.tensor([0.25, 4.0], requires_grad=True)
        out = f(T, a, b)
        node = out.grad_fn
        out.sum().backward()
        nexts = [type(n).__name__ for n, _ in node.next_functions]
        return out, a.grad, b.grad, node.name(), nexts, node._saved_alpha

    alpha = {"add": 2, "sub": 0.5, "method": -2}[name]
    node = "AddBackward0" if name == "add" else "SubBackward0"
    _like_pytorch(
        run,
        [(F32, (2,), y), (F32, (2,), ga), (F32, (2,), gb), node, ["AccumulateGrad"] * 2, alpha],
    )


INT_ALPHA = "For integral input tensors, argument alpha must not be a floating point number."
CPLX_ALPHA = "For non-complex input tensors, argument alpha must not be a complex number."
ALPHA_CHECK_CASES = [
    ("int_float_alpha", lambda T: T.add(T.tensor([3, -4]), T.tensor([1, 1]), alpha=0.5),
     ["RuntimeError", INT_ALPHA]),
    ("int_scalar_float_alpha", lambda T: T.sub(T.tensor([3, -4]), 2, alpha=0.5),
     ["RuntimeError", INT_ALPHA]),
    ("complex_alpha", lambda T: T.add(T.ones(2), T.ones(2), alpha=1j),
     ["RuntimeError", CPLX_ALPHA]),
    ("bool_alpha_int", lambda T: T.add(T.tensor([3]), T.tensor([1]), alpha=False),
     ["RuntimeError", "Boolean alpha only supported for Boolean results."]),
    ("bool_result", lambda T: T.add(T.tensor([True, False]), T.tensor([True, False]), alpha=2),
     ("bool", (2,), [True, False])),
    ("int_alpha", lambda T: T.add(T.tensor([3, -4]), T.tensor([1, 2]), alpha=3),
     ("int64", (2,), [6, 2])),
    ("plain_add_saved_alpha",
     lambda T: (T.ones(1, requires_grad=True) + 1).grad_fn._saved_alpha, 1),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,f,expected", ALPHA_CHECK_CASES, ids=[c[0] for c in ALPHA_CHECK_CASES]
)
def test_alpha_is_checked_against_the_result_dtype(name, f, expected):
    _like_pytorch(f, expected)


SOFTMAX_0D_CASES = [  # (log, x, upstream, value, gradient)
    (False, 1.0, 1.0, 1.0, 0.0),
    (False, 1.0, inf, 1.0, nan),
    (False, inf, 1.0, nan, nan),
    (True, 1.0, nan, 0.0, nan),
    (True, 1.0, -inf, 0.0, nan),
    (True, 2.0, 3.0, 0.0, 0.0),
]


@pytest.mark.parametrize("create_graph", [False, True], ids=["fused", "create_graph"])
@pytest.mark.parametrize("log,x,up,y,g", SOFTMAX_0D_CASES)
def test_softmax_of_a_0d_tensor_is_the_one_element_formula(log, x, up, y, g, create_graph):
    """A 0-d softmax is PyTorch's formula over one element, y * (g - g * y) (log_softmax:
    g - exp(y) * g): NaN for a non-finite gradient (it was exact zeros), and a create_graph
    gradient in the graph (it was a constant, so a second backward raised)."""

    def f(T):
        t = T.tensor(x, dtype=T.float64, requires_grad=True)
        out = T.log_softmax(t, 0) if log else T.softmax(t, 0)
        (gr,) = T.autograd.grad(out, [t], T.tensor(up, dtype=T.float64), create_graph=create_graph)
        return out, gr, gr.requires_grad

    _like_pytorch(f, [(F64, (), y), (F64, (), g), create_graph], rtol=0)


MIXED_LAYOUT_CASES = [
    ("expanded_pow", lambda T: T.ones(3, 1).expand(3, 3, -1) ** T.ones(1, 1, 1, dtype=T.float64),
     (3, 1)),
    # the expanded first operand is cast to a contiguous copy, which then decides: C order
    ("expanded_first_sub", lambda T: T.ones(1, 1, 1).expand(1, 4, 3)
     - T.ones(1, 3, 4, dtype=T.float64).mT, (3, 1)),
    ("stepped_first_add", lambda T: T.ones(2, 3, 8)[..., ::2] + T.ones(2, 4, 3, dtype=T.float64).mT,
     (12, 4, 1)),
    ("permuted_mul", lambda T: T.ones(2, 3, 4).permute(2, 0, 1) * T.ones(4, 2, 3, dtype=T.float64),
     (1, 12, 4)),
    ("permuted_lerp", lambda T: T.lerp(T.ones(2, 3, 4).permute(2, 0, 1), T.ones(4, 2, 3),
                                       T.tensor(0.5, dtype=T.float64)), (1, 12, 4)),
    ("permuted_clamp", lambda T: T.clamp(T.ones(2, 3, 4).permute(2, 0, 1),
                                         min=T.zeros(4, 2, 3, dtype=T.float64)), (1, 12, 4)),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,f,stride", MIXED_LAYOUT_CASES, ids=[c[0] for c in MIXED_LAYOUT_CASES]
)
def test_operands_of_another_dtype_are_cast_like_pytorch_before_the_layout(name, f, stride):
    """An operand of another dtype is cast as PyTorch's ``to(dtype)`` casts it (a dense one
    keeps its layout, an expanded or stepped one becomes contiguous) before the operands'
    layouts decide the result's; numpy's astype kept an expanded array's stride order, which
    then decided (size-1 dims' strides are not observable and not compared)."""
    _like_pytorch(lambda T: tuple(st for st, n in zip(f(T).stride(), f(T).shape) if n > 1), stride)


def _out_layout(T, op):
    x = T.tensor([[[1.0, 2.0], [3.0, 4.0]]], dtype=T.float64).mT
    o = T.zeros((0,), dtype=T.float64)
    op(T, x, o)  # (the stride of a size-1 dim is not observable)
    return tuple(st for st, n in zip(o.stride(), o.shape) if n > 1), o.tolist()


OUT_LAYOUT_CASES = [
    ("add", lambda T, x, o: T.add(x, T.tensor(1.0, dtype=T.float64), out=o),
     ((1, 2), [[[2.0, 4.0], [3.0, 5.0]]])),
    ("exp_log", lambda T, x, o: T.log(T.exp(x), out=o), ((1, 2), [[[1.0, 3.0], [2.0, 4.0]]])),
    ("matmul_stays_contiguous", lambda T, x, o: T.matmul(x, x, out=o),
     ((2, 1), [[[7.0, 15.0], [10.0, 22.0]]])),
]  # fmt: skip


@pytest.mark.parametrize("name,op,expected", OUT_LAYOUT_CASES, ids=[c[0] for c in OUT_LAYOUT_CASES])
def test_an_empty_out_is_resized_with_the_results_layout(name, op, expected):
    """An empty ``out=`` tensor is resized like PyTorch's iterator output: in the elementwise
    result's layout (it was always C order)."""
    _like_pytorch(lambda T: _out_layout(T, op), expected)


def test_layer_norm_saves_its_bias_like_pytorch():
    """NativeLayerNormBackward0 saves the bias: modifying it in place before backward raises
    PyTorch's version error (the bias was not saved, so the backward ran); batch norm saves
    no bias, so the same is fine there."""

    def run(T, norm):
        x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        w = T.ones(3, dtype=T.float64, requires_grad=True)
        b = T.ones(3, dtype=T.float64)
        y = norm(T, x, w, b)
        b.mul_(2)
        try:
            y.sum().backward()
        except RuntimeError as e:
            return "modified by an inplace operation" in str(e)
        return False

    ln = lambda T, x, w, b: T.nn.functional.layer_norm(x, (3,), w, b)  # noqa: E731
    bn = lambda T, x, w, b: T.nn.functional.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    _like_pytorch(lambda T: [run(T, ln), run(T, bn)], [True, False])


def test_prod_backward_of_a_0d_zero():
    x = nbgrad.tensor(0.0, dtype=nbgrad.float64, requires_grad=True)
    (g,) = nbgrad.autograd.grad(x.prod(), x)
    assert g.item() == 1.0
