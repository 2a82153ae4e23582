"""Compiled code only (Numba); no autograd logic.  build.py generates the formula kernels."""

import hashlib
import os
import sys

from numba.core import caching, event

from .. import _config

# NOTE [kernel flags]: numpy error model (no ZeroDivisionError checks, so loops vectorise), no
# GIL, and every fastmath flag except nnan/ninf: NaN and Inf must survive for isnan and anomaly
# mode.  Measured in NUMBA-NOTES.md section 3.3.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

JIT = {"nogil": True, "cache": _config.USE_DISK_CACHE, "error_model": "numpy", "fastmath": FASTMATH}

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NOTE [shared kernel helpers]: Numba's cache checks only the source file of the function it
# compiled, but kernels inline helpers from other files (cpu/vmath.py, NOTE [vmath]); a hash
# of those files joins every nbgrad kernel's cache stamp, so editing one recompiles its callers.
_SHARED_HELPERS = tuple(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu", f)
    for f in ("vmath.py", "vformula.py")
)
_HELPERS_STAMP = None


def helpers_stamp():
    global _HELPERS_STAMP
    if _HELPERS_STAMP is None:
        h = hashlib.sha256()
        for path in _SHARED_HELPERS:
            with open(path, "rb") as f:
                h.update(f.read())
        _HELPERS_STAMP = h.hexdigest()
    return _HELPERS_STAMP


class NbgradCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba cache locator for nbgrad's own source files and generated kernels only: their
    compiled code goes to nbgrad's cache folder (NOTE [kernel cache] in _config.py); every
    other function keeps Numba's own rules."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        sub = self.get_suitable_cache_subpath(py_file)
        self._cache_path = os.path.join(_config.CACHE_DIR, "numba", sub)

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return (super().get_source_stamp(), helpers_stamp())  # NOTE [shared kernel helpers]

    @classmethod
    def from_function(cls, py_func, py_file):
        if _config.CACHE_DIR is None:
            return None
        path = os.path.abspath(py_file)
        if not (path.startswith(_PACKAGE + os.sep) or path.startswith(_config.CACHE_DIR)):
            return None
        return super().from_function(py_func, py_file)


# the cache implementation is ``CacheImpl`` (numba >= 0.61) or ``_CacheImpl`` (0.60)
_LOCATORS = (getattr(caching, "CacheImpl", None) or caching._CacheImpl)._locator_classes
if NbgradCacheLocator not in _LOCATORS:
    _LOCATORS.insert(0, NbgradCacheLocator)


class FirstCompileNotice(event.Listener):
    """NOTE [first run]: the first time one of nbgrad's kernels has to be compiled (a Numba
    cache miss) in a process, say so once on stderr, so a first run is not silent for seconds.
    ``NBGRAD_QUIET=1`` silences it; ``nbgrad.warmup()`` compiles the common kernels up front."""

    shown = False

    def on_start(self, ev):
        if FirstCompileNotice.shown or os.environ.get("NBGRAD_QUIET", "") == "1":
            return
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if not getattr(fn, "__module__", "").startswith(("nbgrad", "nbgrad_gen")):
            return
        FirstCompileNotice.shown = True
        where = "cached in %s" % _config.CACHE_DIR if _config.CACHE_DIR else "no writable cache"
        sys.stderr.write(
            "nbgrad: compiling kernels on first use (about 0.1 s each, a few seconds in all; %s; "
            "NBGRAD_QUIET=1 silences this)\n" % where
        )

    def on_end(self, ev):
        pass


event.register("numba:compile", FirstCompileNotice())
