"""Forward-mode AD: dual tensors, JVPs against finite differences, forward-mode jacobian."""

import numpy as np
import pytest

import nbgrad as torch
import nbgrad.autograd.forward_ad as fwAD
from nbgrad.autograd.functional import jacobian


def f(x):
    return (x.exp() * x).sum() + x.softmax(0)[0] + (x @ x) + x[1:].max() + x.var()


def test_make_dual_unpack_dual():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    u = torch.tensor([1.0, 0.0, 2.0], dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, u)
        p, t = fwAD.unpack_dual(d)
        assert p.tolist() == x.tolist() and t.tolist() == u.tolist()
        res = fwAD.unpack_dual(x * 2)
        assert res.tangent is None and res.primal.tolist() == [2.0, 4.0, 6.0]
        assert fwAD.unpack_dual(d * 3).tangent.tolist() == [3.0, 0.0, 6.0]
    with pytest.raises(RuntimeError, match="dual_level"):
        fwAD.make_dual(x, u)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, torch.ones(2, dtype=torch.float64))


def test_forward_mode_matches_finite_differences():
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal(5))
    u = torch.tensor(rng.standard_normal(5))
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, u))).tangent.item()
    eps = 1e-6
    num = (f(x + eps * u).item() - f(x - eps * u).item()) / (2 * eps)
    assert tangent == pytest.approx(num, rel=1e-6)


def test_forward_mode_jacobian_equals_reverse_mode():
    x = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.float64)
    fn = lambda t: (t.exp() @ t).sum(1)  # noqa: E731
    jf = jacobian(fn, x, strategy="forward-mode", vectorize=True)
    jr = jacobian(fn, x)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-12)


def test_gradcheck_check_forward_ad():
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: (t * t).tanh().cumsum(0), (x,), check_forward_ad=True)
