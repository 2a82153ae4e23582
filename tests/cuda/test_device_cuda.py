"""CUDA tensors as users meet them: devices, copies between devices (differentiable), errors,
hooks, optimizers, serialization, the device RNG, and small training steps that must give the
same parameters as on the CPU.  Runs under the simulator (tests/test_cuda_suite.py) or on a GPU
(the main run when a GPU is present)."""

import io
import os

import numpy as np
import pytest

import nbgrad
from nbgrad import nn

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def test_device_api():
    assert nbgrad.cuda.is_available()
    assert nbgrad.cuda.device_count() >= 1
    assert nbgrad.cuda.current_device() == 0
    assert isinstance(nbgrad.cuda.get_device_name(), str)
    nbgrad.cuda.synchronize()
    x = nbgrad.ones(2, 3, device="cuda")
    assert x.is_cuda and x.device == nbgrad.device("cuda", 0) and str(x.device) == "cuda:0"
    assert x.device.type == "cuda" and x.device.index == 0
    assert not nbgrad.ones(1).is_cuda
    assert repr(x) == "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')"
    assert x.sum().item() == 6.0 and float(x[0, 0]) == 1.0 and bool(x[0, 0])
    assert x.tolist() == [[1.0] * 3] * 2
    assert x.stride() == (3, 1) and x.is_contiguous() and x.t().stride() == (1, 3)


def test_creation_and_like_functions_keep_the_device():
    for t in (
        nbgrad.zeros(2, device="cuda"),
        nbgrad.full((2,), 3.0, device="cuda"),
        nbgrad.empty(2, device="cuda"),
        nbgrad.tensor([1, 2], device="cuda"),
        nbgrad.arange(3.0).cuda(),
        nbgrad.rand(4, device="cuda"),
        nbgrad.randn(4, device="cuda", dtype=nbgrad.float64),
    ):
        assert t.is_cuda
        for like in (nbgrad.zeros_like(t), nbgrad.ones_like(t), nbgrad.empty_like(t)):
            assert like.is_cuda and like.shape == t.shape and like.dtype is t.dtype
    assert nbgrad.zeros_like(nbgrad.ones(2, device="cuda"), device="cpu").device.type == "cpu"


def test_default_device_cuda():
    nbgrad.set_default_device("cuda")
    try:
        assert nbgrad.zeros(2).is_cuda and nbgrad.tensor([1.0]).is_cuda
    finally:
        nbgrad.set_default_device(None)
    assert not nbgrad.zeros(2).is_cuda


def test_copies_between_devices_are_differentiable():
    x = nbgrad.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=nbgrad.float64, requires_grad=True)
    y = x.cuda()
    assert y.grad_fn.name() == "ToCopyBackward0"
    z = (y * y).sum().cpu()
    assert not z.is_cuda
    z.backward()
    assert not x.grad.is_cuda
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
    w = x.to("cuda", nbgrad.float32)
    assert w.is_cuda and w.dtype is nbgrad.float32
    assert y.cuda() is y and x.cpu() is x and y.to("cuda") is y
    assert y.to(nbgrad.ones(1)).device.type == "cpu"  # to(tensor): its dtype and device


def test_mixed_devices_raise_pytorchs_error():
    a = nbgrad.ones(3, device="cuda")
    b = nbgrad.ones(3)
    msg = "Expected all tensors to be on the same device"
    for fn in (lambda: a + b, lambda: b * a, lambda: a @ b, lambda: nbgrad.cat([a, b])):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    # a 0-d CPU tensor joins a CUDA elementwise op (PyTorch's CPU-scalar rule)
    r = a * nbgrad.tensor(2.0)
    assert r.is_cuda and r.tolist() == [2.0, 2.0, 2.0]


def test_numpy_of_a_cuda_tensor_raises():
    x = nbgrad.ones(2, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="Tensor.cpu"):
        np.asarray(x)
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 1.0])


def test_views_share_memory_and_version_counters():
    x = nbgrad.zeros(3, 4, device="cuda")
    v = x[1]
    v.add_(5.0)
    assert x.sum().item() == 20.0 and x._version == v._version == 1
    t = x.t()
    t[0, 1] = 7.0
    assert x[1, 0].item() == 7.0
    assert v.storage_offset() == 4 and v.data_ptr() == x.data_ptr() + 4 * 4


def test_inplace_on_saved_tensor_raises_on_cuda():
    a = nbgrad.ones(3, device="cuda", requires_grad=True)
    b = a * 2
    c = b.sin()  # saves its input
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_hooks_see_cuda_gradients_in_order():
    log = []
    x = nbgrad.ones(2, device="cuda", requires_grad=True)
    x.register_hook(lambda g: log.append(("leaf", g.is_cuda, g.tolist())))
    x.register_post_accumulate_grad_hook(lambda p: log.append(("post", p.grad.is_cuda)))
    y = x * 3
    y.register_hook(lambda g: (log.append(("y", g.is_cuda)), g * 2)[1])
    y.sum().backward()
    assert log == [("y", True), ("leaf", True, [6.0, 6.0]), ("post", True)]
    assert x.grad.is_cuda and x.grad.tolist() == [6.0, 6.0]
    (x * 1).sum().backward()  # accumulates in place on the device
    assert x.grad.tolist() == [7.0, 7.0]


def test_device_rng_is_seeded_and_reproducible():
    nbgrad.manual_seed(123)
    a = nbgrad.rand(50, device="cuda")
    b = nbgrad.rand(50, device="cuda")
    nbgrad.manual_seed(123)
    c = nbgrad.rand(50, device="cuda")
    assert a.tolist() == c.tolist() and a.tolist() != b.tolist()
    assert 0.0 <= min(a.tolist()) and max(a.tolist()) < 1.0
    nbgrad.cuda.manual_seed(7)
    n = nbgrad.randn(300, device="cuda", dtype=nbgrad.float64)
    assert abs(n.mean().item()) < 0.3 and abs(n.std().item() - 1) < 0.2


def test_save_load_keeps_the_device_and_map_location_moves_it():
    state = {"w": nbgrad.arange(6.0).reshape(2, 3).cuda(), "b": nbgrad.ones(2)}
    for fmt in ({}, {"_use_new_zipfile_serialization": True}):
        buf = io.BytesIO()
        nbgrad.save(state, buf, **fmt)
        buf.seek(0)
        back = nbgrad.load(buf)
        assert back["w"].is_cuda and not back["b"].is_cuda
        assert back["w"].tolist() == state["w"].tolist()
        buf.seek(0)
        cpu = nbgrad.load(buf, map_location="cpu")
        assert not cpu["w"].is_cuda and cpu["w"].tolist() == state["w"].tolist()


def _mlp():
    nbgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).double()


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_training_on_cuda_matches_cpu(opt):
    cpu, gpu = _mlp(), _mlp().cuda()
    assert all(p.is_cuda for p in gpu.parameters())

    def make(m):
        if opt == "sgd":
            return nbgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
        return nbgrad.optim.Adam(m.parameters(), lr=0.05)

    oc, og = make(cpu), make(gpu)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = nbgrad.tensor(rng.standard_normal((4, 6)))
        y = nbgrad.tensor(rng.integers(0, 3, 4))
        for m, o, xx, yy in ((cpu, oc, x, y), (gpu, og, x.cuda(), y.cuda())):
            o.zero_grad()
            loss = nn.functional.cross_entropy(m(xx), yy)
            loss.backward()
            o.step()
    for a, b in zip(cpu.parameters(), gpu.parameters()):
        assert b.is_cuda and b.grad.is_cuda
        np.testing.assert_allclose(
            b.detach().cpu().numpy(), a.detach().numpy(), rtol=1e-10, atol=1e-12
        )


def test_module_cpu_moves_back():
    m = _mlp().cuda()
    m.cpu()
    assert not any(p.is_cuda for p in m.parameters())


@pytest.mark.skipif(SIM, reason="the simulator has no CUDA Array Interface")
def test_cuda_array_interface_round_trip():
    from numba import cuda

    x = nbgrad.arange(6.0).cuda()
    d = cuda.as_cuda_array(x)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(6.0))
    y = nbgrad.as_tensor(d)
    y.add_(1)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # shared memory


def test_dlpack_of_a_cuda_tensor():
    from nbgrad.utils import _dlpack_capsule as dl

    x = nbgrad.arange(12.0).reshape(3, 4).cuda()
    v = x.t()[1:]  # a strided view: its own pointer, shape and element strides
    assert x.__dlpack_device__() == (2, 0)  # kDLCUDA
    imp = dl.read(v.__dlpack__())
    assert (imp.device_type, imp.device_id) == (2, 0)
    assert imp.shape == (3, 3) and imp.strides == (1, 4) and imp.dtype == np.float32
    assert imp.ptr == v.data_ptr() == x.data_ptr() + 4
    imp.release()
    assert not dl._LIVE  # the consumer's release freed the exported tensor
    assert nbgrad.ones(2).__dlpack_device__() == (1, 0)


def test_cuda_array_interface_of_a_cpu_tensor_or_one_requiring_grad():
    with pytest.raises(AttributeError, match="non-CUDA tensor"):
        nbgrad.ones(2).__cuda_array_interface__  # noqa: B018
    with pytest.raises(RuntimeError, match="requires grad"):
        nbgrad.ones(2, device="cuda", requires_grad=True).__cuda_array_interface__  # noqa: B018


def _cnn():
    nbgrad.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1),
        nn.BatchNorm2d(3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(3 * 3 * 3, 4),
    ).double()


def test_cnn_training_on_cuda_matches_cpu():
    cpu, gpu = _cnn(), _cnn().cuda()
    oc = nbgrad.optim.SGD(cpu.parameters(), lr=0.05, momentum=0.9)
    og = nbgrad.optim.SGD(gpu.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    for _ in range(2):
        x = nbgrad.tensor(rng.standard_normal((2, 1, 6, 6)))
        y = nbgrad.tensor(rng.integers(0, 4, 2))
        for m, o, xx, yy in ((cpu, oc, x, y), (gpu, og, x.cuda(), y.cuda())):
            o.zero_grad()
            nn.functional.cross_entropy(m(xx), yy).backward()
            o.step()
    for a, b in zip(cpu.state_dict().values(), gpu.state_dict().values()):
        assert b.is_cuda
        np.testing.assert_allclose(b.cpu().numpy(), a.numpy(), rtol=1e-9, atol=1e-11)


def test_dropout_on_cuda():
    nbgrad.manual_seed(3)
    x = nbgrad.ones(400, device="cuda", dtype=nbgrad.float64, requires_grad=True)
    y = nn.functional.dropout(x, 0.25)
    assert y.is_cuda and y.grad_fn.name() == "MulBackward0"
    vals = set(y.tolist())
    assert vals <= {0.0, 1 / 0.75} and abs(y.tolist().count(0.0) / 400 - 0.25) < 0.1
    y.sum().backward()
    assert x.grad.is_cuda and x.grad.tolist() == y.tolist()
    assert nn.functional.dropout(x, 1.0).tolist() == [0.0] * 400
    assert nn.functional.dropout(x, 0.5, training=False) is x
