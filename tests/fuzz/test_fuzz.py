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
        "stride @ cat",
        """
        x2 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x4 = T.floor(x2)
        x6 = T.cat([x4], 1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ conv1d",
        """
        x5 = T.tensor([[[1.0], [1.0]]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([[[1.0, 1.0]], [[1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x7 = F.conv1d(x5, x6, padding=1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ ge",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x5 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x6 = x0 >= x5
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ le",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x7 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float32)
        x8 = T.le(x0, x7)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ rem_t",
        """
        x1 = T.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.remainder(x1, x3)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "grad_fn @ chunk",
        """
        x5 = T.zeros((0, 1, 1), dtype=T.float64, requires_grad=True)
        x6 = x5.chunk(2, 0)[0]
        """,
        "issue 10, Differences: grad_fn names -- chunk of an empty dim is SplitWithSizesBackward0 (shape)",
    ),
    Known(
        "grad_fn @ einsum",
        """
        x4 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x5 = T.einsum('ii->', x4)
        """,
        "issue 10, Differences: grad_fn names -- einsum('ii->') (shape/linalg)",
    ),
    Known(
        "grad_fn @ fill_",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x2 = T.dot(x1, x1)
        x2.fill_(2)
        """,
        "issue 10, Differences: grad_fn names -- fill_ with a Python scalar is FillBackward2 (autograd/in-place)",
    ),
    Known(
        "grad_fn @ linear",
        """
        x2 = T.tensor([[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x5 = F.linear(x2, x3, x4)
        """,
        "issue 10, Differences: grad_fn names -- linear of a 3-D non-contiguous input (linalg)",
    ),
    Known(
        "grad_fn @ matmul",
        """
        x5 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([[[1.0]]], dtype=T.float64)
        x7 = x5 @ x6
        """,
        "issue 10, Differences: grad_fn names -- matmul 2-D @ 3-D (linalg)",
    ),
    Known(
        "grad_fn @ reshape",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = x1 * x0
        x3 = x2.reshape(-1, 1, 3)
        """,
        "issue 10, Differences: grad_fn names -- reshape of a non-contiguous input needing no copy (ReshapeAliasBackward0) (shape)",
    ),
    Known(
        "grad_fn @ setitem_t",
        """
        x1 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x2 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x3 = T.tensor(True, dtype=T.bool)
        x4 = T.where(x3, x1, x2)
        x4[...] = -1.5
        """,
        "issue 10, Differences: grad_fn names -- x[...] = v on a 0-d non-leaf is CopyBackwards in PyTorch (indexing)",
    ),
    Known(
        "exc-type IndexError/RuntimeError @ err_gather",
        """
        x0 = T.tensor([1.0], dtype=T.float64)
        i6 = T.tensor([4], dtype=T.int64)
        x7 = T.gather(x0, 0, i6)
        """,
        "issue 10, Differences: out-of-range gather/index_select/scatter raise RuntimeError as PyTorch (indexing)",
    ),
    Known(
        "grad-nan @ backward via repeat",
        """
        x0 = T.tensor([[1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.clamp(x0, -0.5, 0.7)
        x7 = x3.repeat(1, 3)
        c10 = T.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, inf, 1.0, 1.0]], dtype=T.float64)
        L = (x7 * c10).sum()
        L.backward(retain_graph=True)
        L.backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask (clamp), so inf/NaN from upstream leak (pointwise NaN)",
    ),
    Known(
        "result-value @ clamp",
        """
        x5 = T.tensor([-2.0], dtype=T.float64, requires_grad=True)
        x6 = T.clamp(x5, 1.0, -1.0)
        """,
        "issue 10: clamp(x, 1, -1) differs (pointwise NaN)",
    ),
    Known(
        "raises AxisError @ all",
        """
        x5 = T.tensor(False, dtype=T.bool)
        x8 = x5.all(-1)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ max_dim",
        """
        x1 = T.tensor(1.0, dtype=T.float32)
        x7 = x1.max(-1, keepdim=True).values
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ min_dim",
        """
        x8 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x9 = x8.min(-1, keepdim=True)[0]
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ transpose",
        """
        x9 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x10 = x9.transpose(-1, -1)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (shape)",
    ),
    Known(
        "raises RuntimeError @ min_dim",
        """
        x3 = T.zeros((1, 0, 1), dtype=T.float64)
        x4 = x3.min(-3).values
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "exc-type RuntimeError/IndexError @ argmax",
        """
        x0 = T.zeros((1, 0), dtype=T.float32, requires_grad=True)
        x15 = x0.argmax(1)
        """,
        "issue 10: empty tensors -- reductions over an empty dim; PyTorch raises IndexError (reductions)",
    ),
    Known(
        "raises RuntimeError @ copy_",
        """
        x7 = T.zeros((0, 2), dtype=T.float64)
        x10 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x7.copy_(x10)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ fill_",
        """
        x3 = T.zeros((2, 0), dtype=T.float64)
        x3.fill_(-1.5)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ imul",
        """
        x4 = T.zeros((2, 0), dtype=T.float32)
        x6 = T.zeros((0,), dtype=T.float32, requires_grad=True)
        x4 *= x6
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ err_leaf_inplace",
        """
        x2 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x2.add_(1)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ err_gather",
        """
        x3 = T.tensor([[[1.0]]], dtype=T.float32, requires_grad=True)
        i8 = T.tensor([[[-1]]], dtype=T.int64)
        x9 = T.gather(x3, 0, i8)
        """,
        "issue 10: negative indices in gather/scatter/index_select wrap, PyTorch raises (indexing)",
    ),
    Known(
        "result-nan @ sign",
        """
        x2 = T.tensor([[[[nan]]]], dtype=T.float64, requires_grad=True)
        x4 = T.sign(x2)
        """,
        "issue 10: sign(nan) differs (pointwise NaN)",
    ),
    Known(
        "result-shape @ cumsum",
        """
        x0 = T.tensor(1.0, dtype=T.float64)
        x3 = x0.cumsum(-1)
        """,
        "issue 10: softmax/log_softmax/cumsum of a 0-d tensor have shape (1,) (reductions)",
    ),
    Known(
        "result-shape @ log_softmax",
        """
        x3 = T.tensor(1.0, dtype=T.float64)
        x4 = T.log_softmax(x3, 0)
        """,
        "issue 10: softmax/log_softmax/cumsum of a 0-d tensor have shape (1,) (reductions)",
    ),
    Known(
        "raises TypeError @ flip",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x5 = x1.flip(0, 1)
        """,
        "issue 10: x.flip(0, 2) (varargs dims) fails (shape)",
    ),
    Known(
        "result-shape @ max_dim",
        """
        x4 = T.tensor([1.0], dtype=T.float64)
        x7 = x4.max(0)[0]
        """,
        "issue 10: x.max(0).values of a 1-D tensor has shape (1,) (reductions)",
    ),
    Known(
        "result-shape @ min_dim",
        """
        x6 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7 = x6.min(0).values
        """,
        "issue 10: x.max(0).values of a 1-D tensor has shape (1,); same for min(dim) (reductions)",
    ),
    Known(
        "grad_fn @ div_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.tensor([[False]], dtype=T.bool)
        x4 = T.where(x3, x1, x2)
        x5 = T.movedim(x4, 1, 0)
        x4.div_(x2)
        """,
        "new (fuzz): a view keeps its old grad_fn after its base is modified in place (PyTorch: AsStridedBackward0) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ pow_",
        """
        x6 = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
        x7 = T.softmax(x6, -2)
        x8 = x7.flatten()
        x7.pow_(2)
        """,
        "new (fuzz): a view keeps its old grad_fn after its base is modified in place (PyTorch: AsStridedBackward0) (autograd/in-place)",
    ),
    Known(
        "grad-none @ backward via add",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x3 = x2[..., 1:]
        x5 = x3 + x0
        L = x5.sum()
        L.backward(retain_graph=True)
        L.backward()
        """,
        "new (fuzz): a view made under no_grad of a requires-grad tensor: PyTorch gives it no gradient accumulator (.grad stays None), nbgrad accumulates into it (autograd)",
    ),
    Known(
        "is_leaf @ mul_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x2 = T.expm1(x1)
        with T.no_grad():
            x3 = T.squeeze(x2)
        x7 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2.mul_(x7)
        """,
        "new (fuzz): a view made under no_grad whose base is then modified in place with grad mode on -- PyTorch raises on its grad_fn/is_leaf (autograd/in-place)",
    ),
    Known(
        "is_leaf @ broadcast_tensors",
        """
        x6 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x10 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x11 = T.broadcast_tensors(x10, x6)[0]
        """,
        "new (fuzz): broadcast_tensors returns an input unchanged (no ExpandBackward0) when its shape is already the broadcast shape (shape)",
    ),
    Known(
        "requires_grad @ floor_divide",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x5 = T.tensor(0, dtype=T.int64)
        x7 = x5 // x3
        """,
        "new (fuzz): floor_divide of a requires-grad tensor -- PyTorch's result requires grad (its backward raises 'not implemented'), nbgrad's does not (pointwise)",
    ),
    Known(
        "no-raise RuntimeError @ pow_",
        """
        x2 = T.tensor([[1.0], [1.0], [1.0]], dtype=T.float32, requires_grad=True)
        x4 = x2.unbind(0)[2]
        x4.pow_(2)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "raises ZeroDivisionError @ backward via bce_logits",
        """
        x0 = T.zeros((2, 0), dtype=T.float64, requires_grad=True)
        x1 = T.zeros((2, 0), dtype=T.float64)
        x2 = F.binary_cross_entropy_with_logits(x0, x1)
        (x2.sum()).backward()
        """,
        "new (fuzz): mean-reduced loss backward over an empty input divides by zero (reductions)",
    ),
    Known(
        "stride @ nonzero",
        """
        x1 = T.tensor([[True, False], [False, True]], dtype=T.bool)
        x2 = T.nonzero(x1)
        """,
        "new (fuzz): nonzero's result is column-major in PyTorch, strides (1, n) (indexing/shape)",
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
        "new (fuzz): pow(float64 tensor, float32 tensor) backward raises TypeError (a ufunc with no signature for the mixed dtypes) (pointwise)",
    ),
    Known(
        "requires_grad @ sum_to_size",
        """
        x2 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x3 = x2.sum_to_size(())
        """,
        "new (fuzz): sum_to_size to the same shape returns an alias (PyTorch: a new tensor) (shape)",
    ),
    Known(
        "stride @ unbind",
        """
        x2 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x8 = x2.unbind(1)[0]
        """,
        "new (fuzz): unbind along a non-leading dim copies (strides differ; PyTorch returns views) (shape)",
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
    [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=k.item)) for k in KNOWN],
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
