"""Second-tier activations, losses and distances (elu, mish, hardtanh, relu6, prelu, glu,
smooth_l1_loss, huber_loss, kl_div, cosine_similarity, pairwise_distance,
cosine_embedding_loss, margin_ranking_loss) and their layers.  The op table (OP_DB_NN) runs
the generic checks in tests/test_ops.py (float64 values, finite differences, second order,
forward mode, torch values/grads/node names); this file adds float32 against torch, NaN/Inf,
in-place variants, errors and warnings, create_graph gradients and the layers."""

import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.ops.registry import REGISTRY
from nbgrad.testing import op_db  # noqa: F401  (op_db imports op_db_nn)
from nbgrad.testing.op_db_nn import OP_DB_NN

NEW_OPS = (
    "elu",
    "elu.result",
    "mish",
    "hardtanh",
    "prelu",
    "glu",
    "smooth_l1_loss",
    "huber_loss",
)


def test_new_ops_are_registry_ops_with_grad_rows():
    assert set(NEW_OPS) <= set(REGISTRY)
    tested = {info.name for info in OP_DB_NN if info.grad}
    assert set(NEW_OPS) <= tested
    for name in (
        "nn.kl_div",
        "nn.cosine_similarity",
        "nn.pairwise_distance",
        "nn.cosine_embedding_loss",
        "nn.margin_ranking_loss",
    ):
        assert name in tested


def _pair(a, requires_grad=True):
    return (
        nbgrad.tensor(a, requires_grad=requires_grad),
        torch.tensor(a, requires_grad=requires_grad),
    )


def _np(t):
    return t.detach().numpy()


def _close(a, b, rtol, atol):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=True)


# -- float32 (and float16) values and gradients against torch ----------------------------------

R = np.random.default_rng(0)
X34 = R.standard_normal((3, 4))
T34 = R.standard_normal((3, 4))
P34 = np.exp(R.standard_normal((3, 4)))
P34 /= P34.sum(1, keepdims=True)
Y3 = np.array([1.0, -1.0, 1.0])

# name -> (fn(T, *tensors), arrays, which arrays require grad)
CASES = {
    "elu": (lambda T, x: T.nn.functional.elu(x, 0.7), [X34], (0,)),
    "mish": (lambda T, x: T.nn.functional.mish(x * 3), [X34], (0,)),
    "hardtanh": (lambda T, x: T.nn.functional.hardtanh(x, -0.5, 0.8), [X34], (0,)),
    "relu6": (lambda T, x: T.nn.functional.relu6(x * 5), [X34], (0,)),
    "prelu": (
        lambda T, x, w: T.nn.functional.prelu(x, w),
        [X34.reshape(2, 3, 2), np.array([0.1, -0.2, 0.3])],
        (0, 1),
    ),
    "prelu-shared": (
        lambda T, x, w: T.nn.functional.prelu(x, w),
        [X34, np.array([0.25])],
        (0, 1),
    ),
    "glu": (lambda T, x: T.nn.functional.glu(x, 0), [X34.reshape(4, 3)], (0,)),
    "smooth_l1": (
        lambda T, x, t: T.nn.functional.smooth_l1_loss(x, t, beta=0.6),
        [X34, T34],
        (0, 1),
    ),
    "smooth_l1-none": (
        lambda T, x, t: T.nn.functional.smooth_l1_loss(x, t, reduction="none"),
        [X34, T34],
        (0,),
    ),
    "smooth_l1-beta0": (
        lambda T, x, t: T.nn.functional.smooth_l1_loss(x, t, reduction="sum", beta=0.0),
        [X34, T34],
        (0, 1),
    ),
    "huber": (lambda T, x, t: T.nn.functional.huber_loss(x, t, delta=0.4), [X34, T34], (0, 1)),
    "huber-weight": (
        lambda T, x, t, w: T.nn.functional.huber_loss(x, t, weight=w),
        [X34, T34, P34],
        (0, 2),
    ),
    "kl-batchmean": (
        lambda T, x, t: T.nn.functional.kl_div(x.log_softmax(1), t, reduction="batchmean"),
        [X34, P34],
        (0, 1),
    ),
    "kl-log-target": (
        lambda T, x, t: T.nn.functional.kl_div(x, t, reduction="sum", log_target=True),
        [X34, T34],
        (0, 1),
    ),
    "cosine_similarity": (
        lambda T, a, b: T.nn.functional.cosine_similarity(a, b),
        [X34, T34],
        (0, 1),
    ),
    "pairwise_distance": (
        lambda T, a, b: T.nn.functional.pairwise_distance(a, b),
        [X34, T34],
        (0, 1),
    ),
    "pairwise_distance-inf": (
        lambda T, a, b: T.nn.functional.pairwise_distance(a, b, p=float("inf")),
        [X34, T34],
        (0, 1),
    ),
    "cosine_embedding_loss": (
        lambda T, a, b, y: T.nn.functional.cosine_embedding_loss(a, b, y, 0.1),
        [X34, T34, Y3],
        (0, 1),
    ),
    "margin_ranking_loss": (
        lambda T, a, b, y: T.nn.functional.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.2),
        [X34, T34, Y3],
        (0, 1),
    ),
}


def _run(T, case, dtype):
    fn, arrays, grads = CASES[case]
    dt = getattr(T, dtype)
    ts = [
        T.tensor(a, dtype=dt, requires_grad=i in grads and dtype != "float16")
        for i, a in enumerate(arrays)
    ]
    out = fn(T, *ts)
    return ts, out


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("case", list(CASES))
def test_values_and_grads_match_torch(case, dtype):
    n_in, n_out = _run(nbgrad, case, dtype)
    t_in, t_out = _run(torch, case, dtype)
    assert tuple(n_out.shape) == tuple(t_out.shape)
    assert n_out.dtype.name == str(t_out.dtype).replace("torch.", "")
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=2e-3, atol=2e-3)
    _close(n_out, t_out, **tol)
    if dtype == "float16":
        return
    assert n_out.grad_fn.name() == t_out.grad_fn.name()
    g = np.random.default_rng(1).standard_normal(tuple(t_out.shape)).astype(np.float32)
    n_out.backward(nbgrad.tensor(g))
    t_out.backward(torch.tensor(g))
    for a, b in zip(n_in, t_in):
        if b.grad is not None:
            _close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
        else:
            assert a.grad is None


@needs_torch
@pytest.mark.parametrize("case", list(CASES))
def test_create_graph_second_order_matches_torch(case):
    """Gradients under create_graph stay in the graph where PyTorch's do, and their own
    gradients (of g . v) match PyTorch's."""
    n_in, n_out = _run(nbgrad, case, "float64")
    t_in, t_out = _run(torch, case, "float64")
    n_leaves = [x for x in n_in if x.requires_grad]
    t_leaves = [x for x in t_in if x.requires_grad]
    ng = nbgrad.autograd.grad((n_out * n_out).sum(), n_leaves, create_graph=True)
    tg = torch.autograd.grad((t_out * t_out).sum(), t_leaves, create_graph=True)
    rng = np.random.default_rng(2)
    vs = [rng.standard_normal(tuple(g.shape)) for g in tg]
    for a, b in zip(ng, tg):
        _close(a, b, rtol=1e-9, atol=1e-12)
        assert a.requires_grad == b.requires_grad
    nn2 = nbgrad.autograd.grad(
        sum((a * nbgrad.tensor(v)).sum() for a, v in zip(ng, vs)), n_leaves, allow_unused=True
    )
    tt2 = torch.autograd.grad(
        sum((b * torch.tensor(v)).sum() for b, v in zip(tg, vs)), t_leaves, allow_unused=True
    )
    for a, b in zip(nn2, tt2):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            _close(a, b, rtol=1e-8, atol=1e-10)


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: T.nn.functional.hardtanh(x),
        lambda T, x: T.nn.functional.prelu(x, T.tensor([0.3], dtype=x.dtype)),
    ],
    ids=["hardtanh", "prelu"],
)
def test_double_backward_node_of_constant_gradient(fn):
    """NOTE [backward nodes]: the create_graph gradient of an op whose backward is one
    differentiable function is in the graph even where it does not depend on the input."""
    for T in (nbgrad, torch):
        x = T.tensor([0.5, -2.0, 0.2], dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(fn(T, x).sum(), x, create_graph=True)
        assert g.requires_grad
        (gg,) = T.autograd.grad(g.sum(), x, allow_unused=True)
        assert gg is None or not np.any(gg.numpy())
    n = nbgrad.tensor([0.5, -2.0, 0.2], dtype=nbgrad.float64, requires_grad=True)
    t = torch.tensor([0.5, -2.0, 0.2], dtype=torch.float64, requires_grad=True)
    (gn,) = nbgrad.autograd.grad(fn(nbgrad, n).sum(), n, create_graph=True)
    (gt,) = torch.autograd.grad(fn(torch, t).sum(), t, create_graph=True)
    assert gn.grad_fn.name() == gt.grad_fn.name()


# -- NaN, Inf and signed zeros ------------------------------------------------------------------

# 64 elements: PyTorch's vectorised CPU kernels, not its scalar tail loop, compute all of them
# (they differ at NaN: see ops/pointwise.py on elu)
SPECIAL = np.tile([np.nan, -0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, -1e-30, 30.0, -30.0, 6.0], 6)[:64]
UPSTREAM = np.tile([np.nan, np.inf, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, -np.inf, 2.0, 0.5], 6)[:64]
ACTIVATIONS = {
    "elu": lambda T, x: T.nn.functional.elu(x, 0.5),
    "elu_": lambda T, x: T.nn.functional.elu(x * 1, 0.5, inplace=True),
    "mish": lambda T, x: T.nn.functional.mish(x),
    "mish_": lambda T, x: T.nn.functional.mish(x * 1, inplace=True),
    "hardtanh": lambda T, x: T.nn.functional.hardtanh(x),
    "hardtanh_": lambda T, x: T.nn.functional.hardtanh(x * 1, inplace=True),
    "hardtanh-0-6": lambda T, x: T.nn.functional.hardtanh(x, 0.0, 6.0),
    "hardtanh-equal": lambda T, x: T.nn.functional.hardtanh(x, -1.0, -1.0),
    "prelu": lambda T, x: T.nn.functional.prelu(x, T.tensor([0.25], dtype=x.dtype)),
    "glu": lambda T, x: T.nn.functional.glu(T.stack([x, x.flip(0)]), 0),
}


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_special_values_match_torch(name, dtype):
    fn = ACTIVATIONS[name]
    outs = {}
    for T in (nbgrad, torch):
        x = T.tensor(SPECIAL, dtype=getattr(T, dtype), requires_grad=True)
        y = fn(T, x)
        (g,) = T.autograd.grad(y, x, T.ones_like(y), retain_graph=True)
        (gu,) = T.autograd.grad(y, x, T.tensor(UPSTREAM[: y.shape[-1]], dtype=y.dtype) + 0 * y)
        outs[T.__name__] = (y, g, gu)
    for a, b in zip(outs["nbgrad"], outs["torch"]):
        _close(a, b, rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, t: T.nn.functional.smooth_l1_loss(x, t, reduction="none", beta=0.5),
        lambda T, x, t: T.nn.functional.huber_loss(x, t, reduction="none", delta=0.5),
        lambda T, x, t: T.nn.functional.kl_div(x, t.abs(), reduction="none"),
        lambda T, x, t: T.nn.functional.kl_div(x, t, reduction="none", log_target=True),
    ],
    ids=["smooth_l1", "huber", "kl_div", "kl_div-log-target"],
)
def test_loss_special_values_match_torch(fn):
    xs = np.array([np.nan, 0.0, 1.0, np.inf, -np.inf, 0.3, 0.0, 2.0])
    ts = np.array([0.0, np.nan, 0.0, 1.0, 0.0, 0.3, 0.0, -np.inf])
    outs = {}
    for T in (nbgrad, torch):
        x = T.tensor(xs, requires_grad=True)
        t = T.tensor(ts, requires_grad=True)
        y = fn(T, x, t)
        gx, gt = T.autograd.grad(y.sum(), (x, t))
        outs[T.__name__] = (y, gx, gt)
    for a, b in zip(outs["nbgrad"], outs["torch"]):
        _close(a, b, rtol=1e-12, atol=1e-12)


@needs_torch
def test_kl_div_zero_target_and_distances_edge_cases_match_torch():
    cases = [
        # a zero probability contributes 0; its own gradient is NaN (xlogy's other / other)
        lambda T, x, t: T.nn.functional.kl_div(x, t, reduction="sum"),
        # zero vectors: the norm clamps to eps without recording the clamp
        lambda T, x, t: T.nn.functional.cosine_similarity(x * 0, t),
        lambda T, x, t: T.nn.functional.cosine_similarity(x, t, dim=0, eps=10.0),
        lambda T, x, t: T.nn.functional.pairwise_distance(x, x),
        lambda T, x, t: T.nn.functional.pairwise_distance(x, t, p=0),
        lambda T, x, t: T.nn.functional.pairwise_distance(x, t, p=-1.5),
        lambda T, x, t: T.nn.functional.pairwise_distance(x, t, p=0.5, keepdim=True),
        lambda T, x, t: T.nn.functional.pairwise_distance(x[0], t),
        lambda T, x, t: T.nn.functional.pairwise_distance(x[0, 0], t[0, 0]),
        lambda T, x, t: T.nn.functional.cosine_similarity(x[0, 0], t[0, 0], dim=0),
        lambda T, x, t: T.nn.functional.cosine_embedding_loss(x[0], t[0], T.tensor(-1.0)),
        lambda T, x, t: T.nn.functional.margin_ranking_loss(x[0, 0], t[0, 0], T.tensor(1.0)),
    ]
    xs = np.array([[0.2, -0.3, 0.5], [1.0, 0.4, -2.0]])
    ts = np.array([[0.0, 0.25, 0.75], [0.5, 0.0, 0.5]])
    for fn in cases:
        outs = {}
        for T in (nbgrad, torch):
            x = T.tensor(xs, requires_grad=True)
            t = T.tensor(ts, requires_grad=True)
            y = fn(T, x, t)
            grads = T.autograd.grad(y.sum(), (x, t), allow_unused=True)
            outs[T.__name__] = (y,) + tuple(grads)
        n, t_ = outs["nbgrad"], outs["torch"]
        assert n[0].grad_fn.name() == t_[0].grad_fn.name()
        for a, b in zip(n, t_):
            if b is None:
                assert a is None or not np.any(np.nan_to_num(a.numpy()))
            else:
                _close(a, b, rtol=1e-12, atol=1e-12)


@needs_torch
def test_empty_inputs_match_torch():
    for name, fn in [
        ("smooth_l1", lambda T, x: T.nn.functional.smooth_l1_loss(x, x.detach())),
        ("huber", lambda T, x: T.nn.functional.huber_loss(x, x.detach() + 1)),
        ("mse", lambda T, x: T.nn.functional.mse_loss(x, x.detach())),  # mean of nothing
        ("kl", lambda T, x: T.nn.functional.kl_div(x, x.detach().exp(), reduction="batchmean")),
        ("cos", lambda T, x: T.nn.functional.cosine_similarity(x, x)),
        ("cel", lambda T, x: T.nn.functional.cosine_embedding_loss(x, x, T.ones(0))),
        ("glu", lambda T, x: T.nn.functional.glu(x, 1)),
    ]:
        res = []
        for T in (nbgrad, torch):
            x = T.zeros((0, 4), dtype=T.float64, requires_grad=True)
            y = fn(T, x)
            y.sum().backward()
            res.append((y, x.grad))
        (ny, ng), (ty, tg) = res
        assert tuple(ny.shape) == tuple(ty.shape), name
        _close(ny, ty, rtol=0, atol=0)
        assert tuple(ng.shape) == tuple(tg.shape), name


# -- in place ----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: T.nn.functional.elu(x, 1.5, inplace=True),
        lambda T, x: T.nn.functional.elu_(x, 0.2),
        lambda T, x: T.nn.functional.mish(x, inplace=True),
        lambda T, x: T.nn.functional.hardtanh(x, -0.4, 0.7, inplace=True),
        lambda T, x: T.nn.functional.hardtanh_(x),
        lambda T, x: T.nn.functional.relu6(x * 4, inplace=True),
    ],
    ids=["elu", "elu_", "mish", "hardtanh", "hardtanh_", "relu6"],
)
def test_inplace_activations_match_torch(fn):
    res = []
    for T in (nbgrad, torch):
        leaf = T.tensor(X34, requires_grad=True)
        x = leaf * 1
        v0 = x._version
        y = fn(T, x)
        res.append((leaf, y, y._version - v0, y.grad_fn.name()))
        y.backward(T.tensor(T34))
    (nl, ny, nv, nname), (tl, ty, tv, tname) = res
    assert (nv, nname) == (tv, tname)
    _close(ny, ty, rtol=1e-12, atol=1e-12)
    _close(nl.grad, tl.grad, rtol=1e-12, atol=1e-12)


@needs_torch
def test_inplace_elu_negative_alpha_and_saved_result():
    for T in (nbgrad, torch):
        x = T.tensor([0.5, -1.0], requires_grad=True)
        y = T.nn.functional.elu(x * 1, -0.5, inplace=True)  # forward is fine
        with pytest.raises(RuntimeError, match="In-place elu backward calculation is triggered"):
            y.sum().backward()
        z = T.tensor([0.5, -1.0])
        T.nn.functional.elu(z, -0.5, inplace=True)  # without grad: no check
        np.testing.assert_allclose(z.numpy(), [0.5, 0.5 * (1 - np.exp(-1.0))], rtol=1e-6)
        # the saved result is version-checked like PyTorch's
        y = T.nn.functional.elu(x * 1, inplace=True)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            T.nn.functional.elu(x, inplace=True)


def test_exp_inplace_forward_over_reverse():
    """Regression: forward-mode AD through the backward of an in-place op whose backward reads
    the result (exp_, elu_) used a saved result without its tangent."""
    import nbgrad.autograd.forward_ad as fwAD

    rng = np.random.default_rng(0)
    x = nbgrad.tensor(rng.uniform(-2, 2, (3, 4)), requires_grad=True)
    u, w = (nbgrad.tensor(rng.standard_normal((3, 4))) for _ in range(2))
    for fn in (lambda x: (x * 1).exp_(), lambda x: F.elu(x * 1, 1.5, inplace=True)):

        def scalar(x, fn=fn):
            o = fn(x)
            return ((o * o) * w).sum()

        (g,) = nbgrad.autograd.grad(scalar(x), x, create_graph=True)
        (want,) = nbgrad.autograd.grad((g * u).sum(), x)
        with fwAD.dual_level():
            d = fwAD.make_dual(x.detach().requires_grad_(True), u)
            (gd,) = nbgrad.autograd.grad(scalar(d), d, create_graph=True)
            got = fwAD.unpack_dual(gd).tangent
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


# -- integer inputs ----------------------------------------------------------------------------


@needs_torch
def test_hardtanh_integer_inputs_match_torch():
    for a, lo, hi, dt in [
        (np.arange(-3, 4), -1.5, 1.5, "int64"),
        (np.arange(5), 1, 3, "uint8"),
        (np.arange(-4, 4), -2, 2, "int32"),
    ]:
        n = F.hardtanh(nbgrad.tensor(a, dtype=getattr(nbgrad, dt)), lo, hi)
        t = torch.nn.functional.hardtanh(torch.tensor(a, dtype=getattr(torch, dt)), lo, hi)
        assert n.dtype.name == dt
        np.testing.assert_array_equal(n.numpy(), t.numpy())
    x = nbgrad.tensor(np.arange(-3, 4))
    assert F.hardtanh(x, inplace=True) is x
    np.testing.assert_array_equal(x.numpy(), [-1, -1, -1, 0, 1, 1, 1])


@needs_torch
def test_integer_inputs_of_composites_match_torch():
    a, b = np.arange(6).reshape(2, 3), np.arange(6)[::-1].reshape(2, 3).copy()
    for fn in [
        lambda T, x, y: T.nn.functional.pairwise_distance(x, y),
        lambda T, x, y: T.nn.functional.cosine_similarity(x, y.double()),
        lambda T, x, y: T.nn.functional.cosine_embedding_loss(x, y, T.tensor([1, -1])),
        lambda T, x, y: T.nn.functional.margin_ranking_loss(x, y, T.ones(2, 3, dtype=T.int64)),
        lambda T, x, y: T.nn.functional.smooth_l1_loss(x, y.float()),
    ]:
        n = fn(nbgrad, nbgrad.tensor(a), nbgrad.tensor(b))
        t = fn(torch, torch.tensor(a), torch.tensor(b))
        assert n.dtype.name == str(t.dtype).replace("torch.", "")
        np.testing.assert_allclose(n.numpy(), t.numpy(), rtol=1e-6)


# -- errors and warnings -----------------------------------------------------------------------


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


ERRORS = {
    "elu-list": lambda T: T.nn.functional.elu([1.0]),
    "elu-alpha": lambda T: T.nn.functional.elu(T.ones(2), "a"),
    "elu-alpha-none": lambda T: T.nn.functional.elu(T.ones(2), None),
    "elu-int": lambda T: T.nn.functional.elu(T.arange(3)),
    "elu-bool": lambda T: T.nn.functional.elu(T.ones(3, dtype=T.bool)),
    "elu-complex": lambda T: T.nn.functional.elu(T.ones(3, dtype=T.complex64)),
    "elu-int-inplace": lambda T: T.nn.functional.elu(T.arange(3), inplace=True),
    "mish-int": lambda T: T.nn.functional.mish(T.arange(3)),
    "mish-complex": lambda T: T.nn.functional.mish(T.ones(3, dtype=T.complex64)),
    "hardtanh-bool": lambda T: T.nn.functional.hardtanh(T.ones(3, dtype=T.bool)),
    "hardtanh-order": lambda T: T.nn.functional.hardtanh(T.ones(3), 2.0, 1.0),
    "hardtanh-uint8": lambda T: T.nn.functional.hardtanh(T.arange(3, dtype=T.uint8), -1, 2),
    "hardtanh-complex": lambda T: T.nn.functional.hardtanh(T.ones(3, dtype=T.complex64)),
    "Hardtanh-equal": lambda T: T.nn.Hardtanh(1.0, 1.0),
    "prelu-2d-weight": lambda T: T.nn.functional.prelu(T.ones(2, 3), T.ones(3, 1)),
    "prelu-mismatch": lambda T: T.nn.functional.prelu(T.ones(2, 4), T.ones(3)),
    "prelu-0d": lambda T: T.nn.functional.prelu(T.tensor(1.0), T.ones(3)),
    "prelu-1d": lambda T: T.nn.functional.prelu(T.ones(3), T.ones(3)),
    "prelu-promote": lambda T: T.nn.functional.prelu(T.ones(3), T.ones(1, dtype=T.float64)),
    "prelu-int": lambda T: T.nn.functional.prelu(
        T.ones(3, dtype=T.int64), T.ones(1, dtype=T.int64)
    ),
    "prelu-complex": lambda T: T.nn.functional.prelu(
        T.ones(3, dtype=T.complex64), T.ones(1, dtype=T.complex64)
    ),
    "prelu-float-weight": lambda T: T.nn.functional.prelu(T.ones(3), 0.2),
    "glu-0d": lambda T: T.nn.functional.glu(T.tensor(1.0)),
    "glu-odd": lambda T: T.nn.functional.glu(T.ones(3, 3)),
    "glu-int": lambda T: T.nn.functional.glu(T.arange(4)),
    "glu-dim": lambda T: T.nn.functional.glu(T.ones(4, 2), 2),
    "glu-dim-float": lambda T: T.nn.functional.glu(T.ones(4, 2), 1.0),
    "glu-complex": lambda T: T.nn.functional.glu(T.ones(4, dtype=T.complex64)),
    "smooth_l1-beta": lambda T: T.nn.functional.smooth_l1_loss(T.ones(3), T.ones(3), beta=-1.0),
    "smooth_l1-int": lambda T: T.nn.functional.smooth_l1_loss(T.arange(3), T.arange(3)),
    "smooth_l1-complex": lambda T: T.nn.functional.smooth_l1_loss(
        T.ones(3, dtype=T.complex64), T.ones(3, dtype=T.complex64)
    ),
    "smooth_l1-reduction": lambda T: T.nn.functional.smooth_l1_loss(
        T.ones(3), T.ones(3), reduction="bad"
    ),
    "smooth_l1-broadcast": lambda T: T.nn.functional.smooth_l1_loss(T.ones(3, 4), T.ones(3)),
    "huber-delta": lambda T: T.nn.functional.huber_loss(T.ones(3), T.ones(3), delta=0.0),
    "huber-int": lambda T: T.nn.functional.huber_loss(T.arange(3), T.arange(3)),
    "huber-reduction": lambda T: T.nn.functional.huber_loss(
        T.ones(3), T.ones(3), reduction="batchmean"
    ),
    "huber-weight-size": lambda T: T.nn.functional.huber_loss(
        T.ones(3, 4), T.ones(3, 4), weight=T.ones(4)
    ),
    "huber-weight-reduction": lambda T: T.nn.functional.huber_loss(
        T.ones(3), T.ones(3), reduction="bad", weight=T.ones(3)
    ),
    "HuberLoss-delta": lambda T: T.nn.HuberLoss(delta="a"),
    "kl-reduction": lambda T: T.nn.functional.kl_div(T.ones(3), T.ones(3), reduction="bad"),
    "kl-int": lambda T: T.nn.functional.kl_div(T.arange(3), T.arange(3), reduction="sum"),
    "kl-bool": lambda T: T.nn.functional.kl_div(
        T.ones(3), T.ones(3, dtype=T.bool), reduction="sum"
    ),
    "kl-complex": lambda T: T.nn.functional.kl_div(
        T.ones(3, dtype=T.complex64), T.ones(3), reduction="sum"
    ),
    "cos-int": lambda T: T.nn.functional.cosine_similarity(T.arange(3), T.arange(3), dim=0),
    "cos-complex": lambda T: T.nn.functional.cosine_similarity(
        T.ones(1, 3, dtype=T.complex64), T.ones(1, 3, dtype=T.complex64)
    ),
    "cos-broadcast": lambda T: T.nn.functional.cosine_similarity(T.ones(3, 4), T.ones(3)),
    "cos-dim": lambda T: T.nn.functional.cosine_similarity(T.ones(4), T.ones(4)),
    "cos-list": lambda T: T.nn.functional.cosine_similarity([1.0], T.ones(1)),
    "pd-broadcast": lambda T: T.nn.functional.pairwise_distance(T.ones(3, 4), T.ones(3)),
    "cel-target-2d": lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(3, 4), T.ones(3, 4), T.ones(1, 3)
    ),
    "cel-1d-target": lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(4), T.ones(4), T.ones(3)
    ),
    "cel-0d-target": lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(3, 4), T.ones(3, 4), T.tensor(1.0)
    ),
    "cel-mismatch": lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(3, 4), T.ones(3, 5), T.ones(3)
    ),
    "cel-reduction": lambda T: T.nn.functional.cosine_embedding_loss(
        T.ones(3, 4), T.ones(3, 4), T.ones(3), reduction="x"
    ),
    "mrl-dims": lambda T: T.nn.functional.margin_ranking_loss(T.ones(3, 1), T.ones(3), T.ones(3)),
    "mrl-broadcast": lambda T: T.nn.functional.margin_ranking_loss(T.ones(3), T.ones(2), T.ones(3)),
    "mrl-reduction": lambda T: T.nn.functional.margin_ranking_loss(
        T.ones(3), T.ones(3), T.ones(3), reduction="x"
    ),
    # float-only kernels of the first tier (regression: integers were promoted or crashed)
    "gelu-int": lambda T: T.nn.functional.gelu(T.arange(3)),
    "silu-bool": lambda T: T.nn.functional.silu(T.ones(3, dtype=T.bool)),
    "softplus-int": lambda T: T.nn.functional.softplus(T.arange(3)),
    "leaky_relu-int": lambda T: T.nn.functional.leaky_relu(T.arange(3)),
    "softmax2d": lambda T: T.nn.Softmax2d()(T.ones(3, 4)),
    "unflatten-elem": lambda T: T.nn.Unflatten(1, [2, "a"]),
    "unflatten-int": lambda T: T.nn.Unflatten(1, 5),
    "unflatten-size": lambda T: T.nn.Unflatten(1, (2, 3))(T.ones(2, 5)),
}


@needs_torch
@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = _err(lambda: ERRORS[case](nbgrad)), _err(lambda: ERRORS[case](torch))
    assert want is not None, "torch accepted it"
    assert got == want


@needs_torch
def test_warnings_match_torch():
    def caught(fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        return [(x.category, str(x.message), x.filename) for x in w]

    for fn in [
        lambda T: T.nn.functional.smooth_l1_loss(T.ones(3, 4), T.ones(4)),
        lambda T: T.nn.functional.huber_loss(T.ones(3, 4), T.ones(4)),
        lambda T: T.nn.functional.kl_div(T.ones(3), T.ones(3)),
        lambda T: T.nn.functional.kl_div(T.ones(3), T.ones(3), reduction="batchmean"),
        lambda T: T.nn.functional.mse_loss(T.ones(3), T.ones(3)),
    ]:
        n, t = caught(lambda: fn(nbgrad)), caught(lambda: fn(torch))
        assert [(c, m) for c, m, _ in n] == [(c, m) for c, m, _ in t]
        assert all(f == __file__ for _, _, f in n + t)  # attributed to the caller
    for T in (nbgrad, torch):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            T.nn.functional.kl_div(T.ones(3), T.ones(3), size_average=False)
        with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
            m = T.nn.Hardtanh(min_value=-2.0)
        assert m.min_val == -2.0


# -- layers ------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "make,shapes",
    [
        (lambda T: T.nn.PairwiseDistance(p=1.5, eps=0.01, keepdim=True), [(3, 4), (3, 4)]),
        (lambda T: T.nn.CosineSimilarity(dim=0), [(3, 4), (3, 4)]),
        (lambda T: T.nn.MarginRankingLoss(0.3, reduction="sum"), [(5,), (5,), (5,)]),
        (lambda T: T.nn.CosineEmbeddingLoss(0.2), [(3, 4), (3, 4), (3,)]),
        (lambda T: T.nn.KLDivLoss(reduction="batchmean", log_target=True), [(3, 4), (3, 4)]),
        (lambda T: T.nn.SmoothL1Loss(beta=0.3), [(3, 4), (3, 4)]),
        (lambda T: T.nn.HuberLoss(reduction="none", delta=0.3), [(3, 4), (3, 4)]),
        (lambda T: T.nn.PReLU(3, init=0.1), [(2, 3, 4)]),
        (lambda T: T.nn.Softmax2d(), [(2, 3, 4, 5)]),
        (lambda T: T.nn.Unflatten(1, (2, -1)), [(2, 6)]),
        (lambda T: T.nn.GLU(1), [(2, 4, 3)]),
    ],
    ids=[
        "PairwiseDistance",
        "CosineSimilarity",
        "MarginRankingLoss",
        "CosineEmbeddingLoss",
        "KLDivLoss",
        "SmoothL1Loss",
        "HuberLoss",
        "PReLU",
        "Softmax2d",
        "Unflatten",
        "GLU",
    ],
)
def test_layers_match_torch(make, shapes):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if "Loss" in type(make(torch)).__name__ and len(shapes) == 3:
        arrays[2] = np.sign(arrays[2])  # targets of +-1
    res = []
    for T in (nbgrad, torch):
        m = make(T)
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        out = m(*xs)
        out.sum().backward()
        res.append((m, out, xs))
    (nm, nout, nxs), (tm, tout, txs) = res
    assert repr(nm) == repr(tm)
    assert nout.grad_fn.name() == tout.grad_fn.name()
    _close(nout, tout, rtol=1e-5, atol=1e-6)
    for a, b in zip(nxs, txs):
        if b.grad is None:
            assert a.grad is None
        else:
            _close(a.grad, b.grad, rtol=1e-4, atol=1e-6)
    for (n, p), (tn, tp) in zip(nm.named_parameters(), tm.named_parameters()):
        assert n == tn
        _close(p.grad, tp.grad, rtol=1e-4, atol=1e-6)


SECOND_TIER_LAYERS = [
    "elu",
    "elu-opts",
    "mish-inplace",
    "hardtanh",
    "relu6",
    "prelu-3",
    "glu",
    "softmax2d",
    "unflatten-list",
    "smoothl1",
    "huber",
    "kldiv",
    "cosine-embedding",
    "margin-ranking",
    "pairwise-distance",
    "cosine-similarity",
]


@needs_torch
@pytest.mark.parametrize("name", SECOND_TIER_LAYERS)
def test_layer_public_attributes_match_torch(name):
    """Constructor options land in the same public attributes as PyTorch's (structure, reprs
    and state dicts: the LAYERS entries of tests/test_nn_modules.py)."""
    from test_nn_modules import LAYERS, NB, _torch_ns

    nm, tm = LAYERS[name](NB), LAYERS[name](_torch_ns())

    def public(m):
        return {k: v for k, v in vars(m).items() if not k.startswith("_")}

    assert public(nm) == public(tm)


def _graph(y):
    """Node names (with their input counts) breadth-first from ``y.grad_fn``."""
    seen, out, queue = set(), [], [y.grad_fn]
    while queue:
        n = queue.pop(0)
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        out.append("%s/%d" % (n.name(), len(n.next_functions)))
        queue.extend(m for m, _ in n.next_functions)
    return out


COMPOSITES = {
    "kl_div": lambda T, x, t, y: T.nn.functional.kl_div(x, t, reduction="batchmean"),
    "kl_div-log": lambda T, x, t, y: T.nn.functional.kl_div(x, t, log_target=True),
    "cosine_similarity": lambda T, x, t, y: T.nn.functional.cosine_similarity(x, t),
    "cosine_similarity-bcast": lambda T, x, t, y: T.nn.functional.cosine_similarity(x, t[0]),
    "pairwise_distance": lambda T, x, t, y: T.nn.functional.pairwise_distance(x, t),
    "cosine_embedding_loss": lambda T, x, t, y: T.nn.functional.cosine_embedding_loss(x, t, y),
    "margin_ranking_loss": lambda T, x, t, y: T.nn.functional.margin_ranking_loss(
        x[:, 0], t[:, 0], y, 0.2
    ),
    "huber_loss-weight": lambda T, x, t, y: T.nn.functional.huber_loss(x, t, weight=t),
    "smooth_l1_loss-beta0": lambda T, x, t, y: T.nn.functional.smooth_l1_loss(x, t, beta=0.0),
    "prelu": lambda T, x, t, y: T.nn.functional.prelu(x.unsqueeze(0), y),
}


@needs_torch
@pytest.mark.parametrize("case", list(COMPOSITES))
def test_composite_graphs_match_torch(case):
    """What PyTorch composes in C++ records the same nodes here (AddBackward1 for its
    Tensor + Scalar, NormBackward1 for at::norm, ...)."""
    graphs = []
    for T in (nbgrad, torch):
        x = T.tensor(X34, requires_grad=True)
        t = T.tensor(P34, requires_grad=True) * 1
        y = T.tensor(Y3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graphs.append(_graph(COMPOSITES[case](T, x, t, y)))
    assert graphs[0] == graphs[1]
