"""CUDA loss kernels (nbgrad/kernels/cuda/loss.py) and glu (cuda/activation.py) against their
CPU twins: the same inputs on the host and on the device, outputs compared (float32 and float64,
NaN/Inf rows, sizes that are not multiples of the block, empty inputs), and the same exception
for a bad target."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import loss as KL
from nbgrad.kernels.cuda import loss as KC
from nbgrad.kernels.cuda.blockred import sum_f64_cuda

DTYPES = [np.float32, np.float64]


def tol(dt):
    return dict(rtol=2e-5, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)


def close(a, b, dt):
    np.testing.assert_allclose(a, b, equal_nan=True, **tol(dt))


def dev(a):
    return cuda.to_device(np.ascontiguousarray(a))


def total_of(d):
    assert d.shape == (1,) and d.dtype == np.float64
    return d.copy_to_host()[0]


def _nll_inputs(rng, outer, C, inner, dt, special=False):
    x = (rng.standard_normal((outer, C, inner)) * 3).astype(dt)
    t = rng.integers(0, max(C, 1), (outer, inner)).astype(np.int64)
    if outer * inner > 1:
        t.reshape(-1)[1] = -100  # ignored
    if special and outer >= 4 and C >= 2:
        x[0, 1, 0] = np.nan  # a NaN in a row
        x[1, :, 0] = -np.inf  # an all -inf row
        x[2, 0, 0] = np.inf
        x[3, :, 0] = [1e4 if k % 2 else -1e4 for k in range(C)]
    w = rng.uniform(0.5, 2.0, C).astype(dt)
    return x, t, w


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize(
    "shape,fused,smoothing,special",
    [
        ((7, 5, 1), True, 0.0, True),
        ((4, 3, 5), True, 0.1, True),
        ((5, 4, 2), False, 0.0, False),
        ((3, 6, 1), False, 0.2, False),
        ((1, 1, 1), True, 0.0, False),
        ((0, 3, 1), True, 0.0, False),
    ],
)
def test_nll_fwd_bwd(dt, shape, fused, smoothing, special):
    rng = np.random.default_rng(0)
    outer, C, inner = shape
    x, t, w = _nll_inputs(rng, outer, C, inner, dt, special)
    outs = [np.empty((outer, inner), dt), np.empty((outer, inner), dt)]
    lse = np.empty((outer, inner), np.float64)
    tot = KL.nll_fwd_cpu(x, t, w, -100, smoothing, fused, outs[0], outs[1], lse)
    d = [cuda.device_array((outer, inner), dt) for _ in range(2)]
    dlse = cuda.device_array((outer, inner), np.float64)
    dtot = KC.nll_fwd_cuda(dev(x), dev(t), dev(w), -100, smoothing, fused, d[0], d[1], dlse)
    close(d[0].copy_to_host(), outs[0], dt)
    close(d[1].copy_to_host(), outs[1], dt)
    close(dlse.copy_to_host(), lse, dt)
    close(total_of(dtot), tot, dt)
    for gs in (np.array([[1.5]], dt), rng.standard_normal((outer, inner)).astype(dt)):
        gx = np.empty_like(x)
        KL.nll_bwd_cpu(x, t, w, -100, smoothing, fused, lse, gs, gx)
        dgx = cuda.device_array(x.shape, dt)
        KC.nll_bwd_cuda(dev(x), dev(t), dev(w), -100, smoothing, fused, dev(lse), dev(gs), dgx)
        close(dgx.copy_to_host(), gx, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("N,C", [(7, 5), (2, 33), (1, 1), (0, 4), (9, 3)])
def test_ce_rows_fwd_bwd(dt, N, C):
    rng = np.random.default_rng(1)
    x, t, w = _nll_inputs(rng, N, C, 1, dt, special=True)
    x, t = np.ascontiguousarray(x[:, :, 0]), np.ascontiguousarray(t[:, 0])
    loss, wt, lse = np.empty(N, dt), np.empty(N, dt), np.empty(N, np.float64)
    tot = KL.ce_rows_fwd_cpu(x, t, w, -100, loss, wt, lse)
    dl, dw, dlse = cuda.device_array(N, dt), cuda.device_array(N, dt), cuda.device_array(N)
    dtot = KC.ce_rows_fwd_cuda(dev(x), dev(t), dev(w), -100, dl, dw, dlse)
    close(dl.copy_to_host(), loss, dt)
    close(dw.copy_to_host(), wt, dt)
    close(dlse.copy_to_host(), lse, dt)
    close(total_of(dtot), tot, dt)
    for gs in (np.array([0.7], dt), rng.standard_normal(N).astype(dt)):
        gx = np.empty_like(x)
        KL.ce_rows_bwd_cpu(x, t, w, -100, lse, gs, gx)
        dgx = cuda.device_array(x.shape, dt)
        KC.ce_rows_bwd_cuda(dev(x), dev(t), dev(w), -100, dev(lse), dev(gs), dgx)
        close(dgx.copy_to_host(), gx, dt)


def test_ce_rows_extreme_logits_stay_finite():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4]], np.float32)
    t = np.array([1, 2], np.int64)
    w = np.ones(3, np.float32)
    dl = cuda.device_array(2, np.float32)
    dlse = cuda.device_array(2)
    KC.ce_rows_fwd_cuda(dev(x), dev(t), dev(w), -100, dl, cuda.device_array(2, np.float32), dlse)
    np.testing.assert_allclose(dl.copy_to_host(), [2e4, 0.0], rtol=1e-6)


@pytest.mark.parametrize("bad", [5, -1])
def test_bad_target_raises_like_cpu(bad):
    x = np.zeros((3, 5, 1), np.float32)
    t = np.array([[0], [bad], [2]], np.int64)
    w = np.ones(5, np.float32)
    o2 = np.empty((3, 1), np.float32)
    lse = np.zeros((3, 1))
    with pytest.raises(IndexError, match="^Target is out of bounds.$"):
        KL.nll_fwd_cpu(x, t, w, -100, 0.0, True, o2, o2.copy(), lse)
    d = [cuda.device_array((3, 1), np.float32) for _ in range(2)]
    with pytest.raises(IndexError, match="^Target is out of bounds.$"):
        KC.nll_fwd_cuda(dev(x), dev(t), dev(w), -100, 0.0, True, d[0], d[1], dev(lse))
    with pytest.raises(IndexError, match="^Target is out of bounds.$"):
        KC.nll_bwd_cuda(
            dev(x), dev(t), dev(w), -100, 0.0, True, dev(lse), dev(np.ones((1, 1), np.float32)),
            cuda.device_array(x.shape, np.float32),
        )  # fmt: skip
    x2, t2 = x[:, :, 0].copy(), t[:, 0].copy()
    with pytest.raises(IndexError, match="^Target is out of bounds.$"):
        KC.ce_rows_fwd_cuda(dev(x2), dev(t2), dev(w), -100, d[0][:, 0], d[1][:, 0], dev(lse[:, 0]))
    with pytest.raises(IndexError, match="^Target is out of bounds.$"):
        KC.ce_rows_bwd_cuda(
            dev(x2), dev(t2), dev(w), -100, dev(lse[:, 0]), dev(np.ones(1, np.float32)),
            cuda.device_array(x2.shape, np.float32),
        )  # fmt: skip
    # an ignored target outside [0, C) is fine
    t[1, 0] = -100
    KC.nll_fwd_cuda(dev(x), dev(t), dev(w), -100, 0.0, True, d[0], d[1], dev(lse))


def _pointwise(rng, n, dt, prob=False):
    if prob:
        x = rng.uniform(0, 1, n).astype(dt)
        special = [0.0, 1.0, np.nan, 0.5]
    else:
        x = (rng.standard_normal(n) * 3).astype(dt)
        special = [np.nan, np.inf, -np.inf, 50.0]
    x[: min(n, 4)] = special[: min(n, 4)]
    t = rng.uniform(0, 1, n).astype(dt)
    return x, t


SIZES = [1, 7, 33, 0]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_bce(dt, n):
    rng = np.random.default_rng(2)
    x, t = _pointwise(rng, n, dt, prob=True)
    w = rng.uniform(0.5, 2, n).astype(dt)
    out = np.empty(n, dt)
    tot = KL.bce_fwd_cpu(x, t, w, out)
    dout = cuda.device_array(n, dt)
    close(total_of(KC.bce_fwd_cuda(dev(x), dev(t), dev(w), dout)), tot, dt)
    close(dout.copy_to_host(), out, dt)
    for g in (np.array([1.3], dt), rng.standard_normal(n).astype(dt)):
        gx, gt = np.empty(n, dt), np.empty(n, dt)
        KL.bce_bwd_cpu(x, t, w, g, 0.5, gx, gt)
        dgx, dgt = cuda.device_array(n, dt), cuda.device_array(n, dt)
        KC.bce_bwd_cuda(dev(x), dev(t), dev(w), dev(g), 0.5, dgx, dgt)
        close(dgx.copy_to_host(), gx, dt)
        close(dgt.copy_to_host(), gt, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_bcel(dt, n):
    rng = np.random.default_rng(3)
    x, t = _pointwise(rng, n, dt)
    w = rng.uniform(0.5, 2, n).astype(dt)
    pw = rng.uniform(0.5, 3, n).astype(dt)
    out = np.empty(n, dt)
    tot = KL.bcel_fwd_cpu(x, t, w, pw, out)
    dout = cuda.device_array(n, dt)
    close(total_of(KC.bcel_fwd_cuda(dev(x), dev(t), dev(w), dev(pw), dout)), tot, dt)
    close(dout.copy_to_host(), out, dt)
    for g in (np.array([1.3], dt), rng.standard_normal(n).astype(dt)):
        gx, gt = np.empty(n, dt), np.empty(n, dt)
        KL.bcel_bwd_cpu(x, t, w, pw, g, 2.0, gx, gt)
        dgx, dgt = cuda.device_array(n, dt), cuda.device_array(n, dt)
        KC.bcel_bwd_cuda(dev(x), dev(t), dev(w), dev(pw), dev(g), 2.0, dgx, dgt)
        close(dgx.copy_to_host(), gx, dt)
        close(dgt.copy_to_host(), gt, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_mse(dt, n):
    rng = np.random.default_rng(4)
    x, t = _pointwise(rng, n, dt)
    out = np.empty(n, dt)
    tot = KL.mse_fwd_cpu(x, t, out)
    dout = cuda.device_array(n, dt)
    close(total_of(KC.mse_fwd_cuda(dev(x), dev(t), dout)), tot, dt)
    close(dout.copy_to_host(), out, dt)
    for g in (np.array([1.3], dt), rng.standard_normal(n).astype(dt)):
        gx = np.empty(n, dt)
        KL.mse_bwd_cpu(x, t, g, 0.25, gx)
        dgx = cuda.device_array(n, dt)
        KC.mse_bwd_cuda(dev(x), dev(t), dev(g), 0.25, dgx)
        close(dgx.copy_to_host(), gx, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("huber", [False, True])
def test_smooth_l1(dt, n, huber):
    rng = np.random.default_rng(5)
    x, t = _pointwise(rng, n, dt)
    out = np.empty(n, dt)
    tot = KL.smooth_l1_fwd_cpu(x, t, 0.7, huber, out)
    dout = cuda.device_array(n, dt)
    close(total_of(KC.smooth_l1_fwd_cuda(dev(x), dev(t), 0.7, huber, dout)), tot, dt)
    close(dout.copy_to_host(), out, dt)
    g = rng.standard_normal(n).astype(dt)
    gx = np.empty(n, dt)
    KL.smooth_l1_bwd_cpu(x, t, g, 0.7, huber, 0.5, gx)
    dgx = cuda.device_array(n, dt)
    KC.smooth_l1_bwd_cuda(dev(x), dev(t), dev(g), 0.7, huber, 0.5, dgx)
    close(dgx.copy_to_host(), gx, dt)


@pytest.mark.parametrize("shape", [(0,), (1,), (37,), (3, 11), (0, 4)])
def test_sum_f64(shape):
    a = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    out = cuda.device_array(1)
    sum_f64_cuda(dev(a), out)
    np.testing.assert_allclose(out.copy_to_host()[0], a.astype(np.float64).sum(), rtol=1e-12)


# -- glu (kernels/cuda/activation.py) ----------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("outer,m", [(3, 7), (1, 1), (2, 33), (0, 4), (4, 0)])
def test_glu(dt, outer, m):
    from nbgrad.kernels.cpu import activation as KA
    from nbgrad.kernels.cuda import activation as KCA

    rng = np.random.default_rng(outer * 10 + m)
    x = (rng.standard_normal((outer, 2, m)) * 4).astype(dt)
    if outer * m >= 4:
        x[0, 1, :4] = [np.nan, np.inf, -np.inf, 200.0]
        x[0, 0, 0] = np.inf
    out = np.empty((outer, m), dt)
    KA.glu_fwd_cpu(x, out)
    dout = cuda.device_array((outer, m), dt)
    KCA.glu_fwd_cuda(dev(x), dout)
    close(dout.copy_to_host(), out, dt)
    g = rng.standard_normal((outer, m)).astype(dt)
    gx = np.empty_like(x)
    KA.glu_bwd_cpu(x, g, gx)
    dgx = cuda.device_array(x.shape, dt)
    KCA.glu_bwd_cuda(dev(x), dev(g), dgx)
    close(dgx.copy_to_host(), gx, dt)
