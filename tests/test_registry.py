"""The registry declares each op's surface: every declared variant exists, and a missing one is
caught (a new op cannot half-exist)."""

import pytest

import nbgrad
from nbgrad.ops.registry import (
    FUNCTION,
    INPLACE,
    METHOD,
    OUT,
    REGISTRY,
    OpDef,
    missing_variants,
    op,
)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_declared_variant_exists(name):
    assert missing_variants(REGISTRY[name], nbgrad) == []


def test_a_missing_variant_is_reported():
    ghost = OpDef(
        "ghost",
        "pointwise",
        formula="x",
        partials=("1",),
        node="GhostBackward0",
        variants=(FUNCTION, METHOD, INPLACE, OUT),
    )
    assert missing_variants(ghost, nbgrad) == [
        "nbgrad.ghost",
        "Tensor.ghost",
        "Tensor.ghost_",
        "ghost(out=)",
        "ghost backward",
    ]


def test_declaring_an_op_gives_out_and_forward_mode(monkeypatch):
    monkeypatch.setattr("nbgrad.ops.registry.REGISTRY", dict(REGISTRY))

    def _vjp(node, grads):
        return (grads[0] * 3,)

    @op("triple", "test", node="TripleBackward0", vjp=_vjp, variants=(FUNCTION, OUT))
    def triple(input):
        return triple.op.record(input._data * 3, (input,))

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = triple(x)
    assert y.grad_fn.name() == "TripleBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    out = nbgrad.empty(2)
    assert triple(x.detach(), out=out) is out and out.tolist() == [3.0, 6.0]
    import nbgrad.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        d = fwAD.make_dual(nbgrad.tensor([1.0, 2.0]), nbgrad.tensor([1.0, -1.0]))
        assert fwAD.unpack_dual(triple(d)).tangent.tolist() == [3.0, -3.0]


def test_aliases_are_the_same_function():
    assert nbgrad.clip is nbgrad.clamp and nbgrad.Tensor.clip is nbgrad.clamp
    assert nbgrad.concat is nbgrad.cat and nbgrad.swapaxes is nbgrad.transpose
    assert nbgrad.Tensor.absolute_ is not None and nbgrad.Tensor.neg_ is not None
