"""Process-wide settings that must be fixed before Numba is imported.

NOTE [kernel cache]: Numba's on-disk cache (``cache=True``) needs a writable folder, and with none
it raises at decoration time.  We pick a per-user folder with the nbgrad version in its name (so a
new release never loads stale kernels compiled from older helper sources) unless the user set
``NUMBA_CACHE_DIR`` or ``NBGRAD_CACHE_DIR``.  Never site-packages.
"""

import os
import tempfile

VERSION = "0.1.0"


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".probe-%d" % os.getpid())
        with open(probe, "w"):
            pass
        os.remove(probe)
        return True
    except OSError:
        return False


def choose_cache_dir():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    candidates = []
    if os.environ.get("NBGRAD_CACHE_DIR"):
        candidates.append(os.environ["NBGRAD_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(os.path.join(base, "nbgrad", VERSION))
    candidates.append(
        os.path.join(
            tempfile.gettempdir(),
            "nbgrad-cache-%s-%s" % (os.getuid() if hasattr(os, "getuid") else "u", VERSION),
        )
    )
    for c in candidates:
        if _writable(c):
            os.environ["NUMBA_CACHE_DIR"] = c
            return c
    return None


CACHE_DIR = choose_cache_dir()
if CACHE_DIR is not None and "numba" in __import__("sys").modules:
    # numba was imported before nbgrad and read its config already: tell it directly
    __import__("numba").config.CACHE_DIR = CACHE_DIR
# Kernels compile with cache=True only when a writable folder exists.
USE_DISK_CACHE = CACHE_DIR is not None and os.environ.get("NBGRAD_DISABLE_CACHE", "") != "1"
