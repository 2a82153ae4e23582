"""The vectorisable float32 transcendentals of kernels/cpu/vmath.py: ulp error against float64
libm over the float32 range, the special values, and the float64 dispatch to libm."""

import numpy as np
import pytest
from numba import njit

from nbgrad.kernels.cpu.vformula import as_type_of, verf, vexp, vsigmoid, vtanh


@njit
def _apply_exp(x, out):
    for i in range(x.size):
        out[i] = vexp(x[i])


@njit
def _apply_tanh(x, out):
    for i in range(x.size):
        out[i] = vtanh(x[i])


@njit
def _apply_sigmoid(x, out):
    for i in range(x.size):
        out[i] = vsigmoid(x[i])


@njit
def _cast(v, like):
    return as_type_of(v, like)


def _run(kernel, x):
    out = np.empty_like(x)
    kernel(x, out)
    return out


def _ulp(a, ref):
    """|a - ref| in float32 ulps of ref (both finite float32)."""
    ai = a.view(np.int32).astype(np.int64)
    ri = ref.view(np.int32).astype(np.int64)
    # map the sign-magnitude bit patterns onto a monotonic integer line
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    ri = np.where(ri < 0, -(ri & 0x7FFFFFFF), ri)
    return np.abs(ai - ri)


SMALLEST_NORMAL = np.finfo(np.float32).tiny


def _sweep(lo, hi, n=1 << 20):
    x = np.linspace(lo, hi, n, dtype=np.float64).astype(np.float32)
    tiny = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 1e-30, -1e-30], np.float32)
    return np.concatenate([x, tiny])


def test_exp_ulp_over_the_float32_range():
    x = _sweep(-104.0, 88.8)
    got = _run(_apply_exp, x)
    ref = np.exp(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    normal = (ref >= SMALLEST_NORMAL) & np.isfinite(ref)
    assert _ulp(got[normal], ref[normal]).max() <= 2
    small = ref < SMALLEST_NORMAL  # denormal results: within two denormal steps
    assert np.abs(got[small].astype(np.float64) - ref[small]).max() <= 2 * 2.0**-149
    assert np.array_equal(np.isinf(got), np.isinf(ref))  # overflow exactly where libm's
    assert got[x == 0].tolist() == [1.0, 1.0]


def test_exp_ends_and_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 88.72, 88.73, -104.0, -1e30, 1e30], np.float32)
    got = _run(_apply_exp, x)
    assert got[0] == np.inf and got[1] == 0.0 and np.isnan(got[2])
    assert np.isfinite(got[3]) and _ulp(got[3:4], np.exp(np.float64(x[3])).astype(np.float32)) <= 2
    assert np.all(np.isinf(got[[4, 7]])) and np.all(got[[5, 6]] == 0.0)
    d = np.array([1e-45, -1e-45, 1e-40, -1e-40], np.float32)  # denormal inputs
    assert _run(_apply_exp, d).tolist() == [1.0] * 4


@pytest.mark.parametrize(
    "kernel,ref",
    [(_apply_tanh, np.tanh), (_apply_sigmoid, lambda v: 1 / (1 + np.exp(-v)))],
    ids=["tanh", "sigmoid"],
)
def test_tanh_and_sigmoid_relative_error(kernel, ref):
    x = _sweep(-100.0, 100.0)
    got = _run(kernel, x).astype(np.float64)
    want = ref(x.astype(np.float64))
    big = np.abs(want) > 1e-30
    assert (np.abs(got - want)[big] / np.abs(want[big])).max() < 2e-7
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    out = _run(kernel, special)
    if kernel is _apply_tanh:
        assert out[0] == 1 and out[1] == -1 and np.isnan(out[2]) and out[3] == 0 and out[4] == 0
    else:
        assert out[0] == 1 and out[1] == 0 and np.isnan(out[2]) and out[3] == 0.5


def test_float64_is_libm():
    x = np.linspace(-700, 700, 10001)
    np.testing.assert_array_equal(_run(_apply_exp, x), np.exp(x))
    np.testing.assert_allclose(_run(_apply_tanh, x), np.tanh(x), rtol=1e-15, atol=0)


def test_as_type_of():
    assert isinstance(_cast(1.0 / 3.0, np.float32(0)), float)
    assert np.float32(_cast(1.0 / 3.0, np.float32(0))) == np.float32(1 / 3)
    assert _cast(1.0 / 3.0, 0.0) == 1.0 / 3.0


@njit
def _apply_erf(x, out):
    for i in range(x.size):
        out[i] = verf(x[i])


def test_erf_ulp_and_special_values():
    import math

    x = _sweep(-6.0, 6.0)
    got = _run(_apply_erf, x)
    ref = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    ok = np.abs(ref) >= SMALLEST_NORMAL
    assert _ulp(got[ok], ref[ok]).max() <= 8  # Eigen/XLA's rational form: 7 ulp near |x|=3.3
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 10.0, -10.0], np.float32)
    out = _run(_apply_erf, special)
    assert out[0] == 1 and out[1] == -1 and np.isnan(out[2])
    assert out[3] == 0 and out[4] == 0 and out[5] == 1 and out[6] == -1
    wide = np.linspace(-30, 30, 1001)  # float64: math.erf itself
    np.testing.assert_array_equal(_run(_apply_erf, wide), [math.erf(v) for v in wide])
