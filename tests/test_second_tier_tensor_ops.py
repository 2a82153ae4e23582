"""The second tier's tensor-level ops against PyTorch: special values (NaN/Inf/signed zeros),
upstream NaN/Inf gradients, forward mode, complex inputs, dtypes, errors (type and message),
0-d and empty inputs, in-place and out= forms.  Values and gradients on ordinary inputs, second
order and forward mode are also covered by the op table (tests/test_ops.py)."""

import itertools
import math

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.autograd.forward_ad as fwAD

inf, nan = math.inf, math.nan
SPECIAL = [-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, inf, nan]
UPSTREAM = [nan, inf, -inf, 1.0, 0.0]


def _np(t):
    return None if t is None else t.detach().numpy()


def _close(a, b, rtol, scaled=False):
    """Equal, NaN where the other is NaN, or within ``rtol`` (transcendental functions differ
    between numpy's and PyTorch's libm by an ulp); ``scaled``: also within ``rtol`` of the
    largest finite magnitude (at least 1: sums that cancel to about 0 keep different rounding
    noise)."""
    a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
    atol = 0.0
    if scaled:
        fin = np.abs(b[np.isfinite(b)])
        atol = rtol * max(1.0, float(fin.max()) if fin.size else 0.0)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) | (a == b)


def _outcome(T, build):
    """``build(T)``: the result(s) and the inputs to differentiate, or the exception raised."""
    try:
        return build(T)
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return (type(e).__name__, str(e))


def _same_error(build):
    ours, theirs = _outcome(nbgrad, build), _outcome(torch, build)
    assert isinstance(theirs, tuple) and isinstance(theirs[0], str), "torch did not raise"
    assert ours == theirs


def _agree(build, seed=0, rtol=1e-12, create_graph=False):
    """Values, dtypes, shapes, grad_fn names and gradients (for a random upstream gradient) of
    ``build(T) -> (outputs, inputs)`` equal PyTorch's; with ``create_graph`` also the gradient
    of the gradients' squared sum."""
    res = []
    for T in (nbgrad, torch):
        outs, ins = build(T)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        rng = np.random.default_rng(seed)
        live = [o for o in outs if o.requires_grad]
        gs = [T.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in live]
        grads, second = [], []
        if live and ins:
            grads = T.autograd.grad(live, ins, gs, allow_unused=True, create_graph=create_graph)
            if create_graph:
                live2 = [g for g in grads if g is not None and g.requires_grad]
                second = [g.requires_grad if g is not None else None for g in grads]
                if live2:
                    tot = sum((g * g).sum() for g in live2)
                    second += T.autograd.grad(tot, ins, allow_unused=True)
        res.append(
            (
                [(tuple(o.shape), str(o.dtype).split(".")[-1], _np(o)) for o in outs],
                [o.grad_fn.name() if o.grad_fn is not None else None for o in outs],
                [_np(g) for g in grads],
                [g if g is None or isinstance(g, bool) else _np(g) for g in second],
            )
        )
    (ov, on, og, o2), (tv, tn, tg, t2) = res
    assert on == tn
    for (s1, d1, a), (s2, d2, b) in zip(ov, tv):
        assert (s1, d1) == (s2, d2)
        assert _close(a, b, rtol).all(), (a, b)
    assert len(o2) == len(t2)
    for a, b in list(zip(og, tg)) + list(zip(o2, t2)):
        if isinstance(b, bool) or isinstance(a, bool):  # which gradients are in the graph
            assert a == b
            continue
        assert (a is None) == (b is None) or not np.any(a if a is not None else b)
        if a is not None and b is not None:
            assert _close(a, b, rtol, scaled=True).all(), (a, b)


# -- elementwise math: special values against PyTorch -----------------------------------------


def _unary(T):
    return {
        "atan": T.atan,
        "asin": T.asin,
        "acos": T.acos,
        "sinh": T.sinh,
        "cosh": T.cosh,
        "asinh": T.asinh,
        "acosh": T.acosh,
        "atanh": T.atanh,
        "sinc": T.sinc,
        "arctan": T.arctan,
        "fmod": lambda x: T.fmod(x, 1.5),
        "fmod_neg": lambda x: x.fmod(-0.5),
        "fmod_0": lambda x: T.fmod(x, 0.0),
        "xlogy_other_2": lambda x: T.xlogy(x, 2.0),
        "xlogy_other_0": lambda x: T.xlogy(x, 0.0),
        "xlogy_other_nan": lambda x: x.xlogy(nan),
        "xlogy_self_2": lambda x: T.xlogy(2.0, x),
        "xlogy_self_0": lambda x: T.xlogy(0.0, x),
    }


def _binary(T):
    return {
        "atan2": T.atan2,
        "arctan2": T.arctan2,
        "hypot": T.hypot,
        "logaddexp": T.logaddexp,
        "fmod": T.fmod,
        "xlogy": T.xlogy,
    }


@needs_torch
@pytest.mark.parametrize("dtype,rtol", [("float64", 4.5e-16), ("float32", 1e-6)])
def test_unary_special_values_and_gradients_match_torch(dtype, rtol):
    n = len(SPECIAL)
    vals, ups = SPECIAL * len(UPSTREAM), [u for u in UPSTREAM for _ in range(n)]
    bad = []
    for name in _unary(nbgrad):
        res = []
        for T in (nbgrad, torch):
            x = T.tensor(vals, dtype=getattr(T, dtype), requires_grad=True)
            y = _unary(T)[name](x)
            y.backward(T.tensor(ups, dtype=y.dtype))
            res.append((_np(y), _np(x.grad), y.grad_fn.name()))
        assert res[0][2] == res[1][2], name
        for what, a, b in (("value", res[0][0], res[1][0]), ("grad", res[0][1], res[1][1])):
            ok = _close(a, b, rtol)
            for i in np.nonzero(~ok)[0][:2]:
                bad.append("%s %s x=%r up=%r: %r vs %r" % (name, what, vals[i], ups[i], a[i], b[i]))
    assert not bad, "\n".join(bad)


@needs_torch
@pytest.mark.parametrize("dtype,rtol", [("float64", 4.5e-16), ("float32", 1e-6)])
def test_binary_special_values_and_gradients_match_torch(dtype, rtol):
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    bad = []
    for up in (1.0, nan, inf, 0.0):
        for name in _binary(nbgrad):
            res = []
            for T in (nbgrad, torch):
                x = T.tensor(xs, dtype=getattr(T, dtype), requires_grad=True)
                y = T.tensor(ys, dtype=getattr(T, dtype), requires_grad=True)
                z = _binary(T)[name](x, y)
                z.backward(T.full_like(z, up))
                res.append([_np(z), _np(x.grad), _np(y.grad)])
            for what, a, b in zip(("value", "dx", "dy"), *res):
                ok = _close(a, b, rtol)
                for i in np.nonzero(~ok)[0][:2]:
                    bad.append(
                        "%s up=%r %s x=%r y=%r: %r vs %r"
                        % (name, up, what, xs[i], ys[i], a[i], b[i])
                    )
    assert not bad, "\n".join(bad)


@needs_torch
def test_forward_mode_special_values_match_torch():
    import torch.autograd.forward_ad as tfw

    pairs = list(itertools.product(SPECIAL, SPECIAL))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    bad = []
    for tx, ty in ((1.0, None), (nan, 1.0), (None, inf), (1.0, 1.0)):
        for name in _binary(nbgrad):
            res = []
            for T, fw in ((nbgrad, fwAD), (torch, tfw)):
                with fw.dual_level():
                    x, y = T.tensor(xs, dtype=T.float64), T.tensor(ys, dtype=T.float64)
                    if tx is not None:
                        x = fw.make_dual(x, T.full((len(xs),), tx, dtype=T.float64))
                    if ty is not None:
                        y = fw.make_dual(y, T.full((len(xs),), ty, dtype=T.float64))
                    t = fw.unpack_dual(_binary(T)[name](x, y)).tangent
                    res.append(np.zeros(len(xs)) if t is None else t.numpy())
            ok = _close(res[0], res[1], 4.5e-16)
            for i in np.nonzero(~ok)[0][:2]:
                bad.append(
                    "%s t=(%r, %r) x=%r y=%r: %r vs %r"
                    % (name, tx, ty, xs[i], ys[i], res[0][i], res[1][i])
                )
    for name in ("atan", "asin", "sinh", "acosh", "atanh", "sinc"):
        res = []
        for T, fw in ((nbgrad, fwAD), (torch, tfw)):
            with fw.dual_level():
                x = fw.make_dual(
                    T.tensor(SPECIAL, dtype=T.float64), T.ones(len(SPECIAL), dtype=T.float64)
                )
                res.append(fw.unpack_dual(_unary(T)[name](x)).tangent.numpy())
        assert _close(res[0], res[1], 4.5e-16).all(), (name, res)
    assert not bad, "\n".join(bad)


ZX = [0.5 + 0.3j, -1.2 + 0.7j, 2.0 - 1.5j, 0.1 - 0.2j]
ZY = [1.5 - 0.5j, 0.3 + 0.2j, -0.7 + 1.1j, 2.0 + 0.0j]


@needs_torch
@pytest.mark.parametrize("dtype,rtol", [("complex64", 2e-5), ("complex128", 1e-12)])
@pytest.mark.parametrize(
    "name", ["atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "sinc", "logaddexp"]
)
def test_complex_values_and_gradients_match_torch(name, dtype, rtol):
    res = []
    for T in (nbgrad, torch):
        x = T.tensor(ZX, dtype=getattr(T, dtype), requires_grad=True)
        y = T.tensor(ZY, dtype=getattr(T, dtype), requires_grad=True)
        z = getattr(T, name)(x, y) if name == "logaddexp" else getattr(T, name)(x)
        (z.abs() ** 2).sum().backward()
        res.append([str(z.dtype).split(".")[-1], _np(z), _np(x.grad), _np(y.grad)])
    assert res[0][0] == res[1][0]
    for a, b in zip(res[0][1:], res[1][1:]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


@needs_torch
def test_complex_logaddexp_with_infinities_matches_torch():
    _agree(
        lambda T: (
            T.logaddexp(T.tensor([1 + 1j, inf, -inf]), T.tensor([inf, 1j, -inf + 0j])),
            [],
        )
    )


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.atan2(T.tensor([1j]), T.tensor([1.0 + 0j]))",
        "T.hypot(T.tensor([1j]), T.tensor([1.0 + 0j]))",
        "T.fmod(T.tensor([1j]), 2)",
        "T.fmod(T.tensor([1j]), T.tensor([2j]))",
        "T.xlogy(T.tensor([1j]), T.tensor([2j]))",
        "T.xlogy(T.tensor([1j]), 2)",
        "T.xlogy(2j, T.tensor([1.0]))",
        "T.hypot(T.tensor([3]), T.tensor([4]))",
        "T.hypot(T.tensor([True]), T.tensor([True]))",
        "T.logaddexp(T.tensor([3]), T.tensor([4]))",
        "T.fmod(T.tensor([3]), 0)",
        "T.fmod(T.tensor([3]), T.tensor([0]))",
        "T.fmod(T.tensor([True]), T.tensor([True]))",
        "T.atan2(T.tensor([1.0]), 2)",
        "T.hypot(T.tensor([1.0]), 2.0)",
        "T.logaddexp(T.tensor([1.0]), 2.0)",
        "T.xlogy(2, 3)",
        "T.fmod(2, T.tensor([1.0]))",
        "T.tensor([1, 2]).atan2_(T.tensor([1, 1]))",
        "T.tensor([1, 2]).fmod_(2.5)",
        "T.atan2(T.ones(2), T.ones(3))",
    ],
)
def test_elementwise_errors_match_torch(code):
    _same_error(lambda T: eval(code))


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.atan(T.tensor([1, 2]))",
        "T.sinc(T.tensor([0, 1, 2]))",
        "T.asinh(T.tensor([True, False]))",
        "T.cosh(T.tensor([1.0, 2.0], dtype=T.float16))",
        "T.atan2(T.tensor([1, 2]), T.tensor([3, 4]))",
        "T.atan2(T.tensor([1.0], dtype=T.float16), T.tensor([2.0]))",
        "T.atan2(T.tensor([1.0]), T.tensor([2.0, 3.0], dtype=T.float64))",
        "T.hypot(T.tensor([3]), T.tensor([4.0]))",
        "T.logaddexp(T.tensor([1.0], dtype=T.float16), T.tensor([2.0], dtype=T.float16))",
        "T.fmod(T.tensor([-7, 7]), 3)",
        "T.fmod(T.tensor([-7, 7]), T.tensor([3, -3]))",
        "T.fmod(T.tensor([True, False]), 2)",
        "T.fmod(T.tensor([1, 2]), 2.5)",
        "T.fmod(T.tensor([3]), 0.0)",
        "T.fmod(T.tensor([-7.0, 7.0]), T.tensor([3, -3]))",
        "T.xlogy(T.tensor([0, 1]), 0)",
        "T.xlogy(0, T.tensor([0, 1]))",
        "T.xlogy(True, T.tensor([0, 1.0]))",
        "T.xlogy(T.tensor([0.0, 1.0]), nan)",
        "T.xlogy(T.tensor([0, 2]), T.tensor([3, 0]))",
        "T.tensor([1.0, 2.0]).xlogy_(3)",
        "T.tensor([1.0, 2.0]).atan2_(T.tensor(2.0))",
        "T.tensor([1.0, 2.0]).arcsinh_()",
        "T.tensor(0.5).asin()",
        "T.atan2(T.zeros(0, 2), T.zeros(2))",
        "T.sinc(T.zeros(0))",
    ],
)
def test_elementwise_values_and_dtypes_match_torch(code):
    _agree(lambda T: (eval(code), []))


@needs_torch
def test_out_and_inplace_forms_match_torch():
    def build(T):
        x = T.tensor([0.3, -0.7, 1.5])
        o = T.empty(3)
        T.atan2(x, T.tensor([1.0, 2.0, -1.0]), out=o)
        o2 = T.empty(0)
        T.logaddexp(x, x, out=o2)
        o3 = T.empty(3, dtype=T.float64)
        T.sinh(x, out=o3)
        y1 = x.clone().atan_()
        y2 = x.clone().cosh_().hypot_(T.tensor(0.5))
        y3 = x.clone().fmod_(T.tensor([0.3, 0.2, 0.1]))
        o4, o5, o6, o7 = T.empty(3), T.empty(3), T.empty(0), T.empty(3)
        T.index_add(x, 0, T.tensor([1]), T.ones(1), alpha=2, out=o4)
        T.index_copy(x, 0, T.tensor([2]), T.ones(1), out=o5)
        T.scatter_reduce(x, 0, T.tensor([0, 0]), T.ones(2), "mean", out=o6)
        T.cumprod(x, 0, out=o7)
        outs = (o, o2, o3, o4, o5, o6, o7, y1, y2, y3)
        return outs + (x.clone().xlogy_(T.tensor([2.0, 3.0, 4.0])),), []

    _agree(build, rtol=1e-6)
    assert not hasattr(nbgrad.Tensor, "logaddexp_")  # PyTorch has none


@needs_torch
@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh", "arccosh"])
def test_inplace_acosh_asinh_atanh_record_a_node_whose_backward_raises(name):
    for T in (nbgrad, torch):
        x = T.tensor([1.5, 0.5], requires_grad=True)
        y = x * 1
        getattr(y, name + "_")()
        assert y.grad_fn.name() == name.replace("arc", "a").capitalize() + "Backward1"
        with pytest.raises(NotImplementedError, match="inplace version of"):
            y.sum().backward()
    x = nbgrad.tensor([1.5, 2.5])
    x.acosh_()  # no grad: an ordinary in-place op
    np.testing.assert_allclose(x.numpy(), np.arccosh([1.5, 2.5]), rtol=1e-6)


@needs_torch
def test_pointwise_saved_values_and_second_derivatives_match_torch():
    def build(T):
        x = T.tensor([0.3, -0.7, 0.2], dtype=T.float64, requires_grad=True)
        y = T.tensor([1.3, 0.4, 2.0], dtype=T.float64, requires_grad=True)
        outs = (
            T.atan2(x, y),
            T.hypot(x, y),
            T.logaddexp(x, y),
            T.xlogy(x, y),
            T.asin(x) * T.acos(x) * T.atanh(x),
            T.sinc(x) * T.asinh(y) * T.acosh(y + 1),
        )
        return outs, [x, y]

    _agree(build, create_graph=True)


# -- cumprod -------------------------------------------------------------------------------------

ZEROS = [[1.0, 2.0, 0.0, 3.0], [0.0, 0.0, 2.0, 5.0], [1.5, -2.0, 0.5, 0.0], [2.0, 3.0, 4.0, 5.0]]


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("create_graph", [False, True])
def test_cumprod_with_zeros_matches_torch(dim, create_graph):
    """PyTorch's cumprod_backward: the O(n) kernel (no graph) and the O(n^2) sum (create_graph)
    both give the gradient through zeros."""

    def build(T):
        x = T.tensor(ZEROS, dtype=T.float64, requires_grad=True)
        return T.cumprod(x, dim), [x]

    _agree(build, create_graph=create_graph)


@needs_torch
def test_cumprod_forms_dtypes_and_corner_cases_match_torch():
    def build(T):
        x = T.tensor([[1.5, 0.5, -2.0], [3.0, 0.0, 0.0]], requires_grad=True)
        c = T.tensor([[1.0 + 1j, 0j, 2.0 - 1j]], requires_grad=True)
        s = T.tensor(2.5, requires_grad=True)
        e = T.zeros(0, 3, requires_grad=True)
        y = x * 1
        y.cumprod_(1)
        return (
            x.cumprod(0),
            T.cumprod(x, 1, dtype=T.float64),
            y,
            T.cumprod(c, 1),
            T.cumprod(s, 0),
            T.cumprod(e, 1),
            T.cumprod(T.tensor([[1, 2], [3, 4]]), 0),
            T.cumprod(T.tensor([True, False]), 0),
            T.cumprod(T.tensor([1.0, 2.0], dtype=T.float16), 0),
            T.cumprod(T.tensor([3e38, 10.0, 1e-5]), 0),
            T.cumprod(T.tensor([inf, 0.0, nan, 1.0]), 0),
        ), [x, c, s, e]

    _agree(build, rtol=1e-6)


@needs_torch
def test_cumprod_nan_inf_gradients_match_torch():
    def build(T):
        x = T.tensor([[inf, 2.0, 0.0, 3.0], [0.0, nan, 0.0, 1.0], [2.0, 0.0, inf, 0.5]],
                     dtype=T.float64, requires_grad=True)  # fmt: skip
        return T.cumprod(x, 1), [x]

    _agree(build)


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.cumprod(T.ones(2, 3), 2)",
        "T.tensor(1.0).cumprod(1)",
    ],
)
def test_cumprod_errors_match_torch(code):
    _same_error(lambda T: eval(code))


# -- var_mean / std_mean -------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda T, x: T.var_mean(x),
        lambda T, x: T.var_mean(x, 1),
        lambda T, x: T.var_mean(x, [0, 1], keepdim=True),
        lambda T, x: T.var_mean(x, 0, correction=0),
        lambda T, x: T.var_mean(x, 1, False),
        lambda T, x: T.var_mean(x, False),
        lambda T, x: T.std_mean(x),
        lambda T, x: T.std_mean(x, -1, unbiased=True, keepdim=True),
        lambda T, x: T.std_mean(x, dim=(0,), correction=2),
        lambda T, x: T.std_mean(x, True),
    ],
)
@pytest.mark.parametrize("create_graph", [False, True])
def test_var_mean_std_mean_match_torch(call, create_graph):
    def build(T):
        x = T.tensor([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0], [2.0, 2.0, 2.0]], dtype=T.float64,
                     requires_grad=True)  # fmt: skip
        return call(T, x), [x]

    _agree(build, create_graph=create_graph)


@needs_torch
def test_var_mean_one_output_used_constant_rows_complex_and_corner_cases():
    def build(T):
        x = T.tensor([[1.0, 1.0], [0.5, 2.0]], dtype=T.float64, requires_grad=True)
        c = T.tensor([1 + 1j, 2 - 1j, 0.5j], dtype=T.complex128, requires_grad=True)
        s = T.tensor(3.0, requires_grad=True)
        v, m = T.std_mean(x, 1)  # the first row's std is 0: its gradient is masked to 0
        vc, mc = T.var_mean(c)
        return (v, T.var_mean(x, 0)[1], vc, mc, T.var_mean(s, correction=0)[0]), [x, c, s]

    _agree(build)
    with pytest.warns(UserWarning, match="std_mean\\(\\): degrees of freedom is <= 0"):
        nbgrad.std_mean(nbgrad.tensor([1.0]))
    r = nbgrad.var_mean(nbgrad.tensor([1.0, 2.0]))
    assert type(r) is tuple and len(r) == 2


@needs_torch
def test_var_mean_of_empty_and_integer_inputs_match_torch():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _agree(lambda T: (T.var_mean(T.zeros(0, 3), 0), []))
        _agree(lambda T: (T.std_mean(T.zeros(2, 0), 1), []))
    _same_error(lambda T: T.var_mean(T.tensor([1, 2])))
    _same_error(lambda T: T.std_mean(T.ones(2, 3), 2))


# -- select / tile / repeat_interleave / argwhere -----------------------------------------------


@needs_torch
def test_select_tile_repeat_interleave_match_torch():
    def build(T):
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=T.float64, requires_grad=True)
        s = T.tensor(2.5, requires_grad=True)
        return (
            x.select(1, -1),
            T.select(x, 0, T.tensor(1)),
            x.tile(2),
            T.tile(x, (2, 1, 1)),
            x.tile(()),
            s.tile((3,)),
            s.tile(()),
            x.repeat_interleave(2),
            x.repeat_interleave(3, dim=-1),
            x.repeat_interleave(1, dim=0),
            x.repeat_interleave(0, dim=1),
            T.repeat_interleave(x, T.tensor([2, 0]), dim=0),
            x.repeat_interleave(T.tensor([1, 0, 2]), dim=1, output_size=3),
            x.repeat_interleave(T.tensor([2])),
            x.repeat_interleave(T.tensor(2), dim=0),
            s.repeat_interleave(3),
            T.repeat_interleave(T.tensor([1, 0, 3])),
            T.repeat_interleave(T.tensor([2, 1], dtype=T.int32), output_size=3),
            T.zeros(0, 2).repeat_interleave(2, dim=0),
        ), [x, s]

    _agree(build, create_graph=True)


def test_repeat_interleave_by_one_is_a_copy():
    x = nbgrad.tensor([1.0, 2.0])
    y = x.repeat_interleave(1)
    y[0] = 5.0
    assert x.tolist() == [1.0, 2.0]


@needs_torch
def test_argwhere_matches_torch():
    for code in (
        "T.argwhere(T.tensor([[0, 1], [2, 0]]))",
        "T.tensor([0.0, nan, -0.0, 1.0]).argwhere()",
        "T.argwhere(T.tensor(3))",
        "T.argwhere(T.tensor(0.0))",
        "T.argwhere(T.zeros(2, 0, 3))",
        "T.argwhere(T.tensor([[[True], [False]]]))",
    ):
        outs = [eval(code, {"T": T, "nan": nan}) for T in (nbgrad, torch)]
        assert outs[0].tolist() == outs[1].tolist() and tuple(outs[0].shape) == tuple(outs[1].shape)
        assert outs[0].dtype is nbgrad.int64
        if outs[1].numel():  # PyTorch's column-major layout
            assert outs[0].stride() == outs[1].stride(), code


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.zeros(2, 3).select(1, 3)",
        "T.zeros(2, 3).select(-1, -4)",
        "T.zeros(2, 3).select(2, 0)",
        "T.tensor(1.0).select(0, 0)",
        "T.zeros(2, 3).repeat_interleave(-1, dim=0)",
        "T.zeros(2, 3).repeat_interleave(2, dim=2)",
        "T.tensor(3.0).repeat_interleave(2, dim=0)",
        "T.zeros(2, 3).repeat_interleave(2, dim=0, output_size=5)",
        "T.zeros(2, 3).repeat_interleave(T.tensor([1, 2, 3]), dim=0)",
        "T.zeros(2, 3).repeat_interleave(T.tensor([1.0, 2.0]), dim=0)",
        "T.zeros(2, 3).repeat_interleave(T.tensor([[1, 2]]), dim=0)",
        "T.zeros(2, 3).repeat_interleave(T.tensor([1, -1]), dim=0)",
        "T.zeros(2, 3).repeat_interleave(T.tensor([1, 2]), dim=0, output_size=4)",
        "T.repeat_interleave(T.tensor([[1, 2]]))",
        "T.repeat_interleave(T.tensor(2))",
        "T.repeat_interleave(T.tensor([1.0, 2.0]))",
        "T.repeat_interleave(T.tensor([1, -2, 3]))",
    ],
)
def test_select_repeat_interleave_errors_match_torch(code):
    _same_error(lambda T: eval(code))


# -- index_add / index_copy / index_fill ----------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_index_add_copy_fill_match_torch(create_graph):
    def build(T):
        x = T.tensor(np.arange(12.0).reshape(3, 4) / 7, requires_grad=True)
        s = T.tensor(np.arange(9.0).reshape(3, 3) - 4, requires_grad=True)
        v = T.tensor(-2.5, requires_grad=True)
        i = T.tensor([2, 0, 2])
        y = x * 1
        y.index_add_(1, i, s, alpha=-1.5)
        z = x * 1
        z.index_fill_(0, T.tensor([2, 0]), v)
        return (
            x.index_add(1, i, s),
            T.index_add(x, 1, i.int(), s, alpha=2),
            y,
            x.index_copy(1, T.tensor([3, 1, 0]), s),
            T.index_copy(x.t(), 0, T.tensor([3, 1, 0]), s.t()),
            x.index_fill(1, i, 7.0),
            T.index_fill(x, 1, T.tensor([3, 3]), v),
            x.index_fill(1, T.tensor([-1]), v.detach()),
            z,
        ), [x, s, v]

    _agree(build, create_graph=create_graph)


@needs_torch
def test_index_ops_on_0d_empty_and_integer_tensors_match_torch():
    def build(T):
        s = T.tensor(2.0, requires_grad=True)
        e = T.zeros(0, 3, requires_grad=True)
        return (
            s.index_add(0, T.tensor([0]), T.tensor(5.0)),
            T.zeros(3).index_add(0, T.tensor(1), T.tensor([5.0])),
            T.zeros(3).index_copy(0, T.tensor(1), T.tensor(5.0)),
            s.index_fill(0, T.tensor([0]), 3.0),
            s.index_copy(0, T.tensor([0]), T.tensor(4.0)),
            e.index_add(1, T.tensor([0, 0]), T.ones(0, 2)),
            e.index_fill(1, T.tensor([], dtype=T.int64), 1.0),
            T.ones(2, 3).index_add(0, T.tensor([], dtype=T.int64), T.ones(0, 3)),
            T.zeros(3, dtype=T.int64).index_add(0, T.tensor([1]), T.tensor([5]), alpha=2),
            T.zeros(3, dtype=T.int64).index_fill(0, T.tensor([1]), 2.7),
            T.zeros(3, dtype=T.int64).index_copy(0, T.tensor([1, 1]), T.tensor([4, 5])),
        ), [s, e]

    _agree(build)


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.zeros(3, 4).index_add(1, T.tensor([0, 2]).float(), T.ones(3, 2))",
        "T.zeros(3, 4).index_add(1, T.tensor([[0, 2]]), T.ones(3, 2))",
        "T.zeros(3, 4).index_add(1, T.tensor([0, 2]), T.ones(3, 3))",
        "T.zeros(3, 4).index_add(1, T.tensor([0, 2]), T.ones(2, 2))",
        "T.zeros(3, 4).index_add(1, T.tensor([0, 2]), T.ones(3, 2).double())",
        "T.zeros(3, 4).index_add(2, T.tensor([0, 2]), T.ones(3, 2))",
        "T.zeros(2, 3).index_add(1, T.tensor([0]), T.ones(2))",
        "T.zeros(3).index_add(0, T.tensor([0]), T.ones(1, 1))",
        "T.zeros(3).index_add(0, T.tensor(1), T.tensor(5.0))",
        "T.zeros(2, 4).index_add(0, T.tensor([0, 4], dtype=T.int32), T.ones(2, 4))",
        "T.zeros(2, 4, 3).index_add(1, T.tensor([0, 4]), T.ones(2, 2, 3))",
        "T.zeros(3, 4).index_copy(1, T.tensor([0, 2]).int(), T.ones(3, 2))",
        "T.zeros(3, 4).index_copy(1, T.tensor([0, 2]), T.ones(3, 2).double())",
        "T.zeros(3, 4).index_copy(1, T.tensor([0, 2]), T.ones(3, 3))",
        "T.zeros(3, 4).index_copy(1, T.tensor([0, 2]), T.ones(2, 2))",
        "T.zeros(3, 4).index_copy(1, T.tensor([[0, 2]]), T.ones(3, 2))",
        "T.zeros(2, 3, 4).index_copy(1, T.tensor([0]), T.ones(2, 1, 5))",
        "T.zeros(2, 3, 4).index_copy(1, T.tensor([0]), T.ones(1, 5))",
        "T.zeros(3).index_copy(0, T.tensor([0, 1]), T.tensor(1.0))",
        "T.zeros(3, 4).index_fill(1, T.tensor([0, 2]).int(), 2.5)",
        "T.zeros(3, 4).index_fill(1, T.tensor([[0, 1]]), 2.5)",
        "T.zeros(3, 4).index_fill(1, T.tensor([0, 2]), T.tensor([2.5]))",
        "T.zeros(3, 4).index_fill(1, T.tensor([0, 2]).float(), 2.5)",
        "T.zeros(3, 4).index_fill(2, T.tensor([0]), 2.5)",
    ],
)
def test_index_op_errors_match_torch(code):
    _same_error(lambda T: eval(code))


@needs_torch
def test_index_fill_value_gradient_with_a_negative_index_raises_like_torch():
    """PyTorch's value gradient is grad.index_select(dim, unique(index)): a negative index
    (valid for index_fill itself) is out of range there."""

    def build(T):
        x = T.ones(3, 4, requires_grad=True)
        v = T.tensor(2.0, requires_grad=True)
        T.index_fill(x, 1, T.tensor([-1]), v).sum().backward()

    _same_error(build)


# -- scatter_reduce ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_with_zeros_ties_and_nan_matches_torch(reduce, include_self):
    def build(T):
        x = T.tensor([[1.0, 2.0, 0.0, 4.0], [3.0, 3.0, -1.0, nan]], dtype=T.float64,
                     requires_grad=True)  # fmt: skip
        s = T.tensor([[1.0, 2.0, 3.0, 0.0, 5.0, 0.0], [3.0, 3.0, 0.0, 2.0, -1.0, 1.0]],
                     dtype=T.float64, requires_grad=True)  # fmt: skip
        i = T.tensor([[0, 1, 0, 1, 2, 1], [1, 0, 2, 2, 2, 1]])
        y = x * 1
        y.scatter_reduce_(1, i, s, reduce, include_self=include_self)
        return (x.scatter_reduce(1, i, s, reduce, include_self=include_self), y), [x, s]

    _agree(build)


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_second_order_matches_torch(reduce):
    def build(T):
        x = T.tensor([[1.0, 2.0, 0.5, 4.0], [3.0, 1.5, -1.0, 2.5]], dtype=T.float64,
                     requires_grad=True)  # fmt: skip
        s = T.tensor([[1.5, 2.5, 3.0], [-2.0, 0.7, 1.1]], dtype=T.float64, requires_grad=True)
        i = T.tensor([[0, 1, 0], [3, 3, 1]])
        return (
            T.scatter_reduce(x, 1, i, s, reduce),
            x.scatter_reduce(1, i, s, reduce, include_self=False),
        ), [x, s]

    _agree(build, create_graph=True)


@needs_torch
def test_scatter_reduce_integer_dtypes_0d_and_empty_match_torch():
    def build(T):
        x, s = T.tensor([1, 2, 3, 4]), T.tensor([1, 2, 3, 4, 5, 6])
        i = T.tensor([0, 1, 0, 1, 2, 1])
        reduces = ("sum", "prod", "mean", "amax", "amin")
        bools = (True, False)
        outs = [x.scatter_reduce(0, i, s, r, include_self=inc) for r in reduces for inc in bools]
        b = T.tensor([True, True])
        outs += [
            x.int().scatter_reduce(0, i, s.int(), "mean"),
            T.tensor([True, False]).scatter_reduce(0, i[:2] * 0 + 1, b, "amax", include_self=False),
            T.tensor(2.0).scatter_reduce(0, T.tensor(0), T.tensor(5.0), "prod"),
            T.ones(3).scatter_reduce(0, T.tensor([], dtype=T.int64), T.ones(0), "amin"),
            T.ones(3).scatter_reduce(0, T.tensor([0, 0]), T.tensor([2.0, 3.0]), "max"),
        ]  # fmt: skip
        return tuple(outs), []

    _agree(build)


@needs_torch
def test_scatter_reduce_prod_double_backward_through_repeated_zeros_raises_like_torch():
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        s = T.tensor([0.0, 0.0, 3.0], requires_grad=True)
        r = x.scatter_reduce(0, T.tensor([0, 0, 1]), s, "prod")
        (g,) = T.autograd.grad(r.sum(), s, create_graph=True)
        assert g.detach().tolist() == [0.0, 0.0, 2.0]
        with pytest.raises(RuntimeError, match="Double backward is unsupported for src"):
            g.sum().backward()


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.zeros(4).scatter_reduce(0, T.tensor([0]), T.ones(1), 'foo')",
        "T.zeros(4).scatter_reduce(0, T.tensor([0.0]), T.ones(1), 'sum')",
        "T.zeros(4).scatter_reduce(0, T.tensor([0]), T.ones(1).double(), 'sum')",
        "T.zeros(4).scatter_reduce(0, T.tensor([0, 1, 2]), T.ones(2), 'amax')",
        "T.zeros(4).scatter_reduce(0, T.tensor([[0]]), T.ones(1), 'amin')",
        "T.zeros(4).scatter_reduce(1, T.tensor([0]), T.ones(1), 'mean')",
        "T.zeros(4).scatter_reduce(0, T.tensor([0, 5]), T.ones(2), 'prod')",
    ],
)
def test_scatter_reduce_errors_match_torch(code):
    _same_error(lambda T: eval(code))


# -- masked_scatter ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_masked_scatter_matches_torch(create_graph):
    def build(T):
        x = T.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        s = T.tensor(np.arange(15.0).reshape(3, 5) / 3, requires_grad=True)
        m = T.tensor([True, False, True, True])
        y = x * 1
        y.masked_scatter_(m, s)
        return (
            x.masked_scatter(m, s),
            T.masked_scatter(x[0], T.tensor([[True], [False]]), s),
            y,
            x.masked_scatter(T.zeros(3, 4, dtype=T.bool), s),
        ), [x, s]

    _agree(build, create_graph=create_graph)


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "T.zeros(3, 4).masked_scatter(T.ones(3, 4, dtype=T.bool), T.arange(3.0))",
        "T.zeros(3, 4).masked_scatter(T.ones(3, 4, dtype=T.int32), T.arange(12.0))",
        "T.zeros(3, 4).masked_scatter(T.ones(3, 4, dtype=T.bool), T.arange(12.0).double())",
        "T.zeros(3, 4).masked_scatter(T.tensor([True, False]), T.arange(12.0))",
    ],
)
def test_masked_scatter_errors_match_torch(code):
    _same_error(lambda T: eval(code))


def test_new_names_are_public():
    for name in ("atan asin acos sinh cosh asinh acosh atanh atan2 hypot logaddexp fmod sinc "
                 "xlogy cumprod var_mean std_mean select tile repeat_interleave index_add "
                 "index_copy index_fill scatter_reduce masked_scatter argwhere arctan arcsin "
                 "arccos arcsinh arccosh arctanh arctan2").split():  # fmt: skip
        assert callable(getattr(nbgrad, name)), name
    for name in ("select tile repeat_interleave index_add index_add_ index_copy_ index_fill_ "
                 "scatter_reduce_ masked_scatter_ argwhere cumprod_ atan2_ xlogy_ sinc_ "
                 "hypot_ fmod_").split():  # fmt: skip
        assert callable(getattr(nbgrad.Tensor, name)), name


def test_elementwise_formulas_use_the_new_vocabulary_words():
    from nbgrad.kernels.vocab import acosh, asin, atan, atan2, sinh

    @nbgrad.elementwise
    def f(x):
        return atan(x) * sinh(x) + asin(x / 3) + acosh(x * x + 2)

    x = nbgrad.tensor([0.3, -0.5, 1.2], dtype=nbgrad.float64, requires_grad=True)
    assert nbgrad.autograd.gradcheck(f, (x,)) and nbgrad.autograd.gradgradcheck(f, (x,))
    a = x.detach().numpy()
    want = np.arctan(a) * np.sinh(a) + np.arcsin(a / 3) + np.arccosh(a * a + 2)
    np.testing.assert_allclose(f(x).detach().numpy(), want, rtol=1e-14)
    with pytest.raises(ValueError, match="cannot differentiate"):

        @nbgrad.elementwise
        def g(x, y):
            return atan2(x, y)


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "y.index_add_(0, T.tensor([0, 1, 2, 3]), y)",
        "y.index_copy_(0, T.tensor([3, 2, 1, 0]), y)",
        "y.scatter_reduce_(0, T.tensor([3, 2, 1, 0]), y, 'sum')",
        "z.index_fill_(0, z[:2], 7)",
        "z.index_add_(0, z, z)",
    ],
)
def test_inplace_index_ops_refuse_an_operand_that_is_self_like_torch(code):
    _same_error(lambda T: eval(code, {"T": T, "y": T.arange(4.0), "z": T.arange(4)}))
    y = nbgrad.arange(4.0)
    y.masked_scatter_(y > 1, y)  # allowed (PyTorch too): reads the source before writing
    assert y.tolist() == [0.0, 1.0, 0.0, 1.0]


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax"])
def test_scatter_reduce_3d_with_an_index_smaller_than_self_matches_torch(dim, reduce):
    rng = np.random.default_rng(dim + 7)
    ishape = [2, 3, 2]
    ishape[dim] = 5
    index = rng.integers(0, (4, 5, 6)[dim], ishape)
    xs, ss = rng.standard_normal((4, 5, 6)), rng.standard_normal(ishape)

    def build(T):
        x = T.tensor(xs, requires_grad=True)
        s = T.tensor(ss, requires_grad=True)
        i = T.tensor(index)
        return (
            x.scatter_reduce(dim, i, s, reduce),
            x.scatter_reduce(dim, i, s, reduce, include_self=False),
        ), [x, s]

    _agree(build)


@needs_torch
def test_scatter_reduce_src_larger_than_index_has_no_src_gradient_like_torch():
    """PyTorch's backward returns a src gradient shaped like the index: an error when src is
    larger (its forward reads only the part the index covers)."""

    def build(T):
        x = T.zeros(3, requires_grad=True)
        s = T.arange(1.0, 6.0, requires_grad=True)
        y = x.scatter_reduce(0, T.tensor([0, 1]), s, "sum")
        T.autograd.grad(y.sum(), [x, s])

    _same_error(build)
    _agree(lambda T: (T.zeros(3).scatter_reduce(0, T.tensor([0, 0]), T.arange(5.0), "amax"), []))
