"""``nbgrad.utils.collect_env``: versions and settings to paste into a bug report
(``python -m nbgrad.utils.collect_env``)."""

import importlib.metadata
import os
import platform
import sys

from .. import _config, cuda

__all__ = ["collect_env", "get_env_info"]


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def get_env_info():
    """A dict: nbgrad and dependency versions, the kernel cache, threads, CUDA."""
    import numba
    import numpy

    return {
        "nbgrad": _config.VERSION,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "llvmlite": _version("llvmlite"),
        "numba-cuda": _version("numba-cuda"),
        "torch (oracle, not imported)": _version("torch"),
        "kernel cache": _config.CACHE_DIR or "none (kernels compile in memory)",
        "numba threads": numba.config.NUMBA_NUM_THREADS,
        "numba threading layer": numba.config.THREADING_LAYER,
        "cpu count": os.cpu_count(),
        "cuda available": cuda.is_available(),
        "cuda devices": cuda.device_count(),
    }


def collect_env():
    """The environment report as text, one ``key: value`` per line."""
    info = get_env_info()
    width = max(len(k) for k in info)
    return "\n".join("%-*s %s" % (width + 1, k + ":", v) for k, v in info.items())


if __name__ == "__main__":
    print(collect_env())
