"""``nbgrad.compile``: capture a function once, replay it with fused Numba kernels.

The first call with new guards runs the function eagerly while recording it (capture.py);
fusible chains of pointwise ops in the record become generated kernels, forward and backward
(fuse.py); later calls whose guards match replay the record: a flat loop over the recorded
calls, with no module, dispatch-wrapper or Python-control-flow overhead, and one kernel per
fused region.  Backward runs in the engine over the replayed graph, so every hook fires at the
same point with the same gradient as in eager mode (NOTE [hooks are breakpoints]).

Guards (``_key``): the structure of the arguments; each tensor's shape, dtype, device,
``requires_grad`` and aliasing; Python scalars by value; grad mode and forward-AD state; for a
module, the identity of its parameters; and no hook registered or removed anywhere since the
last call (``utils.hooks.EPOCH``).  A failed guard captures again, up to ``cache_size`` records
per function; then the function runs eagerly with a warning that names the guard.

NOTE [a graph break at untracked code]: a tensor made during the capture by code it does not
record (capture.py ``_const``) would be a stale constant in a replay; the record ends before
the first event that uses it, with a ``break`` event, and a replay that reaches the break
resumes (below) without recording: the rest of the function runs eagerly on every call.

NOTE [reads are guards]: a tensor value read into Python (``.item()``, ``bool(t)``,
``torch.equal``, ...) while capturing may steer the function's Python control flow, which the
replay does not run -- even a read with nothing recorded after it (``v = loss.item(); return v
if v > 0 else -v``).  So the replay reads the value again and compares it with the captured
one; a different value is a graph break: the call goes on from the read (NOTE [graph breaks
resume]) with the continuation captured for that value, or captures it.  Nothing is undone
and nothing runs twice.  ``fullgraph=True`` raises at the first read instead.
"""

import os
import warnings

import numpy as np

from .. import _flags
from .._tensor import Tensor
from ..grad_mode import STATE
from ..utils.hooks import EPOCH
from .capture import (
    Capture,
    Event,
    GraphBreak,
    Ref,
    Seq,
    grad_mode,
    refs,
    resolve,
    start,
    stop,
)
from .fuse import fuse
from .scalar import lower

__all__ = ["CompiledFunction", "GraphBreak", "compile"]


class _Resume(Exception):
    """A guard saw a new value, or the replay reached a graph break (NOTE [graph breaks
    resume])."""

    def __init__(self, rec, ev, value, vals):
        self.rec = rec
        self.ev = ev
        self.value = value
        self.vals = vals


class Record:
    """One captured program for one guard key; a *continuation* (``prefix`` non-empty) is the
    rest of a program after one outcome of a guarded read."""

    def __init__(self, cap, ninputs, out, events, regions, prefix=(), may_resume=False):
        self.nvals = cap.nvals
        self.ninputs = ninputs
        self.out = out
        self.events = events
        self.regions = regions
        self.raw = cap.events  # before fusion, for explain() and resuming
        self.consts = len(cap.consts)
        self.prefix = list(prefix)  # the raw events before this record's own
        self.branches = {}  # id(guarded read event) -> [(value, continuation or None)]
        # NOTE [a program that may resume keeps every value]: resume mode answers the
        # function's calls up to the break from these values; one released (or fused away)
        # would have to be computed again from arguments that later events may have changed
        # (an in-place write, backward, an optimizer step): silently wrong.  So such a
        # program is neither fused nor released (``_capture``).
        self.drops = [()] * len(events) if may_resume else _last_uses(events, out)
        # grad mode switched inside the function (no_grad, inference_mode): set per event
        self.modes = any(ev.mode != cap.entry_mode for ev in events)
        # NOTE [a module's training flag is a guard]: ``train()``/``eval()`` change what a
        # module's forward records (dropout, batch-norm statistics) without any argument
        # changing; a record is stale once a module it called has another flag
        self.modules = tuple(cap.modules.values())

    def current(self):
        """Whether every module the capture called still has its training flag."""
        for m, training in self.modules:
            if m.training is not training:
                return False
        return True

    def replay(self, flat):
        vals = [None] * self.nvals
        vals[: self.ninputs] = flat
        return self.run(vals)

    def run(self, vals):
        if len(vals) < self.nvals:
            vals.extend([None] * (self.nvals - len(vals)))
        if not self.modes:
            return self._run(vals)
        entry = grad_mode()
        try:
            return self._run(vals, entry)
        finally:
            STATE.enabled, STATE.inference, STATE.shown = entry

    def _run(self, vals, mode=None):
        for ev, drop in zip(self.events, self.drops):
            if mode is not None and ev.mode != mode:
                mode = ev.mode
                STATE.enabled, STATE.inference, STATE.shown = mode
            if drop:
                # NOTE [release values at their last use]: eager code drops an intermediate
                # when its Python name is rebound, so only the graph keeps what backward
                # saved, and the allocator reuses the rest within the step.  Holding every
                # value to the end of the replay raised the peak and made each step fault in
                # fresh pages (the CNN step ran 1.4x slower than eager before this).
                for i in drop:
                    vals[i] = None
            if ev.kind == "break":  # NOTE [a graph break at untracked code]
                raise _Resume(self, ev, None, vals)
            if ev.kind == "read":
                if ev.kwargs:
                    v = ev.fn(*resolve(ev.args, vals), **resolve(ev.kwargs, vals))
                else:
                    v = ev.fn(*resolve(ev.args, vals))
                if ev.outs is not None:
                    vals[ev.outs.i] = v
                if ev.guard and not _same(v, ev.value):
                    raise _Resume(self, ev, v, vals)
                continue
            if ev.kwargs:
                res = ev.fn(*resolve(ev.args, vals), **resolve(ev.kwargs, vals))
            else:
                res = ev.fn(*resolve(ev.args, vals))
            outs = ev.outs
            if type(outs) is Ref:
                vals[outs.i] = res
            elif outs is not None:
                _assign(outs, res, vals)
        return resolve(self.out, vals)

    def script(self, ev):
        """The raw events up to and including ``ev`` (a read of this record, or its closing
        break), from the start of the whole program."""
        if ev.kind == "break":
            return self.prefix + self.raw
        for n, e in enumerate(self.raw):
            if e is ev:
                return self.prefix + self.raw[: n + 1]
        raise AssertionError("the read is not in this record")


_MISSING = object()


class _Other:
    def __repr__(self):
        return "any other value"


_OTHER = _Other()


def _mark_guards(events, tail_clean):
    """Every read is a guard (NOTE [reads are guards]) but the last ones when the capture saw
    nothing use them (``tail_clean``: NOTE [a last read needs no guard when nothing uses
    it]) and nbgrad itself did not read them (``str(t)``: the value went into a string);
    ``(whether there is a read, whether there is a guard)``."""
    last = max([n for n, ev in enumerate(events) if ev.kind != "read"], default=-1)
    reads = guards = False
    for n, ev in enumerate(events):
        if ev.kind == "read":
            reads = True
            ev.guard = ev.guard or n < last or not tail_clean
            guards = guards or ev.guard
    return reads, guards


def _last_uses(events, out):
    """For each event, the values to release before it runs: those whose last use was the
    event before (the outputs of the function are never released)."""
    last = {}
    for n, ev in enumerate(events):
        for i in refs((ev.args, ev.kwargs)) + refs(ev.outs):
            last[i] = n
    keep = set(refs(out))
    drops = [[] for _ in range(len(events) + 1)]
    for i, n in last.items():
        if i not in keep:
            drops[n + 1].append(i)
    return [tuple(d) for d in drops[: len(events)]]


def _same(a, b):
    """Whether a read saw the captured value again (NaN equals NaN: a NaN loss read every step
    is the same outcome, not a new one)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (a != a and b != b)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is np.ndarray:
        return (
            a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    try:
        return bool(a == b)
    except Exception:
        return False


def _assign(t, res, vals):
    tp = type(t)
    if tp is Ref:
        vals[t.i] = res
    elif tp is tuple or tp is list:
        for a, r in zip(t, res):
            _assign(a, r, vals)
    elif tp is dict:
        for k, a in t.items():
            _assign(a, res[k], vals)
    elif tp is Seq:
        for a, r in zip(t.items, res):
            _assign(a, r, vals)


def _flatten(obj, tensors, sig):
    """Collect the tensors of ``obj`` (in order) and a hashable signature of everything else."""
    tp = type(obj)
    if tp is tuple or tp is list:
        sig.append((tp, len(obj)))
        for a in obj:
            _flatten(a, tensors, sig)
    elif tp is dict:
        sig.append((dict, tuple(obj)))
        for a in obj.values():
            _flatten(a, tensors, sig)
    elif isinstance(obj, Tensor):
        tensors.append(obj)
        d = obj._data
        sig.append((d.shape, obj._dtype, type(d), obj._requires_grad, obj._grad_fn is None))
    elif tp in (int, float, bool, str, type(None), complex):
        sig.append((tp, obj))
    else:
        sig.append((tp, id(obj)))


_DESCR = ("shape", "dtype", "device", "requires_grad", "is_leaf")


def _describe(old, new):
    """Which guard differs between two keys, in words."""
    if old is None:
        return "a new call signature"
    if len(old) != len(new):
        return "the arguments' structure"
    for n, (a, b) in enumerate(zip(old, new)):
        if a != b:
            if n == 0:
                return "grad mode / forward-AD state (%s -> %s)" % (a, b)
            if isinstance(a, tuple) and len(a) == 5 and isinstance(b, tuple) and len(b) == 5:
                k = sum(1 for e in old[1:n] if isinstance(e, tuple) and len(e) == 5)
                for name, x, y in zip(_DESCR, a, b):
                    if x != y:
                        return "tensor argument %d: %s %s -> %s" % (k, name, x, y)
            return "a Python argument: %r -> %r" % (a, b)
    return "the parameters of the module"


class CompiledFunction:
    """What ``nbgrad.compile(fn)`` returns: call it as ``fn``; ``explain()`` describes it."""

    def __init__(self, fn, *, dynamic=False, fullgraph=False, cache_size=8, params=None):
        self.fn = fn
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.cache_size = cache_size
        self._params = params  # a module's parameters() callable: their identity is guarded
        self._records = {}  # key -> [Record, ...] (variants by read outcomes)
        self._epoch = None
        self._last_key = None
        self._eager = {}  # key -> reason it runs eagerly
        self.stats = {"captures": 0, "replays": 0, "eager": 0, "invalidations": 0, "resumes": 0}
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def _key(self, args, kwargs):
        flat, sig = [], [(STATE.enabled, _flags.FWD, _flags.TAPS)]
        _flatten(args, flat, sig)
        if kwargs:
            _flatten(kwargs, flat, sig)
        # aliasing: the same tensor passed twice must stay one value
        ids = [id(t) for t in flat]
        if len(set(ids)) != len(ids):
            sig.append(("alias", tuple(ids.index(i) for i in ids)))
        if self._params is not None:
            sig.append(("params", tuple(id(p) for p in self._params())))
        return tuple(sig), flat

    def __call__(self, *args, **kwargs):
        if _flags.CAPTURE is not None:  # inside another function's capture: that one records
            return self.fn(*args, **kwargs)
        if self._epoch is not None and EPOCH[0] != self._epoch:
            # a hook was registered or removed since the last call: the records may have
            # captured a module whose hooks now make it opaque, or missed one
            self._records.clear()
            self._eager.clear()
            self.stats["invalidations"] += 1
        key, flat = self._key(args, kwargs)
        if key in self._eager:
            return self._run_eagerly(args, kwargs)
        recs = self._records.get(key, ())
        for rec in list(recs):
            if not rec.current():  # a module switched train/eval: capture again
                recs.remove(rec)
                self.stats["invalidations"] += 1
                continue
            try:
                res = rec.replay(flat)
            except _Resume as r:
                res = self._resume(r, args, kwargs)
            self.stats["replays"] += 1
            self._epoch = EPOCH[0]
            return res
        total = sum(len(v) for v in self._records.values())
        if total >= self.cache_size and not (self.dynamic and key not in self._records):
            why = _describe(self._last_key, key)
            self._eager[key] = why
            warnings.warn(
                "nbgrad.compile: %s was captured %d times (cache_size); the guard that kept "
                "failing: %s. Running it eagerly for these arguments."
                % (self.__name__, total, why),
                UserWarning,
                stacklevel=2,
            )
            return self._run_eagerly(args, kwargs)
        self._last_key = key
        return self._capture(key, flat, args, kwargs)

    def _run_eagerly(self, args, kwargs):
        self.stats["eager"] += 1
        try:
            return self.fn(*args, **kwargs)
        finally:  # the hooks it registers are its own, not a reason to capture again
            self._epoch = EPOCH[0]

    def _capture(self, key, flat, args, kwargs):
        if len({id(t) for t in flat}) != len(flat):
            self._eager[key] = "the same tensor is passed as two arguments"
            return self._run_eagerly(args, kwargs)
        cap = Capture(self.fullgraph)
        undo = start(cap)
        try:
            for t in flat:
                cap.define(t)
            res = self.fn(*args, **kwargs)
            out = cap.template(res)
        finally:
            clean = cap.end_tail()
            stop(undo)
        self.stats["captures"] += 1
        brk = None
        if cap.break_at is not None:  # NOTE [a graph break at untracked code]
            cap.events = cap.events[: cap.break_at]
            out, clean = None, False  # Python goes on past the record: every read guards
            brk = Event("break", "graph break", None, (), None, None, None)
            brk.value = cap.break_why
        reads, guards = _mark_guards(cap.events, clean)
        may_resume = guards or brk is not None
        if cap.problem is not None:
            self._eager[key] = cap.problem
            if _debug():
                print("nbgrad.compile: %s runs eagerly: %s" % (self.__name__, cap.problem))
            self._epoch = EPOCH[0]
            return res
        used = set(refs(out))
        lowered = lower(cap, out, len(flat)) if not (reads or brk) else None
        if lowered is not None:  # a small scalar step: one Numba function (compile/scalar.py)
            fused, prog = lowered
            rec = Record(cap, len(flat), out, fused, [prog])
        else:
            # NOTE [a program that may resume keeps every value]
            fused, regions = (list(cap.events), []) if may_resume else fuse(cap, used)
            events = fused + ([brk] if brk else [])
            rec = Record(cap, len(flat), out, events, regions, may_resume=may_resume)
        self._records.setdefault(key, []).append(rec)
        self._epoch = EPOCH[0]
        if _debug():
            print(self.explain())
        return res

    # -- graph breaks after side effects ---------------------------------------------------
    def _resume(self, r, args, kwargs):
        """NOTE [graph breaks resume]: a guard saw a value the record was not captured with
        (the replay may already have run an optimizer step or ``backward``).  What ran cannot
        be undone, so the call goes on from the read: with the continuation captured
        for that value when there is one (each outcome of a read is a compiled segment of its
        own), otherwise by running the function again in *resume mode* (capture.py): its
        Python code runs, every recorded call before the read returns what the replay made
        without running again, and what follows the read runs eagerly while it is captured
        as the continuation for that value.  At most ``cache_size`` values per read get a
        continuation; other values resume eagerly every time."""
        while True:
            self.stats["resumes"] += 1
            if r.ev.kind == "break":  # the rest is untracked code: always eager
                return self._resume_capture(r, [], False, args, kwargs)
            branches = r.rec.branches.setdefault(id(r.ev), [])
            cont = _MISSING
            for value, c in list(branches):
                if c is not None and not c.current():  # (a module switched train/eval)
                    branches.remove((value, c))
                    continue
                if value is _OTHER or _same(r.value, value):
                    cont = c
                    break
            if cont is _MISSING and len(branches) >= self.cache_size:
                branches.append((_OTHER, None))  # the read's other values resume eagerly
                cont = None
            if cont is _MISSING or cont is None:
                return self._resume_capture(r, branches, cont is _MISSING, args, kwargs)
            try:
                return cont.run(r.vals)
            except _Resume as again:
                r = again

    def _resume_capture(self, r, branches, record, args, kwargs):
        script = r.rec.script(r.ev)
        if not script:  # nothing recorded before the break: the function as it is
            return self.fn(*args, **kwargs)
        cap = Capture(self.fullgraph)
        cap.resume(script, r.vals, r.value, record, r.ev.kind == "read")
        undo = start(cap)
        try:
            res = self.fn(*args, **kwargs)
            out = cap.template(res) if record else None
        finally:
            clean = cap.end_tail()
            stop(undo)
        if cap.pos < len(script):
            where = "its graph break" if r.ev.kind == "break" else "Tensor.%s() at %s" % (
                r.ev.name, r.ev.where)  # fmt: skip
            raise RuntimeError(
                "nbgrad.compile: %s returned before reaching %s, where its record resumes; it "
                "must take the same path up to the read on every call" % (self.__name__, where)
            )
        if not record:
            return res
        _, guards = _mark_guards(cap.events, clean)
        cont = None
        if cap.problem is None and cap.break_at is None:  # (untracked code: resume each time)
            fused, regions = (list(cap.events), []) if guards else fuse(cap, set(refs(out)))
            cont = Record(cap, 0, out, fused, regions, prefix=script, may_resume=guards)
        branches.append((r.value, cont))
        if _debug():
            print(self.explain())
        return res

    # -- introspection ---------------------------------------------------------------------
    def explain(self):
        """The captured programs, the fused regions and their generated kernel source."""
        st = self.stats
        lines = [
            "nbgrad.compile(%s): %d capture(s), %d replay(s), %d eager call(s), %d resume(s)"
            % (self.__name__, st["captures"], st["replays"], st["eager"], st["resumes"])
        ]
        for key, why in self._eager.items():
            lines.append("runs eagerly for one guard key: %s" % why)
        for recs in self._records.values():
            for r in recs:
                _explain_record(r, lines, "record")
        return "\n".join(lines)


def _explain_record(r, lines, what):
    counts = (r.ninputs, r.nvals, r.consts, len(r.raw), len(r.events), len(r.regions))
    lines.append(
        "%s: %d inputs, %d values, %d constants, %d events recorded, %d after fusion, %d fused "
        "region(s)" % ((what,) + counts)
    )
    lines.append("captured graph:")
    for ev in r.raw:
        lines.append("  " + repr(ev) + ("  [guard]" if ev.guard else ""))
    lines.append("replayed program:")
    for ev in r.events:
        if ev.kind == "break":
            lines.append("  graph break: %s; the rest runs eagerly (resumed on every call)"
                         % ev.value)  # fmt: skip
        else:
            lines.append("  " + repr(ev))
    for reg in r.regions:
        lines.append(reg.explain())
    for ev in r.raw:
        for value, cont in r.branches.get(id(ev), ()):
            head = "after Tensor.%s() at %s read %r" % (ev.name, ev.where, value)
            if cont is None:
                lines.append(head + ": the rest runs eagerly (resumed each time)")
            else:
                _explain_record(cont, lines, head + ", continuation")


def _debug():
    return os.environ.get("NBGRAD_COMPILE_DEBUG", "") not in ("", "0")


def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=False,
    backend="inductor",
    mode=None,
    options=None,
    disable=False,
    cache_size=8,
):
    """``nbgrad.compile(fn)`` / ``@nbgrad.compile`` / ``@nbgrad.compile(fullgraph=True)`` /
    ``nbgrad.compile(module)``: see the module docstring.  PyTorch's ``backend``, ``mode`` and
    ``options`` are accepted and ignored (there is one backend); ``disable=True`` returns
    ``model`` itself, as PyTorch does."""
    kw = dict(fullgraph=fullgraph, dynamic=dynamic, cache_size=cache_size)
    if model is None:
        return lambda m: compile(m, backend=backend, mode=mode, options=options,
                                 disable=disable, **kw)  # fmt: skip
    if not callable(model):
        raise TypeError("nbgrad.compile: expected a callable or a Module, got %s"
                        % type(model).__name__)  # fmt: skip
    if type(cache_size) is not int or cache_size < 1:
        raise ValueError(
            "nbgrad.compile: cache_size must be a positive int, got %r" % (cache_size,)
        )
    if disable:
        return model
    params = getattr(model, "parameters", None) if hasattr(model, "_call_with_hooks") else None
    return CompiledFunction(model, params=params, **kw)
