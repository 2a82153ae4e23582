"""Vectorisable float32 exp, tanh, sigmoid and erf for the formula vocabulary's CPU binding
(kernels/cpu/scalar.py), with the generated kernels' helpers ``at`` and ``as_type_of``.

vmath.py has exp/expm1/log/log1p/tanh/erf/sigmoid for both dtypes (the LSTM/GRU gates use it);
these are the ones measured to vectorise inside numba's ufunc loops and the generated loop
kernels (docs/performance.md, "Vectorised transcendentals").

pip's llvmlite has no SVML, so ``np.exp``/``np.tanh`` inside a Numba loop are scalar libm calls
(about 8 ns each) that stop LLVM from vectorising the loop.  For float32 these are branch-free
Cephes-style ``expf``/``tanhf`` (range reduction, a polynomial, the exponent put in with integer
bits; saturation and NaN by selects, not branches) that LLVM vectorises.  ``vexp``/``vtanh``/
``vsigmoid`` pick them for float32 and libm for float64 at compile time, so one kernel source
serves both dtypes.

Accuracy (tests/test_vformula.py, against float64 libm over the float32 range, 2**20 points plus
the special values): ``vexp`` at most 2 ulp where the result is a normal float32, within 2
denormal steps below that, 0 / inf exactly where libm's float32 result is, NaN for NaN, exactly
1 at 0.  ``vtanh`` and ``vsigmoid``: relative error below 2e-7, exact saturation (+-1, 0, 1).
``verf``: at most 8 ulp (7 near |x| = 3.3, where erf is within 1e-6 of 1), +-1 beyond |x| = 4."""

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

_F = np.float32
_LOG2E = _F(1.44269504088896341)
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)
_EXP_P = (
    _F(1.9875691500e-4),
    _F(1.3981999507e-3),
    _F(8.3334519073e-3),
    _F(4.1665795894e-2),
    _F(1.6666665459e-1),
    _F(5.0000001201e-1),
)
# exp overflows above ln(FLT_MAX) and rounds to 0 below ln(2**-150)
_EXP_HI, _EXP_LO = _F(88.72283905206835), _F(-103.97207708399179)
_TANH_P = (
    _F(-5.70498872745e-3),
    _F(2.06390887954e-2),
    _F(-5.37397155531e-2),
    _F(1.33314422036e-1),
    _F(-3.33332819422e-1),
)
_ZERO, _HALF, _ONE, _TWO, _INF = _F(0), _F(0.5), _F(1), _F(2), _F(np.inf)


@njit(inline="always")
def expf(x):
    """Cephes ``expf`` without branches: 2^k * p(r), x = k ln2 + r, with 2^k applied as two
    normal powers of two so that the whole float32 range is right: finite up to ln(FLT_MAX),
    denormal results below -87.34 (rounded once, by the last multiply), 0 below ln(2**-150),
    inf above, NaN for NaN."""
    p0, p1, p2, p3, p4, p5 = _EXP_P
    xc = min(max(x, _EXP_LO), _EXP_HI)
    k = np.floor(xc * _LOG2E + _HALF)
    r = xc - k * _LN2_HI - k * _LN2_LO
    y = (((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5) * (r * r) + r + _ONE
    ki = np.int32(k)
    k1 = ki >> np.int32(1)  # k in [-150, 128]: both halves give normal powers of two
    k2 = ki - k1
    e1 = np.int32((k1 + np.int32(127)) << np.int32(23)).view(np.float32)
    e2 = np.int32((k2 + np.int32(127)) << np.int32(23)).view(np.float32)
    res = (y * e1) * e2
    res = _INF if x > _EXP_HI else res
    res = _ZERO if x < _EXP_LO else res
    return res if x == x else x


@njit(inline="always")
def tanhf(x):
    """Cephes ``tanhf``: an odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above."""
    t0, t1, t2, t3, t4 = _TANH_P
    a = abs(x)
    z = x * x
    small = ((((t0 * z + t1) * z + t2) * z + t3) * z + t4) * z * x + x
    big = _ONE - _TWO / (expf(_TWO * a) + _ONE)
    big = big if x >= _ZERO else -big
    return small if a < _F(0.625) else big


def vtanh(x):
    """tanh: vectorisable for float32, libm otherwise (NOTE [vectorised gates])."""
    return np.tanh(x)


def vsigmoid(x):
    """1 / (1 + exp(-x)): vectorisable for float32, libm otherwise."""
    return 1 / (1 + np.exp(-x))


@overload(vtanh, jit_options={"error_model": "numpy"})
def _tanh_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: tanhf(x)
    return lambda x: np.tanh(x)


@overload(vsigmoid, jit_options={"error_model": "numpy"})
def _sigmoid_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _ONE / (_ONE + expf(-x))
    return lambda x: 1.0 / (1.0 + np.exp(-x))


def vexp(x):
    """exp: vectorisable for float32, libm otherwise."""
    return np.exp(x)


@overload(vexp, jit_options={"error_model": "numpy"})
def _vexp_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: expf(x)
    return lambda x: np.exp(x)


def as_type_of(v, like):
    """``v`` converted to the type of ``like`` (a float32 kernel computes a difference in
    float64, then exponentiates it in float32: fast-math cannot re-associate across the cast)."""
    return v


@overload(as_type_of, jit_options={"error_model": "numpy"})
def _as_type_of_typed(v, like):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda v, like: np.float32(v)
    return lambda v, like: np.float64(v)


# erf: the rational minimax approximation on [-4, 4] used by Eigen and XLA for float32
# (an odd polynomial over an even one in x^2); |x| >= 4 is +-1 in float32
_ERF_A = (
    _F(-2.72614225801306e-10),
    _F(2.77068142495902e-08),
    _F(-2.10102402082508e-06),
    _F(-5.69250639462346e-05),
    _F(-7.34990630326855e-04),
    _F(-2.95459980854025e-03),
    _F(-1.60960333262415e-02),
)
_ERF_B = (
    _F(-1.45660718464996e-05),
    _F(-2.13374055278905e-04),
    _F(-1.68282697438203e-03),
    _F(-7.37332916720468e-03),
    _F(-1.42647390514189e-02),
)
_FOUR = _F(4)


@njit(inline="always")
def erff(x):
    """Branch-free float32 erf: x * P(x^2) / Q(x^2) on x clamped to [-4, 4]; NaN for NaN."""
    a13, a11, a9, a7, a5, a3, a1 = _ERF_A
    b8, b6, b4, b2, b0 = _ERF_B
    xc = min(max(x, -_FOUR), _FOUR)
    x2 = xc * xc
    p = x2 * a13 + a11
    p = x2 * p + a9
    p = x2 * p + a7
    p = x2 * p + a5
    p = x2 * p + a3
    p = x2 * p + a1
    p = xc * p
    q = x2 * b8 + b6
    q = x2 * q + b4
    q = x2 * q + b2
    q = x2 * q + b0
    r = p / q
    return r if x == x else x


def verf(x):
    """erf: vectorisable for float32, libm (``math.erf``) otherwise."""
    return math.erf(x)


@overload(verf, jit_options={"error_model": "numpy"})
def _verf_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: erff(x)
    return lambda x: math.erf(x)


def at(a, i):
    """``a[i]`` for an array, ``a`` itself for a scalar: the generated loop kernels' operand
    access (NOTE [loop kernels] in kernels/build.py)."""
    return a[i]


@overload(at, inline="always")
def _at_typed(a, i):
    if isinstance(a, types.Array):
        return lambda a, i: a[i]
    return lambda a, i: a


def sl(a, b, m):
    """``a[b:b + m]`` for an array, ``a`` itself for a scalar: a block of a loop kernel's
    operand (the fused sum kernel, kernels/build.py ``_sum_kernel``)."""
    return a[b : b + m]


@overload(sl, inline="always")
def _sl_typed(a, b, m):
    if isinstance(a, types.Array):
        return lambda a, b, m: a[b : b + m]
    return lambda a, b, m: a
