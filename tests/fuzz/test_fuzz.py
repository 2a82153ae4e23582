"""Differential fuzzing against PyTorch (the oracle): random graphs, same inputs, same results.

``test_random_graphs`` runs ``CI_GRAPHS`` seeded random programs (tests/fuzz/graphs.py) on
nbgrad and on torch and fails on any difference whose signature (``kind @ op``) is not in
``KNOWN``; the failure message is the shrunk, minimal program.  ``test_known`` replays each
``KNOWN`` entry's minimal program and is a *strict* xfail: when a fix lands the program passes,
the xfail fails, and the entry must be removed from the list (which makes the fuzzer guard
the fix from then on).  Long runs: ``scripts/fuzz.py --n 10000`` (docs/testing.md).
"""

# ruff: noqa: E501  (KNOWN holds programs and issue items verbatim)
import textwrap
import warnings

import pytest
from conftest import needs_torch, torch

import nbgrad

from . import graphs as G

CI_GRAPHS = 300  # seeds 0..CI_GRAPHS-1
CHUNKS = 6


class Known:
    """A mismatch that is reported and not fixed yet: its signature, a minimal program that
    shows it (replayed by test_known) and the issue item it belongs to."""

    def __init__(self, signature, program, item):
        self.signature, self.program, self.item = signature, textwrap.dedent(program), item

    def __repr__(self):
        return self.signature


KNOWN = [
    # -- indexing
    Known(
        "raises RuntimeError @ gather",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64)
        o4 = T.zeros((0,), dtype=T.float64)
        T.exp(x1, out=o4)
        i9 = T.zeros((0,), dtype=T.int64)
        x10 = o4.gather(0, i9)
        """,
        "new (fuzz): gather/scatter_add with an empty index of another rank raise; PyTorch accepts (indexing)",
    ),
    Known(
        "no-raise RuntimeError @ scatter",
        """
        x4 = T.tensor([[[1.0]]], dtype=T.float32)
        i6 = T.zeros((0, 1, 1), dtype=T.int64)
        x7 = T.zeros((0, 1, 1), dtype=T.float64, requires_grad=True)
        x8 = T.scatter(x4, 2, i6, x7)
        """,
        "new (fuzz): scatter with src of another dtype is accepted; PyTorch raises (indexing)",
    ),
    Known(
        "no-raise RuntimeError @ scatter_",
        """
        x2 = T.tensor([nan, nan, nan], dtype=T.float32)
        i3 = T.tensor([2], dtype=T.int64)
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x2.scatter_(0, i3, x4)
        """,
        "new (fuzz): scatter with src of another dtype is accepted; PyTorch raises (indexing)",
    ),
    # -- pointwise NaN / reductions
    Known(
        "grad-nan @ backward via zero_",
        """
        x2 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x3 = -1.5 / x2
        x3.zero_()
        c5 = T.tensor([inf], dtype=T.float32)
        ((x3 * c5).sum()).backward(inputs=[x2])
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "raises TypeError @ backward via cat",
        """
        x1 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x2 = T.zeros((0, 3, 4), dtype=T.float32)
        x3 = T.remainder(x2, x1)
        x10 = T.tensor([[[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]], dtype=T.float64)
        x11 = T.cat([x10, x3], -3)
        (x11.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via div",
        """
        x4 = T.tensor([[1.0]], dtype=T.float32)
        x6 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x7 = x4 / x6
        (x7.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via getitem",
        """
        x3 = T.tensor([[[1.0]]], dtype=T.float32, requires_grad=True)
        x4 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x5 = T.maximum(x3, x4)
        x7 = x5[:, 0]
        (x7.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via index_select",
        """
        x9 = T.tensor([[1.0]], dtype=T.float32)
        x10 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x11 = T.maximum(x10, x9)
        i14 = T.zeros((0,), dtype=T.int64)
        x15 = T.index_select(x11, 1, i14)
        (x15.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via minimum",
        """
        x1 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x5 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x6 = T.minimum(x1, x5)
        (x6.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via mul",
        """
        x5 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x9 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x10 = x5 * x9
        (x10.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via pow_t",
        """
        x0 = T.tensor(1.0, dtype=T.float64)
        x1 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x3 = x0 ** x1
        (x3.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via rem_t",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x5 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x10 = T.remainder(x0, x5)
        (x10.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "raises TypeError @ backward via sub_alpha",
        """
        x1 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x2 = T.tensor(nan, dtype=T.float64, requires_grad=True)
        x4 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x5 = x2 ** x4
        x10 = T.sub(x5, x1, alpha=0.5)
        (x10.sum()).backward()
        """,
        "new (fuzz): backward of a binary op with float32 and float64 operands raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "result-nan @ batch_norm",
        """
        x7 = T.tensor([[[0.0], [-2.0]], [[-1.0], [-1.0]]], dtype=T.float64, requires_grad=True)
        x8 = T.tensor([1.0, -inf], dtype=T.float64, requires_grad=True)
        x9 = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
        x10 = F.batch_norm(x7, None, None, x8, x9, training=True)
        """,
        "new (fuzz): batch_norm with an infinite weight: nan pattern differs (reductions; low priority)",
    ),
    Known(
        "no-raise RuntimeError @ bce",
        """
        x2 = T.tensor([1.0, 1.0, 1.0], dtype=T.float32, requires_grad=True)
        x4 = T.tensor([1.0, 1.0, 1.0], dtype=T.float64)
        x5 = F.binary_cross_entropy(T.sigmoid(x2), x4.clamp(0, 1))
        """,
        "new (fuzz): binary_cross_entropy with target dtype != input dtype is accepted; PyTorch raises (pointwise/loss)",
    ),
    Known(
        "result-nan @ cumsum",
        """
        x3 = T.tensor([-inf], dtype=T.float64)
        x4 = x3.cumsum(-1)
        """,
        "new (fuzz): cumsum of [-inf] is nan, PyTorch -inf (reductions)",
    ),
    Known(
        "grad-nan @ backward via layer_norm",
        """
        x10 = T.tensor([[[-0.7, -1.91, -0.78, -1.56, 1.05]]], dtype=T.float64, requires_grad=True)
        x11 = T.tensor([1.0, 1.0, 1.0, 1.0, inf], dtype=T.float64, requires_grad=True)
        x12 = T.tensor([1.0, 1.0, 1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x13 = F.layer_norm(x10, (5,), x11, x12)
        (x13.sum()).backward()
        """,
        "new (fuzz): layer_norm backward with an infinite weight gives -inf where PyTorch gives nan (reductions; low priority)",
    ),
    Known(
        "grad-nan @ backward via mul",
        """
        x3 = T.tensor([[[1.0, 0.0, 1.0], [-1.0, -1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([1.0, inf, 1.0], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x6 = F.layer_norm(x3, (3,), x4, x5)
        x8 = x3 * x6
        grads = T.autograd.grad(x8.sum(), [x3], allow_unused=True)
        """,
        "new (fuzz): layer_norm backward with an infinite weight gives -inf where PyTorch gives nan (reductions; low priority)",
    ),
    Known(
        "no-raise RuntimeError @ lerp",
        """
        x1 = T.tensor(1.0, dtype=T.float64)
        x4 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x5 = T.lerp(x1, x4, 0.3)
        """,
        "new (fuzz): lerp with a weight of another dtype is accepted; PyTorch raises (pointwise)",
    ),
    Known(
        "no-raise RuntimeError @ lerp_t",
        """
        x4 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        o5 = T.tensor(1.0, dtype=T.float64)
        x6 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x7 = T.lerp(o5, x6, x4)
        """,
        "new (fuzz): lerp with a weight of another dtype is accepted; PyTorch raises (pointwise)",
    ),
    Known(
        "result-nan @ logsumexp",
        """
        x2 = T.tensor([1.0, nan, inf], dtype=T.float64, requires_grad=True)
        x3 = T.logsumexp(x2, 0)
        """,
        "new (fuzz): logsumexp over [nan, inf] is inf, PyTorch nan (reductions)",
    ),
    Known(
        "raises ZeroDivisionError @ backward via bce",
        """
        x1 = T.zeros((3, 0), dtype=T.float64, requires_grad=True)
        x2 = x1.repeat(2, 1, 3)
        x5 = T.zeros((2, 3, 0), dtype=T.float64)
        x6 = F.binary_cross_entropy(T.sigmoid(x2), x5.clamp(0, 1))
        grads = T.autograd.grad(x6.sum(), [x1], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): mean-reduced loss backward over an empty input divides by zero (reductions)",
    ),
    # -- shape / linalg / creation
    Known(
        "stride @ conv1d",
        """
        x5 = T.tensor([[[1.0]]], dtype=T.float64)
        x6 = T.tensor([[[1.0], [1.0]], [[1.0], [1.0]]], dtype=T.float64).mT.requires_grad_()
        x7 = F.conv1d(x5, x6, padding=1)
        """,
        "deliberate (docs/differences.md: convolution results are always contiguous): PyTorch picks channels-last from a weight whose size-1 dims make its strides ambiguous (shape/layout)",
    ),
    Known(
        "raises RuntimeError @ linear",
        """
        x3 = T.zeros((1, 1, 0), dtype=T.float32, requires_grad=True)
        x4 = T.zeros((1, 0), dtype=T.float32)
        x5 = T.tensor([1.0], dtype=T.float32)
        x6 = F.linear(x3, x4, x5)
        """,
        "new (fuzz): linear with zero in-features raises (reshape with -1 over 0 elements) (linalg)",
    ),
    Known(
        "raises RuntimeError @ flatten",
        """
        x4 = T.zeros((1, 1, 0), dtype=T.float64, requires_grad=True)
        x5 = T.flatten(x4, 0, 1)
        """,
        "new (fuzz): shape op over an empty tensor raises (numpy reshape of 0 elements with -1 / newaxis) (shape)",
    ),
    # -- other
    Known(
        "grad-value @ backward via where",
        """
        x4 = T.tensor([[1.0], [1.0]], dtype=T.float64, requires_grad=True)
        i5 = T.tensor([0, 0], dtype=T.int64)
        x6 = F.cross_entropy(x4, i5, reduction="mean")
        x6.grad_fn.next_functions[0][0].register_prehook(lambda go: tuple(None if g is None else g * 2 for g in go))
        x8 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x9 = T.tensor([[[True, False]]], dtype=T.bool)
        x10 = T.where(x9, x8, x4)
        L = x10.sum()
        L.backward(retain_graph=True)
        L.backward()
        """,
        "deliberate (docs/differences.md: cross_entropy is one node): its node connects straight to its input; PyTorch has LogSoftmaxBackward0 in between (grad_fn.next_functions differ, so a pre-hook lands on another node) (other)",
    ),
]

KNOWN_SIGNATURES = {k.signature for k in KNOWN}


@needs_torch
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_graphs(chunk):
    unknown, known = [], []
    for seed in range(chunk, CI_GRAPHS, CHUNKS):
        prog = G.generate(seed)
        m = G.check(prog, nbgrad, torch)
        if m is None:
            continue
        sig, small, sm = G.classify(prog, m, nbgrad, torch)
        if sig in KNOWN_SIGNATURES:
            known.append("seed %d: %s" % (seed, sig))
            continue
        if small is prog:
            small, sm = G.shrink(prog, m, nbgrad, torch, budget=150, time_limit=10)
        unknown.append("seed %d: %s\n  %s\n%s" % (seed, sig, sm.detail, small.source(header=False)))
    if known:
        warnings.warn("known fuzz mismatches (see KNOWN): " + "; ".join(known), stacklevel=1)
    assert not unknown, "nbgrad and torch disagree:\n\n" + "\n\n".join(unknown)


@needs_torch
@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=k.item))
        for k in KNOWN
    ],
    ids=[k.signature for k in KNOWN],
)
def test_known(entry):
    m = G.check(G.parse(entry.program), nbgrad, torch)
    assert m is None, "%s: %s" % (m.signature, m.detail)


def test_program_round_trip():
    """A generated program prints as Python that parses back to the same statements (what the
    failure messages and KNOWN entries rely on); needs no oracle."""
    for seed in range(30):
        prog = G.generate(seed)
        again = G.parse(prog.source())
        assert again.source(header=False) == prog.source(header=False)


def test_generator_is_seeded():
    assert G.generate(7).source() == G.generate(7).source()
    assert G.generate(7).source() != G.generate(8).source()


@needs_torch
def test_runner_reports_and_shrinks_a_difference():
    """The runner sees a planted difference and the shrinker reduces it to the statement that
    causes it (the comparison itself is under test, not nbgrad)."""

    class Lib:  # torch, except that exp is off by one
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def exp(x):
            return torch.exp(x) + 1

    prog = G.parse(
        """
x0 = T.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=T.float64, requires_grad=True)
x1 = x0.sin()
x2 = x1 * 3
x3 = T.exp(x2)
x4 = x3.sum(0)
x5 = T.tensor([1.5, 2.0], dtype=T.float64, requires_grad=True)
x6 = x4 + x5
(x6.sum()).backward()
"""
    )
    m = G.check(prog, Lib(), torch)
    assert m is not None and m.kind == "result-value" and m.where == 3
    small, sm = G.shrink(prog, m, Lib(), torch)
    assert sm.kind == "result-value"
    src = small.source(header=False)
    assert "T.exp(" in src and "sin" not in src and "x5" not in src, src
    assert len(small.stmts) == 2, src


@needs_torch
def test_exception_types_compare():
    prog = G.parse(
        """
x0 = T.tensor([1.0, 2.0], dtype=T.float64)
x1 = x0.sum(3)
"""
    )
    assert G.check(prog, nbgrad, torch) is None  # both raise IndexError
    assert G.check(prog, torch, torch) is None
