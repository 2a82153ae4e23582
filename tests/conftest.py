import os

import pytest

import nbgrad

# tests/cuda runs nbgrad on CUDA: under the simulator (NUMBA_ENABLE_CUDASIM=1 must be set before
# numba is imported, so the main run starts it in a subprocess: tests/test_cuda_suite.py) or on
# a GPU when asked for (NBGRAD_CUDA_TESTS=gpu, scripts/gpu_check.sh).  Otherwise it is not
# collected: numba.cuda in this process is the real driver.
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and os.environ.get("NBGRAD_CUDA_TESTS") != "gpu":
    collect_ignore_glob = ["cuda/*"]

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
    for item in items:
        if "/tests/cuda/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.cuda)
