"""CUDA twins of kernels/cpu/attention.py (kernels/cuda/attention.py) against the CPU kernels:
the same inputs on host arrays and device copies, every output compared (the backward gets the
CPU forward's out and lse on both sides).  float32 and float64, grouped-query heads, causal
with L != S, full / broadcast / no masks, a fully masked row, NaN and Inf inputs, chunks not
multiples of the block size, empty L and S."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import attention as cpu
from nbgrad.kernels.cuda import attention as gpu

DTYPES = [np.float32, np.float64]


def _tol(dtype):
    # the chunked sums run in another order than the CPU's 64-key blocks
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


def _case(dtype, B, H, Hk, L, S, E, Ev, mask_kind, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, L, E)).astype(dtype)
    k = rng.standard_normal((B, Hk, S, E)).astype(dtype)
    v = rng.standard_normal((B, Hk, S, Ev)).astype(dtype)
    g = rng.standard_normal((B, H, L, Ev)).astype(dtype)
    if mask_kind == "none":
        mask = np.zeros((1, 1, 1, 1), dtype)
    elif mask_kind == "full":
        mask = rng.standard_normal((B, H, L, S)).astype(dtype)
        mask[rng.random(mask.shape) < 0.3] = -np.inf
        if L > 1:
            mask[0, 0, 1, :] = -np.inf  # a fully masked row
    elif mask_kind == "rows":
        mask = rng.standard_normal((1, 1, L, S)).astype(dtype)
    else:  # "keys": one row of key biases for every query
        mask = rng.standard_normal((1, 1, 1, S)).astype(dtype)
    return q, k, v, mask, g


def _check(dtype, B, H, Hk, L, S, E, Ev, mask_kind, causal, special=None, seed=0):
    q, k, v, mask, g = _case(dtype, B, H, Hk, L, S, E, Ev, mask_kind, seed)
    if special == "nan_q":
        q[0, 0, 0, 0] = np.nan
    elif special == "inf_g":
        g[0, -1, -1, 0] = np.inf
    elif special == "inf_g_masked_row":  # no gradient flows from it: not 0 * inf = NaN
        g[0, 0, 1, :] = np.inf
    elif special == "inf_k":
        k[0, 0, 0, 0] = np.inf
    scale = dtype(1.0 / np.sqrt(E)) if E else dtype(1)
    tol = _tol(dtype)
    out = np.zeros((B, H, L, Ev), dtype)
    lse = np.zeros((B, H, L), dtype)
    dev = [cuda.to_device(a) for a in (q, k, v, mask)]
    d_out, d_lse = cuda.to_device(out), cuda.to_device(lse)
    with np.errstate(all="ignore"):
        cpu.sdpa_fwd_cpu(q, k, v, mask, causal, scale, out, lse)
        gpu.sdpa_fwd_cuda(*dev, causal, scale, d_out, d_lse)
    np.testing.assert_allclose(d_out.copy_to_host(), out, equal_nan=True, err_msg="out", **tol)
    np.testing.assert_allclose(d_lse.copy_to_host(), lse, equal_nan=True, err_msg="lse", **tol)
    grads = [np.full(a.shape, 7.0, dtype) for a in (q, k, v)]  # overwritten by both
    d_grads = [cuda.to_device(a) for a in grads]
    d_rest = [cuda.to_device(a) for a in (out, g, lse)]
    with np.errstate(all="ignore"):
        cpu.sdpa_bwd_cpu(q, k, v, mask, causal, scale, out, g, lse, *grads)
        gpu.sdpa_bwd_cuda(*dev, causal, scale, *d_rest, *d_grads)
    for name, h, d in zip(("dq", "dk", "dv"), grads, d_grads):
        np.testing.assert_allclose(d.copy_to_host(), h, equal_nan=True, err_msg=name, **tol)
    return out, lse, grads


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "B,H,Hk,L,S,E,Ev,mask_kind,causal",
    [
        (1, 1, 1, 1, 1, 3, 2, "none", False),
        (2, 2, 2, 5, 9, 3, 5, "none", False),
        (1, 4, 2, 7, 6, 4, 3, "full", False),  # grouped-query heads, masked row
        (1, 2, 1, 6, 9, 3, 3, "rows", True),  # causal, S > L
        (2, 1, 1, 9, 4, 2, 2, "keys", True),  # causal, L > S
        (1, 2, 2, 3, 17, 3, 9, "full", True),  # several key chunks, Ev > block under sim
    ],
)
def test_matches_cpu(dtype, B, H, Hk, L, S, E, Ev, mask_kind, causal):
    _check(dtype, B, H, Hk, L, S, E, Ev, mask_kind, causal)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("special", ["nan_q", "inf_g", "inf_g_masked_row", "inf_k"])
def test_nan_inf(dtype, special):
    _check(dtype, 1, 2, 1, 5, 7, 3, 4, "full", False, special)


def test_fully_masked_row_is_zero_with_no_gradient():
    out, lse, (dq, dk, dv) = _check(np.float64, 1, 1, 1, 3, 4, 2, 2, "full", False, seed=3)
    assert lse[0, 0, 1] == -np.inf and np.all(out[0, 0, 1] == 0) and np.all(dq[0, 0, 1] == 0)


@pytest.mark.parametrize("L,S", [(0, 4), (3, 0), (0, 0)])
def test_empty(L, S):
    _check(np.float32, 1, 2, 1, L, S, 3, 2, "none", False)
