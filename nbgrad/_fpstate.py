"""NOTE [quiet ufuncs]: IEEE results (inf, nan) without numpy's RuntimeWarnings, like PyTorch.

Setting numpy's error-state context variable directly costs 0.16 us against 0.9 us for
``np.errstate``; fall back to the public API if the private one moves.
"""

import contextvars

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar as EXTOBJ

    with np.errstate(all="ignore"):
        IGNORE = EXTOBJ.get()
except Exception:  # pragma: no cover - other numpy versions: a harmless stand-in
    EXTOBJ = contextvars.ContextVar("nbgrad_fpstate")
    IGNORE = None


def call_quiet(kernel, args):
    if IGNORE is None:  # pragma: no cover
        with np.errstate(all="ignore"):
            return kernel(*args)
    token = EXTOBJ.set(IGNORE)
    try:
        return kernel(*args)
    finally:
        EXTOBJ.reset(token)
