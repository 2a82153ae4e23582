"""CPU binding of the formula vocabulary (kernels/vocab.py): numpy functions and the vocabulary's
helpers compiled with ``njit(inline="always")``.  Generated CPU kernels (kernels/build.py)
``from nbgrad.kernels.cpu.scalar import *``.
"""

import math

import numpy as np
from numba import njit

from .. import vocab

__all__ = list(vocab.VOCAB)

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
rint = np.rint  # round half to even, as PyTorch
fabs = np.abs
isnan = np.isnan
erf = math.erf  # numpy has no erf


def _inline(helper):
    return njit(inline="always")(vocab.rebind(helper, globals()))


where = _inline(vocab.where)
sigmoid = _inline(vocab.sigmoid)
sign = _inline(vocab.sign)
rsqrt = _inline(vocab.rsqrt)
maximum = _inline(vocab.maximum)
minimum = _inline(vocab.minimum)
