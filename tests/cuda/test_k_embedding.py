"""CUDA embedding_bag kernels (nbgrad/kernels/cuda/embedding.py) against their CPU twins."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import embedding as KE
from nbgrad.kernels.cuda import embedding as KC


def dev(a):
    return cuda.to_device(np.array(a, order="C"))


def _bags(rng, n, V, pad):
    idx = rng.integers(0, V, n).astype(np.int64)
    if n > 3:
        idx[[1, 3]] = pad if pad >= 0 else idx[[1, 3]]
    cuts = np.sort(rng.integers(0, n + 1, 4))
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    ends = np.concatenate([cuts, [n]]).astype(np.int64)
    starts[2], ends[2] = ends[1], ends[1]  # an empty bag
    bag_of = np.full(n, -1, np.int64)
    for b in range(starts.size):
        bag_of[starts[b] : ends[b]] = b
    return idx, starts, ends, bag_of


CASES = [(13, 5, 3), (1, 2, 1), (0, 3, 2), (23, 7, 4)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(
    "mode,has_psw", [(KE.SUM, False), (KE.MEAN, False), (KE.MAX, False), (KE.SUM, True)]
)
@pytest.mark.parametrize("n,V,D", CASES)
def test_embedding_bag(dt, mode, has_psw, n, V, D):
    rng = np.random.default_rng(n + D)
    pad = 2 if V > 2 else -1
    idx, starts, ends, bag_of = _bags(rng, n, V, pad)
    w = rng.standard_normal((V, D)).astype(dt)
    if V > 4:
        w[4, 0] = np.nan
        w[3, 1] = np.inf
    psw = rng.standard_normal(n).astype(dt) if has_psw else np.zeros(0, dt)
    B = starts.size
    out, maxidx, count = np.empty((B, D), dt), np.empty((B, D), np.int64), np.empty(B, np.int64)
    assert KE.embedding_bag_fwd_cpu(w, idx, starts, ends, psw, has_psw, mode, pad, out, maxidx,
                                    count) == -1  # fmt: skip
    d_out, d_max, d_cnt = (cuda.device_array(a.shape, a.dtype) for a in (out, maxidx, count))
    dargs = [dev(a) for a in (w, idx, starts, ends, psw)]
    assert KC.embedding_bag_fwd_cuda(*dargs, has_psw, mode, pad, d_out, d_max, d_cnt) == -1
    np.testing.assert_allclose(d_out.copy_to_host(), out, rtol=1e-6)
    np.testing.assert_array_equal(d_cnt.copy_to_host(), count)
    if mode == KE.MAX:
        np.testing.assert_array_equal(d_max.copy_to_host(), maxidx)
    g = rng.standard_normal((B, D)).astype(dt)
    gw = np.empty_like(w)
    dgw = cuda.device_array(w.shape, dt)
    if mode == KE.MAX:
        assert KE.embedding_bag_max_bwd_cpu(g, maxidx, gw) == -1
        assert KC.embedding_bag_max_bwd_cuda(dev(g), dev(maxidx), dgw) == -1
    else:
        mult = rng.uniform(0.5, 2, n).astype(dt)
        assert KE.embedding_bag_bwd_cpu(g, idx, bag_of, mult, pad, gw) == -1
        assert KC.embedding_bag_bwd_cuda(dev(g), dev(idx), dev(bag_of), dev(mult), pad, dgw) == -1
    np.testing.assert_allclose(dgw.copy_to_host(), gw, rtol=1e-5, atol=1e-6)
    if has_psw:
        o = np.empty(n, dt)
        d_o = cuda.device_array(n, dt)
        assert KE.embedding_bag_psw_bwd_cpu(g, w, idx, bag_of, pad, o) == -1
        assert KC.embedding_bag_psw_bwd_cuda(dev(g), dev(w), dev(idx), dev(bag_of), pad, d_o) == -1
        np.testing.assert_allclose(d_o.copy_to_host(), o, rtol=1e-5)


def test_bad_entries_same_position():
    rng = np.random.default_rng(0)
    V, D = 5, 2
    idx, starts, ends, bag_of = _bags(rng, 12, V, -1)
    inbag = np.flatnonzero(bag_of >= 0)
    first, second = int(inbag[2]), int(inbag[4])
    idx[first] = V
    idx[second] = -1
    w = rng.standard_normal((V, D))
    B = starts.size
    psw = np.zeros(0)
    host = [np.empty((B, D)), np.empty((B, D), np.int64), np.empty(B, np.int64)]
    k = KE.embedding_bag_fwd_cpu(w, idx, starts, ends, psw, False, KE.SUM, -1, *host)
    d = [cuda.device_array(a.shape, a.dtype) for a in host]
    args = [dev(a) for a in (w, idx, starts, ends, psw)]
    assert KC.embedding_bag_fwd_cuda(*args, False, KE.SUM, -1, *d) == k == first
    g = np.ones((B, D))
    mult = np.ones(12)
    gw = np.empty((V, D))
    k = KE.embedding_bag_bwd_cpu(g, idx, bag_of, mult, -1, gw)
    dgw = dev(np.full((V, D), 5.0))
    assert (
        KC.embedding_bag_bwd_cuda(dev(g), dev(idx), dev(bag_of), dev(mult), -1, dgw) == k == first
    )
    assert not dgw.copy_to_host().any()  # zeroed, nothing added
    bad_bag = bag_of.copy()
    bad_bag[2] = B
    idx[first] = 0
    k = KE.embedding_bag_psw_bwd_cpu(g, w, idx, bad_bag, -1, np.empty(12))
    assert KC.embedding_bag_psw_bwd_cuda(
        dev(g), dev(w), dev(idx), dev(bad_bag), -1, cuda.device_array(12)
    ) == k == 2  # fmt: skip
    maxidx = np.zeros((B, D), np.int64)
    maxidx[3, 1] = V
    maxidx[4, 0] = V + 1
    k = KE.embedding_bag_max_bwd_cpu(g, maxidx, gw)
    assert KC.embedding_bag_max_bwd_cuda(dev(g), dev(maxidx), dgw) == k == 3
