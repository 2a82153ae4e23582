"""DLPack both ways (Tensor.__dlpack__ / __dlpack_device__, nbgrad.from_dlpack,
nbgrad.utils.dlpack) with NumPy and PyTorch: zero-copy, strides kept, PyTorch's errors; and
nbgrad.tensor / as_tensor of a PyTorch tensor, torch.as_tensor of an nbgrad tensor."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.utils.dlpack import DLDeviceType, to_dlpack

DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
DTYPES += ["int8", "int16", "int32", "int64", "uint8", "bool"]


def layouts(lib):
    b = lib.arange(24.0).reshape(2, 3, 4)
    return {
        "contiguous": b,
        "0-d": lib.tensor(3.5),
        "empty": lib.zeros(0, 3),
        "transposed": b.transpose(0, 2),
        "strided": b[:, ::2, 1:],
        "offset row": b[1],
        "expanded": lib.ones(3).expand(4, 3),
    }


def ptr(x):
    return x.data_ptr() if not isinstance(x, np.ndarray) else x.ctypes.data


@pytest.mark.parametrize("name", list(layouts(nbgrad)))
def test_numpy_both_ways_share_memory(name):
    t = layouts(nbgrad)[name]
    a = np.from_dlpack(t)
    assert a.shape == tuple(t.shape) and a.strides == t.numpy().strides
    np.testing.assert_array_equal(a, t.numpy())
    if t.numel():
        assert ptr(a) == ptr(t)
    back = nbgrad.from_dlpack(a)
    assert type(back) is nbgrad.Tensor and back.stride() == t.stride()
    if t.numel():
        assert ptr(back) == ptr(t)


def test_writes_are_visible_both_ways_numpy():
    a = np.zeros(3)
    t = nbgrad.from_dlpack(a)
    t[1] = 5.0
    assert a[1] == 5.0
    n = nbgrad.zeros(3)
    np.from_dlpack(n)[2] = 7.0
    assert n[2].item() == 7.0


@needs_torch
@pytest.mark.parametrize("name", list(layouts(nbgrad)))
def test_pytorch_both_ways_share_memory(name):
    t = layouts(nbgrad)[name]
    tt = torch.from_dlpack(t)
    assert tt.stride() == t.stride() and tt.shape == t.shape
    assert tt.tolist() == t.tolist()
    theirs = layouts(torch)[name]
    ours = nbgrad.from_dlpack(theirs)
    assert ours.stride() == theirs.stride() and ours.tolist() == theirs.tolist()
    if t.numel():
        assert ptr(tt) == ptr(t) and ptr(ours) == ptr(theirs)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_pytorch_every_dtype(dtype):
    t = nbgrad.tensor([[1, 0], [3, 4]]).to(getattr(nbgrad, dtype))
    tt = torch.from_dlpack(t)
    assert str(tt.dtype) == "torch." + dtype and tt.tolist() == t.tolist()
    back = nbgrad.from_dlpack(tt)
    assert back.dtype == t.dtype and back.tolist() == t.tolist()


@needs_torch
def test_writes_are_visible_both_ways_pytorch():
    tt = torch.zeros(3)
    t = nbgrad.from_dlpack(tt)
    t.add_(1.0)
    assert tt.tolist() == [1.0, 1.0, 1.0]
    n = nbgrad.zeros(2, 2)
    torch.from_dlpack(n)[0, 1] = 9.0
    assert n[0, 1].item() == 9.0


@needs_torch
def test_tensor_and_as_tensor_of_a_pytorch_tensor():
    tt = torch.arange(6.0).reshape(2, 3)
    shared = nbgrad.as_tensor(tt)
    assert ptr(shared) == ptr(tt) and shared.dtype == nbgrad.float32
    copied = nbgrad.tensor(tt)
    assert ptr(copied) != ptr(tt) and copied.tolist() == tt.tolist()
    converted = nbgrad.as_tensor(tt, dtype=nbgrad.float64)
    assert converted.dtype == nbgrad.float64 and converted.tolist() == tt.tolist()
    assert nbgrad.tensor(tt, requires_grad=True).requires_grad
    assert nbgrad.as_tensor(tt.t()).stride() == (1, 3)


@needs_torch
def test_pytorch_tensor_and_as_tensor_of_an_nbgrad_tensor():
    t = nbgrad.arange(6.0).reshape(2, 3)
    shared = torch.as_tensor(t)
    assert ptr(shared) == ptr(t) and shared.dtype == torch.float32
    copied = torch.tensor(t)
    assert ptr(copied) != ptr(t) and copied.tolist() == t.tolist()
    assert torch.asarray(t).data_ptr() == ptr(t)


@needs_torch
def test_requires_grad_tensors_are_not_exported_as_in_pytorch():
    msg = r"Can't export tensors that require gradient, use tensor.detach\(\)"
    for lib in (nbgrad, torch):
        tg = lib.ones(2, requires_grad=True)
        with pytest.raises(BufferError, match=msg):
            tg.__dlpack__()
        with pytest.raises(BufferError, match=msg):
            np.from_dlpack(tg)
    with pytest.raises(BufferError, match=msg):
        torch.from_dlpack(nbgrad.ones(2, requires_grad=True))
    with pytest.raises(BufferError, match=msg):
        torch.as_tensor(nbgrad.ones(2, requires_grad=True))
    with pytest.raises(BufferError, match=msg):
        nbgrad.from_dlpack(torch.ones(2, requires_grad=True))
    assert torch.from_dlpack(nbgrad.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


def test_requires_grad_error_without_the_oracle():
    with pytest.raises(BufferError, match="require gradient"):
        np.from_dlpack(nbgrad.ones(2, requires_grad=True))


@needs_torch
def test_stream_and_device_arguments_as_pytorch():
    for lib in (nbgrad, torch):
        t = lib.ones(2)
        t.__dlpack__(stream=None)
        t.__dlpack__(stream=-1)
        with pytest.raises(AssertionError, match="stream should be None on cpu"):
            t.__dlpack__(stream=5)
        with pytest.raises(TypeError, match="stream must be"):
            t.__dlpack__(stream="x")
        assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
        assert t.__dlpack_device__() == (torch.utils.dlpack.DLDeviceType.kDLCPU, 0)


def test_capsules():
    t = nbgrad.arange(4.0)
    cap = to_dlpack(t)
    assert "dltensor" in repr(cap)
    back = nbgrad.from_dlpack(cap)
    assert ptr(back) == ptr(t) and back.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(Exception, match="(?i)capsule|consumed|dltensor"):
        nbgrad.from_dlpack(cap)  # a capsule is consumed once
    assert nbgrad.utils.dlpack.from_dlpack is nbgrad.from_dlpack


@needs_torch
def test_capsules_with_pytorch():
    t = nbgrad.arange(3)
    assert torch.utils.dlpack.from_dlpack(to_dlpack(t)).tolist() == [0, 1, 2]
    tt = torch.arange(3.0)
    assert nbgrad.from_dlpack(torch.utils.dlpack.to_dlpack(tt)).tolist() == [0.0, 1.0, 2.0]


def test_copy_and_device_arguments():
    a = np.arange(3.0)
    assert ptr(nbgrad.from_dlpack(a, copy=True)) != ptr(a)
    assert ptr(nbgrad.from_dlpack(a, copy=False)) == ptr(a)
    assert nbgrad.from_dlpack(a, device="cpu").tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="CUDA"):
        nbgrad.from_dlpack(a, device="cuda")


def test_unsupported_inputs():
    with pytest.raises(TypeError, match="__dlpack__"):
        nbgrad.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type uint16"):
        nbgrad.from_dlpack(np.zeros(2, np.uint16))


def test_jax_when_installed():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(4.0)
    assert nbgrad.from_dlpack(x).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert jnp.from_dlpack(nbgrad.arange(3.0)).tolist() == [0.0, 1.0, 2.0]


# -- the hand-built capsules (nbgrad/utils/_dlpack_capsule.py) that CUDA tensors use, checked
# here with host memory against numpy's and PyTorch's own DLPack (same structure, kDLCPU) --


class _Producer:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def _export(a):
    from nbgrad.utils import _dlpack_capsule as dl

    st = tuple(s // a.itemsize for s in a.strides)
    return dl.export(a.__array_interface__["data"][0], a.shape, st, a.dtype, dl.KDL_CPU, 0, a)


def test_hand_built_capsule_is_read_by_numpy_and_freed():
    import gc

    from nbgrad.utils import _dlpack_capsule as dl

    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    b = np.from_dlpack(_Producer(_export(a)))
    np.testing.assert_array_equal(b, a)
    assert np.shares_memory(a, b) and len(dl._LIVE) == 1
    del b
    gc.collect()
    assert not dl._LIVE  # the consumer called the deleter
    cap = _export(a)
    assert len(dl._LIVE) == 1
    del cap
    gc.collect()
    assert not dl._LIVE  # an unconsumed capsule frees its tensor when it dies


@needs_torch
def test_hand_built_capsule_round_trips_with_pytorch():
    import gc

    from nbgrad.utils import _dlpack_capsule as dl

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.utils.dlpack.from_dlpack(_export(a))
    assert t.tolist() == a.tolist() and t.dtype == torch.float32
    t[0, 0] = 7.0
    assert a[0, 0] == 7.0  # shared
    del t
    gc.collect()
    assert not dl._LIVE
    imp = dl.read(torch.utils.dlpack.to_dlpack(torch.arange(6.0).reshape(2, 3).T))
    assert (imp.shape, imp.strides, imp.dtype, imp.device_type) == ((3, 2), (1, 3), np.float32, 1)
    imp.release()
    with pytest.raises(BufferError, match="unconsumed"):
        cap = torch.utils.dlpack.to_dlpack(torch.ones(1))
        dl.read(cap)
        dl.read(cap)  # a consumed capsule cannot be read twice
