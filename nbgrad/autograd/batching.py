"""Batched gradients: ``autograd.grad(..., is_grads_batched=True)`` and what builds on it
(``functional.jacobian(vectorize=True)``, batched forward-mode tangents).

NOTE [batched backward]: while a batched backward runs, every gradient that flows through the
graph carries ``BATCH.dims`` leading batch dimensions (0 or 1) in front of the shape of the
tensor it belongs to.  A node whose backward is written for that -- its vjp is marked with
``@batched``: elementwise ops (broadcasting does it), matmul, sum/mean, views, softmax, basic
indexing, ... -- runs once for the whole batch, so a 100-row Jacobian is one graph walk of
100-row kernels.  Any other node (custom Functions, nn kernels, CopySlices, ...) runs once per
batch element and its results are stacked: PyTorch's vmap fallback, correct for every node,
only slower (``engine.per_sample``).  The engine reduces broadcast gradients keeping the batch
dims (``sum_to``).  This module imports nothing from nbgrad: ops import it.

A batch-aware vjp finds the batch dims as ``g.shape[:BATCH.dims]`` (``lead(g)``) and otherwise
uses negative dims, which are the same with or without them.
"""

import threading


class _Batch(threading.local):
    """Per thread (NOTE [mode state] in grad_mode.py)."""

    dims = 0  # leading batch dims of the gradients in this thread's running backward


BATCH = _Batch()


def batched(vjp):
    """Mark ``vjp(node, grads)`` as accepting gradients with leading batch dims."""
    vjp.batched = True
    return vjp


def lead(g):
    """The batch part of gradient ``g``'s shape (``()`` outside a batched backward)."""
    return g._data.shape[: BATCH.dims]


def handles_batch(node):
    return getattr(getattr(node, "op", None), "batched", False)


def sum_to(g, shape, nb):
    """Sum ``g`` (batch dims + a shape ``shape`` broadcasts to) down to batch dims + ``shape``:
    the inverse of broadcasting, the engine's one reducer (also ``Tensor.sum_to_size``)."""
    gs = g._data.shape
    extra = len(gs) - nb - len(shape)
    dims = tuple(range(nb, nb + extra)) + tuple(
        nb + extra + i for i, s in enumerate(shape) if s == 1 and gs[nb + extra + i] != 1
    )
    r = g.sum(dims, keepdim=True) if dims else g
    target = gs[:nb] + tuple(shape)
    return r.reshape(target) if r._data.shape != target else r
