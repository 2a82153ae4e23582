"""Tensor creation, dtypes and type promotion, reprs, views and version counters, indexing and
conversions (shared/API.md; SEMANTICS.md sections 6, 7 and 14).

Every test takes the fixture ``T``: the library under test.  It runs once with ``nbgrad`` and, when
PyTorch (the oracle) is installed, once more with ``torch`` -- the very same assertions, so
each test is checked against PyTorch and is meaningful on its own without it.
"""

import re

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad


@pytest.fixture(
    params=[
        pytest.param("nbgrad", id="nbgrad"),
        pytest.param("torch", id="torch", marks=needs_torch),
    ]
)
def T(request):
    lib = nbgrad if request.param == "nbgrad" else torch
    yield lib
    lib.set_default_dtype(lib.float32)


def lib(T):
    """What reprs print for the library: 'nbgrad' or 'torch'."""
    return T.__name__


# --------------------------------------------------------------------------------------------
# creation


def test_tensor_dtype_inference(T):
    assert T.tensor([1, 2]).dtype == T.int64
    assert T.tensor([1.0, 2]).dtype == T.float32
    assert T.tensor([1, 2.5]).tolist() == [1.0, 2.5]
    assert T.tensor([True, False]).dtype == T.bool
    assert T.tensor(3.0).dtype == T.float32
    assert T.tensor(3).dtype == T.int64
    assert T.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert T.tensor(3.0).shape == () and T.tensor(3.0).dim() == 0
    assert T.tensor(np.array([1, 2], dtype=np.int32)).dtype == T.int32
    assert T.tensor(np.array([1.0, 2.0])).dtype == T.float64


def test_tensor_empty_list_is_default_float(T):
    e = T.tensor([])
    assert e.shape == (0,)
    assert e.dtype == T.float32
    assert T.tensor([[], []]).shape == (2, 0)


def test_tensor_kwargs(T):
    t = T.tensor([1, 2], dtype=T.float64)
    assert t.dtype == T.float64 and t.tolist() == [1.0, 2.0]
    assert T.tensor([1.7, -1.7], dtype=T.int32).tolist() == [1, -1]
    t = T.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    assert not T.tensor([1.0, 2.0]).requires_grad


def test_tensor_copies_its_input(T):
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = T.tensor(a)
    a[0] = 100.0
    assert t.tolist() == [1.0, 2.0]


def test_tensor_from_tensor_copies_and_warns(T):
    src = T.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        u = T.tensor(src)
    src.add_(1)
    assert u.tolist() == [1.0, 2.0]


def test_from_numpy_shares_memory(T):
    a = np.array([1.0, 2.0, 3.0])
    t = T.from_numpy(a)
    assert t.dtype == T.float64
    a[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0]
    t[1] = 20.0
    assert a.tolist() == [10.0, 20.0, 3.0]
    t.add_(1)
    assert a.tolist() == [11.0, 21.0, 4.0]
    assert T.from_numpy(np.array([1, 2], dtype=np.int64)).dtype == T.int64
    assert T.from_numpy(np.zeros((2, 3), dtype=np.float32)).shape == (2, 3)


def test_from_numpy_strided(T):
    a = np.arange(12.0).reshape(3, 4)
    t = T.from_numpy(a.T)
    assert t.shape == (4, 3)
    assert t.stride() == (1, 4)
    a[0, 1] = -1.0
    assert t[1, 0].item() == -1.0


def test_as_tensor(T):
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = T.as_tensor(a)
    a[0] = 5.0
    assert t.tolist() == [5.0, 2.0]  # same dtype: no copy
    c = T.as_tensor(a, dtype=T.float64)
    a[0] = 6.0
    assert c.tolist() == [5.0, 2.0] and c.dtype == T.float64
    x = T.tensor([1.0, 2.0])
    assert T.as_tensor(x) is x
    assert T.as_tensor(x, dtype=T.float32) is x
    assert T.as_tensor([1, 2]).dtype == T.int64
    assert T.as_tensor(x, dtype=T.float64).dtype == T.float64


def test_zeros_ones_full_empty(T):
    assert T.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert T.zeros((2, 3)).shape == (2, 3)
    assert T.zeros([2]).dtype == T.float32
    assert T.ones(2, dtype=T.int64).tolist() == [1, 1]
    assert T.ones(()).shape == ()
    assert T.full((2,), 2.5).tolist() == [2.5, 2.5]
    assert T.full((2,), 2.5).dtype == T.float32
    assert T.full((2,), 3).dtype == T.int64
    assert T.full((2,), True).dtype == T.bool
    assert T.full((2, 1), 7.0, dtype=T.float64).dtype == T.float64
    e = T.empty(3, 4)
    assert e.shape == (3, 4) and e.dtype == T.float32
    assert T.empty(0).numel() == 0
    z = T.zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf
    assert T.ones(2, 2, requires_grad=True).requires_grad
    assert T.full((1,), 1.0, requires_grad=True).requires_grad
    assert T.empty(2, requires_grad=True).requires_grad


def test_like_functions(T):
    x = T.tensor([[1, 2]], dtype=T.int32)
    for fn in (T.zeros_like, T.ones_like, T.empty_like):
        y = fn(x)
        assert y.shape == (1, 2) and y.dtype == T.int32
    assert T.zeros_like(x).tolist() == [[0, 0]]
    assert T.ones_like(x, dtype=T.float64).dtype == T.float64
    assert T.full_like(x, 7).tolist() == [[7, 7]]
    assert T.full_like(x, 7.9).tolist() == [[7, 7]]  # keeps int dtype
    f = T.tensor([1.0, 2.0], requires_grad=True)
    z = T.zeros_like(f)
    assert not z.requires_grad and z.is_leaf
    assert T.ones_like(f, requires_grad=True).requires_grad
    assert T.rand_like(f).shape == (2,) and T.rand_like(f).dtype == T.float32
    assert T.randn_like(f, dtype=T.float64).dtype == T.float64


@pytest.mark.parametrize(
    "fn", ["empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"]
)
def test_like_functions_preserve_dense_strides(T, fn):
    t = T.zeros(3, 4).t()
    f = getattr(T, fn)
    r = f(t, 2.0) if fn == "full_like" else f(t)
    assert r.shape == (4, 3)
    assert r.stride() == (1, 4)
    nd = T.zeros(3, 6)[:, ::2]  # not dense: contiguous result
    r2 = f(nd, 2.0) if fn == "full_like" else f(nd)
    assert r2.stride() == (3, 1)


def test_random_reproducible(T):
    T.manual_seed(123)
    a = T.rand(5)
    b = T.randn(2, 3)
    c = T.randint(0, 10, (4,))
    T.manual_seed(123)
    assert T.rand(5).tolist() == a.tolist()
    assert T.randn(2, 3).tolist() == b.tolist()
    assert T.randint(0, 10, (4,)).tolist() == c.tolist()
    T.manual_seed(7)
    d = T.rand_like(a)
    e = T.randn_like(b)
    T.manual_seed(7)
    assert T.rand_like(a).tolist() == d.tolist()
    assert T.randn_like(b).tolist() == e.tolist()
    assert T.rand(5).tolist() != d.tolist()  # the stream advances


def test_random_ranges_and_dtypes(T):
    T.manual_seed(0)
    r = T.rand(1000)
    assert r.dtype == T.float32
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    n = T.randn(2000, dtype=T.float64)
    assert n.dtype == T.float64
    assert abs(n.mean().item()) < 0.15 and 0.85 < n.std().item() < 1.15
    i = T.randint(3, 6, (500,))
    assert i.dtype == T.int64
    assert set(i.tolist()) == {3, 4, 5}
    assert T.randint(0, 2, (3,), dtype=T.int32).dtype == T.int32
    assert T.rand(2, 3, requires_grad=True).requires_grad
    assert T.randn((4,)).shape == (4,)


def test_randint_high_only(T):
    T.manual_seed(0)
    r = T.randint(5, (2, 2))
    assert r.shape == (2, 2) and r.dtype == T.int64
    assert 0 <= r.min().item() and r.max().item() < 5
    assert T.randint(3, size=(4,)).shape == (4,)


def test_arange(T):
    assert T.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert T.arange(5).dtype == T.int64
    assert T.arange(5.0).dtype == T.float32
    assert T.arange(1, 10, 3).tolist() == [1, 4, 7]
    assert T.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert T.arange(0, 1, 0.25).dtype == T.float32
    assert T.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert T.arange(3, dtype=T.float64).dtype == T.float64
    assert T.arange(3.0, requires_grad=True).requires_grad


def test_linspace_eye(T):
    ls = T.linspace(0, 1, 5)
    assert ls.dtype == T.float32
    assert ls.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert T.linspace(2, 2, 1).tolist() == [2.0]
    assert T.linspace(0, 1, 0).shape == (0,)
    assert T.linspace(-1, 1, 3, dtype=T.float64).dtype == T.float64
    assert T.eye(3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert T.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert T.eye(2, dtype=T.int64).dtype == T.int64
    assert T.eye(2, requires_grad=True).requires_grad


# --------------------------------------------------------------------------------------------
# dtypes and type promotion


def test_type_promotion_python_scalars(T):
    i = T.tensor([1, 2])
    r = i * 2.5
    assert r.dtype == T.float32 and r.tolist() == [2.5, 5.0]
    assert (i + 1).dtype == T.int64
    f = T.tensor([1.0, 2.0])
    assert (f + 1.5).dtype == T.float32
    assert (f * 2).dtype == T.float32
    assert (T.tensor([1.0, 2.0], dtype=T.float64) + 1.5).dtype == T.float64
    assert (T.tensor([1], dtype=T.int32) + 5).dtype == T.int32
    assert (T.tensor([1], dtype=T.float16) * 3.0).dtype == T.float16


def test_type_promotion_tensors(T):
    i32 = T.tensor([1, 2], dtype=T.int32)
    i64 = T.tensor([3, 4])
    assert (i32 + i64).dtype == T.int64
    assert (i32 + i64).tolist() == [4, 6]
    f32 = T.tensor([1.0, 2.0])
    f64_0d = T.tensor(1.0, dtype=T.float64)
    assert (f32 + f64_0d).dtype == T.float32  # 0-dim tensor of same category does not promote
    assert (f32 + T.tensor([1.0], dtype=T.float64)).dtype == T.float64
    assert (i32 + T.tensor(1)).dtype == T.int32
    assert (i32 + T.tensor(1.0, dtype=T.float64)).dtype == T.float64  # higher category wins
    assert (T.tensor([1.0], dtype=T.float16) + T.tensor(1.0)).dtype == T.float16
    assert (f32 * i64).dtype == T.float32
    assert (T.tensor([1, 2]) / T.tensor([2, 2])).tolist() == [0.5, 1.0]
    assert (T.tensor([1, 2]) / T.tensor([2, 2])).dtype == T.float32


def test_type_promotion_bool(T):
    b = T.tensor([True, False])
    assert (b + b).dtype == T.bool
    r = b + 1
    assert r.dtype == T.int64 and r.tolist() == [2, 1]
    assert (b + 1.5).dtype == T.float32
    assert (b + T.tensor([1, 2], dtype=T.int32)).dtype == T.int32
    assert (b * T.tensor([2.0, 3.0])).tolist() == [2.0, 0.0]


def test_promote_types_and_result_type(T):
    assert T.promote_types(T.int32, T.float16) == T.float16
    assert T.promote_types(T.int64, T.float32) == T.float32
    assert T.promote_types(T.bool, T.int32) == T.int32
    assert T.result_type(T.tensor([1, 2]), 1.0) == T.float32
    assert T.result_type(T.tensor([1.0, 2.0]), T.tensor(1.0, dtype=T.float64)) == T.float32


def test_set_default_dtype(T):
    assert T.get_default_dtype() == T.float32
    T.set_default_dtype(T.float64)
    assert T.get_default_dtype() == T.float64
    assert T.tensor([1.0]).dtype == T.float64
    assert T.tensor([1]).dtype == T.int64
    assert T.zeros(2).dtype == T.float64
    assert T.arange(2.0).dtype == T.float64
    assert T.rand(2).dtype == T.float64
    assert (T.tensor([1, 2]) * 2.5).dtype == T.float64
    assert (T.tensor([1.0, 2.0], dtype=T.float32) + 1.5).dtype == T.float32
    T.set_default_dtype(T.float32)
    assert T.tensor([1.0]).dtype == T.float32


def test_set_default_dtype_rejects_int(T):
    with pytest.raises(
        TypeError, match="only floating-point types are supported as the default type"
    ):
        T.set_default_dtype(T.int64)
    assert T.get_default_dtype() == T.float32


def test_finfo(T):
    f = T.finfo(T.float32)
    assert f.eps == 1.1920928955078125e-07
    assert f.max == 3.4028234663852886e38
    assert f.min == -3.4028234663852886e38
    assert f.tiny == 1.1754943508222875e-38
    assert f.bits == 32
    assert T.finfo().eps == f.eps
    assert T.finfo(T.float64).eps == 2.220446049250313e-16
    assert T.finfo(T.float16).eps == 0.0009765625
    assert T.finfo(T.float16).max == 65504.0
    assert T.finfo(T.float32).dtype == "float32"


def test_finfo_resolution(T):
    assert T.finfo(T.float32).resolution == 1e-06
    assert T.finfo(T.float64).resolution == 1e-15
    assert T.finfo(T.float16).resolution == 0.001


def test_dtype_reprs(T):
    name = lib(T)
    assert repr(T.float32) == "%s.float32" % name
    assert str(T.int64) == "%s.int64" % name
    assert T.float == T.float32 and T.double == T.float64 and T.long == T.int64
    assert T.half == T.float16


# --------------------------------------------------------------------------------------------
# repr


def test_repr_autograd(T):
    name = lib(T)
    x = T.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr((x * 2).sum()) == "tensor(6., grad_fn=<SumBackward0>)"
    assert (
        repr(T.tensor([1.25, 2.5], requires_grad=True).sum())
        == "tensor(3.7500, grad_fn=<SumBackward0>)"
    )
    x64 = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    assert repr(x64) == "tensor([1., 2.], dtype=%s.float64, requires_grad=True)" % name
    assert repr(x64 * 2) == "tensor([2., 4.], dtype=%s.float64, grad_fn=<MulBackward0>)" % name
    m = T.zeros(2, 2, requires_grad=True)
    assert repr(m @ m) == "tensor([[0., 0.],\n        [0., 0.]], grad_fn=<MmBackward0>)"
    assert repr(T.zeros(0, requires_grad=True) * 2) == "tensor([], grad_fn=<MulBackward0>)"
    assert repr(x.detach()) == "tensor([1., 2.])"
    with T.no_grad():
        assert repr(x * 2) == "tensor([2., 4.])"
    assert str(x) == repr(x)


def test_repr_parameter(T):
    import nbgrad.nn  # noqa: F401

    p = T.nn.Parameter(T.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_repr_values(T):
    name = lib(T)
    assert (
        repr(T.tensor([[1, 2], [3, 4]], dtype=T.int32))
        == "tensor([[1, 2],\n        [3, 4]], dtype=%s.int32)" % name
    )
    assert repr(T.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(T.tensor([True, False])) == "tensor([ True, False])"
    assert (
        repr(T.tensor([1.5, 2.25], dtype=T.float64))
        == "tensor([1.5000, 2.2500], dtype=%s.float64)" % name
    )
    assert repr(T.tensor(3)) == "tensor(3)"
    assert repr(T.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(T.tensor([1, 2.5]).half()) == "tensor([1.0000, 2.5000], dtype=%s.float16)" % name
    assert repr(T.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(T.tensor([-1.0, 0.5])) == "tensor([-1.0000,  0.5000])"


REPR_CASES = [
    ([100.0, 2.0], "tensor([100.,   2.])"),
    ([1e-5], "tensor([1.0000e-05])"),
    ([1e9, 1.0], "tensor([1.0000e+09, 1.0000e+00])"),
    ([1e6, 1.0], "tensor([1.0000e+06, 1.0000e+00])"),
    ([0.5, 1000.0], "tensor([5.0000e-01, 1.0000e+03])"),
    ([0.001, 1.0], "tensor([0.0010, 1.0000])"),
    ([12345.678], "tensor([12345.6777])"),
    ([float("nan"), float("inf"), -float("inf"), 1.0], "tensor([nan, inf, -inf, 1.])"),
    ([float("inf"), 1.5], "tensor([   inf, 1.5000])"),
    ([-0.0, 0.0], "tensor([-0., 0.])"),
    ([999.5, 1.0], "tensor([999.5000,   1.0000])"),
    ([3.14159, -2.71828], "tensor([ 3.1416, -2.7183])"),
]


@pytest.mark.parametrize("values,expected", REPR_CASES, ids=[c[1] for c in REPR_CASES])
def test_repr_float_formatting(T, values, expected):
    assert repr(T.tensor(values)) == expected


def test_repr_misc(T):
    name = lib(T)
    assert repr(T.zeros(0, dtype=T.int64)) == "tensor([], dtype=%s.int64)" % name
    assert repr(T.zeros(0, dtype=T.float64)) == "tensor([], dtype=%s.float64)" % name
    assert repr(T.tensor(float("nan"))) == "tensor(nan)"
    assert repr(T.tensor(-1e-7)) == "tensor(-1.0000e-07)"
    assert repr(T.zeros(2, 0, 3)) == "tensor([], size=(2, 0, 3))"
    assert repr(T.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])) == (
        "tensor([[[1., 2.],\n         [3., 4.]],\n\n        [[5., 6.],\n         [7., 8.]]])"
    )
    assert repr(T.tensor([1, -2]) * 1000000) == "tensor([ 1000000, -2000000])"


def test_repr_summarized(T):
    assert repr(T.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert repr(T.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])"
    )


# --------------------------------------------------------------------------------------------
# views: shared storage and version counter


VIEWS = {
    "view": lambda b: b.view(12),
    "view_-1": lambda b: b.view(2, -1),
    "reshape": lambda b: b.reshape(4, 3),
    "transpose": lambda b: b.transpose(0, 1),
    "permute": lambda b: b.permute(1, 0),
    "slice_step": lambda b: b[::2, 1::2],
    "select": lambda b: b[1],
    "squeeze": lambda b: b[None].squeeze(0),
    "squeeze_dim": lambda b: b[:, :1].squeeze(1),
    "unsqueeze": lambda b: b.unsqueeze(1),
    "t": lambda b: b.t(),
    "T": lambda b: b.T,
    "mT": lambda b: b.mT,
    "narrow": lambda b: b.narrow(1, 1, 2),
    "flatten": lambda b: b.flatten(),
    "detach": lambda b: b.detach(),
    "ellipsis": lambda b: b[..., 2],
}


@pytest.mark.parametrize("op", sorted(VIEWS))
def test_view_shares_storage_and_version(T, op):
    base = T.arange(12.0).reshape(3, 4)
    v = VIEWS[op](base)
    expected = VIEWS[op](T.arange(12.0).reshape(3, 4)).tolist()
    assert v.tolist() == expected
    assert v._version == base._version == 0
    # base -> view
    base.add_(1)
    assert v._version == base._version == 1
    assert v.tolist() == VIEWS[op](T.arange(12.0).reshape(3, 4) + 1).tolist()
    # view -> base
    total = base.sum().item()
    v.mul_(0)
    assert v._version == base._version == 2
    assert base.sum().item() == total - (VIEWS[op](T.arange(12.0).reshape(3, 4) + 1)).sum().item()
    # a view created after in-place ops starts at the shared value
    w = VIEWS[op](base)
    assert w._version == 2


def test_expand_shares_storage(T):
    base = T.tensor([1.0, 2.0, 3.0])
    e = base.expand(2, 3)
    assert e.stride() == (0, 1)
    base.add_(1)
    assert e.tolist() == [[2.0, 3.0, 4.0]] * 2
    assert e._version == base._version == 1
    e2 = base.unsqueeze(1).expand(3, 2)
    assert e2.tolist() == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]


def test_reshape_of_non_contiguous_copies(T):
    base = T.arange(6.0).reshape(2, 3)
    r = base.t().reshape(6)
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    base.add_(1)
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert r._version == 0


def test_view_strides(T):
    base = T.zeros(3, 4)
    assert base.stride() == (4, 1) and base.is_contiguous()
    assert base.t().stride() == (1, 4) and not base.t().is_contiguous()
    assert base[::2, 1::2].stride() == (8, 2)
    assert base.unsqueeze(1).shape == (3, 1, 4)
    assert base.permute(1, 0).shape == (4, 3)
    x3 = T.zeros(2, 3, 4)
    assert x3.mT.shape == (2, 4, 3)
    assert x3.flatten(1).shape == (2, 12)


def test_view_of_non_contiguous_error(T):
    with pytest.raises(
        RuntimeError, match="view size is not compatible with input tensor's size and stride"
    ):
        T.zeros(3, 4).t().view(12)


# --------------------------------------------------------------------------------------------
# version counter


def test_version_bumps(T):
    t = T.zeros(3)
    assert t._version == 0
    t.add_(1)
    assert t._version == 1
    t.mul_(2)
    assert t._version == 2
    t[0] = 5.0
    assert t._version == 3
    t.zero_()
    assert t._version == 4
    t.copy_(T.ones(3))
    assert t._version == 5
    t.fill_(2.0)
    assert t._version == 6
    t += 1
    assert t._version == 7
    assert t.tolist() == [3.0, 3.0, 3.0]


def test_version_compound_and_no_bump(T):
    t = T.zeros(3)
    t[0:2] += 1
    assert t._version == 2
    t.add_(1).mul_(2)
    assert t._version == 4
    assert t.tolist() == [4.0, 4.0, 2.0]
    _ = t + 1
    _ = t * 2
    _ = t.exp()
    assert t._version == 4
    t.requires_grad_()
    assert t._version == 4
    t.data.add_(1)
    assert t._version == 4
    assert t.tolist() == [5.0, 5.0, 3.0]
    assert t.clone()._version == 0


def test_data_has_own_counter_detach_shares(T):
    b = T.tensor([1.0, 2.0])
    d = b.data
    d.add_(1)
    assert d._version == 1
    assert b._version == 0
    assert b.tolist() == [2.0, 3.0]
    det = b.detach()
    det.add_(1)
    assert det._version == 1
    assert b._version == 1
    assert b.tolist() == [3.0, 4.0]
    b.mul_(2)
    assert det._version == 2


def test_grad_accumulation_bumps_grad_version(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad._version == 0
    (x * 2).sum().backward()
    assert x.grad._version == 1


def test_inplace_returns_self(T):
    t = T.zeros(2)
    assert t.add_(1) is t
    assert t.mul_(2) is t
    assert t.zero_() is t
    assert t.fill_(3) is t
    assert t.copy_(T.ones(2)) is t
    u = t
    u += 1
    assert u is t


# --------------------------------------------------------------------------------------------
# __getitem__ / __setitem__


def test_getitem_basic(T):
    x = T.arange(12.0).reshape(3, 4)
    assert x[1].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert x[-1].tolist() == [8.0, 9.0, 10.0, 11.0]
    assert x[1, 2].item() == 6.0 and x[1, 2].shape == ()
    assert x[:, ::2].tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
    assert x[::2, 1:3].tolist() == [[1.0, 2.0], [9.0, 10.0]]
    assert x[1:].shape == (2, 4)
    assert x[5:].shape == (0, 4)
    assert x[None].shape == (1, 3, 4)
    assert x[:, None].shape == (3, 1, 4)
    assert x[..., None].shape == (3, 4, 1)
    assert x[..., 1].tolist() == [1.0, 5.0, 9.0]
    assert x[...].shape == (3, 4)
    assert x[0, ..., 0].item() == 0.0
    assert x[-2:, -1].tolist() == [7.0, 11.0]


def test_getitem_advanced(T):
    x = T.arange(12.0).reshape(3, 4)
    assert x[x > 8].tolist() == [9.0, 10.0, 11.0]
    assert x[T.tensor([True, False, True])].tolist() == [
        [0.0, 1.0, 2.0, 3.0],
        [8.0, 9.0, 10.0, 11.0],
    ]
    assert x[T.tensor([2, 0])].tolist() == [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    assert x[[0, 2]].shape == (2, 4)
    assert x[[0, 2], [1, 3]].tolist() == [1.0, 11.0]
    assert x[:, [3, 0]].tolist() == [[3.0, 0.0], [7.0, 4.0], [11.0, 8.0]]
    assert x[T.tensor([[0, 1], [2, 2]])].shape == (2, 2, 4)
    assert x[1, T.tensor([0, -1])].tolist() == [4.0, 7.0]
    # advanced indexing copies
    y = x[[0]]
    x.add_(100)
    assert y.tolist() == [[0.0, 1.0, 2.0, 3.0]]


def test_getitem_zero_dim_int_tensor_acts_like_int(T):
    x = T.arange(12.0).reshape(3, 4)
    r = x[T.tensor(1)]
    assert r.shape == (4,)
    assert r.tolist() == [4.0, 5.0, 6.0, 7.0]
    assert x[T.tensor(1), T.tensor(2)].shape == ()
    assert x[:, T.tensor(0)].shape == (3,)
    assert T.tensor([1, 2, 3])[T.tensor(1)].shape == ()
    assert T.tensor([1, 2, 3])[T.tensor(1)].item() == 2
    x.add_(1)  # like an int, it selects a view
    assert r.tolist() == [5.0, 6.0, 7.0, 8.0]


def test_getitem_errors(T):
    x = T.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="out of bounds"):
        x[-4]
    with pytest.raises(IndexError, match="out of bounds"):
        x[T.tensor([0, 3])]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 1"):
        x[:, 0]


def test_setitem_values(T):
    x = T.zeros(3, 4)
    x[0] = 1.0
    x[1, ::2] = T.tensor([2.0, 3.0])
    x[x == 0] = -1.0
    x[:, 3] = T.tensor([7.0, 8.0, 9.0])
    x[[2], [0]] = 5.0
    assert x.tolist() == [[1.0, 1.0, 1.0, 7.0], [2.0, -1.0, 3.0, 8.0], [5.0, -1.0, -1.0, 9.0]]
    i = T.tensor([1, 2, 3])
    i[0] = 2.7
    assert i.tolist() == [2, 2, 3] and i.dtype == T.int64


def test_setitem_differentiable(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = T.tensor(10.0, requires_grad=True)
    y = x * 1
    y[0] = v
    assert y.tolist() == [10.0, 2.0, 3.0]
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 3.0]
    assert v.grad.tolist() == 1.0


def test_setitem_differentiable_slice_and_mask(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = T.tensor([5.0, 6.0], requires_grad=True)
    y = x * 2
    y[1::2] = w * w
    y[y > 30] = 0.0
    assert y.tolist() == [2.0, 25.0, 6.0, 0.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 2.0, 0.0]
    assert w.grad.tolist() == [10.0, 0.0]


def test_setitem_broadcast_error(T):
    x = T.zeros(3)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
            "dimension 0.  Target sizes: [2].  Tensor sizes: [3]"
        ),
    ):
        x[0:2] = T.ones(3)


# --------------------------------------------------------------------------------------------
# copies and conversions


def test_clone(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    assert c._version == 0
    with T.no_grad():
        c.add_(1)
    assert x.tolist() == [1.0, 2.0]
    c.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    t = T.zeros(3, 4).t()
    assert t.clone().stride() == (1, 4)  # preserve_format keeps dense strides


def test_contiguous(T):
    x = T.zeros(2, 3)
    assert x.contiguous() is x
    t = x.t()
    c = t.contiguous()
    assert c is not t and c.is_contiguous() and c.stride() == (2, 1)
    x.add_(1)
    assert c.tolist() == [[0.0, 0.0]] * 3


def test_dtype_conversions(T):
    x = T.tensor([1.5, -2.5])
    assert x.float() is x
    assert x.to(T.float32) is x
    assert x.to("cpu") is x
    assert x.cpu() is x
    d = x.double()
    assert d.dtype == T.float64 and d.tolist() == [1.5, -2.5]
    h = x.half()
    assert h.dtype == T.float16 and h.tolist() == [1.5, -2.5]
    assert x.to(T.int64).tolist() == [1, -2]
    assert x.to(dtype=T.float64).dtype == T.float64
    assert x.to(T.float64, copy=True).dtype == T.float64
    assert x.to(T.float32, copy=True) is not x
    assert x.type_as(T.tensor([1])).dtype == T.int64
    y = T.tensor([1.0, 2.0], requires_grad=True)
    yd = y.double()
    assert yd.grad_fn.name() == "ToCopyBackward0"
    yd.sum().backward()
    assert y.grad.dtype == T.float32 and y.grad.tolist() == [1.0, 1.0]


def test_item_tolist(T):
    assert T.tensor(2.5).item() == 2.5
    assert type(T.tensor(2.5).item()) is float
    assert type(T.tensor(2).item()) is int
    assert T.tensor(True).item() is True
    assert T.tensor([[3]]).item() == 3
    assert T.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert T.tensor(1.5).tolist() == 1.5
    assert type(T.tensor([1.0]).tolist()[0]) is float
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        T.tensor([1.0, 2.0]).item()


def test_numpy(T):
    x = T.tensor([1.0, 2.0])
    a = x.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    a[0] = 7.0
    assert x.tolist() == [7.0, 2.0]  # shares memory
    assert T.tensor([1, 2]).numpy().dtype == np.int64
    r = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        ),
    ):
        r.numpy()
    assert r.detach().numpy().tolist() == [1.0, 2.0]
    assert T.zeros(3, 4).t().numpy().shape == (4, 3)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_array_protocol(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.shape == (2, 2)
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.array(x, dtype=np.float64).dtype == np.float64
    assert np.sum(np.asarray(T.tensor([1, 2, 3]))) == 6


def test_python_protocols(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and rows[1].tolist() == [3.0, 4.0]
    assert [r.item() for r in T.tensor([1, 2])] == [1, 2]
    assert bool(T.tensor([1.0])) is True
    assert bool(T.tensor(0.0)) is False
    assert float(T.tensor([3])) == 3.0
    assert int(T.tensor([-2.7])) == -2
    assert int(T.tensor(5)) == 5


def test_python_protocol_errors(T):
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(T.tensor(1.0))
    with pytest.raises(
        RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"
    ):
        bool(T.tensor([1.0, 2.0]))
    with pytest.raises(
        ValueError, match="only one element tensors can be converted to Python scalars"
    ):
        float(T.tensor([1.0, 2.0]))
    with pytest.raises(
        ValueError, match="only one element tensors can be converted to Python scalars"
    ):
        int(T.tensor([1, 2]))


def test_size_dim_numel(T):
    x = T.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert isinstance(x.shape, tuple)
    assert x.dim() == x.ndim == 3
    assert x.numel() == 24
    assert x.shape == T.Size([2, 3, 4])


# --------------------------------------------------------------------------------------------
# bad input


def test_broadcast_mismatch_error(T):
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
            "dimension 0"
        ),
    ):
        T.ones(2) + T.ones(3)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
            "dimension 1"
        ),
    ):
        T.ones(2, 3) * T.ones(2)
    with pytest.raises(RuntimeError, match="must match the size"):
        T.ones(2).add_(T.ones(3))


def test_requires_grad_on_int_tensor_error(T):
    with pytest.raises(
        RuntimeError, match="only Tensors of floating point dtype can require gradients"
    ):
        T.tensor([1, 2]).requires_grad_()
    with pytest.raises(
        RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"
    ):
        T.tensor([1, 2], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"
    ):
        T.zeros(2, dtype=T.int64, requires_grad=True)
    t = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        t.requires_grad = True
    t.requires_grad_(False)  # allowed
    assert not t.requires_grad


def test_requires_grad_false_on_non_leaf_error(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "you can only change requires_grad flags of leaf variables. If you want to use a "
            "computed "
            "variable in a subgraph that doesn't require differentiation use var_no_grad = "
            "var.detach()."
        ),
    ):
        (x * 2).requires_grad_(False)


def test_inplace_on_leaf_requiring_grad_error(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    msg = re.escape("a leaf Variable that requires grad is being used in an in-place operation.")
    with pytest.raises(RuntimeError, match=msg):
        x.add_(1)
    with pytest.raises(RuntimeError, match=msg):
        x.zero_()
    with pytest.raises(RuntimeError, match=msg):
        x += 1
    view_msg = re.escape(
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    )
    with pytest.raises(RuntimeError, match=view_msg):
        x[0] = 5.0
    with pytest.raises(RuntimeError, match=view_msg):
        x[0:1].add_(1)
    assert x.tolist() == [1.0, 2.0] and x._version == 0
    with T.no_grad():
        x.add_(1)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert x.tolist() == [2.0, 3.0] and x._version == 1
