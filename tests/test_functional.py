"""autograd.functional (SEMANTICS.md section 12) with the documented examples checked
analytically."""

import numpy as np
import pytest

import nbgrad as torch
from nbgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp


def exp_reducer(x):
    return x.exp().sum(dim=1)


def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


def pow_reducer(x):
    return x.pow(3).sum()


def pow_adder_reducer(x, y):
    return (2 * x.pow(2) + 3 * y.pow(2)).sum()


def adder(x, y):
    return 2 * x + 3 * y


X = np.array([[0.1, 0.2], [0.3, 0.4]])


def test_jacobian_exp_reducer():
    x = torch.tensor(X)
    J = jacobian(exp_reducer, x)
    expected = np.zeros((2, 2, 2))
    expected[0, 0] = np.exp(X[0])
    expected[1, 1] = np.exp(X[1])
    assert J.shape == (2, 2, 2)
    np.testing.assert_allclose(J.numpy(), expected)
    assert not J.requires_grad
    Jg = jacobian(exp_reducer, x.clone().requires_grad_(), create_graph=True)
    assert Jg.requires_grad and Jg.grad_fn.name() == "ViewBackward0"


def test_jacobian_tuple_structure_and_exp_adder():
    x, y = torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.4])
    jx, jy = jacobian(exp_adder, (x, y))
    np.testing.assert_allclose(jx.numpy(), np.diag(2 * np.exp([0.1, 0.2])))
    np.testing.assert_allclose(jy.numpy(), np.diag([3.0, 3.0]))
    x3, y2 = torch.ones(3), torch.ones(2)
    J = jacobian(lambda a, b: (a[:2] * b, a * 2), (x3, y2))
    assert [[tuple(t.shape) for t in row] for row in J] == [[(2, 3), (2, 2)], [(3, 3), (3, 2)]]
    assert tuple(jacobian(lambda a: a.sum(), x3).shape) == (3,)
    single_in_tuple_out = jacobian(lambda a: (a * 2, a.sum()), x3)
    assert [tuple(t.shape) for t in single_in_tuple_out] == [(3, 3), (3,)]
    zeros = jacobian(lambda a, b: a * 2, (x3, y2))[1]
    assert tuple(zeros.shape) == (3, 2) and not np.any(zeros.numpy())


def test_hessian_pow_reducer_and_tuple():
    x = torch.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(hessian(pow_reducer, x).numpy(), np.diag([6.0, 12.0, 18.0]))
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    H = hessian(pow_adder_reducer, (a, b))
    np.testing.assert_allclose(H[0][0].numpy(), np.diag([4.0, 4.0]))
    np.testing.assert_allclose(H[1][1].numpy(), np.diag([6.0, 6.0]))
    assert not np.any(H[0][1].numpy())
    with pytest.raises(RuntimeError, match="should contain a single element"):
        hessian(lambda t: t * 2, x)


def test_vjp_jvp_vhp_hvp():
    x = torch.tensor(X)
    out, v = vjp(exp_reducer, x, torch.ones(2, dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), np.exp(X).sum(1))
    np.testing.assert_allclose(v.numpy(), np.exp(X))
    out, jv = jvp(exp_reducer, x, torch.ones(2, 2, dtype=torch.float64))
    np.testing.assert_allclose(jv.numpy(), np.exp(X).sum(1))
    out, r = vhp(pow_reducer, torch.tensor([1.0, 2.0]), torch.ones(2))
    assert out.item() == 9.0 and r.tolist() == [6.0, 12.0]
    out, r = hvp(pow_reducer, torch.tensor([1.0, 2.0]), torch.ones(2))
    assert r.tolist() == [6.0, 12.0]
    out, (ra, rb) = vhp(
        pow_adder_reducer, (torch.ones(2), torch.ones(2)), (torch.ones(2), torch.ones(2))
    )
    assert ra.tolist() == [4.0, 4.0] and rb.tolist() == [6.0, 6.0]
    o, (gx, gy) = vjp(adder, (torch.ones(2), torch.ones(2)), torch.ones(2))
    assert gx.tolist() == [2.0, 2.0] and gy.tolist() == [3.0, 3.0]


def test_v_none_errors_and_strict_mode():
    with pytest.raises(
        RuntimeError,
        match="The vector v can only be None if the user-provided "
        "function returns a single Tensor with a single "
        "element.",
    ):
        vjp(lambda t: t * 2, torch.ones(3))
    with pytest.raises(
        RuntimeError,
        match="The vector v can only be None if the input to the "
        "user-provided function is a single Tensor with a "
        "single element.",
    ):
        jvp(lambda t: t * 2, torch.ones(3))
    x, y = torch.ones(3), torch.ones(2)
    with pytest.raises(
        RuntimeError,
        match="Output 0 of the user-provided function is "
        "independent of input 1. This is not allowed in "
        "strict mode.",
    ):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        jacobian(lambda a: torch.ones(2), x, strict=True)
    with pytest.raises(
        RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"
    ):
        jacobian(lambda a: a, x, strict=True, vectorize=True)
    with pytest.raises(NotImplementedError, match="isonly implemented for `vectorize=True`"):
        jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(
        TypeError,
        match="The inputs given to jacobian must be either a Tensor or "
        "a tuple of Tensors but the given inputs has type "
        "<class 'list'>.",
    ):
        jacobian(lambda a: a, [x])
    with pytest.raises(
        TypeError,
        match="must be either a Tensor or a tuple of Tensors but the "
        "given outputs of the user-provided function has type "
        "<class 'float'>.",
    ):
        jacobian(lambda a: 1.0, x)


def test_create_graph_makes_results_differentiable():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out, g = vjp(pow_reducer, x, create_graph=True)
    assert out.requires_grad and g.requires_grad
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]
    out, g = vjp(pow_reducer, x)
    assert not out.requires_grad and not g.requires_grad
