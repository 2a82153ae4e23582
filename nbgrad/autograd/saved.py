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

__all__ = ["saved_tensors_hooks"]

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class _Hooks(threading.local):
    """The open ``saved_tensors_hooks``: per thread, as PyTorch's (NOTE [mode state])."""

    stack = ()  # (pack, unpack) pairs, innermost last


HOOKS = _Hooks()


class saved_tensors_hooks:
    """Context manager: ``pack(tensor)`` at save time, ``unpack(packed)`` in backward."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
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
