"""Issue 10 (trust): shape/movement ops, linear algebra and creation on edge inputs -- 0-dim and
empty tensors, size-1 dims, non-contiguous inputs, aliasing -- and bad sizes for the factories.

Tests taking the fixture ``T`` run once with ``nbgrad`` and, when PyTorch (the oracle) is
installed, once more with ``torch``: the very same assertions, so each states PyTorch 2.13's
behaviour and checks nbgrad against it.  Tests with ``needs_torch`` compare values, strides,
node names and gradients of the two libraries directly.
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


def raises(exc, phrase):
    return pytest.raises(exc, match=re.escape(phrase))


# -- creation: bad sizes raise PyTorch's error before anything is allocated ----------------------


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda T: T.eye(-2), RuntimeError, "n must be greater or equal to 0, got -2"),
        (lambda T: T.eye(2, -1), RuntimeError, "m must be greater or equal to 0, got -1"),
        (lambda T: T.eye(2**40), RuntimeError, "numel: integer multiplication overflow"),
        (lambda T: T.eye(2.0), TypeError, "eye(): argument 'n' (position 1) must be int"),
        (lambda T: T.eye(2, None), TypeError, "eye() received an invalid combination"),
        (lambda T: T.empty(2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.empty(2**62, 4), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.empty(2**40, 2**40), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.zeros((2**62, 2**62, 0)), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.zeros((0, 2**62, 2**62)), RuntimeError, "Stride calculation overflowed"),
        (lambda T: T.empty(2**63), TypeError, "Overflow when unpacking long long"),
        (lambda T: T.empty(2.0), TypeError, "must be tuple of ints, not float"),
        (lambda T: T.empty(True), TypeError, "must be tuple of ints, not bool"),
        (lambda T: T.empty((2, 2.0)), TypeError, "argument 'size'"),
        (lambda T: T.empty(2, 2.0), TypeError, "type must be tuple of ints,but got float"),
        (lambda T: T.empty(-1), RuntimeError, "Trying to create tensor with negative dimension -1"),
        (lambda T: T.ones(2, -1), RuntimeError, "negative dimension -1: [2, -1]"),
        (lambda T: T.zeros(-3), RuntimeError, "zeros: Dimension size must be non-negative."),
        (lambda T: T.zeros(2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.ones(2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.full((2**62,), 1.0), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.full((-1,), 1.0), RuntimeError, "negative dimension -1"),
        (lambda T: T.full(2, 1.0), TypeError, "must be tuple of ints, not int"),
        (lambda T: T.rand(2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.randn(-2), RuntimeError, "negative dimension -2"),
        (lambda T: T.rand(2, dtype=T.int64), NotImplementedError, '"check_uniform_bounds"'),
        (lambda T: T.randn(2, dtype=T.int64), NotImplementedError, '"normal_kernel_cpu"'),
        (lambda T: T.arange(-1), RuntimeError, "upper bound and lower bound inconsistent"),
        (lambda T: T.arange(0, 5, -1), RuntimeError, "upper bound and lower bound inconsistent"),
        (lambda T: T.arange(0, 5, 0), RuntimeError, "step must be nonzero"),
        (lambda T: T.arange(0, 1, float("nan")), RuntimeError, "step must be nonzero"),
        (lambda T: T.arange(float("inf")), RuntimeError, "unsupported range: 0 -> inf"),
        (lambda T: T.arange(float("nan")), RuntimeError, "unsupported range: 0 -> nan"),
        (lambda T: T.arange(0, 2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.arange(0.0, 1e30, 1e-5), RuntimeError, "invalid size, possible overflow?"),
        (lambda T: T.arange(0, 10**19), RuntimeError, "without overflow"),
        (lambda T: T.arange(2, dtype=T.bool), NotImplementedError, '"arange_cpu" not implemented'),
        (lambda T: T.linspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
        (lambda T: T.linspace(0, 1, 2**62), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.linspace(0, 1, 2.5), TypeError, "linspace() received an invalid combination"),
        (lambda T: T.randint(5, 2, (3,)), RuntimeError, "from=5 >= to=2"),
        (lambda T: T.randint(2, 2, (0,)), RuntimeError, "from=2 >= to=2"),
        (lambda T: T.randint(0, 2**70, (3,)), ValueError, "Overflow when unpacking long long"),
        (lambda T: T.randint(0, 300, (3,), dtype=T.uint8), RuntimeError, "to - 1 is out of bounds"),
        (lambda T: T.randint(-1, 3, (3,), dtype=T.uint8), RuntimeError, "from is out of bounds"),
        (lambda T: T.randint(0, 3, (3,), dtype=T.bool), RuntimeError, "to - 1 is out of bounds"),
        (lambda T: T.randint(0, 200, (2,), dtype=T.int8), RuntimeError, "to - 1 is out of bounds"),
        (lambda T: T.randint(0, 2**40, (2,), dtype=T.int32), RuntimeError, "out of bounds for int"),
        (lambda T: T.randint(0, 3, (2,), dtype=T.complex64), RuntimeError, "check_random_bounds"),
        (lambda T: T.randint(0, 3, (-1,)), RuntimeError, "negative dimension -1"),
        (lambda T: T.randint(0, 3, (2**62,)), RuntimeError, "Storage size calculation overflowed"),
        (lambda T: T.randint(0, 3, 5), TypeError, "randint() received an invalid combination"),
        (lambda T: T.randint(1.5, 3.5, (2,)), TypeError, "randint() received an invalid"),
        (lambda T: T.tensor(2**70), ValueError, "Overflow when unpacking long long"),
        (lambda T: T.full((2,), 2**70), OverflowError, "int too big to convert"),
        (lambda T: T.full_like(T.zeros(2), 2**64), OverflowError, "int too big to convert"),
        (lambda T: T.full((2,), 2**63), RuntimeError, "to type int64_t without overflow"),
        (lambda T: T.full((2,), 300, dtype=T.uint8), RuntimeError, "to type uint8_t without"),
        (lambda T: T.full_like(T.zeros(2, dtype=T.int8), 200), RuntimeError, "int8_t without"),
    ],
)
def test_bad_sizes_raise_pytorch_errors(T, call, exc, phrase):
    with raises(exc, phrase):
        call(T)


def test_refused_allocation_is_pytorch_runtime_error():
    # 2**50 float32 elements (4 PiB) pass the overflow checks; the allocator refuses them
    with raises(RuntimeError, "DefaultCPUAllocator: can't allocate memory: you tried to allocate"):
        nbgrad.empty(2**50)
    with raises(RuntimeError, "you tried to allocate 4503599627370496 bytes"):
        nbgrad.zeros(2**50)


def test_creation_edge_sizes(T):
    assert T.eye(0).shape == (0, 0)
    assert T.eye(2, 0).shape == (2, 0)
    assert T.eye(2**40, 0).shape == (2**40, 0)  # no element: nothing to allocate
    assert T.eye(T.tensor(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert T.empty(3, 0, 2).stride() == (2, 2, 1)  # contiguous, a 0 size counting as 1
    assert T.zeros(2, 0).stride() == (1, 1)
    assert T.arange(0).stride() == (1,)
    assert T.empty((T.tensor(2), 3)).shape == (2, 3)
    assert T.empty(np.int64(3)).shape == (3,)
    assert T.full((2,), T.tensor(3.0)).dtype == T.float32
    assert T.arange(True).tolist() == [0]
    assert T.arange(1.5).tolist() == [0.0, 1.0]
    assert T.randint(0, 3, ()).shape == ()
    assert T.randint(-(2**63), 2**63 - 1, (2,)).dtype == T.int64
    assert T.randint(0, 2, (3,), dtype=T.bool).dtype == T.bool
    assert T.full((2,), -1, dtype=T.uint8).tolist() == [255, 255]  # wraps, as PyTorch
    assert T.full((2,), -(2**63)).tolist() == [-(2**63)] * 2


def test_unrepresentable_empty_tensor_is_a_clear_error():
    # deliberate difference: PyTorch makes this empty tensor; numpy caps the product of the sizes
    assert torch is None or torch.empty(2**31, 2**31, 2, 0).shape == (2**31, 2**31, 2, 0)
    with raises(RuntimeError, "cannot be represented"):
        nbgrad.empty(2**31, 2**31, 2, 0)


def test_manual_seed_range(T):
    before = T.initial_seed()
    assert T.manual_seed(-1).initial_seed() == 2**64 - 1
    assert T.manual_seed(2**64 - 1).initial_seed() == 2**64 - 1
    for bad in (2**64, -(2**63) - 1):
        with raises(ValueError, "Overflow when unpacking long long"):
            T.manual_seed(bad)
    T.manual_seed(-1)
    a = T.rand(3)
    T.manual_seed(2**64 - 1)
    assert T.equal(a, T.rand(3))
    T.manual_seed(before)


def test_linspace_propagates_nan_inf_as_pytorch(T):
    # PyTorch counts the first half up from start and the second half down from end
    x = T.linspace(float("nan"), 1, 3)
    assert np.isnan(x.numpy()).all()
    y = T.linspace(float("inf"), 1, 3).numpy()
    assert np.isnan(y[0]) and y[1] == np.inf and np.isnan(y[2])
    assert T.linspace(5, 1, 1).tolist() == [5.0]
    assert T.linspace(0, 1, 5, dtype=T.int64).tolist() == [0, 0, 0, 0, 1]
    assert T.linspace(0, 10, 5, dtype=T.int64).tolist() == [0, 2, 5, 7, 10]
    assert T.linspace(0, 1, 0).shape == (0,)


# -- item 1: flip never aliases; varargs dims ----------------------------------------------------


def test_flip_over_size_one_dims_is_a_new_tensor(T):
    x = T.arange(3.0).reshape(3, 1)
    for dims in (1, (1,), (), -1):
        y = x.flip(dims)
        y.add_(10)  # must not write into x
        assert x.tolist() == [[0.0], [1.0], [2.0]]
        assert y.data_ptr() != x.data_ptr()
    s = T.tensor(5.0)
    y = s.flip(0)
    y.add_(1)
    assert s.item() == 5.0 and y.item() == 6.0


def test_flip_varargs_and_duplicate_dims(T):
    x = T.arange(24.0).reshape(2, 3, 4)
    assert T.equal(x.flip(0, 2), x.flip((0, 2)))
    assert T.equal(x.flip(0, 2), x.flip(dims=[0, 2]))
    assert x.flip(0, 2)[0, 0].tolist() == [15.0, 14.0, 13.0, 12.0]
    with raises(RuntimeError, "dim 0 appears multiple times in the list of dims"):
        x.flip(0, -3)
    with raises(RuntimeError, "dim 0 appears multiple times in the list of dims"):
        x.flip([0, 0])
    with raises(
        IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    ):
        x.flip(3)


def test_flip_keeps_the_input_layout(T):
    x = T.randn(3, 4).t()  # PyTorch's empty_like(preserve_format)
    y = x.flip(0)
    assert y.stride() == (1, 4)
    assert T.equal(y, x.contiguous().flip(0))


def test_flip_gradient_and_node(T):
    x = T.randn(2, 1, 3, dtype=T.float64, requires_grad=True)
    y = x.flip(1, 2)
    assert y.grad_fn.name() == "FlipBackward0"
    w = T.randn(2, 1, 3, dtype=T.float64)
    (y * w).sum().backward()
    assert T.equal(x.grad, w.flip(1, 2))


# -- item 2: dim-taking ops on 0-dim tensors -----------------------------------------------------


@pytest.mark.parametrize(
    "call, shape, node, is_view",
    [
        (lambda x: x.flip(0), (), "FlipBackward0", False),
        (lambda x: x.flip(-1), (), "FlipBackward0", False),
        (lambda x: x.flip(()), (), "FlipBackward0", False),
        (lambda x: x.transpose(0, -1), (), "TransposeBackward0", True),
        (lambda x: x.swapaxes(0, 0), (), "TransposeBackward0", True),
        (lambda x: x.t(), (), "TBackward0", True),
        (lambda x: x.roll(1), (), "RollBackward0", False),
        (lambda x: x.roll(2, ()), (), "RollBackward0", False),
        (lambda x: x.unsqueeze(0), (1,), "UnsqueezeBackward0", True),
        (lambda x: x.unsqueeze(-1), (1,), "UnsqueezeBackward0", True),
        (lambda x: x.squeeze(), (), "SqueezeBackward0", True),
        (lambda x: x.squeeze(0), (), "SqueezeBackward1", True),
        (lambda x: x.squeeze(-1), (), "SqueezeBackward1", True),
        (lambda x: x.squeeze((0,)), (), "SqueezeBackward2", True),
        (lambda x: x.movedim(0, 0), (), "AliasBackward0", True),
        (lambda x: x.movedim(0, -1), (), "AliasBackward0", True),
        (lambda x: x.movedim((0,), (0,)), (), "AliasBackward0", True),
        (lambda x: x.permute(()), (), "PermuteBackward0", True),
        (lambda x: x.flatten(), (1,), "ViewBackward0", True),
        (lambda x: x.flatten(0, -1), (1,), "ViewBackward0", True),
        (lambda x: x.view(()), (), "ViewBackward0", True),
        (lambda x: x.view(-1), (1,), "ViewBackward0", True),
        (lambda x: x.reshape(1, 1), (1, 1), "ViewBackward0", True),
        (lambda x: x.expand(3), (3,), "ExpandBackward0", True),
        (lambda x: x.broadcast_to(()), (), "ExpandBackward0", True),
        (lambda x: x.repeat(()), (), "RepeatBackward0", False),
        (lambda x: x.repeat(2), (2,), "RepeatBackward0", False),
        (lambda x: x.sum_to_size(()), (), "SumBackward0", False),
        (lambda x: x.clone(), (), "CloneBackward0", False),
    ],
)
def test_zero_dim_shape_ops(T, call, shape, node, is_view):
    x = T.tensor(3.0, dtype=T.float64, requires_grad=True)
    y = call(x)
    assert tuple(y.shape) == shape
    assert y.grad_fn.name() == node
    assert (y._base is x) == is_view
    assert y.detach().sum().item() == 3.0 * max(1, y.numel())
    y.sum().backward()
    assert x.grad.item() == float(max(1, y.numel()))


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda x: x.flip(1), IndexError, "expected to be in range of [-1, 0], but got 1"),
        (lambda x: x.flip(0, 0), RuntimeError, "dim 0 appears multiple times in the list of dims"),
        (lambda x: x.transpose(0, 1), IndexError, "expected to be in range of [-1, 0], but got 1"),
        (
            lambda x: x.roll(1, 0),
            IndexError,
            "Dimension specified as 0 but tensor has no dimensions",
        ),
        (lambda x: x.roll(2, -1), IndexError, "Dimension specified as -1 but tensor has no dim"),
        (lambda x: x.roll((), ()), RuntimeError, "`shifts` required"),
        (
            lambda x: x.narrow(0, 0, 1),
            RuntimeError,
            "narrow() cannot be applied to a 0-dim tensor.",
        ),
        (lambda x: x.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
        (lambda x: x.split([1]), RuntimeError, "split expects at least a 1-dimensional tensor"),
        (lambda x: x.chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
        (
            lambda x: x.unbind(0),
            IndexError,
            "Dimension specified as 0 but tensor has no dimensions",
        ),
        (
            lambda x: x.unbind(-1),
            IndexError,
            "Dimension specified as 0 but tensor has no dimensions",
        ),
        (lambda x: x.unsqueeze(1), IndexError, "expected to be in range of [-1, 0], but got 1"),
        (lambda x: x.squeeze(1), IndexError, "expected to be in range of [-1, 0], but got 1"),
        (lambda x: x.flatten(-2), IndexError, "expected to be in range of [-1, 0], but got -2"),
        (lambda x: x.unflatten(0, (1,)), RuntimeError, "unflatten got an unexpected error:"),
        (lambda x: x.unflatten(0, ()), RuntimeError, "unflatten: sizes must be non-empty"),
        (lambda x: x.permute(0), RuntimeError, "input.dim() = 0 is not equal to len(dims) = 1"),
        (lambda x: x.permute(), TypeError, "permute() missing 1 required positional arguments"),
        (lambda x: x.expand(-1), RuntimeError, "numel: integer multiplication overflow"),
        (lambda x: x.tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
        (lambda x: x.triu(), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
        (lambda x: x.movedim(1, 0), IndexError, "expected to be in range of [-1, 0], but got 1"),
        (
            lambda x: x.sum_to_size(1, 1),
            RuntimeError,
            "size {[1, 1]} is not expandable to size {[]}.",
        ),
    ],
)
def test_zero_dim_shape_op_errors(T, call, exc, phrase):
    x = T.tensor(3.0, requires_grad=True)
    with raises(exc, phrase):
        call(x)


def test_zero_dim_cat_stack(T):
    s = T.tensor(1.0)
    with raises(RuntimeError, "zero-dimensional tensor (at position 0) cannot be concatenated"):
        T.cat([s, s])
    with raises(RuntimeError, "zero-dimensional tensor (at position 1) cannot be concatenated"):
        T.cat([T.ones(2), s])
    assert T.stack([s, s], -1).tolist() == [1.0, 1.0]
    with raises(IndexError, "expected to be in range of [-1, 0], but got 1"):
        T.stack([s, s], 1)


def test_zero_dim_linalg(T):
    s = T.tensor(2.0)
    v = T.ones(2)
    with raises(RuntimeError, "both arguments to matmul need to be at least 1D"):
        T.matmul(s, v)
    with raises(RuntimeError, "outer: Expected 1-D argument self, but got 0-D"):
        T.outer(s, v)
    with raises(RuntimeError, "outer: Expected 1-D argument vec2, but got 0-D"):
        T.outer(v, s)
    with raises(RuntimeError, "1D tensors expected, but got 0D and 0D tensors"):
        T.dot(s, s)
    with raises(IndexError, "Dimension specified as 0 but tensor has no dimensions"):
        T.mv(s, T.ones(1))
    x = T.tensor(3.0, requires_grad=True)
    e = T.einsum("->", x)
    assert e.grad_fn.name() == "PermuteBackward0" and e._base is x
    m = T.einsum(",->", x, x)
    assert m.grad_fn.name() == "MulBackward0" and m.item() == 9.0


# -- item 3: empty tensors -----------------------------------------------------------------------


def test_split_chunk_of_empty_dim_forward_and_backward(T):
    x = T.zeros(2, 0, 3, dtype=T.float64, requires_grad=True)
    parts = x.split(2, 1)
    assert [tuple(p.shape) for p in parts] == [(2, 0, 3)]  # PyTorch: at least one split
    assert parts[0].grad_fn.name() == "SplitBackward0"
    sum(p.sum() for p in parts).backward()
    assert tuple(x.grad.shape) == (2, 0, 3)
    x.grad = None
    chunks = x.chunk(3, 1)
    assert [tuple(c.shape) for c in chunks] == [(2, 0, 3)] * 3
    assert chunks[0].grad_fn.name() == "SplitWithSizesBackward0"
    chunks[1].sum().backward()
    assert tuple(x.grad.shape) == (2, 0, 3)
    e = T.zeros(0, dtype=T.float64, requires_grad=True)
    (ps,) = e.split(1)
    ps.sum().backward()
    assert tuple(e.grad.shape) == (0,)
    assert len(e.split(0)) == 1
    assert T.zeros(2, 0).unbind(1) == ()


def test_split_outputs_are_views_sharing_the_version_counter(T):
    x = T.arange(6.0).reshape(3, 2).clone()
    a, b = x.split([1, 2])
    b.mul_(10)  # no autograd: allowed, and writes into x
    assert x.tolist() == [[0.0, 1.0], [20.0, 30.0], [40.0, 50.0]]
    r0, r1, r2 = x.unbind(0)
    r2.zero_()
    assert x[2].tolist() == [0.0, 0.0]
    assert r0._base is x and a._base is x
    assert r1.stride() == (1,) and x.unbind(1)[0].stride() == (2,)


def test_cat_with_empty_tensors(T):
    x = T.randn(2, 3, dtype=T.float64, requires_grad=True)
    e = T.zeros(0, dtype=T.float64, requires_grad=True)  # PyTorch skips 1-dim empty tensors
    e2 = T.zeros(2, 0, dtype=T.float64, requires_grad=True)
    y = T.cat([e, x, e2, x], 1)
    assert tuple(y.shape) == (2, 6)
    y.backward(T.ones(2, 6, dtype=T.float64))
    assert tuple(e.grad.shape) == (0,) and tuple(e2.grad.shape) == (2, 0)
    assert x.grad.tolist() == [[2.0] * 3] * 2
    z = T.cat([e, e], 5)  # only skipped tensors: the dim is not even checked
    assert tuple(z.shape) == (0,) and z.grad_fn.name() == "CatBackward0"
    with raises(IndexError, "expected to be in range of [-2, 1], but got 2"):
        T.cat([e, x], 2)
    with raises(RuntimeError, "Expected size 3 but got size 4 for tensor number 2 in the list."):
        T.cat([e, x, T.zeros(2, 4)], 0)
    with raises(ValueError, "torch.cat(): expected a non-empty list of Tensors"):
        T.cat([])


def test_cat_and_stack_results_are_contiguous(T):
    x = T.randn(3, 2).t()
    assert T.cat([x, x]).stride() == (3, 1)
    assert T.cat([x, x], 1).stride() == (6, 1)
    assert T.stack([x, x], 1).stride() == (6, 3, 1)


def test_reshape_view_of_empty_tensors(T):
    x = T.zeros(2, 0, 3, requires_grad=True)
    assert tuple(x.view(0, 5).shape) == (0, 5)
    assert tuple(x.reshape(-1, 3).shape) == (0, 3)
    assert x.view(-1, 3).stride() == (3, 1)
    with raises(RuntimeError, "cannot reshape tensor of 0 elements into shape [0, -1] because"):
        x.view(0, -1)
    with raises(RuntimeError, "cannot reshape tensor of 0 elements into shape [-1, 0] because"):
        x.reshape(-1, 0)
    y = x.transpose(0, 2).reshape(6, 0)
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 0, 3)
    assert tuple(T.zeros(0, 3).unflatten(0, (2, -1)).shape) == (2, 0, 3)


def test_repeat_with_zero_and_of_empty(T):
    x = T.randn(2, 3, dtype=T.float64, requires_grad=True)
    y = x.repeat(0, 2)
    assert tuple(y.shape) == (0, 6) and y.grad_fn.name() == "RepeatBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    e = T.zeros(2, 0, dtype=T.float64, requires_grad=True)
    e.repeat(2, 3, 1).sum().backward()
    assert tuple(e.grad.shape) == (2, 0)
    with raises(RuntimeError, "Trying to create tensor with negative dimension -3: [2, -3]"):
        x.repeat(1, -1)


def test_new_contiguous_results_have_pytorch_strides_on_size_one_dims(T):
    # an input whose size-1 dim has an arbitrary stride: numpy would copy that stride
    x = T.randn(4, 1)[::2].t()  # (1, 2) strides (1, 2)
    assert x.roll(1, 1).stride() == (2, 1)
    assert x.tril().stride() == (2, 1)
    assert x.repeat(1, 1).stride() == (2, 1)
    y = T.randn(3, 2)[:, :1]  # (3, 1) strides (2, 1)
    assert y.roll(1, 0).stride() == (1, 1)


def test_roll_of_empty_tensor_is_a_copy_before_dim_checks(T):
    x = T.zeros(0, 3, requires_grad=True)
    assert tuple(x.roll(1, 5).shape) == (0, 3)  # PyTorch returns early, unchecked
    assert x.t().roll(1, 0).stride() == (1, 3)  # a clone, preserving the layout
    y = T.arange(6.0).reshape(2, 3).t()
    assert y.roll(1, 0).stride() == (2, 1)
    assert (
        y.roll(1).tolist()
        == T.arange(6.0).reshape(2, 3).t().contiguous().view(-1).roll(1).view(3, 2).tolist()
    )


# -- item 6: the rest of the grid: strides, node names, messages ---------------------------------


def test_view_strides_are_pytorchs(T):
    a = T.randn(6)[::2]  # (3,) stride (2,)
    assert a.view(3, 1).stride() == (2, 2)
    assert a.view(1, 3).stride() == (6, 2)
    b = T.randn(4, 1)[::2]  # (2, 1) strides (2, 1)
    assert b.view(2, 1).stride() == (2, 1)
    assert b.unsqueeze(0).stride() == (4, 2, 1)
    assert b.unsqueeze(2).stride() == (2, 1, 1)
    assert b.squeeze(1).stride() == (2,)
    c = T.randn(2, 3, 4)
    assert c.expand(1, 2, 3, 4).stride() == (24, 12, 4, 1)
    assert c.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert c[:, :1].expand(2, 6, 4).stride() == (12, 0, 1)


def test_reshape_node_names(T):
    a = T.randn(6, requires_grad=True)
    b = T.randn(2, 3, requires_grad=True)
    assert a.reshape(2, 3).grad_fn.name() == "ViewBackward0"
    assert a[::2].reshape(3, 1).grad_fn.name() == "ReshapeAliasBackward0"
    assert b.t().reshape(3, 1, 2).grad_fn.name() == "ReshapeAliasBackward0"
    r = b.t().reshape(6)  # a copy: _unsafe_view(clone(contiguous))
    assert r.grad_fn.name() == "UnsafeViewBackward0" and r._base is None
    assert r.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    assert b.t().flatten().grad_fn.name() == "UnsafeViewBackward0"
    assert a.flatten() is a
    r.sum().backward()
    assert b.grad.tolist() == [[1.0] * 3] * 2


def test_clone_and_to_preserve_layout(T):
    x = T.randn(3, 4).t()
    assert x.clone().stride() == (1, 4)
    assert x.to(T.float64).stride() == (1, 4)
    a = T.randn(2)[::2]  # dense: strides kept
    assert a.clone().stride() == (2,)
    w = T.randn(2, 6)[:, ::2]  # not dense: contiguous in the same order
    assert w.clone().stride() == (3, 1)
    g = T.randn(3, 4).t()[::2]
    assert g.clone().stride() == (1, 2)


def test_view_dtype_is_no_autograd_view(T):
    x = T.randn(2, 3, requires_grad=True)
    r = x.view(T.int32)
    assert r._base is None and not r.requires_grad and r.grad_fn is None


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda x: x.view(-3, 8), RuntimeError, "invalid shape dimension -3 at index 0 of shape"),
        (lambda x: x.view(2, -1, -1), RuntimeError, "only one dimension can be inferred"),
        (lambda x: x.view(5, -1), RuntimeError, "shape '[5, -1]' is invalid for input of size 24"),
        (lambda x: x.view(2.0, 12), TypeError, "view() received an invalid combination"),
        (lambda x: x.unflatten(1, (2, 2)), RuntimeError, "Provided sizes [2, 2] don't multiply"),
        (lambda x: x.unflatten(-2, (4, -1)), RuntimeError, "size of dim 1 (3) in the input"),
        (lambda x: x.unflatten(1, (-1, -1)), RuntimeError, "unflatten got an unexpected error:"),
        (lambda x: x.unflatten(1, ()), RuntimeError, "unflatten: sizes must be non-empty"),
        (lambda x: x.squeeze((0, 0)), RuntimeError, "dim 0 appears multiple times"),
        (lambda x: x.permute(), TypeError, "permute() missing 1 required positional arguments"),
        (lambda x: x.movedim((0, 1), (1,)), RuntimeError, "should contain the same number of dims"),
        (lambda x: x.movedim((0, 0), (1, 2)), RuntimeError, "movedim: repeated dim in `source`"),
        (lambda x: x.movedim((0, 1), (2, 2)), RuntimeError, "repeated dim in `destination`"),
        (lambda x: x.expand(), TypeError, "expand() missing 1 required positional arguments"),
        (lambda x: x.expand(2, 3, 5), RuntimeError, "The expanded size of the tensor (5) must"),
        (lambda x: x.expand(-2, 2, 3, 4), RuntimeError, "numel: integer multiplication overflow"),
        (lambda x: x.expand(-1, 2, 3, 4), RuntimeError, "isn't allowed in a leading, non-existing"),
        (
            lambda x: x.sum_to_size(5),
            RuntimeError,
            "size {[5]} is not expandable to size {[2, 3, 4]}",
        ),
        (lambda x: x.sum_to_size(), TypeError, "sum_to_size() missing 1 required positional"),
        (lambda x: x.split(-1), RuntimeError, "split expects split_size be non-negative"),
        (lambda x: x.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
        (lambda x: x.split([1, -1, 2], 1), RuntimeError, "have only non-negative entries"),
        (lambda x: x.split([2, 3], -1), RuntimeError, "size at dimension -1), but got split"),
        (lambda x: x.split(2.5), TypeError, "must be tuple of ints, not float"),
        (lambda x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
        (
            lambda x: x.roll((1, 2)),
            RuntimeError,
            "shifts and dimensions must align. shifts: 2, dims:0",
        ),
        (lambda x: x.roll(1, (0, 0)), RuntimeError, "shifts and dimensions must align. shifts: 1"),
        (lambda x: x.narrow(0, 3, 0), IndexError, "start out of range (expected to be in range of"),
        (lambda x: x.narrow(0, -3, 1), IndexError, "[-2, 2], but got -3)"),
        (lambda x: x.narrow(0, 1, -1), RuntimeError, "narrow(): length must be non-negative."),
        (
            lambda x: x.narrow(0, 1, 5),
            RuntimeError,
            "start (1) + length (5) exceeds dimension size",
        ),
        (lambda x: x.narrow(0, x.new_ones(1).long(), 1), RuntimeError, "start must be an 0-dim"),
        (lambda x: x.repeat(), TypeError, "repeat() missing 1 required positional arguments"),
        (lambda x: x.repeat(1, 1, -1), RuntimeError, "negative dimension -4: [2, 3, -4]"),
    ],
)
def test_shape_op_errors(T, call, exc, phrase):
    x = T.randn(2, 3, 4, requires_grad=True)
    with raises(exc, phrase):
        call(x)


def test_broadcast_tensors_keeps_inputs_that_need_no_expand(T):
    x = T.randn(2, 3, requires_grad=True)
    a, b = T.broadcast_tensors(x, T.zeros(1))
    assert a is x and b.grad_fn is None and tuple(b.shape) == (2, 3)
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (4) at"):
        T.broadcast_tensors(x, T.zeros(4))


def test_sum_to_size_nodes(T):
    x = T.randn(2, 3, 4, requires_grad=True)
    assert x.sum_to_size(2, 3, 4) is x
    assert x.sum_to_size(()).grad_fn.name() == "SumBackward0"
    assert x.sum_to_size(1, 1, 4).grad_fn.name() == "SumBackward1"
    y = x.sum_to_size(3, 1)
    assert y.grad_fn.name() == "ViewBackward0" and tuple(y.shape) == (3, 1)
    assert np.allclose(y.detach().numpy(), x.detach().numpy().sum((0, 2))[:, None], atol=1e-5)


# -- item 4: einsum through repeated subscripts (diagonals, traces) ------------------------------

EINSUM_CASES = [
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ii->", [(0, 0)]),
    ("iij->j", [(2, 2, 3)]),
    ("iji->ji", [(2, 3, 2)]),
    ("iii->i", [(2, 2, 2)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("ii,ij->j", [(2, 2), (2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i...i->...", [(3, 2, 3)]),
    ("iij,jkk->ik", [(2, 2, 3), (3, 2, 2)]),
    ("ii,jj->ij", [(2, 2), (3, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i", [(1,), (3,)]),
    ("i,i,i->i", [(2,), (2,), (2,)]),
    ("ij->ji", [(2, 3)]),
    ("aab,bcc->ac", [(2, 2, 1), (3, 2, 2)]),
    ("aab,b->b", [(1, 1, 1), (3,)]),  # a size-1 label broadcast, one summed only in op 0
    ("dcb,bc->", [(3, 1, 2), (1, 2)]),
]


def _einsum_grads(T, eq, arrays):
    xs = [T.tensor(a, requires_grad=True) for a in arrays]
    y = T.einsum(eq, *xs)
    rng = np.random.default_rng(1)
    w = T.tensor(rng.standard_normal(tuple(y.shape)))
    gs = T.autograd.grad((y * w).sum(), xs, create_graph=True, allow_unused=True)
    total = sum((g * g * g).sum() for g in gs if g is not None and g.requires_grad)
    g2 = None
    if isinstance(total, T.Tensor):
        g2 = T.autograd.grad(total, xs, allow_unused=True)
    return y, gs, g2


def _np(t):
    return None if t is None else t.detach().numpy()


@pytest.mark.parametrize("eq, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_repeated_subscripts_values_and_gradients(eq, shapes):
    """Values and first/second-order gradients against float64 numpy (and PyTorch)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    y, gs, _ = _einsum_grads(nbgrad, eq, arrays)
    ref = np.einsum(eq, *arrays)
    assert np.allclose(y.detach().numpy(), ref)
    # first order against central differences of the numpy einsum
    w = np.random.default_rng(1).standard_normal(np.shape(ref))
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            ap, am = [b.copy() for b in arrays], [b.copy() for b in arrays]
            ap[k][idx] += 1e-6
            am[k][idx] -= 1e-6
            num[idx] = ((np.einsum(eq, *ap) - np.einsum(eq, *am)) * w).sum() / 2e-6
        assert np.allclose(gs[k].detach().numpy(), num, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("eq, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_torch(eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    yn, gn, g2n = _einsum_grads(nbgrad, eq, arrays)
    yt, gt, g2t = _einsum_grads(torch, eq, arrays)
    assert np.allclose(_np(yn), _np(yt))
    assert yn.grad_fn.name() == yt.grad_fn.name()
    assert tuple(yn.stride()) == tuple(yt.stride()) or yn.grad_fn.name() == "MulBackward0"
    for a, b in zip(gn, gt):
        assert (a is None) == (b is None) and (a is None or np.allclose(_np(a), _np(b)))
    assert (g2n is None) == (g2t is None)
    for a, b in zip(g2n or (), g2t or ()):
        assert (a is None) == (b is None) and (a is None or np.allclose(_np(a), _np(b)))


def test_einsum_diagonal_is_a_view(T):
    x = T.arange(9.0).reshape(3, 3).clone().requires_grad_()
    d = T.einsum("ii->i", x)
    assert d._base is x and d.grad_fn.name() == "PermuteBackward0" and d.stride() == (4,)
    assert d.tolist() == [0.0, 4.0, 8.0]
    t = T.einsum("ii", x)
    assert t.grad_fn.name() == "SumBackward1" and t.item() == 12.0
    t.backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def test_einsum_diagonal_backward_propagates_inf_without_nan(T):
    x = T.zeros(2, 2, dtype=T.float64, requires_grad=True)
    y = T.einsum("ii->i", x)
    y.backward(T.tensor([float("inf"), 1.0], dtype=T.float64))
    assert x.grad.tolist() == [[float("inf"), 0.0], [0.0, 1.0]]  # zeros stay zeros


@pytest.mark.parametrize(
    "call, phrase",
    [
        (
            lambda T, a: T.einsum("ii", a(2, 3)),
            "subscript i is repeated for operand 0 but the sizes",
        ),
        (
            lambda T, a: T.einsum("ij->k", a(2, 3)),
            "output subscript k does not appear in the equat",
        ),
        (lambda T, a: T.einsum("ij->ii", a(2, 3)), "output subscript i appears more than once"),
        (
            lambda T, a: T.einsum("i,i", a(2), a(3)),
            "subscript i has size 3 for operand 1 which does",
        ),
        (lambda T, a: T.einsum("i.j", a(2, 3)), "found '.' for operand 0 that is not part of any"),
        (
            lambda T, a: T.einsum("i1", a(2, 3)),
            "invalid subscript given at index 1 in the equation",
        ),
        (lambda T, a: T.einsum("ij->j->i", a(2, 3)), "invalid subscript given at index 5"),
        (lambda T, a: T.einsum("i,j", a(2)), "fewer operands were provided than specified"),
        (lambda T, a: T.einsum("i", a(2), a(2)), "more operands were provided than specified"),
        (lambda T, a: T.einsum("ij,jk", a(2, 3), a(3, 4).float()), "expected scalar type Double"),
        (lambda T, a: T.einsum("...i,...i", a(2, 3), a(4, 3)), "covered by ellipsis in operand 1"),
        (
            lambda T, a: T.einsum("ijk", a(2, 3)),
            "the number of subscripts in the equation (3) does",
        ),
    ],
)
def test_einsum_errors(T, call, phrase):
    def a(*s):
        return T.ones(*s, dtype=T.float64)

    with raises(RuntimeError, phrase):
        call(T, a)


def test_einsum_sublist_format(T):
    x = T.arange(6.0).reshape(2, 3)
    assert T.einsum(x, [0, 1], [1, 0]).tolist() == x.t().tolist()
    assert T.einsum(x, [0, 1], x, [0, 1]).item() == 55.0


# -- matmul: PyTorch's node for each decomposition, and its messages -----------------------------


@pytest.mark.parametrize(
    "sa, sb, grad_a, grad_b, node",
    [
        ((3,), (3,), True, True, "DotBackward0"),
        ((2, 3), (3,), True, True, "MvBackward0"),
        ((3,), (3, 2), True, True, "SqueezeBackward4"),
        ((2, 3), (3, 4), True, True, "MmBackward0"),
        ((2, 3, 4), (2, 4, 3), True, True, "UnsafeViewBackward0"),
        ((2, 3, 4), (4,), True, True, "UnsafeViewBackward0"),
        ((4,), (2, 4, 3), True, True, "UnsafeViewBackward0"),
        ((3, 4), (2, 4, 5), True, True, "CloneBackward0"),
        ((3, 4), (2, 4, 5), False, True, "UnsafeViewBackward0"),
        ((1, 4), (2, 4, 6), True, True, "TransposeBackward0"),
        ((3, 4), (2, 4, 1), True, True, "TransposeBackward0"),
        ((2, 1, 3, 4), (5, 4, 2), True, True, "UnsafeViewBackward0"),
        # 3-D @ 3-D, a batch of 1 that requires grad against another batch: squeezed first
        ((1, 2, 3), (2, 3, 4), True, False, "CloneBackward0"),
        ((1, 1, 3), (2, 3, 4), True, True, "TransposeBackward0"),
        ((1, 2, 3), (2, 3, 4), False, True, "UnsafeViewBackward0"),
    ],
)
def test_matmul_node_names(T, sa, sb, grad_a, grad_b, node):
    a = T.randn(*sa, dtype=T.float64, requires_grad=grad_a)
    b = T.randn(*sb, dtype=T.float64, requires_grad=grad_b)
    y = a @ b
    assert y.grad_fn.name() == node
    assert np.allclose(y.detach().numpy(), a.detach().numpy() @ b.detach().numpy())
    y.sum().backward()
    for t in (a, b):
        assert t.grad is None if not t.requires_grad else t.grad.shape == t.shape


def test_matmul_squeezed_batch_errors(T):
    a = T.ones(0, 1, 3)
    with raises(RuntimeError, "batch2 tensor to be: [0, 3] but got: [0, 2]."):
        a @ T.ones(1, 2, 0)
    with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (0x3 and 2x0)"):
        a @ T.ones(1, 2, 0, requires_grad=True)


def test_bmm_node_and_empty_matmul_strides(T):
    a = T.randn(2, 3, 4, requires_grad=True)
    assert T.bmm(a, a.transpose(1, 2)).grad_fn.name() == "BmmBackward0"
    assert (T.zeros(2, 0, 3) @ T.zeros(2, 3, 0)).stride() == (1, 1, 1)
    assert (T.zeros(0, 3) @ T.zeros(3)).stride() == (1,)


@pytest.mark.parametrize(
    "call, phrase",
    [
        (lambda T, a: T.mv(a(2, 3), a(2)), "size mismatch, got input (2), mat (2x3), vec (2)"),
        (lambda T, a: a(2, 3, 4) @ a(5), "size mismatch, got input (6), mat (6x4), vec (5)"),
        (lambda T, a: a(5) @ a(2, 3, 4), "batch2 tensor to be: [2, 5] but got: [2, 3]."),
        (lambda T, a: a(2, 3, 4) @ a(3, 4, 5), "size of tensor a (2) must match the size of tens"),
        (lambda T, a: a(2, 3, 4) @ a(2, 5, 5), "batch2 tensor to be: [2, 4] but got: [2, 5]."),
        (lambda T, a: a(2, 5, 6) @ a(3, 4), "mat1 and mat2 shapes cannot be multiplied (10x6 and"),
        (lambda T, a: a(3) @ a(2, 3), "mat1 and mat2 shapes cannot be multiplied (1x3 and 2x3)"),
        (
            lambda T, a: a(2, 3, 4) @ a(2, 4, 3).float(),
            "expected scalar type Double but found Float",
        ),
        (lambda T, a: a(2, 3, 4) @ a(4).float(), "addmv input tensors must have the same dtype"),
        (lambda T, a: a(2, 3) @ a(3).float(), "addmv input tensors must have the same dtype"),
        (lambda T, a: T.bmm(a(2, 3, 4), a(2, 3, 3)), "batch2 tensor to be: [2, 4] but got: [2, 3]"),
    ],
)
def test_matmul_errors(T, call, phrase):
    def a(*s):
        return T.ones(*s, dtype=T.float64)

    with raises(RuntimeError, phrase):
        call(T, a)


# -- issue 10 fuzz: shape ops and linear over empty tensors ---------------------------------------


@pytest.mark.parametrize(
    "shape, start, end, want",
    [
        ((1, 1, 0), 0, 1, (1, 0)),
        ((2, 0, 3), 1, 2, (2, 0)),
        ((0, 3), 0, -1, (0,)),
        ((2, 0), 0, 1, (0,)),
    ],
)
def test_flatten_of_an_empty_tensor_multiplies_the_sizes(T, shape, start, end, want):
    """flatten wrote the merged size as -1, ambiguous over no elements ('cannot reshape tensor
    of 0 elements into shape [-1, 0]')."""
    x = T.zeros(shape, dtype=T.float64, requires_grad=True)
    y = T.flatten(x, start, end)
    assert tuple(y.shape) == want and y.grad_fn.name() == "ViewBackward0"
    y.sum().backward()
    assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("shape", [(1, 1, 0), (2, 1, 1, 0), (0,), (3, 0)])
def test_linear_with_zero_in_features_is_the_bias(T, shape):
    """A product over no in-features is 0, so linear gives the bias (the batched input was
    reshaped with -1 over 0 elements and raised)."""
    x = T.zeros(shape, requires_grad=True)
    w = T.zeros((2, 0), requires_grad=True)
    b = T.tensor([1.5, -2.0], requires_grad=True)
    y = T.nn.functional.linear(x, w, b)
    assert tuple(y.shape) == shape[:-1] + (2,)
    assert np.array_equal(y.detach().numpy(), np.broadcast_to([1.5, -2.0], y.shape))
    y.sum().backward()
    assert tuple(x.grad.shape) == shape and tuple(w.grad.shape) == (2, 0)
    assert b.grad.tolist() == [float(np.prod(shape[:-1]))] * 2


def test_repeat_backward_of_an_empty_input_stays_in_the_graph(T):
    """PyTorch's repeat_backward returns constant zeros only for a zero repeat; an empty input
    still reshapes and sums, so a create_graph gradient requires grad (it was constant zeros,
    and a second backward through it raised)."""
    x = T.zeros((3, 0), dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad((x.repeat(2, 1, 3) ** 2).sum(), [x], create_graph=True)
    assert tuple(g.shape) == (3, 0) and g.requires_grad
    (g * g).sum().backward()
    assert tuple(x.grad.shape) == (3, 0)
    (g0,) = T.autograd.grad((x.repeat(0, 1) ** 2).sum(), [x], create_graph=True)
    assert tuple(g0.shape) == (3, 0) and not g0.requires_grad


# -- item 6: every shape/linalg op over a grid of edge inputs, against PyTorch --------------------
#
# Inputs: 0-dim, empty, size-1 dims, contiguous / transposed / stepped (non-contiguous) layouts;
# every dim from out-of-range negative to out-of-range positive.  Compared: the exception type
# and message, then per output its shape, strides (not for empty results), whether it is a view
# of the leaf or the input itself, the grad_fn name, the values, and the leaf's gradient.
# Deliberate difference: strides of elementwise results (einsum's products) follow nbgrad's
# elementwise layout, compared elsewhere.

SHAPES = [
    (),
    (0,),
    (1,),
    (3,),
    (2, 0),
    (0, 3),
    (1, 1),
    (2, 3),
    (3, 1),
    (1, 3, 1),
    (2, 0, 3),
    (2, 3, 4),
]
LAYOUTS = ["c", "t", "step"]  # contiguous, transposed (last two dims), stepped slice


def make(mod, arr, layout):
    leaf = mod.tensor(arr, dtype=mod.float64, requires_grad=True)
    x = leaf
    if layout == "t" and arr.ndim >= 2:
        x = leaf.transpose(-1, -2)
    elif layout == "step" and arr.ndim >= 1:
        x = leaf[::2] if arr.ndim else leaf
    return leaf, x


def base_arr(shape, layout, rng):
    s = list(shape)
    if layout == "t" and len(s) >= 2:
        s[-1], s[-2] = s[-2], s[-1]
    elif layout == "step" and len(s) >= 1:
        s[0] = s[0] * 2
    return rng.standard_normal(s)


def dims_for(nd):
    n = max(nd, 1)
    return list(range(-n - 1, n + 1))


def ops_for(shape):
    nd = len(shape)
    D = dims_for(nd)
    out = []
    add = lambda name, f: out.append((name, f))
    for d in D:
        add("flip(%d)" % d, lambda m, x, d=d: x.flip(d))
        add("unsqueeze(%d)" % d, lambda m, x, d=d: x.unsqueeze(d))
        add("squeeze(%d)" % d, lambda m, x, d=d: x.squeeze(d))
        add("squeeze((%d,))" % d, lambda m, x, d=d: x.squeeze((d,)))
        add("roll(1,%d)" % d, lambda m, x, d=d: x.roll(1, d))
        add("roll(-4,%d)" % d, lambda m, x, d=d: x.roll(-4, d))
        add("unbind(%d)" % d, lambda m, x, d=d: x.unbind(d))
        add("split(1,%d)" % d, lambda m, x, d=d: x.split(1, d))
        add("split(2,%d)" % d, lambda m, x, d=d: x.split(2, d))
        add("split(0,%d)" % d, lambda m, x, d=d: x.split(0, d))
        add("chunk(2,%d)" % d, lambda m, x, d=d: x.chunk(2, d))
        add("chunk(3,%d)" % d, lambda m, x, d=d: x.chunk(3, d))
        add("narrow(%d,0,1)" % d, lambda m, x, d=d: x.narrow(d, 0, 1))
        add("narrow(%d,-1,1)" % d, lambda m, x, d=d: x.narrow(d, -1, 1))
        add("narrow(%d,0,0)" % d, lambda m, x, d=d: x.narrow(d, 0, 0))
        add("stack(%d)" % d, lambda m, x, d=d: m.stack([x, x], d))
        add("cat(%d)" % d, lambda m, x, d=d: m.cat([x, x], d))
        add("cat_e(%d)" % d, lambda m, x, d=d: m.cat([x, m.zeros(0, dtype=m.float64)], d))
        add("flatten(%d)" % d, lambda m, x, d=d: x.flatten(d))
        add("flatten(0,%d)" % d, lambda m, x, d=d: x.flatten(0, d))
        add("unflatten(%d,(1,-1))" % d, lambda m, x, d=d: x.unflatten(d, (1, -1)))
        add("movedim(%d,0)" % d, lambda m, x, d=d: x.movedim(d, 0))
        add("movedim(0,%d)" % d, lambda m, x, d=d: x.movedim(0, d))
        for e in D:
            add("transpose(%d,%d)" % (d, e), lambda m, x, d=d, e=e: x.transpose(d, e))
    add("flip(())", lambda m, x: x.flip(()))
    add("flip(all)", lambda m, x: x.flip(tuple(range(nd))))
    if nd >= 2:
        add("flip(0,1)va", lambda m, x: x.flip(0, 1))
        add("flip(0,-1)", lambda m, x: x.flip((0, -1)))
        add("flip(0,0)", lambda m, x: x.flip((0, 0)))
        add("split([..],-1)", lambda m, x: x.split([shape[-1], 0], -1))
        add("split([..]bad)", lambda m, x: x.split([shape[-1] + 1], -1))
    add("squeeze()", lambda m, x: x.squeeze())
    add("squeeze(all)", lambda m, x: x.squeeze(tuple(range(nd))))
    add("roll(1)", lambda m, x: x.roll(1))
    add("roll((1,2),(0,-1))", lambda m, x: x.roll((1, 2), (0, -1)))
    add("roll(1,())", lambda m, x: x.roll(1, ()))
    add("roll((),())", lambda m, x: x.roll((), ()))
    add("t", lambda m, x: x.t())
    add("permute(rev)", lambda m, x: x.permute(*reversed(range(nd))))
    add("permute(neg)", lambda m, x: x.permute(tuple(d - nd for d in range(nd))))
    add("view(-1)", lambda m, x: x.view(-1))
    add("view(shape)", lambda m, x: x.view(shape))
    add("view(1,-1)", lambda m, x: x.view(1, -1))
    add("view(0,-1)", lambda m, x: x.view(0, -1))
    add("view(-1,0)", lambda m, x: x.view(-1, 0))
    add("reshape(-1)", lambda m, x: x.reshape(-1))
    add("reshape(0,-1)", lambda m, x: x.reshape(0, -1))
    add("reshape(-1,1)", lambda m, x: x.reshape(-1, 1))
    add("reshape(())", lambda m, x: x.reshape(()))
    add("reshape(0,0)", lambda m, x: x.reshape(0, 0))
    add("reshape(-1,-1)", lambda m, x: x.reshape(-1, -1))
    add("reshape(3,-1)", lambda m, x: x.reshape(3, -1))
    add("reshape(-2)", lambda m, x: x.reshape(-2))
    add("flatten()", lambda m, x: x.flatten())
    add("expand(2,*)", lambda m, x: x.expand(2, *shape))
    add("expand(0,*)", lambda m, x: x.expand(0, *shape))
    add("expand(-1s)", lambda m, x: x.expand(*([-1] * nd)))
    add("expand(3s)", lambda m, x: x.expand(*([3] * nd)))
    add("expand(0s)", lambda m, x: x.expand(*([0] * nd)))
    add("expand(-1,*)", lambda m, x: x.expand(-1, *shape))
    add("expand_as", lambda m, x: x.expand_as(m.zeros(2, *shape, dtype=m.float64)))
    add("broadcast_to", lambda m, x: x.broadcast_to((4,) + shape))
    add(
        "broadcast_tensors",
        lambda m, x: m.broadcast_tensors(x, m.zeros(2, *([1] * nd), dtype=m.float64)),
    )
    add("sum_to_size(1s)", lambda m, x: x.sum_to_size(*([1] * nd)))
    add("sum_to_size(shape)", lambda m, x: x.sum_to_size(*shape))
    add("sum_to_size(())", lambda m, x: x.sum_to_size(()))
    add("tril", lambda m, x: x.tril())
    add("triu(1)", lambda m, x: x.triu(1))
    add("tril(-5)", lambda m, x: x.tril(-5))
    add("clone", lambda m, x: x.clone())
    add("contiguous", lambda m, x: x.contiguous())
    add("to(f32)", lambda m, x: x.to(m.float32))
    add("to(f64)", lambda m, x: x.to(m.float64))
    add("to(int)", lambda m, x: x.to(m.int64))
    add("repeat(1s)", lambda m, x: x.repeat(*([1] * nd)) if nd else x.repeat(()))
    add("repeat(2s)", lambda m, x: x.repeat(*([2] * max(nd, 1))))
    add("repeat(0s)", lambda m, x: x.repeat(*([0] * max(nd, 1))))
    add("repeat(2,1s)", lambda m, x: x.repeat(2, *([1] * nd)))
    add("repeat(0,2s)", lambda m, x: x.repeat(0, *([2] * nd)))
    add("repeat(-1)", lambda m, x: x.repeat(-1, *([1] * nd)))
    add("repeat(short)", lambda m, x: x.repeat(*([1] * (nd - 1))) if nd else x.repeat(-1))
    add("stack1", lambda m, x: m.stack([x]))
    add("cat1", lambda m, x: m.cat([x]))
    add("cat3", lambda m, x: m.cat([x, x.detach(), x]))
    # linalg
    add("matmul_self_T", lambda m, x: x @ x.transpose(-1, -2) if nd >= 2 else x @ x)
    add("matmul_vec", lambda m, x: x @ m.ones(shape[-1] if nd else 1, dtype=m.float64))
    add(
        "vec_matmul",
        lambda m, x: m.ones(shape[-2] if nd >= 2 else (shape[0] if nd else 1), dtype=m.float64) @ x,
    )
    add("mm", lambda m, x: m.mm(x, m.ones(shape[-1] if nd else 1, 2, dtype=m.float64)))
    add("mv", lambda m, x: m.mv(x, m.ones(shape[-1] if nd else 1, dtype=m.float64)))
    add("dot", lambda m, x: m.dot(x, x))
    add("outer", lambda m, x: m.outer(x, x))
    add("bmm", lambda m, x: m.bmm(x, x.transpose(-1, -2) if nd >= 2 else x))
    if nd >= 1:
        L = "abcdefg"[:nd]
        add("einsum_id", lambda m, x: m.einsum(L + "->" + L, x))
        add("einsum_sum", lambda m, x: m.einsum(L + "->", x))
        add("einsum_rev", lambda m, x: m.einsum(L + "->" + L[::-1], x))
        add("einsum_sq", lambda m, x: m.einsum(L + "," + L + "->" + L, x, x))
        add("einsum_dot", lambda m, x: m.einsum(L + "," + L, x, x))
        add("einsum_ell", lambda m, x: m.einsum("...->...", x))
        add("einsum_ell2", lambda m, x: m.einsum("...," + "...", x, x))
        add(
            "einsum_outer",
            lambda m, x: m.einsum(L + ",z->" + L + "z", x, m.ones(2, dtype=m.float64)),
        )
    if nd >= 2 and shape[0] == shape[1]:
        add("einsum_diag", lambda m, x: m.einsum("ii...->i...", x))
        add("einsum_trace", lambda m, x: m.einsum("ii...", x))
    if nd == 0:
        add("einsum0", lambda m, x: m.einsum("->", x))
        add("einsum0b", lambda m, x: m.einsum(",->", x, x))
        add("einsum0c", lambda m, x: m.einsum(",", x, x))
    return out


def err_key(e):
    return type(e).__name__, str(e).split("\n")[0]


def norm_msg(s):
    return s.replace("torch.", "").replace("nbgrad.", "")


def describe(mod, out, leaf, x):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    base = leaf
    res = []
    for o in outs:
        res.append(
            dict(
                shape=tuple(o.shape),
                stride=tuple(o.stride()),
                view=(o._base is base),
                same=(o is x),
                fn=(o.grad_fn.name() if o.grad_fn is not None else None),
                val=o.detach().numpy().astype(np.float64)
                if o.dtype != mod.int64
                else o.detach().numpy(),
            )
        )
    return res


def run(mod, f, arr, layout, gseed):
    leaf, x = make(mod, arr, layout)
    try:
        out = f(mod, x)
    except Exception as e:
        return ("err",) + err_key(e), None
    d = describe(mod, out, leaf, x)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(gseed)
    loss = None
    for o in outs:
        if o.requires_grad and o.dtype.is_floating_point:
            w = mod.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)
            term = (o * w).sum()
            loss = term if loss is None else loss + term.to(loss.dtype)
    grad = None
    if loss is not None:
        try:
            loss.backward()
            grad = None if leaf.grad is None else leaf.grad.numpy().copy()
        except Exception as e:
            grad = ("bwerr",) + err_key(e)
    return ("ok", d), grad


def cmp(a, b):  # noqa: C901
    if a[0] != b[0]:
        return "kind %s vs %s" % (
            a[1:] if a[0] == "err" else "ok",
            b[1:] if b[0] == "err" else "ok",
        )
    if a[0] == "err":
        if a[1] != b[1] or norm_msg(a[2]) != norm_msg(b[2]):
            return "err %s | %s" % (a[1:], b[1:])
        return None
    da, db = a[1], b[1]
    if len(da) != len(db):
        return "nout %d vs %d" % (len(da), len(db))
    for i, (p, q) in enumerate(zip(da, db)):
        for k in ("shape", "stride", "view", "same", "fn"):
            if p[k] != q[k]:
                if k == "stride" and (0 in p["shape"] or p["fn"] == "MulBackward0"):
                    continue
                return "out%d %s: %r vs %r" % (i, k, p[k], q[k])
        if not np.allclose(p["val"], q["val"], equal_nan=True):
            return "out%d values" % i
    return None


def cmpg(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple) and a[1] == b[1]):
            return "grad %r vs %r" % (
                a if isinstance(a, tuple) else "ok",
                b if isinstance(b, tuple) else "ok",
            )
        return None
    if (a is None) != (b is None):
        return "grad None %r vs %r" % (a is None, b is None)
    if a is None:
        return None
    if a.shape != b.shape or not np.allclose(a, b):
        return "grad values"
    return None


@needs_torch
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_shape_ops_grid_matches_torch(shape):
    rng = np.random.default_rng(0)
    bad = []
    for layout in LAYOUTS:
        if (layout == "t" and len(shape) < 2) or (layout == "step" and not shape):
            continue
        arr = base_arr(shape, layout, rng)
        for name, f in ops_for(shape):
            rt, gt = run(torch, f, arr, layout, 1)
            rn, gn = run(nbgrad, f, arr, layout, 1)
            msg = cmp(rt, rn) or (cmpg(gt, gn) if rt[0] == "ok" else None)
            if msg:
                bad.append("%s %s: %s" % (name, layout, msg))
    assert not bad, "\n".join(bad)


# -- layouts of new results: PyTorch's TensorIterator order (the fuzzer's "stride" items) --------


def _strides_of_big_dims(t):
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


@pytest.mark.parametrize(
    "make, strides",
    [
        (lambda T, a, b: a.mT == b, (1, 2)),  # a comparison follows its first operand
        (lambda T, a, b: T.ge(a.mT, b), (1, 2)),
        (lambda T, a, b: a <= b.mT, (2, 1)),  # ... which is C-contiguous: C order
        (lambda T, a, b: T.where(T.tensor([True]), a.mT, b), (1, 2)),  # mask broadcast: skipped
        (lambda T, a, b: T.where(a > 0, a.mT, b), (2, 1)),  # a C-contiguous mask decides
        (lambda T, a, b: 2.0**a.mT, (2, 1)),  # pow(Scalar, Tensor): always contiguous
        (lambda T, a, b: a.mT**2.0, (1, 2)),
        (lambda T, a, b: T.nn.functional.mse_loss(a.mT, b, reduction="none"), (1, 2)),
        (lambda T, a, b: T.nonzero(a > -1), (1, 4)),  # column-major
    ],
)
def test_result_layouts_follow_pytorch(T, make, strides):
    a = T.arange(4.0).reshape(2, 2)
    b = T.ones(2, 2)
    assert _strides_of_big_dims(make(T, a, b)) == strides


@pytest.mark.parametrize(
    "index, shape, strides",
    [
        (lambda x: x[[1]], (1, 2, 2), (1, 2)),
        (lambda x: x[:, [1]], (2, 1, 2), (2, 1)),
        (lambda x: x[:, [1, 0], [0, 1]], (2, 2), (2, 1)),
        (lambda x: x[[1, 0], :, [0, 1]], (2, 2), (2, 1)),
    ],
)
def test_advanced_index_layout(T, index, shape, strides):
    x = T.arange(8.0).reshape(2, 2, 2).mT
    y = index(x)
    assert tuple(y.shape) == shape and _strides_of_big_dims(y) == strides


def test_integers_are_views_before_advanced_indices(T):
    """PyTorch selects integer components first (numpy makes them advanced indices, which
    moves the indexed dims to the front): x[0, :, [1, 0]] is (3, 2)."""
    x = T.arange(24.0).reshape(2, 3, 4).requires_grad_()
    y = x[0, :, [1, 0]]
    assert tuple(y.shape) == (3, 2)
    assert y.tolist() == [[1.0, 0.0], [5.0, 4.0], [9.0, 8.0]]
    assert y.grad_fn.name() == "IndexBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "SelectBackward0"
    y.sum().backward()
    assert x.grad[0, :, :2].sum().item() == 6.0 and x.grad.sum().item() == 6.0
    assert tuple(x[[0, 1], :, [1, 0]].shape) == (2, 3)
    assert tuple(x[None, 0, [1, 2], None].shape) == (1, 2, 1, 4)


@pytest.mark.parametrize(
    "index, node",
    [
        (lambda x: x[:, 0:4], "AliasBackward0"),  # a slice over a whole dim is skipped
        (lambda x: x[:, ::1], "AliasBackward0"),
        (lambda x: x[..., 0:4], "AliasBackward0"),
        (lambda x: x[:], "SliceBackward0"),  # ... but a bare slice is not
        (lambda x: x[0:10], "SliceBackward0"),
        (lambda x: x[:, 0:9], "AliasBackward0"),  # a stop past the size is the whole dim
        (lambda x: x[0:10, :], "AliasBackward0"),
        (lambda x: x[0:, -4:], "SliceBackward0"),  # a negative start is not skipped
        (lambda x: x[1:3, 0:4], "SliceBackward0"),
        (lambda x: x[0:3, :, None], "UnsqueezeBackward0"),
    ],
)
def test_basic_index_node_names(T, index, node):
    x = T.zeros(3, 4, requires_grad=True)
    assert index(x).grad_fn.name() == node


@pytest.mark.parametrize(
    "make_input, node, next_node",
    [
        (lambda T: T.ones(2, 3, 4), "ViewBackward0", "AddmmBackward0"),  # contiguous: addmm
        (lambda T: T.ones(2, 4, 3).mT, "AddBackward0", "UnsafeViewBackward0"),  # matmul + add_
        (lambda T: T.ones(1, 1, 1).expand(1, 1, 4), "AddBackward0", "UnsafeViewBackward0"),
        (lambda T: T.ones(2, 2, 1, 4), "ViewBackward0", "AddmmBackward0"),
    ],
)
def test_linear_path_follows_input_contiguity(T, make_input, node, next_node):
    w = T.ones(3, 4, requires_grad=True)
    b = T.ones(3, requires_grad=True)
    y = T.nn.functional.linear(make_input(T), w, b)
    assert y.grad_fn.name() == node
    assert y.grad_fn.next_functions[0][0].name() == next_node
    y.sum().backward()
    assert b.grad.tolist() == [y.numel() / 3] * 3


def test_layout_follows_the_operands_not_their_dtype_casts(T):
    """An expanded float32 operand cast to float64 for the op keeps deciding the layout
    through its own strides (numpy's order-K cast of a 0-stride array is F-ordered)."""
    e = T.ones(1, 3).expand(2, 3)
    c = T.ones(2, 3, dtype=T.float64)
    assert (e - c).stride() == (3, 1)
    assert T.sub(e, c, alpha=2).stride() == (3, 1)
    assert (c.t() + e.t()).stride() == (1, 3)


def test_matmul_2d_by_nd_with_a_contiguous_transpose_is_a_view(T):
    """PyTorch computes matmul(2-D, N-D) as matmul(b.mT, a.mT).mT; when that transpose is
    contiguous its .contiguous() is a no-op and the result is a view: an in-place op on it
    rebases (AsStridedBackward0)."""
    a = T.ones(1, 3, dtype=T.float64, requires_grad=True)
    b = T.ones(2, 3, 4, dtype=T.float64, requires_grad=True)
    y = T.matmul(a, b)
    assert y.grad_fn.name() == "TransposeBackward0" and y._base is not None
    y.sub_(T.ones(1, 1, 1, dtype=T.float64), alpha=2)
    assert y.grad_fn.name() == "AsStridedBackward0"
    y.sum().backward()
    assert a.grad.tolist() == [[8.0, 8.0, 8.0]] and b.grad.sum().item() == 24.0


def test_floor_divide_result_layout(T):
    x0 = T.ones(1, 2, 3, dtype=T.float64)
    x1 = T.ones(1, 3, 2, dtype=T.float32).mT
    assert _strides_of_big_dims(x1 // x0) == (1, 2)
    assert _strides_of_big_dims(x0 // x1) == (3, 1)
