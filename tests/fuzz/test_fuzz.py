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
        "grad_fn @ setitem",
        """
        x3 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x5 = x3.square()
        x5[...] = 3.0
        """,
        "issue 10, Differences: grad_fn names -- x[...] = v on a 0-d non-leaf is CopyBackwards in PyTorch (indexing)",
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
        "result-value @ div_",
        """
        x6 = T.tensor([1.0, 1.0], dtype=T.float64)
        x10 = x6[1]
        x11 = T.tensor(0.53, dtype=T.float64, requires_grad=True)
        x10.div_(x11)
        """,
        "issue 10: in-place on an integer-indexed element (t[0] is a copy, not a 0-d view: the write is lost) (indexing/in-place)",
    ),
    Known(
        "result-value @ sub_",
        """
        x5 = T.tensor([1.0, 1.0, 1.0], dtype=T.float64)
        x6 = x5[2]
        x7 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x6.sub_(x7, alpha=2)
        """,
        "issue 10: in-place on an integer-indexed element (t[0] is a copy, not a 0-d view: the write is lost) (indexing/in-place)",
    ),
    Known(
        "no-raise IndexError @ err_index_select",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        i7 = T.tensor([-1], dtype=T.int64)
        x8 = T.index_select(x0, 0, i7)
        """,
        "issue 10: negative indices in gather/scatter/index_select wrap, PyTorch raises (indexing)",
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
        "stride @ nonzero",
        """
        x1 = T.tensor([[True, False], [False, True]], dtype=T.bool)
        x2 = T.nonzero(x1)
        """,
        "new (fuzz): nonzero's result is column-major in PyTorch, strides (1, n) (indexing/shape)",
    ),
    # -- pointwise NaN / reductions
    Known(
        "grad-nan @ backward via ceil",
        """
        x8 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x9 = x8.ceil()
        c12 = T.tensor([[1.0, -inf]], dtype=T.float64)
        ((x9 * c12).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (ceil) (pointwise NaN)",
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
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (clamp) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via floor",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x5 = T.floor(x1)
        c18 = T.tensor([[[1.0], [1.0], [inf]]], dtype=T.float64)
        ((x5 * c18).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (floor) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via sub",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([-2.0, -1.0], dtype=T.float64, requires_grad=True)
        x6 = x4.max()
        x9 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x10 = x6 ** x9
        x12 = x3 - x10
        c16 = T.tensor([1.0, nan], dtype=T.float64)
        ((x12 * c16).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (max() over all elements) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via maximum",
        """
        x5 = T.tensor([0.0], dtype=T.float64, requires_grad=True)
        x11 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x12 = T.maximum(x5, x11)
        c18 = T.tensor([inf], dtype=T.float64)
        ((x12 * c18).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (maximum) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via pow_t",
        """
        x1 = T.tensor([[inf, 1.0, -1.0]], dtype=T.float64, requires_grad=True)
        x3 = x1.min()
        x6 = T.tensor([0.05], dtype=T.float64, requires_grad=True)
        x9 = x3 ** x6
        (x9.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (min() over all elements) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via divs",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x1 = T.round(x0)
        x2 = x1 / 0.0
        (x2.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (round) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via round",
        """
        x8 = T.tensor([[[[-inf]]]], dtype=T.float64, requires_grad=True)
        x9 = x8.round()
        c11 = T.tensor([[[[1.0]], [[nan]]]], dtype=T.float64)
        ((x9 * c11).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (round) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via rsqrt",
        """
        x0 = T.tensor([[1.0], [0.0]], dtype=T.float64, requires_grad=True)
        x3 = T.round(x0)
        x5 = T.rsqrt(x3)
        grads = T.autograd.grad(x5.sum(), [x0], allow_unused=True)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (round) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via view",
        """
        x0 = T.tensor([[0.0], [-0.0]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([[False]], dtype=T.bool)
        x7 = T.where(x6, x4, x0)
        x8 = T.rsqrt(x7)
        x9 = x8.view(1, 2, 1)
        (x9.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (where) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via where",
        """
        x3 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x7 = T.tensor([[[False]]], dtype=T.bool)
        x8 = T.where(x7, x3, x5)
        c10 = T.tensor([[[1.0, 1.0], [1.0, 1.0], [1.0, inf]]], dtype=T.float64)
        ((x8 * c10).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (where) (pointwise NaN)",
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
        "result-value @ clamp_kw",
        """
        x1 = T.tensor([-2.0], dtype=T.float32)
        x10 = x1.clamp(min=1.0, max=-1.0)
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
        "raises AxisError @ max_idx",
        """
        x0 = T.tensor(1.0, dtype=T.float64)
        x1 = x0.max(0).indices
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
        "raises RuntimeError @ argmin",
        """
        x0 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x5 = x0.argmin(1)
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ max_dim",
        """
        x3 = T.zeros((0, 1), dtype=T.float64)
        x4 = x3.max(1, keepdim=True).values
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ max_idx",
        """
        x3 = T.zeros((1, 0, 1), dtype=T.float64, requires_grad=True)
        x6 = x3.min(0).indices
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
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
        "exc-type RuntimeError/IndexError @ amax",
        """
        x2 = T.zeros((0, 1, 1), dtype=T.float32, requires_grad=True)
        x7 = x2.amax(0)
        """,
        "issue 10: empty tensors -- reductions over an empty dim; PyTorch raises IndexError (reductions)",
    ),
    Known(
        "exc-type RuntimeError/IndexError @ amin",
        """
        x7 = T.zeros((0, 1), dtype=T.float64)
        x8 = x7.amin(-2)
        """,
        "issue 10: empty tensors -- reductions over an empty dim; PyTorch raises IndexError (reductions)",
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
        "exc-type RuntimeError/IndexError @ argmin",
        """
        o2 = T.zeros((0,), dtype=T.float64)
        x3 = o2.argmin(0)
        """,
        "issue 10: empty tensors -- reductions over an empty dim; PyTorch raises IndexError (reductions)",
    ),
    Known(
        "result-nan @ rsqrt",
        """
        x0 = T.tensor([[-1.0], [0.0]], dtype=T.float32)
        x1 = T.rsqrt(x0)
        """,
        "issue 10: float32 rsqrt(+-0) is nan, PyTorch +-inf (pointwise NaN)",
    ),
    Known(
        "result-nan @ lerp_t",
        """
        x0 = T.tensor([[[[1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [inf, 1.0, 1.0]]], [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, -inf]]]], dtype=T.float64, requires_grad=True)
        x4 = T.lerp(x0, x3, x3)
        """,
        "issue 10: lerp with infinite operands differs (lerp(inf, 0, .5)) (pointwise NaN)",
    ),
    Known(
        "result-nan @ relu",
        """
        x3 = T.tensor(nan, dtype=T.float64)
        x7 = T.relu(x3)
        """,
        "issue 10: relu(nan) is 0, PyTorch nan (pointwise NaN)",
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
        "result-shape @ softmax",
        """
        x3 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x5 = T.softmax(x3, 0)
        """,
        "issue 10: softmax/log_softmax/cumsum of a 0-d tensor have shape (1,) (reductions)",
    ),
    Known(
        "grad-nan @ backward via transpose",
        """
        x2 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x3 = T.std(x2, -2, correction=0, keepdim=True)
        x5 = x3.transpose(-2, 1)
        (x5.sum()).backward()
        """,
        "issue 10: std of a constant has a NaN gradient, PyTorch 0 (reductions)",
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
        "no-raise RuntimeError @ bce",
        """
        x4 = T.tensor([1.0, 1.0, 1.0, 1.0], dtype=T.float32, requires_grad=True)
        x6 = T.tensor([1.0, 1.0, 1.0, 1.0], dtype=T.float64)
        x7 = F.binary_cross_entropy(T.sigmoid(x4), x6.clamp(0, 1))
        """,
        "new (fuzz): binary_cross_entropy with target dtype != input dtype is accepted; PyTorch raises (pointwise/loss)",
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
        "exc-type TypeError/RuntimeError @ norm",
        """
        o4 = T.zeros((0,), dtype=T.float64)
        x5 = o4.norm(float("inf"), dim=-1)
        """,
        "new (fuzz): norm(inf, dim) over an empty dim raises an internal TypeError; PyTorch RuntimeError (reductions)",
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
        "grad-nan @ backward via rem_t",
        """
        x1 = T.tensor([[[1.0, 1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0, inf]]], dtype=T.float64, requires_grad=True)
        x3 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x4 = T.remainder(x1, x3)
        grads = T.autograd.grad(x4.sum(), [x3], allow_unused=True)
        """,
        "new (fuzz): remainder backward w.r.t. the divisor for x = inf: -inf, PyTorch nan (floor division of inf) (pointwise)",
    ),
    Known(
        "grad-value @ backward via rem_t",
        """
        x4 = T.tensor([[1.0, 1.0], [1.0, -inf]], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([[1.0]], dtype=T.float64)
        x6 = T.remainder(x5, x4)
        (x6.sum()).backward()
        """,
        "new (fuzz): remainder backward w.r.t. the divisor uses floor(x / y); PyTorch uses floor division (1 // -inf == -1) (pointwise)",
    ),
    Known(
        "result-nan @ std",
        """
        x4 = T.tensor([1.0, -1.0], dtype=T.float64, requires_grad=True)
        x5 = T.std(x4, -1, correction=2)
        """,
        "new (fuzz): var/std with correction > N - 1 is nan, PyTorch inf (reductions)",
    ),
    Known(
        "result-nan @ var",
        """
        x1 = T.tensor([[0.0], [1.0]], dtype=T.float64, requires_grad=True)
        x8 = T.var(x1, -2, correction=2)
        """,
        "new (fuzz): var/std with correction > N - 1 is nan, PyTorch inf (reductions)",
    ),
    # -- shape / linalg / creation
    Known(
        "stride @ add",
        """
        x1 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64).mT
        x6 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x7 = x1 + x6
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
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
        "stride @ div",
        """
        x1 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x4 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x5 = x1 / x4
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ eq",
        """
        x1 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT
        x3 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x4 = x1 == x3
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ flip",
        """
        x2 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64).mT
        x3 = T.flip(x2, (0, 2, 1, 3))
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
        "stride @ getitem_bool",
        """
        x2 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x7 = T.tensor([True, True, False, False], dtype=T.bool)
        x8 = x2[x7]
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ getitem_list",
        """
        x1 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x2 = x1[[1]]
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
        "stride @ lerp",
        """
        x0 = T.tensor([[[1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0]]], dtype=T.float64)
        x3 = x0.transpose(2, -3)
        x7 = T.lerp(x3, x0, 0.3)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ maximum",
        """
        x0 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x2 = x0.transpose(-3, 2)
        x9 = T.tensor([[[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]]], dtype=T.float64, requires_grad=True)
        x10 = T.maximum(x2, x9)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ minimum",
        """
        x0 = T.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x1 = x0[..., 1:]
        x2 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.minimum(x1, x2)
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
        "stride @ roll",
        """
        x3 = T.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT
        x4 = T.roll(x3, 0, 0)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ rpow",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x2 = 2.0 ** x0
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ sub_alpha",
        """
        x7 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x11 = T.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=T.float64).mT
        x12 = T.sub(x11, x7, alpha=0.5)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ to_int",
        """
        x2 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT
        x3 = x2.masked_fill(~T.isfinite(x2), 0).to(T.int64)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ where",
        """
        x0 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x4 = T.tensor([[False, False, False, True], [True, True, True, True], [False, True, False, True]], dtype=T.bool).mT
        x5 = T.where(x4, x0, x2)
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
        "grad_fn @ flatten",
        """
        x6 = T.tensor([[1.0]], dtype=T.float64).expand((2, 1)).requires_grad_()
        x13 = x6.flatten()
        """,
        "issue 10, Differences: grad_fn names -- flatten/reshape of a non-contiguous input needing no copy (ReshapeAliasBackward0) (shape)",
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
        "result-shape @ flip",
        """
        x1 = T.tensor(1.0, dtype=T.float64)
        x3 = x1.flip(())
        """,
        "issue 10: dim-taking ops on 0-d tensors (flip) (shape)",
    ),
    Known(
        "raises AxisError @ flip",
        """
        x4 = T.tensor(inf, dtype=T.float64)
        x7 = x4.flip(0)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (shape)",
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
        "raises TypeError @ flip",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x5 = x1.flip(0, 1)
        """,
        "issue 10: x.flip(0, 2) (varargs dims) fails (shape)",
    ),
    Known(
        "grad_fn @ broadcast_tensors",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x4 = x1.floor()
        x6 = T.broadcast_tensors(x4, x1)[0]
        """,
        "new (fuzz): broadcast_tensors returns an input unchanged (no ExpandBackward0) when its shape is already the broadcast shape (shape)",
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
        "raises RuntimeError @ flatten",
        """
        x11 = T.zeros((1, 0, 1, 1), dtype=T.float64)
        x13 = T.flatten(x11, 2, 3)
        """,
        "new (fuzz): flatten of an empty tensor raises (view with -1 over 0 elements) (shape)",
    ),
    Known(
        "raises ValueError @ sum_to_size",
        """
        x2 = T.zeros((2, 0, 2), dtype=T.float64, requires_grad=True)
        x3 = x2.sum_to_size(1, 0, 1)
        """,
        "new (fuzz): sum_to_size of an empty tensor raises numpy ValueError (shape)",
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
    # -- autograd / in-place / hooks
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
        "raises RuntimeError @ pow_",
        """
        x4 = T.zeros((0, 2), dtype=T.float64)
        x4.pow_(2)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ setitem",
        """
        x5 = T.zeros((2, 0), dtype=T.float64)
        x5[0] = 0.0
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ setitem_t",
        """
        x2 = T.zeros((0, 1), dtype=T.float64)
        x5 = T.zeros((3, 0, 1), dtype=T.float64)
        x5[2] = x2
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ sub_",
        """
        x0 = T.zeros((1, 0), dtype=T.float32, requires_grad=True)
        x1 = T.zeros((2, 0), dtype=T.float32)
        x1.sub_(x0, alpha=2)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ clamp_",
        """
        x1 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        x4 = x1.detach().requires_grad_()
        x4.clamp_(-0.5, 0.5)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ copy_",
        """
        x6 = T.tensor([[1.0]], dtype=T.float64).mT.requires_grad_()
        x11 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x6.copy_(x11)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ div_",
        """
        x2 = T.tensor([[[1.0, 1.0]]], dtype=T.float64)[..., ::2].requires_grad_()
        x4 = T.tensor([[1.0]], dtype=T.float64)
        x2.div_(x4)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
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
        "no-raise RuntimeError @ fill_",
        """
        x3 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x3.fill_(0.0)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ iadd",
        """
        x2 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x4 = T.tensor([[1.0]], dtype=T.float32)
        x2 += x4
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ imul",
        """
        x0 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x2 = T.tensor([[1.0]], dtype=T.float64)
        x0 *= x2
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ mul_",
        """
        x3 = T.tensor([[[1.0]]], dtype=T.float64).mT.requires_grad_()
        x5 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x3.mul_(x5)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ tril_",
        """
        x0 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x0.tril_()
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
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
        "grad_fn @ iadd",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x7 = T.maximum(x0, x6)
        x8 = x7.squeeze(-1)
        x7 += x6
        """,
        "new (fuzz): a view keeps its old grad_fn after its base is modified in place (PyTorch: AsStridedBackward0) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ masked_fill_",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float32, requires_grad=True)
        x2 = T.sign(x1)
        x3 = x2.squeeze(0)
        x5 = T.tensor([[[False]]], dtype=T.bool)
        x2.masked_fill_(x5, -1.5)
        """,
        "new (fuzz): a view keeps its old grad_fn after its base is modified in place (PyTorch: AsStridedBackward0) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ mul_",
        """
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x5 = x4[None, ...]
        x10 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x5.mul_(x10)
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
        "grad_fn @ tril_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = x1.clamp(min=None, max=0.5)
        x3 = T.tensor([[[1.0]]], dtype=T.float64)
        x4 = x2.expand_as(x3)
        x2.tril_()
        """,
        "new (fuzz): a view keeps its old grad_fn after its base is modified in place (PyTorch: AsStridedBackward0) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ zero_",
        """
        x1 = T.tensor([[[1.0]], [[1.0]]], dtype=T.float64, requires_grad=True)
        x2 = x1.view(2, -1)
        with T.no_grad():
            x2.zero_()
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
        "is_leaf @ tanh_",
        """
        x10 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x13 = x10.sign()
        x14 = T.split(x13, 1, 1)[0]
        x13.tanh_()
        """,
        "new (fuzz): a view whose base is then modified in place -- PyTorch raises on its grad_fn/is_leaf for split/unbind outputs (autograd/in-place)",
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
        "no-raise RuntimeError @ setitem_t",
        """
        x3 = T.tensor([[1.0], [1.0], [1.0]], dtype=T.float64, requires_grad=True)
        x4 = x3.unbind(1)[0]
        x6 = T.tensor(1.0, dtype=T.float64)
        x4[2] = x6
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "requires_grad @ chunk",
        """
        x2 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x5 = x2.chunk(3, 0)[0]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ einsum",
        """
        x2 = T.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x3 = T.einsum('ii->i', x2)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ getitem",
        """
        x0 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        with T.no_grad():
            x1 = x0[..., None]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ split",
        """
        x0 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        with T.no_grad():
            x4 = T.split(x0, 1, 0)[0]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ squeeze",
        """
        x0 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        with T.no_grad():
            x2 = T.squeeze(x0)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ unbind",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x2 = x1.unbind(1)[0]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "raises RuntimeError @ err_leaf_inplace",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64).expand((2, 1)).requires_grad_()
        with T.no_grad():
            x0.zero_()
        """,
        "new (fuzz): zero_/fill_ of an expanded tensor (internal overlap) raises; PyTorch allows fills (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ zero_",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64).expand((2, 1))
        x0.zero_()
        """,
        "new (fuzz): zero_/fill_ of an expanded tensor (internal overlap) raises; PyTorch allows fills (autograd/in-place)",
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
