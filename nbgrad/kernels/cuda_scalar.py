"""CUDA device-side versions of the scalar vocabulary in kernels/scalar.py (same names).

Generated CUDA kernel modules (``pointwise.kernel_source(..., cuda=True)``) import these with
``from nbgrad.kernels.cuda_scalar import *``; keep ``__all__`` equal to scalar.py's
(tests/test_cuda_sim.py checks it).  ``inline="always"`` inlines at Numba-IR level: numba-cuda
deprecates a bool ``inline``, and the simulator ignores the option.
"""
import math

import numpy as np
from numba import cuda

__all__ = ["where", "sigmoid", "sign", "rsqrt", "erf", "exp", "exp2", "log", "log2", "log1p",
           "expm1", "sqrt", "sin", "cos", "tan", "tanh", "floor", "ceil", "trunc", "rint",
           "fabs", "isnan", "np", "math", "maximum", "minimum"]

exp = math.exp
log = math.log
log2 = math.log2
log1p = math.log1p
expm1 = math.expm1
sqrt = math.sqrt
sin = math.sin
cos = math.cos
tan = math.tan
tanh = math.tanh
floor = math.floor
ceil = math.ceil
trunc = math.trunc
fabs = math.fabs
isnan = math.isnan
erf = math.erf


@cuda.jit(device=True, inline="always")
def exp2(x):
    return math.pow(2.0, x)


@cuda.jit(device=True, inline="always")
def rint(x):
    return math.floor(x + 0.5) if x - math.floor(x) != 0.5 else 2.0 * math.floor(x / 2.0 + 0.5)


@cuda.jit(device=True, inline="always")
def where(c, a, b):
    return a if c else b


@cuda.jit(device=True, inline="always")
def sigmoid(x):
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


@cuda.jit(device=True, inline="always")
def sign(x):
    return (x > 0) - (x < 0) if x == x else x


@cuda.jit(device=True, inline="always")
def rsqrt(x):
    return 1 / math.sqrt(x)


@cuda.jit(device=True, inline="always")
def maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


@cuda.jit(device=True, inline="always")
def minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b
