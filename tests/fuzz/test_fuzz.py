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
    Known(
        "grad-none @ backward via scatter_add",
        """
        x1 = T.zeros((0, 1, 1), dtype=T.float32, requires_grad=True)
        x3 = T.zeros((0, 0, 1), dtype=T.float32, requires_grad=True)
        x5 = x1 // x3
        i6 = T.zeros((0, 0, 1), dtype=T.int64)
        x7 = T.zeros((0, 0, 1), dtype=T.float32, requires_grad=True)
        x8 = T.scatter_add(x5, 2, i6, x7)
        (x8.sum()).backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): floor_divide's NotImplemented derivative raises; which leaves were accumulated before the error differs (autograd)",
    ),
    Known(
        "grad-nan @ backward via layer_norm",
        """
        x5 = T.tensor([[[-1.0, 2.0, -2.0, 2.0]]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([1.0, 1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x7 = T.tensor([1.0, 1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x8 = F.layer_norm(x5, (4,), x6, x7)
        c9 = T.tensor([[[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, -inf, 1.0, 1.0]]], dtype=T.float64)
        grads = T.autograd.grad((x8 * c9).sum(), [x6], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz, seeds 10000+): second derivative through layer_norm's create_graph weight gradient with an infinite upstream gradient: the input's gradient is NaN where PyTorch gives -inf in one element (pointwise NaN; open)",
    ),
    Known(
        "grad-none @ backward via where",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x3 = x0 // x1
        x4 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x5 = T.tensor(False, dtype=T.bool)
        x6 = T.where(x5, x3, x4)
        (x6.sum()).backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): floor_divide's NotImplemented derivative raises; which leaves were accumulated before the error differs (autograd)",
    ),
    Known(
        "grad-value @ backward via stack",
        """
        x4 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x5 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x6 = T.stack([x5, x4], -1)
        L = x6.sum()
        L.backward(retain_graph=True)
        L.backward()
        """,
        "deliberate (docs/differences.md: leaf gradients never alias): PyTorch stores both leaves' .grad as views of one gradient buffer (stack of 0-d tensors), so a second backward adds into both (autograd)",
    ),
    Known(
        "grad-none @ backward via roll",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = x0 // x1
        i3 = T.zeros((0, 1), dtype=T.int64)
        x4 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x5 = T.scatter_add(x2, 0, i3, x4)
        x6 = T.roll(x5, -1)
        (x6.sum()).backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): floor_divide's NotImplemented derivative raises; which leaves were accumulated before the error differs (autograd)",
    ),
    Known(
        "grad-none @ backward via node_post_acc",
        """
        x1 = T.tensor([[1.0], [1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
        x3 = F.linear(x1, x1, x2)
        x6 = T.mv(x3, x2)
        x1.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(2) and None)
        (x6.sum()).backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): the hook itself raises (bool of a tensor); which leaves were accumulated before the error differs (autograd)",
    ),
    Known(
        "grad-none @ backward via mul",
        """
        x0 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x1 = T.tensor(1.0, dtype=T.float64)
        x3 = x0 // x1
        x6 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x7 = x3 * x6
        L = x7.sum()
        L.backward(retain_graph=True)
        L.backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): floor_divide's NotImplemented derivative raises; which leaves were accumulated before the error differs (autograd)",
    ),
    Known(
        "grad-none @ backward via rsubs",
        """
        x2 = T.zeros((1, 1, 0), dtype=T.float64, requires_grad=True)
        x3 = T.zeros((0,), dtype=T.float64, requires_grad=True)
        x4 = x3 // x2
        x5 = T.zeros((1, 1, 0), dtype=T.float64, requires_grad=True)
        x6 = T.zeros((1, 1, 0), dtype=T.float64, requires_grad=True)
        x7 = T.lerp(x5, x4, x6)
        x8 = x7.chunk(3, 0)[0]
        x10 = 0.0 - x8
        (x10.sum()).backward()
        """,
        "deliberate (docs/differences.md: a backward that raises): floor_divide's NotImplemented derivative raises; which leaves were accumulated before the error differs (autograd)",
    ),
    # -- indexing
    # -- pointwise NaN / reductions
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
