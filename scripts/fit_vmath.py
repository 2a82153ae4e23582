#!/usr/bin/env python
"""Fits the polynomial coefficients of nbgrad/kernels/cpu/vmath.py (a development tool).

Each approximation is a near-minimax polynomial, found by Lawson's iteratively reweighted least
squares on a dense Chebyshev-distributed grid, in 50-digit arithmetic (mpmath, a sympy
dependency; not needed at run time).  The coefficients are then rounded to the target float
type and the rounded polynomial's error is reported in units of that type's epsilon, weighted
as vmath.py uses it (the polynomial is one term of a larger expression, so what matters is its
error relative to the final result).  The printed tuples are pasted into vmath.py.

    python scripts/fit_vmath.py            # all fits
    python scripts/fit_vmath.py exp32 erf64
"""

import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def lawson(f, weight, lo, hi, degree, points=400, iters=60):
    """Coefficients c[0..degree] (increasing powers) of p minimising max |w(x) (f(x) - p(x))|
    over ``points`` Chebyshev-distributed x in [lo, hi]."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (i + 0.5) / points) for i in range(points)]
    fx = [f(x) for x in xs]
    wx = [weight(x) for x in xs]
    lw = [mp.mpf(1) / points] * points  # Lawson weights
    best = None
    for _ in range(iters):
        a = mp.matrix(points, degree + 1)
        b = mp.matrix(points, 1)
        for i, x in enumerate(xs):
            s = mp.sqrt(lw[i]) * wx[i]
            p = mp.mpf(1)
            for j in range(degree + 1):
                a[i, j] = s * p
                p *= x
            b[i] = s * fx[i]
        c, _ = mp.qr_solve(a, b)
        c = [c[j] for j in range(degree + 1)]
        err = [abs(wx[i] * (fx[i] - mp.polyval(c[::-1], xs[i]))) for i in range(points)]
        m = max(err)
        if best is None or m < best[0]:
            best = (m, c)
        tot = mp.fsum(lw[i] * err[i] for i in range(points))
        lw = [lw[i] * err[i] / tot for i in range(points)]
    return best[1], best[0]


def check(name, f, weight, lo, hi, coefs, ftype, eval_poly):
    """Max weighted error of the polynomial with coefficients rounded to ``ftype``, in eps."""
    eps = mp.mpf(float(np.finfo(ftype).eps))
    rc = [mp.mpf(float(ftype(float(c)))) for c in coefs]
    worst = 0
    for x in mp.linspace(lo, hi, 4000):
        e = abs(weight(x) * (f(x) - eval_poly(rc, x)))
        worst = max(worst, e)
    print("# %s: max weighted error of the rounded polynomial %.3g eps" % (name, worst / eps))
    return [ftype(float(c)) for c in coefs]


def show(name, coefs, ftype):
    fmt = "%.9e" if ftype is np.float32 else "%.17e"
    print("%s = (  # increasing powers" % name)
    for c in coefs:
        print("    %s," % (fmt % float(c)))
    print(")")


def horner(c, x):
    return mp.polyval(c[::-1], x)


LN2 = mp.log(2)


def fit_exp(ftype, degree, name=None):
    """exp(r) = 1 + r + r^2 P(r) on |r| <= ln2/2 (plus a margin for the reduction error);
    weight: r^2 / exp(r), the error of P relative to exp(r).  expm1 uses the same P."""
    h = LN2 / 2 * mp.mpf("1.0005")

    def P(r):
        if abs(r) < mp.mpf("1e-20"):
            return mp.mpf(1) / 2
        return (mp.exp(r) - 1 - r) / r**2

    def w(r):
        return r**2 / mp.exp(r)

    c, _ = lawson(P, w, -h, h, degree)
    name = name or "EXP%d_P" % (32 if ftype is np.float32 else 64)
    c = check(name, P, w, -h, h, c, ftype, horner)
    show(name, c, ftype)


def fit_log32(degree):
    """log1p(f) = f - f^2/2 + f^3 Q(f), f = m - 1, m in [sqrt(1/2), sqrt(2)); weight
    f^3 / log1p(f), the error of Q relative to log(m)."""
    lo, hi = mp.sqrt(0.5) - 1, mp.sqrt(2) - 1

    def Q(f):
        if abs(f) < mp.mpf("1e-20"):
            return mp.mpf(1) / 3
        return (mp.log1p(f) - f + f**2 / 2) / f**3

    def w(f):
        if abs(f) < mp.mpf("1e-20"):
            return f**2
        return abs(f**3 / mp.log1p(f))

    c, _ = lawson(Q, w, lo, hi, degree)
    c = check("LOG32_Q", Q, w, lo, hi, c, np.float32, horner)
    show("LOG32_Q", c, np.float32)


def fit_log64(degree):
    """log(1+f) = 2 atanh(s) = 2s + s R(z), s = f / (2 + f), z = s^2 in [0, s_max^2],
    R(z) = z P(z); weight: s z / (2 atanh s) = error of P relative to log(1+f)."""
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * mp.mpf("1.0005")
    hi = smax**2

    def P(z):
        if z < mp.mpf("1e-30"):
            return mp.mpf(2) / 3
        s = mp.sqrt(z)
        return (2 * mp.atanh(s) / s - 2) / z

    def w(z):
        if z < mp.mpf("1e-30"):
            return z / 2
        s = mp.sqrt(z)
        return s * z / (2 * mp.atanh(s))

    c, _ = lawson(P, w, 0, hi, degree)
    c = check("LOG64_P", P, w, 0, hi, c, np.float64, horner)
    show("LOG64_P", c, np.float64)


def erf_small(ftype, xa, degree):
    """erf(x) = x + x A(x^2) for |x| < xa; weight x / erf(x): A's error relative to erf."""

    def A(z):
        if z < mp.mpf("1e-30"):
            return 2 / mp.sqrt(mp.pi) - 1
        x = mp.sqrt(z)
        return mp.erf(x) / x - 1

    def w(z):
        if z < mp.mpf("1e-30"):
            return mp.sqrt(mp.pi) / 2
        x = mp.sqrt(z)
        return x / mp.erf(x)

    hi = mp.mpf(xa) ** 2 * mp.mpf("1.001")
    c, _ = lawson(A, w, 0, hi, degree)
    name = "ERF%d_A" % (32 if ftype is np.float32 else 64)
    c = check(name, A, w, 0, hi, c, ftype, horner)
    show(name, c, ftype)


def erf_big(ftype, lo, hi, degree, tag):
    """erf(x) = 1 - exp(-x^2) B(x) on [lo, hi], B(x) = erfc(x) exp(x^2) as a polynomial in
    t = x - mid (mid: the interval's centre, printed; small |t| keeps Horner's intermediate
    values small); weight exp(-x^2) / erf(x): B's error in units of erf's value (erf is near
    1, so erfc needs ever fewer correct digits as x grows)."""
    mid = ftype((lo + hi) / 2)
    m = mp.mpf(float(mid))

    def B(t):
        x = t + m
        return mp.erfc(x) * mp.exp(x**2)

    def w(t):
        x = t + m
        return mp.exp(-(x**2)) / mp.erf(x)

    c, e = lawson(B, w, lo - m, hi - m, degree)
    print("# %s: fitted error %.3g eps" % (tag, e / float(np.finfo(ftype).eps)))
    name = "ERF%d_B%s" % (32 if ftype is np.float32 else 64, tag)
    print("# %s: t = |x| - %r" % (name, float(mid)))
    c = check(name, B, w, lo - m, hi - m, c, ftype, horner)
    show(name, c, ftype)


def fit_tanh(ftype, xa, degree):
    """tanh(x) = x + x^3 T(x^2) for |x| < xa; weight x^3 / tanh(x): T's error relative to
    tanh."""

    def T(z):
        if z < mp.mpf("1e-30"):
            return -mp.mpf(1) / 3
        x = mp.sqrt(z)
        return (mp.tanh(x) / x - 1) / z

    def w(z):
        if z < mp.mpf("1e-30"):
            return z
        x = mp.sqrt(z)
        return x**3 / mp.tanh(x)

    hi = mp.mpf(xa) ** 2 * mp.mpf("1.001")
    c, _ = lawson(T, w, 0, hi, degree)
    name = "TANH%d_T" % (32 if ftype is np.float32 else 64)
    c = check(name, T, w, 0, hi, c, ftype, horner)
    show(name, c, ftype)


FITS = {
    "tanh32": lambda: fit_tanh(np.float32, 0.55, 4),
    "tanh64": lambda: fit_tanh(np.float64, 0.55, 10),
    "exp32": lambda: fit_exp(np.float32, 4),
    "exp64": lambda: fit_exp(np.float64, 9),
    # float32 exp evaluated in float64, to ~2^-50: its float32 result is correctly rounded
    # but in the rarest near-ties
    "exp32d": lambda: fit_exp(np.float64, 6, "EXP32D_P"),
    "log32": lambda: fit_log32(7),
    "log64": lambda: fit_log64(6),
    "erf32": lambda: (
        erf_small(np.float32, 0.875, 5),
        erf_big(np.float32, 0.87, 3.93, 10, ""),
    ),
    "erf64": lambda: (
        erf_small(np.float64, 0.875, 11),
        erf_big(np.float64, 0.87, 2.0, 15, "1"),
        erf_big(np.float64, 2.0, 6.0, 15, "2"),
    ),
}


def main(argv):
    for name in argv or FITS:
        print("# ---", name)
        FITS[name]()
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
