"""NumPy interop: the array protocol (NumPy 2's copy=), NumPy's own ufuncs and functions on
tensors, and ndarray/tensor mixing -- each the same as PyTorch's, and never a silent detach."""

import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad


def tensors(lib):
    return {
        "t": lib.tensor([1.0, 2.0, 3.0]),
        "tg": lib.tensor([1.0, 2.0, 3.0], requires_grad=True),
        "ti": lib.tensor([1, 2, 3]),
        "tb": lib.tensor([True, False, True]),
        "s": lib.tensor(2.5),
        "a": np.array([1.0, 5.0, 3.0]),
        "ai": np.array([1, 2, 3]),
        "a0": np.array(2.0),
        "np": np,
    }


def outcome(lib, expr):
    """What ``expr`` gives: a result's kind, dtype and values, or the exception type."""
    env = tensors(lib)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, env)
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome
        return ("raises", type(e).__name__)
    if isinstance(r, lib.Tensor):
        return (
            "Tensor",
            str(r.dtype).split(".")[-1],
            tuple(r.shape),
            r.requires_grad,
            r.detach().numpy().tolist(),
        )
    if isinstance(r, tuple) and r and isinstance(r[0], lib.Tensor):
        return ("tuple", [outcome_of(x) for x in r])
    if isinstance(r, np.ndarray):
        return ("ndarray", r.dtype.name, r.shape, r.tolist())
    if isinstance(r, np.generic):
        return ("numpy scalar", r.dtype.name, r.item())
    return (type(r).__name__, r)


def outcome_of(x):
    return (str(x.dtype).split(".")[-1], x.detach().numpy().tolist())


MIXED = [
    # arithmetic: the tensor's operator declines an ndarray, NumPy computes and wraps a tensor
    "t + a",
    "t * 2 + a",
    "t - a",
    "t * a",
    "t / a",
    "t ** a",
    "t @ a",
    "t + ai",
    "ti + ai",
    "t + a0",
    "s + a",
    "s * a0",
    # ndarray on the left: NumPy defers to the tensor, which declines: TypeError
    "a + t",
    "a - t",
    "a * t",
    "a @ t",
    "a0 + t",
    "a * tg",
    # a tensor that requires grad never reaches NumPy silently
    "tg + a",
    "tg * 2 + a",
    "np.exp(tg)",
    "np.add(tg, tg)",
    "np.asarray(tg)",
    "np.array(tg)",
    "np.asarray(tg[0])",
    "np.array([tg, tg])",
    # comparisons: == converts the ndarray, the others decline
    "t == a",
    "a == t",
    "tg == a",
    "t == a0",
    "t != a",
    "t < a",
    "a < t",
    "t >= a",
    # NumPy scalars are Python numbers to a tensor
    "t + np.float64(2.0)",
    "np.float64(2.0) * tg",
    "np.int64(2) * t",
    "np.float32(1) + s",
    # NumPy ufuncs on tensors: tensors back, 0-d for a 0-d input, bool as uint8 (PyTorch)
    "np.exp(t)",
    "np.exp(s)",
    "np.exp(t[0])",
    "np.add(t, t)",
    "np.add(t, ti)",
    "np.maximum(t, a)",
    "np.negative(t)",
    "np.sqrt(ti)",
    "np.exp(t, dtype=np.float64)",
    "np.greater(t, 0)",
    "np.isnan(t)",
    "np.logical_not(tb)",
    "np.equal(t, a)",
    "np.modf(t)",
    "np.divmod(t, 2)",
    "np.add.reduce(t)",
    # NumPy functions: through methods, or through the array protocol and back
    "np.argmax(t)",
    "np.clip(t, 0, 2)",
    "np.round(t)",
    "np.cumsum(t)",
    "np.concatenate([t, t])",
    "np.stack([t, t])",
    "np.sort(t)",
    "np.where(t > 1, t, a)",
    "np.dot(t, t)",
    "np.matmul(t, t)",
    "np.linalg.norm(t)",
    "np.allclose(t, a)",
    "np.array_equal(t, t)",
    "np.shape(t)",
    "np.ndim(t)",
    "np.sum(t)",
    "np.add.outer(t, t)",
    # the array protocol itself
    "np.asarray(t)",
    "np.asarray(t[0])",
    "np.asarray(s)",
    "np.asarray(ti)",
    "np.array(t, dtype=np.float64)",
    "np.array([t, t])",
    "np.asarray(tg.detach())",
    "np.sort(tg)",
]


@needs_torch
@pytest.mark.parametrize("expr", MIXED)
def test_mixing_ndarrays_and_tensors_matches_pytorch(expr):
    assert outcome(nbgrad, expr) == outcome(torch, expr)


def inplace_outcome(lib, op, rg=False):
    env = {"t": lib.tensor([1.0, 2.0], requires_grad=rg), "a": np.array([1.0, 1.0])}
    orig = env["t"]
    try:
        exec(op, env)
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome
        return ("raises", type(e).__name__)
    t, a = env["t"], env["a"]
    return (t is orig, str(t.dtype).split(".")[-1], t.tolist(), type(a).__name__, a.tolist())


@needs_torch
@pytest.mark.parametrize("op", ["t += a", "t *= a", "t -= a", "a += t", "a -= t", "a *= t"])
@pytest.mark.parametrize("rg", [False, True])
def test_inplace_mixing_matches_pytorch(op, rg):
    # t += a: __iadd__ declines, so t is rebound to NumPy's result wrapped as a new tensor
    assert inplace_outcome(nbgrad, op, rg) == inplace_outcome(torch, op, rg)


def test_requires_grad_raises_pytorchs_error():
    tg = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    msg = r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\)"
    for fn in (np.asarray, np.array, np.exp, lambda x: x * 2 + np.ones(2), np.sort):
        with pytest.raises(RuntimeError, match=msg):
            fn(tg)
    with pytest.raises(RuntimeError, match=msg):
        np.add(np.ones(2), tg[0])
    with nbgrad.no_grad():  # as PyTorch's numpy(): allowed under no_grad
        assert np.asarray(tg).tolist() == [1.0, 2.0]
    assert np.asarray(tg.detach()).tolist() == [1.0, 2.0]


def test_array_copy_protocol():
    t = nbgrad.tensor([1.0, 2.0, 3.0])
    c = np.array(t)  # copy=True (NumPy's default): a copy, editing it leaves the tensor alone
    c[0] = 100.0
    assert t.tolist() == [1.0, 2.0, 3.0]
    shared = np.asarray(t)  # copy=None: no copy needed, none made
    shared[1] = 20.0
    assert t.tolist() == [1.0, 20.0, 3.0]
    nocopy = np.array(t, copy=False)
    assert np.shares_memory(nocopy, t.numpy())
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(t, dtype=np.float64, copy=False)
    d = np.asarray(t, dtype=np.float64)  # a dtype change copies
    assert d.dtype == np.float64 and not np.shares_memory(d, t.numpy())
    assert not np.shares_memory(t.__array__(copy=True), t.numpy())
    assert np.shares_memory(t.__array__(copy=False), t.numpy())
    assert np.shares_memory(t.__array__(np.float32, copy=False), t.numpy())
    # a copy keeps the layout of a transposed tensor (NumPy's order="K")
    tt = nbgrad.zeros(2, 3).t()
    assert np.array(tt).strides == np.asarray(tt).strides


def test_copy_protects_saved_values():
    """The issue's bug: editing the 'copy' edited a tensor saved for backward."""
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.detach() * 1.0
    z = (x * y).sum()
    c = np.array(y)
    c[:] = 100.0
    z.backward()
    assert x.grad.tolist() == [1.0, 2.0]


def test_zero_dim_results():
    t = nbgrad.tensor([1.0, 2.0])
    a = np.asarray(t[0])
    assert type(a) is np.ndarray and a.shape == () and a.item() == 1.0
    r = np.exp(t[0])
    assert isinstance(r, nbgrad.Tensor) and r.dim() == 0
    assert isinstance(np.add.reduce(t), nbgrad.Tensor) and np.add.reduce(t).dim() == 0
    assert isinstance(np.argmax(t), nbgrad.Tensor) and np.argmax(t).item() == 1


def test_ufunc_results_are_tensors_without_history():
    t = nbgrad.tensor([0.0, 1.0])
    r = np.sin(t)
    assert isinstance(r, nbgrad.Tensor) and r.grad_fn is None and not r.requires_grad
    assert np.allclose(r.numpy(), np.sin([0.0, 1.0]).astype(np.float32))
    out = np.zeros(2, np.float32)
    assert np.sin(t, out=out) is out  # an explicit out= stays an ndarray, as in PyTorch


def test_eq_with_odd_ndarrays():
    t = nbgrad.tensor([1.0, 2.0])
    assert (t == np.array(["a", "b"])) is False  # NumPy cannot compare either: identity
    with pytest.raises(ValueError, match="negative"):
        t == np.array([1.0, 2.0])[::-1]  # noqa: B015 - PyTorch's from_numpy error


def test_numpy_functions_that_call_methods_keep_history():
    """np.clip/np.round call the tensor's method with out=None.  nbgrad's methods accept it and
    record the op (PyTorch's refuse out=, so NumPy falls back to the array protocol, which
    raises for a tensor that requires grad): either way nothing is silently detached."""
    tg = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = np.clip(tg, 0, 2)
    assert isinstance(r, nbgrad.Tensor) and r.grad_fn is not None
    r.sum().backward()
    assert tg.grad.tolist() == [1.0, 1.0, 0.0]
