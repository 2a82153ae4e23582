"""Graph objects: ``Node`` (what ``grad_fn`` is), ``AccumulateGrad``, saved tensors.

No op-specific code here: a registry op's node class only names itself and calls its OpDef.
"""
import itertools
import weakref

from ..utils.hooks import HookDict, RemovableHandle

__all__ = ["Node", "AccumulateGrad", "saved_tensors_hooks"]

_seq = itertools.count()
next_seq = _seq.__next__

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class Node:
    """A backward function.  ``next_functions`` holds one ``(node, input_nr)`` per input slot.

    Hook storage (all ``None`` until used, so a node without hooks costs one test):
      _tensor_hooks   {output_nr: HookDict}  Tensor.register_hook on this node's outputs
      _retain         {output_nr: weakref}   retain_grad() captures (run after tensor hooks)
      _pre_hooks      HookDict               register_prehook(fn(grad_outputs))
      _post_hooks     HookDict               register_hook(fn(grad_inputs, grad_outputs))
    """

    # Rarely-set fields are class-level defaults that an instance overrides in its __dict__
    # only when used, so creating a node sets three slots (NOTE [per-op cost]).
    __slots__ = ("next_functions", "_seq", "_in_meta", "__dict__", "__weakref__")
    _name = None
    _tensor_hooks = _retain = _pre_hooks = _post_hooks = _metadata = _trace = None

    def __init__(self, next_functions=(), in_meta=()):
        self.next_functions = next_functions
        self._in_meta = in_meta          # (shape, dtype) per slot: the engine sums/casts to it
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
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def register_hook(self, fn):
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def _register_tensor_hook(self, output_nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        d = self._tensor_hooks.get(output_nr)
        if d is None:
            d = self._tensor_hooks[output_nr] = HookDict()
        h = RemovableHandle(d)
        d[h.id] = fn
        return h

    def __repr__(self):
        return "<%s object at %#x>" % (self.name().rsplit("::", 1)[-1], id(self))


class AccumulateGrad(Node):
    """Leaf sink: runs the leaf's tensor hooks, accumulates into ``.grad``, then post hooks."""

    __slots__ = ("variable",)
    _name = "torch::autograd::AccumulateGrad"

    def __init__(self, variable):
        Node.__init__(self, (), ())
        self._seq = float("inf")  # run as soon as ready (PyTorch uses UINT64_MAX)
        self.variable = variable

    def apply(self, grads):
        from .engine import accumulate_into_leaf
        accumulate_into_leaf(self.variable, grads[0])
        return ()


# ---------------------------------------------------------------------------------------------
# Saved tensors.  NOTE [saved tensor lifetime]: an op saves inputs by reference (no cycle) and
# its output as (array, version counter) only, rebuilding a Tensor whose grad_fn is the node on
# unpack; holding the output Tensor would make out -> node -> out a reference cycle.

class SavedTensor:
    """A saved input: the tensor itself plus the version it had when saved."""

    __slots__ = ("tensor", "version", "hooked")
    is_output = False

    def __init__(self, t):
        if t._inference:
            _inference_error(t)
        self.tensor = t
        self.version = t._vc[0]
        self.hooked = None
        if _saved_hooks.stack:
            pack, unpack = _saved_hooks.stack[-1]
            self.hooked = (pack(t), unpack)
            self.tensor = None

    @property
    def vc(self):
        return self.tensor._vc

    @property
    def data(self):
        return self.tensor._data if self.tensor is not None else None

    def check(self, node):
        if self.tensor._vc[0] != self.version:
            from .._tensor import version_error
            raise version_error(self, node)

    def array(self, node):
        if self.hooked is not None:
            return self.unpack(node)._data
        t = self.tensor
        if t._vc[0] != self.version:
            self.check(node)
        return t._data

    def unpack(self, node):
        if self.hooked is not None:
            return self.hooked[1](self.hooked[0])
        t = self.tensor
        if t._vc[0] != self.version:
            self.check(node)
        return t


def _inference_error(t):
    from ..grad_mode import STATE
    if not STATE.inference:
        raise RuntimeError("Inference tensors cannot be saved for backward. To work around you "
                           "can make a clone to get a normal tensor and use it in autograd.")


class SavedOutput:
    """A saved output: (array, version counter) only -- see NOTE [saved tensor lifetime]."""

    __slots__ = ("data", "vc", "version", "hooked", "fw")
    is_output = True
    tensor = None

    def __init__(self, t):
        self.data = t._data
        self.vc = t._vc
        self.version = t._vc[0]
        self.fw = None      # (dual level generation, tangent): forward-over-reverse needs it
        self.hooked = None
        if _saved_hooks.stack:
            pack, unpack = _saved_hooks.stack[-1]
            self.hooked = (pack(t), unpack)
            self.data = None

    def check(self, node):
        if self.vc[0] != self.version:
            from .._tensor import version_error
            raise version_error(self, node)

    def array(self, node):
        if self.hooked is not None:
            return self.unpack(node)._data
        if self.vc[0] != self.version:
            self.check(node)
        return self.data

    def unpack(self, node):
        if self.hooked is not None:
            return self.hooked[1](self.hooked[0])
        if self.vc[0] != self.version:
            self.check(node)
        from .._tensor import Tensor
        t = Tensor._make(self.data, node, 0, self.vc)
        if self.fw is not None:
            from .forward_ad import restore_tangent
            restore_tangent(t, self.fw)
        return t


class _SavedHooks:
    stack = []


_saved_hooks = _SavedHooks()


class saved_tensors_hooks:
    """Context manager: ``pack(tensor)`` at save time, ``unpack(packed)`` in backward."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _saved_hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _saved_hooks.stack.pop()
        return False


def edge(t):
    """The (node, input_nr) pair gradients for tensor ``t`` flow into; (None, 0) if none."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


def grad_accumulator(t):
    ref = t._accum
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accum = weakref.ref(acc)
    return acc
