"""``nbgrad.autograd``: backward, grad and the graph API; installs ``Tensor.backward``.

NOTE [autograd layering]: ops import this package's lower modules (graph, saved, batching,
anomaly_mode), so this file runs while ops are still loading.  What it imports at module level
(those, engine, function, gradcheck) reaches ops only at call time; ``functional`` and
``forward_ad``, which import ops, are imported by ``nbgrad/__init__.py`` once ops are loaded.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from .. import creation
from .._tensor import Size, Tensor
from . import graph, profiler  # noqa: F401
from .anomaly_mode import (  # noqa: F401  (re-exported: torch.autograd.is_anomaly_enabled, ...)
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import run_backward
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401  (the functions shadow the module)
from .graph import edge

__all__ = ["backward", "grad", "detect_anomaly", "set_detect_anomaly", "graph", "Function"]


def _tensor_list(x):
    if isinstance(x, (Tensor, graph.GradientEdge)):
        return [x]
    if x is None:
        return []
    return list(x)


def _make_grads(outputs, grads, batched=False):
    if batched:
        return _make_batched_grads(outputs, grads)
    if len(grads) != len(outputs):
        raise RuntimeError(
            "grad can be implicitly created only for scalar outputs"
            if not grads
            else "got %d tensors and %d gradients" % (len(outputs), len(grads))
        )
    result = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out._dtype.is_inexact:
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar "
                        "outputs but got %s" % out._dtype
                    )
            result.append(creation.ones_like(out))
        else:
            if not isinstance(g, Tensor):
                raise TypeError(
                    "gradients can be either Tensors or None, but got %s" % type(g).__name__
                )
            if g._data.shape != out._data.shape:
                raise RuntimeError(
                    "Mismatch in shape: grad_output[%d] has a shape of %r and output[%d] has a "
                    "shape of %r." % (i, Size(g._data.shape), i, Size(out._data.shape))
                )
            result.append(g)
    return result


def _make_batched_grads(outputs, grads):
    """is_grads_batched: dim 0 of each grad_output is the batch; a None one is ones (implicit
    scalar grad) broadcast over the batch."""
    if len(grads) != len(outputs):
        raise RuntimeError("got %d tensors and %d gradients" % (len(outputs), len(grads)))
    n = None
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                "gradients can be either Tensors or None, but got %s" % type(g).__name__
            )
        if g._data.ndim == 0:
            raise ValueError(
                "vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, "
                "but that input is a Tensor of dimensionality 0 so expected in_dim "
                "to satisfy 0 <= in_dim < 0."
            )
        if g._data.shape[1:] != out._data.shape:
            # PyTorch 2.13 prints the batch-stripped shape of grad_output[0][0] here
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                "detected: grad_output[%d] has a shape of %r and output[%d] has a shape of %r. "
                "If you only want some tensors in `grad_output` to be considered batched, "
                "consider using vmap." % (i, Size(g._data.shape[2:]), i, Size(out._data.shape))
            )
        if n is not None and g._data.shape[0] != n:
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped "
                "dimension, got sizes %s for the mapped dimension"
                % [x._data.shape[0] for x in grads if x is not None]
            )
        n = g._data.shape[0]
    if n is None:
        raise RuntimeError("is_grads_batched=True needs at least one batched grad_output")
    result = []
    for out, g in zip(outputs, grads):
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = creation.ones((n,) + out._data.shape, dtype=out.dtype)
        result.append(g)
    return result


def _roots(outputs):
    roots = []
    for i, t in enumerate(outputs):
        e = edge(t)
        if e[0] is None:
            raise RuntimeError(
                "element %d of tensors does not require grad and does not have a grad_fn" % i
            )
        roots.append(e)
    return roots


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Tensor | Sequence[Tensor | None] | None = None,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of leaves (or of ``inputs``)."""
    if grad_variables is not None:
        warnings.warn(
            "'grad_variables' is deprecated. Use 'grad_tensors' instead.",
            FutureWarning,
            stacklevel=2,
        )
        grad_tensors = grad_variables
    outputs = _tensor_list(tensors)
    if inputs is not None:
        inputs = _tensor_list(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _tensor_list(grad_tensors) if grad_tensors is not None else [None] * len(outputs)
    grads = _make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=2,
        )
    roots = _roots(outputs)
    if inputs is not None:
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
        for t in inputs:
            if t.grad_fn is not None:  # non-leaf inputs get .grad: PyTorch retains it
                t.retain_grad()
        run_backward(roots, grads, retain_graph, create_graph, inputs, True)
    else:
        run_backward(roots, grads, retain_graph, create_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Return the gradients of ``outputs`` with respect to ``inputs`` (never touches ``.grad``)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads="
            "True, but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). "
            "To accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    outs = _tensor_list(outputs)
    as_dict = type(inputs) is dict
    ins = list(inputs.values()) if as_dict else _tensor_list(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for t in ins:
        if isinstance(t, graph.GradientEdge):  # the gradient flowing along that edge
            continue
        if not isinstance(t, Tensor):
            raise TypeError("grad(): inputs must be Tensors, got %s" % type(t).__name__)
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    gos = _tensor_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    gos = _make_grads(outs, gos, is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    captured = run_backward(
        _roots(outs), gos, retain_graph, create_graph, ins, False, is_grads_batched
    )
    result = []
    for i, (t, g) in enumerate(zip(ins, captured)):
        if g is None:
            if materialize_grads and isinstance(t, Tensor):
                g = (
                    creation.zeros_like(t)
                    if not is_grads_batched
                    else creation.zeros((gos[0]._data.shape[0],) + t._data.shape, dtype=t.dtype)
                )
                if create_graph:  # PyTorch: zeros_like(input, requires_grad=create_graph)
                    g.requires_grad_(True)
            elif not allow_unused:
                raise RuntimeError(
                    "The differentiated Tensor at index %d appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior." % i
                )
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    if as_dict:
        return dict(zip(inputs.keys(), result))
    return tuple(result)


def _tensor_backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Compute the gradient of this tensor with respect to the graph leaves and accumulate it
    into their ``.grad`` (``gradient`` is required unless the tensor has one element); with
    ``inputs``, only into those (``autograd.backward(self, ...)``)."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_tensor_backward.__name__, _tensor_backward.__qualname__ = "backward", "Tensor.backward"
Tensor.backward = _tensor_backward
