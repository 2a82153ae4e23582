"""Indexing and sorting ops on CUDA tensors against the CPU (kernels/cuda/gatherlin.py): the
advanced-indexing forms the op table does not reach, the sort order of NaNs, ties and -0.0, and
unique over dims -- values and indices equal to the CPU's, and the same errors."""

import numpy as np
import pytest

import nbgrad as T


def _eq(cpu, gpu):
    assert gpu.is_cuda
    a, b = cpu.detach().numpy(), gpu.detach().cpu().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((4, 5, 6))
_I = [0, 2, -1]
_M = _RNG.random((4, 5)) > 0.5
_M6 = _RNG.random(6) > 0.5

INDEXES = {
    "first": lambda i, m, m6: i,
    "middle": lambda i, m, m6: (slice(None), i),
    "split": lambda i, m, m6: (i, slice(None), i),
    "mask": lambda i, m, m6: m,
    "ellipsis_mask": lambda i, m, m6: (Ellipsis, m6),
    "new_axis_step_list": lambda i, m, m6: (None, i, slice(1, 4, 2), [1, 2, 3]),
    "bool_list": lambda i, m, m6: [True, False, True, True],
    "int_then_index": lambda i, m, m6: (1, slice(None), i),
    "broadcast": lambda i, m, m6: (i[:, None], slice(None), i[None, :]),
}


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_advanced_getitem_and_its_gradient(name):
    f = INDEXES[name]
    x = T.tensor(_X, requires_grad=True)
    xc = x.detach().cuda().requires_grad_(True)
    i, m, m6 = T.tensor(_I), T.tensor(_M), T.tensor(_M6)
    a = x[f(i, m, m6)]
    b = xc[f(i.cuda(), m.cuda(), m6.cuda())]
    _eq(a, b)
    w = _RNG.standard_normal(tuple(a.shape))
    (ga,) = T.autograd.grad((a * T.tensor(w)).sum(), [x])
    (gb,) = T.autograd.grad((b * T.tensor(w).cuda()).sum(), [xc])
    np.testing.assert_allclose(gb.cpu().numpy(), ga.numpy())


def test_cpu_index_for_a_cuda_tensor_and_bounds():
    x = T.tensor(_X)
    _eq(x[T.tensor(_I)], x.cuda()[T.tensor(_I)])  # PyTorch accepts CPU indices too
    for t in (x, x.cuda()):
        with pytest.raises(
            IndexError, match="index 9 is out of bounds for dimension 0 with size 4"
        ):
            t[T.tensor([9]).to(t.device)]
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 5"):
        T.gather(x.cuda(), 1, T.tensor([[[7]]]).cuda())
    with pytest.raises(RuntimeError, match="same device"):
        T.gather(x.cuda(), 1, T.tensor([[[0]]]))


def _sorted_input():
    a = np.random.default_rng(1).integers(0, 4, (5, 13)).astype(np.float64)
    a[0, 3] = np.nan
    a[2, [1, 5]] = np.nan
    a[3, 0] = -0.0
    return T.tensor(a)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_topk_ties_and_nans(dim, descending):
    x = _sorted_input()
    xc = x.cuda()
    for r, rc in (
        (T.sort(x, dim, descending), T.sort(xc, dim, descending)),
        (T.topk(x, 3, dim, largest=descending), T.topk(xc, 3, dim, largest=descending)),
        (T.kthvalue(x, 3, dim), T.kthvalue(xc, 3, dim)),
        (T.kthvalue(x, 5, dim, True), T.kthvalue(xc, 5, dim, True)),
    ):
        np.testing.assert_array_equal(rc.values.cpu().numpy(), r.values.numpy())
        _eq(r.indices, rc.indices)
    _eq(T.argsort(x, dim, descending), T.argsort(xc, dim, descending))


@pytest.mark.parametrize("dim", [None, 0, 1])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_unique(dim, dtype):
    x = _sorted_input() if dtype == "float64" else T.tensor(np.arange(24).reshape(4, 6) % 3)
    r = T.unique(x, return_inverse=True, return_counts=True, dim=dim)
    rc = T.unique(x.cuda(), return_inverse=True, return_counts=True, dim=dim)
    for a, b in zip(r, rc):
        np.testing.assert_array_equal(b.cpu().numpy(), a.numpy())


@pytest.mark.parametrize("n", [0, 1, 37, 777])
def test_nonzero_masked_select_long(n):
    rng = np.random.default_rng(n)
    m = T.tensor(rng.random(n) > 0.3)
    v = T.tensor(rng.standard_normal(n))
    _eq(T.nonzero(m), T.nonzero(m.cuda()))
    if n:  # PyTorch's column-major result
        assert T.nonzero(m.cuda()).stride() == T.nonzero(m).stride()
    _eq(T.masked_select(v, m), T.masked_select(v.cuda(), m.cuda()))
    _eq(T.sort(v).values, T.sort(v.cuda()).values)
