"""Whole-step lowering of small scalar graphs: forward and backward in one Numba call.

When every tensor a captured step computes is 0-d (or a short vector that only ``stack``,
``softmax`` and ``unbind`` pass between 0-d values), the per-op cost of even a replay (a Python
call and a node per op, the engine's loop) dwarfs the arithmetic.  Such a record is lowered to
a *tape*: an int64 array of instructions ``(code, out, a, b)`` over one array of values, run
forward and then backward by one generated ``njit`` interpreter (kernels/build.py,
``tape_interpreter``) whose cases are the registry's formula and partial strings, one per
(op, attributes) the step uses, plus a softmax block.  A straight-line function per step was
tried first: Numba took 320 s to compile the 1,000-op graph; the interpreter compiles once per
set of ops (about a second) and the tape is data.  The replay calls it once and accumulates
the leaves' gradients as ``AccumulateGrad`` does.

NOTE [select in the tape]: the backward skips an instruction no gradient reached (a ``seen``
flag per value), as the engine never runs a node without a gradient; so a zero gradient never
meets an infinite partial.

A small elementwise step (every computed value of one shape of at most ``_MAX_ELEMENTS``
elements, leaves of that shape read element by element, ending in ``sum()`` and its
``backward()``) is the same tape run once per element: ``load`` rows carry a stride.  Leaves
are constant tensors (parameters, globals) or the function's arguments: the ``whole_step``
event passes this call's leaves to ``ScalarProgram.backward``.

Lowered only when nothing can observe the difference (``lower`` returns None otherwise): the
step ends in one ``backward()`` of a 0-d value with no arguments, no value escapes (the step
returns no tensor), the leaves have no hooks and no history, and every event is one of: a
pointwise op on 0-d operands of the leaves' float dtype, ``unbind``/``stack``/``softmax`` along
dim 0 of 1-D values, ``backward()``, and ``.grad`` assignments.
"""

import numpy as np

from .._tensor import Tensor
from ..kernels.build import tape_interpreter
from ..ops.formula import partials_of
from .capture import Event, Ref, Seq, refs
from .fuse import _operands, _subst

_FLOATS = ("float32", "float64")
_MAX_ELEMENTS = 1024  # vector mode above this: the fused loop kernels are faster


class _NotLowerable(Exception):
    pass


class ScalarProgram:
    """A lowered step: the tape, its constants, and the leaves it reads."""

    def __init__(self, leaves, prog, idx, load, consts, nvals, root, fn, src, dtype, nel):
        self.nel = nel  # elements: the program runs once per element (1: a scalar step)
        self.leaves = leaves  # at the capture: constants, and arguments (passed to backward)
        self.prog, self.idx, self.load = prog, idx, load
        self.consts = consts  # (slot, value) preset in every run
        self.nvals = nvals
        self.root = root
        self.fn = fn
        self.src = src
        self.np = np.dtype(dtype)
        self.sizes = [t._data.size for t in leaves]

    def explain(self):
        return "whole-step tape: %d instructions over %d values, %d leaf tensor(s)\n%s" % (
            self.prog.shape[0], self.nvals, len(self.leaves), self.src)  # fmt: skip

    def backward(self, root, *leaves):
        """Replaces ``root.backward()``: run the tape, accumulate into ``leaves`` (this call's
        tensors for the capture's ``self.leaves``: constants, or the function's arguments)."""
        for t in leaves:
            if t._hooks or t._post_acc_hooks or t._grad_fn is not None:
                raise RuntimeError("nbgrad.compile: a leaf of a lowered step changed")
        v = np.empty(self.nvals, self.np)
        for slot, c in self.consts:
            v[slot] = c
        lv = np.concatenate([t._data.reshape(-1) for t in leaves])
        gl = self.fn(self.prog, self.idx, self.load, lv, v, self.root, self.nel)
        start = 0
        for t, n in zip(leaves, self.sizes):
            g = gl[start : start + n].reshape(t.shape)
            start += n
            if not t._requires_grad:
                continue
            old = t.grad
            if old is None:
                t.grad = Tensor._make(g.copy() if len(leaves) > 1 else g)
            else:
                np.add(old._data, g, out=old._data)
                old._vc[0] += 1


def lower(cap, out, ninputs):
    """``(events, ScalarProgram)`` replacing ``cap``'s record, or None when it does not
    qualify (see the module docstring).  Values below ``ninputs`` are the arguments."""
    if refs(out):
        return None
    try:
        return _lower(cap, ninputs)
    except _NotLowerable:
        return None


def _lower(cap, ninputs):
    vals = cap.keep
    tmpls = []  # per leaf: the tensor (a constant) or the argument's Ref
    slot_of = {}  # value index -> slot, or list of slots for a vector
    consts = []
    kinds, kind_of = [], {}
    prog, idx, load = [], [], []
    leaves, leaf_base = [], {}
    nslots = [0]
    dtype = None
    root = backward_at = None
    shape = None  # vector mode: every computed value has this shape, one program per element
    sums = {}  # value index -> slot summed (vector mode: the root of the backward)

    def leaf(a):
        """A leaf operand (a constant tensor or an argument's Ref): its base in the leaves'
        concatenated values."""
        t = vals[a.i] if isinstance(a, Ref) else a
        if t._grad_fn is not None or type(t._data) is not np.ndarray:
            raise _NotLowerable
        check(t)
        if id(t) not in leaf_base:
            leaf_base[id(t)] = sum(x._data.size for x in leaves)
            leaves.append(t)
            tmpls.append(a)
        return leaf_base[id(t)]

    def is_arg(a):
        return isinstance(a, Ref) and a.i < ninputs and isinstance(vals[a.i], Tensor)

    def new_slot():
        nslots[0] += 1
        return nslots[0] - 1

    def check(t):
        nonlocal dtype
        if type(t._data) is not np.ndarray or t._dtype.name not in _FLOATS:
            raise _NotLowerable
        if dtype is None:
            dtype = t._dtype.name
        elif dtype != t._dtype.name:
            raise _NotLowerable

    def scalar(a):
        if isinstance(a, Ref) and not is_arg(a):
            s = slot_of.get(a.i)
            if type(s) is not int:
                raise _NotLowerable
            return s
        if isinstance(a, (Tensor, Ref)):  # vector mode: a leaf read element by element
            t = vals[a.i] if isinstance(a, Ref) else a
            if shape is None or tuple(t.shape) != shape or not t._data.flags.c_contiguous:
                raise _NotLowerable
            s = new_slot()
            load.append((leaf(a), s, 1))
            return s
        if type(a) in (int, float):
            s = new_slot()
            consts.append((s, float(a)))
            return s
        raise _NotLowerable

    for n, ev in enumerate(cap.events):
        if backward_at is not None and ev.kind != "call":
            raise _NotLowerable
        if ev.kind == "op":
            got = _operands(ev)
            if got is not None:
                op, operands, attrs = got
                outv = vals[ev.outs.i] if isinstance(ev.outs, Ref) else None
                if outv is None or ev.mutates or len(operands) > 2:
                    raise _NotLowerable
                if outv.ndim:  # vector mode: all of one small shape, no 0-d values besides
                    if shape is None and not slot_of and 0 < outv.numel() <= _MAX_ELEMENTS:
                        shape = tuple(outv.shape)
                    if tuple(outv.shape) != shape:
                        raise _NotLowerable
                    for x in operands:
                        if isinstance(x, Ref) and tuple(vals[x.i].shape) != shape:
                            raise _NotLowerable
                elif shape is not None:
                    raise _NotLowerable
                check(outv)
                if not all(type(v) in (int, float) for v in attrs):
                    raise _NotLowerable
                key = (op.name, attrs, tuple(type(a) not in (int, float) for a in operands))
                code = kind_of.get(key)
                if code is None:
                    code = kind_of[key] = len(kinds)
                    kinds.append(_kind(op, attrs, operands))
                a = scalar(operands[0])
                b = scalar(operands[1]) if len(operands) > 1 else a
                o = slot_of[ev.outs.i] = new_slot()
                prog.append((code, o, a, b))
                continue
            if ev.name == "sum" and shape is not None and len(ev.args) == 1 and not ev.kwargs:
                src = ev.args[0]
                if not isinstance(src, Ref) or type(slot_of.get(src.i)) is not int:
                    raise _NotLowerable
                sums[ev.outs.i] = slot_of[src.i]
                continue
            if shape is not None:
                raise _NotLowerable
            if ev.name == "unbind" and ev.args[1:] in ((), (0,)) and not ev.kwargs:
                src = ev.args[0]
                if isinstance(src, Ref) and not is_arg(src):
                    vec = slot_of.get(src.i)
                    if type(vec) is not list:
                        raise _NotLowerable
                else:
                    t = vals[src.i] if isinstance(src, Ref) else src
                    if not isinstance(t, Tensor) or t.ndim != 1:
                        raise _NotLowerable
                    base = leaf(src)
                    src = t
                    vec = [new_slot() for _ in range(src.shape[0])]
                    load.extend((base + j, s, 0) for j, s in enumerate(vec))
                items = ev.outs.items if type(ev.outs) is Seq else ev.outs
                if len(items) != len(vec):
                    raise _NotLowerable
                for r, s in zip(items, vec):
                    slot_of[r.i] = s
                continue
            if ev.name == "stack" and ev.args[1:] in ((), (0,)) and not ev.kwargs:
                slot_of[ev.outs.i] = [scalar(a) for a in ev.args[0]]
                continue
            if ev.name == "softmax" and ev.args[1:] in ((0,), (0, None)) and not ev.kwargs:
                vec = slot_of.get(ev.args[0].i) if isinstance(ev.args[0], Ref) else None
                if type(vec) is not list or not vec:
                    raise _NotLowerable
                outs = [new_slot() for _ in vec]
                prog.append((-1, outs[0], len(idx), len(vec)))  # code fixed below
                idx.extend(vec)
                slot_of[ev.outs.i] = outs
                continue
            raise _NotLowerable
        if ev.kind == "call" and ev.name == "Tensor.backward":
            if backward_at is not None or len(ev.args) != 1 or ev.kwargs:
                raise _NotLowerable
            r = ev.args[0]
            root = None
            if isinstance(r, Ref):
                root = sums.get(r.i) if shape is not None else slot_of.get(r.i)
            if type(root) is not int:
                raise _NotLowerable
            backward_at = n
            continue
        if ev.kind == "call" and ev.name == "Tensor.grad=":
            continue
        raise _NotLowerable
    if backward_at is None or not leaves:
        raise _NotLowerable
    for t in leaves:
        if t._hooks or t._post_acc_hooks:
            raise _NotLowerable
    fn, src = tape_interpreter(kinds, dtype)
    tape = np.array([(len(kinds) if c == -1 else c, o, a, b) for c, o, a, b in prog], np.int64)
    loads = np.array(load, np.int64).reshape(-1, 3)
    idxs = np.array(idx, np.int64)
    nel = 1 if shape is None else int(np.prod(shape))
    prog_ = ScalarProgram(
        leaves, tape.reshape(-1, 4), idxs, loads, consts, nslots[0], root, fn, src, dtype, nel
    )
    events = []
    for n, ev in enumerate(cap.events):
        if n == backward_at:
            args = tuple(ev.args) + tuple(tmpls)
            call = Event("call", "whole_step", prog_.backward, args, None, None, None)
            call.region = prog_
            events.append(call)
        elif ev.kind == "call":
            events.append(ev)
    return events, prog_


def _kind(op, attrs, operands):
    """``(forward, partial_x, partial_y)`` expressions over ``x``, ``y``, ``g``, ``out``."""
    env = {a: repr(v) for a, v in zip(op.attrs, attrs)}
    env.update(dict(zip(op.args, ("x", "y"))))
    parts = partials_of(op)
    ps = []
    for j in range(2):
        if j < len(operands) and type(operands[j]) not in (int, float) and parts[j] is not None:
            ps.append(_subst(parts[j].expr, dict(env, g="g", out="out")))
        else:
            ps.append(None)
    return (_subst(op.formula, env), ps[0], ps[1])
