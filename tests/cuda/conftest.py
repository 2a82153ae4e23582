"""Tests of nbgrad on CUDA.  They run when numba.cuda can launch kernels: on a GPU, or under the
simulator (``NUMBA_ENABLE_CUDASIM=1``, which must be set before numba is imported, so the main
suite runs this folder in a subprocess: tests/test_cuda_suite.py).  Otherwise they are not
collected at all (numba.cuda in the main process is the real driver)."""

import os

import pytest


def _cuda_usable():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return True
    if os.environ.get("NBGRAD_CUDA_TESTS") != "gpu":  # real-GPU runs are asked for explicitly
        return False
    try:
        from numba import cuda

        return cuda.is_available()
    except Exception:
        return False


if not _cuda_usable():
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.cuda)
