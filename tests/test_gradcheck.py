"""gradcheck / gradgradcheck (SEMANTICS.md section 11)."""

import pytest

import nbgrad as torch
from nbgrad.autograd.gradcheck import GradcheckError


class WrongSquare(torch.autograd.Function):
    """x**2 with a wrong backward (3x instead of 2x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g


def x64():
    return torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)


def test_gradcheck_passes_on_correct_ops():
    assert torch.autograd.gradcheck(lambda a: (a * a).exp().sum(0), (x64(),))
    assert torch.autograd.gradcheck(
        lambda a, b: a @ b,
        (
            torch.randn(2, 3, dtype=torch.float64, requires_grad=True),
            torch.randn(3, 2, dtype=torch.float64, requires_grad=True),
        ),
        fast_mode=True,
    )
    assert torch.autograd.gradgradcheck(lambda a: (a * a).tanh(), (x64(),))


def test_gradcheck_error_message_slow_mode():
    with pytest.raises(GradcheckError) as info:
        torch.autograd.gradcheck(WrongSquare.apply, (x64(),))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith(
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[2.0000, 0.0000],\n        [0.0000, 4.0000]]"
    )
    assert "analytical:tensor([[3., 0.],\n        [0., 6.]]" in msg


def test_gradcheck_fast_mode_and_no_raise():
    with pytest.raises(GradcheckError, match="computed in fast mode") as info:
        torch.autograd.gradcheck(WrongSquare.apply, (x64(),), fast_mode=True)
    assert "The max per-element difference (slow mode) is: 1.99999" in str(info.value)
    assert torch.autograd.gradcheck(WrongSquare.apply, (x64(),), raise_exception=False) is False


def test_gradcheck_input_checks():
    with pytest.raises(
        ValueError,
        match="gradcheck expects at least one input tensor to require "
        "gradient, but none of them have requires_grad=True.",
    ):
        torch.autograd.gradcheck(lambda a: a * 2, (torch.ones(2, dtype=torch.float64),))
    with pytest.warns(
        UserWarning,
        match="Input #0 requires gradient and is not a double precision floating point or complex",
    ):
        torch.autograd.gradcheck(
            lambda a: a * 2, (torch.ones(2, requires_grad=True),), atol=1e-2, rtol=1e-2, eps=1e-3
        )


def test_gradcheck_nondeterministic_backward():
    calls = [0]

    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls[0] += 1
            return g * (2 + 1e-9 * calls[0])

    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        torch.autograd.gradcheck(Noisy.apply, (x64(),))
    assert torch.autograd.gradcheck(Noisy.apply, (x64(),), nondet_tol=1e-6)


def test_gradgradcheck_catches_wrong_double_backward():
    class BadDouble(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * (x.detach() * x.detach()) * g + 0 * x  # second derivative lost

    assert torch.autograd.gradcheck(BadDouble.apply, (x64(),))
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        torch.autograd.gradgradcheck(BadDouble.apply, (x64(),))


def test_gradcheck_options_accepted():
    assert torch.autograd.gradcheck(
        lambda a: a.sin(),
        (x64(),),
        check_undefined_grad=True,
        check_grad_dtypes=True,
        check_batched_grad=True,
    )


def test_check_batched_grad_catches_a_wrong_batch_rule(monkeypatch):
    from nbgrad.autograd.batching import batched, lead
    from nbgrad.autograd.gradcheck import GradcheckError
    from nbgrad.ops.registry import REGISTRY

    @batched
    def mixes_the_batch(node, grads):  # right unbatched, wrong batched (averages the batch)
        g = grads[0]
        return (g.mean().expand(*(lead(g) + node.attrs[0])),)

    monkeypatch.setattr(REGISTRY["sum"], "vjp", mixes_the_batch)  # the op's declared backward
    assert torch.autograd.gradcheck(lambda a: a.sum(), (x64(),))
    with pytest.raises(GradcheckError, match="while testing batched gradient computation"):
        torch.autograd.gradcheck(lambda a: a.sum(), (x64(),), check_batched_grad=True)


def test_gradgradcheck_fwd_over_rev_catches_a_lost_second_derivative():
    class BadDoubleJ(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * (x.detach() * x.detach()) * g  # right value, no second derivative

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    assert torch.autograd.gradcheck(
        BadDoubleJ.apply,
        (x64(),),
        check_forward_ad=True,
        check_batched_forward_grad=True,
        check_batched_grad=True,
    )
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch"):
        torch.autograd.gradgradcheck(
            BadDoubleJ.apply, (x64(),), check_fwd_over_rev=True, check_rev_over_rev=False
        )
    assert torch.autograd.gradgradcheck(
        lambda a: a.sin() * a, (x64(),), check_fwd_over_rev=True, check_batched_grad=True
    )
