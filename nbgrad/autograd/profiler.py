"""``nbgrad.autograd.profiler``: PyTorch's ``profile`` / ``record_function`` / ``emit_nvtx``.

While a ``profile`` is active every forward op (``aten::<op>``), every backward node
(``autograd::engine::evaluate_function: <Node>`` around the node's own ``<Node>`` event) and,
beyond PyTorch, every user hook call (``hook::tensor``, ``hook::node_pre``, ``hook::node_post``,
``hook::post_accumulate``, ``hook::module_forward`` ...) is an event nested under what was
running, so the table shows what hooks cost inside backward.  NOTE [profiler flag]: the places
that emit events test ``_flags.PROFILE`` once; with no profiler they do nothing more.
"""

import json
import os
import threading
import time
import tracemalloc
import warnings

from .. import _flags

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent"]


class FunctionEvent:
    """One timed range (times in microseconds, like PyTorch's)."""

    __slots__ = (
        "id",
        "name",
        "kind",
        "thread",
        "start",
        "end",
        "input_shapes",
        "cpu_parent",
        "cpu_children",
        "memory",
    )

    def __init__(self, id, name, kind, thread, start, input_shapes=None):  # noqa: A002
        self.id, self.name, self.kind, self.thread = id, name, kind, thread
        self.start, self.end = start, start
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.cpu_parent, self.cpu_children, self.memory = None, [], 0

    @property
    def cpu_time_total(self):
        return self.end - self.start

    @property
    def cpu_memory_usage(self):
        """Bytes allocated minus bytes freed while the event ran (``profile_memory=True``)."""
        return self.memory

    @property
    def self_cpu_memory_usage(self):
        return self.memory - sum(c.memory for c in self.cpu_children)

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def count(self):
        return 1

    @property
    def key(self):
        return self.name

    def __repr__(self):
        return "<FunctionEvent id=%d name=%s cpu_time=%s>" % (
            self.id,
            self.name,
            _fmt_us(self.cpu_time_total),
        )


class FunctionEventAvg:
    """Events of one key summed (``key_averages``)."""

    def __init__(self, key, input_shapes=None):
        self.key = self.name = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0

    def add(self, ev):
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return "<FunctionEventAvg key=%s self_cpu_time=%s cpu_time=%s count=%d>" % (
            self.key,
            _fmt_us(self.self_cpu_time_total),
            _fmt_us(self.cpu_time_total),
            self.count,
        )


class EventList(list):
    """A list of events with PyTorch's ``table``, ``key_averages`` and ``total_average``."""

    def __init__(self, events=(), *, hooks_row=True, memory=False):
        super().__init__(events)
        self._hooks_row = hooks_row
        self._memory = memory  # profile_memory=True: the CPU Mem columns

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False):
        groups = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            k = (e.key, shapes)
            if k not in groups:
                groups[k] = FunctionEventAvg(e.key, shapes)
            groups[k].add(e)
        out = EventList(groups.values(), hooks_row=self._hooks_row, memory=self._memory)
        out._grouped_by_shape = group_by_input_shape
        return out

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_name_column_width=55,
        header=None,
        top_level_events_only=False,
    ):
        return _table(
            self,
            sort_by,
            row_limit,
            max_name_column_width,
            header,
            getattr(self, "_grouped_by_shape", False),
            self._hooks_row,
            self._memory,
        )

    def __str__(self):
        return self.table()


def _fmt_us(us):
    if us >= 1e6:
        return "%.3fs" % (us / 1e6)
    if us >= 1e3:
        return "%.3fms" % (us / 1e3)
    return "%.3fus" % us


def _fmt_mem(nbytes):
    """PyTorch's memory column format (``_format_memory``)."""
    for unit, size in (("Gb", 1024**3), ("Mb", 1024**2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return "%.2f %s" % (nbytes / size, unit)
    return "%d b" % nbytes


def _table(events, sort_by, row_limit, name_width, header, with_shapes, hooks_row, memory=False):
    rows = list(events)
    if sort_by is not None:
        key = {
            "cpu_time_total": "cpu_time_total",
            "self_cpu_time_total": "self_cpu_time_total",
            "cpu_time": "cpu_time",
            "count": "count",
            "cpu_memory_usage": "cpu_memory_usage",
            "self_cpu_memory_usage": "self_cpu_memory_usage",
        }.get(sort_by, sort_by)
        rows.sort(key=lambda e: getattr(e, key), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    width = max([len("Name")] + [len(e.key) for e in rows])
    width = min(width, name_width)
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if memory:
        cols += ["CPU Mem", "Self CPU Mem"]
    cols.append("# of Calls")
    widths = [width] + [12] * len(cols)
    if with_shapes:
        cols.append("Input Shapes")
        widths.append(max(32, max([len(str(e.input_shapes)) for e in rows] or [0])))
    line = "".join("-" * w + "  " for w in widths)

    def fmt(values):
        return "".join(("%" + str(w) + "s  ") % v for w, v in zip(widths, values))

    out = [line, fmt(["Name"] + cols), line]
    if header:
        out.insert(0, header)
    for e in rows:
        name = e.key if len(e.key) <= width else e.key[: width - 3] + "..."
        vals = [
            name,
            "%.2f%%" % (100.0 * e.self_cpu_time_total / total),
            _fmt_us(e.self_cpu_time_total),
            "%.2f%%" % (100.0 * e.cpu_time_total / total),
            _fmt_us(e.cpu_time_total),
            _fmt_us(e.cpu_time_total / max(e.count, 1)),
        ]
        if memory:
            vals += [_fmt_mem(e.cpu_memory_usage), _fmt_mem(e.self_cpu_memory_usage)]
        vals.append(str(e.count))
        if with_shapes:
            vals.append(e.input_shapes if e.input_shapes is not None else "")
        out.append(fmt(vals))
    out.append(line)
    if hooks_row:
        hooks = [e for e in events if e.key.startswith("hook::")]
        if hooks:  # beyond PyTorch: what the user's hooks cost, in one line
            t = sum(e.cpu_time_total for e in hooks)
            n = sum(e.count for e in hooks)
            out.append(
                "Hooks: %d calls, %s (%.2f%% of self CPU time)" % (n, _fmt_us(t), 100.0 * t / total)
            )
    out.append("Self CPU time total: %s" % _fmt_us(sum(e.self_cpu_time_total for e in events)))
    return "\n".join(out) + "\n"


# -- recording -------------------------------------------------------------------------------


class _Recorder(threading.local):
    stack = None  # open events of this thread


_TLS = _Recorder()
_ACTIVE = []  # the running profile (one at a time, like PyTorch's legacy profiler)


def _now_us():
    return time.perf_counter_ns() / 1000.0


def begin(name, kind="op", shapes=None):
    """Open an event (only called while ``_flags.PROFILE``); returns it for ``end`` (None while
    only a capture of nbgrad.compile holds the flag)."""
    if not _ACTIVE:
        return None
    prof = _ACTIVE[-1]
    stack = _TLS.stack
    if stack is None:
        stack = _TLS.stack = []
    ev = FunctionEvent(
        len(prof._events),
        name,
        kind,
        threading.get_ident(),
        _now_us(),
        shapes if prof.record_shapes else None,
    )
    if prof.profile_memory:  # NOTE [memory events]: net bytes traced while the event runs
        ev.memory = -tracemalloc.get_traced_memory()[0]
    if stack:
        ev.cpu_parent = stack[-1]
        stack[-1].cpu_children.append(ev)
    stack.append(ev)
    prof._events.append(ev)
    if prof._nvtx is not None:
        prof._nvtx.push_range(name)
    return ev


def end(ev):
    if ev is None:
        return
    ev.end = _now_us()
    if _ACTIVE and _ACTIVE[-1].profile_memory:
        ev.memory += tracemalloc.get_traced_memory()[0]
    if _ACTIVE and _ACTIVE[-1]._nvtx is not None:
        _ACTIVE[-1]._nvtx.pop_range()
    stack = _TLS.stack
    if stack and stack[-1] is ev:
        stack.pop()
    elif stack and ev in stack:  # an exception unwound inner ranges: close them too
        while stack and stack.pop() is not ev:
            pass


def leaf_op(name, fn, *args):
    """A pointwise op (dispatch's fast paths) as one ``aten::<name>`` event.  The flag is off
    while it runs, so its re-entry into the same fast path records nothing twice."""
    if _flags.CAPTURE is not None:  # NOTE [capture through the profiler flag]
        return _flags.CAPTURE.op(name, fn, args, {})
    ev = begin("aten::" + name, "op", shapes_of(args))
    _flags.PROFILE = False
    try:
        return fn(*args)
    finally:
        _flags.PROFILE = True
        end(ev)


def op_call(name, fn, args, kwargs):
    """A registry op's public call as an ``aten::<name>`` event (the ops it calls nest)."""
    if _flags.CAPTURE is not None:  # NOTE [capture through the profiler flag]
        return _flags.CAPTURE.op(name, fn, args, kwargs)
    ev = begin("aten::" + name, "op", shapes_of(args))
    try:
        return fn(*args, **kwargs)
    finally:
        end(ev)


def shapes_of(args):
    """PyTorch's ``Input Shapes`` column: a list per argument, [] for non-tensors."""
    out = []
    for a in args:
        shape = getattr(a, "_data", None)
        out.append(list(shape.shape) if shape is not None else [])
    return out


class profile:
    """Context manager recording events; ``profile(enabled=False)`` records nothing."""

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        self.enabled = enabled
        self.use_cuda = use_cuda
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self._events = []
        self._function_events = None
        self._nvtx = None  # the nvtx module while emit_nvtx is active
        self._started_tracemalloc = False
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        if _ACTIVE:
            raise RuntimeError("Profiler is already enabled on this thread")
        self.entered = True
        self._events = []
        if self.profile_memory and not tracemalloc.is_tracing():
            tracemalloc.start()  # numpy reports its data allocations to tracemalloc
            self._started_tracemalloc = True
        _ACTIVE.append(self)
        _flags.set_profiling(True)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        _flags.set_profiling(False)
        _ACTIVE.remove(self)
        _TLS.stack = None
        if self._started_tracemalloc:
            tracemalloc.stop()
            self._started_tracemalloc = False
        self._function_events = EventList(self._events, memory=self.profile_memory)
        return False

    def _check_finish(self):
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    @property
    def function_events(self):
        self._check_finish()
        return self._function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._check_finish()
        return self._function_events.key_averages(group_by_input_shape)

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_name_column_width=55,
        header=None,
        top_level_events_only=False,
    ):
        self._check_finish()
        return self._function_events.table(sort_by, row_limit, max_name_column_width, header)

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self._function_events.self_cpu_time_total

    def total_average(self):
        self._check_finish()
        return self._function_events.total_average()

    def export_chrome_trace(self, path):
        """Trace Event JSON (opens in Perfetto / chrome://tracing): one complete event each."""
        self._check_finish()
        pid = os.getpid()
        t0 = min((e.start for e in self._function_events), default=0.0)
        events = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "nbgrad"}}
        ]
        for e in self._function_events:
            ev = {
                "name": e.name,
                "ph": "X",
                "cat": e.kind,
                "ts": e.start - t0,
                "dur": e.cpu_time_total,
                "pid": pid,
                "tid": e.thread,
                "args": {"Input Shapes": e.input_shapes} if e.input_shapes else {},
            }
            events.append(ev)
            if self.profile_memory and e.memory:  # PyTorch's [memory] instant events
                events.append(
                    {
                        "name": "[memory]",
                        "ph": "i",
                        "s": "t",
                        "cat": "cpu_instant_event",
                        "ts": e.end - t0,
                        "pid": pid,
                        "tid": e.thread,
                        "args": {"Total Allocated": e.self_cpu_memory_usage, "Bytes": e.memory},
                    }
                )
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)

    def __str__(self):
        return self.table()


class record_function:
    """A named range in the profile (context manager and decorator), as PyTorch's."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._ev = None

    def __enter__(self):
        if _flags.PROFILE:
            self._ev = begin(self.name, "user")
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            end(self._ev)
            self._ev = None
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapper


class emit_nvtx:
    """NVTX ranges for every event while active (the optional ``nvtx`` package); without it,
    a warning once and no ranges."""

    _warned = False

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self._prof = profile(enabled=enabled, record_shapes=record_shapes)
        try:
            import nvtx
        except ImportError:
            nvtx = None
        self._prof._nvtx = self._nvtx = nvtx

    def __enter__(self):
        if self.enabled and self._nvtx is None and not emit_nvtx._warned:
            emit_nvtx._warned = True
            warnings.warn(
                "emit_nvtx: the 'nvtx' package is not installed, so no NVTX ranges "
                "are emitted (pip install nvtx)",
                UserWarning,
                stacklevel=2,
            )
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        return self._prof.__exit__(*exc)
