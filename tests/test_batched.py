"""Batched gradients: autograd.grad(is_grads_batched=True), jacobian/hessian(vectorize=True),
batched forward-mode jacobians and forward-over-reverse Hessians (NOTE [batched backward]).
Every op of the op table is also checked batched-vs-rows in test_ops.py."""

import numpy as np
import pytest
from conftest import needs_torch, torch as pt

import nbgrad as torch
import nbgrad.autograd.engine as engine
from nbgrad.autograd.functional import hessian, jacobian

rng = np.random.default_rng(0)
W = rng.standard_normal((6, 4))
B = rng.standard_normal(6)


def mlp(T):
    w, b = T.tensor(W), T.tensor(B)
    return lambda x: (T.tanh(w @ x + b).softmax(0)[1:] * 2).reshape(5, 1).sum(1)


@pytest.fixture
def fallbacks(monkeypatch):
    """Names of the nodes that ran through the per-sample fallback."""
    seen = []
    orig = engine.per_sample

    def spy(node, grads, fit):
        seen.append(node.name())
        return orig(node, grads, fit)

    monkeypatch.setattr(engine, "per_sample", spy)
    return seen


def test_batched_grad_equals_rows_and_runs_batch_aware_nodes_once(fallbacks):
    x = torch.tensor(rng.standard_normal(4), requires_grad=True)
    y = mlp(torch)(x)
    v = torch.tensor(rng.standard_normal((7, 5)))
    (g,) = torch.autograd.grad(y, x, v, retain_graph=True, is_grads_batched=True)
    rows = [torch.autograd.grad(y, x, v[k], retain_graph=True)[0].numpy() for k in range(7)]
    assert g.shape == (7, 4)
    np.testing.assert_allclose(g.numpy(), np.stack(rows), rtol=1e-12)
    assert fallbacks == []  # matmul, add, tanh, softmax, slicing, mul, reshape, sum: all batched


def test_custom_function_runs_per_sample_and_is_correct(fallbacks):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert g.shape == x.shape  # the fallback hands each sample's unbatched gradient
            return 3 * x * x * g

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = Cube.apply(x).exp()
    (g,) = torch.autograd.grad(y, x, torch.eye(2, dtype=torch.float64), is_grads_batched=True)
    expected = np.diag(3 * x.detach().numpy() ** 2 * np.exp(x.detach().numpy() ** 3))
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)
    assert fallbacks == ["CubeBackward"]


def test_batched_grad_with_create_graph_is_differentiable():
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    y = (x * x).sin()
    (g,) = torch.autograd.grad(
        y, x, torch.eye(3, dtype=torch.float64), create_graph=True, is_grads_batched=True
    )
    assert g.requires_grad
    (gg,) = torch.autograd.grad(g.sum(), x)
    a = x.detach().numpy()
    # d/dx of sum_i J_ii = d/dx [2x cos(x^2)] = 2 cos(x^2) - 4 x^2 sin(x^2)
    np.testing.assert_allclose(
        gg.numpy(), 2 * np.cos(a * a) - 4 * a * a * np.sin(a * a), rtol=1e-12
    )


def test_batched_grad_unused_inputs_and_implicit_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    z = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    got = torch.autograd.grad(
        y, [x, z], torch.eye(2), is_grads_batched=True, allow_unused=True, retain_graph=True
    )
    assert got[1] is None
    got = torch.autograd.grad(
        y, [x, z], torch.eye(2), is_grads_batched=True, materialize_grads=True, retain_graph=True
    )
    assert got[1].shape == (2, 3) and not got[1].numpy().any()
    # a None grad_output of a scalar output is ones for every batch element
    s = (x * x).sum()
    got = torch.autograd.grad([y, s], x, [torch.eye(2), None], is_grads_batched=True)
    np.testing.assert_allclose(got[0].numpy(), 2 * np.eye(2) + 2 * x.detach().numpy())


def test_batched_grad_errors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError,
        match=r"If `is_grads_batched=True`, we interpret the first "
        r"dimension of each grad_output as the batch dimension.*grad_output\[0\] "
        r"has a shape of torch.Size\(\[\]\) and output\[0\] has a shape of "
        r"torch.Size\(\[2\]\)",
    ):
        torch.autograd.grad(y, x, torch.ones(3, 3), is_grads_batched=True)
    with pytest.raises(
        ValueError,
        match="Got in_dim=0 for some input, but that input is a Tensor of dimensionality 0",
    ):
        torch.autograd.grad(y.sum(), x, torch.tensor(1.0), is_grads_batched=True)


def exp_reducer(x):
    return x.exp().sum(dim=1)


def two_in_two_out(a, c):
    return (a * c.sum()).exp(), (a.sum() * c).softmax(0)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorized_jacobian_equals_row_loop(strategy):
    x = torch.tensor(rng.standard_normal((2, 3)))
    J = jacobian(exp_reducer, x, vectorize=True, strategy=strategy)
    expected = np.zeros((2, 2, 3))
    expected[0, 0] = np.exp(x.numpy()[0])
    expected[1, 1] = np.exp(x.numpy()[1])
    np.testing.assert_allclose(J.numpy(), expected, rtol=1e-12)
    a, c = torch.tensor(rng.standard_normal((2, 3))), torch.tensor(rng.standard_normal(4))
    loop = jacobian(two_in_two_out, (a, c))
    vec = jacobian(two_in_two_out, (a, c), vectorize=True, strategy=strategy)
    for i in range(2):
        for j in range(2):
            assert vec[i][j].shape == loop[i][j].shape
            np.testing.assert_allclose(
                vec[i][j].numpy(), loop[i][j].numpy(), rtol=1e-12, atol=1e-15
            )
    # an input the output does not depend on gives zeros
    J = jacobian(lambda p, q: p * 2, (a, c), vectorize=True, strategy=strategy)
    assert J[1].shape == (2, 3, 4) and not J[1].numpy().any()


def test_forward_mode_jacobian_is_one_forward_pass():
    calls = []

    def f(x):
        calls.append(1)
        return x.sin() * x.sum()

    x = torch.tensor(rng.standard_normal(5))
    J = jacobian(f, x, vectorize=True, strategy="forward-mode")
    a = x.numpy()
    np.testing.assert_allclose(
        J.numpy(), np.diag(np.cos(a) * a.sum()) + np.sin(a)[:, None], rtol=1e-12
    )
    assert len(calls) == 1


def test_vectorized_jacobian_create_graph():
    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    J = jacobian(lambda t: t**3, x, create_graph=True, vectorize=True)
    assert J.requires_grad and J.grad_fn.name() == "ViewBackward0"
    (g,) = torch.autograd.grad(J.sum(), x)
    np.testing.assert_allclose(g.numpy(), 6 * x.detach().numpy())


F_HESS = [
    lambda x: (x.exp() * x.sum()).sum(),
    lambda x: (x[:2] ** 3).prod(),
    lambda x: x.softmax(0)[1],
    lambda x: x.tanh().sum() * x.sigmoid().sum(),
    lambda x: x.logsumexp(0),
    lambda x: x.norm(),
    lambda x: (x.reshape(3, 1) @ x.reshape(1, 3)).var(),
]


@pytest.mark.parametrize("k", range(len(F_HESS)))
@pytest.mark.parametrize("outer", ["reverse-mode", "forward-mode"])
def test_vectorized_hessian_matches_finite_differences(k, outer):
    f = F_HESS[k]
    a = rng.standard_normal(3)
    H = hessian(f, torch.tensor(a), vectorize=True, outer_jacobian_strategy=outer).detach()
    eps = 1e-5

    def grad_at(p):
        t = torch.tensor(p, requires_grad=True)
        return torch.autograd.grad(f(t), t)[0].numpy()

    num = np.stack(
        [(grad_at(a + eps * e) - grad_at(a - eps * e)) / (2 * eps) for e in np.eye(3)], 1
    )
    np.testing.assert_allclose(H.numpy(), num, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        H.numpy(), hessian(f, torch.tensor(a)).numpy(), rtol=1e-12, atol=1e-14
    )


@needs_torch
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorized_jacobian_matches_torch(strategy):
    x = rng.standard_normal(4)
    got = jacobian(mlp(torch), torch.tensor(x), vectorize=True, strategy=strategy)
    want = pt.autograd.functional.jacobian(mlp(pt), pt.tensor(x), vectorize=True, strategy=strategy)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    nx = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(
        mlp(torch)(nx), nx, torch.eye(5, dtype=torch.float64), is_grads_batched=True
    )
    nt = pt.tensor(x, requires_grad=True)
    (tg,) = pt.autograd.grad(mlp(pt)(nt), nt, pt.eye(5, dtype=pt.float64), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


@needs_torch
def test_forward_over_reverse_hessian_matches_torch():
    a = rng.standard_normal(3)
    for f in F_HESS:
        got = hessian(f, torch.tensor(a), vectorize=True, outer_jacobian_strategy="forward-mode")
        want = pt.autograd.functional.hessian(
            f, pt.tensor(a), vectorize=True, outer_jacobian_strategy="forward-mode"
        )
        np.testing.assert_allclose(
            got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-14
        )


def test_hvp_forward_over_reverse_equals_double_backward(monkeypatch):
    from nbgrad.autograd import functional as fn

    def f(a, b):
        return (a.exp() * b.sum()).sum() + (a[:2] ** 3).prod() + b.softmax(0)[0]

    a, b = torch.tensor(rng.standard_normal(3)), torch.tensor(rng.standard_normal(2))
    va, vb = torch.tensor(rng.standard_normal(3)), torch.tensor(rng.standard_normal(2))
    out, got = fn.hvp(f, (a, b), (va, vb))
    _, trick = fn.hvp(f, (a, b), (va, vb), create_graph=True)  # the double-backward path
    H = hessian(f, (a, b))
    for i, g in enumerate(got):
        want = sum(np.tensordot(H[i][j].numpy(), v.numpy(), 1) for j, v in enumerate((va, vb)))
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(trick[i].detach().numpy(), want, rtol=1e-12, atol=1e-14)
        assert not g.requires_grad
    assert out.item() == pytest.approx(f(a, b).item())
    # a linear function has a zero Hessian; the primal is returned without tangent
    out, (h,) = fn.hvp(lambda t: (t * 2).sum(), (a,), (va,))
    assert not h.numpy().any() and out.item() == pytest.approx(2 * a.numpy().sum())
    with pytest.raises(RuntimeError, match="should contain a single element"):
        fn.hvp(lambda t: t * 2, a, va)


def test_forward_mode_jacobian_errors_in_pytorchs_order():
    x = torch.ones(2)
    with pytest.raises(
        RuntimeError,
        match=r"`strict=True` and `strategy=\"forward-mode\"` are "
        r"not supported together \(yet\)",
    ):
        jacobian(lambda a: a * 2, x, strategy="forward-mode", strict=True)
    with pytest.raises(
        NotImplementedError,
        match=r"`create_graph=True` and "
        r"`strategy=\"forward-mode\"` are not supported together",
    ):
        jacobian(lambda a: a * 2, x, strategy="forward-mode", create_graph=True, strict=True)
    with pytest.raises(NotImplementedError, match="isonly implemented for `vectorize=True`"):
        jacobian(lambda a: a * 2, x, strategy="forward-mode")
