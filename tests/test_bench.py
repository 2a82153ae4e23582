"""nbgrad-bench and the asv suite: every workload runs (once, at --quick size), the command line
lists, filters and writes JSON that validates against the documented schema.  Nothing here
asserts a time."""

import importlib.util
import json
import math
import os
import re

import numba
import pytest
from conftest import HAS_TORCH, needs_torch, torch

import nbgrad
from nbgrad.bench import cli, schema, timing, workloads as W

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = [w.name for w in W.WORKLOADS]


def _run_once(w, T):
    """Set ``w`` up at its quick size for ``T`` and call every part once; the value."""
    fns = w.setup(T, quick=True)
    try:
        seconds = {}
        for part, fn in fns.items():
            if w.self_timed:
                fn.warm_up()
            out = fn()
            if w.self_timed:
                assert isinstance(out, float) and out > 0, (part, out)
                seconds[part] = out
            else:
                seconds[part] = 1.0
        value = w.value(seconds)
        assert math.isfinite(value)
        return value
    finally:
        W.close(fns)


@pytest.mark.parametrize("name", NAMES)
def test_every_workload_runs_once_at_quick_size(name):
    w = W.get(name)
    if w.quick_test:
        pytest.skip("not part of the quick test: " + w.quick_test)
    reason = w.skip_reason(nbgrad)
    if reason:  # declared, e.g. the profiler before it exists
        pytest.skip(reason)
    _run_once(w, nbgrad)
    if w.numpy:
        _run_once(w, None)
    if HAS_TORCH and w.torch and not w.self_timed and w.skip_reason(torch) is None:
        _run_once(w, torch)  # the same code runs with PyTorch


def test_workload_table_is_consistent():
    assert len(set(NAMES)) == len(NAMES)
    for w in W.WORKLOADS:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", w.name), w.name
        assert w.unit in ("s", "ms", "us")
        assert w.label() and w.label(quick=True)
        assert set(w.coef) <= set(w.parts)
        assert w.libraries()[0] == "nbgrad"
    # issue 13's table and issue 14's additions are all there
    for name in [
        "per_op_forward",
        "per_node_backward",
        "backward_call",
        "softmax_cross_entropy",
        "gelu_primitives",
        "scalar_graph",
        "mlp_step_b16",
        "mlp_step_b128",
        "cnn_step",
        "import_time",
        "first_backward_warm_cache",
        "first_backward_empty_cache",
        "tensor_hook",
        "module_full_backward_hook",
        "profiler_overhead",
        "jacobian_rows",
        "jacobian_vectorize",
        "jacobian_forward_mode",
        "hessian",
    ]:
        assert W.get(name)
    assert W.get("mlp_step_b16").numpy and W.get("mlp_step_b128").numpy


def test_profiler_workload_is_declared_not_faked():
    w = W.get("profiler_overhead")
    has_profiler = importlib.util.find_spec("nbgrad.autograd.profiler") is not None
    if has_profiler and W._profiler(nbgrad) is not None:
        assert w.skip_reason(nbgrad) is None
    else:
        assert "profiler" in w.skip_reason(nbgrad)


def test_scalar_graph_matches_torch_gradient():
    """The scalar graph is the same graph in both libraries (same plan, same values)."""
    if not HAS_TORCH:
        pytest.skip("PyTorch (the oracle) is not installed")
    grads = []
    for T in (nbgrad, torch):
        x, step = W.scalar_graph_parts(T, 20, 100)
        step()
        grads.append(x.grad.numpy())
    assert grads[0].shape == (20,)
    assert abs(grads[0] - grads[1]).max() <= 1e-4 * (1 + abs(grads[1]).max())


def test_select_filters():
    assert [w.name for w in W.select(["mlp"])] == [
        "mlp_step_b16",
        "mlp_step_b128",
        "compiled_mlp_step",
    ]
    assert [w.name for w in W.select(["MLP_STEP_B1?"])] == ["mlp_step_b16"]
    assert {w.name for w in W.select(["cold start"])} == {
        "import_time",
        "first_backward_warm_cache",
        "first_backward_empty_cache",
    }
    assert [w.name for w in W.select(["hessian", "per_op"])] == ["per_op_forward", "hessian"]
    assert W.select([]) == W.WORKLOADS
    assert W.select(["no such workload"]) == []


def test_list(capsys):
    assert cli.main(["--list", "--plain"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        assert re.search(r"^%s\s" % name, out, re.M), name
    assert "skipped:" in out or W._profiler(nbgrad) is not None


def test_list_with_rich_and_k(capsys):
    pytest.importorskip("rich")
    assert cli.main(["--list", "-k", "jacobian"]) == 0
    out = capsys.readouterr().out
    assert "jacobian_rows" in out and "jacobian_forward_mode" in out
    assert "mlp_step_b16" not in out


def test_k_without_match_is_a_usage_error(capsys):
    assert cli.main(["-k", "no-such-workload", "--plain"]) == 2
    assert "no workload matches" in capsys.readouterr().err


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    """One nbgrad-bench run shared by the tests below: three cheap workloads and one that is
    skipped while nbgrad has no profiler, --compare torch when PyTorch is installed, one thread
    (two thread pools on a busy machine are slow, not wrong)."""
    path = tmp_path_factory.mktemp("bench") / "out.json"
    argv = ["-k", "backward_call", "-k", "jacobian_vectorize", "-k", "mlp_step_b16"]
    argv += ["-k", "profiler", "--quick", "--repeat", "2", "--target", "0.001", "--plain"]
    argv += ["--threads", "1"] + (["--compare", "torch"] if HAS_TORCH else [])
    threads_before = numba.get_num_threads()
    rc = cli.main(argv + ["--json", str(path)])
    return {
        "rc": rc,
        "doc": json.loads(path.read_text()),
        "threads_before": threads_before,
        "threads_after": numba.get_num_threads(),
    }


def test_json_validates_against_schema(bench_run):
    assert bench_run["rc"] == 0
    doc = bench_run["doc"]
    schema.validate(doc)
    try:
        import jsonschema
    except ImportError:
        pass
    else:
        jsonschema.validate(doc, schema.SCHEMA)
    names = [w["name"] for w in doc["workloads"]]
    assert names == ["backward_call", "mlp_step_b16", "profiler_overhead", "jacobian_vectorize"]
    rows = {w["name"]: w for w in doc["workloads"]}
    assert rows["backward_call"]["status"] == "ok"
    assert len(rows["backward_call"]["results"]["nbgrad"]["values"]) == 2
    assert {"nbgrad", "numpy"} <= set(rows["mlp_step_b16"]["results"])
    assert "numpy" in rows["mlp_step_b16"]["ratios"]
    assert "numpy" not in rows["backward_call"]["results"]
    if W._profiler(nbgrad) is None:
        assert rows["profiler_overhead"]["status"] == "skipped"
        assert "profiler" in rows["profiler_overhead"]["reason"]
    assert doc["settings"]["quick"] is True and doc["settings"]["repeat"] == 2
    assert doc["machine"]["versions"]["nbgrad"] == nbgrad.__version__


@needs_torch
def test_compare_torch(bench_run):
    rows = {w["name"]: w for w in bench_run["doc"]["workloads"]}
    assert set(rows["jacobian_vectorize"]["ratios"]) == {"torch"}
    assert set(rows["mlp_step_b16"]["results"]) == {"nbgrad", "torch", "numpy"}
    r = rows["mlp_step_b16"]["ratios"]["torch"]
    assert r["min"] <= r["median"] <= r["max"]
    assert bench_run["doc"]["machine"]["threads"]["torch"] == 1
    assert bench_run["doc"]["settings"]["compare"] == ["torch", "numpy"]


def test_threads_are_set_and_restored(bench_run):
    threads = bench_run["doc"]["machine"]["threads"]
    assert threads["requested"] == 1 and threads["numba"] == 1
    assert any("numba.set_num_threads(1)" in h for h in threads["how"])
    assert bench_run["threads_after"] == bench_run["threads_before"]
    assert W.FreshProcess.extra_env == {}


def test_schema_rejects_bad_documents(bench_run):
    doc = bench_run["doc"]
    bad = json.loads(json.dumps(doc))
    del bad["machine"]["cpu"]
    with pytest.raises(schema.ValidationError, match="cpu"):
        schema.validate(bad)
    bad = json.loads(json.dumps(doc))
    bad["workloads"][0]["status"] = "fine"
    with pytest.raises(schema.ValidationError, match="status"):
        schema.validate(bad)
    bad = json.loads(json.dumps(doc))
    bad["workloads"][0]["results"]["nbgrad"]["median"] = "fast"
    with pytest.raises(schema.ValidationError, match="median"):
        schema.validate(bad)


def test_schema_in_docs_is_current():
    text = open(os.path.join(ROOT, "docs", "benchmarks.md")).read()
    block = re.search(r"<!-- schema -->\s*```json\n(.*?)```", text, re.S)
    assert block, "docs/benchmarks.md lost its schema block"
    assert json.loads(block.group(1)) == schema.SCHEMA


def test_profile_option(capsys):
    rc = cli.main(["--profile", "backward_call", "--quick", "--plain"])
    if W._profiler(nbgrad) is None:
        assert rc == 2
        assert "profiler" in capsys.readouterr().err
    else:
        assert rc == 0
        assert "Self CPU" in capsys.readouterr().out


def test_python_m_nbgrad_demo(capsys):
    from nbgrad.bench import main

    argv = ["-k", "backward_call", "--repeat", "1", "--target", "0.001", "--plain"]
    assert main(argv + ["--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "y.grad_fn = SumBackward0" in out
    assert "backward_call" in out


def test_timing_combines_parts():
    class Two:
        parts = {"a": None, "b": None}
        self_timed = False

        def setup(self, T, quick):
            return {"a": lambda: sum(range(50)), "b": lambda: None}

        def value(self, s):
            return s["a"] - s["b"]

    out = timing.run_workload(Two(), {"nbgrad": nbgrad, "numpy": None}, repeat=3, target=1e-3)
    assert set(out["results"]) == {"nbgrad", "numpy"}
    assert len(out["results"]["nbgrad"]["values"]) == 3
    assert out["results"]["nbgrad"]["number"]["a"] >= 1
    assert set(out["ratios"]) == {"numpy"}


def test_asv_benchmarks_cover_the_workloads():
    """The asv file loads the checkout's workloads and defines a class for each."""
    path = os.path.join(ROOT, "asv_bench", "benchmarks", "bench_workloads.py")
    spec = importlib.util.spec_from_file_location("_test_asv_bench_workloads", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.W.__file__ == os.path.join(ROOT, "nbgrad", "bench", "workloads.py")
    for w in W.WORKLOADS:
        cls = getattr(mod, w.name)
        methods = [m for m in dir(cls) if m.startswith(("time_", "peakmem_", "track_"))]
        assert "track_value" in methods
        if not w.self_timed:
            assert {"time_" + p for p in w.parts} <= set(methods)
        if w.numpy:
            assert "track_ratio_to_numpy" in methods
        if w.torch:
            assert hasattr(getattr(mod, w.name + "_torch"), "track_ratio_to_torch")
    with open(os.path.join(ROOT, "asv_bench", "asv.conf.json")) as f:
        conf = json.loads(re.sub(r"^\s*//.*$", "", f.read(), flags=re.M))
    assert conf["environment_type"] == "virtualenv"
    assert {"numba", "numpy"} <= set(conf["matrix"]["req"])
