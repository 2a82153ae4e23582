"""nbgrad.elementwise: scalar formula -> compiled differentiable op with derived backward."""

import numpy as np
import pytest

import nbgrad
from nbgrad.kernels.vocab import exp, log, tanh, where  # the names the formulas call


@nbgrad.elementwise
def gelu(x):
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


@nbgrad.elementwise
def smooth_max(a, b):
    return log(exp(a) + exp(b))


@nbgrad.elementwise
def leaky(x):
    return where(x > 0, x, 0.1 * x)


def _np_gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def test_values_match_numpy_and_node_name():
    xs = np.linspace(-3, 3, 11)
    x = nbgrad.tensor(xs, requires_grad=True)
    y = gelu(x)
    np.testing.assert_allclose(y.detach().numpy(), _np_gelu(xs), rtol=1e-12)
    assert y.grad_fn.name() == "GeluBackward"
    assert gelu(nbgrad.tensor(xs, dtype=nbgrad.float32)).dtype is nbgrad.float32


def test_gradients_and_second_order_by_finite_differences():
    x = nbgrad.tensor(np.linspace(-2, 2, 7), requires_grad=True)
    assert nbgrad.autograd.gradcheck(gelu, (x,))
    assert nbgrad.autograd.gradgradcheck(gelu, (x,))
    a = nbgrad.randn(3, 1, dtype=nbgrad.float64, requires_grad=True)
    b = nbgrad.randn(4, dtype=nbgrad.float64, requires_grad=True)
    assert nbgrad.autograd.gradcheck(smooth_max, (a, b))  # broadcasting
    z = nbgrad.tensor([-1.5, -0.5, 0.5, 2.0], dtype=nbgrad.float64, requires_grad=True)
    assert nbgrad.autograd.gradcheck(leaky, (z,))


def test_fused_backward_equals_differentiable_backward():
    x = nbgrad.tensor(np.linspace(-2, 2, 9), requires_grad=True)
    (g_fused,) = nbgrad.autograd.grad(gelu(x).sum(), x)  # Numba kernel
    (g_graph,) = nbgrad.autograd.grad(gelu(x).sum(), x, create_graph=True)  # nbgrad ops
    np.testing.assert_allclose(g_fused.numpy(), g_graph.detach().numpy(), rtol=1e-12)


def test_rejects_what_it_cannot_differentiate():
    with pytest.raises(ValueError, match="cannot differentiate"):

        @nbgrad.elementwise
        def bad(x):
            return hypot(x, x)  # noqa: F821

    with pytest.raises(ValueError, match="single return expression"):

        @nbgrad.elementwise
        def two(x):
            y = x * 2
            return y
