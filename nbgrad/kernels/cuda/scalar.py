"""CUDA binding of the formula vocabulary (kernels/vocab.py): ``math`` functions and the
vocabulary's helpers compiled as ``cuda.jit`` device functions.  Generated CUDA kernels
(kernels/build.py) ``from nbgrad.kernels.cuda.scalar import *``.

``inline="always"`` inlines at Numba-IR level: numba-cuda deprecates a bool ``inline``, and the
simulator ignores the option.
"""

import math

from numba import cuda

from .. import vocab

__all__ = list(vocab.VOCAB)

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
fmod = math.fmod
copysign = math.copysign  # (helpers only)
erf = math.erf
atan = math.atan
asin = math.asin
acos = math.acos
sinh = math.sinh
cosh = math.cosh
asinh = math.asinh
acosh = math.acosh
atanh = math.atanh
atan2 = math.atan2
hypot = math.hypot


# Under the simulator the kernels run as Python: math.log(0) or math.exp(1000) would raise where
# the GPU gives -inf / inf, so the simulator binds numpy's functions (IEEE results, same types).
if cuda.config.ENABLE_CUDASIM:
    import numpy as _np

    exp, log, log2, log1p, expm1, sqrt = _np.exp, _np.log, _np.log2, _np.log1p, _np.expm1, _np.sqrt
    sin, cos, tan, tanh, sinh, cosh = _np.sin, _np.cos, _np.tan, _np.tanh, _np.sinh, _np.cosh
    asin, acos, atan, asinh, acosh, atanh = (
        _np.arcsin,
        _np.arccos,
        _np.arctan,
        _np.arcsinh,
        _np.arccosh,
        _np.arctanh,
    )
    floor, ceil, trunc, fabs, fmod = _np.floor, _np.ceil, _np.trunc, _np.fabs, _np.fmod
    atan2, hypot, copysign = _np.arctan2, _np.hypot, _np.copysign
    _np.seterr(all="ignore")  # (the GPU raises nothing either)


def _device(helper):
    return cuda.jit(device=True, inline="always")(vocab.rebind(helper, globals()))


where = _device(vocab.where)
sigmoid = _device(vocab.sigmoid)
sign = _device(vocab.sign)
rsqrt = _device(vocab.rsqrt)
noselect = _device(vocab.noselect)
spow = _device(vocab.spow)
floor_divide = _device(vocab.floor_divide)
conj = _device(vocab.conj)
real = _device(vocab.real)
maximum = _device(vocab.maximum)
minimum = _device(vocab.minimum)
exp2 = _device(vocab.exp2)
rint = _device(vocab.rint)
