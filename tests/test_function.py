"""autograd.Function behaviour (SEMANTICS.md section 8), including a Numba kernel inside."""

import numba
import numpy as np
import pytest

import nbgrad as torch
from nbgrad.autograd.function import once_differentiable


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


def test_exp_function_values_grads_and_names():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    assert type(y.grad_fn).__name__ == "ExpBackward"
    assert repr(y).endswith("grad_fn=<ExpBackward>)")
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_forward_runs_without_grad_and_sees_original_inputs():
    seen = {}

    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen["grad"] = torch.is_grad_enabled()
            seen["rg"] = x.requires_grad
            seen["needs"] = ctx.needs_input_grad
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    F.apply(x, torch.tensor([1.0, 1.0]), 2.0).sum().backward()
    assert seen == {"grad": False, "rg": True, "needs": (True, False, False)}


def test_setup_context_style():
    class MulC(torch.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = torch.tensor([3.0, 8.0], requires_grad=True)
    out = MulC.apply(x, 2.0)
    assert repr(out) == "tensor([ 6., 16.], grad_fn=<MulCBackward>)"
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_wrong_gradient_count_and_trailing_nones():
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    a = torch.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"function WrongBackward returned an incorrect number "
        r"of gradients \(expected 2, got 1\)",
    ):
        Wrong.apply(a, a).sum().backward()

    class Extra(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = torch.ones(2, requires_grad=True)
    Extra.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_wrong_shape_non_tensor_and_dtype_cast():
    class WrongShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return torch.ones(3)

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Function WrongShapeBackward returned an invalid "
        r"gradient at index 0 - got \[3\] but expected shape "
        r"compatible with \[2\]",
    ):
        WrongShape.apply(x).sum().backward()

    class NotTensor(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return 3

    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got int\)"):
        NotTensor.apply(x).sum().backward()

    class Dbl(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.double()

    y = torch.ones(2, requires_grad=True)
    Dbl.apply(y).sum().backward()
    assert y.grad.dtype is torch.float32


def test_grad_for_non_tensor_input_is_an_error():
    class GradForNonTensorInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, torch.ones(1)

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="returned a gradient different than None at position "
        "2, but the corresponding forward input was not a "
        "Variable",
    ):
        GradForNonTensorInput.apply(x, 2.0).sum().backward()


def test_mark_non_differentiable_and_materialize_grads():
    got = {}

    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = torch.tensor([0, 1, 2])
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gi):
            got["gi"] = gi
            return g * 2

    x = torch.ones(3, requires_grad=True)
    y, idx = Two.apply(x)
    assert not idx.requires_grad and idx.grad_fn is None
    y.sum().backward()
    assert got["gi"].tolist() == [0, 0, 0]

    class NoMat(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1

    a, b = NoMat.apply(torch.ones(2, requires_grad=True))
    a.sum().backward()
    assert got["g2"] is None


def test_mark_dirty_returns_input_and_bumps_version():
    class AddOne(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = torch.ones(2, requires_grad=True)
    b = a * 1
    out = AddOne.apply(b)
    assert out is b and b._version == 2 and b.grad_fn.name() == "AddOneBackward"
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad has been used in an in-place operation.",
    ):
        AddOne.apply(torch.ones(2, requires_grad=True))

    class Forgot(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        RuntimeError,
        match="Some elements marked as dirty during the forward method were not returned as output",
    ):
        Forgot.apply(torch.ones(2, requires_grad=True) * 1)


def test_saved_tensors_version_checked_and_freed():
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, none = ctx.saved_tensors
            assert none is None
            return g * 2

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):

        class G(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 1)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        G.apply(torch.ones(1, requires_grad=True))

    x = torch.ones(2, requires_grad=True)
    h = x * 1
    y = F.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = F.apply(x * 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_no_input_requires_grad_gives_plain_output():
    out = Exp.apply(torch.ones(2))
    assert not out.requires_grad and out.grad_fn is None


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_double_backward_through_differentiable_backward():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [2.0, 4.0]
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [2.0, 2.0]


def test_once_differentiable():
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not torch.is_grad_enabled()
            return 2 * x * g

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [2.0, 4.0]
    y = Sq.apply(x)
    (g2,) = torch.autograd.grad(y, x, torch.ones(2, requires_grad=True), create_graph=True)
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        g2.sum().backward()


def test_instantiating_a_function_is_an_error():
    with pytest.warns(DeprecationWarning):
        f = Exp()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward"):
        f(torch.ones(1))


# -- the use case nbgrad exists for: a user's own Numba kernels inside a Function -------------


@numba.njit(cache=False)
def _softplus_fwd(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = max(v, 0.0) + np.log1p(np.exp(-abs(v)))


@numba.njit(cache=False)
def _softplus_bwd(x, g, out):
    for i in range(x.size):
        out[i] = g[i] / (1.0 + np.exp(-x[i]))


class NumbaSoftplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xa = np.ascontiguousarray(x.detach().numpy()).reshape(-1)
        out = np.empty_like(xa)
        _softplus_fwd(xa, out)
        return torch.from_numpy(out.reshape(x.shape))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xa = np.ascontiguousarray(x.detach().numpy()).reshape(-1)
        ga = np.ascontiguousarray(g.numpy()).reshape(-1)
        out = np.empty_like(xa)
        _softplus_bwd(xa, ga, out)
        return torch.from_numpy(out.reshape(x.shape))


def test_numba_kernels_inside_a_function():
    x = torch.tensor(np.linspace(-3, 3, 7), requires_grad=True)
    y = NumbaSoftplus.apply(x)
    np.testing.assert_allclose(y.detach().numpy(), np.log1p(np.exp(np.linspace(-3, 3, 7))))
    assert torch.autograd.gradcheck(NumbaSoftplus.apply, (x,))


def test_custom_function_jvp_in_forward_mode_and_hvp_without_one():
    import nbgrad.autograd.forward_ad as fwAD
    from nbgrad.autograd.functional import hvp

    class SqJ(Square):
        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2 * x * t

    x = torch.tensor([1.0, -2.0], dtype=torch.float64)
    u = torch.tensor([0.5, 3.0], dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, u)
        np.testing.assert_allclose(
            fwAD.unpack_dual(SqJ.apply(d)).tangent.numpy(), 2 * x.numpy() * u.numpy()
        )
        with pytest.raises(
            NotImplementedError,
            match="You must implement the jvp function for "
            "custom autograd.Function to use it with forward mode AD.",
        ):
            Square.apply(d)
    # forward-over-reverse hits Sq's missing jvp: hvp falls back to the double-backward trick
    _, h = hvp(lambda t: (Square.apply(t) * t).sum(), x, u)
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy() * u.numpy())
    _, h = hvp(lambda t: (SqJ.apply(t) * t).sum(), x, u)
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy() * u.numpy())
