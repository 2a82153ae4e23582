"""Scalar helpers that generated pointwise kernels may call (``from ... import *``).

Keep helpers here, next to nothing else: generated kernel modules import them by name, and the
on-disk cache is versioned by nbgrad's version (NOTE [kernel cache] in _config.py).
"""
import math

import numpy as np
from numba import njit

__all__ = ["where", "sigmoid", "sign", "rsqrt", "erf", "exp", "exp2", "log", "log2", "log1p",
           "expm1", "sqrt", "sin", "cos", "tan", "tanh", "floor", "ceil", "trunc", "rint",
           "fabs", "isnan", "np", "math", "maximum", "minimum"]

exp = np.exp
exp2 = np.exp2
log = np.log
log2 = np.log2
log1p = np.log1p
expm1 = np.expm1
sqrt = np.sqrt
sin = np.sin
cos = np.cos
tan = np.tan
tanh = np.tanh
floor = np.floor
ceil = np.ceil
trunc = np.trunc
rint = np.rint
fabs = np.abs
isnan = np.isnan


@njit(inline="always")
def where(c, a, b):
    return a if c else b


@njit(inline="always")
def sigmoid(x):
    # one-sided formulas keep exp from overflowing for large |x|
    if x >= 0:
        return 1 / (1 + np.exp(-x))
    e = np.exp(x)
    return e / (1 + e)


@njit(inline="always")
def sign(x):
    return (x > 0) - (x < 0) if x == x else x


@njit(inline="always")
def rsqrt(x):
    return 1 / np.sqrt(x)


@njit(inline="always")
def erf(x):
    return math.erf(x)


@njit(inline="always")
def maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


@njit(inline="always")
def minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b
