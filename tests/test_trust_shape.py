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


def test_unrepresentable_empty_tensor_is_a_clear_error():
    # deliberate difference: PyTorch makes this empty tensor; numpy caps the product of the sizes
    assert torch is None or torch.empty(2**31, 2**31, 2, 0).shape == (2**31, 2**31, 2, 0)
    with raises(RuntimeError, "cannot be represented"):
        nbgrad.empty(2**31, 2**31, 2, 0)


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
