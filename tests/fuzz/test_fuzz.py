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
    # -- autograd / in-place (exposed once the in-place fixes landed)
    Known(
        "grad_fn @ pow_",
        """
        x6 = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
        x7 = T.softmax(x6, -2)
        x8 = x7.flatten()
        x7.pow_(2)
        """,
        "new (fuzz): a view of an EMPTY base keeps ViewBackward0 in PyTorch after an in-place op "
        "on the base; nbgrad regenerates AsStridedBackward0 (autograd/in-place)",
    ),
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
        "stride @ nonzero",
        """
        x2 = T.tensor([[True, True]], dtype=T.bool)
        x3 = T.nonzero(x2)
        """,
        "new (fuzz): nonzero's result is column-major in PyTorch, strides (1, n) (indexing/shape)",
    ),
    # -- pointwise NaN / reductions
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
        "stride @ conv1d",
        """
        x5 = T.tensor([[[1.0]]], dtype=T.float64)
        x6 = T.tensor([[[1.0], [1.0]], [[1.0], [1.0]]], dtype=T.float64).mT.requires_grad_()
        x7 = F.conv1d(x5, x6, padding=1)
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
        "stride @ lt",
        """
        x0 = T.tensor([[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]], dtype=T.float32).mT.requires_grad_()
        x1 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]], dtype=T.float32, requires_grad=True)
        x2 = T.lt(x0, x1)
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
        "stride @ ne",
        """
        x1 = T.tensor([[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]], dtype=T.float64).mT.requires_grad_()
        x2 = T.tensor([[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]], dtype=T.float64, requires_grad=True)
        x3 = x1 != x2
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
        "grad_fn @ linear",
        """
        x2 = T.tensor([[[1.0]]], dtype=T.float64).expand((1, 1, 4))
        x3 = T.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=T.float64, requires_grad=True)
        x4 = T.tensor([1.0], dtype=T.float64)
        x5 = F.linear(x2, x3, x4)
        """,
        "issue 10, Differences: grad_fn names -- linear of a 3-D non-contiguous input (linalg)",
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
