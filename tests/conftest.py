import importlib.util
import os

import pytest

import nbgrad

# tests/cuda runs nbgrad on CUDA (marker ``cuda``): under the simulator (NUMBA_ENABLE_CUDASIM=1
# must be set before numba is imported, so the main run starts that in a subprocess:
# tests/test_cuda_suite.py) or on a real GPU, where the same tests run in this process
# (scripts/gpu_check.sh).  Without either they are skipped with the reason.
_SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
if importlib.util.find_spec("numba_cuda") is None:  # no numba-cuda: nothing there can import
    collect_ignore_glob = ["cuda/*"]


def _gpu_reason():
    if _SIM or nbgrad.cuda.is_available():
        return ""
    return (
        "no CUDA GPU (tests/test_cuda_suite.py runs these under numba's simulator; "
        "on a GPU: scripts/gpu_check.sh)"
    )


try:  # the oracle is optional: its absence skips oracle tests, never fails them
    import torch  # noqa: F401

    HAS_TORCH = True
except Exception:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch (the oracle) is not installed")


def pytest_sessionstart(session):
    """Compile/load the common kernels once per test run, not per test, and say so: on an
    empty cache this is the long silent part of a first run."""
    import time

    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    say = tr.write_line if tr is not None else print
    say(
        "nbgrad: warming kernels (compiled once, then loaded from %s)..."
        % (nbgrad._config.CACHE_DIR or "memory")
    )
    t0 = time.perf_counter()
    nbgrad.warmup(("float32", "float64"))
    say("nbgrad: kernels ready in %.1f s" % (time.perf_counter() - t0))


@pytest.fixture(autouse=True)
def _default_dtype():
    yield
    nbgrad.set_default_dtype(nbgrad.float32)


def pytest_collection_modifyitems(items):
    # the simulator run goes on beside the suite (pytest_collection_finish): its test, which
    # waits for it, goes last
    items.sort(key=lambda item: item.name == "test_cuda_folder_passes_under_the_simulator")
    reason = None
    for item in items:
        if "/tests/cuda/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.cuda)
            if reason is None:
                reason = _gpu_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


_SUITE = []  # tests/test_cuda_suite.py, once its simulator run is started


def pytest_collection_finish(session):
    """Start tests/cuda under the simulator now, beside the rest of the run, when its test is
    selected (tests/test_cuda_suite.py)."""
    # (under pytest-xdist every worker collects every test: the one that runs it starts it)
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in session.items:
        if item.name == "test_cuda_folder_passes_under_the_simulator":
            item.module.launch()  # (does nothing without numba-cuda: the test skips)
            _SUITE.append(item.module)
            return


def pytest_sessionfinish(session):
    for suite in _SUITE:
        suite.stop()
