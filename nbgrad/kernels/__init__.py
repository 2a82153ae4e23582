"""Compiled code only (Numba); no autograd logic.  See kernels/pointwise.py for the builder."""
import numba  # noqa: F401  (imported after nbgrad._config chose NUMBA_CACHE_DIR)

# NOTE [kernel flags]: numpy error model (no ZeroDivisionError checks, so loops vectorise), no
# GIL, and every fastmath flag except nnan/ninf: NaN and Inf must survive for isnan and anomaly
# mode.  Measured in NUMBA-NOTES.md section 3.3.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
from .. import _config  # noqa: E402

JIT = dict(nogil=True, cache=_config.USE_DISK_CACHE, error_model="numpy", fastmath=FASTMATH)
