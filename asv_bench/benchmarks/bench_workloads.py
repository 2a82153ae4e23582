"""asv benchmarks generated from nbgrad's shared workloads -- the ones ``nbgrad-bench`` runs.

The workload definitions (``nbgrad/bench/workloads.py``) and the timing helpers
(``nbgrad/bench/timing.py``) are loaded *from this checkout's files*, not from the nbgrad
under test: asv benchmarks past commits whose nbgrad has no ``nbgrad.bench.workloads``, and
every commit of a history or of ``asv continuous`` must run the same workload code.  (The
installed ``nbgrad.bench`` modules are the fallback when this folder is used outside a
checkout.)  The workloads use nbgrad's public API only; one that needs an API the commit under
test lacks is skipped (``NotImplementedError`` in ``setup``) when it declares the requirement,
and fails otherwise.

For every workload ``<name>`` (``nbgrad-bench --list``), class ``<name>`` has

- ``time_<part>``: asv's timing of each part (a workload's value combines its parts: the
  per-op cost is ``(time_fwd_n - time_fwd_0) / n``); not for fresh-process workloads;
- ``peakmem_<part>``: peak resident memory, for the large-tensor and training workloads;
- ``track_value``: the workload's value in seconds measured like ``nbgrad-bench`` does (the
  slope itself, or a fresh process's own timing);
- ``track_ratio_to_numpy``: nbgrad / the hand-written numpy step, where there is one;

and class ``<name>_torch`` has ``track_ratio_to_torch`` (nbgrad / PyTorch, median of per-round
ratios, alternating in one process), skipped unless PyTorch is importable in the environment.
"""

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys

import nbgrad  # the nbgrad under test

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name):
    """``nbgrad/bench/<name>.py`` of this checkout; the installed module when there is none."""
    path = os.path.join(_CHECKOUT, "nbgrad", "bench", name + ".py")
    if not os.path.isfile(path):
        return importlib.import_module("nbgrad.bench." + name)
    modname = "_nbgrad_bench_" + name
    if modname not in sys.modules:
        spec = importlib.util.spec_from_file_location(modname, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        spec.loader.exec_module(module)
    return sys.modules[modname]


W = _load("workloads")
timing = _load("timing")

# the track_* measurements (nbgrad-bench's defaults are 7 rounds of >= 20 ms)
ROUNDS, TARGET = 5, 0.01
PEAKMEM_GROUPS = ("workload", "functional")


def _version(w):
    """Changes when the workload's code or sizes change (asv then starts a new series)."""
    h = hashlib.sha256(repr(sorted(w.sizes["full"].items())).encode())
    for f in list(w.parts.values()) + list((w.numpy or {}).values()):
        try:
            h.update(inspect.getsource(f).encode())
        except (OSError, TypeError):
            h.update(repr(f).encode())
    return h.hexdigest()[:16]


def _torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


class _Base:
    workload = None
    timeout = 600

    def _skip_unless_runs(self, T):
        reason = self.workload.skip_reason(T)
        if reason:
            raise NotImplementedError(reason)


class _Workload(_Base):
    def setup(self):
        self._skip_unless_runs(nbgrad)
        self.fns = {}
        if not self.workload.self_timed:
            self.fns = self.workload.setup(nbgrad)
            for fn in self.fns.values():
                fn()  # compile or load the kernels outside the timings

    def teardown(self):
        W.close(getattr(self, "fns", {}))

    def track_value(self):
        out = timing.run_workload(
            self.workload,
            {"nbgrad": nbgrad},
            repeat=3 if self.workload.self_timed else ROUNDS,
            target=TARGET,
        )
        return out["results"]["nbgrad"]["median"]

    track_value.unit = "seconds"


class _Ratio(_Base):
    def setup(self):
        self._skip_unless_runs(nbgrad)
        self.torch = _torch()
        if self.torch is None:
            raise NotImplementedError("PyTorch is not installed in this environment")
        self._skip_unless_runs(self.torch)

    def track_ratio_to_torch(self):
        libs = {"nbgrad": nbgrad, "torch": self.torch}
        out = timing.run_workload(self.workload, libs, repeat=ROUNDS, target=TARGET)
        return out["ratios"]["torch"]["median"]

    track_ratio_to_torch.unit = "ratio"


def _time(part):
    def time_part(self):
        self.fns[part]()

    return time_part


def _peakmem(part):
    def peakmem_part(self):
        self.fns[part]()

    return peakmem_part


def _track_ratio_to_numpy(self):
    libs = {"nbgrad": nbgrad, "numpy": None}
    out = timing.run_workload(self.workload, libs, repeat=ROUNDS, target=TARGET)
    return out["ratios"]["numpy"]["median"]


_track_ratio_to_numpy.unit = "ratio"


def _classes(w):
    attrs = {"workload": w, "version": _version(w), "__doc__": w.label(), "__module__": __name__}
    body = dict(attrs)
    if not w.self_timed:
        for part in w.parts:
            body["time_" + part] = _time(part)
            if w.group in PEAKMEM_GROUPS:
                body["peakmem_" + part] = _peakmem(part)
    if w.numpy:
        body["track_ratio_to_numpy"] = _track_ratio_to_numpy
    yield w.name, type(w.name, (_Workload,), body)
    if w.torch:
        yield w.name + "_torch", type(w.name + "_torch", (_Ratio,), dict(attrs))


for _w in W.WORKLOADS:
    for _name, _cls in _classes(_w):
        globals()[_name] = _cls
del _w, _name, _cls
