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


def _close(got, want):
    """Sums: the same order as the CPU kernel, but the CPU compiles with fastmath's reassoc and
    arcp (NOTE in kernels/__init__.py), so allow a few ulps; NaN/Inf positions must match."""
    tol = 4 * np.finfo(want.dtype).eps
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


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
    _close(gx, hx)


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
    _close(gx, hx)


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


# ---------------------------------------------------------------- pooling (kernels/cpu/pool.py)

from nbgrad.kernels.cpu import pool as KP  # noqa: E402
from nbgrad.kernels.cuda import pool as GP  # noqa: E402


def _pool_out(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return max(o, 0)


# (kh, kw, sh, sw, ph, pw, dh, dw, ceil)
POOLS = [
    (2, 2, 2, 2, 0, 0, 1, 1, False),
    (3, 3, 2, 2, 1, 1, 1, 1, True),
    (3, 2, 1, 2, 1, 0, 2, 1, False),
    (2, 3, 3, 1, 1, 1, 1, 2, True),
]


def _pool_x(dt, P=3, H=5, W=7):
    x = RNG.standard_normal((P, H, W)).astype(dt)
    x[0, 1, 2] = np.nan  # NaN wins its windows
    x[1] = -np.inf  # argmax of an all -inf window: its first tap
    x[2, 0, 0] = x[2, 0, 1] = 5.0  # a tie: the first one wins
    x[2, 4, 6] = np.inf
    return x


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("geom", POOLS)
def test_maxpool(dt, geom):
    kh, kw, sh, sw, ph, pw, dh, dw, ceil = geom
    x = _pool_x(dt)
    P, H, W = x.shape
    OH, OW = _pool_out(H, kh, sh, ph, dh, ceil), _pool_out(W, kw, sw, pw, dw, ceil)
    par = (kh, kw, sh, sw, ph, pw, dh, dw)
    out, idx = _out((P, OH, OW), dt), np.full((P, OH, OW), -5, np.int64)
    (ho, go), (hi, gi) = _both(
        KP.maxpool2d_fwd_cpu, GP.maxpool2d_fwd_cuda, (x, out, idx) + par, [1, 2]
    )
    np.testing.assert_array_equal(go, ho)
    np.testing.assert_array_equal(gi, hi)
    g = _data((P, OH, OW), dt)
    [(hg, gg)] = _both(
        KP.maxpool2d_bwd_cpu, GP.maxpool2d_bwd_cuda, (g, hi, _out((P, H * W), dt)), [2]
    )
    tol = 1e-6 if dt == np.float32 else 1e-13  # atomics: overlapping windows add in any order
    np.testing.assert_allclose(gg, hg, rtol=tol, atol=tol, equal_nan=True)


def test_maxpool_bwd_bad_index():
    g = np.ones((2, 2, 2))
    for bad in (-1, 12):
        idx = np.zeros((2, 2, 2), np.int64)
        idx[1, 1, 0] = bad
        with pytest.raises(RuntimeError) as ec:
            KP.maxpool2d_bwd_cpu(g, idx, np.zeros((2, 12)))
        with pytest.raises(RuntimeError) as eg:
            GP.maxpool2d_bwd_cuda(D(g), D(idx), cuda.device_array((2, 12)))
        assert str(eg.value) == str(ec.value)
        assert "invalid max index" in str(eg.value)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_maxpool2x2(dt):
    x = _pool_x(dt, 3, 5, 7)  # odd H, W: the last row / column is outside every window
    P, OH, OW = 3, 2, 3
    args = (x, _out((P, OH, OW), dt), np.full((P, OH, OW), -5, np.int64))
    (ho, go), (hi, gi) = _both(KP.maxpool2x2_fwd_cpu, GP.maxpool2x2_fwd_cuda, args, [1, 2])
    np.testing.assert_array_equal(go, ho)
    np.testing.assert_array_equal(gi, hi)
    # and the generic kernel agrees
    args = (x, _out((P, OH, OW), dt), np.full((P, OH, OW), -5, np.int64), 2, 2, 2, 2, 0, 0, 1, 1)
    (ho2, _), (hi2, _) = _both(KP.maxpool2d_fwd_cpu, GP.maxpool2d_fwd_cuda, args, [1, 2])
    np.testing.assert_array_equal(go, ho2)
    np.testing.assert_array_equal(gi, hi2)


AVG = [
    (2, 2, 2, 2, 0, 0, False, True, 0),
    (3, 3, 2, 2, 1, 1, True, True, 0),
    (3, 3, 2, 2, 1, 1, True, False, 0),
    (3, 2, 1, 2, 1, 1, False, False, 0),
    (2, 3, 3, 1, 1, 1, True, True, 5),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("geom", AVG)
def test_avgpool(dt, geom):
    kh, kw, sh, sw, ph, pw, ceil, cip, divisor = geom
    x = _pool_x(dt)
    P, H, W = x.shape
    OH, OW = _pool_out(H, kh, sh, ph, 1, ceil), _pool_out(W, kw, sw, pw, 1, ceil)
    par = (kh, kw, sh, sw, ph, pw, cip, divisor)
    [(ho, go)] = _both(
        KP.avgpool2d_fwd_cpu, GP.avgpool2d_fwd_cuda, (x, _out((P, OH, OW), dt)) + par, [1]
    )
    _close(go, ho)
    g = _data((P, OH, OW), dt)
    [(hg, gg)] = _both(
        KP.avgpool2d_bwd_cpu, GP.avgpool2d_bwd_cuda, (g, _out(x.shape, dt)) + par, [1]
    )
    _close(gg, hg)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("OH,OW", [(3, 4), (1, 1), (5, 7), (7, 9), (2, 3)])
def test_adaptive_avgpool(dt, OH, OW):
    x = _pool_x(dt)
    P = x.shape[0]
    [(ho, go)] = _both(
        KP.adaptive_avgpool2d_fwd_cpu,
        GP.adaptive_avgpool2d_fwd_cuda,
        (x, _out((P, OH, OW), dt)),
        [1],
    )
    _close(go, ho)
    g = _data((P, OH, OW), dt)
    [(hg, gg)] = _both(
        KP.adaptive_avgpool2d_bwd_cpu, GP.adaptive_avgpool2d_bwd_cuda, (g, _out(x.shape, dt)), [1]
    )
    _close(gg, hg)


def test_pool_empty():
    x = np.ones((0, 4, 4))
    for cpu, gpu, args, outs in [
        (
            KP.maxpool2d_fwd_cpu,
            GP.maxpool2d_fwd_cuda,
            (x, np.ones((0, 2, 2)), np.ones((0, 2, 2), np.int64), 2, 2, 2, 2, 0, 0, 1, 1),
            [1],
        ),
        (
            KP.maxpool2d_bwd_cpu,
            GP.maxpool2d_bwd_cuda,
            (np.ones((2, 0, 2)), np.ones((2, 0, 2), np.int64), _out((2, 4), np.float64)),
            [2],
        ),
        (
            KP.avgpool2d_fwd_cpu,
            GP.avgpool2d_fwd_cuda,
            (x, np.ones((0, 2, 2)), 2, 2, 2, 2, 0, 0, True, 0),
            [1],
        ),
        (
            KP.avgpool2d_bwd_cpu,
            GP.avgpool2d_bwd_cuda,
            (np.ones((2, 0, 0)), _out((2, 3, 3), np.float64), 2, 2, 2, 2, 0, 0, True, 0),
            [1],
        ),
        (
            KP.adaptive_avgpool2d_bwd_cpu,
            GP.adaptive_avgpool2d_bwd_cuda,
            (np.ones((2, 0, 3)), _out((2, 3, 3), np.float64)),
            [1],
        ),
    ]:
        for h, g in _both(cpu, gpu, args, outs):
            np.testing.assert_array_equal(g, h)
    # (maxpool2x2_fwd_cpu itself fails on 0 planes: range step 0)
    GP.maxpool2x2_fwd_cuda(
        D(x), cuda.device_array((0, 2, 2)), cuda.device_array((0, 2, 2), np.int64)
    )


# ----------------------------------------------------------- upsampling (kernels/cpu/upsample.py)

from nbgrad.kernels.cpu import upsample as KU  # noqa: E402
from nbgrad.kernels.cuda import upsample as GU  # noqa: E402


def _nearest_map(n_in, n_out):
    return np.minimum((np.arange(n_out) * n_in) // n_out, n_in - 1).astype(np.int64)


def _linear_map(n_in, n_out, cd):
    src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    l1 = (src - i0).astype(cd)
    return i0, i1, (1 - l1).astype(cd), l1


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(
    "insz,outsz", [((1, 1, 3), (1, 1, 7)), ((1, 3, 4), (1, 7, 5)), ((2, 3, 2), (3, 5, 4))]
)
def test_upsample_nearest(dt, insz, outsz):
    P = 2
    x = _data((P,) + insz, dt)
    maps = tuple(_nearest_map(i, o) for i, o in zip(insz, outsz))
    args = (x,) + maps + (_out((P,) + outsz, dt),)
    [(h, g)] = _both(KU.upsample_nearest_fwd_cpu, GU.upsample_nearest_fwd_cuda, args, [4])
    np.testing.assert_array_equal(g, h)
    gy = _data((P,) + outsz, dt)
    args = (gy,) + maps + (_out((P,) + insz, dt),)
    [(h, g)] = _both(KU.upsample_nearest_bwd_cpu, GU.upsample_nearest_bwd_cuda, args, [4])
    _close(g, h)


def test_upsample_nearest_downsample_and_int():
    # downsampling: some inputs are never read, their gradient is 0
    x = np.arange(2 * 6, dtype=np.int64).reshape(2, 1, 1, 6)
    maps = (np.zeros(1, np.int64), np.zeros(1, np.int64), _nearest_map(6, 4))
    args = (x,) + maps + (np.zeros((2, 1, 1, 4), np.int64),)
    [(h, g)] = _both(KU.upsample_nearest_fwd_cpu, GU.upsample_nearest_fwd_cuda, args, [4])
    np.testing.assert_array_equal(g, h)
    args = (np.ones((2, 1, 1, 4)),) + maps + (_out((2, 1, 1, 6), np.float64),)
    [(h, g)] = _both(KU.upsample_nearest_bwd_cpu, GU.upsample_nearest_bwd_cuda, args, [4])
    np.testing.assert_array_equal(g, h)
    assert (g == 0).any()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("two_d", [True, False])
def test_upsample_linear(dt, two_d):
    P, H, W, OH, OW = 2, 3, 4, 7, 5
    if not two_d:
        H = OH = 1
    cd = np.float64  # the weights' compute dtype (ops/nn/upsample.py)
    x = _data((P, H, W), dt)
    hm = (
        _linear_map(H, OH, cd)
        if two_d
        else (np.zeros(1, np.int64),) * 2 + (np.ones(1, cd), np.zeros(1, cd))
    )
    wm = _linear_map(W, OW, cd)
    args = (x,) + hm + wm + (_out((P, OH, OW), dt), two_d)
    [(h, g)] = _both(KU.upsample_linear_fwd_cpu, GU.upsample_linear_fwd_cuda, args, [9])
    assert np.isnan(h).any() and np.isinf(h).any()
    _close(g, h)  # a GPU may fuse a multiply-add
    gy = _data((P, OH, OW), dt)
    args = (gy,) + hm + wm + (_out((P, H, W), dt), two_d)
    [(h, g)] = _both(KU.upsample_linear_bwd_cpu, GU.upsample_linear_bwd_cuda, args, [9])
    _close(g, h)


def test_upsample_empty():
    maps = (np.zeros(1, np.int64),) * 2 + (np.zeros(0, np.int64),)
    args = (np.ones((2, 1, 1, 0)),) + maps + (_out((2, 1, 1, 3), np.float64),)
    [(h, g)] = _both(KU.upsample_nearest_bwd_cpu, GU.upsample_nearest_bwd_cuda, args, [4])
    np.testing.assert_array_equal(g, h)
    GU.upsample_nearest_fwd_cuda(
        D(np.ones((0, 1, 1, 2))), *map(D, maps), cuda.device_array((0, 1, 1, 0))
    )
