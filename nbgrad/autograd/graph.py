"""Graph objects: ``Node`` (what ``grad_fn`` is) with its hooks, ``AccumulateGrad``, edges.

No op-specific code here: a registry op's node class only names itself and calls its OpDef.
Saved tensors live in autograd/saved.py; ``saved_tensors_hooks`` is public here, as in PyTorch.
"""

import itertools
import sys
import threading
import weakref
from collections import namedtuple

import numpy as np

from .. import _flags, grad_mode
from .._devarray import DeviceArray
from .._tensor import Tensor, _dense, view_rebase_error
from ..utils.hooks import HookDict, add_hook
from .profiler import begin as _begin_event, end as _end_event
from .saved import (  # noqa: F401
    ERR_FREED,
    SavedOutput,
    SavedTensor,
    allow_mutation_on_saved_tensors,
    disable_saved_tensors_hooks,
    saved_tensors_hooks,
)

__all__ = [
    "Node",
    "AccumulateGrad",
    "GradientEdge",
    "get_gradient_edge",
    "register_multi_grad_hook",
    "saved_tensors_hooks",
    "disable_saved_tensors_hooks",
    "allow_mutation_on_saved_tensors",
]

_seq = itertools.count()
next_seq = _seq.__next__


class Node:
    """A backward function.  ``next_functions`` holds one ``(node, input_nr)`` per input slot.

    Hook storage (all ``None`` until used, so a node without hooks costs one test):
      _tensor_hooks   {output_nr: HookDict}  Tensor.register_hook on this node's outputs
      _retain         {output_nr: weakref}   retain_grad() captures (run after tensor hooks)
      _pre_hooks      HookDict               register_prehook(fn(grad_outputs))
      _post_hooks     HookDict               register_hook(fn(grad_inputs, grad_outputs))
    """

    # Rarely-set fields are class-level defaults that an instance overrides in its __dict__
    # only when used, so creating a node sets only what it needs (NOTE [per-op cost]).
    __slots__ = ("next_functions", "_seq", "_in_meta", "__dict__", "__weakref__")
    _name = None
    _tensor_hooks = _retain = _pre_hooks = _post_hooks = _metadata = _trace = None
    _runs_undefined = False  # apply() is called even when every gradient is None

    def __init__(self, next_functions=(), in_meta=()):
        self.next_functions = next_functions
        self._in_meta = in_meta  # (shape, dtype) per slot: the engine sums/casts to it
        self._seq = next_seq()

    def name(self):
        return self._name or type(self).__name__

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def requires_grad(self):
        return True

    def apply(self, grads):
        """Map grads of this node's outputs (a tuple) to grads of its inputs (a tuple)."""
        raise NotImplementedError  # pragma: no cover - every concrete node overrides

    def release(self):
        """Drop saved values after a non-retained backward."""

    def __call__(self, *grads):
        return self.apply(grads)

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        return add_hook(self._pre_hooks, fn)

    def register_hook(self, fn):
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        return add_hook(self._post_hooks, fn)

    def _register_tensor_hook(self, output_nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        d = self._tensor_hooks.get(output_nr)
        if d is None:
            d = self._tensor_hooks[output_nr] = HookDict()
        return add_hook(d, fn)

    def __repr__(self):
        return "<%s object at %#x>" % (self.name().rsplit("::", 1)[-1], id(self))


class AccumulateGrad(Node):
    """Leaf sink: runs the leaf's tensor hooks, accumulates into ``.grad``, then post hooks.

    NOTE [thread-safe accumulation]: backward may run in several threads at once into the same
    leaf (PyTorch supports it).  The read-modify-write of ``.grad`` (a check-then-set, and an
    in-place ``np.add`` that releases the GIL on large arrays) holds the node's lock; one leaf
    has one accumulator at a time (``grad_accumulator`` creates it under ``_ACC_LOCK``), so
    the lock is per leaf, kept on the leaf across graphs (a new accumulator per forward pass
    does not make a new lock).  An uncontended lock costs ~0.1 us per leaf per backward."""

    __slots__ = ("variable", "_lock")
    _name = "torch::autograd::AccumulateGrad"
    _runs_undefined = True  # post-accumulate hooks run even without a gradient (PyTorch)

    def __init__(self, variable, lock=None):
        Node.__init__(self, (), ())
        self._seq = float("inf")  # run as soon as ready (PyTorch uses UINT64_MAX)
        self.variable = variable
        self._lock = lock if lock is not None else threading.Lock()

    def apply(self, grads):
        """Update ``.grad`` (layout rules of SEMANTICS.md section 7), then run the
        post-accumulate hooks."""
        var, g = self.variable, grads[0]
        if g is not None:
            with self._lock:  # NOTE [thread-safe accumulation]
                old = var._grad
                if old is None:
                    if grad_mode.STATE.enabled:  # create_graph: keep the graph of the gradient
                        from ..ops.registry import result  # cycle: ops sit above graph (Node base)

                        var._grad = result(
                            g._data.copy(),
                            "torch::autograd::CopyBackwards",
                            (g,),
                            lambda node, grads: (grads[0],),
                        )
                    elif type(g._data) is DeviceArray or type(var._data) is DeviceArray:
                        var._grad = Tensor._make(_device_copy(g._data, var._data))
                    elif _stealable(g, var._data):
                        var._grad = Tensor._make(g._data)  # NOTE [stealing the gradient]
                    else:
                        a = var._data
                        arr = np.empty_like(a) if _dense(a) else np.empty(a.shape, a.dtype)
                        np.copyto(arr, g._data, casting="unsafe")
                        var._grad = Tensor._make(arr)
                elif grad_mode.STATE.enabled:
                    var._grad = old + g
                elif type(old._data) is DeviceArray:
                    _device_add(old._data, g._data)
                    old._vc[0] += 1
                else:
                    np.add(old._data, g._data, out=old._data, casting="unsafe")
                    old._vc[0] += 1
        if var._post_acc_hooks:
            for hook in list(var._post_acc_hooks.values()):
                r = hook(var) if not _flags.PROFILE else call_hook("post_accumulate", hook, var)
                if r is not None:
                    if isinstance(r, Tensor):
                        raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                    raise TypeError("expected Variable, but hook returned '%s'" % type(r).__name__)
        return ()


def _device_copy(ga, a):
    """A leaf's first CUDA gradient: a dense copy in the leaf's dtype (CUDA gradients are not
    stolen yet: a device buffer's sharing is not visible to refcounts)."""
    from ..ops.transfer import move  # cycle: calls up into the CUDA path

    return move(ga, a.device if type(a) is DeviceArray else "cpu").astype(a.dtype)


def _device_add(out, ga):
    """``out += ga`` in place on the device (``.grad`` accumulation)."""
    from ..kernels.cuda.elementwise import run  # cycle: calls up into the CUDA path

    if type(ga) is not DeviceArray:
        from ..device import CPU, same_device_error  # lazy: the CUDA path loads on first use

        raise same_device_error(out.device, CPU)
    run("accumulate", ("x", "y"), "x + y", out.dtype.name, (out, ga), out=out)


# NOTE [stealing the gradient]: the first gradient of a leaf becomes its ``.grad`` without a
# copy when nothing else can see it, as PyTorch's AccumulateGrad does (``new_grad.use_count()
# <= num_expected_refs`` and the layout contract): the Tensor is referenced only by the
# engine's slot dict, the grads tuple, ``apply``'s local, ``_stealable``'s argument and
# getrefcount's (a user hook that kept it, a second edge carrying the same Tensor, or the
# caller's grad_tensors list for a leaf root adds one), its array owns its memory
# (no view of a buffer that another gradient may share) and is referenced by that Tensor only,
# and it has the leaf's dtype, shape and strides (dense leaf) or is contiguous (other leaves).
# tests/test_engine.py checks both sides: stolen when unseen, copied when a hook kept it.
_STEAL_REFS = 5


def _stealable(g, a):
    ga = g._data
    return (
        sys.getrefcount(g) <= _STEAL_REFS
        and ga.base is None
        and sys.getrefcount(ga) <= 3  # g._data, the local ga, the argument
        and ga.dtype == a.dtype
        and ga.shape == a.shape
        and ga.flags.writeable
        and (ga.strides == a.strides if _dense(a) else ga.flags.c_contiguous)
    )


# ---------------------------------------------------------------------------------------------
# Running hooks: the engine calls these in NOTE [hook order] (autograd/engine.py).


def run_tensor_hooks(node, grads):
    """Tensor hooks of the node's outputs (its leaf's, for AccumulateGrad), then retain_grad."""
    grads = list(grads)
    if type(node) is AccumulateGrad:
        hooks = node.variable._hooks
        per_slot = {0: hooks} if hooks else {}
    else:
        per_slot = node._tensor_hooks or {}
    for nr, hooks in per_slot.items():
        g = grads[nr]
        for hook in list(hooks.values()):  # snapshot: see SEMANTICS.md section 1 (removal)
            # an undefined gradient reaches hooks as None (PyTorch)
            r = hook(g) if not _flags.PROFILE else call_hook("tensor", hook, g)
            if r is not None:
                if g is None:
                    raise RuntimeError("can't replace a None gradient with a non-None value")
                g = _check_tensor_hook(hook, r, g)
        grads[nr] = g
    if node._retain is not None:
        for nr, ref in node._retain.items():
            t = ref()
            g = grads[nr]
            if t is None or g is None:
                continue
            with _ACC_LOCK:  # NOTE [thread-safe accumulation]
                if t._grad is None:  # PyTorch: grad.clone(at::MemoryFormat::Contiguous)
                    if not grad_mode.STATE.enabled:
                        g = g.detach()
                    c = g.contiguous()
                    t._grad = c if c is not g else g.clone()
                else:
                    t._grad = t._grad + g
    return tuple(grads)


def run_pre_hooks(node, grads):
    for hook in list(node._pre_hooks.values()):
        r = hook(grads) if not _flags.PROFILE else call_hook("node_pre", hook, grads)
        if r is not None:
            grads = _check_hook_tuple(hook, r, len(grads))
    return grads


def run_post_hooks(node, outs, grads):
    for hook in list(node._post_hooks.values()):
        r = hook(outs, grads) if not _flags.PROFILE else call_hook("node_post", hook, outs, grads)
        if r is not None:
            outs = _check_hook_tuple(hook, r, len(outs))
    return outs


def run_hook(kind, hook, *args):
    """Call a user hook (modules use this); with the profiler on, as its own event."""
    return hook(*args) if not _flags.PROFILE else call_hook(kind, hook, *args)


def call_hook(kind, hook, *args):
    """A user hook as its own profiler event (``hook::<kind>``), nested in what is running."""
    ev = _begin_event("hook::%s" % kind, "hook")
    try:
        return hook(*args)
    finally:
        _end_event(ev)


def _hook_name(hook):
    return getattr(hook, "__name__", type(hook).__name__)


def _check_tensor_hook(hook, r, g):
    if not isinstance(r, Tensor):
        raise TypeError("expected Variable, but hook returned '%s'" % type(r).__name__)
    if r._data.shape != g._data.shape:
        raise RuntimeError("hook '%s' has changed the size of value" % _hook_name(hook))
    if r._dtype is not g._dtype:
        raise RuntimeError(
            "hook '%s' has changed the type of value (was torch.%sTensor got "
            "torch.%sTensor)" % (_hook_name(hook), g._dtype._legacy, r._dtype._legacy)
        )
    return r


def _check_hook_tuple(hook, r, n):
    if not isinstance(r, (tuple, list)):
        raise TypeError("expected tuple, but hook returned '%s'" % type(r).__name__)
    if len(r) != n:
        raise RuntimeError(
            "hook '%s' has returned an incorrect number of values (got %d, but "
            "expected %d)" % (_hook_name(hook), len(r), n)
        )
    return tuple(r)


# ---------------------------------------------------------------------------------------------
# Edges


def edge(t):
    """The (node, input_nr) pair gradients for tensor ``t`` flow into; (None, 0) if none."""
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


_ACC_LOCK = threading.Lock()


def grad_accumulator(t):
    """A leaf's AccumulateGrad (created on first use); None for a view whose requires_grad is
    its base's (NOTE [view creation meta]: PyTorch gives it no accumulator), and PyTorch's
    error for a stale view."""
    ref = t._accum
    acc = ref() if ref is not None else None
    if acc is None:
        if t._basev is not None:
            if t._stale is not None:
                raise RuntimeError(view_rebase_error(t, True))
            if not t._own_rg:
                return None
        with _ACC_LOCK:  # two threads recording on one leaf must share its accumulator
            ref = t._accum
            acc = ref() if ref is not None else None
            if acc is None:
                lock = t.__dict__.get("_acc_lock")
                if lock is None:
                    lock = t._acc_lock = threading.Lock()
                acc = AccumulateGrad(t, lock)
                t._accum = weakref.ref(acc)
    return acc


# ---------------------------------------------------------------------------------------------
# The running backward (graph task) and the graph API built on it


class _Tasks(threading.local):
    stack = ()  # the graph tasks running in this thread, innermost last (reentrant backward)


TASKS = _Tasks()
_task_ids = itertools.count(1)


class GraphTask:
    """One backward call as the engine runs it: what ``will_engine_execute_node`` asks."""

    __slots__ = ("id", "deps", "roots", "execute", "captures", "accumulate", "callbacks")

    def __init__(self, deps, roots, execute, captures, accumulate):
        self.id = next(_task_ids)
        self.deps, self.roots, self.execute, self.captures = deps, roots, execute, captures
        self.accumulate = accumulate  # backward(); False: autograd.grad()
        self.callbacks = None  # NOTE [final callbacks]: engine.queue_callback's list

    def will_execute(self, node):
        if not self.accumulate and type(node) is AccumulateGrad:
            raise RuntimeError(
                "A leaf node was passed to _will_engine_execute_node but we are currently "
                "running autograd.grad(). This is currently not supported."
            )
        if node not in self.deps and node not in self.roots:
            return False  # not in this graph
        if self.execute is None:
            return True
        return node in self.execute or (self.captures is not None and node in self.captures)


def current_graph_task_id():
    """The id of the backward running in this thread, -1 outside backward."""
    return TASKS.stack[-1].id if TASKS.stack else -1


def will_engine_execute_node(node):
    """Whether the running backward executes ``node`` (or captures its gradient)."""
    if not TASKS.stack:
        raise RuntimeError(
            "_will_engine_execute_node should only be called during the backward pass"
        )
    return TASKS.stack[-1].will_execute(node)


GradientEdge = namedtuple("GradientEdge", ("node", "output_nr"))
GradientEdge.__doc__ = """The edge a gradient flows along: ``(node, output_nr)``; usable as an
``inputs`` (or ``outputs``) entry of ``autograd.grad``."""


def get_gradient_edge(tensor):
    """The ``GradientEdge`` of ``tensor``: its ``grad_fn`` and output number, or its gradient
    accumulator for a leaf (created if needed, as PyTorch)."""
    if not tensor._requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    return GradientEdge(*edge(tensor))


class _MultiHandle:
    """Removes every per-tensor hook of a ``register_multi_grad_hook``."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode="all"``: ``fn(grads)`` once per backward, after the gradient of every tensor the
    backward reaches is computed (None for the others); ``mode="any"``: ``fn(grad)`` with the
    first gradient computed for any of them in each backward.  Returns a removable handle."""
    if mode not in ("all", "any"):
        raise ValueError("Expects mode to be one of ('all', 'any') but got %s" % mode)
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        seen = set()

        def inner_any(grad):
            tid = current_graph_task_id()
            with lock:
                first = tid not in seen
                seen.add(tid)
            if first:
                fn(grad)
            return None

        return _MultiHandle(t.register_hook(inner_any) for t in tensors if t._requires_grad)

    count, buffers, expected = {}, {}, {}
    nodes = [edge(t)[0] if t._requires_grad else None for t in tensors]

    def make(i):
        def inner(grad):
            tid = current_graph_task_id()
            with lock:
                if tid not in count:
                    count[tid] = 0
                    buffers[tid] = [None] * len(tensors)
                    expected[tid] = sum(
                        1 for n in nodes if n is not None and will_engine_execute_node(n)
                    )
                buffers[tid][i] = grad
                count[tid] += 1
                done = count[tid] == expected[tid]
                if done:
                    grads = buffers.pop(tid)
                    del count[tid], expected[tid]
            if done:
                fn(grads)
            return None

        return inner

    return _MultiHandle(t.register_hook(make(i)) for i, t in enumerate(tensors) if t._requires_grad)
