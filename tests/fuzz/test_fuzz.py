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
        "grad_fn @ getitem",
        """
        x1 = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
        x7 = x1[:, 0:0:1]
        """,
        "issue 10, Differences: grad_fn names -- a slice covering a whole dimension is AliasBackward0 (indexing)",
    ),
    Known(
        "grad_fn @ setitem",
        """
        x8 = T.zeros((1, 1, 0), dtype=T.float64, requires_grad=True)
        x9 = x8.std()
        x9[...] = 3.0
        """,
        "issue 10, Differences: grad_fn names -- x[...] = v on a 0-d non-leaf is CopyBackwards in PyTorch (indexing)",
    ),
    Known(
        "grad_fn @ setitem_t",
        """
        x0 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x1 = x0.amax(-1)
        x1[...] = 1
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
        "result-value @ pow_",
        """
        x3 = T.tensor([2.0, -1.0, 0.0, 2.0, -1.0, -1.0, -2.0, -0.0, -0.0, 1.0, 0.0, -2.0, 2.0, 1.0, 0.0, -2.0, -1.0, -1.0, 1.0, 1.0, 0.0, -2.0, -2.0, -1.0, -1.0, -2.0, -1.0, 2.0, -1.0, 0.0, 2.0, -1.0, -1.0, -2.0, -0.0, -0.0, 1.0, 0.0, -2.0, 2.0, 1.0, 0.0, -2.0, -1.0, -1.0, 1.0, 1.0, 0.0, -2.0, -2.0, -1.0], dtype=T.float64)
        x4 = x3[50]
        x4.pow_(2)
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
        x4 = T.tensor([[1.0]], dtype=T.float32)
        i7 = T.tensor([-1], dtype=T.int64)
        x8 = T.index_select(x4, 0, i7)
        """,
        "issue 10: negative indices in gather/scatter/index_select wrap, PyTorch raises (indexing)",
    ),
    Known(
        "no-raise RuntimeError @ err_gather",
        """
        x1 = T.tensor([1.0], dtype=T.float64)
        i4 = T.tensor([-1], dtype=T.int64)
        x5 = T.gather(x1, 0, i4)
        """,
        "issue 10: negative indices in gather/scatter/index_select wrap, PyTorch raises (indexing)",
    ),
    Known(
        "no-raise RuntimeError @ backward via index_inplace",
        """
        x0 = T.tensor([[[1.0, 1.0, 1.0, 1.0]]], dtype=T.float64)
        i3 = T.tensor([[[0, 0, 0, 0]]], dtype=T.int64)
        x4 = T.tensor([[[1.0, 1.0, 1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x5 = T.scatter(x0, 0, i3, x4)
        i3.zero_()
        (x5.sum()).backward()
        """,
        "issue 10: saved index tensors are neither copied nor version-checked (indexing)",
    ),
    Known(
        "no-raise RuntimeError @ backward via lerp_t",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        i2 = T.tensor([0], dtype=T.int64)
        x3 = T.index_select(x1, 0, i2)
        i2.zero_()
        x5 = T.tensor(1.0, dtype=T.float64)
        x6 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x7 = T.lerp(x5, x3, x6)
        (x7.sum()).backward()
        """,
        "issue 10: saved index tensors are neither copied nor version-checked (indexing)",
    ),
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
        "stride @ nonzero",
        """
        x2 = T.tensor([[True, True]], dtype=T.bool)
        x3 = T.nonzero(x2)
        """,
        "new (fuzz): nonzero's result is column-major in PyTorch, strides (1, n) (indexing/shape)",
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
        "grad-nan @ backward via add",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x1 = T.pow(x0, 3)
        x2 = T.tensor([[1.0]], dtype=T.float64)
        x3 = T.tensor([[False]], dtype=T.bool)
        x4 = T.where(x3, x1, x2)
        x7 = x4 + x2
        c8 = T.tensor([[1.0, 1.0], [1.0, nan]], dtype=T.float64)
        grads = T.autograd.grad((x7 * c8).sum(), [x0], allow_unused=True)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via add_alpha",
        """
        x1 = T.tensor([[[[1.0]]]], dtype=T.float32, requires_grad=True)
        x3 = x1.clamp_max(0.3)
        x6 = T.tensor([[[[1.0]]]], dtype=T.float32, requires_grad=True)
        x8 = T.add(x6, x3, alpha=2)
        c11 = T.tensor([[[[inf]]]], dtype=T.float32)
        ((x8 * c11).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via amin",
        """
        x2 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7 = T.tensor(inf, dtype=T.float64, requires_grad=True)
        x8 = T.maximum(x2, x7)
        x9 = x8.amin(0)
        c16 = T.tensor(nan, dtype=T.float64)
        ((x9 * c16).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via ceil",
        """
        x6 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7 = x6.ceil()
        c11 = T.tensor([1.0, nan], dtype=T.float64)
        ((x7 * c11).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via clamp",
        """
        x1 = T.tensor([[[-1.0]]], dtype=T.float64, requires_grad=True)
        x2 = T.clamp(x1, 0.0, 1.0)
        c4 = T.tensor([[[1.0], [nan]]], dtype=T.float64)
        ((x2 * c4).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via clamp_max",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x6 = x3.clamp_max(0.3)
        c11 = T.tensor([1.0, -inf], dtype=T.float64)
        ((x6 * c11).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via clamp_min",
        """
        x0 = T.tensor([-1.0], dtype=T.float64, requires_grad=True)
        x1 = T.clamp_min(x0, 0.1)
        c2 = T.tensor([nan], dtype=T.float64)
        ((x1 * c2).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via div",
        """
        x0 = T.tensor(0.0, dtype=T.float32, requires_grad=True)
        x6 = x0.round()
        x7 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x9 = x7 / x6
        (x9.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via divs",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x1 = T.round(x0)
        x2 = x1 / 0.0
        grads = T.autograd.grad(x2.sum(), [x0], allow_unused=True)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via erf",
        """
        x4 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x10 = T.clamp(x4, -0.5, 0.7)
        x11 = T.erf(x10)
        c14 = T.tensor([1.0, nan], dtype=T.float32)
        ((x11 * c14).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via exp2",
        """
        x1 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x3 = T.tensor(True, dtype=T.bool)
        x4 = x1.masked_fill(x3, float("inf"))
        x5 = x4.exp2()
        (x5.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via flatten",
        """
        x1 = T.tensor([[-1.71]], dtype=T.float64, requires_grad=True)
        x2 = x1.ceil()
        x3 = T.log1p(x2)
        x6 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x7 = T.tensor([False], dtype=T.bool)
        x8 = T.where(x7, x3, x6)
        x10 = x8.flatten()
        (x10.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via floor",
        """
        x3 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x8 = x3.floor()
        c10 = T.tensor([[inf]], dtype=T.float64)
        ((x8 * c10).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via log1p",
        """
        x1 = T.tensor([1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x2 = x1[2:4:2]
        x3 = T.floor(x2)
        x8 = x3.log1p()
        c12 = T.tensor([nan], dtype=T.float64)
        grads = T.autograd.grad((x8 * c12).sum(), [x1], allow_unused=True)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via log2",
        """
        x6 = T.tensor([[[-1.0, -2.0, 1.0]], [[1.0, -2.0, 0.0]]], dtype=T.float64, requires_grad=True)
        x7 = x6.round()
        x12 = T.log2(x7)
        (x12.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via masked_fill",
        """
        x3 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x12 = T.tensor([True], dtype=T.bool)
        x13 = x3.masked_fill(x12, -1.5)
        c17 = T.tensor([inf], dtype=T.float32)
        ((x13 * c17).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via max",
        """
        x0 = T.tensor([-1.0, -2.0], dtype=T.float64, requires_grad=True)
        x11 = x0.max()
        c15 = T.tensor(-inf, dtype=T.float64)
        ((x11 * c15).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via maximum",
        """
        x3 = T.tensor([[[1.36]]], dtype=T.float64)
        x12 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x16 = T.maximum(x12, x3)
        c21 = T.tensor([[[1.0], [1.0], [inf]]], dtype=T.float64)
        ((x16 * c21).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via minimum",
        """
        x1 = T.tensor([[-1.0]], dtype=T.float64, requires_grad=True)
        x9 = T.tensor([[1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x10 = T.minimum(x1, x9)
        c11 = T.tensor([[1.0, -inf, 1.0]], dtype=T.float64)
        x10.backward(c11)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via nn_sigmoid",
        """
        x0 = T.tensor([nan], dtype=T.float64, requires_grad=True)
        x2 = x0.round()
        x4 = F.sigmoid(x2)
        (x4.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via pow",
        """
        x1 = T.tensor([[1.0, 0.0]], dtype=T.float64, requires_grad=True)
        x3 = x1.min()
        x4 = T.broadcast_to(x3, ())
        x5 = T.pow(x4, -1)
        (x5.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via pow_t",
        """
        x0 = T.tensor([[[0.0]]], dtype=T.float64, requires_grad=True)
        x1 = x0.clamp_max(-1.0)
        x2 = x0 ** x1
        (x2.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via rdivs",
        """
        x0 = T.tensor([nan], dtype=T.float64)
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x3 = x1.floor()
        x4 = T.tensor([True], dtype=T.bool)
        x3.zero_()
        x7 = T.where(x4, x3, x0)
        x8 = 2 / x7
        (x8.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via reshape",
        """
        x3 = T.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x7 = T.ceil(x3)
        x8 = x7.reshape(-1, 2, 2)
        c9 = T.tensor([[[1.0, 1.0], [1.0, inf]]], dtype=T.float64)
        ((x8 * c9).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via round",
        """
        x8 = T.tensor([[[[-inf]]]], dtype=T.float64, requires_grad=True)
        x9 = x8.round()
        c11 = T.tensor([[[[1.0]], [[nan]]]], dtype=T.float64)
        ((x9 * c11).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via rsqrt",
        """
        x1 = T.tensor([[-1.0, 0.0, -2.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[[-1.0], [-1.0], [-1.0]], [[-1.0], [-1.0], [-1.0]], [[-1.0], [-1.0], [-1.0]], [[-1.0], [-1.0], [-1.0]]], dtype=T.float64)
        x3 = T.maximum(x2, x1)
        i6 = T.zeros((0, 1, 3), dtype=T.int64)
        x7 = T.zeros((0, 1, 3), dtype=T.float64, requires_grad=True)
        x8 = T.scatter_add(x3, 1, i6, x7)
        i9 = T.tensor([[[0], [2], [0]], [[0], [0], [0]], [[2], [2], [0]], [[2], [0], [0]]], dtype=T.int64)
        x10 = T.tensor([[[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]]], dtype=T.float64, requires_grad=True)
        x11 = T.scatter(x8, 1, i9, x10)
        x15 = T.rsqrt(x11)
        (x15.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via sign",
        """
        x1 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x3 = x1.sign()
        c5 = T.tensor([[-inf]], dtype=T.float32)
        ((x3 * c5).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via sqrt",
        """
        x6 = T.tensor([[1.0, -2.0]], dtype=T.float64, requires_grad=True)
        x10 = x6.min()
        x12 = T.sqrt(x10)
        (x12.sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via sub_alpha",
        """
        x1 = T.tensor([-2.0], dtype=T.float32, requires_grad=True)
        x2 = x1.clamp(min=-1.0, max=None)
        x3 = T.sub(x2, x1, alpha=0.5)
        c6 = T.tensor([inf], dtype=T.float32)
        ((x3 * c6).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via trunc",
        """
        x1 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float32, requires_grad=True)
        x6 = T.trunc(x1)
        c9 = T.tensor([[1.0, 1.0, 1.0], [-inf, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float32)
        x6.backward(c9)
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via where",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([[True]], dtype=T.bool)
        x7 = T.where(x6, x5, x0)
        c8 = T.tensor([[1.0], [1.0], [inf]], dtype=T.float64)
        ((x7 * c8).sum()).backward()
        """,
        "issue 10: backward formulas multiply by a 0/1 mask instead of selecting, so inf/NaN from upstream leak (relu/clamp/where/masked_fill/floor/ceil/round/trunc/sign/maximum/minimum/max/min/zero_) (pointwise NaN)",
    ),
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
        "result-value @ clamp",
        """
        x0 = T.tensor([0.0], dtype=T.float64)
        x1 = T.clamp(x0, 1.0, -1.0)
        """,
        "issue 10: clamp(x, 1, -1) differs (pointwise NaN)",
    ),
    Known(
        "result-value @ clamp_kw",
        """
        x2 = T.tensor(0.0, dtype=T.float64)
        x12 = x2.clamp(min=1.0, max=-1.0)
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
        "raises AxisError @ any",
        """
        x6 = T.tensor(True, dtype=T.bool)
        x7 = x6.any(0)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ max_dim",
        """
        x4 = T.tensor(1.0, dtype=T.float64)
        x9 = x4.max(-1)[0]
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ max_idx",
        """
        x2 = T.tensor(1.0, dtype=T.float64)
        x7 = x2.max(0).indices
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises AxisError @ min_dim",
        """
        o8 = T.tensor(1.0, dtype=T.float32)
        x11 = o8.min(0)[0]
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (reductions)",
    ),
    Known(
        "raises RuntimeError @ argmax",
        """
        x0 = T.zeros((1, 0), dtype=T.float64)
        x1 = x0.argmax(-2)
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ argmin",
        """
        x1 = T.zeros((1, 0, 1), dtype=T.float64)
        x5 = x1.argmin(0)
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ max_dim",
        """
        x1 = T.zeros((1, 0), dtype=T.float32)
        x2 = x1.max(0)[0]
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ max_idx",
        """
        x2 = T.zeros((0, 1), dtype=T.float64)
        x3 = x2.max(1, keepdim=True).indices
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "raises RuntimeError @ min_dim",
        """
        x4 = T.zeros((0, 1, 1), dtype=T.float64)
        x12 = x4.min(1)[0]
        """,
        "issue 10: empty tensors -- ones(0,2).max(1) raises (reductions)",
    ),
    Known(
        "exc-type RuntimeError/IndexError @ amax",
        """
        x3 = T.zeros((0,), dtype=T.float64)
        x5 = x3.amax(-1)
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
        x5 = T.zeros((0,), dtype=T.float64, requires_grad=True)
        x6 = x5.argmax(0)
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
        "grad-nan @ backward via min",
        """
        x5 = T.tensor([nan], dtype=T.float64, requires_grad=True)
        x6 = x5.min()
        (x6.sum()).backward()
        """,
        "issue 10: max()/min() over data with NaN gives NaN gradients (reductions)",
    ),
    Known(
        "grad-value @ backward via maximum",
        """
        x0 = T.tensor([nan], dtype=T.float32, requires_grad=True)
        x8 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x9 = T.maximum(x8, x0)
        (x9.sum()).backward()
        """,
        "issue 10: maximum(nan, 1) gives 0 to both (pointwise NaN)",
    ),
    Known(
        "grad-value @ backward via minimum",
        """
        x1 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        x2 = T.tensor([1.0, nan], dtype=T.float64)
        x3 = T.maximum(x2, x1)
        x4 = T.minimum(x2, x3)
        grads = T.autograd.grad(x4.sum(), [x1], allow_unused=True)
        """,
        "issue 10: maximum(nan, 1) gives 0 to both; same for minimum (pointwise NaN)",
    ),
    Known(
        "result-nan @ nn_relu",
        """
        x1 = T.tensor([[1.0], [nan]], dtype=T.float64)
        x2 = F.relu(x1)
        """,
        "issue 10: relu(nan) is 0, PyTorch nan (pointwise NaN)",
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
        x2 = T.tensor([nan], dtype=T.float64, requires_grad=True)
        x3 = T.sign(x2)
        """,
        "issue 10: sign(nan) differs (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via neg",
        """
        x1 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, nan]], dtype=T.float32, requires_grad=True)
        x2 = T.tensor([[1.0]], dtype=T.float32)
        x3 = F.l1_loss(x1, x2, reduction="mean")
        x5 = x3.neg()
        (x5.sum()).backward()
        """,
        "issue 10: sign(nan) differs -- l1_loss backward at nan (pointwise NaN)",
    ),
    Known(
        "result-shape @ cumsum",
        """
        x4 = T.tensor(1.0, dtype=T.float64)
        x5 = x4.cumsum(0)
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
        x2 = T.tensor(1.0, dtype=T.float64)
        x5 = T.softmax(x2, 0)
        """,
        "issue 10: softmax/log_softmax/cumsum of a 0-d tensor have shape (1,) (reductions)",
    ),
    Known(
        "grad-nan @ backward via std",
        """
        x0 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x2 = x0.std(unbiased=False)
        (x2.sum()).backward()
        """,
        "issue 10: std of a constant has a NaN gradient, PyTorch 0 (reductions)",
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
        "issue 10: x.max(0).values / x.min(0).values of a 1-D tensor have shape (1,) (reductions)",
    ),
    Known(
        "result-shape @ min_dim",
        """
        x2 = T.tensor([1.0], dtype=T.float64)
        x3 = x2.min(0)[0]
        """,
        "issue 10: x.max(0).values / x.min(0).values of a 1-D tensor have shape (1,) (reductions)",
    ),
    Known(
        "grad-nan @ backward via abs",
        """
        x2 = T.tensor([[[nan]]], dtype=T.float64, requires_grad=True)
        x4 = T.abs(x2)
        (x4.sum()).backward(inputs=[x2])
        """,
        "new (fuzz): abs backward at nan is nan, PyTorch 0 (sign(nan) = 0) (pointwise NaN)",
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
        "requires_grad @ floor_divide",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x5 = T.tensor(0, dtype=T.int64)
        x7 = x5 // x3
        """,
        "new (fuzz): floor_divide of a requires-grad tensor -- PyTorch's result requires grad (its backward raises 'not implemented'), nbgrad's does not (pointwise)",
    ),
    Known(
        "grad-nan @ backward via l1_loss",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([[[1.0], [1.0], [1.0]], [[1.0], [1.0], [inf]], [[1.0], [1.0], [nan]]], dtype=T.float64)
        x6 = F.l1_loss(x1, x5, reduction="none")
        (x6.sum()).backward()
        """,
        "new (fuzz): l1_loss backward where input - target is nan gives nan, PyTorch 0 (sign(nan) = 0) (pointwise NaN)",
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
        "raises ZeroDivisionError @ backward via squeeze",
        """
        x5 = T.zeros((0,), dtype=T.float64, requires_grad=True)
        x6 = T.zeros((0,), dtype=T.float64)
        x7 = F.binary_cross_entropy(T.sigmoid(x5), x6.clamp(0, 1))
        x8 = x7.squeeze(-1)
        grads = T.autograd.grad(x8.sum(), [x5], allow_unused=True)
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
        "result-nan @ powop",
        """
        x3 = T.tensor([[1.0], [1.0], [-inf]], dtype=T.float64, requires_grad=True)
        x4 = x3 ** 0.5
        """,
        "new (fuzz): pow(-inf, 0.5) is nan, PyTorch inf (C pow semantics) (pointwise NaN)",
    ),
    Known(
        "grad-nan @ backward via rem_t",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([[inf]], dtype=T.float64)
        x5 = T.remainder(x4, x1)
        grads = T.autograd.grad(x5.sum(), [x1], allow_unused=True)
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
        "grad-nan @ backward via var",
        """
        x9 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x10 = T.var(x9, 0, correction=2)
        (x10.sum()).backward()
        """,
        "new (fuzz): var/std with correction > N - 1 is nan, PyTorch inf (reductions)",
    ),
    Known(
        "result-nan @ std",
        """
        x2 = T.tensor([-0.0, 1.0], dtype=T.float64)
        x7 = T.std(x2, -1, correction=2)
        """,
        "new (fuzz): var/std with correction > N - 1 is nan, PyTorch inf (reductions)",
    ),
    Known(
        "result-nan @ var",
        """
        x0 = T.tensor([[-1.0, 2.0]], dtype=T.float64)
        x1 = T.var(x0, 1, correction=2)
        """,
        "new (fuzz): var/std with correction > N - 1 is nan, PyTorch inf (reductions)",
    ),
    # -- shape / linalg / creation
    Known(
        "grad-stride @ backward via permute",
        """
        x1 = T.tensor([[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x3 = x1 * x2
        x3.retain_grad()
        x4 = x3.permute(3, 1, 0, 2)
        c8 = T.tensor([[[[1.0]]]], dtype=T.float64)
        ((x4 * c8).sum()).backward()
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ add",
        """
        x6 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float32).mT
        x7 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float32)
        x8 = x6 + x7
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ add_alpha",
        """
        x0 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64)
        x5 = T.add(x0, x3, alpha=2)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ cat",
        """
        x3 = T.tensor([[[1.0, 1.0], [1.0, inf]]], dtype=T.float64).mT.requires_grad_()
        x4 = T.concat([x3], -2)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ conv1d",
        """
        x5 = T.tensor([[[1.0]]], dtype=T.float64)
        x6 = T.tensor([[[1.0], [1.0]], [[1.0], [1.0]]], dtype=T.float64).mT.requires_grad_()
        x7 = F.conv1d(x5, x6, padding=1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ div",
        """
        x0 = T.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0, inf]]], dtype=T.float64).mT.requires_grad_()
        x9 = T.tensor([[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]], dtype=T.float64)
        x10 = x0 / x9
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
        x1 = T.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT
        x10 = x1.flip(1)
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
        "stride @ getitem_adv",
        """
        x0 = T.tensor([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        i2 = T.tensor([1], dtype=T.int64)
        x3 = x0[i2]
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
        "stride @ gt",
        """
        x1 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float32).mT
        x2 = T.tensor([[1.0, 1.0, 1.0, nan], [1.0, 1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x3 = x1 > x2
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ le",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64)
        x2 = x0.t()
        x3 = x2 <= x0
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
        "stride @ lt",
        """
        x0 = T.tensor([[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]], dtype=T.float32).mT.requires_grad_()
        x1 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]], dtype=T.float32, requires_grad=True)
        x2 = T.lt(x0, x1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ masked_fill",
        """
        x2 = T.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[False]], dtype=T.bool)
        x4 = x2.masked_fill(x3, -1.5)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ maximum",
        """
        x1 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64)
        x2 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x3 = T.maximum(x2, x1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ minimum",
        """
        x2 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x7 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float32).mT.requires_grad_()
        x8 = T.minimum(x7, x2)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ mse_loss",
        """
        x6 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x10 = T.tensor([[[[1.0]]]], dtype=T.float64)
        x11 = F.mse_loss(x6, x10, reduction="none")
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ mul",
        """
        x2 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]], dtype=T.float64).mT
        x5 = T.tensor([[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64, requires_grad=True)
        x6 = x2 * x5
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ ne",
        """
        x1 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x2 = T.tensor([[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = x1 != x2
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ pow_t",
        """
        x1 = T.tensor([[[[1.0]], [[1.0]], [[1.0]]], [[[1.0]], [[1.0]], [[1.0]]], [[[1.0]], [[1.0]], [[1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = x1.transpose(-4, -3)
        x4 = T.log(x3)
        x9 = x4 ** x1
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ rem_t",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64)
        x2 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x8 = T.remainder(x2, x0)
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
        x4 = T.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=T.float64).mT
        x5 = 2.0 ** x4
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ stack",
        """
        x1 = T.tensor([[[[1.0], [1.0]]], [[[1.0], [1.0]]]], dtype=T.float64, requires_grad=True)
        x6 = x1.permute(2, 0, 3, 1)
        x10 = T.stack([x6], 4)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ sub",
        """
        x2 = T.tensor([[[1.0, 1.0], [1.0, 1.0]]], dtype=T.float32, requires_grad=True)
        x5 = x2.mT
        x10 = x5 - x2
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ sub_alpha",
        """
        x1 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x5 = T.sub(x1, x3, alpha=0.5)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ to",
        """
        x2 = T.tensor([[[[1.0]]], [[[1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = x2.expand(3, 2, -1, -1, 2)
        x4 = x3.float()
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ to_int",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT
        x2 = x0.masked_fill(~T.isfinite(x0), 0).long()
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ triu",
        """
        x4 = T.tensor([[[1.0], [1.0]], [[1.0], [1.0]]], dtype=T.float64, requires_grad=True)
        x5 = T.movedim(x4, 0, 2)
        x6 = T.triu(x5, -1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "stride @ where",
        """
        x0 = T.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        x1 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float64)
        x2 = T.tensor([True], dtype=T.bool)
        x3 = T.where(x2, x0, x1)
        """,
        "issue 10, Differences: elementwise results keep the input's memory layout (suggest_memory_format rules) (shape/layout)",
    ),
    Known(
        "grad_fn @ chunk",
        """
        x1 = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
        x2 = x1.chunk(3, 1)[0]
        """,
        "issue 10, Differences: grad_fn names -- chunk of an empty dim is SplitWithSizesBackward0 (shape)",
    ),
    Known(
        "grad_fn @ einsum",
        """
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.einsum('ii->', x2)
        """,
        "issue 10, Differences: grad_fn names -- einsum('ii->') (shape/linalg)",
    ),
    Known(
        "grad_fn @ flatten",
        """
        x7 = T.tensor([[1.0]], dtype=T.float64).expand((2, 1)).requires_grad_()
        x8 = x7.flatten()
        """,
        "issue 10, Differences: grad_fn names -- flatten/reshape of a non-contiguous input needing no copy (ReshapeAliasBackward0) (shape)",
    ),
    Known(
        "grad_fn @ linear",
        """
        x2 = T.tensor([[[1.0]]], dtype=T.float64).expand((1, 1, 4))
        x3 = T.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([1.0], dtype=T.float64)
        x5 = F.linear(x2, x3, x4)
        """,
        "issue 10, Differences: grad_fn names -- linear of a 3-D non-contiguous input (linalg)",
    ),
    Known(
        "grad_fn @ matmul",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[[1.0]]], dtype=T.float64)
        x3 = x1 @ x2
        """,
        "issue 10, Differences: grad_fn names -- matmul 2-D @ 3-D (linalg)",
    ),
    Known(
        "grad_fn @ reshape",
        """
        x0 = T.tensor([1.0], dtype=T.float32).expand((2,)).requires_grad_()
        x2 = x0.reshape((-1,))
        """,
        "issue 10, Differences: grad_fn names -- reshape of a non-contiguous input needing no copy (ReshapeAliasBackward0) (shape)",
    ),
    Known(
        "grad-none @ backward via node_post_acc",
        """
        x0 = T.zeros((0,), dtype=T.float64, requires_grad=True)
        x3 = T.split(x0, 1, 0)[0]
        x0.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(2) and None)
        (x3.sum()).backward()
        """,
        "issue 10: backward of split/chunk over empty dims (the leaf gets no .grad) (shape)",
    ),
    Known(
        "raises RuntimeError @ backward via pow_t",
        """
        x4 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x5 = T.split(x4, 1, 0)[0]
        x9 = x5 ** x4
        (x9.sum()).backward()
        """,
        "issue 10: backward of split/chunk over empty dims fails (shape)",
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
        x3 = T.tensor(1.0, dtype=T.float64)
        x4 = x3.flip(0)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (shape)",
    ),
    Known(
        "raises AxisError @ transpose",
        """
        x3 = T.tensor(1.0, dtype=T.float64)
        x6 = x3.transpose(0, 0)
        """,
        "issue 10: dim-taking ops on 0-d tensors raise numpy AxisError (shape)",
    ),
    Known(
        "raises ValueError @ backward via expand_as",
        """
        x11 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x12 = T.zeros((1, 0, 2), dtype=T.float64)
        x13 = x11.expand_as(x12)
        (x13.sum()).backward()
        """,
        "issue 10: empty tensors -- broadcast/expand backward with an empty dim fails (shape)",
    ),
    Known(
        "raises TypeError @ flip",
        """
        x3 = T.tensor([[1.0]], dtype=T.float32)
        x6 = x3.flip(0, 1)
        """,
        "issue 10: x.flip(0, 2) (varargs dims) fails (shape)",
    ),
    Known(
        "result-value @ copy_",
        """
        x4 = T.tensor([1.0], dtype=T.float64)
        x6 = T.flip(x4, (0,))
        x7 = T.tensor([-0.0], dtype=T.float64)
        x6.copy_(x7)
        """,
        "issue 10: x.flip(d) over size-1 dims returns an alias, so an in-place op on it writes into x (shape)",
    ),
    Known(
        "result-value @ zero_",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x6 = x3.flip(0)
        x6.zero_()
        """,
        "issue 10: x.flip(d) over size-1 dims returns an alias, so an in-place op on it writes into x (shape)",
    ),
    Known(
        "exc-type ValueError/RuntimeError @ broadcast_tensors",
        """
        x7 = T.tensor([[1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x8 = T.zeros((0,), dtype=T.float32, requires_grad=True)
        x9 = T.broadcast_tensors(x7, x8)[1]
        """,
        "new (fuzz): broadcast_tensors of unbroadcastable shapes raises numpy ValueError; PyTorch RuntimeError (shape)",
    ),
    Known(
        "grad_fn @ broadcast_tensors",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x3 = x1.log2()
        x4 = T.broadcast_tensors(x3, x1)[0]
        """,
        "new (fuzz): broadcast_tensors returns an input unchanged (no ExpandBackward0) when its shape is already the broadcast shape (shape)",
    ),
    Known(
        "is_leaf @ broadcast_tensors",
        """
        x0 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x1 = T.tensor(1.0, dtype=T.float64)
        x2 = T.broadcast_tensors(x0, x1)[0]
        """,
        "new (fuzz): broadcast_tensors returns an input unchanged (no ExpandBackward0) when its shape is already the broadcast shape (shape)",
    ),
    Known(
        "stride @ einsum",
        """
        x8 = T.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], dtype=T.float32)
        x9 = T.einsum('ii->i', x8)
        """,
        "new (fuzz): einsum('ii->i') copies the diagonal (PyTorch: a strided view) (linalg)",
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
    Known(
        "raises ValueError @ sum_multi",
        """
        x0 = T.zeros((1, 0, 1), dtype=T.float32, requires_grad=True)
        x1 = x0.sum((2, 0))
        """,
        "new (fuzz): shape op over an empty tensor raises (numpy reshape of 0 elements with -1 / newaxis) (shape)",
    ),
    Known(
        "raises ValueError @ sum_to_size",
        """
        x2 = T.zeros((2, 0, 2), dtype=T.float64, requires_grad=True)
        x3 = x2.sum_to_size(1, 0, 1)
        """,
        "new (fuzz): shape op over an empty tensor raises (numpy reshape of 0 elements with -1 / newaxis) (shape)",
    ),
    Known(
        "grad_fn @ sum_to_size",
        """
        x8 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x9 = x8.sum_to_size(())
        """,
        "new (fuzz): sum_to_size to the same shape returns an alias (PyTorch: a new tensor) (shape)",
    ),
    Known(
        "is_leaf @ sum_to_size",
        """
        x0 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x1 = x0.sum_to_size(())
        """,
        "new (fuzz): sum_to_size to the same shape returns an alias (PyTorch: a new tensor) (shape)",
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
        i12 = T.tensor([[1, 3], [1, 0]], dtype=T.int64)
        x18 = i12.unbind(1)[0]
        """,
        "new (fuzz): unbind along a non-leading dim copies (strides differ; PyTorch returns views) (shape)",
    ),
    # -- autograd / in-place / hooks
    Known(
        "grad_fn @ fill_",
        """
        x0 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x1 = x0.neg()
        x1.fill_(2)
        """,
        "issue 10, Differences: grad_fn names -- fill_ with a Python scalar is FillBackward2 (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ add_",
        """
        x3 = T.zeros((2, 0, 1), dtype=T.float64)
        x6 = T.zeros((1, 0, 1), dtype=T.float64)
        x3.add_(x6)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
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
        "raises RuntimeError @ div_",
        """
        x1 = T.zeros((2, 0), dtype=T.float64)
        x2 = T.zeros((1, 0), dtype=T.float64)
        x1.div_(x2)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ fill_",
        """
        x5 = T.zeros((2, 0), dtype=T.float64)
        x5.fill_(0.5)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ iadd",
        """
        x2 = T.zeros((0, 2), dtype=T.float64)
        x3 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x2 += x3
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ imul",
        """
        x1 = T.zeros((2, 0, 1), dtype=T.float64)
        x9 = T.tensor([[[1.0]]], dtype=T.float32)
        x1 *= x9
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ masked_fill_",
        """
        x3 = T.zeros((0, 2), dtype=T.float32)
        x5 = T.zeros((0, 1), dtype=T.bool)
        x3.masked_fill_(x5, 3.0)
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ mul_",
        """
        x8 = T.zeros((0, 2), dtype=T.float64)
        x9 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x8.mul_(x9)
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
        "raises RuntimeError @ sigmoid_",
        """
        x4 = T.zeros((2, 0), dtype=T.float64)
        x4.sigmoid_()
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ tril_",
        """
        x8 = T.zeros((0, 2), dtype=T.float64)
        x8.tril_()
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ zero_",
        """
        x5 = T.zeros((0, 2), dtype=T.float64)
        x5.zero_()
        """,
        "issue 10: in-place on empty (non-contiguous) tensors raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ abs_",
        """
        x1 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x1.abs_()
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ add_",
        """
        x2 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x3 = x2[:, 0:0:3]
        x4 = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
        x3.add_(x4)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ clamp_",
        """
        x3 = T.tensor([[1.0]], dtype=T.float64).mT.requires_grad_()
        x3.clamp_(-0.5, 0.5)
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
        x3 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        x3.add_(1)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ fill_",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64).mT.requires_grad_()
        x0.fill_(1)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ iadd",
        """
        x0 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        x9 = T.tensor([1.0], dtype=T.float64)
        x0 += x9
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
        "no-raise RuntimeError @ masked_fill_",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float32).mT.requires_grad_()
        x4 = x0[3:5:2]
        x5 = T.zeros((0, 1, 1), dtype=T.bool)
        x4.masked_fill_(x5, 0.0)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ mul_",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x0.mul_(x3)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ pow_",
        """
        x6 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        x6.pow_(2)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ scatter_",
        """
        x0 = T.tensor([[1.0, 1.0]], dtype=T.float64).mT.requires_grad_()
        i1 = T.tensor([[1]], dtype=T.int64)
        x2 = T.tensor([[1.0]], dtype=T.float64)
        x0.scatter_(0, i1, x2)
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ setitem_t",
        """
        x0 = T.tensor([[[1.0, 1.0]]], dtype=T.float64).mT.requires_grad_()
        x2 = T.narrow(x0, 1, 2, 0)
        x3 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        x2[0] = x3
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ sigmoid_",
        """
        x0 = T.tensor([[1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x1 = x0.squeeze(0)
        x1.sigmoid_()
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ sqrt_",
        """
        x1 = T.tensor([[[1.0, 1.0]], [[1.0, 1.0]], [[1.0, 1.0]], [[1.0, 1.0]]], dtype=T.float64)[..., ::2].requires_grad_()
        x3 = x1.unflatten(0, (2, 2))
        x6 = T.squeeze(x3)
        x6.sqrt_()
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ sub_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64).mT.requires_grad_()
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x1.sub_(x3, alpha=2)
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
        "no-raise RuntimeError @ zero_",
        """
        x1 = T.tensor([[[[1.0]]]], dtype=T.float64).mT.requires_grad_()
        x1.zero_()
        """,
        "issue 10: in-place op on a requires-grad leaf that is a view of a no-grad tensor is accepted (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ backward via add_",
        """
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7 = F.leaky_relu(x4, 0.1)
        x13 = 0.5 * x7
        x14 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7.add_(x14)
        grads = T.autograd.grad(x13.sum(), [x4], allow_unused=True)
        """,
        "issue 10: mul/div save operands their backward does not need (x * 2 saves x), giving false 'modified by an inplace operation' errors (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ backward via masked_fill_",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x4 = T.var(x1, -1)
        x5 = x4 * 1
        x6 = T.tensor(True, dtype=T.bool)
        x4.masked_fill_(x6, 0.5)
        (x5.sum()).backward()
        """,
        "issue 10: mul/div save operands their backward does not need (x * 2 saves x), giving false 'modified by an inplace operation' errors (autograd/in-place)",
    ),
    Known(
        "raises RuntimeError @ backward via mul_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.lerp(x2, x1, x3)
        x5 = x4.t()
        x6 = T.add(x3, x4, alpha=2)
        x8 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x5.mul_(x8)
        grads = T.autograd.grad(x6.sum(), [x1], allow_unused=True)
        """,
        "issue 10: mul/div save operands their backward does not need (x * 2 saves x), giving false 'modified by an inplace operation' errors (autograd/in-place)",
    ),
    Known(
        "grad_fn @ add_",
        """
        x2 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x3 = T.expm1(x2)
        x4 = x3.permute(2, 0, 1)
        x5 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x3.add_(x5)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ copy_",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x1 = x0.mean()
        x2 = x1.unsqueeze(-1)
        x9 = T.tensor(1.0, dtype=T.float64)
        x1.copy_(x9)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ div_",
        """
        x1 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x2 = x1.amin(0)
        x3 = x2.reshape(1)
        x5 = T.tensor(1.0, dtype=T.float32, requires_grad=True)
        x2.div_(x5)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ exp_",
        """
        x2 = T.tensor([[[[1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = x2[..., None]
        with T.no_grad():
            x3.exp_()
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ floor_",
        """
        x3 = T.tensor([[[1.0], [1.0], [1.0]], [[1.0], [1.0], [1.0]]], dtype=T.float64, requires_grad=True)
        x4 = T.roll(x3, 2)
        x5 = x4.view(2, 1, 3, -1)
        x4.floor_()
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ iadd",
        """
        x1 = T.tensor([[[1.0]], [[1.0]]], dtype=T.float32, requires_grad=True)
        x2 = T.sign(x1)
        x3 = x2.squeeze(0)
        x2 += x3
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ imul",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x1 = x0.transpose(0, 0)
        x2 = T.tensor([1.0], dtype=T.float64)
        with T.no_grad():
            x1 *= x2
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ masked_fill_",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x2 = T.movedim(x0, 0, 0)
        x11 = T.tensor(True, dtype=T.bool)
        with T.no_grad():
            x2.masked_fill_(x11, -2)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
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
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ neg_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.mean(x1, 0)
        x5 = x4.view(1, 1)
        x4.neg_()
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ pow_",
        """
        x1 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x3 = x1.view(-1)
        with T.no_grad():
            x3.pow_(2)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ scatter_",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x5 = T.tensor([[True]], dtype=T.bool)
        x6 = T.where(x5, x0, x4)
        x7 = T.broadcast_to(x6, (2, 3, 2))
        i10 = T.tensor([[[0]]], dtype=T.int64)
        x11 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x6.scatter_(0, i10, x11)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ sub_",
        """
        x2 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        x3 = F.relu(x2)
        x5 = T.squeeze(x3)
        x6 = T.tensor([[[1.0]]], dtype=T.float64)
        x3.sub_(x6, alpha=2)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ tril_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x8 = F.tanh(x1)
        x9 = x8.expand(2, 3)
        x8.tril_()
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "grad_fn @ zero_",
        """
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x3 = T.log2(x2)
        x4 = x3.squeeze(0)
        x3.zero_()
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "requires_grad @ div_",
        """
        x1 = T.tensor([[1.0]], dtype=T.float64)
        x5 = x1.flatten()
        x6 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x1.div_(x6)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
    ),
    Known(
        "requires_grad @ sub_",
        """
        x1 = T.tensor([1.0, 1.0, 1.0], dtype=T.float64)
        x3 = x1.chunk(3, 0)[2]
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x1.sub_(x4, alpha=2)
        """,
        "new (fuzz): a view keeps its old grad_fn / requires_grad after its base is modified in place (PyTorch: AsStridedBackward0, requires grad) (autograd/in-place)",
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
        "grad-none @ backward via index_select",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x2 = T.broadcast_to(x1, (1, 3, 3, 3))
        x3 = x2.trunc()
        x4 = T.lerp(x3, x1, 0.3)
        i6 = T.tensor([0], dtype=T.int64)
        x7 = T.index_select(x4, 0, i6)
        (x7.sum()).backward()
        """,
        "new (fuzz): a view made under no_grad of a requires-grad tensor: PyTorch gives it no gradient accumulator (.grad stays None), nbgrad accumulates into it (autograd)",
    ),
    Known(
        "grad-none @ backward via minimum",
        """
        x7 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x8 = x7[..., 1:]
        x9 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        x10 = T.minimum(x9, x8)
        (x10.sum()).backward()
        """,
        "new (fuzz): a view made under no_grad of a requires-grad tensor: PyTorch gives it no gradient accumulator (.grad stays None), nbgrad accumulates into it (autograd)",
    ),
    Known(
        "grad-none @ backward via sub",
        """
        x1 = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x3 = x1.unsqueeze(2)
        x7 = T.tensor([[[nan]]], dtype=T.float64, requires_grad=True)
        x9 = x3 - x7
        (x9.sum()).backward()
        """,
        "new (fuzz): a view made under no_grad of a requires-grad tensor: PyTorch gives it no gradient accumulator (.grad stays None), nbgrad accumulates into it (autograd)",
    ),
    Known(
        "grad-none @ backward via where",
        """
        x3 = T.tensor([1.0], dtype=T.float32)
        x9 = T.tensor(1.0, dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x10 = T.broadcast_tensors(x3, x9)[1]
        x11 = T.tensor([False], dtype=T.bool)
        x12 = T.where(x11, x10, x9)
        (x12.sum()).backward()
        """,
        "new (fuzz): a view made under no_grad of a requires-grad tensor: PyTorch gives it no gradient accumulator (.grad stays None), nbgrad accumulates into it (autograd)",
    ),
    Known(
        "is_leaf @ abs_",
        """
        x0 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x2 = T.trunc(x0)
        with T.no_grad():
            x3 = T.flatten(x2, 0, 1)
        x2.abs_()
        """,
        "new (fuzz): a view made under no_grad whose base is then modified in place with grad mode on -- PyTorch raises on its grad_fn/is_leaf (autograd/in-place)",
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
        "is_leaf @ add_",
        """
        x2 = T.tensor([[[1.0]], [[1.0]], [[1.0]]], dtype=T.float64, requires_grad=True)
        x4 = T.expm1(x2)
        x6 = x4.chunk(3, 0)[2]
        x7 = T.tensor([[[1.0]]], dtype=T.float32)
        x4.add_(x7)
        """,
        "new (fuzz): a view whose base is then modified in place -- PyTorch raises on its grad_fn/is_leaf for split/unbind outputs (autograd/in-place)",
    ),
    Known(
        "is_leaf @ clamp_",
        """
        x0 = T.tensor([[1.0], [1.0]], dtype=T.float64, requires_grad=True)
        x1 = x0.chunk(3, 0)[1]
        with T.no_grad():
            x1.clamp_(-0.5, 0.5)
        """,
        "new (fuzz): a view whose base is then modified in place -- PyTorch raises on its grad_fn/is_leaf for split/unbind outputs (autograd/in-place)",
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
        "no-raise RuntimeError @ backward via rem_t",
        """
        x0 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x7 = T.ceil(x2)
        x9 = T.remainder(x0, x7)
        grads = T.autograd.grad(x9.sum(), [x2], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): create_graph gradients -- whether they require grad differs (PyTorch: floor/round/trunc/sign give constant zeros; the backward ops of max_pool2d/reflection pad/layer_norm/where/leaky_relu record a graph) (autograd)",
    ),
    Known(
        "raises RuntimeError @ backward via layer_norm",
        """
        x5 = T.tensor([[[1.0, 1.0, 1.0, 1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x6 = T.tensor([1.0, 1.0, 1.0, 1.0, 1.0], dtype=T.float64)
        x7 = T.tensor([1.0, 1.0, 1.0, 1.0, 1.0], dtype=T.float64, requires_grad=True)
        x8 = F.layer_norm(x5, (5,), x6, x7)
        grads = T.autograd.grad(x8.sum(), [x7], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): create_graph gradients -- whether they require grad differs (PyTorch: floor/round/trunc/sign give constant zeros; the backward ops of max_pool2d/reflection pad/layer_norm/where/leaky_relu record a graph) (autograd)",
    ),
    Known(
        "raises RuntimeError @ backward via max_pool2d",
        """
        x5 = T.tensor([[[[1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64, requires_grad=True)
        x6 = F.max_pool2d(x5, 2)
        grads = T.autograd.grad(x6.sum(), [x5], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): create_graph gradients -- whether they require grad differs (PyTorch: floor/round/trunc/sign give constant zeros; the backward ops of max_pool2d/reflection pad/layer_norm/where/leaky_relu record a graph) (autograd)",
    ),
    Known(
        "raises RuntimeError @ backward via pad_reflect",
        """
        x4 = T.tensor([[[1.0, 1.0, 1.0]]], dtype=T.float64, requires_grad=True)
        x5 = F.pad(x4, (2, 1), mode="reflect")
        grads = T.autograd.grad(x5.sum(), [x4], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): create_graph gradients -- whether they require grad differs (PyTorch: floor/round/trunc/sign give constant zeros; the backward ops of max_pool2d/reflection pad/layer_norm/where/leaky_relu record a graph) (autograd)",
    ),
    Known(
        "raises RuntimeError @ backward via where",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32, requires_grad=True)
        x2 = F.leaky_relu(x0, 0.1)
        x3 = T.tensor([[True]], dtype=T.bool)
        x4 = T.where(x3, x0, x2)
        grads = T.autograd.grad(x4.sum(), [x0], create_graph=True)
        sum((g * g).sum() for g in grads).backward()
        """,
        "new (fuzz): create_graph gradients -- whether they require grad differs (PyTorch: floor/round/trunc/sign give constant zeros; the backward ops of max_pool2d/reflection pad/layer_norm/where/leaky_relu record a graph) (autograd)",
    ),
    Known(
        "no-raise RuntimeError @ add_",
        """
        x1 = T.tensor([[[1.0]], [[1.0]]], dtype=T.float64, requires_grad=True)
        x2 = x1.unbind(0)[1]
        x3 = T.tensor([[1.0]], dtype=T.float32)
        x2.add_(x3)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ copy_",
        """
        x3 = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
        x4 = x3.unbind(0)[1]
        x6 = T.tensor(1.0, dtype=T.float64)
        x4.copy_(x6)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ div_",
        """
        x3 = T.tensor([[1.0]], dtype=T.float64)
        x4 = x3.chunk(2, 0)[0]
        x9 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x4.div_(x9)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ iadd",
        """
        x2 = T.tensor([[1.0]], dtype=T.float32)
        x7 = x2.chunk(1, 1)[0]
        x10 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x7 += x10
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ imul",
        """
        x3 = T.tensor([[[[1.0]]]], dtype=T.float64)
        x4 = x3.chunk(3, 1)[0]
        x7 = T.tensor([[[[1.0]]]], dtype=T.float64, requires_grad=True)
        x4 *= x7
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ masked_fill_",
        """
        x2 = T.tensor([1.0], dtype=T.float64).expand((2,)).requires_grad_()
        x4 = x2.chunk(2, 0)[0]
        x8 = x4[0:0:2]
        x11 = T.tensor(False, dtype=T.bool)
        x8.masked_fill_(x11, 1)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ mul_",
        """
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x3 = x2.unbind(1)[0]
        x4 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x3.mul_(x4)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ pow_",
        """
        x2 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x5 = x2.unbind(1)[0]
        x5.pow_(2)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ relu_",
        """
        x0 = T.tensor([-inf], dtype=T.float64, requires_grad=True)
        x2 = x0 * 0.0
        x3 = T.split(x2, 2, 0)[0]
        x3.relu_()
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ scatter_",
        """
        x3 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        x4 = x3.unbind(0)[0]
        i5 = T.tensor([0], dtype=T.int64)
        x6 = T.tensor([1.0], dtype=T.float64)
        x4.scatter_(0, i5, x6)
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ setitem_t",
        """
        x3 = T.tensor([1.0], dtype=T.float64, requires_grad=True)
        x4 = x3.unbind(0)[0]
        x4[...] = 1
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "no-raise RuntimeError @ zero_",
        """
        x3 = T.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=T.float64)[..., ::2].requires_grad_()
        x4 = x3.chunk(3, 0)[1]
        x4.zero_()
        """,
        "new (fuzz): in-place on an output of unbind/split (multi-output views) is accepted; PyTorch raises (autograd/in-place)",
    ),
    Known(
        "requires_grad @ broadcast_tensors",
        """
        x8 = T.tensor([[1.0], [1.0]], dtype=T.float64)
        x11 = T.tensor([[[1.0]]], dtype=T.float64).mT.requires_grad_()
        with T.no_grad():
            x12 = T.broadcast_tensors(x8, x11)[1]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ chunk",
        """
        x5 = T.zeros((0, 1), dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x7 = x5.chunk(2, 1)[0]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ einsum",
        """
        x6 = T.tensor([[1.0]], dtype=T.float64, requires_grad=True)
        with T.no_grad():
            x7 = T.einsum('ii->i', x6)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ expand_as",
        """
        x4 = T.tensor([[[1.0]]], dtype=T.float32).mT.requires_grad_()
        x8 = T.tensor([[[1.0]]], dtype=T.float32)
        with T.no_grad():
            x9 = x4.expand_as(x8)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ getitem",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32).mT.requires_grad_()
        with T.no_grad():
            x1 = x0[-1]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ narrow",
        """
        x0 = T.tensor([[1.0]], dtype=T.float32).expand((4, 1)).requires_grad_()
        with T.no_grad():
            x4 = T.narrow(x0, 0, 0, 4)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ permute",
        """
        x10 = T.tensor([[1.0]], dtype=T.float32).mT.requires_grad_()
        with T.no_grad():
            x13 = x10.permute(0, 1)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ reshape",
        """
        x5 = T.tensor([[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]], dtype=T.float64)[..., ::2].requires_grad_()
        with T.no_grad():
            x8 = x5.reshape(-1, 1, 2, 4)
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
        x2 = T.tensor([1.0], dtype=T.float32).expand((2,)).requires_grad_()
        with T.no_grad():
            x3 = T.squeeze(x2)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ t",
        """
        x6 = T.tensor([1.0, 1.0], dtype=T.float64)[..., ::2].requires_grad_()
        with T.no_grad():
            x7 = x6.t()
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ transpose",
        """
        x8 = T.tensor([1.0], dtype=T.float64).expand((2,)).requires_grad_()
        with T.no_grad():
            x9 = x8.transpose(0, -1)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ unbind",
        """
        x0 = T.tensor([1.0], dtype=T.float32, requires_grad=True)
        with T.no_grad():
            x1 = x0.unbind(0)[0]
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ unsqueeze",
        """
        x3 = T.tensor([[1.0]], dtype=T.float32).expand((2, 1)).requires_grad_()
        with T.no_grad():
            x6 = x3.unsqueeze(-2)
        """,
        "new (fuzz): requires_grad of a view made under no_grad -- PyTorch: the base's requires_grad (True for unbind/split/chunk/einsum-diagonal outputs of a requires-grad tensor, False for a view of a leaf that is itself a view of a no-grad tensor) (autograd)",
    ),
    Known(
        "requires_grad @ view",
        """
        x3 = T.tensor([[[[1.0]]]], dtype=T.float64).expand((2, 2, 5, 5)).requires_grad_()
        with T.no_grad():
            x5 = x3.view(2, 2, 5, 5, 1)
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
        "raises RuntimeError @ tril_",
        """
        x0 = T.tensor([[[1.0]]], dtype=T.float64).expand((2, 1, 1))
        x0.tril_()
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
        "new (fuzz): cross_entropy's node connects straight to its input; PyTorch has LogSoftmaxBackward0 in between (grad_fn.next_functions differ, so a pre-hook lands on another node) (other)",
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
