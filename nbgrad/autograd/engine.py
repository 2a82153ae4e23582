"""The backward scheduler: PyTorch's single-device order in one Python loop.

NOTE [ready order]: dependencies are counted from the roots (iteratively: a 100,000-node chain
must work); a node becomes ready when all its incoming gradients have arrived; among ready nodes
the highest sequence number (the most recently created) runs first, and AccumulateGrad has an
infinite one so a leaf accumulates as soon as it can.  This reproduces PyTorch's hook order.

NOTE [hook order] for one node (SEMANTICS.md section 4):
  tensor hooks of the tensors it produced (per output slot, registration order)
  -> retain_grad capture -> (autograd.grad / inputs= capture) -> node pre-hooks
  -> node body (AccumulateGrad: accumulate, then post-accumulate hooks) -> node post-hooks.
The engine knows nothing about particular ops: it calls ``node.apply`` and reduces each returned
gradient to the input's shape and dtype in one place (``conform_grads``).
"""

import heapq
import itertools
import sys
import traceback
import warnings

import numpy as np

from .. import _flags, grad_mode
from .._fpstate import EXTOBJ as _EXTOBJ, IGNORE as _IGNORE
from .._tensor import Tensor
from ..creation import zeros
from ..ops.reduction import sum_to_array
from . import profiler
from .anomaly_mode import STATE as ANOMALY
from .batching import BATCH, handles_batch, sum_to
from .exec_info import plan
from .graph import (
    TASKS,
    AccumulateGrad,
    GraphTask,
    run_post_hooks,
    run_pre_hooks,
    run_tensor_hooks,
)


def run_backward(
    roots, grads, keep_graph, create_graph, inputs=None, accumulate=True, batched=False
):
    """roots: [(node, output_nr)], grads: matching Tensors.  inputs: [Tensor] or None.

    Returns the captured gradients for ``inputs`` when ``accumulate`` is False (autograd.grad).
    ``batched``: every gradient has one leading batch dim (NOTE [batched backward]).
    """
    root_nodes = {n for n, _ in roots}
    deps = _count_dependencies(root_nodes)
    buffers = {}
    for (node, nr), g in zip(roots, grads):
        _add(buffers, node, nr, g)

    captures = None  # node -> [(output_nr, input index)]
    execute = None  # None = run every node
    if inputs is not None:
        captures, execute = plan(inputs, deps, root_nodes, accumulate)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    task = GraphTask(deps, root_nodes, execute, captures, accumulate)
    TASKS.stack += (task,)

    ready, tick = [], itertools.count()
    for node in root_nodes:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq, next(tick), node))

    prev = grad_mode.STATE.enabled
    grad_mode.STATE.enabled = create_graph
    prev_batch = BATCH.dims
    BATCH.dims = 1 if batched else 0
    quiet = _EXTOBJ.set(_IGNORE)  # IEEE inf/nan without numpy RuntimeWarnings, like PyTorch
    plain = (
        execute is None
        and captures is None
        and not ANOMALY.enabled
        and not batched
        and not _flags.PROFILE
    )
    heappop, heappush = heapq.heappop, heapq.heappush
    nxt = None  # NOTE [ready order] shortcut: the one node made ready that runs next anyway
    try:
        while True:
            if nxt is not None:
                node, nxt = nxt, None
            elif ready:
                node = heappop(ready)[2]
            else:
                break
            slots = buffers.pop(node, None)
            outs = None
            if slots is not None:
                if (
                    plain
                    and node._tensor_hooks is None
                    and node._retain is None
                    and node._pre_hooks is None
                    and node._post_hooks is None
                    and type(node) is not AccumulateGrad
                ):
                    # the common case: no hooks, no captures (NOTE [hook order] is moot);
                    # NOTE [per-node cost]: conform_grads's no-op case inlined
                    if len(slots) == 1 and 0 in slots and getattr(node, "_nout", 1) == 1:
                        outs = node.apply((slots[0],))
                        meta = node._in_meta
                        if len(outs) != len(meta):
                            outs = conform_grads(node, outs)
                        else:
                            for g, m in zip(outs, meta):
                                if g is not None and (
                                    g._data.shape != m[0] or g._dtype is not m[1]
                                ):
                                    outs = conform_grads(node, outs)
                                    break
                        if not keep_graph:
                            node.release()
                    else:
                        outs = _run_node(node, slots, keep_graph, captures, captured, execute)
                elif (
                    execute is None
                    or node in execute
                    or (captures is not None and node in captures)
                ):
                    outs = _run_node(node, slots, keep_graph, captures, captured, execute)
            elif execute is None or node in execute or (captures is not None and node in captures):
                # NOTE [undefined gradients]: a node none of whose outputs got a gradient still
                # runs, as in PyTorch: its hooks see None, a custom Function's backward gets
                # zeros (or None without materialize_grads); built-in nodes pass None on.
                outs = _run_node(node, _NO_GRADS, keep_graph, captures, captured, execute)
            i = 0
            g = None
            for child, nr in node.next_functions:
                if child is not None:
                    if outs is not None:
                        g = outs[i]
                        if g is not None:
                            b = buffers.get(child)
                            if b is None:
                                buffers[child] = {nr: g}
                            elif nr in b:
                                b[nr] = _accumulate(b[nr], g, create_graph)
                            else:
                                b[nr] = g
                    left = deps[child] - 1
                    deps[child] = left
                    if left == 0:
                        # it would be popped next (the highest sequence number; ties keep
                        # push order, so only a strictly higher one skips the heap)
                        if nxt is None and (not ready or child._seq > -ready[0][0]):
                            nxt = child
                        else:
                            if nxt is not None:
                                heappush(ready, (-nxt._seq, next(tick), nxt))
                                nxt = None
                            heappush(ready, (-child._seq, next(tick), child))
                i += 1
            g = outs = None  # hold no gradient across nodes (NOTE [stealing the gradient])
        if task.callbacks is not None:  # NOTE [final callbacks]
            _run_final_callbacks(task)
    finally:
        grad_mode.STATE.enabled = prev
        BATCH.dims = prev_batch
        _EXTOBJ.reset(quiet)
        TASKS.stack = TASKS.stack[:-1]
    return captured


def queue_callback(callback):
    """PyTorch's ``Variable._execution_engine.queue_callback``: run ``callback()`` when the
    backward running in this thread has computed every gradient, before it returns.

    NOTE [final callbacks]: callbacks belong to the innermost running graph task (a reentrant
    backward's own, as in PyTorch), run in the order queued, with that backward's grad mode;
    one queued by a callback runs too.  They do not run when the backward raised.
    """
    if not TASKS.stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task = TASKS.stack[-1]
    if task.callbacks is None:
        task.callbacks = []
    task.callbacks.append(callback)


def _run_final_callbacks(task):
    cbs, i = task.callbacks, 0
    while i < len(cbs):  # a callback may queue more
        cbs[i]()
        i += 1


def _run_node(node, *args):
    if not _flags.PROFILE:
        return _node_body(node, *args)
    # NOTE [profiler flag]: the node's event; its hooks' events nest inside it
    ev = profiler.begin("autograd::engine::evaluate_function: " + node.name(), "backward")
    try:
        return _node_body(node, *args)
    finally:
        profiler.end(ev)


def _node_body(node, slots, keep_graph, captures, captured, execute):
    n = getattr(node, "_nout", 1)
    grads = (slots.get(0),) if n == 1 else tuple([slots.get(i) for i in range(n)])
    if (
        node._tensor_hooks is not None
        or node._retain is not None
        or (type(node) is AccumulateGrad and node.variable._hooks)
    ):
        grads = run_tensor_hooks(node, grads)
    if captures is not None and node in captures:
        for nr, idx in captures[node]:
            g = grads[nr] if nr < len(grads) else None
            if g is not None:
                captured[idx] = g if captured[idx] is None else captured[idx] + g
        if execute is not None and node not in execute:
            return None
    if node._pre_hooks:
        grads = run_pre_hooks(node, grads)
    if grads[0] is None if len(grads) == 1 else all(g is None for g in grads):
        # NOTE [undefined gradients]
        if node._runs_undefined and not BATCH.dims:
            outs = node.apply(grads)
        else:
            outs = (None,) * len(node.next_functions)
    elif ANOMALY.enabled:
        outs = conform_grads(node, _apply_anomalous(node, grads))
    elif BATCH.dims and not handles_batch(node):
        outs = conform_grads(node, per_sample(node, grads, conform_grads))
    else:
        outs = conform_grads(node, node.apply(grads))
    if execute is not None:  # grads for inputs nobody asked for are undefined (PyTorch)
        outs = tuple(
            g
            if (c is not None and (c in execute or (captures is not None and c in captures)))
            else None
            for g, (c, _) in zip(outs, node.next_functions)
        )
    if node._post_hooks:
        outs = run_post_hooks(node, outs, grads)
    if not keep_graph:
        node.release()
    return outs


_NO_GRADS = {}


def _add(buffers, node, nr, g):
    slots = buffers.get(node)
    if slots is None:
        buffers[node] = {nr: g}
    elif nr in slots:
        slots[nr] = slots[nr] + g
    else:
        slots[nr] = g


def _accumulate(a, b, create_graph):
    """``a + b`` for two gradients of one input (PyTorch's InputBuffer::add).  Without
    create_graph, two gradients of the same dtype and layout are added as arrays (NOTE
    [per-node cost]); anything else (a graph to build, a dtype or layout to reconcile) takes
    the ``add`` op."""
    x, y = a._data, b._data
    if (
        create_graph
        or a._dtype is not b._dtype
        or x.strides != y.strides
        or x.shape != y.shape
        or type(x) is not np.ndarray  # a CUDA gradient: the add op's kernel
    ):
        return a + b
    if (
        sys.getrefcount(a) <= 3  # the buffer slot, the argument, getrefcount's
        and x.base is None
        and sys.getrefcount(x) <= 3  # a._data, the local x, getrefcount's
        and x.flags.writeable
        and x.ndim
    ):
        # nobody else can see ``a``: add in place, as PyTorch's InputBuffer does for a
        # gradient it holds alone (no allocation, no page faults on a large gradient)
        np.add(x, y, out=x)
        return a
    r = np.add(x, y)
    return Tensor._make(r if type(r) is np.ndarray else np.asarray(r))


def _count_dependencies(root_nodes):
    deps = {}
    seen = set(root_nodes)
    stack = list(root_nodes)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return deps


def conform_grads(node, outs):
    """Reduce/cast each gradient to its input's shape and dtype (the one central place)."""
    meta = node._in_meta
    if len(outs) != len(meta):
        raise RuntimeError(
            "function %s returned an incorrect number of gradients (expected %d, "
            "got %d)" % (node.name(), len(meta), len(outs))
        )
    fixed = None
    nb = BATCH.dims
    for i, g in enumerate(outs):
        if g is None:
            continue
        shape, dtype = meta[i]
        gs = g._data.shape
        if nb:
            shape = gs[:nb] + shape
        if gs != shape or g._dtype is not dtype:
            if fixed is None:
                fixed = list(outs)
            if gs != shape:
                if not _expandable(shape[nb:], gs[nb:]):
                    raise RuntimeError(
                        "Function %s returned an invalid gradient at index %d - got %s but "
                        "expected shape compatible with %s"
                        % (node.name(), i, list(gs[nb:]), list(shape[nb:]))
                    )
                r = None
                if not nb and not grad_mode.STATE.enabled:  # arrays (NOTE [per-node cost])
                    r = sum_to_array(g._data, shape)
                g = Tensor._make(r) if r is not None else sum_to(g, shape[nb:], nb)
            if g._dtype is not dtype and dtype.is_inexact:
                g = g.to(dtype)
            fixed[i] = g
    return outs if fixed is None else tuple(fixed)


def _expandable(shape, grad_shape):
    """True when ``shape`` broadcasts to ``grad_shape`` (so grad can be summed back)."""
    if len(shape) > len(grad_shape):
        return all(s == 1 for s in shape[: len(shape) - len(grad_shape)]) and _expandable(
            shape[len(shape) - len(grad_shape) :], grad_shape
        )
    off = len(grad_shape) - len(shape)
    return all(s == 1 or s == grad_shape[off + i] for i, s in enumerate(shape))


def _apply_anomalous(node, grads):
    try:
        outs = (
            per_sample(node, grads, conform_grads)
            if BATCH.dims and not handles_batch(node)
            else node.apply(grads)
        )
        if ANOMALY.check_nan:
            for i, g in enumerate(outs):
                if g is not None and g._dtype.is_inexact and g.isnan().any().item():
                    raise RuntimeError(
                        "Function '%s' returned nan values in its %dth output." % (node.name(), i)
                    )
        return outs
    except Exception:
        if node._trace is not None:
            warnings.warn(
                "Error detected in %s. Traceback of forward call that caused the "
                "error:\n%s" % (node.name(), "".join(traceback.format_list(node._trace))),
                UserWarning,
                stacklevel=4,
            )
        raise


def per_sample(node, grads, fit):
    """NOTE [batched backward]'s fallback: run ``node`` once per batch element (unbatched),
    ``fit`` its results and stack them."""
    from ..ops.shape import stack  # cycle: ops import this package (graph, batching)

    n = next(g for g in grads if g is not None)._data.shape[0]
    nb = BATCH.dims
    BATCH.dims = 0
    try:
        rows = [
            fit(node, node.apply(tuple(g[b] if g is not None else None for g in grads)))
            for b in range(n)
        ]
    finally:
        BATCH.dims = nb
    outs = []
    for i, meta in enumerate(node._in_meta):
        col = [r[i] for r in rows]
        if all(c is None for c in col):
            outs.append(None)
            continue
        dev = next(c for c in col if c is not None).device
        outs.append(
            stack(
                [c if c is not None else zeros(*meta[0], dtype=meta[1], device=dev) for c in col], 0
            )
        )
    return tuple(outs)
