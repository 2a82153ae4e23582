"""Capture: run a function once eagerly and record what it did as a replayable program.

NOTE [capture through the profiler flag]: every registry op already tests ``_flags.PROFILE``
once on its way in (NOTE [profiler flag]) and calls ``profiler.op_call``/``leaf_op`` when it is
set.  A capture sets the flag and ``_flags.CAPTURE``; those two functions hand the call to
``Capture.op``, which records it (the callable, its arguments with tensors replaced by value
references, its results) and runs it with the flag off, so the ops it calls inside are not
recorded twice.  Eager code pays nothing for this: no new test on any hot path.

What is not an op but must happen again on replay is recorded as a *call* by patching, for the
capture's duration only, the functions that do it (``start``): ``backward``/``autograd.grad``,
optimizer ``step``/``zero_grad``, a module call that runs hooks (the module runs eagerly on
replay, so its hooks fire as in eager mode), hook registrations on tensors and nodes, handle
removal, ``detach``/``requires_grad_``, Tensor's in-place methods, the creation functions,
``Module.zero_grad``, ``F.dropout``/``dropout2d`` (their masks are drawn again on replay) and
batch-norm statistics.  Reads of tensor values into Python (``item``, ``bool``, ``tolist``,
``str``, ``_version``, an op returning a Python value such as ``equal``) are *reads*, guards of
the replay (NOTE [reads are guards]); so are data-dependent result shapes and whether a
``.grad`` read is None.  In *resume mode* (NOTE [graph breaks resume]) the function runs again
and each recorded call before the point it resumes at returns what the replay made instead of
running.

A tensor the recorded work uses that no recorded event produced is a *constant*, kept by
reference (a parameter, a tensor the function closes over) -- unless it was made while the
capture ran, by code the capture does not see: then the record ends there (NOTE [a graph
break at untracked code]); what else a replay cannot reproduce (``fail``) makes the function
run eagerly, and ``explain()`` shows why.
"""

import dis
import gc
import os
import sys
import threading
import traceback

import numpy as np

from .. import _flags
from .._tensor import Tensor
from ..autograd import inplace as inplace_mod
from ..autograd.graph import Node
from ..grad_mode import STATE
from ..utils.hooks import RemovableHandle

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the nbgrad package


class Ref:
    """A reference to value ``i`` of a program (a tensor, handle or read value)."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return "v%d" % self.i


def resolve(t, vals):
    """A template with each Ref replaced by ``vals[ref.i]`` (``vals``: a list or a dict)."""
    tp = type(t)
    if tp is Ref:
        return vals[t.i]
    if tp is tuple:
        return tuple([resolve(a, vals) for a in t])
    if tp is list:
        return [resolve(a, vals) for a in t]
    if tp is dict:
        return {k: resolve(v, vals) for k, v in t.items()}
    if tp is Seq:
        return t.build(tuple([resolve(a, vals) for a in t.items]))
    return t


class Seq:
    """A template of a tuple subclass (a named tuple such as ``sort``'s result)."""

    __slots__ = ("cls", "items")

    def __init__(self, cls, items):
        self.cls = cls
        self.items = items

    def build(self, items):
        try:
            return self.cls(items)
        except TypeError:
            return self.cls(*items)

    def __repr__(self):
        return "%s%r" % (self.cls.__name__, self.items)


class Event:
    """One recorded step.  ``kind``: 'op' (a registry op: ``fn`` is what the profiler hook got),
    'call' (anything else replayed by calling it), 'read' (a value read into Python), 'fused'
    (a fused region, made by fuse.py).  ``args``/``kwargs`` are templates (tensors -> Ref),
    ``outs`` the template of the result, ``where`` the user's source line."""

    __slots__ = ("kind", "name", "fn", "args", "kwargs", "outs", "where", "guard", "value",
                 "mutates", "region", "mode")  # fmt: skip

    def __init__(self, kind, name, fn, args, kwargs, outs, where):
        self.kind = kind
        self.name = name
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.outs = outs
        self.where = where
        self.guard = False
        self.value = None
        self.mutates = ()
        self.region = None
        self.mode = grad_mode()  # no_grad / inference_mode inside the function replay too

    def __repr__(self):
        return "%s %s(%s) -> %r" % (self.kind, self.name, _fmt(self.args), self.outs)


def _fmt(t):
    if isinstance(t, tuple):
        return ", ".join(_fmt(a) for a in t)
    return repr(t) if not isinstance(t, Tensor) else "const%s" % (tuple(t.shape),)


def grad_mode():
    """The grad-mode state an event ran under (``Record.run`` sets it again)."""
    return (STATE.enabled, STATE.inference, STATE.shown)


class GraphBreak(RuntimeError):
    """``fullgraph=True`` and the function did something capture cannot follow."""


def user_line():
    """``file:line: code`` of the innermost frame outside nbgrad (for messages and explain)."""
    for fr in reversed(traceback.extract_stack()):
        if not fr.filename.startswith(_HERE):
            return "%s:%s: %s" % (fr.filename, fr.lineno, (fr.line or "").strip())
    return "<unknown>"


# NOTE [a last read needs no guard when nothing uses it]: every read is a guard (NOTE [reads
# are guards]), and a failed guard costs a Python re-run (resume mode), so ``return
# loss.item()`` at the end of every training step would resume on every call.  After a read,
# the capture watches the user's bytecode (an opcode trace of frames outside nbgrad, from the
# read to the next recorded event or the function's return): when nothing but loads, stores,
# building the result and calls into nbgrad ran -- no comparison, jump, arithmetic or other
# call that could make a value or a path from the read -- the read only passes its value on,
# so the replay reads it again without guarding it.
_PLAIN = frozenset(
    (
        "NOP RESUME CACHE EXTENDED_ARG PUSH_NULL PRECALL CALL KW_NAMES CALL_KW LOAD_FAST "
        "LOAD_FAST_CHECK LOAD_FAST_AND_CLEAR LOAD_FAST_LOAD_FAST STORE_FAST STORE_FAST_LOAD_FAST "
        "STORE_FAST_STORE_FAST LOAD_CONST RETURN_CONST LOAD_DEREF STORE_DEREF LOAD_CLOSURE "
        "LOAD_GLOBAL LOAD_NAME STORE_NAME LOAD_ATTR LOAD_METHOD BUILD_TUPLE BUILD_LIST "
        "BUILD_MAP BUILD_CONST_KEY_MAP POP_TOP COPY SWAP RETURN_VALUE DELETE_FAST"
    ).split()
)


class _TailWatch:
    """The opcode trace of NOTE [a last read needs no guard when nothing uses it]."""

    def __init__(self, outer):
        self.outer = outer  # the frame that called the captured function: not watched
        self.clean = True
        self.pending = False  # a CALL ran: it must enter Python (nbgrad's read) to stay clean
        self.frames = []
        self.prev = None

    def start(self):
        self.prev = sys.gettrace()
        if self.prev is not None:  # a debugger or coverage traces: leave it alone, guard all
            self.clean = False
            return
        sys.settrace(self._new_frame)
        f = sys._getframe(1)
        while f is not None and f is not self.outer:
            if not f.f_code.co_filename.startswith(_HERE):
                self._watch(f)
            f = f.f_back

    def stop(self):
        if self.prev is not None:
            return
        sys.settrace(None)
        for f, trace, opcodes in self.frames:
            f.f_trace_opcodes = opcodes
            f.f_trace = trace
        self.frames = []

    def _watch(self, f):
        self.frames.append((f, f.f_trace, f.f_trace_opcodes))
        f.f_trace = self._opcode
        f.f_trace_opcodes = True

    def _new_frame(self, frame, event, arg):
        self.pending = False  # the CALL entered Python code
        f = frame
        while f is not None and f is not self.outer:  # code nbgrad runs is no user code
            if f.f_code.co_filename.startswith(_HERE):
                return None
            if any(f is w for w, _, _ in self.frames):
                break
            f = f.f_back
        self._watch(frame)
        return self._opcode

    def _opcode(self, frame, event, arg):
        if event == "opcode":
            if self.pending:  # a call into C code that is not nbgrad's: it may use the value
                self.clean = False
            op = dis.opname[frame.f_code.co_code[frame.f_lasti]]
            if op not in _PLAIN:
                self.clean = False
            self.pending = op in ("CALL", "CALL_KW")
        return self._opcode


class Capture:
    """The recorder of one capture (``_flags.CAPTURE`` while it runs)."""

    def __init__(self, fullgraph=False):
        self.fullgraph = fullgraph
        self.events = []
        self.ids = {}  # id(object) -> value index
        self.keep = []  # objects whose ids are in ``ids`` (ids must not be reused)
        self.nvals = 0
        self.inside = 0  # > 0 while a recorded event runs: what it does is not recorded
        self.problem = None  # why this program cannot be replayed
        self.consts = {}  # id -> tensor used as a constant
        self.pre_existing = None  # ids of tensors alive before the capture
        self.boundary = set()  # values hooks/reads/calls see: never fused away
        self.thread = threading.get_ident()  # other threads' ops are not this function's
        self.entry_mode = grad_mode()
        self.node_hooked = set()  # values whose grad_fn has hooks: their op stays its own node
        # resume mode (NOTE [graph breaks resume] in __init__.py): the raw events the replay
        # already ran, the replay's values, the read's new value, how far the function is
        self.script = None
        self.pos = 0
        self.rvalue = None
        self.recording = True  # False: resume mode stops at the read (the rest runs eagerly)
        self.undo = None  # start's undo list
        self.outer = None  # the frame that called the captured function
        self.modules = {}  # id -> (module, training) of every module called
        self.break_at = None  # events recorded before untracked code (NOTE [a graph break...])
        self.break_why = None
        self.tail = None  # a _TailWatch since the last read, until the next recorded event

    def resume(self, script, vals, value, record=True, at_read=True):
        """Resume mode: the function runs again from the start; each recorded call up to
        ``script``'s last event (the read that saw ``value``) returns what the replay made,
        without running again; what follows is captured as usual, or with ``record`` False
        runs eagerly with nothing patched."""
        self.recording = record
        self.at_read = at_read  # the script ends in the read that saw ``value`` (not a break)
        self.script = script
        self.rvalue = value
        self.keep = list(vals)
        self.nvals = len(vals)
        for i, obj in enumerate(self.keep):
            if obj is not None:
                self.ids[id(obj)] = i

    def _replayed(self, name):
        """A call of the function in resume mode before the read: the replay's result."""
        ev = self.script[self.pos]
        if ev.name != name:
            raise RuntimeError(
                "nbgrad.compile: resuming after a graph break, the function called %s where "
                "its record has %s (%s); it must take the same path up to the read on every "
                "call" % (name, ev.name, user_line())
            )
        self.pos += 1
        self._skip_synthetic()
        if self.pos == len(self.script) and not self.recording:
            stop(self.undo)  # the rest of the function runs as eager code
        if ev.kind == "read":
            v = self.rvalue if self.at_read and self.pos == len(self.script) else ev.value
            if ev.outs is not None:
                self.keep[ev.outs.i] = v
                self.ids[id(v)] = ev.outs.i
            return v
        if ev.name != "Tensor.grad" and any(self.keep[i] is None for i in refs(ev.outs)):
            # (NOTE [a program that may resume keeps every value] in __init__.py)
            raise AssertionError("nbgrad.compile: resuming needs %s's result, not kept" % name)
        return resolve(ev.outs, self.keep)

    def _skip_synthetic(self):
        """Pass the guards after an answered call that the function does not call itself
        (shapes, whether ``.grad`` is None)."""
        while self.pos < len(self.script) and self.script[self.pos].name in _SYNTHETIC:
            self.pos += 1

    def grad_guard(self, ev, res):
        """NOTE [whether .grad is None is a guard]: Python decides on it (``if p.grad is not
        None`` in ``Module.zero_grad``, manual SGD), and it changes between calls (None on
        the first step only).  The call gets a value slot even when it returned None, so a
        replay keeps what it got and resume mode answers that; a guard compares its
        None-ness."""
        if ev.outs is None:
            ev.outs = Ref(self.nvals)
            self.nvals += 1
            self.keep.append(None)
        g = Event("read", _GRAD_NONE, _is_none, (ev.outs,), None, None, user_line())
        g.value, g.guard = res is None, True
        self.events.append(g)

    def _resuming(self):
        return self.script is not None and self.pos < len(self.script)

    # -- values ----------------------------------------------------------------------------
    def define(self, obj):
        i = self.nvals
        self.nvals += 1
        self.ids[id(obj)] = i
        self.keep.append(obj)
        return Ref(i)

    def template(self, obj):
        """``obj`` with every known tensor/handle replaced by its Ref; unknown tensors become
        constants (checked by ``_const``)."""
        t = type(obj)
        if t is tuple or t is list:
            r = [self.template(a) for a in obj]
            return tuple(r) if t is tuple else r
        if t is dict:
            return {k: self.template(v) for k, v in obj.items()}
        if isinstance(obj, tuple):
            return Seq(t, tuple(self.template(a) for a in obj))
        if t is np.ndarray:  # one a recorded call made, or one no event made (op() checks)
            i = self.ids.get(id(obj))
            return Ref(i) if i is not None else obj
        if isinstance(obj, Tensor) or t is RemovableHandle:
            i = self.ids.get(id(obj))
            if i is None:
                if t is RemovableHandle:
                    self.fail("a hook handle made outside the captured function is used")
                    return obj
                return self._const(obj)
            return Ref(i)
        if t is float or t is int:  # a value read earlier (NOTE [reads are guards])
            i = self.ids.get(id(obj))
            if i is not None and self.keep[i] is obj:
                return Ref(i)
        return obj

    def _const(self, t):
        if id(t) not in self.pre_existing:
            # NOTE [a graph break at untracked code]: the record ends before the first event
            # that uses it; a replay runs that much, then resumes (the function runs again,
            # the recorded part answered from the replay, the rest eagerly)
            why = "a tensor made by code nbgrad.compile does not record is used (%s, shape %s)"
            self.untracked(why % (user_line(), tuple(t.shape)))
        self.consts[id(t)] = t
        return t

    def untracked(self, why):
        """The record ends before the event being recorded (NOTE [a graph break at untracked
        code]); ``fullgraph=True`` raises instead."""
        if self.fullgraph:
            self.fail(why)
        if self.break_at is None:
            self.break_at, self.break_why = len(self.events), why

    def result(self, res):
        """Define each tensor/handle in ``res`` not known yet (an in-place op returns a known
        one: it keeps its Ref)."""
        t = type(res)
        if t is tuple or t is list:
            r = [self.result(a) for a in res]
            return tuple(r) if t is tuple else r
        if t is dict:  # a module's dict output
            return {k: self.result(v) for k, v in res.items()}
        if t is np.ndarray:  # an array a recorded call made (batch statistics)
            i = self.ids.get(id(res))
            return Ref(i) if i is not None else self.define(res)
        if isinstance(res, tuple):
            return Seq(t, tuple(self.result(a) for a in res))
        if isinstance(res, Tensor) or t is RemovableHandle:
            i = self.ids.get(id(res))
            return Ref(i) if i is not None else self.define(res)
        return res

    def fail(self, reason):
        if self.fullgraph:
            raise GraphBreak("nbgrad.compile(fullgraph=True): %s" % reason)
        if self.problem is None:
            self.problem = reason

    # -- events ----------------------------------------------------------------------------
    def unrecorded(self, fn, args, kwargs, name="?"):
        """Run ``fn`` with nothing it does recorded (the flag off, ``inside`` raised).  What
        raises is not recorded, and a replay cannot stand in for the ``except`` that caught it:
        such a function runs eagerly.  So does one that records under ``saved_tensors_hooks``
        (their pack/unpack calls are not replayed)."""
        if _flags._hook_contexts:
            self.fail("a saved_tensors_hooks context is open (%s)" % user_line())
        self.inside += 1
        prev, _flags.PROFILE = _flags.PROFILE, False
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            self.fail("%s raised %s during the capture (%s)" % (name, type(e).__name__,
                                                                user_line()))  # fmt: skip
            raise
        finally:
            _flags.PROFILE = prev
            self.inside -= 1

    def op(self, name, fn, args, kwargs):
        """A registry op called by the function (profiler.op_call / leaf_op)."""
        if self.inside or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        if self._resuming():
            return self._replayed(name)
        targs = self.template(args)
        tkw = self.template(kwargs) if kwargs else kwargs
        if leaves((targs, tkw), lambda a: type(a) is np.ndarray):
            # an array no recorded event made (state computed by unrecorded code): a replay
            # would reuse this one -- NOTE [a graph break at untracked code]
            self.untracked("an array made by code nbgrad.compile does not record is passed "
                           "to %s (%s)" % (name, user_line()))  # fmt: skip
        before = [(t, t._vc[0]) for t in _tensors(args) + _tensors(kwargs)]
        res = self.unrecorded(fn, args, kwargs, name)
        if type(res) in (bool, int, float):  # equal, allclose: a value read into Python
            v = self._read_event(name, fn, targs, tkw, res)
            self.events[-1].guard = True  # (the opcode watch starts after it: always guard)
            return v
        self.end_tail()
        ev = Event("op", name, fn, targs, tkw, self.result(res), None)
        ev.mutates = self._mutated(before)
        self.events.append(ev)
        if name in _DATA_SHAPED or (name == "getitem" and _bool_index(args)):
            # NOTE [data-dependent shapes are guards]: Python may read this result's shape
            # (``x.nonzero().shape[0]``) and bake it into later calls; a replay compares it
            # and breaks the graph where it differs, as for a read
            where = user_line()
            for r, t in zip(refs(ev.outs), _tensors(res)):
                g = Event("read", _SHAPE, _shape, (Ref(r),), None, None, where)
                g.value, g.guard = tuple(t.shape), True
                self.events.append(g)
        return res

    def _mutated(self, before):
        """The values whose version moved: written in place by the event.  (A constant made
        during the capture already failed in _const; one from before is modified on every
        replay as in eager mode.)"""
        return tuple(self.ids[id(t)] for t, v in before if t._vc[0] != v and id(t) in self.ids)

    def call(self, name, fn, args, kwargs, boundary=True):
        """Anything else replayed by calling it again (see the module docstring)."""
        if self.inside or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        if self._resuming():
            return self._replayed(name)
        targs = self.template(args)
        tkw = self.template(kwargs) if kwargs else kwargs
        if boundary:
            for t in _tensors(args) + _tensors(kwargs):
                i = self.ids.get(id(t))
                if i is not None:
                    self.boundary.add(i)
        before = [(t, t._vc[0]) for t in _tensors(args) + _tensors(kwargs)]
        res = self.unrecorded(fn, args, kwargs, name)
        self.end_tail()
        ev = Event("call", name, fn, targs, tkw, self.result(res), None)
        ev.mutates = self._mutated(before)
        self.events.append(ev)
        return res

    def read(self, name, fn, tensor, args):
        """A tensor value read into Python (NOTE [reads are guards])."""
        if self.inside or threading.get_ident() != self.thread:
            return fn(tensor, *args)
        if self._resuming():
            return self._replayed(name)
        if self.fullgraph:  # before reading
            raise _read_break(name)
        targs = self.template((tensor,) + tuple(args))
        v = self.unrecorded(fn, (tensor,) + tuple(args), {}, "Tensor." + name)
        ev = self._read_event(name, fn, targs, None, v)
        # a value the template cannot refer to (a string, a list, an array), or one nbgrad
        # read for the user (inside another function): the opcode watch cannot tell where it
        # went -- always a guard
        entry = sys._getframe(1)
        while entry.f_back is not None and entry.f_back.f_code.co_filename.startswith(_HERE):
            entry = entry.f_back
        if type(v) not in (float, int, bool) or entry.f_code.co_filename != __file__:
            self.events[-1].guard = True
        return ev

    def _read_event(self, name, fn, targs, tkw, v):
        if self.fullgraph:
            raise _read_break(name)
        ev = Event("read", name, fn, targs, tkw, None, user_line())
        ev.value = v
        for i in refs((targs, tkw)):
            self.boundary.add(i)
        if type(v) in (float, int, bool):  # a returned read is a fresh read on replay
            ev.outs = self.define(v) if not _interned(v) else None
        self.events.append(ev)
        if self.tail is None and self.outer is not None:
            self.tail = _TailWatch(self.outer)
            self.tail.start()
        return v

    def end_tail(self):
        """A recorded event after reads (they stay guards), or the function returned: stop
        watching; whether the reads since the last recorded event only passed values on."""
        tail, self.tail = self.tail, None
        if tail is None:
            return True
        tail.stop()
        return tail.clean

    def node_hook(self, kind, orig, node, fn, args, kwargs):
        """``grad_fn.register_hook``/``register_prehook`` on a recorded value's node."""
        if self.inside:
            return orig(node, fn, *args, **kwargs)
        if self._resuming():
            return self._replayed(kind)
        owner = None
        for obj in self.keep:
            if isinstance(obj, Tensor) and obj._grad_fn is node:
                owner = obj
                break
        if owner is None:
            self.fail("a hook is registered on a node that is no recorded tensor's grad_fn")
            return orig(node, fn, *args, **kwargs)
        self.node_hooked.add(self.ids[id(owner)])
        return self.call(kind, _node_hook_of(kind), (owner, fn) + tuple(args), kwargs)


def _node_hook_of(kind):
    def register(t, fn, *args, **kwargs):
        return getattr(t.grad_fn, kind)(fn, *args, **kwargs)

    register.__name__ = "grad_fn." + kind
    return register


def _interned(v):
    return v is True or v is False or (type(v) is int and -5 <= v <= 256)


def leaves(obj, keep):
    """The leaves of a nested tuple/list/dict/Seq ``obj`` for which ``keep(leaf)`` holds."""
    t = type(obj)
    if t is Seq:
        obj, t = obj.items, tuple
    if t is tuple or t is list or t is dict:
        out = []
        for a in obj.values() if t is dict else obj:
            out.extend(leaves(a, keep))
        return out
    return [obj] if keep(obj) else []


def _tensors(obj):
    return leaves(obj, lambda a: isinstance(a, Tensor))


def refs(template):
    """The value indices a template refers to."""
    return [r.i for r in leaves(template, lambda a: type(a) is Ref)]


# -- patching for the capture's duration -----------------------------------------------------

_READS = ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__",
          "__repr__", "__str__", "__format__")  # fmt: skip
_TENSOR_CALLS = ("register_hook", "retain_grad", "register_post_accumulate_grad_hook",
                 "detach", "detach_", "requires_grad_", "backward")  # fmt: skip
_CREATION = ("tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange",
             "linspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like",
             "rand_like", "randn_like", "as_tensor", "from_numpy")  # fmt: skip


def _read_patch(cap, name, orig):
    def patched(self, *args):
        return cap.read(name, orig, self, args)

    return patched


def _call_patch(cap, name, orig):
    def patched(*args, **kwargs):
        return cap.call(name, orig, args, kwargs)

    patched.__name__ = getattr(orig, "__name__", name)
    return patched


def _node_patch(cap, kind, orig):
    def patched(self, fn, *args, **kwargs):
        return cap.node_hook(kind, orig, self, fn, args, kwargs)

    return patched


def _read_break(name):
    return GraphBreak(
        "nbgrad.compile(fullgraph=True): graph break at Tensor.%s() (data-dependent), at %s"
        % (name, user_line())
    )


def _inplace_methods():
    """Tensor's in-place methods (``add_``, ``zero_``, ``uniform_``, ``__setitem__``,
    ``__iadd__``, ...): recorded as calls, so the write happens again on replay (only the
    out-of-place op inside them reaches the profiler flag)."""
    return tuple(
        n
        for n, v in Tensor.__dict__.items()
        if callable(v)
        and n not in _TENSOR_CALLS
        and (
            (n.endswith("_") and not n.startswith("_"))
            or n == "__setitem__"
            or (n.startswith("__i") and n[3:-2] in _BINARY_DUNDERS)
        )
    )


_BINARY_DUNDERS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                   "or", "xor", "lshift", "rshift")  # fmt: skip


def _out_patch(cap, orig):
    def patched(res, out, *args, **kwargs):
        if out is not None and not cap.inside and not cap._resuming():
            cap.fail("an out= argument is not recorded (%s)" % user_line())
        return orig(res, out, *args, **kwargs)

    return patched


def _remove_patch(cap, orig):
    def patched(self):
        if cap.inside or id(self) not in cap.ids:
            return orig(self)
        return cap.call("handle.remove", orig, (self,), {})

    return patched


def start(cap):
    """Install the patches and the flags; returns the undo list for ``stop``."""
    import nbgrad  # cycle: the top-level namespace holds the creation functions we patch

    from .. import autograd, creation  # cycle: compile sits above the surface it patches
    from ..nn import functional  # cycle: compile sits above nn
    from ..nn.modules.module import Module  # cycle: compile sits above nn
    from ..optim.optimizer import Optimizer  # cycle: compile sits above optim

    undo = []

    def patch(owner, name, new):
        undo.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, new)

    for n in _READS:
        patch(Tensor, n, _read_patch(cap, n, getattr(Tensor, n)))
    for n in _TENSOR_CALLS + _inplace_methods():
        patch(Tensor, n, _call_patch(cap, "Tensor." + n, getattr(Tensor, n)))
    # an out= write happens after the recorded op returns (registry's public functions)
    from ..ops import pointwise_fns, registry  # cycle: compile sits above ops

    for mod, n in ((registry, "write_out"), (pointwise_fns, "write_out"),
                   (functional, "_write_out")):  # fmt: skip
        patch(mod, n, _out_patch(cap, getattr(mod, n)))
    for n in ("register_hook", "register_prehook"):
        patch(Node, n, _node_patch(cap, n, getattr(Node, n)))
    grad = Tensor.__dict__["grad"]

    def grad_get(t):
        if cap.inside:
            return grad.fget(t)
        n = len(cap.events)
        res = cap.call("Tensor.grad", grad.fget, (t,), {})
        if len(cap.events) > n:  # recorded: NOTE [whether .grad is None is a guard]
            cap.grad_guard(cap.events[-1], res)
        return res

    def grad_set(t, value):
        if cap.inside:
            return grad.fset(t, value)
        return cap.call("Tensor.grad=", grad.fset, (t, value), {})

    patch(Tensor, "grad", property(grad_get, grad_set, grad.fdel))
    version = Tensor.__dict__["_version"]

    def version_get(t):  # a value read into Python: resume mode answers the capture's value
        if cap.inside:
            return version.fget(t)
        return cap.read("_version", version.fget, t, ())

    patch(Tensor, "_version", property(version_get))
    patch(RemovableHandle, "remove", _remove_patch(cap, RemovableHandle.remove))
    for n in ("backward", "grad"):
        patch(autograd, n, _call_patch(cap, "autograd." + n, getattr(autograd, n)))
    for mod in (nbgrad, creation):
        for n in _CREATION:
            f = mod.__dict__.get(n)
            if f is not None:
                patch(mod, n, _call_patch(cap, n, f))
    patch(
        Module, "_call_with_hooks", _call_patch(cap, "module_with_hooks", Module._call_with_hooks)
    )
    # like Optimizer.zero_grad: one call, not a Python decision on each ``.grad``
    patch(Module, "zero_grad", _call_patch(cap, "Module.zero_grad", Module.zero_grad))
    module_call = Module.__call__

    def called(m, *args, **kwargs):  # NOTE [a module's training flag is a guard]
        if not cap.inside:
            cap.modules.setdefault(id(m), (m, m.training))
        return module_call(m, *args, **kwargs)

    patch(Module, "__call__", called)
    for n in _RANDOM:  # their masks come from the generator, not from a recorded op
        patch(functional, n, _call_patch(cap, "F." + n, getattr(functional, n)))
    # batch statistics: arrays computed (and running buffers updated) outside any op
    from ..ops.nn import norm  # cycle: compile sits above ops

    patch(norm, "batch_norm_stats", _call_patch(cap, "batch_norm_stats", norm.batch_norm_stats))
    # nn.functional's in-place activations (``F.elu(x, inplace=True)``, relu6, leaky_relu, ...)
    # write through autograd/inplace.py like Tensor's in-place methods: a call, replayed
    patch(inplace_mod, "inplace", _call_patch(cap, "inplace", inplace_mod.inplace))
    stack = [Optimizer]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        for n in ("step", "zero_grad"):
            if n in cls.__dict__:
                patch(cls, n, _call_patch(cap, "%s.%s" % (cls.__name__, n), cls.__dict__[n]))
    cap.outer = sys._getframe(1)
    if cap.recording:  # (resume mode without recording checks no constants)
        cap.pre_existing = {id(o): o for o in gc.get_objects() if issubclass(type(o), Tensor)}
    cap.undo = undo
    undo.append((None, _flags.PROFILE, _flags.CAPTURE))
    _flags.PROFILE = True
    _flags.CAPTURE = cap
    return undo


_DATA_SHAPED = ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
                "repeat_interleave")  # fmt: skip
_SHAPE = "<shape>"  # the name of a shape guard (NOTE [data-dependent shapes are guards])
_GRAD_NONE = "<grad is None>"  # NOTE [whether .grad is None is a guard]
_SYNTHETIC = (_SHAPE, _GRAD_NONE)


def _is_none(v):
    return v is None


def _shape(t):
    return tuple(t.shape)


def _bool_index(args):
    return any(t._dtype.name == "bool" for t in _tensors(args))


_RANDOM = ("dropout", "dropout2d")  # nn.functional's random draws, replayed as calls
_MISSING = object()


def stop(undo):
    """Undo ``start`` (again: a no-op)."""
    while undo:
        owner, name, old = undo.pop()
        if owner is None:
            _flags.PROFILE, _flags.CAPTURE = name, old
        elif old is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, old)
