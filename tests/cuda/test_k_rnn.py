"""CUDA twins of kernels/cpu/rnn.py (kernels/cuda/rnn.py) against the CPU kernels: the same
inputs on host arrays and on device copies, every output compared.  float32 and float64,
(B, H) shapes that are not multiples of the block, an empty batch, NaN/Inf rows.  The
backward kernels get the CPU forward's workspace on both sides, so they are compared alone."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import rnn as cpu
from nbgrad.kernels.cuda import rnn as gpu

DTYPES = [np.float32, np.float64]
SHAPES = [(1, 1), (2, 7), (3, 5), (0, 4)]


def _tol(dtype):
    # libdevice exp/tanh on the device, vmath's polynomials on the CPU: a few ulp apart
    return dict(rtol=3e-6, atol=3e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)


def _rand(rng, shape, dtype, special):
    a = (rng.standard_normal(shape) * 2).astype(dtype)
    if special and a.shape[0] >= 2:
        a[0, 0] = np.nan
        a[1, :] = np.inf  # a whole row
        if a.shape[1] > 2:
            a[0, 2] = -np.inf
            a[0, 1] = 40.0  # saturated gate
    return a


def _both(fn, inputs, outputs, extra=()):
    """Run ``fn_cpu`` on host arrays and ``fn_cuda`` on device copies; return both outputs."""
    host_out = [np.zeros(o.shape, o.dtype) for o in outputs]
    dev_in = [cuda.to_device(a) for a in inputs]
    dev_out = [cuda.to_device(np.zeros(o.shape, o.dtype)) for o in outputs]
    with np.errstate(all="ignore"):
        getattr(cpu, fn + "_cpu")(*inputs, *extra, *host_out)
        getattr(gpu, fn + "_cuda")(*dev_in, *extra, *dev_out)
    return host_out, [d.copy_to_host() for d in dev_out]


def _compare(host, dev, dtype, what):
    for j, (h, d) in enumerate(zip(host, dev)):
        assert d.dtype == h.dtype and d.shape == h.shape
        np.testing.assert_allclose(
            d, h, equal_nan=True, err_msg="%s out %d" % (what, j), **_tol(dtype)
        )


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_lstm(dtype, shape, special):
    B, H = shape
    rng = np.random.default_rng(B * 10 + H)
    xg, hg = _rand(rng, (B, 4 * H), dtype, special), _rand(rng, (B, 4 * H), dtype, False)
    cx = _rand(rng, (B, H), dtype, special)
    outs = [np.empty((B, H), dtype), np.empty((B, H), dtype), np.empty((B, 5 * H), dtype)]
    host, dev = _both("lstm_cell_fwd", [xg, hg, cx], outs)
    _compare(host, dev, dtype, "lstm fwd")
    ws = host[2]
    ghy, gcy = _rand(rng, (B, H), dtype, special), _rand(rng, (B, H), dtype, False)
    for has_gh, has_gc in [(True, True), (True, False), (False, True)]:
        inputs = [ws, cx, ghy if has_gh else cx, gcy if has_gc else cx]
        outs = [np.empty((B, 4 * H), dtype), np.empty((B, H), dtype)]
        host_b, dev_b = _both("lstm_cell_bwd", inputs, outs, (has_gh, has_gc))
        _compare(host_b, dev_b, dtype, "lstm bwd %s %s" % (has_gh, has_gc))


def test_lstm_bwd_missing_gradient_does_not_leak_nan():
    """has_gh false: the array standing in for the missing gradient is not read (NaN there
    must not reach dgates through 0 * NaN), as on the CPU."""
    ws = np.full((1, 5), 0.5)
    cx, gcy, dummy = np.ones((1, 1)), np.ones((1, 1)), np.full((1, 1), np.nan)
    d_dg, d_dcx = cuda.to_device(np.empty((1, 4))), cuda.to_device(np.empty((1, 1)))
    args = [cuda.to_device(a) for a in (ws, cx, dummy, gcy)]
    gpu.lstm_cell_bwd_cuda(*args, False, True, d_dg, d_dcx)
    dg, dcx = np.empty((1, 4)), np.empty((1, 1))
    cpu.lstm_cell_bwd_cpu(ws, cx, dummy, gcy, False, True, dg, dcx)
    assert np.isfinite(d_dg.copy_to_host()).all() and d_dg.copy_to_host()[0, 3] == 0.0
    np.testing.assert_array_equal(d_dg.copy_to_host(), dg)
    np.testing.assert_array_equal(d_dcx.copy_to_host(), dcx)


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gru(dtype, shape, special):
    B, H = shape
    rng = np.random.default_rng(B * 10 + H + 1)
    xg, hg = _rand(rng, (B, 3 * H), dtype, special), _rand(rng, (B, 3 * H), dtype, False)
    hx = _rand(rng, (B, H), dtype, special)
    outs = [np.empty((B, H), dtype), np.empty((B, 4 * H), dtype)]
    host, dev = _both("gru_cell_fwd", [xg, hg, hx], outs)
    _compare(host, dev, dtype, "gru fwd")
    ghy = _rand(rng, (B, H), dtype, special)
    outs = [np.empty((B, 3 * H), dtype), np.empty((B, 3 * H), dtype), np.empty((B, H), dtype)]
    host_b, dev_b = _both("gru_cell_bwd", [host[1], hx, ghy], outs)
    _compare(host_b, dev_b, dtype, "gru bwd")


@pytest.mark.parametrize("kind", ["tanh", "relu"])
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("shape", SHAPES + [(4, 9)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_elman(dtype, shape, special, kind):
    B, H = shape
    rng = np.random.default_rng(B * 10 + H + 2)
    xg, hg = _rand(rng, (B, H), dtype, special), _rand(rng, (B, H), dtype, False)
    host, dev = _both("rnn_%s_cell_fwd" % kind, [xg, hg], [np.empty((B, H), dtype)])
    _compare(host, dev, dtype, kind + " fwd")
    ghy = _rand(rng, (B, H), dtype, special)
    host_b, dev_b = _both("rnn_%s_cell_bwd" % kind, [host[0], ghy], [np.empty((B, H), dtype)])
    _compare(host_b, dev_b, dtype, kind + " bwd")


def test_relu_keeps_nan_and_zeroes_negative_zero():
    x = np.array([[np.nan, -0.0, -1.0, 2.0]], np.float32)
    hy = cuda.to_device(np.empty_like(x))
    gpu.rnn_relu_cell_fwd_cuda(cuda.to_device(x), cuda.to_device(np.full_like(x, -0.0)), hy)
    out = hy.copy_to_host()
    assert np.isnan(out[0, 0]) and not np.signbit(out[0, 1]) and out[0, 2] == 0 and out[0, 3] == 2
