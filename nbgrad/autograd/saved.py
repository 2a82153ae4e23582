"""Saved tensors: what a node keeps for its backward, the version check that guards it, and
``saved_tensors_hooks`` (re-exported by autograd/graph.py, its public home as in PyTorch).

NOTE [saved tensor lifetime]: an op saves inputs by reference (no cycle) and its output as
(array, version counter) only, rebuilding a Tensor whose grad_fn is the node on unpack; holding
the output Tensor would make out -> node -> out a reference cycle.
"""

import re
import threading

from .. import _flags
from .._tensor import Tensor
from ..dtypes import _FROM_NP
from ..grad_mode import STATE as GRAD_MODE
from .anomaly_mode import STATE as ANOMALY
from .dual import restore_tangent

__all__ = [
    "saved_tensors_hooks",
    "disable_saved_tensors_hooks",
    "allow_mutation_on_saved_tensors",
]

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class _Hooks(threading.local):
    """The open ``saved_tensors_hooks``: per thread, as PyTorch's (NOTE [mode state])."""

    stack = ()  # (pack, unpack) pairs, innermost last
    disabled = None  # disable_saved_tensors_hooks' error message


HOOKS = _Hooks()


class saved_tensors_hooks:
    """Context manager: ``pack(tensor)`` at save time, ``unpack(packed)`` in backward."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if HOOKS.disabled is not None:
            raise RuntimeError(HOOKS.disabled)
        HOOKS.stack += ((self.pack_hook, self.unpack_hook),)
        _flags.count_hook_context(1)
        return self

    def __exit__(self, *exc):
        HOOKS.stack = HOOKS.stack[:-1]
        _flags.count_hook_context(-1)
        return False


def _pack(t):
    """The innermost pack hook's value for ``t``, kept with its unpack hook."""
    pack, unpack = HOOKS.stack[-1]
    return (pack(t), unpack)


class _Saved:
    """What saved inputs and outputs share: the version check."""

    __slots__ = ()

    def check(self, node):
        if self.vc[0] != self.version:
            raise version_error(self, node)


class SavedTensor(_Saved):
    """A saved input: the tensor itself plus the version it had when saved."""

    __slots__ = ("tensor", "version", "hooked")
    is_output = False

    def __init__(self, t):
        if t._inference and not GRAD_MODE.inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around "
                "you can make a clone to get a normal tensor and use it in "
                "autograd."
            )
        self.tensor = t
        self.version = t._vc[0]
        self.hooked = None
        if _flags.TAPS and HOOKS.stack:  # NOTE [one flag]
            self.hooked = _pack(t)
            self.tensor = None

    @property
    def vc(self):
        return self.tensor._vc

    @property
    def data(self):
        return self.tensor._data if self.tensor is not None else None

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


class SavedOutput(_Saved):
    """A saved output: (array, version counter) only -- see NOTE [saved tensor lifetime]."""

    __slots__ = ("data", "vc", "version", "hooked", "fw")
    is_output = True
    tensor = None

    def __init__(self, t):
        self.data = t._data
        self.vc = t._vc
        self.version = t._vc[0]
        self.fw = None  # (dual level generation, tangent): forward-over-reverse needs it
        self.hooked = None
        if _flags.TAPS and HOOKS.stack:
            self.hooked = _pack(t)
            self.data = None

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
        t = Tensor._make(self.data, node, 0, self.vc)
        if self.fw is not None:
            restore_tangent(t, self.fw)
        return t


def version_error(saved, node):
    """PyTorch's "modified by an inplace operation" error for a saved tensor."""
    shape = list(saved.data.shape) if saved.data is not None else []
    dt = _FROM_NP[saved.data.dtype]._legacy if saved.data is not None else "Float"
    if saved.is_output:
        producer = node
        nr = 0
    else:
        t = saved.tensor
        producer = t.grad_fn if t is not None else None
        nr = t._output_nr if t is not None else 0
    where = ""
    if producer is not None:
        name = producer.name()
        if not name.startswith("torch::"):
            name = re.sub(r"Backward\d*$", "", name)
        where = ", which is output %d of %s," % (nr, name)
    hint = (
        "Hint: the backtrace further above shows the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!"
        if ANOMALY.enabled
        else "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.%sTensor %s]%s is at version %d; expected version %d instead. %s"
        % (dt, shape, where, saved.vc[0], saved.version, hint)
    )


class disable_saved_tensors_hooks:
    """Context manager (and decorator): entering ``saved_tensors_hooks`` inside it raises
    ``RuntimeError(error_message)``; hooks already open keep working (PyTorch)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._prev = HOOKS.disabled
        HOOKS.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        HOOKS.disabled = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


# NOTE [mutation on saved tensors]: inside ``allow_mutation_on_saved_tensors`` every saved
# tensor goes through a pack hook that keeps the original; an in-place op (``check_inplace``
# calls ``MUTATION[-1]`` first) clones each kept original sharing memory with the tensor it is
# about to write, and backward unpacks the clone: the value at save time, with no version
# error.  Unpacking after the context exited is PyTorch's error.  Out-of-place ``out=`` writes
# are not intercepted (nor are they in PyTorch).
MUTATION = []  # the open context's before-mutation callback (at most one: no nesting)


class _AllowMutationOnSavedContext:
    """What ``allow_mutation_on_saved_tensors`` yields: the originals and the clones."""

    def __init__(self):
        self.original = {}  # handle id -> (handle, tensor)
        self.cloned = {}  # handle id -> clone
        self.closed = False

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self.closed = True

    def pack(self, t):
        handle = _Handle()
        self.original[id(handle)] = (handle, t)
        return self, handle

    @staticmethod
    def unpack(packed):
        ctx, handle = packed
        if ctx.closed:
            raise AssertionError(
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                "in which the graph was originally recorded."
            )
        c = ctx.cloned.get(id(handle))
        return c if c is not None else ctx.original[id(handle)][1]

    def before_mutation(self, t):
        import numpy as np

        a = t._data
        for key, (handle, orig) in list(self.original.items()):
            if orig is not None and np.may_share_memory(orig._data, a):
                self.cloned[key] = Tensor._make(orig._data.copy())  # below autograd, as PyTorch
                self.original[key] = (handle, None)


class _Handle:
    __slots__ = ("__weakref__",)


class allow_mutation_on_saved_tensors:
    """Context manager under which tensors saved for backward may be modified in place: they
    are cloned on mutation, so backward uses the values they had when saved.  Run the forward
    and the backward inside the same context (NOTE [mutation on saved tensors])."""

    def __enter__(self):
        if MUTATION:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        self.ctx = _AllowMutationOnSavedContext()
        self._hooks = saved_tensors_hooks(self.ctx.pack, self.ctx.unpack)
        self._hooks.__enter__()
        MUTATION.append(self.ctx.before_mutation)
        return self.ctx

    def __exit__(self, *exc):
        MUTATION.remove(self.ctx.before_mutation)
        self._hooks.__exit__(*exc)
        self.ctx.clear()
        return False
