"""CPU binding of the formula vocabulary (kernels/vocab.py): numpy functions and the vocabulary's
helpers compiled with ``njit(inline="always")``.  Generated CPU kernels (kernels/build.py)
``from nbgrad.kernels.cpu.scalar import *``.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from .. import vocab
from .vformula import verf, vexp, vsigmoid, vtanh

__all__ = list(vocab.VOCAB)

# exp, tanh and sigmoid: vformula's (NOTE [vectorised gates] in rnn.py: branch-free float32 Cephes
# that LLVM vectorises, at most 2 ulp; float64 stays libm)
exp = vexp
exp2 = np.exp2
log = np.log
log2 = np.log2
log1p = np.log1p
expm1 = np.expm1
sqrt = np.sqrt
sin = np.sin
cos = np.cos
tan = np.tan
tanh = vtanh
floor = np.floor
ceil = np.ceil
trunc = np.trunc
rint = np.rint  # round half to even, as PyTorch
fabs = np.abs
isnan = np.isnan
copysign = np.copysign  # (helpers only)
erf = verf  # numpy has no erf; vformula's vectorises for float32, math.erf otherwise
atan = np.arctan
asin = np.arcsin
acos = np.arccos
sinh = np.sinh
cosh = np.cosh
asinh = np.arcsinh
acosh = np.arccosh
atanh = np.arctanh
atan2 = np.arctan2
hypot = np.hypot


def _inline(helper):
    return njit(inline="always")(vocab.rebind(helper, globals()))


where = _inline(vocab.where)
_sigmoid_onesided = _inline(vocab.sigmoid)


def _sigmoid(x):
    """CPU ``sigmoid``: vformula's for float32 (vectorised; vocab.sigmoid's one-sided form
    branches), vocab.sigmoid's otherwise (float64 results unchanged, ulp for ulp)."""
    return vocab.sigmoid(x)


@overload(_sigmoid, jit_options={"error_model": "numpy"})
def _sigmoid_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: vsigmoid(x)
    return lambda x: _sigmoid_onesided(x)


sigmoid = _sigmoid
sign = _inline(vocab.sign)


def _rsqrt(x):
    """CPU ``rsqrt`` (vocab.rsqrt's maths), typed by the overload below."""
    return vocab.rsqrt(x)


@overload(_rsqrt, jit_options={"error_model": "numpy"})
def _rsqrt_typed(x):
    # Numba's fast-math flags reach every instruction of a kernel module, and with 'arcp'/'afn'
    # LLVM turns a float32 ``1 / sqrt(x)`` into an rsqrt estimate: NaN at 0 and inf, ulps off
    # elsewhere.  x86 has no float64 estimate, so float32 is computed in float64 (rounded once).
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: 1.0 / np.sqrt(np.float64(x))
    return lambda x: 1 / np.sqrt(x)


rsqrt = _rsqrt
noselect = _inline(vocab.noselect)
floor_divide = _inline(vocab.floor_divide)


def _spow(x, p):
    """CPU ``spow`` (vocab.spow's maths), typed by the overload below."""
    return vocab.spow(x, p)


@overload(_spow, jit_options={"error_model": "numpy"})
def _spow_typed(x, p):
    if isinstance(x, types.Integer):  # integers: exact integer power, no float branches
        return lambda x, p: x**p
    return vocab.rebind(vocab.spow, globals())


spow = _spow


def _fmod(a, b):
    """CPU ``fmod``: C's fmod; integers typed by the overload below (Numba's np.fmod gives
    fmod(-7, 3) == 0 for int64)."""
    return math.fmod(a, b)


@overload(_fmod, jit_options={"error_model": "numpy"})
def _fmod_typed(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):

        def ifmod(a, b):  # the sign of the dividend, as C's %
            r = abs(a) % abs(b)
            return -r if a < 0 else r

        return ifmod
    return lambda a, b: np.fmod(a, b)


fmod = _fmod
conj = _inline(vocab.conj)
real = _inline(vocab.real)
maximum = _inline(vocab.maximum)
minimum = _inline(vocab.minimum)
