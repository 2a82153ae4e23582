"""pickle, copy.copy and copy.deepcopy of tensors, Parameters, modules and optimizers, as
PyTorch's (torch.Tensor.__reduce_ex__ / __deepcopy__, Parameter.__reduce_ex__)."""

import copy
import multiprocessing
import pickle
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad import nn

PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)
DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
DTYPES += ["int8", "int16", "int32", "int64", "uint8", "bool"]


def roundtrip(x, proto=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(x, protocol=proto))


def layouts(lib):
    """Contiguous, 0-d, empty and view layouts (transposed, strided, offset, expanded)."""
    b = lib.arange(24.0).reshape(2, 3, 4)
    return {
        "contiguous": b,
        "0-d": lib.tensor(3.5),
        "empty": lib.zeros(0, 3),
        "transposed": b.transpose(0, 2),
        "strided": b[:, ::2, 1:],
        "offset row": b[1],
        "expanded": lib.ones(3).expand(4, 3),
        "permuted slice": b.permute(2, 0, 1)[1:3],
    }


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("name", list(layouts(nbgrad)))
def test_roundtrip_keeps_values_dtype_and_strides(name, proto):
    x = layouts(nbgrad)[name]
    y = roundtrip(x, proto)
    assert type(y) is nbgrad.Tensor and y is not x
    assert y.dtype == x.dtype and y.shape == x.shape and y.stride() == x.stride()
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert not np.shares_memory(y.numpy(), x.numpy())


@needs_torch
@pytest.mark.parametrize("name", list(layouts(nbgrad)))
def test_strides_after_pickle_and_copies_match_pytorch(name):
    for fn in (roundtrip, copy.copy, copy.deepcopy):
        ours, theirs = fn(layouts(nbgrad)[name]), fn(layouts(torch)[name])
        assert ours.stride() == theirs.stride(), fn
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype):
    x = nbgrad.tensor([[1, 0], [3, 4]]).to(getattr(nbgrad, dtype))
    y = roundtrip(x)
    assert y.dtype == x.dtype and y.tolist() == x.tolist()


def test_an_expanded_tensor_stays_unwritable():
    y = roundtrip(nbgrad.ones(3).expand(4, 3))
    assert y.stride() == (0, 1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y.add_(1)


def test_requires_grad_and_history():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    x.grad = nbgrad.ones(2)
    y = roundtrip(x)
    assert y.requires_grad and y.is_leaf and y.grad is None  # .grad is not pickled (PyTorch)
    z = roundtrip(x * 2)  # a non-leaf comes back as a leaf that requires grad
    assert z.is_leaf and z.requires_grad and z.tolist() == [2.0, 4.0]
    z.sum().backward()
    assert z.grad.tolist() == [1.0, 1.0]
    assert not roundtrip(nbgrad.ones(2)).requires_grad


def test_user_attributes_travel():
    x = nbgrad.ones(2)
    x.name = "w"
    assert roundtrip(x).name == "w"
    assert copy.copy(x).name == "w"
    assert copy.deepcopy(x).name == "w"


def test_hooks_are_not_pickled_and_warn():
    x = nbgrad.ones(2, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    with pytest.warns(UserWarning, match="backward hook .* will not be serialized"):
        y = roundtrip(x)
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]
    z = nbgrad.ones(2, requires_grad=True)
    z.register_hook(nbgrad.utils.hooks.unserializable_hook(lambda g: g))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        roundtrip(z)


def test_views_pickled_together_are_independent_as_in_pytorch():
    b = nbgrad.arange(6.0).reshape(2, 3)
    bb, vv = roundtrip((b, b.t()))
    bb[0, 1] = 77.0
    assert vv[1, 0].item() == 1.0  # PyTorch's pickle stores each tensor's storage separately
    assert roundtrip([b, b])[0] is not None
    same = roundtrip([b, b])
    assert same[0] is same[1]  # one object pickled twice is one object


def test_copy_shares_memory():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    c = copy.copy(x)
    assert c is not x and c.requires_grad and c.is_leaf and c.grad is None
    with nbgrad.no_grad():
        c[0] = 5.0
    assert x[0].item() == 5.0
    y = x * 2
    cy = copy.copy(y)  # a non-leaf: a leaf that requires grad, sharing memory (PyTorch)
    assert (
        cy.is_leaf
        and cy.requires_grad
        and np.shares_memory(cy.detach().numpy(), y.detach().numpy())
    )


def test_deepcopy():
    x = nbgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x.grad = nbgrad.full((2, 2), 7.0)
    d = copy.deepcopy(x)
    assert d.requires_grad and d.is_leaf and d.grad.tolist() == x.grad.tolist()
    assert not np.shares_memory(d.detach().numpy(), x.detach().numpy())
    assert d.grad is not x.grad
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)
    b = nbgrad.arange(6.0).reshape(2, 3)
    bb, vv = copy.deepcopy((b, b.t()))  # views copied together share the copy (PyTorch)
    bb[0, 1] = 77.0
    assert vv[1, 0].item() == 77.0 and b[0, 1].item() == 1.0
    assert vv.stride() == (1, 3)


def test_parameter():
    p = nn.Parameter(nbgrad.randn(2, 3))
    q = roundtrip(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == p.tolist()
    assert not roundtrip(nn.Parameter(nbgrad.ones(2), requires_grad=False)).requires_grad
    c = copy.copy(p)
    assert type(c) is nn.Parameter and np.shares_memory(c.detach().numpy(), p.detach().numpy())
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and not np.shares_memory(d.detach().numpy(), p.detach().numpy())


def _double(module, args):  # a module-level hook: picklable
    return None


def small_model():
    nbgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    m[0].register_forward_pre_hook(_double)
    return m


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_module(how):
    m = small_model()
    x = nbgrad.randn(5, 3)
    m(x)  # updates BatchNorm's running stats
    m2 = roundtrip(m) if how == "pickle" else copy.deepcopy(m)
    assert type(m2) is nn.Sequential and m2[0].weight is not m[0].weight
    assert type(m2[0].weight) is nn.Parameter and m2[0].weight.requires_grad
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and a.tolist() == b.tolist()
    assert list(m2[0]._forward_pre_hooks.values()) == [_double]
    m.eval(), m2.eval()
    assert m(x).tolist() == m2(x).tolist()
    m2(x).sum().backward()  # the copy trains on its own parameters
    assert m2[0].weight.grad is not None and m[0].weight.grad is None


def test_module_with_a_lambda_hook_cannot_be_pickled_as_in_pytorch():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda *a: None)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(m)
    copy.deepcopy(m)  # deepcopy copies functions by reference


def test_hook_handles_pickle_with_their_registry():
    m = nn.Linear(2, 2)
    h = m.register_forward_pre_hook(_double)
    m2, h2 = roundtrip((m, h))
    h2.remove()
    assert len(m2._forward_pre_hooks) == 0 and len(m._forward_pre_hooks) == 1


def train_step(model, opt):
    nbgrad.manual_seed(1)
    loss = model(nbgrad.randn(4, 3)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize(
    "make",
    [
        lambda ps: nbgrad.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: nbgrad.optim.Adam(ps, lr=0.01),
    ],
)
def test_optimizer_with_its_model(how, make):
    m = small_model()
    opt = make(m.parameters())
    train_step(m, opt)
    m2, opt2 = roundtrip((m, opt)) if how == "pickle" else copy.deepcopy((m, opt))
    assert opt2.param_groups[0]["params"][0] is m2[0].weight
    sd, sd2 = opt.state_dict(), opt2.state_dict()
    assert sd["param_groups"] == sd2["param_groups"]
    for k in sd["state"]:
        for name, v in sd["state"][k].items():
            assert np.array_equal(np.asarray(v), np.asarray(sd2["state"][k][name]))
    train_step(m, opt)
    train_step(m2, opt2)  # the copies continue exactly as the originals
    for a, b in zip(m.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _times_two(t):
    return t * 2


def test_tensors_cross_process_boundaries():
    """What DataLoader workers and multiprocessing pools rely on."""
    ctx = multiprocessing.get_context("fork")
    xs = [nbgrad.arange(3.0), nbgrad.ones(2, 2).t(), nbgrad.tensor(5)]
    with ctx.Pool(1) as pool:
        out = pool.map(_times_two, xs)
    assert [o.tolist() for o in out] == [(x * 2).tolist() for x in xs]
