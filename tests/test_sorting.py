"""Sorting and scans behave as PyTorch's (the op table checks values and gradients; this file
checks orders, ties, NaN, return types and errors)."""

import math

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad

NAN = math.nan


def test_sort_orders_nan_and_ties_like_pytorch():
    x = nbgrad.tensor([1.0, NAN, 3.0, 3.0, 0.0, NAN])
    v, i = x.sort()
    assert i.tolist() == [4, 0, 2, 3, 1, 5]
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 3.0, 3.0, NAN, NAN])
    v, i = x.sort(descending=True)
    assert i.tolist() == [1, 5, 2, 3, 0, 4]  # NaN first, ties in input order
    assert nbgrad.argsort(nbgrad.tensor([2, 1, 2, 0]), descending=True).tolist() == [0, 2, 1, 3]


def test_sort_returns_named_tuples_and_node_per_stability():
    x = nbgrad.tensor([[3.0, 1.0], [0.0, 2.0]], requires_grad=True)
    r = nbgrad.sort(x)
    assert type(r).__name__ == "sort" and type(r).__module__ == "torch.return_types"
    assert r.values.grad_fn.name() == "SortBackward0"
    assert x.sort(stable=True).values.grad_fn.name() == "SortBackward1"
    assert type(x.topk(1)).__name__ == "topk" and type(x.cummax(0)).__name__ == "cummax"


def test_cummax_ties_take_the_later_index_and_nan_wins():
    v, i = nbgrad.cummax(nbgrad.tensor([1.0, 3.0, 3.0, 2.0, NAN, 5.0]), 0)
    assert i.tolist() == [0, 1, 2, 2, 4, 4]
    np.testing.assert_array_equal(v.numpy(), [1, 3, 3, 3, NAN, NAN])
    assert nbgrad.cummin(nbgrad.tensor([3.0, 1.0, 1.0, 2.0]), 0).indices.tolist() == [0, 1, 2, 2]
    assert nbgrad.cummax(nbgrad.tensor([NAN, 1.0, NAN]), 0).indices.tolist() == [0, 0, 2]


def test_cummax_gradient_sums_where_one_position_is_selected_twice():
    x = nbgrad.tensor([1.0, 3.0, 2.0, 0.5], requires_grad=True)
    nbgrad.cummax(x, 0).values.sum().backward()
    assert x.grad.tolist() == [1.0, 3.0, 0.0, 0.0]


def test_zero_dim_inputs():
    x = nbgrad.tensor(3.0, requires_grad=True)
    v, i = nbgrad.sort(x)
    assert v.shape == () and i.item() == 0
    v.backward()
    assert x.grad.item() == 1.0
    assert nbgrad.kthvalue(x, 1).values.item() == 3.0
    assert nbgrad.cummax(x, 0).indices.item() == 0


@pytest.mark.parametrize(
    "fn,err,match",
    [
        (lambda: nbgrad.topk(nbgrad.tensor([1.0, 2.0]), 3), RuntimeError, "k out of range"),
        (
            lambda: nbgrad.kthvalue(nbgrad.tensor([1.0, 2.0]), 0),
            RuntimeError,
            "selected number k out of range for dimension 0",
        ),
        (lambda: nbgrad.sort(nbgrad.ones(2), 2), IndexError, "Dimension out of range"),
    ],
)
def test_errors(fn, err, match):
    with pytest.raises(err, match=match):
        fn()


def test_unique_outputs_and_its_missing_derivative():
    u, inv, counts = nbgrad.unique(
        nbgrad.tensor([3, 1, 1, 2]), return_inverse=True, return_counts=True
    )
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [2, 0, 0, 1] and counts.tolist() == [2, 1, 1]
    x = nbgrad.tensor([1.0, 2.0, 2.0], requires_grad=True)
    u = nbgrad.unique(x)
    assert u.requires_grad and u.grad_fn.name() == "Unique2Backward0"
    with pytest.raises(NotImplementedError, match="derivative for '_unique2' is not implemented"):
        u.sum().backward()


@needs_torch
@pytest.mark.parametrize("descending", [False, True])
def test_random_ties_and_nans_match_torch(descending):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (5, 7)).astype(float)
    a[rng.random(a.shape) < 0.2] = NAN
    for dim in (0, 1):
        n = nbgrad.sort(nbgrad.tensor(a), dim=dim, descending=descending, stable=True)
        t = torch.sort(torch.tensor(a), dim=dim, descending=descending, stable=True)
        np.testing.assert_array_equal(n.indices.numpy(), t.indices.numpy())
        n = nbgrad.cummax(nbgrad.tensor(a), dim)
        t = torch.cummax(torch.tensor(a), dim)
        np.testing.assert_array_equal(n.indices.numpy(), t.indices.numpy())
        n = nbgrad.cummin(nbgrad.tensor(a), dim)
        t = torch.cummin(torch.tensor(a), dim)
        np.testing.assert_array_equal(n.indices.numpy(), t.indices.numpy())
