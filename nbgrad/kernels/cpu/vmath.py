"""Vectorisable transcendental functions for CPU kernels: exp, expm1, log, log1p, tanh, erf,
sigmoid, for float32 and float64.

NOTE [vmath]: pip's llvmlite has no SVML, so ``np.exp``/``math.tanh`` inside a Numba loop are
scalar libm calls and the loop does not vectorise (NUMBA-NOTES section 3.3: ``exp`` 5x and
``tanh`` 40x slower than numpy's SIMD ufuncs).  These are branch-free versions (range reduction,
a near-minimax polynomial, selects instead of branches, the powers of two built from bits) that
LLVM inlines and vectorises like plain arithmetic.  They follow libm (and PyTorch) at every
special value: NaN in gives NaN out, +-inf and +-0 give libm's results, subnormal inputs and
results are exact (exp(-100) in float32 is a subnormal, not 0), overflow gives inf.  The
maximum errors, measured by tests/test_vmath.py over dense sweeps of each dtype's whole range,
are in docs/performance.md ("Vectorised transcendentals"); the coefficients come from
scripts/fit_vmath.py.

Each public name is a dtype dispatch (``numba.extending.overload``): float32 and float64 get
their own approximation, anything else (integers, complex) numpy's function, as before.  The
implementations compile with their own flags, ``_FLAGS`` (only ``contract`` of the fast-math
set, so FMAs but no re-association: the Cody-Waite range reductions ``x - k*hi - k*lo`` must not
be regrouped, and -0.0 stays -0.0), and LLVM inlines them into the caller's loop, whose own
flags (kernels/__init__.py FASTMATH) apply only to the caller's instructions.  Outside Numba
the names are numpy's functions (``math.erf`` for erf).

Kernels in other files that call these are cached by Numba under their own file's hash:
kernels/__init__.py adds this file's hash to every nbgrad kernel's cache stamp.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

_FLAGS = {"error_model": "numpy", "fastmath": {"contract"}, "forceinline": True}

# ---------------------------------------------------------------------------------------------
# constants (scripts/fit_vmath.py prints the polynomial tuples; increasing powers)

F = np.float32
D = np.float64

# ln 2 split in two: hi has few significant bits, so k * hi is exact for every k used
F_LN2_HI, F_LN2_LO = F(0.693359375), F(-2.12194440e-4)
D_LN2_HI, D_LN2_LO = D(6.93147180369123816490e-01), D(1.90821492927058770002e-10)
F_LOG2E, D_LOG2E = F(1.44269504088896341), D(1.44269504088896341)

EXP32_P = (  # exp(r) = 1 + r + r^2 P(r), |r| <= ln2 / 2
    F(4.999999404e-01),
    F(1.666652113e-01),
    F(4.166838899e-02),
    F(8.368745446e-03),
    F(1.381453825e-03),
)
EXP64_P = (
    D(5.00000000000001110e-01),
    D(1.66666666666664104e-01),
    D(4.16666666665297183e-02),
    D(8.33333333349497996e-03),
    D(1.38888889437616581e-03),
    D(1.98412695057735187e-04),
    D(2.48014929479873698e-05),
    D(2.75575868003707292e-06),
    D(2.76303068029811978e-07),
    D(2.50000207895556856e-08),
)
EXP32D_P = (  # float32 exp, evaluated in float64: to 2^-39, so float32 results round once
    D(5.00000000042853276e-01),
    D(1.66666667847965910e-01),
    D(4.16666643982358323e-02),
    D(8.33328170473161996e-03),
    D(1.38891977530905823e-03),
    D(1.99090067798705743e-04),
    D(2.47081932257271002e-05),
)
LOG32_Q = (  # log1p(f) = f - f^2 / 2 + f^3 Q(f), f in [sqrt(1/2) - 1, sqrt(2) - 1)
    F(3.333333135e-01),
    F(-2.500082254e-01),
    F(2.000122666e-01),
    F(-1.662335694e-01),
    F(1.420176178e-01),
    F(-1.316019446e-01),
    F(1.276154965e-01),
    F(-7.634429634e-02),
)
LOG64_P = (  # log1p(f) = 2s + s z P(z), s = f / (2 + f), z = s^2
    D(6.66666666666673513e-01),
    D(3.99999999994127886e-01),
    D(2.85714287428899372e-01),
    D(2.22221985136374617e-01),
    D(1.81835678171822696e-01),
    D(1.53139515387747144e-01),
    D(1.47970334435679252e-01),
)
TANH32_T = (  # tanh(x) = x + x^3 T(x^2), |x| < 0.55
    F(-3.333331645e-01),
    F(1.333258301e-01),
    F(-5.385199562e-02),
    F(2.107029408e-02),
    F(-6.272158585e-03),
)
TANH64_T = (
    D(-3.33333333333332982e-01),
    D(1.33333333333265580e-01),
    D(-5.39682539637229147e-02),
    D(2.18694883847464876e-02),
    D(-8.86323258276076886e-03),
    D(3.59209183661628141e-03),
    D(-1.45554156464941325e-03),
    D(5.88439079240380921e-04),
    D(-2.33367462198530944e-04),
    D(8.32957401016406389e-05),
    D(-1.94816010409361700e-05),
)
ERF32_A = (  # erf(x) = x + x A(x^2), |x| < 0.875
    F(1.283791512e-01),
    F(-3.761255145e-01),
    F(1.128244996e-01),
    F(-2.679125592e-02),
    F(5.031838547e-03),
    F(-6.201285869e-04),
)
ERF32_MID = F(2.4000000953674316)
ERF32_B = (  # erf(x) = 1 - exp(-x^2) B(x - 2.4), 0.875 <= x < 3.93
    F(2.184986472e-01),
    F(-7.958562672e-02),
    F(2.749613672e-02),
    F(-9.054695256e-03),
    F(2.878778614e-03),
    F(-8.964101435e-04),
    F(2.051008487e-04),
    F(-9.689034050e-05),
    F(4.195842484e-05),
    F(2.074575605e-05),
    F(1.002688441e-05),
)
ERF64_A = (  # erf(x) = x + x A(x^2), |x| < 0.875
    D(1.28379167095512586e-01),
    D(-3.76126389031837371e-01),
    D(1.12837916709542962e-01),
    D(-2.68661706449308708e-02),
    D(5.22397762293685345e-03),
    D(-8.54832683820440516e-04),
    D(1.20553242764752375e-04),
    D(-1.49253802173559266e-05),
    D(1.64564976728974834e-06),
    D(-1.62881678486297033e-07),
    D(1.41168370936772540e-08),
    D(-8.65209289238525853e-10),
)
ERF64_SPLIT = D(2.0)
ERF64_MID1, ERF64_MID2 = D(1.435), D(4.0)
ERF64_B1 = (  # erf(x) = 1 - exp(-x^2) B1(x - 1.435), 0.875 <= x < 2
    D(3.32551932810462192e-01),
    D(-1.73955119929484425e-01),
    D(8.29263357116470090e-02),
    D(-3.66372187890873849e-02),
    D(1.51759633746875646e-02),
    D(-5.94388452897567834e-03),
    D(2.21549636478530435e-03),
    D(-7.89899378298884020e-04),
    D(2.70497530193706127e-04),
    D(-8.92730843373245155e-05),
    D(2.84797025620888207e-05),
    D(-8.80779631091972969e-06),
    D(2.63253116772882979e-06),
    D(-7.56103388683277506e-07),
    D(2.38712693052696010e-07),
    D(-7.70183609024829177e-08),
)
ERF64_B2 = (  # 1 - exp(-x^2) B2(x - 4), 2 <= x < 6
    D(1.36999457635826855e-01),
    D(-3.23835060573937975e-02),
    D(7.46543269830701305e-03),
    D(-1.68118577839447081e-03),
    D(3.70344942790433278e-04),
    D(-7.99070355060714369e-05),
    D(1.69398972120074969e-05),
    D(-3.44723532808846501e-06),
    D(7.61888979284826797e-07),
    D(-1.55134456215004363e-07),
    D(-2.69190743742145485e-08),
    D(-6.05787209935520905e-08),
    D(-2.95314073011756493e-08),
    D(-1.05643090036752069e-08),
    D(-2.01271499579493441e-09),
    D(-1.97369806713846933e-10),
)

F_ZERO, F_HALF, F_ONE, F_TWO = F(0), F(0.5), F(1), F(2)
D_ZERO, D_HALF, D_ONE, D_TWO = D(0), D(0.5), D(1), D(2)
F_INF, D_INF = F(np.inf), D(np.inf)
F_NAN, D_NAN = F(np.nan), D(np.nan)
F_SQRT2, D_SQRT2 = F(1.41421356237309505), D(1.41421356237309505)


# ---------------------------------------------------------------------------------------------
# polynomials: Horner on a fixed-length tuple (unrolled by Numba)


@njit(inline="always")
def _horner(c, x):
    p = c[-1]
    for i in range(len(c) - 2, -1, -1):
        p = p * x + c[i]
    return p


# ---------------------------------------------------------------------------------------------
# exp / expm1


@njit(inline="always")
def _pow2_32(k):
    """2^k as float32 for an int32 k in [-126, 127] (from the exponent bits)."""
    return np.int32((k + np.int32(127)) << np.int32(23)).view(np.float32)


@njit(inline="always")
def _pow2_64(k):
    """2^k as float64 for an int64 k in [-1022, 1023]."""
    return np.int64((k + np.int64(1023)) << np.int64(52)).view(np.float64)


@njit(inline="always")
def _reduce32(x, lo, hi):
    """x clamped to [lo, hi] (NaN stays NaN) = k ln2 + rh + rl: k = rint(x / ln2) as a float
    and as an int32 (both from one add of 1.5 * 2^23, which rounds to an integer; exact
    without re-association), rh = x - k ln2_hi exact, rl = -k ln2_lo tiny."""
    xc = hi if x > hi else x
    xc = lo if xc < lo else xc
    t = xc * F_LOG2E + F(12582912.0)
    kf = t - F(12582912.0)
    ki = np.float32(t).view(np.int32) - np.int32(0x4B400000)
    return kf, ki, xc - kf * F_LN2_HI, -kf * F_LN2_LO


@njit(inline="always")
def _reduce64(x, lo, hi):
    xc = hi if x > hi else x
    xc = lo if xc < lo else xc
    t = xc * D_LOG2E + D(6755399441055744.0)
    kf = t - D(6755399441055744.0)
    ki = np.float64(t).view(np.int64) - np.int64(0x4338000000000000)
    return kf, ki, xc - kf * D_LN2_HI, -kf * D_LN2_LO


@njit(inline="always")
def _exp32(x):
    """float32 exp, evaluated in float64: x = k ln2 + r, exp(x) = 2^k (1 + r + r^2 P(r)) good
    to 2^-39, so the float32 result (subnormal, overflowing to inf, or normal) is one rounding
    of a nearly exact value: correctly rounded but for about 1 in 10^4-10^5 near-ties, as
    glibc's expf, so bit-equal to PyTorch's exp far more often than a float32 evaluation
    (0.85 ULP, 10% misrounded) would be.  NaN passes through (the clamps keep it)."""
    xc = F(89) if x > F(89) else x
    xc = F(-104) if xc < F(-104) else xc
    xd = np.float64(xc)
    t = xd * D_LOG2E + D(6755399441055744.0)
    kf = t - D(6755399441055744.0)
    r = xd - kf * D(0.6931471805599453)  # |k| <= 150: an error of 2^-44 at most
    y = D_ONE + (r + r * r * _horner(EXP32D_P, r))
    s = np.int64((np.float64(t).view(np.int64) << np.int64(52)) + np.int64(0x3FF0000000000000))
    return np.float32(y * s.view(np.float64))  # 2^k: k in [-150, 129], a normal double


@njit(inline="always")
def _exp32f(x):
    """float32 exp in float32 arithmetic (0.85 ULP; half the cost of ``_exp32``), for
    functions whose own rounding errors dominate (sigmoid, erf).  2^k is applied as two
    factors 2^(k/2), so subnormal results (down to x = -103.97) round once, and x > 88.72
    overflows to inf; NaN passes through."""
    kf, ki, rh, rl = _reduce32(x, F(-104), F(89))
    r = rh + rl
    y = F_ONE + (rh + (rl + r * r * _horner(EXP32_P, r)))
    k1 = np.int32(ki >> np.int32(1))
    return (y * _pow2_32(k1)) * _pow2_32(np.int32(ki - k1))


@njit(inline="always")
def _exp64(x):
    kf, ki, rh, rl = _reduce64(x, D(-746), D(710))
    r = rh + rl
    y = D_ONE + (rh + (rl + r * r * _horner(EXP64_P, r)))
    k1 = ki >> np.int64(1)
    return (y * _pow2_64(k1)) * _pow2_64(ki - k1)


@njit(inline="always")
def _expm1_32(x):
    """x = k ln2 + rh + rl (rh exact, rl tiny), expm1(x) = (2^k rh + (2^k - 1)) + 2^k (rl +
    r^2 P(r)): the first sum is exact where it would cancel (k = 1, r < 0), so the error is
    that of the small second term.  For k > 23 (2^k - 1 no longer exact) it is
    2^k ((rh - 2^-k + ...) + 1), the power of two applied in two factors as in exp (k = 128
    does not fit a float32 exponent).  Below -30 the result is -1; |x| < 2^-25 gives x."""
    kf, ki, rh, rl = _reduce32(x, F(-30), F(89))
    r = rh + rl
    rrp = rl + r * r * _horner(EXP32_P, r)
    t = _pow2_32(ki if ki < np.int32(23) else np.int32(23))
    small = (t * rh + (t - F_ONE)) + t * rrp
    tinv = _pow2_32(-ki if ki < np.int32(64) else np.int32(-64))
    k1 = np.int32(ki >> np.int32(1))
    big = (((rh - tinv) + rrp) + F_ONE) * _pow2_32(k1) * _pow2_32(np.int32(ki - k1))
    y = small if ki <= np.int32(23) else big
    return x if abs(x) < F(2.98023224e-08) else y


@njit(inline="always")
def _expm1_64(x):
    kf, ki, rh, rl = _reduce64(x, D(-50), D(710))
    r = rh + rl
    rrp = rl + r * r * _horner(EXP64_P, r)
    t = _pow2_64(ki if ki < np.int64(52) else np.int64(52))
    small = (t * rh + (t - D_ONE)) + t * rrp
    tinv = _pow2_64(-ki if ki < np.int64(512) else np.int64(-512))
    k1 = ki >> np.int64(1)
    big = (((rh - tinv) + rrp) + D_ONE) * _pow2_64(k1) * _pow2_64(ki - k1)
    y = small if ki <= np.int64(52) else big
    return x if abs(x) < D(5.551115123125783e-17) else y


# ---------------------------------------------------------------------------------------------
# log / log1p


@njit(inline="always")
def _split32(x):
    """(f, e) with x = (1 + f) 2^e, 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0 (others
    give some value: the callers select); read from the bits, subnormals scaled by 2^23."""
    sub = x < F(1.17549435e-38)
    xs = x * F(8388608.0) if sub else x
    bits = np.float32(xs).view(np.int32)
    e = ((bits >> np.int32(23)) & np.int32(0xFF)) - np.int32(127)
    e = e - np.int32(23) if sub else e
    m = np.int32((bits & np.int32(0x7FFFFF)) | np.int32(0x3F800000)).view(np.float32)
    big = m > F_SQRT2
    m = m * F_HALF if big else m
    e = e + np.int32(1) if big else e
    return m - F_ONE, F(e)


@njit(inline="always")
def _split64(x):
    sub = x < D(2.2250738585072014e-308)
    xs = x * D(18014398509481984.0) if sub else x  # 2^54
    bits = np.float64(xs).view(np.int64)
    e = ((bits >> np.int64(52)) & np.int64(0x7FF)) - np.int64(1023)
    e = e - np.int64(54) if sub else e
    m = np.int64((bits & np.int64(0xFFFFFFFFFFFFF)) | np.int64(0x3FF0000000000000)).view(np.float64)
    big = m > D_SQRT2
    m = m * D_HALF if big else m
    e = e + np.int64(1) if big else e
    return m - D_ONE, D(e)


@njit(inline="always")
def _log1p_core32(f, ef):
    """log((1 + f) 2^e) = e ln2 + f - f^2 / 2 + f^3 Q(f), summed small terms first."""
    z = f * f
    y = f * z * _horner(LOG32_Q, f)
    y = y + ef * F_LN2_LO
    y = y - F_HALF * z
    return (f + y) + ef * F_LN2_HI


@njit(inline="always")
def _log1p_core64(f, ef):
    """log((1 + f) 2^e) = e ln2 + 2s + s R(s^2), s = f / (2 + f), arranged so that f enters
    exactly and only the small terms carry rounding errors."""
    s = f / (D_TWO + f)
    z = s * s
    rz = z * _horner(LOG64_P, z)
    hfsq = D_HALF * f * f
    return ef * D_LN2_HI - ((hfsq - (s * (hfsq + rz) + ef * D_LN2_LO)) - f)


@njit(inline="always")
def _log32(x):
    f, ef = _split32(x)
    y = _log1p_core32(f, ef)
    y = -F_INF if x == F_ZERO else y
    y = F_NAN if x < F_ZERO else y
    return x if ((x != x) | (x == F_INF)) else y


@njit(inline="always")
def _log64(x):
    f, ef = _split64(x)
    y = _log1p_core64(f, ef)
    y = -D_INF if x == D_ZERO else y
    y = D_NAN if x < D_ZERO else y
    return x if ((x != x) | (x == D_INF)) else y


@njit(inline="always")
def _log1p32(x):
    """For 1 + x in [sqrt(1/2), sqrt(2)) the core polynomial on x itself (exact input);
    elsewhere log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second term is u's
    rounding error, exactly (u - 1 and x - (u - 1) are exact)."""
    u = F_ONE + x
    f, ef = _split32(u)
    near = (x > F(-0.29289323)) & (x < F(0.41421354))
    c = (x - (u - F_ONE)) / u
    c = F_ZERO if (near | (u == F_INF)) else c
    y = _log1p_core32(x if near else f, F_ZERO if near else ef) + c
    y = -F_INF if u == F_ZERO else y
    y = F_NAN if u < F_ZERO else y
    return x if ((abs(x) < F(2.98023224e-08)) | (x != x) | (x == F_INF)) else y


@njit(inline="always")
def _log1p64(x):
    u = D_ONE + x
    f, ef = _split64(u)
    near = (x > D(-0.2928932188134524)) & (x < D(0.41421356237309503))
    c = (x - (u - D_ONE)) / u
    c = D_ZERO if (near | (u == D_INF)) else c
    y = _log1p_core64(x if near else f, D_ZERO if near else ef) + c
    y = -D_INF if u == D_ZERO else y
    y = D_NAN if u < D_ZERO else y
    return x if ((abs(x) < D(5.551115123125783e-17)) | (x != x) | (x == D_INF)) else y


# ---------------------------------------------------------------------------------------------
# tanh, sigmoid, erf


@njit(inline="always")
def _tanh32(x):
    """x + x^3 T(x^2) below 0.55; above, 1 - 2 / (expm1(2|x|) + 2), where the error of
    expm1 is damped by the small 2 / (m + 2) (inf above 44 gives 1).  Below 2^-12 (2^-27 for
    float64) the result is x itself, which keeps -0.0."""
    a = abs(x)
    z = x * x
    small = x + x * z * _horner(TANH32_T, z)
    big = F_ONE - F_TWO / (_expm1_32(F_TWO * a) + F_TWO)
    big = -big if x < F_ZERO else big
    y = small if a < F(0.55) else big
    return x if ((a < F(2.44140625e-4)) | (x != x)) else y  # tanh x rounds to x: keeps -0.0


@njit(inline="always")
def _tanh64(x):
    a = abs(x)
    z = x * x
    small = x + x * z * _horner(TANH64_T, z)
    big = D_ONE - D_TWO / (_expm1_64(D_TWO * a) + D_TWO)
    big = -big if x < D_ZERO else big
    y = small if a < D(0.55) else big
    return x if ((a < D(7.450580596923828e-09)) | (x != x)) else y


@njit(inline="always")
def _sigmoid32(x):
    """1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: e^-|x| never overflows, and the
    tail below -88 is subnormal, not 0."""
    e = _exp32f(-abs(x))
    return (F_ONE if x >= F_ZERO else e) / (F_ONE + e)


@njit(inline="always")
def _sigmoid64(x):
    e = _exp64(-abs(x))
    return (D_ONE if x >= D_ZERO else e) / (D_ONE + e)


@njit(inline="always")
def _erf32(x):
    """x + x A(x^2) below 0.875; 1 - e^(-x^2) B(|x| - 2.4) up to 3.93, +-1 above."""
    a = abs(x)
    z = x * x
    small = x + x * _horner(ERF32_A, z)
    big = F_ONE - _exp32f(-z) * _horner(ERF32_B, a - ERF32_MID)
    big = F_ONE if a >= F(3.93) else big
    big = -big if x < F_ZERO else big
    y = small if a < F(0.875) else big
    return y if x == x else x


@njit(inline="always")
def _erf64(x):
    """x + x A(x^2) below 0.875; 1 - e^(-x^2) B(|x| - mid) up to 6 (two coefficient sets,
    chosen per element by a select), +-1 above."""
    a = abs(x)
    z = x * x
    small = x + x * _horner(ERF64_A, z)
    lo = a < ERF64_SPLIT
    t = a - (ERF64_MID1 if lo else ERF64_MID2)
    p = ERF64_B1[-1] if lo else ERF64_B2[-1]
    for i in range(len(ERF64_B1) - 2, -1, -1):
        p = p * t + (ERF64_B1[i] if lo else ERF64_B2[i])
    big = D_ONE - _exp64(-z) * p
    big = D_ONE if a >= D(6) else big
    big = -big if x < D_ZERO else big
    y = small if a < D(0.875) else big
    return y if x == x else x


# ---------------------------------------------------------------------------------------------
# the dtype dispatch: what kernels call


def _is32(x):
    return isinstance(x, types.Float) and x.bitwidth == 32


def _is64(x):
    return isinstance(x, types.Float) and x.bitwidth == 64


def _dispatch(stub, f32, f64, other):
    """Register the overload of ``stub``: f32 / f64 for float32 / float64 arguments,
    ``other`` (numpy's function) for the rest."""

    def typer(x):
        if _is32(x):
            return lambda x: f32(x)
        if _is64(x):
            return lambda x: f64(x)
        return lambda x: other(x)

    overload(stub, jit_options=_FLAGS)(typer)
    return stub


def exp(x):
    """e^x (NOTE [vmath])."""
    return np.exp(x)


def expm1(x):
    """e^x - 1, exact near 0 (NOTE [vmath])."""
    return np.expm1(x)


def log(x):
    """Natural logarithm (NOTE [vmath])."""
    return np.log(x)


def log1p(x):
    """log(1 + x), exact near 0 (NOTE [vmath])."""
    return np.log1p(x)


def tanh(x):
    """Hyperbolic tangent (NOTE [vmath])."""
    return np.tanh(x)


def sigmoid(x):
    """1 / (1 + e^-x), one-sided so it never overflows (NOTE [vmath])."""
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def erf(x):
    """The error function (NOTE [vmath])."""
    return np.vectorize(math.erf, otypes=[np.result_type(x, np.float32)])(x)


_dispatch(exp, _exp32, _exp64, np.exp)
_dispatch(expm1, _expm1_32, _expm1_64, np.expm1)
_dispatch(log, _log32, _log64, np.log)
_dispatch(log1p, _log1p32, _log1p64, np.log1p)
_dispatch(tanh, _tanh32, _tanh64, np.tanh)
_dispatch(sigmoid, _sigmoid32, _sigmoid64, lambda x: 1 / (1 + np.exp(-x)))
_dispatch(erf, _erf32, _erf64, math.erf)


FUNCTIONS = {
    "exp": exp,
    "expm1": expm1,
    "log": log,
    "log1p": log1p,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "erf": erf,
}
