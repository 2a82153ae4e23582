"""autograd.profiler: events for forward ops, backward nodes and user hooks, nested; PyTorch's
table; Chrome trace; nothing recorded (and nothing changed) when off."""

import json
import math

import pytest

import nbgrad
from nbgrad.autograd import profiler


def _graph(hook_log=None):
    x = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    if hook_log is not None:
        x.register_hook(lambda g: hook_log.append("x") or g * 2)
    with profiler.record_function("my_block"):
        y = (x * 2).exp().sum()
    return x, y


def test_backward_nodes_and_hooks_are_nested_events():
    log = []
    with profiler.profile() as prof:
        x, y = _graph(log)
        y.backward()
    names = [e.name for e in prof.function_events]
    assert "my_block" in names
    for node in ("SumBackward0", "ExpBackward0", "MulBackward0"):
        assert "autograd::engine::evaluate_function: %s" % node in names
    hooks = [e for e in prof.function_events if e.name == "hook::tensor"]
    assert len(hooks) == 1 and log == ["x"]
    parent = hooks[0].cpu_parent
    assert parent.name == "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    assert x.grad.tolist() == pytest.approx([4 * math.exp(2.0 * v) for v in (1, 2, 3)], rel=1e-6)


def test_record_function_nests_and_decorates():
    @profiler.record_function("outer")
    def f():
        with profiler.record_function("inner"):
            return nbgrad.ones(2) + 1

    with profiler.profile() as prof:
        f()
    outer = next(e for e in prof.function_events if e.name == "outer")
    assert [c.name for c in outer.cpu_children][:1] == ["inner"]
    assert outer.cpu_time_total >= outer.cpu_children[0].cpu_time_total


def test_table_columns_and_hooks_row():
    with profiler.profile(record_shapes=True) as prof:
        x, y = _graph([])
        y.backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    header = table.splitlines()[1]
    for col in (
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
        "# of Calls",
    ):
        assert col in header
    assert "Hooks: 1 calls" in table and table.rstrip().splitlines()[-1].startswith(
        "Self CPU time total:"
    )
    grouped = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in grouped.splitlines()[1]
    assert prof.self_cpu_time_total > 0


def test_chrome_trace_is_valid_json_with_nested_ranges(tmp_path):
    with profiler.profile() as prof:
        x, y = _graph([])
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(prof.function_events)
    by_name = {e["name"]: e for e in events}
    outer = by_name["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]
    inner = by_name["hook::tensor"]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_disabled_profiler_records_nothing_and_changes_nothing():
    x1, y1 = _graph([])
    y1.backward()
    with profiler.profile(enabled=False) as prof:
        x2, y2 = _graph([])
        y2.backward()
    assert prof._events == [] and not nbgrad._flags.PROFILE
    with profiler.profile():
        x3, y3 = _graph([])
        y3.backward()
    assert x1.grad.tolist() == x2.grad.tolist() == x3.grad.tolist()
    assert y1.item() == y3.item()
    assert not nbgrad._flags.PROFILE


def test_errors_and_module_hook_events():
    prof = profiler.profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.key_averages()
    m = nbgrad.nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, args, out: None)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    with profiler.profile() as prof:
        m(nbgrad.ones(1, 2, requires_grad=True)).sum().backward()
    names = {e.name for e in prof.function_events}
    assert {"hook::module_forward", "hook::module_backward"} <= names


def test_emit_nvtx_warns_without_the_package():
    pytest.importorskip("numpy")
    try:
        import nvtx  # noqa: F401

        pytest.skip("nvtx is installed")
    except ImportError:
        pass
    profiler.emit_nvtx._warned = False
    with pytest.warns(UserWarning, match="nvtx"):
        with profiler.emit_nvtx():
            nbgrad.ones(2) * 2


def test_profile_memory_records_bytes_per_event():
    """profile_memory=True: each event carries the bytes it allocated net of what it freed
    (numpy's allocations, traced by tracemalloc), the table gets PyTorch's CPU Mem columns and
    the trace [memory] events; tracemalloc is stopped again afterwards."""
    import tracemalloc

    x = nbgrad.randn(128, 128, requires_grad=True)
    (x * 2).exp().sum().backward()  # kernels compiled: their memory is not in the profile
    with nbgrad.autograd.profiler.profile(profile_memory=True) as prof:
        y = (x * 2).exp()
    assert not tracemalloc.is_tracing()
    mul = [e for e in prof.function_events if e.name == "aten::mul"][0]
    assert 128 * 128 * 4 <= mul.cpu_memory_usage < 2 * 128 * 128 * 4  # its float32 result
    assert mul.self_cpu_memory_usage == mul.cpu_memory_usage  # no children
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table and "Kb" in table
    del y
    with nbgrad.autograd.profiler.profile() as prof2:
        x * 2
    assert "CPU Mem" not in prof2.table()
    assert all(e.cpu_memory_usage == 0 for e in prof2.function_events)


def test_profile_memory_chrome_trace_has_memory_events(tmp_path):
    x = nbgrad.randn(64, 64)
    x * 2
    with nbgrad.autograd.profiler.profile(profile_memory=True) as prof:
        x * 2
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    mem = [e for e in events if e["name"] == "[memory]"]
    assert mem and all(e["ph"] == "i" and e["args"]["Bytes"] > 0 for e in mem)


def test_every_registry_op_emits_its_event():
    # non-pointwise ops' public functions test the profiler flag too (argmax, nonzero, outer,
    # equal, ... were missing: no event, and nbgrad.compile could not record them)
    from nbgrad.ops.registry import REGISTRY

    x = nbgrad.tensor([[1.0, -2.0], [3.0, 0.5]])
    calls = {
        "argmax": lambda: x.argmax(),
        "nonzero": lambda: nbgrad.nonzero(x),
        "outer": lambda: nbgrad.outer(x[0], x[1]),
        "tile": lambda: x.tile((2, 1)),
        "all": lambda: x.all(),
        "equal": lambda: nbgrad.equal(x, x),
        "isclose": lambda: nbgrad.isclose(x, x),
        "floor_divide": lambda: nbgrad.floor_divide(x, 2),
        "unique": lambda: nbgrad.unique(x),
    }
    for name, call in calls.items():
        with profiler.profile() as prof:
            call()
        names = [e.name for e in prof.function_events]
        assert "aten::" + name in names or name in names, (name, names)
    # and no registered op keeps an unchecked public function
    bare = [n for n, o in REGISTRY.items() if o.fn is o.impl and o.kind != "pointwise"]
    generated = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                 "floor_divide", "logical_not", "isnan", "isinf", "isfinite"}  # fmt: skip
    assert set(bare) <= generated, set(bare) - generated
