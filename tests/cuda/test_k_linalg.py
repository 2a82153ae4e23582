"""CUDA GEMM kernels (nbgrad/kernels/cuda/linalg.py) against numpy's matmul (the CPU path is
BLAS), on tiny shapes: odd sizes that are not tile multiples, K = 0, M or N = 1, batch
broadcasting, transposed operands, NaN/Inf propagation."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cuda.linalg import matmul_cuda, matmul_t_cuda

RNG = np.random.default_rng(0)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def _run(a, b, ta=False, tb=False, B=None):
    A = np.swapaxes(a, 1, 2) if ta else a
    Bm = np.swapaxes(b, 1, 2) if tb else b
    want = np.matmul(A, Bm)
    nb = max(a.shape[0], b.shape[0]) if B is None else B
    out = cuda.device_array((nb, A.shape[1], Bm.shape[2]), a.dtype)
    if not ta and not tb:
        matmul_cuda(cuda.to_device(a), cuda.to_device(b), out)
    else:
        matmul_t_cuda(cuda.to_device(a), cuda.to_device(b), out, ta, tb)
    return out.copy_to_host(), want


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(
    "B,M,K,N", [(1, 5, 7, 3), (2, 1, 9, 1), (1, 7, 1, 6), (1, 1, 6, 9), (1, 9, 5, 1)]
)
def test_matmul_shapes(dt, B, M, K, N):
    a = RNG.standard_normal((B, M, K)).astype(dt)
    b = RNG.standard_normal((B, K, N)).astype(dt)
    got, want = _run(a, b)
    assert got.dtype == dt
    np.testing.assert_allclose(got, want, **TOL[dt])


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True), (False, False)])
def test_matmul_transposed(ta, tb):
    M, K, N = 5, 6, 7
    a = RNG.standard_normal((2, K, M) if ta else (2, M, K))
    b = RNG.standard_normal((2, N, K) if tb else (2, K, N))
    got, want = _run(a, b, ta, tb)
    np.testing.assert_allclose(got, want, **TOL[np.float64])


@pytest.mark.parametrize("which", ["a", "b"])
def test_matmul_batch_broadcast(which):
    a = RNG.standard_normal((1 if which == "a" else 3, 3, 5)).astype(np.float32)
    b = RNG.standard_normal((1 if which == "b" else 3, 5, 2)).astype(np.float32)
    got, want = _run(a, b)
    assert got.shape == (3, 3, 2)
    np.testing.assert_allclose(got, want, **TOL[np.float32])
    # and with a transposed broadcast operand (a^T @ g with a shared weight)
    got, want = _run(np.ascontiguousarray(np.swapaxes(a, 1, 2)), b, ta=True)
    np.testing.assert_allclose(got, want, **TOL[np.float32])


def test_matmul_k_zero_and_empty():
    got, want = _run(np.zeros((2, 3, 0)), np.zeros((2, 0, 4)))
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, np.zeros((2, 3, 4)))
    np.testing.assert_array_equal(want, got)
    for shp_a, shp_b in [((2, 0, 3), (2, 3, 4)), ((2, 3, 3), (2, 3, 0)), ((0, 3, 3), (0, 3, 2))]:
        got, want = _run(np.ones(shp_a), np.ones(shp_b))
        assert got.shape == want.shape


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_matmul_nan_inf(dt):
    a = RNG.standard_normal((1, 5, 6)).astype(dt)
    b = RNG.standard_normal((1, 6, 5)).astype(dt)
    a[0, 1, 4] = np.nan  # row 1 all NaN
    a[0, 3, 0] = np.inf  # row 3: +-Inf, NaN where b[0, 0, n] == 0
    b[0, 0, 2] = 0.0
    b[0, 5, 4] = np.nan  # column 4 all NaN
    for ta in (False, True):
        aa = np.ascontiguousarray(np.swapaxes(a, 1, 2)) if ta else a
        got, want = _run(aa, b, ta=ta)
        assert np.isnan(got[0, 1]).all() and np.isnan(got[0, :, 4]).all()
        assert np.isnan(got[0, 3, 2]) and np.isinf(got[0, 3, [0, 1, 3]]).all()
        np.testing.assert_allclose(got, want, equal_nan=True, **TOL[dt])


def test_matmul_float16_accumulates_in_float32():
    a = RNG.standard_normal((1, 4, 33)).astype(np.float16)
    b = RNG.standard_normal((1, 33, 3)).astype(np.float16)
    got, _ = _run(a, b)
    want = np.matmul(a.astype(np.float32), b.astype(np.float32))
    assert got.dtype == np.float16
    # one float16 rounding of the float32 sum (float16 sums would be off by ~1e-2 here)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=2e-3)


def test_matmul_errors():
    d = cuda.to_device
    with pytest.raises(ValueError, match="do not give out"):
        matmul_cuda(d(np.ones((1, 2, 3))), d(np.ones((1, 4, 2))), cuda.device_array((1, 2, 2)))
    with pytest.raises(ValueError, match="do not give out"):
        matmul_cuda(d(np.ones((2, 2, 3))), d(np.ones((3, 3, 2))), cuda.device_array((3, 2, 2)))
    with pytest.raises(TypeError, match="dtypes differ"):
        matmul_cuda(
            d(np.ones((1, 2, 3), np.float32)), d(np.ones((1, 3, 2))), cuda.device_array((1, 2, 2))
        )
    with pytest.raises(TypeError, match="float dtype"):
        z = np.ones((1, 2, 2), np.int64)
        matmul_cuda(d(z), d(z), cuda.device_array((1, 2, 2), np.int64))
    with pytest.raises(ValueError, match="3-D"):
        matmul_cuda(d(np.ones((2, 3))), d(np.ones((3, 2))), cuda.device_array((2, 2)))
