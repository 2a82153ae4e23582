"""CUDA twins of kernels/cpu/norm.py (layer, batch and group norm) against the CPU kernels, on
device copies of the same inputs: odd sizes, empty sets, NaN/Inf data, infinite weights and
constant sets (whose normalised values must be exactly 0, so that an infinite weight gives
NaN as PyTorch's)."""

import numpy as np
import pytest
from numba import cuda
from test_k_reduce import same

from nbgrad.kernels.cpu import norm as CN
from nbgrad.kernels.cuda import norm as GN

FLOATS = [np.float32, np.float64]
RTOL = {np.float32: 3e-6, np.float64: 1e-12}


def call(cpu, gpu, *args):
    """Run ``cpu(*args)`` on host copies and ``gpu(*args)`` on device copies of the array
    arguments (scalars as they are); returns both sides' arrays after the call, in order."""
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu(*host)
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    gpu(*dev)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    return [host[i] for i in arrays], [dev[i].copy_to_host() for i in arrays]


def check(want, got, rtol, first=0):
    """``same`` on the outputs (arrays from ``first``); cancellations (a gradient that is 0 in
    exact arithmetic) are rounding noise of the terms: an absolute tolerance of ``rtol`` times
    the largest finite output (or 1)."""
    for c, g in zip(want[first:], got[first:]):
        fin = np.abs(c[np.isfinite(c)])
        same(g, c, rtol, rtol * max(1.0, float(fin.max()) if fin.size else 1.0))


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def params(C, dtype, seed, infinite=True):
    w = rand(C, dtype, seed) + 1
    b = rand(C, dtype, seed + 1)
    if C >= 3 and infinite:
        w[1] = np.inf
        b[2] = -np.inf
    return w, b


def layer_data(M, N, dtype):
    x = rand((M, N), dtype, 0) * 2 + 0.5
    if M >= 3 and N >= 2:
        x[0] = 0.19  # a constant row: normalised to exactly 0 (0 * inf weight: NaN)
        x[1, N // 2] = np.nan
        x[2, 0] = np.inf
    return x


@pytest.mark.parametrize("shape", [(1, 1), (4, 7), (3, 33), (0, 5), (3, 0)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(shape, dtype):
    M, N = shape
    x = layer_data(M, N, dtype)
    w, b = params(N, dtype, 1)
    y, mean, rstd = np.full((M, N), 7, dtype), np.zeros(M), np.zeros(M)
    want, got = call(CN.layer_norm_fwd_cpu, GN.layer_norm_fwd_cuda, x, w, b, 1e-5, y, mean, rstd)
    check(want, got, RTOL[dtype], first=3)
    if M >= 3 and N >= 2:
        assert np.isnan(got[3][0, 1]) and np.isnan(got[3][1]).all() and np.isnan(got[3][2]).all()
    _, _, _, y, mean, rstd = want
    g = rand((M, N), dtype, 2)
    gx, gw, gb = np.zeros((M, N), dtype), np.full(N, 3.0), np.full(N, 3.0)
    want, got = call(CN.layer_norm_bwd_cpu, GN.layer_norm_bwd_cuda, g, x, mean, rstd, w, gx, gw, gb)
    check(want, got, RTOL[dtype] * 10, first=5)


def test_layer_norm_eps_zero_constant_row():
    x = np.full((2, 5), 3.0)
    w, b = np.ones(5), np.zeros(5)
    args = (x, w, b, 0.0, np.zeros((2, 5)), np.zeros(2), np.zeros(2))
    want, got = call(CN.layer_norm_fwd_cpu, GN.layer_norm_fwd_cuda, *args)
    check(want, got, 0.0, first=3)
    assert (got[5] == np.inf).all()  # rstd = 1 / sqrt(0)


def channel_data(shape, dtype):
    N, C, L = shape
    x = rand(shape, dtype, 3) * 2 - 0.3
    if C >= 3 and N * L >= 2:
        x[:, 0] = 0.19  # rounding-level deviations: the CPU's sequential re-sum decides
        x[0, 1, L // 2] = np.nan
        x[-1, 2, 0] = -np.inf
    return x


BN_SHAPES = [(1, 1, 1), (2, 3, 5), (3, 4, 7), (2, 1, 33), (0, 3, 4), (2, 0, 3), (2, 3, 0)]


@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm(shape, dtype):
    N, C, L = shape
    x = channel_data(shape, dtype)
    want, got = call(CN.batch_norm_stats_cpu, GN.batch_norm_stats_cuda, x, np.ones(C), np.ones(C))
    check(want, got, RTOL[dtype], first=1)
    _, mean, var = want
    rstd = 1 / np.sqrt(var + 1e-5)
    w, b = params(C, dtype, 4)
    for cpu, gpu in [
        (CN.batch_norm_fwd_cpu, GN.batch_norm_fwd_cuda),
        (CN.batch_norm_fwd_generic_cpu, GN.batch_norm_fwd_generic_cuda),
    ]:
        want, got = call(cpu, gpu, x, mean, rstd, w, b, np.full(shape, 7, dtype))
        check(want, got, RTOL[dtype], first=5)
    g = rand(shape, dtype, 5)
    for training in (True, False):
        args = (g, x, mean, rstd, w, training, np.zeros(shape, dtype), np.ones(C), np.ones(C))
        want, got = call(CN.batch_norm_bwd_cpu, GN.batch_norm_bwd_cuda, *args)
        check(want, got, RTOL[dtype] * 10, first=5)


def test_batch_norm_constant_channel_infinite_weight():
    """Every float32 channel of equal values normalises to exactly 0: 0 * inf = NaN."""
    vals = np.array([0.19, 0.1, 1e-3, 7.3, -2.2], np.float32)
    x = np.repeat(vals[None, :, None], 3, axis=0).repeat(5, axis=2).copy()  # (3, 5, 5)
    want, got = call(CN.batch_norm_stats_cpu, GN.batch_norm_stats_cuda, x, np.ones(5), np.ones(5))
    check(want, got, 0.0, first=1)
    _, mean, var = want
    assert (var == 0).all()
    w = np.full(5, np.inf, np.float32)
    args = (x, mean, 1 / np.sqrt(var + 1e-5), w, np.zeros(5, np.float32), np.zeros_like(x))
    want, got = call(CN.batch_norm_fwd_cpu, GN.batch_norm_fwd_cuda, *args)
    check(want, got, 0.0, first=5)
    assert np.isnan(got[5]).all()


GN_SHAPES = [(1, 1, 1, 1), (2, 3, 2, 5), (2, 2, 3, 7), (1, 1, 2, 17), (0, 2, 2, 3), (2, 1, 2, 0)]


@pytest.mark.parametrize("shape", GN_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm(shape, dtype):
    N, G, D, L = shape
    x = rand(shape, dtype, 6) * 2 + 0.4
    if N * G >= 2 and D * L >= 2:
        x[0, 0] = -1.25  # a constant group
        x[-1, -1, 0, L // 2] = np.nan
    w, b = params(G * D, dtype, 7, infinite=False)  # see test_group_norm_infinite_weight
    args = (x, w, b, 1e-5, np.full(shape, 7, dtype), np.zeros((N, G)), np.zeros((N, G)))
    want, got = call(CN.group_norm_fwd_cpu, GN.group_norm_fwd_cuda, *args)
    check(want, got, RTOL[dtype], first=3)
    _, _, _, y, mean, rstd = want
    g = rand(shape, dtype, 8)
    args = (g, x, mean, rstd, w, np.zeros(shape, dtype), np.ones(G * D), np.ones(G * D))
    want, got = call(CN.group_norm_bwd_cpu, GN.group_norm_bwd_cuda, *args)
    check(want, got, RTOL[dtype] * 10, first=5)


def test_group_norm_infinite_weight():
    """y = x * (rstd * w) + (b - mean * rstd * w), PyTorch's order: with w = inf, NaN where
    x and the mean have the same sign (inf - inf).  The CPU twin is compiled with fastmath
    (reassoc), which may factor it into (x - mean) * inf and give +-inf there instead; so the
    reference here is that formula in numpy (and PyTorch agrees with it)."""
    shape = (2, 2, 2, 5)
    x = rand(shape, np.float64, 6) * 2 + 0.4
    w = np.array([1.0, np.inf, -np.inf, 0.5])
    b = np.array([0.1, -0.2, 0.3, -np.inf])
    y, mean, rstd = np.zeros(shape), np.zeros((2, 2)), np.zeros((2, 2))
    d = [cuda.to_device(a) for a in (x, w, b, y, mean, rstd)]
    GN.group_norm_fwd_cuda(d[0], d[1], d[2], 1e-5, d[3], d[4], d[5])
    y, mean, rstd = (a.copy_to_host() for a in d[3:])
    sc = (rstd[:, :, None] * w.reshape(2, 2)[None])[..., None]
    sh = b.reshape(2, 2)[None, :, :, None] - mean[:, :, None, None] * sc
    with np.errstate(invalid="ignore"):
        ref = x * sc + sh
    same(y, ref, 1e-12, 1e-12)
    assert np.isnan(y[:, 0, 1]).any() and np.isinf(y[:, 0, 1]).any()
