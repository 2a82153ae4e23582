"""Compiled code only (Numba); no autograd logic.  build.py generates the formula kernels."""

import numba  # noqa: F401  (after nbgrad/__init__.py ran _config, which set NUMBA_CACHE_DIR)

from .. import _config

# NOTE [kernel flags]: numpy error model (no ZeroDivisionError checks, so loops vectorise), no
# GIL, and every fastmath flag except nnan/ninf: NaN and Inf must survive for isnan and anomaly
# mode.  Measured in NUMBA-NOTES.md section 3.3.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

JIT = {"nogil": True, "cache": _config.USE_DISK_CACHE, "error_model": "numpy", "fastmath": FASTMATH}
