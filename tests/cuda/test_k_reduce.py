"""CUDA twins of kernels/cpu/reduce.py, softmax.py and sort.py against the CPU kernels.

Each launcher runs on device copies of the CPU kernel's inputs; both mappings of the
reductions (block per output, thread per output) are forced in turn with ``mode``.  Shapes
are tiny (the simulator runs a Python thread per CUDA thread) and odd (1, 7, 33: not multiples
of any block size), with NaN/Inf lines and empty axes.
"""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import reduce as CR, softmax as CS, sort as CSo
from nbgrad.kernels.cuda import reduce as GR, softmax as GS, sort as GSo

SHAPES = [(1, 1, 1), (2, 7, 3), (1, 33, 1), (3, 1, 2), (2, 0, 3), (0, 5, 2)]
FLOATS = [np.float32, np.float64]
RTOL = {np.float32: 2e-6, np.float64: 1e-13, np.complex64: 2e-6, np.complex128: 1e-13}


@pytest.fixture(params=["block", "columns"])
def mode(request, monkeypatch):
    """Forces one of the two reduction mappings (both are correct for every shape)."""
    monkeypatch.setattr(GR, "_columns", lambda *a: request.param == "columns")
    return request.param


def same(got, want, rtol=0.0, atol=0.0):
    """Equal NaN and +-inf patterns, finite values within ``rtol``/``atol`` (exact when 0)."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind in "fc":
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        assert np.array_equal(np.isinf(got), np.isinf(want)), (got, want)
        fin = np.isfinite(want)
        if got.dtype.kind == "f":
            assert np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
        np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


def twin(cpu, gpu, ins, outs, *scalars):
    """Run ``cpu(*ins, *outs, *scalars)`` on host copies and ``gpu`` on device copies (outputs
    start equal on both sides); returns (cpu outputs, gpu outputs as host arrays)."""
    h_outs = [o.copy() for o in outs]
    cpu(*[np.ascontiguousarray(a) for a in ins], *h_outs, *scalars)
    d_outs = [cuda.to_device(o) for o in outs]
    gpu(*[cuda.to_device(np.ascontiguousarray(a)) for a in ins], *d_outs, *scalars)
    return h_outs, [d.copy_to_host() for d in d_outs]


def data(shape, dtype, seed=0, special=True):
    """Random values; with ``special``, a NaN line, an inf line and a -inf line when there is
    room (outer >= 1 and inner >= 3)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    outer, n, inner = shape
    if special and outer and n and inner >= 3:
        x[0, n // 2, 0] = np.nan
        x[0, 0, 1] = np.inf
        x[0, n - 1, 2] = -np.inf
    return x


# ---- reduce.py ----


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_sum(mode, shape, dtype):
    x = data(shape, dtype)
    out = np.full((shape[0], shape[2]), 7, dtype)
    (c,), (g,) = twin(CR.sum_fwd_cpu, GR.sum_fwd_cuda, [x], [out])
    same(g, c, RTOL[dtype])


def test_sum_inf_minus_inf(mode):
    x = np.array([[[np.inf], [1.0], [-np.inf]], [[np.inf], [2.0], [np.inf]]], np.float32)
    (c,), (g,) = twin(CR.sum_fwd_cpu, GR.sum_fwd_cuda, [x], [np.zeros((2, 1), np.float32)])
    same(g, c)
    assert np.isnan(g[0, 0]) and g[1, 0] == np.inf


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 3), (1, 33, 1), (2, 0, 1)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_csum(mode, shape, dtype):
    x = data(shape, dtype)
    out = np.zeros((shape[0], shape[2]), dtype)
    (c,), (g,) = twin(CR.csum_fwd_cpu, GR.csum_fwd_cuda, [x], [out])
    same(g, c, RTOL[dtype])


@pytest.mark.parametrize("shape", [(1, 33, 1), (2, 7, 3), (1, 0, 2)])
def test_isum(mode, shape):
    x = np.random.default_rng(1).integers(-(2**40), 2**40, shape)
    x.flat[:1] = 2**62  # wraps around in int64 as the CPU's does
    out = np.full((shape[0], shape[2]), 5, np.int64)
    (c,), (g,) = twin(CR.isum_fwd_cpu, GR.isum_fwd_cuda, [x], [out])
    same(g, c)


@pytest.mark.parametrize("shape", [(1, 33, 1), (2, 7, 3), (1, 0, 2)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.float64, np.complex128])
def test_prod(mode, shape, dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, shape).astype(dtype)  # integers: exact in any order
    if np.dtype(dtype).kind == "f" and shape[2] >= 3:
        x[0, :, 0] = 1.5
        x[0, 0, 0] = np.inf  # inf * ... * 1.5: inf
        x[0, :, 1] = 0.5
        x[0, 1, 1] = np.inf  # inf * 0 anywhere: nan
        x[0, 3, 1] = 0.0
        x[1, 2, 2] = np.nan
    out = np.zeros((shape[0], shape[2]), dtype)
    (c,), (g,) = twin(CR.prod_fwd_cpu, GR.prod_fwd_cuda, [x], [out])
    same(g, c, RTOL.get(dtype, 0.0))


def extreme_data(shape, dtype, seed):
    """Few distinct values (ties), +-0.0 and NaN for floats, so first-index rules matter."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f" and x.size:
        x[x == 0] = -0.0
        x.flat[rng.integers(0, x.size, 2)] = 0.0
        outer, n, inner = shape
        if inner >= 3 and n >= 4:
            x[0, 1, 0] = np.nan
            x[0, 3, 0] = np.nan  # a second NaN: the first one's index
            x[-1, n - 1, 1] = np.inf
            x[-1, 2, 2] = -np.inf
    return x


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 3), (1, 33, 1), (3, 1, 2), (0, 4, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("take_max", [True, False])
def test_amax_argmax(mode, shape, dtype, take_max):
    x = extreme_data(shape, dtype, 3)
    out = np.zeros((shape[0], shape[2]), dtype)
    (c,), (g,) = twin(CR.amax_fwd_cpu, GR.amax_fwd_cuda, [x], [out], take_max)
    same(g, c)
    if np.dtype(dtype).kind == "f":  # the sign of a zero result too
        assert np.array_equal(np.signbit(g), np.signbit(c))
    idx = np.zeros((shape[0], shape[2]), np.int64)
    (c,), (g,) = twin(CR.argmax_fwd_cpu, GR.argmax_fwd_cuda, [x], [idx], take_max)
    same(g, c)


def test_amax_empty_axis_leaves_out(mode):
    x = np.zeros((2, 0, 3), np.float32)
    d = cuda.to_device(np.full((2, 3), 4.0, np.float32))
    GR.amax_fwd_cuda(cuda.to_device(x), d, True)
    i = cuda.to_device(np.full((2, 3), 4, np.int64))
    GR.argmax_fwd_cuda(cuda.to_device(x), i, False)
    assert (d.copy_to_host() == 4).all() and (i.copy_to_host() == 4).all()


@pytest.mark.parametrize("shape", SHAPES + [(2, 2, 1)])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var(mode, shape, dtype, correction):
    x = data(shape, dtype)
    out = np.zeros((shape[0], shape[2]), dtype)
    (c,), (g,) = twin(CR.var_fwd_cpu, GR.var_fwd_cuda, [x], [out], correction)
    same(g, c, RTOL[dtype] * 10)


def test_var_dof_le_zero_gives_inf_or_nan(mode):
    x = np.array([[[1.0], [2.0]], [[3.0], [3.0]]])  # (2, 2, 1): n = 2
    (c,), (g,) = twin(CR.var_fwd_cpu, GR.var_fwd_cuda, [x], [np.zeros((2, 1))], 2)
    same(g, c)
    assert g[0, 0] == np.inf and np.isnan(g[1, 0])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp(mode, shape, dtype):
    x = data(shape, dtype) * 3
    outer, n, inner = shape
    out = np.zeros((outer, inner), dtype)
    if n == 0:  # the CPU twin reads past the end here: PyTorch's -inf
        d = cuda.to_device(out)
        GR.logsumexp_fwd_cuda(cuda.to_device(x), d)
        assert (d.copy_to_host() == -np.inf).all()
        return
    (c,), (g,) = twin(CR.logsumexp_fwd_cpu, GR.logsumexp_fwd_cuda, [x], [out])
    same(g, c, RTOL[dtype] * 4)


def test_logsumexp_special_lines(mode):
    nan, inf = np.nan, np.inf
    lines = [
        [nan, inf, 1.0],
        [inf, 1.0, 2.0],
        [-inf, -inf, -inf],
        [-inf, 0.0, -inf],
        [inf, -inf, 0],
    ]
    x = np.array(lines, np.float32).T[None].copy()  # (1, 3, 5)
    (c,), (g,) = twin(CR.logsumexp_fwd_cpu, GR.logsumexp_fwd_cuda, [x], [np.zeros((1, 5), x.dtype)])
    same(g, c, 1e-6)
    assert np.isnan(g[0, 0]) and g[0, 1] == inf and g[0, 2] == -inf


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 3), (1, 33, 1), (2, 0, 3)])
@pytest.mark.parametrize(
    "dtype,zero",
    [(np.float32, np.float64(0)), (np.float64, np.float64(0)), (np.int64, np.int64(0))],
)
def test_cumsum(shape, dtype, zero):
    x = data(shape, np.float64) * 100
    x = np.nan_to_num(x, nan=0.0, posinf=1e9, neginf=-1e9).astype(dtype)
    if np.dtype(dtype).kind == "f" and shape == (2, 7, 3):
        x[0, 2, 0] = np.nan
        x[1, 1, 1] = np.inf
        x[1, 4, 1] = -np.inf
        x[1, 3, 2] = -np.inf
    out = np.zeros(shape, dtype)
    (c,), (g,) = twin(CR.cumsum_fwd_cpu, GR.cumsum_fwd_cuda, [x], [out], zero)
    same(g, c)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 3), (1, 33, 1), (2, 0, 3)])
@pytest.mark.parametrize(
    "dtype,acc0",
    [
        (np.float32, np.float64(1)),
        (np.float64, np.float64(1)),
        (np.int64, np.int64(1)),
        (np.complex64, np.complex128(1)),
    ],
)
def test_cumprod_fwd_bwd(shape, dtype, acc0):
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, shape).astype(dtype)  # zeros: 0, 1 and 2+ per line
    if np.dtype(dtype).kind in "fc":
        x = x + rng.uniform(-0.4, 0.4, shape).astype(x.real.dtype)
        if shape == (2, 7, 3):
            x[0, :, 0] = [1.5, 0, 2, 3, 0, 4, 5]
            x[0, :, 1] = [2, 3, 0, 1, 1, 1, 2]
            x[0, :, 2] = [1, 2, 3, 4, 5, 6, 0]
            x[1, 3, 1] = np.nan
    out = np.zeros(shape, dtype)
    (c,), (g,) = twin(CR.cumprod_fwd_cpu, GR.cumprod_fwd_cuda, [x], [out], acc0)
    same(g, c)
    if np.dtype(dtype).kind == "i":
        return  # the backward is for float and complex lines
    gy = rng.standard_normal(shape).astype(dtype)
    (c,), (g,) = twin(CR.cumprod_bwd_cpu, GR.cumprod_bwd_cuda, [x, c, gy], [np.ones(shape, dtype)])
    same(g, c, RTOL[dtype] * 10)


# ---- softmax.py ----


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_fwd_bwd(mode, shape, dtype, log):
    x = data(shape, dtype) * 3
    out = np.full(shape, 9, dtype)
    (c,), (g,) = twin(CS.softmax_fwd_cpu, GS.softmax_fwd_cuda, [x], [out], log)
    same(g, c, RTOL[dtype] * 4)
    gy = data(shape, dtype, seed=5, special=False)
    (cb,), (gb,) = twin(CS.softmax_bwd_cpu, GS.softmax_bwd_cuda, [gy, c], [out], log)
    same(gb, cb, RTOL[dtype] * 8)


@pytest.mark.parametrize("inner", [1, 3])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_special_lines(mode, inner, log):
    """All -inf (NaN, as PyTorch), one +inf (NaN: inf - inf), a NaN, -inf next to finite."""
    nan, inf = np.nan, np.inf
    lines = [[-inf, -inf, -inf], [inf, 1.0, 2.0], [1.0, nan, 0.0], [-inf, 0.5, -inf]]
    x = np.array(lines, np.float32)  # (4, 3): outer 4, n 3
    x = x[:, :, None] if inner == 1 else np.repeat(x[:, :, None], inner, axis=2)
    (c,), (g,) = twin(CS.softmax_fwd_cpu, GS.softmax_fwd_cuda, [x], [np.zeros_like(x)], log)
    same(g, c, 1e-6)
    assert np.isnan(g[0]).all() and np.isnan(g[2]).all()
    assert (g[3, 0] == (-inf if log else 0)).all()
    gy = np.ones_like(x)
    (cb,), (gb,) = twin(CS.softmax_bwd_cpu, GS.softmax_bwd_cuda, [gy, c], [np.zeros_like(x)], log)
    same(gb, cb, 1e-6)


# ---- sort.py ----


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 33), (0, 4), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("take_max", [True, False])
def test_cumextreme_rows(shape, dtype, take_max):
    x = extreme_data((1,) + shape, dtype, 6)[0]
    if np.dtype(dtype).kind == "f" and shape == (3, 7):
        x[0] = [1, np.nan, 2, np.nan, 3, 0, 0]  # each later NaN moves the index
        x[1] = [-np.inf, np.inf, 1, np.inf, -np.inf, 5, np.inf]
    vals = np.zeros(shape, dtype)
    idx = np.zeros(shape, np.int64)
    (cv, ci), (gv, gi) = twin(
        CSo.cumextreme_rows_cpu, GSo.cumextreme_rows_cuda, [x], [vals, idx], take_max
    )
    same(gv, cv)
    same(gi, ci)
