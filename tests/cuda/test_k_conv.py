"""CUDA twins of kernels/cpu/conv.py, pool.py and upsample.py against the CPU kernels on the
same inputs (tiny shapes: the simulator runs one Python thread per CUDA thread)."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import conv as KC
from nbgrad.kernels.cuda import conv as GC

RNG = np.random.default_rng(1)
D = cuda.to_device


def _data(shape, dt, special=True):
    a = RNG.standard_normal(shape).astype(dt)
    if special and a.size >= 3:
        f = a.reshape(-1)
        f[1], f[a.size // 2], f[-1] = np.nan, np.inf, -np.inf
    return a


def _out(shape, dt):
    # garbage start: the kernels must overwrite (or zero) every element
    return np.full(shape, 7.0, dt)


def _both(cpu, gpu, args, outs):
    """Run cpu(*args) with host arrays and gpu(*args) with device copies; return both outputs
    (``outs``: positions of the output arrays in args)."""
    h = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    d = [D(a) if isinstance(a, np.ndarray) else a for a in args]
    cpu(*h)
    gpu(*d)
    return [(h[i], d[i].copy_to_host()) for i in outs]


# (kh, kw, sh, sw, ph, pw, dh, dw, extra bottom/right padding)
GEOMS = [
    (3, 3, 1, 1, 1, 1, 1, 1, 0),
    (2, 3, 2, 1, 0, 1, 1, 2, 0),
    (3, 2, 2, 3, 2, 0, 2, 1, 1),
    (2, 2, 1, 1, 0, 0, 1, 1, 1),  # 'same' with an even kernel: the bottom padding implied
    (1, 1, 1, 1, 0, 0, 1, 1, 0),
]


def _osize(n, k, s, p, d, extra):
    return (n + 2 * p + extra - d * (k - 1) - 1) // s + 1


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("geom", GEOMS)
def test_im2col_col2im(dt, geom):
    kh, kw, sh, sw, ph, pw, dh, dw, ex = geom
    N, C, H, W = 2, 2, 5, 4
    oh, ow = _osize(H, kh, sh, ph, dh, ex), _osize(W, kw, sw, pw, dw, ex)
    x = _data((N, C, H, W), dt)
    R = C * kh * kw
    par = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    [(hc, gc)] = _both(KC.im2col_cpu, GC.im2col_cuda, (x, _out((R, N * oh * ow), dt)) + par, [1])
    np.testing.assert_array_equal(gc, hc)
    cols = _data((R, N * oh * ow), dt)
    [(hx, gx)] = _both(KC.col2im_cpu, GC.col2im_cuda, (cols, _out(x.shape, dt)) + par, [1])
    np.testing.assert_array_equal(gx, hx)  # same order, same dtype: bitwise


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_valid_variants(dt):
    N, C, H, W, kh, kw, dh, dw = 1, 2, 5, 6, 2, 3, 2, 1
    oh, ow = H - dh * (kh - 1), W - dw * (kw - 1)
    x = _data((N, C, H, W), dt)
    R = C * kh * kw
    par = (kh, kw, dh, dw, oh, ow)
    cpu, gpu = KC.im2col_valid_cpu, GC.im2col_valid_cuda
    [(hc, gc)] = _both(cpu, gpu, (x, _out((R, N * oh * ow), dt)) + par, [1])
    np.testing.assert_array_equal(gc, hc)
    cols = _data((R, N * oh * ow), dt)
    cpu, gpu = KC.col2im_valid_cpu, GC.col2im_valid_cuda
    [(hx, gx)] = _both(cpu, gpu, (cols, _out(x.shape, dt)) + par, [1])
    np.testing.assert_array_equal(gx, hx)


def test_im2col_col2im_empty():
    for N, H in [(0, 4), (2, 0)]:
        x = np.ones((N, 2, H, 3))
        oh = max(H - 1, 0)
        par = (2, 2, 1, 1, 0, 0, 1, 1, oh, 2)
        [(hc, gc)] = _both(
            KC.im2col_cpu, GC.im2col_cuda, (x, _out((8, N * oh * 2), x.dtype)) + par, [1]
        )
        np.testing.assert_array_equal(gc, hc)
        [(hx, gx)] = _both(KC.col2im_cpu, GC.col2im_cuda, (hc, _out(x.shape, x.dtype)) + par, [1])
        np.testing.assert_array_equal(gx, hx)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("has_bias", [True, False])
def test_swap01_bias(dt, has_bias):
    O, N, L = 3, 5, 7
    src = _data((O, N, L), dt)
    b = _data((O,), dt) if has_bias else np.empty(0, dt)
    [(h, g)] = _both(
        KC.swap01_bias_cpu, GC.swap01_bias_cuda, (src, b, _out((N, O, L), dt), has_bias), [2]
    )
    np.testing.assert_array_equal(g, h)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("want_bias", [True, False])
@pytest.mark.parametrize("N,O,L", [(3, 5, 7), (1, 1, 1), (2, 3, 0), (4, 2, 33)])
def test_grad_rows(dt, want_bias, N, O, L):
    g = RNG.standard_normal((N, O, L)).astype(dt)
    if g.size > 2:
        g[0, 0, 0] = np.nan  # channel 0's bias gradient NaN
    gb = _out((O,), dt) if want_bias else np.empty(0, np.float64)
    (ht, gt), (hb, gbb) = _both(
        KC.grad_rows_cpu, GC.grad_rows_cuda, (g, _out((O, N, L), dt), gb, want_bias), [1, 2]
    )
    np.testing.assert_array_equal(gt, ht)
    tol = 1e-6 if dt == np.float32 else 1e-13
    np.testing.assert_allclose(gbb, hb, rtol=tol, atol=tol)  # summation order differs


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_index_add_axis1(dt):
    A, K, B, R = 2, 7, 3, 4
    src = _data((A, K, B), dt)
    idx = np.array([0, 3, 3, 1, 0, -1, 2], np.int64)  # repeats; -1 wraps as on the CPU
    [(h, g)] = _both(
        KC.index_add_axis1_cpu, GC.index_add_axis1_cuda, (src, idx, _out((A, R, B), dt)), [2]
    )
    tol = 1e-6 if dt == np.float32 else 1e-13
    np.testing.assert_allclose(g, h, rtol=tol, atol=tol, equal_nan=True)
    # empty source: out is still zeroed
    [(h, g)] = _both(
        KC.index_add_axis1_cpu,
        GC.index_add_axis1_cuda,
        (np.ones((A, 0, B), dt), idx[:0], _out((A, R, B), dt)),
        [2],
    )
    np.testing.assert_array_equal(g, h)
