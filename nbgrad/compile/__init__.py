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

NOTE [reads are guards]: a tensor value read into Python (``.item()``, ``bool(t)``, ...)
while capturing may steer the function's Python control flow, which the replay does not run.
When recorded work follows the read, the replay reads the value again and compares it with the
captured one; a different value means the record does not describe this call, so the function
is captured again for the new value (the replay so far made only new tensors: nothing to undo).
When the read comes after side effects (an optimizer step, ``backward``, an in-place write), a
different value could not be undone, so such a function is not replayed: it runs eagerly, and
``explain()`` says why.  A read with nothing recorded after it (``return loss.item()``) is
simply read again.  ``fullgraph=True`` raises at the first read instead.
"""

import os
import warnings

from .. import _flags
from .._tensor import Tensor
from ..grad_mode import STATE
from ..utils.hooks import EPOCH
from .capture import Capture, GraphBreak, Ref, Seq, refs, resolve, start, stop
from .fuse import fuse
from .scalar import lower

__all__ = ["CompiledFunction", "GraphBreak", "compile"]


class _Miss(Exception):
    def __init__(self, ev):
        self.ev = ev


class Record:
    """One captured program for one guard key."""

    def __init__(self, cap, ninputs, out, events, regions):
        self.nvals = cap.nvals
        self.ninputs = ninputs
        self.out = out
        self.events = events
        self.regions = regions
        self.raw = cap.events  # before fusion, for explain()
        self.consts = len(cap.consts)
        self.drops = _last_uses(events, out)

    def replay(self, flat):
        vals = [None] * self.nvals
        vals[: self.ninputs] = flat
        for ev, drop in zip(self.events, self.drops):
            if drop:
                # NOTE [release values at their last use]: eager code drops an intermediate
                # when its Python name is rebound, so only the graph keeps what backward
                # saved, and the allocator reuses the rest within the step.  Holding every
                # value to the end of the replay raised the peak and made each step fault in
                # fresh pages (the CNN step ran 1.4x slower than eager before this).
                for i in drop:
                    vals[i] = None
            if ev.kind == "read":
                src = ev.args[0]
                v = ev.fn(vals[src.i] if type(src) is Ref else src, *ev.args[1:])
                if ev.guard and not _same(v, ev.value):
                    raise _Miss(ev)
                if ev.outs is not None:
                    vals[ev.outs.i] = v
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
    try:
        return bool(a == b) and type(a) is type(b)
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
        self.stats = {"captures": 0, "replays": 0, "eager": 0, "invalidations": 0}
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
        reason = self._eager.get(key)
        if reason is not None:
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        for rec in self._records.get(key, ()):
            try:
                res = rec.replay(flat)
            except _Miss:
                continue
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
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        self._last_key = key
        return self._capture(key, flat, args, kwargs)

    def _capture(self, key, flat, args, kwargs):
        if len({id(t) for t in flat}) != len(flat):
            self._eager[key] = "the same tensor is passed as two arguments"
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        cap = Capture(self.fullgraph)
        undo = start(cap)
        try:
            for t in flat:
                cap.define(t)
            res = self.fn(*args, **kwargs)
            out = cap.template(res)
        finally:
            stop(undo)
        self.stats["captures"] += 1
        events = cap.events
        for n, ev in enumerate(events):
            if ev.kind == "read":
                ev.guard = any(e.kind != "read" for e in events[n + 1 :])
                if ev.guard and ev.late:
                    cap.fail(
                        "a value read after side effects decides later work (Tensor.%s() at "
                        "%s)" % (ev.name, ev.where)
                    )
        if cap.problem is not None:
            self._eager[key] = cap.problem
            if _debug():
                print("nbgrad.compile: %s runs eagerly: %s" % (self.__name__, cap.problem))
            self._epoch = EPOCH[0]
            return res
        used = set(refs(out))
        lowered = lower(cap, out)
        if lowered is not None:  # a small scalar step: one Numba function (compile/scalar.py)
            fused, prog = lowered
            rec = Record(cap, len(flat), out, fused, [prog])
        else:
            fused, regions = fuse(cap, used)
            rec = Record(cap, len(flat), out, fused, regions)
        self._records.setdefault(key, []).append(rec)
        self._epoch = EPOCH[0]
        if _debug():
            print(self.explain())
        return res

    # -- introspection ---------------------------------------------------------------------
    def explain(self):
        """The captured programs, the fused regions and their generated kernel source."""
        st = self.stats
        lines = [
            "nbgrad.compile(%s): %d capture(s), %d replay(s), %d eager call(s)"
            % (self.__name__, st["captures"], st["replays"], st["eager"])
        ]
        for key, why in self._eager.items():
            lines.append("runs eagerly for one guard key: %s" % why)
        for recs in self._records.values():
            for r in recs:
                lines.append(
                    "record: %d inputs, %d values, %d constants, %d events recorded, %d after "
                    "fusion, %d fused region(s)"
                    % (r.ninputs, r.nvals, r.consts, len(r.raw), len(r.events), len(r.regions))
                )
                lines.append("captured graph:")
                for ev in r.raw:
                    lines.append("  " + repr(ev) + ("  [guard]" if ev.guard else ""))
                lines.append("replayed program:")
                for ev in r.events:
                    lines.append("  " + repr(ev))
                for reg in r.regions:
                    lines.append(reg.explain())
        return "\n".join(lines)


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
