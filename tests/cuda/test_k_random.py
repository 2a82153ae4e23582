"""kernels/cuda/random.py: device RNG (xoroshiro128+) fills.  Moments on a few hundred samples
(5-sigma bounds, fixed seeds so the tests are deterministic), ranges, reproducibility under
re-seeding and set_state, successive calls advancing the state, p edge cases, errors."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cuda import random as R

DTYPES = [np.float32, np.float64]
N = 300


def _fill(fn, n, dtype, *args, gen):
    d = cuda.to_device(np.full(n, np.nan, dtype))
    fn(d, *args, gen)
    return d.copy_to_host()


@pytest.mark.parametrize("dtype", DTYPES)
def test_uniform_range_and_moments(dtype):
    g = R.CudaGenerator(1)
    x = _fill(R.uniform_cuda, N, dtype, -2.0, 3.0, gen=g)
    assert x.dtype == dtype
    assert np.all((x >= -2.0) & (x < 3.0))
    sd_mean = 5.0 / np.sqrt(12 * N)
    assert abs(x.mean() - 0.5) < 5 * sd_mean
    assert abs(x.var() - 25 / 12) < 0.5
    assert len(np.unique(x)) == N  # the threads' streams differ


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 33])
def test_normal_fills_every_element(dtype, n):
    x = _fill(R.normal_cuda, n, dtype, 0.0, 1.0, gen=R.CudaGenerator(2))
    assert np.all(np.isfinite(x)) and x.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_normal_moments(dtype):
    x = _fill(R.normal_cuda, N + 1, dtype, 1.5, 2.0, gen=R.CudaGenerator(3))
    assert abs(x.mean() - 1.5) < 5 * 2.0 / np.sqrt(N)
    assert abs(x.std() - 2.0) < 5 * 2.0 / np.sqrt(2 * N)
    assert abs(np.mean(((x - 1.5) / 2.0) ** 3)) < 5 * np.sqrt(15 / N)  # skew ~ 0
    assert len(np.unique(x)) == N + 1


def test_normal_std_zero_is_mean():
    x = _fill(R.normal_cuda, 9, np.float32, 4.0, 0.0, gen=R.CudaGenerator(4))
    assert np.all(x == 4.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_moments_and_values(dtype):
    x = _fill(R.bernoulli_cuda, N, dtype, 0.3, gen=R.CudaGenerator(5))
    assert x.dtype == dtype
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / N)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_edges_and_array_p(dtype):
    g = R.CudaGenerator(6)
    assert np.all(_fill(R.bernoulli_cuda, 33, dtype, 0.0, gen=g) == 0)
    assert np.all(_fill(R.bernoulli_cuda, 33, dtype, 1.0, gen=g) == 1)
    p = np.tile(np.array([0.0, 1.0, 0.5], dtype), 60)
    out = cuda.device_array(p.shape, dtype)
    R.bernoulli_cuda(out, cuda.to_device(p), g)
    x = out.copy_to_host()
    assert np.all(x[0::3] == 0) and np.all(x[1::3] == 1)
    assert 0 < x[2::3].sum() < 60


def test_two_d_out():
    out = cuda.device_array((5, 7), np.float32)
    R.uniform_cuda(out, 0.0, 1.0, R.CudaGenerator(7))
    x = out.copy_to_host()
    assert x.shape == (5, 7) and np.all((x >= 0) & (x < 1)) and len(np.unique(x)) == 35


@pytest.mark.parametrize("fill", ["uniform", "normal", "bernoulli"])
def test_reproducible_and_advancing(fill):
    fn, args = {
        "uniform": (R.uniform_cuda, (0.0, 1.0)),
        "normal": (R.normal_cuda, (0.0, 1.0)),
        "bernoulli": (R.bernoulli_cuda, (0.5,)),
    }[fill]
    g = R.CudaGenerator(123)
    a = _fill(fn, 64, np.float32, *args, gen=g)
    b = _fill(fn, 64, np.float32, *args, gen=g)
    assert not np.array_equal(a, b)  # the state advanced
    g.manual_seed(123)
    np.testing.assert_array_equal(_fill(fn, 64, np.float32, *args, gen=g), a)
    np.testing.assert_array_equal(_fill(fn, 64, np.float32, *args, gen=g), b)
    other = _fill(fn, 64, np.float32, *args, gen=R.CudaGenerator(124))
    assert not np.array_equal(other, a)


def test_get_set_state_replays():
    g = R.CudaGenerator(9)
    R.uniform_cuda(cuda.device_array(20, np.float64), 0.0, 1.0, g)
    st = g.get_state()
    a = _fill(R.normal_cuda, 20, np.float64, 0.0, 1.0, gen=g)
    g.set_state(st)
    np.testing.assert_array_equal(_fill(R.normal_cuda, 20, np.float64, 0.0, 1.0, gen=g), a)
    with pytest.raises(RuntimeError, match="RNG state must be"):
        g.set_state(np.zeros(3))


def test_default_generator_and_module_seed():
    R.manual_seed(11)
    assert R.initial_seed() == 11
    a = _fill(R.uniform_cuda, 16, np.float32, 0.0, 1.0, gen=None)
    R.manual_seed(11)
    np.testing.assert_array_equal(_fill(R.uniform_cuda, 16, np.float32, 0.0, 1.0, gen=None), a)
    R.manual_seed_all(-1)
    assert R.default_generator().initial_seed() == 2**64 - 1
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        R.manual_seed(2**64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_dtype", [np.uint8, np.bool_])
def test_dropout(dtype, mask_dtype):
    g = R.CudaGenerator(12)
    x = np.random.default_rng(0).standard_normal(N).astype(dtype)
    x[:3] = [np.nan, np.inf, -np.inf]
    p = 0.3
    dx, dout = cuda.to_device(x), cuda.device_array(N, dtype)
    dmask = cuda.device_array(N, mask_dtype)
    R.dropout_cuda(dx, p, dout, dmask, g)
    out, mask = dout.copy_to_host(), dmask.copy_to_host()
    assert mask.dtype == mask_dtype and set(np.unique(mask.astype(int))) <= {0, 1}
    keep = mask.astype(bool)
    assert abs(keep.mean() - 0.7) < 5 * np.sqrt(0.21 / N)
    scale = dtype(1.0 / (1.0 - p))
    np.testing.assert_array_equal(out, x * np.where(keep, scale, dtype(0)))  # as the CPU mul


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_p_edges_and_in_place(dtype):
    g = R.CudaGenerator(13)
    x = np.linspace(-1, 1, 33).astype(dtype)
    x[0] = np.nan
    before = g.get_state()
    dx, dmask = cuda.to_device(x), cuda.device_array(33, np.uint8)
    dout = cuda.device_array(33, dtype)
    R.dropout_cuda(dx, 0.0, dout, dmask, g)
    np.testing.assert_array_equal(dout.copy_to_host(), x)
    assert np.all(dmask.copy_to_host() == 1)
    R.dropout_cuda(dx, 1.0, dout, dmask, g)
    np.testing.assert_array_equal(dout.copy_to_host(), x * dtype(0))  # zeros; NaN * 0 stays NaN
    assert np.all(dmask.copy_to_host() == 0)
    np.testing.assert_array_equal(g.get_state(), before)  # p = 0 and p = 1 draw nothing
    R.dropout_cuda(dx, 0.5, dx, dmask, g)  # in place
    keep = dmask.copy_to_host().astype(bool)
    np.testing.assert_array_equal(dx.copy_to_host(), x * np.where(keep, dtype(2), dtype(0)))


def test_empty():
    g = R.CudaGenerator(14)
    e = cuda.device_array(0, np.float32)
    R.uniform_cuda(e, 0.0, 1.0, g)
    R.normal_cuda(e, 0.0, 1.0, g)
    R.bernoulli_cuda(e, 0.5, g)
    R.dropout_cuda(e, 0.5, e, cuda.device_array(0, np.uint8), g)


def test_errors():
    g = R.CudaGenerator(15)
    out = cuda.device_array(4, np.float32)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range"):
        R.uniform_cuda(out, 1.0, 0.0, g)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        R.normal_cuda(out, 0.0, -1.0, g)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\]"):
        R.bernoulli_cuda(out, 1.5, g)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        R.dropout_cuda(out, -0.1, out, cuda.device_array(4, np.uint8), g)
    with pytest.raises(TypeError, match="float32 or float64"):
        R.uniform_cuda(cuda.device_array(4, np.int32), 0.0, 1.0, g)
    with pytest.raises(TypeError, match="CudaGenerator"):
        R.uniform_cuda(out, 0.0, 1.0, 42)
