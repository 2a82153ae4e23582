import pytest

import nbgrad

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
