import pytest

import nbgrad

try:  # the oracle is optional: its absence skips oracle tests, never fails them
    import torch  # noqa: F401

    HAS_TORCH = True
except Exception:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch (the oracle) is not installed")


@pytest.fixture(scope="session", autouse=True)
def _warm_kernels():
    """Compile/load the common kernels once per test run, not per test."""
    nbgrad.warmup(("float32", "float64"))
    yield


@pytest.fixture(autouse=True)
def _default_dtype():
    yield
    nbgrad.set_default_dtype(nbgrad.float32)
