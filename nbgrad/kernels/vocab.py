"""The formula vocabulary, declared once: what a pointwise formula may call (``VOCAB``).

This module is also the plain-Python (``math``) binding of it, holding the one copy of each
helper body; kernels/cpu/scalar.py and kernels/cuda/scalar.py compile those bodies with ``rebind``.
"""

import math
import types

VOCAB = (
    "where",
    "sigmoid",
    "sign",
    "rsqrt",
    "erf",
    "exp",
    "exp2",
    "log",
    "log2",
    "log1p",
    "expm1",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "fabs",
    "isnan",
    "maximum",
    "minimum",
    "conj",
    "real",
    "fmod",
    "spow",
    "floor_divide",
    "noselect",
    "atan",
    "asin",
    "acos",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "atan2",
    "hypot",
)

__all__ = list(VOCAB) + ["VOCAB", "rebind"]

# Library functions: each binding replaces these with its own (numpy ufuncs, CUDA ``math``).
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
fmod = math.fmod
copysign = math.copysign  # (helpers only)
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


def rebind(fn, namespace):
    """``fn`` whose global names (``exp``, ``floor``, ...) are looked up in ``namespace``.

    A binding passes its module's ``globals()``, so a helper body written here calls that
    binding's library functions (``np.exp`` on the CPU, ``math.exp`` on CUDA) when compiled.
    """
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)


# Helpers: every binding compiles these bodies.


def where(c, a, b):
    return a if c else b


def sigmoid(x):
    # one-sided formulas keep exp from overflowing for large |x|
    if x >= 0:
        return 1 / (1 + exp(-x))
    e = exp(x)
    return e / (1 + e)


def sign(x):  # sign(nan) is 0 (PyTorch), and sign(-0.0) is +0.0
    return 1 if x > 0 else (-1 if x < 0 else 0)


def rsqrt(x):
    return 1 / sqrt(x)


def noselect(x):
    """The identity, but a product with it is never rewritten into a select (kernels/build.py
    NOTE [select, never multiply by a mask]): for PyTorch formulas that multiply by a masked
    value, ``g * noselect(where(c, 0, v))`` is NaN where ``g`` is."""
    return x


def spow(x, p):
    """``x ** p`` for a scalar exponent as PyTorch computes it: p = 2, 3, 0.5, -0.5, -1, -2 are
    x*x, x*x*x, sqrt, rsqrt, 1/x, 1/(x*x) (so spow(-inf, 0.5) is NaN like sqrt, not C pow's
    inf), C pow otherwise."""
    if p == 1:
        return x
    if p == 2:
        return x * x
    if p == 0.5:
        return sqrt(x)
    if p == 3:
        return x * x * x
    if p == -0.5:
        return rsqrt(x)
    if p == -1:
        return 1 / x
    if p == -2:
        return 1 / (x * x)
    return x**p


def floor_divide(a, b):
    """PyTorch's (and numpy's) floating floor division: from fmod, exact where floor(a / b)
    rounds (floor_divide(1, 0.1) is 9, not 10); a / b for b == 0."""
    if b == 0:
        return a / b
    mod = fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1
    if div != 0:
        fl = floor(div)
        if div - fl > 0.5:
            fl += 1
        return fl
    return copysign(0.0, a / b)


def conj(x):  # complex conjugate; the identity on real numbers
    return x.conjugate()


def real(x):
    return x.real


def maximum(a, b):  # NaN-propagating, like numpy and PyTorch
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b  # noqa: FURB136  (max() may order NaN/-0.0 otherwise in Numba)


def minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b  # noqa: FURB136


# For targets whose library lacks them (CUDA's math); the CPU binding uses numpy's ufuncs.


def exp2(x):
    return math.pow(2.0, x)


def rint(x):
    # round half to even (numpy's and PyTorch's rule), from floor
    return floor(x + 0.5) if x - floor(x) != 0.5 else 2.0 * floor(x / 2.0 + 0.5)
