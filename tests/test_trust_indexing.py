"""Issue 10 (trust), indexing: saved index tensors are version-checked and re-validated in
backward, bad indices raise PyTorch's exception (never wrap, never touch memory), an integer
index gives a 0-d view, a second backward through index ops raises, and ``nbgrad.load`` never
allocates more than the stream holds.  Expected types and messages were taken from PyTorch
2.13; the torch-marked tests re-check them against the installed oracle."""

import io
import json
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad as T
from nbgrad import serialization as ser

F = T.nn.functional

MODIFIED = "modified by an inplace operation"
TWICE = "Trying to backward through the graph a second time"


def _raises(exc, phrase, fn):
    with pytest.raises(exc) as ei:
        fn()
    assert phrase in str(ei.value), str(ei.value)


# ---------------------------------------------------------------------------------------------
# 1. saved index tensors: version-checked, and what backward reads


def _embedding(lib, idx):
    W = lib.ones(5, 3, requires_grad=True)
    return lib.nn.functional.embedding(idx, W), W


def _nll(lib, t):
    x = lib.zeros(3, 4, requires_grad=True)
    return lib.nn.functional.nll_loss(x, t), x


def _ce(lib, t):
    x = lib.zeros(3, 4, requires_grad=True)
    return lib.nn.functional.cross_entropy(x, t), x


def _ce2d(lib, t):
    x = lib.zeros(3, 4, 1, requires_grad=True)
    return lib.nn.functional.cross_entropy(x, t.reshape(3, 1)), x


def _gather(lib, i):
    x = lib.zeros(3, 4, requires_grad=True)
    return x.gather(1, i.reshape(3, 1)), x


def _getitem(lib, i):
    x = lib.zeros(4, requires_grad=True)
    return x[i], x


def _index_select(lib, i):
    x = lib.zeros(4, requires_grad=True)
    return x.index_select(0, i), x


def _scatter(lib, i):
    x = lib.zeros(4, requires_grad=True)
    s = lib.ones(3, requires_grad=True)
    return x.scatter(0, i, s), x


def _scatter_add(lib, i):
    x = lib.zeros(4, requires_grad=True)
    s = lib.ones(3, requires_grad=True)
    return x.scatter_add(0, i, s), s


def _setitem(lib, i):
    x = lib.zeros(4, requires_grad=True)
    y = x * 1
    y[i] = lib.ones(3, requires_grad=True)
    return y, x


SAVERS = {
    "embedding": _embedding,
    "nll_loss": _nll,
    "cross_entropy": _ce,
    "cross_entropy_2d": _ce2d,
    "gather": _gather,
    "getitem": _getitem,
    "index_select": _index_select,
    "scatter": _scatter,
    "scatter_add": _scatter_add,
    "setitem": _setitem,
}


def _weights(lib, y):
    return (y * lib.arange(1.0, y.numel() + 1).reshape(y.shape)).sum()


@pytest.mark.parametrize("name", sorted(SAVERS))
def test_an_index_modified_in_place_after_the_forward_fails_backward(name):
    i = T.tensor([0, 1, 2])
    y, x = SAVERS[name](T, i)
    i[0] = 3
    _raises(RuntimeError, MODIFIED, lambda: _weights(T, y).backward())


@pytest.mark.parametrize("name", sorted(SAVERS))
def test_an_index_changed_through_data_is_read_by_backward(name):
    """.data bumps no version: backward uses the new (valid) values, as PyTorch does."""
    i = T.tensor([0, 1, 2])
    y, x = SAVERS[name](T, i)
    i.data[0] = 3
    _weights(T, y).backward()
    j = T.tensor([3, 1, 2])
    y2, x2 = SAVERS[name](T, j)
    _weights(T, y2).backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("name", sorted(SAVERS))
def test_saved_index_semantics_match_torch(name):
    for mode in ("inplace", "data"):
        got = []
        for lib in (T, torch):
            i = lib.tensor([0, 1, 2])
            y, x = SAVERS[name](lib, i)
            if mode == "inplace":
                i[0] = 1
            else:
                i.data[0] = 3
            try:
                _weights(lib, y).backward()
                got.append(("ok", np.asarray(x.grad.detach().numpy(), np.float64)))
            except Exception as e:  # noqa: BLE001 - the type is what is compared
                got.append((type(e).__name__, MODIFIED in str(e)))
        assert got[0][0] == got[1][0], (mode, got)
        if got[0][0] == "ok":
            np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-6, atol=1e-7)
        else:
            assert got[0][1] == got[1][1]


# out-of-range values written through .data: backward raises (PyTorch's type), never crashes
DATA_BAD = [
    ("embedding", IndexError, "index out of range in self"),
    ("nll_loss", IndexError, "Target 1000000000 is out of bounds."),
    ("cross_entropy", IndexError, "Target 1000000000 is out of bounds."),
    ("cross_entropy_2d", IndexError, "Target 1000000000 is out of bounds."),
    ("gather", RuntimeError, "index 1000000000 is out of bounds for dimension 1 with size 4"),
    ("getitem", IndexError, "index 1000000000 is out of bounds for dimension 0 with size 4"),
    ("index_select", IndexError, "index out of range in self"),
    ("scatter", RuntimeError, "index 1000000000 is out of bounds for dimension 0 with size 4"),
    ("scatter_add", RuntimeError, "index 1000000000 is out of bounds for dimension 0 with size 4"),
    ("setitem", IndexError, "index 1000000000 is out of bounds for dimension 0 with size 4"),
]


@pytest.mark.parametrize("name,exc,phrase", DATA_BAD, ids=[d[0] for d in DATA_BAD])
@pytest.mark.parametrize("graph", [False, True], ids=["plain", "create_graph"])
def test_an_out_of_range_index_written_through_data_raises_in_backward(name, exc, phrase, graph):
    i = T.tensor([0, 1, 2])
    y, x = SAVERS[name](T, i)
    i.data[0] = 10**9
    _raises(exc, phrase, lambda: T.autograd.grad(_weights(T, y), x, create_graph=graph))


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 0}, {"scale_grad_by_freq": True}])
@pytest.mark.parametrize("bad", [-1, 5, -(2**63)])
def test_embedding_backward_validates_every_variant(kw, bad):
    W = T.ones(5, 2, requires_grad=True)
    i = T.tensor([0, 1])
    y = F.embedding(i, W, **kw)
    i.data[1] = bad
    _raises(IndexError, "index out of range in self", lambda: y.sum().backward())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("extra", [{}, {"weight": T.ones(4)}, {"ignore_index": 1}])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_loss_backward_validates_targets(reduction, extra, fn):
    x = T.zeros(3, 4, requires_grad=True)
    t = T.tensor([0, 1, 2])
    loss = getattr(F, fn)(x, t, reduction=reduction, **extra).sum()
    t.data[0] = -5
    _raises(IndexError, "Target -5 is out of bounds.", loss.backward)


def test_loss_backward_reads_an_ignore_index_written_through_data():
    x = T.zeros(3, 4, requires_grad=True)
    t = T.tensor([0, 1, 2])
    loss = F.nll_loss(x, t, reduction="sum")
    t.data[0] = -100
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0, 0], [0, -1, 0, 0], [0, 0, -1, 0]])


def test_max_pool_indices_modified_after_the_forward_never_crash():
    x = T.randn(1, 1, 4, 4, requires_grad=True)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    i.data[0, 0, 0, 0] = 10**9
    with pytest.raises(RuntimeError):
        y.sum().backward()


def test_boolean_and_byte_masks_are_saved_too():
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x[m]
    m[1] = True
    _raises(RuntimeError, MODIFIED, lambda: y.sum().backward())
    # moved through .data (same count): backward uses the new positions, like PyTorch
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x[m]
    m.data[0], m.data[1] = False, True
    (y * T.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 2, 0])
    # more elements selected now: PyTorch's index_put shape error
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x[m]
    m.data[1] = True
    _raises(
        RuntimeError,
        "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of "
        "shape [3]",
        lambda: y.sum().backward(),
    )


def test_masked_select_saves_its_mask():
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x.masked_select(m)
    m[1] = True
    _raises(RuntimeError, MODIFIED, lambda: y.sum().backward())
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x.masked_select(m)
    m.data[0] = False  # fewer ones: masked_scatter takes the first gradients
    (y * T.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 0])
    x = T.zeros(4, requires_grad=True)
    m = T.tensor([True, False, True, False])
    y = x.masked_select(m)
    m.data[1] = True
    _raises(
        RuntimeError,
        "Number of elements of source < number of ones in mask",
        lambda: y.sum().backward(),
    )


def test_numpy_array_indices_are_copied_at_the_forward():
    x = T.zeros(4, requires_grad=True)
    a = np.array([True, False, True, False])
    b = np.array([0, 1])
    y = x[a] + x[b]
    a[1] = True
    b[0] = 3
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 1, 1, 0])


# ---------------------------------------------------------------------------------------------
# 2. a second backward through an index op raises (its saved indices are freed), as in PyTorch


def _twice(make):
    x = T.randn(4, 3, requires_grad=True)
    y = make(x)
    y.sum().backward()
    y.sum().backward()


def _set(idx, value=1.0):
    def make(x):
        y = x.clone()  # CloneBackward0 saves nothing: the second backward meets CopySlices
        y[idx] = value
        return y

    return make


I2 = T.tensor([0, 1])
TWICE_RAISES = {
    "getitem_tensor": lambda x: x[I2],
    "getitem_list": lambda x: x[[0, 1]],
    "getitem_bool": lambda x: x[T.tensor([True, False, True, False])],
    "gather": lambda x: x.gather(1, T.tensor([[0], [1], [2], [0]])),
    "index_select": lambda x: x.index_select(0, I2),
    "scatter": lambda x: x.scatter(0, T.tensor([[0, 1, 2]]), T.ones(1, 3)),
    "scatter_value": lambda x: x.scatter(0, T.tensor([[0, 1, 2]]), 2.0),
    "masked_select": lambda x: x.masked_select(x > 0),
    "setitem_tensor": _set(I2),
    "setitem_tensor_value": _set(I2, T.ones(3)),
    "setitem_list": _set([0, 1]),
    "setitem_bool": _set(T.tensor([True, False, True, False])),
    "setitem_slice": _set(slice(0, 2)),
    "setitem_int": _set(0),
    "setitem_int_tensor": _set(T.tensor(0)),
    "embedding": lambda x: F.embedding(I2, x),
    "nll_loss": lambda x: F.nll_loss(x, T.tensor([0, 1, 2, 0])),
}
TWICE_OK = {
    "getitem_slice": lambda x: x[1:3],
    "getitem_int": lambda x: x[1],
    "scatter_add_no_grad_src": lambda x: x.scatter_add(0, T.tensor([[0, 1, 2]]), T.ones(1, 3)),
}


@pytest.mark.parametrize("name", sorted(TWICE_RAISES))
def test_a_second_backward_through_an_index_op_raises(name):
    _raises(RuntimeError, TWICE, lambda: _twice(TWICE_RAISES[name]))


@pytest.mark.parametrize("name", sorted(TWICE_OK))
def test_a_second_backward_through_a_view_or_unsaved_index_works(name):
    _twice(TWICE_OK[name])


# ---------------------------------------------------------------------------------------------
# 3. bounds, wrapping and dtypes of gather / scatter / index_select / getitem


X23 = T.arange(6.0).reshape(2, 3)
BOUNDS = [
    ("gather_neg", lambda: X23.gather(1, T.tensor([[-1], [0]])), RuntimeError,
     "index -1 is out of bounds for dimension 1 with size 3"),
    ("gather_oob", lambda: X23.gather(1, T.tensor([[3], [0]])), RuntimeError,
     "index 3 is out of bounds for dimension 1 with size 3"),
    ("gather_oob_dim0", lambda: X23.gather(0, T.tensor([[2, 0]])), RuntimeError,
     "index 2 is out of bounds for dimension 0 with size 2"),
    ("gather_huge_neg", lambda: T.arange(4.0).gather(0, T.tensor([-(2**63)])), RuntimeError,
     "index -9223372036854775808 is out of bounds for dimension 0 with size 4"),
    ("gather_0d_input", lambda: T.tensor(5.0).gather(0, T.tensor([1])), RuntimeError,
     "index 1 is out of bounds for dimension 0 with size 1"),
    ("gather_0d_input_neg", lambda: T.tensor(5.0).gather(0, T.tensor([-1])), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 1"),
    ("gather_0d_index", lambda: T.arange(3.0).gather(0, T.tensor(3)), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("gather_float", lambda: X23.gather(1, T.tensor([[1.0], [0.0]])), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    ("gather_uint8", lambda: X23.gather(1, T.tensor([[1], [0]], dtype=T.uint8)), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    ("scatter_neg", lambda: T.zeros(3).scatter(0, T.tensor([-1]), T.ones(1)), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    ("scatter_oob", lambda: T.zeros(3).scatter(0, T.tensor([3]), T.ones(1)), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_value_oob", lambda: T.zeros(3).scatter(0, T.tensor([3]), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter__oob", lambda: T.zeros(3).scatter_(0, T.tensor([3]), T.ones(1)), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_add_neg", lambda: T.zeros(3).scatter_add(0, T.tensor([-1]), T.ones(1)),
     RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    ("scatter_add_oob", lambda: T.zeros(3).scatter_add(0, T.tensor([5]), T.ones(1)),
     RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("scatter_0d_bad", lambda: T.tensor(0.0).scatter(0, T.tensor([1]), T.tensor([3.0])),
     RuntimeError, "index 1 is out of bounds for dimension 0 with size 1"),
    ("scatter_float", lambda: T.zeros(3).scatter(0, T.tensor([1.0]), 1.0), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ("gather_index_too_big", lambda: T.zeros(3, 2).gather(0, T.tensor([[0, 1, 0]])),
     RuntimeError, "Size does not match at dimension 1 expected index [1, 3] to be no larger "
     "than self [3, 2] apart from dimension 0"),
    ("scatter_index_too_big",
     lambda: T.zeros(3, 2).scatter(0, T.tensor([[0, 1, 1]]), T.ones(3, 3)), RuntimeError,
     "Expected index [1, 3] to be no larger than self [3, 2] apart from dimension 0 and to be "
     "no larger size than src [3, 3]"),
    ("scatter_value_index_too_big", lambda: T.zeros(3, 2).scatter(0, T.tensor([[0, 1, 0]]), 1.0),
     RuntimeError,
     "Expected index [1, 3] to be no larger than self [3, 2] apart from dimension 0"),
    ("scatter_src_dims", lambda: T.zeros(3).scatter(0, T.tensor([0]), T.ones(2, 2)),
     RuntimeError, "Index tensor must have the same number of dimensions as src tensor"),
    ("scatter_self_dims", lambda: T.zeros(3).scatter(0, T.tensor([[0]]), T.ones(2)),
     RuntimeError, "Index tensor must have the same number of dimensions as self tensor"),
    ("isel_scalar_two_indices", lambda: T.tensor(3.0).index_select(0, T.tensor([0, 0])),
     RuntimeError, "index_select(): Index to scalar can have only 1 value, got 2 value(s)"),
    ("isel_neg_dim1", lambda: X23.index_select(1, T.tensor([-1])), RuntimeError,
     "INDICES element is out of DATA bounds, id=-1 axis_dim=3"),
    ("isel_oob_dim1", lambda: X23.index_select(1, T.tensor([3])), RuntimeError,
     "INDICES element is out of DATA bounds, id=3 axis_dim=3"),
    ("isel_neg_dim0", lambda: X23.index_select(0, T.tensor([-1])), IndexError,
     "index out of range in self"),
    ("isel_oob_dim0", lambda: X23.index_select(0, T.tensor([2])), IndexError,
     "index out of range in self"),
    ("isel_huge", lambda: X23.index_select(0, T.tensor([10**12])), IndexError,
     "index out of range in self"),
    ("isel_oob_dim2", lambda: T.zeros(2, 3, 4).index_select(2, T.tensor([4])), IndexError,
     "index out of range in self"),
    ("isel_0d_input", lambda: T.tensor(3.0).index_select(0, T.tensor([1])), IndexError,
     "index out of range in self"),
    ("isel_uint8", lambda: X23.index_select(1, T.tensor([1], dtype=T.uint8)), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    ("isel_int16", lambda: X23.index_select(1, T.tensor([1], dtype=T.int16)), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    ("isel_float", lambda: X23.index_select(1, T.tensor([1.0])), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    ("getitem_oob_at_size", lambda: X23[T.tensor([2])], IndexError,
     "index 2 is out of bounds for dimension 0 with size 2"),
    ("getitem_neg_oob", lambda: X23[T.tensor([-3])], IndexError,
     "index -3 is out of bounds for dimension 0 with size 2"),
    ("getitem_huge", lambda: X23[T.tensor([2**63 - 1])], IndexError,
     "index 9223372036854775807 is out of bounds for dimension 0 with size 2"),
    ("getitem_list_at_size", lambda: X23[[2]], IndexError,
     "index 2 is out of bounds for dimension 0 with size 2"),
    ("getitem_int8", lambda: X23[T.tensor([1], dtype=T.int8)], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("getitem_int16", lambda: X23[T.tensor([1], dtype=T.int16)], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("getitem_uint8_mask_shape", lambda: X23[T.tensor([1, 0, 1], dtype=T.uint8)], IndexError,
     "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3]"),
    ("getitem_broadcast", lambda: T.zeros(3, 3)[T.tensor([0, 1]), T.tensor([0, 1, 2])],
     IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("setitem_oob", lambda: T.zeros(3).__setitem__(T.tensor([0, 3]), T.ones(2)), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("setitem_shape", lambda: T.zeros(3).__setitem__(T.tensor([0, 1]), T.ones(3)), RuntimeError,
     "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of "
     "shape [2]"),
    ("emb_maxnorm_oob", lambda: F.embedding(T.tensor([5]), T.ones(3, 2), max_norm=1.0),
     IndexError, "select(): index 5 out of range for tensor of size [3, 2] at dimension 0"),
    ("emb_maxnorm_neg", lambda: F.embedding(T.tensor([-1]), T.ones(3, 2), max_norm=1.0),
     IndexError, "index out of range in self"),
    ("one_hot_huge", lambda: F.one_hot(T.tensor([0]), 2**62), RuntimeError,
     "Storage size calculation overflowed with sizes=[1, 4611686018427387904]"),
    ("masked_select_shape", lambda: T.zeros(3).masked_select(T.tensor([True, False])),
     RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    # PyTorch's scatter_gather_dtype_check: after wrapping dim, before any shape check; src
    # must have self's dtype (it was cast), and scatter_add's messages say "scatter()"
    ("scatter_src_dtype", lambda: T.zeros(3).scatter(0, T.tensor([2]), T.ones(1, dtype=T.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter__src_dtype",
     lambda: T.zeros(3).scatter_(0, T.tensor([2]), T.ones(1, dtype=T.float64, requires_grad=True)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_0d_src_dtype",
     lambda: T.zeros(3).scatter(0, T.tensor([2]), T.tensor(1, dtype=T.int64)), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_empty_index_src_dtype",
     lambda: T.zeros(3).scatter(0, T.zeros(0, dtype=T.int64), T.ones(0, dtype=T.float64)),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_src_dtype_before_shapes",
     lambda: T.zeros(3).scatter(0, T.tensor([[7]]), T.ones(1, dtype=T.float64)), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_add_src_dtype",
     lambda: T.zeros(3).scatter_add(0, T.tensor([2]), T.ones(1, dtype=T.float64)), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_add_index_dtype",
     lambda: T.zeros(3).scatter_add(0, T.tensor([1], dtype=T.int16), T.ones(1)), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ("scatter_dim_before_index_dtype",
     lambda: T.zeros(3).scatter(1, T.tensor([1], dtype=T.int16), T.ones(1)), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("gather_dim_before_index_dtype",
     lambda: T.zeros(3).gather(3, T.tensor([1], dtype=T.int16)), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 3)"),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")
@pytest.mark.parametrize("fn,exc,phrase", [b[1:] for b in BOUNDS], ids=[b[0] for b in BOUNDS])
def test_bad_indices_raise_pytorchs_error(fn, exc, phrase):
    _raises(exc, phrase, fn)


@needs_torch
@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")
def test_bad_index_errors_match_torch():
    import types

    g = dict(globals(), T=torch, F=torch.nn.functional, X23=torch.arange(6.0).reshape(2, 3))
    for name, fn, exc, phrase in BOUNDS:
        tfn = types.FunctionType(fn.__code__, g)
        with pytest.raises(exc) as ei:
            tfn()
        assert phrase in str(ei.value), (name, str(ei.value))


def _empty_index_ops(L):
    x = L.arange(6.0).reshape(3, 2).requires_grad_()
    src = L.ones(1, requires_grad=True)
    return (
        {
            "gather_rank1": lambda i: x.gather(0, i),
            "gather_dim1": lambda i: x.gather(1, i),
            "scatter_src": lambda i: x.scatter(0, i, src),
            "scatter_value": lambda i: x.scatter(1, i, 2.0),
            "scatter_add": lambda i: x.scatter_add(0, i, src),
        },
        x,
        src,
    )


EMPTY_INDICES = [
    ("0", (0,), "int64"),
    ("0x5", (0, 5), "int64"),
    ("5x0", (5, 0), "int64"),
    ("2x0x4", (2, 0, 4), "int64"),
    ("float_0x1x1", (0, 1, 1), "float32"),
    ("int16_0", (0,), "int16"),
]


def _empty_index_run(L, name, shape, dtype):
    ops, x, src = _empty_index_ops(L)
    i = L.zeros(shape, dtype=getattr(L, dtype))
    y = ops[name](i)
    y.sum().backward()
    return (
        tuple(y.shape),
        y.stride(),
        y.detach().tolist(),
        x.grad.tolist(),
        None if src.grad is None else src.grad.tolist(),
    )


EMPTY_INDEX_EXPECTED = {  # PyTorch 2.13: the gradients of an empty index read nothing
    "gather": lambda shape: (
        shape,
        tuple(int(np.prod([max(n, 1) for n in shape[k + 1 :]])) for k in range(len(shape))),
        np.zeros(shape).tolist(),
        [[0.0, 0.0]] * 3,
        None,
    ),
    "scatter": lambda shape: (
        (3, 2),
        (2, 1),
        [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
        [[1.0, 1.0]] * 3,
        [0.0],
    ),
}


@pytest.mark.parametrize("sid,shape,dtype", EMPTY_INDICES, ids=[e[0] for e in EMPTY_INDICES])
@pytest.mark.parametrize("name", sorted(_empty_index_ops(T)[0]))
def test_an_empty_index_of_any_rank_or_dtype_reads_and_writes_nothing(name, sid, shape, dtype):
    """PyTorch checks neither the rank, the sizes nor the dtype of an empty index (nbgrad
    raised 'Index tensor must have the same number of dimensions'): gather gives an empty
    result of the index's shape (contiguous strides), scatter a copy of self, and the
    backward sends nothing through the index."""
    got = _empty_index_run(T, name, shape, dtype)
    want = EMPTY_INDEX_EXPECTED[name.split("_")[0]](shape)
    if name == "scatter_value":
        want = want[:4] + (None,)
    assert got == want
    if torch is not None:
        assert _empty_index_run(torch, name, shape, dtype) == want


def test_gather_scatter_index_select_with_zero_dim_tensors():
    x = T.arange(3.0, requires_grad=True)
    y = x.gather(0, T.tensor(1))
    assert y.shape == () and y.item() == 1.0
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 0])
    s = T.tensor(5.0, requires_grad=True)
    y = s.gather(0, T.tensor([0, 0]))
    assert y.shape == (2,)
    np.testing.assert_array_equal(y.detach().numpy(), [5, 5])
    y.sum().backward()
    assert s.grad.item() == 2.0
    assert T.tensor(5.0).gather(-1, T.tensor(0)).item() == 5.0
    assert T.tensor(0.0).scatter(0, T.tensor(0), T.tensor(3.0)).item() == 3.0
    assert T.tensor(0.0).scatter(0, T.tensor([0]), T.tensor([3.0])).item() == 3.0
    np.testing.assert_array_equal(
        T.zeros(3).scatter(0, T.tensor(1), T.tensor(3.0)).numpy(), [0, 3, 0]
    )
    y = T.tensor(3.0).index_select(0, T.tensor([0]))
    assert y.shape == () and y.item() == 3.0
    np.testing.assert_array_equal(X23.index_select(1, T.tensor(1)).numpy(), [[1], [4]])


def test_negative_indices_wrap_where_pytorch_wraps():
    x = T.arange(4.0, requires_grad=True)
    y = x[T.tensor([-1, 0])]
    np.testing.assert_array_equal(y.detach().numpy(), [3, 0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0, 1])
    # a negative written through .data after the forward: advanced indexing wraps it
    x = T.arange(4.0, requires_grad=True)
    i = T.tensor([0, 1])
    y = x[i]
    i.data[1] = -1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0, 1])


def test_byte_tensor_indices_are_masks():
    x = T.arange(4.0)
    with pytest.warns(UserWarning, match="uint8"):
        y = x[T.tensor([1, 0, 1, 0], dtype=T.uint8)]
    np.testing.assert_array_equal(y.numpy(), [0, 2])


@needs_torch
def test_index_dtype_handling_matches_torch():
    import warnings

    for dt in ("int32", "int64", "uint8", "bool"):
        a = np.array([1, 0, 1, 0])
        outs = []
        for lib in (T, torch):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs.append(lib.arange(4.0)[lib.tensor(a, dtype=getattr(lib, dt))].numpy())
        np.testing.assert_array_equal(outs[0], outs[1])


# ---------------------------------------------------------------------------------------------
# 4. an integer index is a 0-d view (in-place through it writes the base)


def test_in_place_on_an_integer_indexed_element():
    t = T.zeros(3)
    t[0] += 1
    np.testing.assert_array_equal(t.numpy(), [1, 0, 0])
    t = T.ones(3)
    t[0].zero_()
    np.testing.assert_array_equal(t.numpy(), [0, 1, 1])
    assert t._version == 1
    t = T.zeros(2, 3)
    v = t[1, 2]
    v.add_(5)
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 0], [0, 0, 5]])
    assert v._base is t and v.shape == () and v.stride() == ()
    assert v._version == t._version == 1
    t = T.zeros(3)
    u = t[1]
    t[1] = 7
    assert u.item() == 7.0
    x = T.arange(6.0).reshape(2, 3)
    assert x[1, 2].storage_offset() == 5
    x = T.zeros(2, 2)
    r = x[0, 0]
    x.add_(1)
    assert r.item() == 1.0 and r._version == 1


def test_in_place_through_an_integer_index_is_differentiable():
    x = T.ones(3, requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    np.testing.assert_array_equal(y.detach().numpy(), [2, 1, 1])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 1, 1])
    x = T.ones(2, 3, requires_grad=True)
    y = x * 2
    z = y[1, 2]
    z.mul_(3)
    assert z.grad_fn.name() == "AsStridedBackward0"
    (y * T.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 4], [6, 8, 30]])


# ---------------------------------------------------------------------------------------------
# 5. load: lengths and shapes are checked against the stream before anything is allocated


def _forge(doc, tensors=b"", hlen=None, dlen=None):
    header = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    hl = len(header) if hlen is None else hlen
    dl = len(tensors) if dlen is None else dlen
    data_start = (48 + len(header) + 63) // 64 * 64
    pre = bytearray(
        struct.pack(
            "<8sIIQQIII4x", ser.MAGIC, 1, 0, hl, dl, zlib.crc32(header), zlib.crc32(tensors), 0
        )
    )
    struct.pack_into("<I", pre, 40, zlib.crc32(bytes(pre[:40])))
    return bytes(pre) + header + bytes(data_start - 48 - len(header)) + tensors


class _Pipe(io.RawIOBase):
    """A non-seekable stream (a pipe or socket): its size cannot be known in advance."""

    def __init__(self, raw):
        self._b = io.BytesIO(raw)

    def readable(self):
        return True

    def readinto(self, b):
        return self._b.readinto(b)


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("stream", [io.BytesIO, _Pipe])
@pytest.mark.parametrize("field", ["hlen", "dlen"])
def test_load_never_allocates_what_the_stream_does_not_hold(stream, field):
    doc = {"format": "nbgrad", "version": 1, "root": {"type": "none"}, "tensors": []}
    raw = _forge(doc, **{field: 2**31 if field == "hlen" else 2**40})
    assert len(raw) < 400

    def load():
        with pytest.raises(RuntimeError, match="truncated"):
            ser.load(stream(raw))

    assert _peak_bytes(load) < 32 * 2**20


def test_load_of_a_non_seekable_stream_round_trips():
    buf = io.BytesIO()
    obj = {"w": T.arange(10000.0), "b": [T.ones(3, dtype=T.int64), 2.5]}
    ser.save(obj, buf)
    got = ser.load(_Pipe(buf.getvalue()))
    np.testing.assert_array_equal(got["w"].numpy(), obj["w"].numpy())
    np.testing.assert_array_equal(got["b"][0].numpy(), [1, 1, 1])
    raw = buf.getvalue()
    for cut in (60, len(raw) // 2, len(raw) - 1):
        with pytest.raises(RuntimeError, match="truncated"):
            ser.load(_Pipe(raw[:cut]))


def test_load_reads_only_its_own_object_from_a_longer_stream():
    buf = io.BytesIO()
    ser.save(T.ones(3), buf)
    ser.save(T.zeros(2), buf)
    buf.seek(0)
    assert ser.load(buf).shape == (3,)
    assert ser.load(buf).shape == (2,)


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "float32", "shape": [0] * 100, "offset": 0, "nbytes": 0},  # > 64 dims
        {"dtype": "float32", "shape": [2**70, 0], "offset": 0, "nbytes": 0},  # dim overflows
        {"dtype": "float32", "shape": [2**62, 2**62, 0], "offset": 0, "nbytes": 0},
        {"dtype": "float32", "shape": [1], "offset": 2**70, "nbytes": 4},
        {"dtype": "float32", "shape": [True], "offset": 0, "nbytes": 4},
    ],
)
def test_forged_shapes_are_refused_as_corrupted(entry):
    raw = _forge({"format": "nbgrad", "version": 1, "root": {"type": "tensor", "index": 0},
                  "tensors": [entry]}, bytes(16))  # fmt: skip
    with pytest.raises(RuntimeError, match="is corrupted"):
        ser.load(io.BytesIO(raw))


@pytest.mark.parametrize(
    "node",
    [
        {"type": "float", "value": "0x1p99999"},
        {"type": "complex", "real": "0x1p99999", "imag": "0x0p0"},
        {"type": "device", "value": "cuda:-1"},
        {"type": "device", "value": 5},
    ],
)
def test_forged_values_are_refused_as_corrupted(node):
    raw = _forge({"format": "nbgrad", "version": 1, "root": node, "tensors": []})
    with pytest.raises(RuntimeError, match="is corrupted"):
        ser.load(io.BytesIO(raw))


def test_max_pool_indices_modified_in_place_is_a_version_error():
    x = T.randn(1, 1, 4, 4, requires_grad=True)
    y, idx = T.nn.functional.max_pool2d(x, 2, return_indices=True)
    idx.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.fixture(params=["nbgrad", pytest.param("torch", marks=needs_torch)])
def lib(request):
    return T if request.param == "nbgrad" else torch


def test_masked_select_saves_its_input_version_checked(lib):
    """PyTorch's masked_select_backward reads ``self``: an in-place change of the input after
    the forward is a version error at backward."""
    T = lib
    x0 = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    x = x0 * 1
    y = T.masked_select(x, T.tensor([True, False]))
    x.scatter_(0, T.tensor([0]), T.tensor([5.0], dtype=T.float64))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_mixed_integer_and_list_index_matches_pytorch_shape(lib):
    x = lib.arange(24.0).reshape(2, 3, 4)
    assert tuple(x[1, [0, 2], :].shape) == (2, 4)
    assert tuple(x[:, 1, [0, 3]].shape) == (2, 2)
    assert tuple(x[[1], :, -1].shape) == (1, 3)
    assert x[0, :, [1, 0]].tolist() == [[1.0, 0.0], [5.0, 4.0], [9.0, 8.0]]


@pytest.mark.parametrize(
    "call",
    [
        lambda T, a: T.add(a[:3], 1, out=a[1:]),
        lambda T, a: T.exp(a[:3], out=a[1:]),
        lambda T, a: T.add(a[:3], a[1:], out=a[:3]),  # the second operand overlaps
        lambda T, a: T.add(a.reshape(2, 2), 1, out=a.reshape(2, 2).t()),  # same memory, permuted
        lambda T, a: T.clamp(a[1:], 0, 1, out=a[:3]),
        lambda T, a: T.cat([a[:2], a[:2]], out=a),
    ],
)
def test_out_partially_overlapping_an_input_raises(lib, call):
    a = lib.arange(4.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        call(lib, a)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda T, a: T.add(a, 1, out=a), [1.0, 2.0, 3.0, 4.0]),  # the same tensor: allowed
        (lambda T, a: T.mul(a[::2], a[1::2], out=a[1::2]), [0.0, 0.0, 2.0, 6.0]),  # not dense
    ],
)
def test_out_aliasing_pytorch_allows(lib, call, want):
    a = lib.arange(4.0)
    call(lib, a)
    assert a.tolist() == want


def test_gather_saves_its_input_version_checked(lib):
    """PyTorch's gather_backward reads ``self``: writing the input in place (through a view)
    after the forward is a version error at backward."""
    T = lib
    x0 = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    x = x0 * 1
    y = x.gather(0, T.tensor([1]))
    x.flatten().div_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_pow_tensor_result_is_version_checked_even_when_unused(lib):
    """PowBackward1 saves its result for the exponent's gradient and PyTorch unpacks it even
    when only the base requires grad."""
    T = lib
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    y = x ** T.tensor(2.0, dtype=T.float64)
    y.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y[[1]].sum().backward()


def test_zero_constant_pad_keeps_the_layout(lib):
    x = lib.ones(1, 2, 3).mT.requires_grad_()
    y = lib.nn.functional.pad(x, (0, 0))
    assert y.stride() == (6, 1, 3) and y.grad_fn.name() == "ConstantPadNdBackward0"
    assert lib.nn.functional.pad(x, (1, 0)).stride() == (9, 3, 1)
