"""CUDA index kernels (nbgrad/kernels/cuda/index.py) against their CPU twins (kernels/cpu/index.py):
the same results on the device, and the same exceptions and messages for bad indices (found on
the device before any kernel writes with them)."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import index as KI
from nbgrad.kernels.cuda import index as KC


def dev(a):
    return cuda.to_device(np.array(a, order="C"))  # (0-d stays 0-d)


@pytest.mark.parametrize("n", [0, 1, 7, 33])
@pytest.mark.parametrize("bad_at", [None, 0, 5, "last"])
@pytest.mark.parametrize("dt", [np.int64, np.int32])
def test_first_out_of_range(n, bad_at, dt):
    idx = np.random.default_rng(n).integers(-4, 4, n).astype(dt)
    if bad_at is not None and n:
        k = n - 1 if bad_at == "last" else min(bad_at, n - 1)
        idx[k] = 9
        idx[-1] = -9  # a later bad one: the first must be reported
    assert KC.first_out_of_range_cuda(dev(idx), -4, 4) == (
        KI.first_out_of_range_cpu(idx, -4, 4) if n else -1
    )


def test_check_index_same_errors():
    idx = np.array([[0, 3], [-7, 9]], np.int64)
    for kw in (dict(), dict(negative=False), dict(exc=RuntimeError)):
        for n in (10, 7, 3, 0):
            try:
                KI.check_index(idx, n, 1, **kw)
                err = None
            except Exception as e:  # noqa: BLE001 - compared below
                err = e
            if err is None:
                KC.check_index_device(dev(idx), n, 1, **kw)
            else:
                with pytest.raises(type(err)) as info:
                    KC.check_index_device(dev(idx), n, 1, **kw)
                assert str(info.value) == str(err)
    assert KC.first_bad_device(dev(idx), -7, 7) == KI.first_bad(idx, -7, 7) == 9
    assert KC.first_bad_device(dev(np.zeros(0, np.int64)), 0, 1) is None


@pytest.mark.parametrize(
    "dt", [np.float32, np.float64, np.int64, np.int32, np.int16, np.bool_, np.complex64]
)
@pytest.mark.parametrize("add", [True, False])
@pytest.mark.parametrize("m", [0, 1, 13, 40])
def test_scatter_flat(dt, add, m):
    rng = np.random.default_rng(m)
    n = 9
    lin = rng.integers(0, n, m)  # duplicates
    src = (rng.standard_normal(m) * 4).astype(dt)
    if dt == np.float32 and m > 3:
        src[2] = np.nan
        src[3] = np.inf
    out = (rng.standard_normal(n) * 4).astype(dt)
    d = dev(out)
    KI.scatter_flat(out, lin, src, add)
    KC.scatter_flat_device(d, dev(lin), dev(src), add)
    if dt in (np.float32, np.float64, np.complex64):
        np.testing.assert_allclose(d.copy_to_host(), out, rtol=1e-6)
    else:
        np.testing.assert_array_equal(d.copy_to_host(), out)


@pytest.mark.parametrize("add", [True, False])
def test_scatter_flat_kernel_writes_until_the_bad_one(add):
    out = np.zeros(5)
    lin = np.array([1, 1, 4, 7, 0, -1])
    src = np.arange(6.0) + 1
    d = dev(out)
    kc = (KC.scatter_add_flat_cuda if add else KC.scatter_flat_cuda)(d, dev(lin), dev(src))
    kcpu = (KI.scatter_add_flat_cpu if add else KI.scatter_flat_cpu)(out, lin, src)
    assert kc == kcpu == 3
    np.testing.assert_array_equal(d.copy_to_host(), out)
    with pytest.raises(RuntimeError) as e_cpu:
        KI.scatter_flat(np.zeros(5), lin, src, add)
    with pytest.raises(RuntimeError) as e_cuda:
        KC.scatter_flat_device(dev(np.zeros(5)), dev(lin), dev(src), add)
    assert str(e_cuda.value) == str(e_cpu.value)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64])
def test_scatter_add(dt):
    rng = np.random.default_rng(3)
    lin = rng.integers(0, 12, 30)
    src = rng.standard_normal((5, 6))
    want = KI.scatter_add((3, 4), dt, lin, src)
    got = KC.scatter_add_device((3, 4), dt, dev(lin), dev(src.astype(dt)))
    assert got.shape == (3, 4) and got.dtype == dt
    np.testing.assert_allclose(got.copy_to_host(), want, rtol=1e-6)
    empty = KC.scatter_add_device((0, 2), dt, dev(np.zeros(0, np.int64)), dev(np.zeros(0, dt)))
    assert empty.shape == (0, 2)


def _sr_layout(shape, ishape, d):
    """The offsets ops/index_ops.py builds for scatter_reduce along ``d``."""
    strides = np.cumprod((1,) + tuple(shape[::-1]), dtype=np.int64)[-2::-1]
    outer_off = np.zeros(1, np.int64)
    for k in range(d):
        outer_off = (outer_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    inner_off = np.zeros(1, np.int64)
    for k in range(d + 1, len(ishape)):
        inner_off = (inner_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    return outer_off, inner_off, int(strides[d])


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int16])
@pytest.mark.parametrize(
    "shape,ishape,d", [((4, 5), (3, 5), 0), ((3, 4, 2), (2, 6, 2), 1), ((7,), (9,), 0)]
)
def test_scatter_reduce(mode, include_self, dt, shape, ishape, d):
    rng = np.random.default_rng(mode)
    outer_off, inner_off, stride = _sr_layout(shape, ishape, d)
    idx = rng.integers(0, shape[d], ishape).astype(np.int64)
    i3 = idx.reshape(outer_off.size, -1, inner_off.size)
    src = (rng.standard_normal(i3.shape) * 3).astype(dt)
    if dt == np.float32:
        src.reshape(-1)[1] = np.nan
    out = (rng.standard_normal(int(np.prod(shape))) * 3).astype(dt)
    ident = {0: 0, 1: 1, 2: 0, 3: -np.inf, 4: np.inf}[mode]
    if dt in (np.int64, np.int16):
        ident = {3: np.iinfo(dt).min, 4: np.iinfo(dt).max}.get(mode, ident)
    count = np.zeros(out.size if mode == 2 else 1, np.int64)
    dout, dcount = dev(out), dev(count)
    args = (mode, include_self, ident)
    assert KI.scatter_reduce_cpu(out, i3, src, outer_off, inner_off, stride, *args, count) == -1
    assert (
        KC.scatter_reduce_cuda(
            dout, dev(i3), dev(src), dev(outer_off), dev(inner_off), stride, *args, dcount
        )
        == -1
    )
    np.testing.assert_allclose(dout.copy_to_host(), out, rtol=1e-5)
    np.testing.assert_array_equal(dcount.copy_to_host(), count)


def test_scatter_reduce_bad_position_nothing_written():
    outer_off, inner_off, stride = _sr_layout((4, 5), (3, 5), 0)
    i3 = np.zeros((1, 3, 5), np.int64)
    i3[0, 1, 2] = 4  # flat position 22 >= 20
    i3[0, 2, 0] = -1
    src = np.ones((1, 3, 5))
    out = np.zeros(20)
    count = np.zeros(1, np.int64)
    want = KI.scatter_reduce_cpu(out, i3, src, outer_off, inner_off, stride, 0, True, 0.0, count)
    dout = dev(np.zeros(20))
    got = KC.scatter_reduce_cuda(
        dout, dev(i3), dev(src), dev(outer_off), dev(inner_off), stride, 0, True, 0.0, dev(count)
    )
    assert got == want == 7
    assert not dout.copy_to_host().any()
    empty = np.zeros((0, 3, 5), np.int64)
    assert KC.scatter_reduce_cuda(
        dout, dev(empty), dev(np.zeros((0, 3, 5))), dev(outer_off), dev(inner_off), stride,
        0, True, 0.0, dev(count),
    ) == -1  # fmt: skip


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("accumulate", [True, False])
@pytest.mark.parametrize("shape,d,k", [((4, 3), 0, 6), ((2, 5, 3), 1, 7), ((), 0, 1), ((6,), 0, 0)])
def test_index_put_dim(dt, accumulate, shape, d, k):
    rng = np.random.default_rng(k)
    out = np.array(rng.standard_normal(shape) * 5, dt)  # (an array when 0-d)
    n = shape[d] if shape else 1
    idx = rng.integers(0, n, k)  # duplicates
    sshape = list(shape if shape else (1,))
    sshape[d] = k
    src = (rng.standard_normal(sshape) * 5).astype(dt)
    if not shape:
        src = src.reshape(())
    dout = dev(out)
    KI.index_put_dim(out, d, idx, src, accumulate)
    KC.index_put_dim_device(dout, d, dev(idx), dev(src), accumulate)
    np.testing.assert_allclose(dout.copy_to_host(), out, rtol=1e-6)


def test_index_put_dim_bad_index():
    out = np.zeros((3, 4))
    idx = np.array([0, 5, -1])
    src = np.ones((3, 3))
    with pytest.raises(RuntimeError) as e_cpu:
        KI.index_put_dim(out, 1, idx, src, True)
    dout = dev(out)
    with pytest.raises(RuntimeError) as e_cuda:
        KC.index_put_dim_device(dout, 1, dev(idx), dev(src), True)
    assert (
        str(e_cuda.value)
        == str(e_cpu.value)
        == ("index 5 is out of bounds for the flat buffer being written")
    )
    assert not dout.copy_to_host().any()  # nothing written
    assert KC.index_put_dim_cuda(dev(out.reshape(3, 4, 1)), dev(idx), dev(src[..., None]), 0) == 1


@pytest.mark.parametrize("m", [0, 1, 33])
def test_gather_flat(m):
    rng = np.random.default_rng(m)
    src = rng.standard_normal(10).astype(np.float32)
    lin = rng.integers(0, 10, m)
    out = cuda.device_array(m, np.float32)
    KC.gather_flat_cuda(dev(src), dev(lin), out)
    np.testing.assert_array_equal(out.copy_to_host(), src[lin])
