"""Sorting and scans: sort argsort msort topk kthvalue cummax cummin unique.

Orders are PyTorch's: ascending puts NaN last and descending first, ties keep their input order
(a stable sort, which is what PyTorch's CPU sort returns).  The gradient of a selection (sorted
values, top k, k-th value, running extremes) goes back to the selected positions: a
differentiable scatter of the gradient into zeros, so double backward works.
"""

import collections

import numpy as np

from .._devarray import DeviceArray
from .._tensor import Tensor, _wrap_dim
from ..creation import zeros
from ..kernels.cpu import sort as K
from .cuda import kernel_for, xp_of
from .registry import FUNCTION, METHOD, op, result

FM = (FUNCTION, METHOD)
_make = Tensor._make


def _return_type(name, *fields):
    t = collections.namedtuple(name, fields)
    t.__module__ = "torch.return_types"
    return t


sort_result = _return_type("sort", "values", "indices")
topk_result = _return_type("topk", "values", "indices")
kthvalue_result = _return_type("kthvalue", "values", "indices")
cummax_result = _return_type("cummax", "values", "indices")
cummin_result = _return_type("cummin", "values", "indices")


def _rows(a, d):
    """``a`` with dim ``d`` moved last, as C-contiguous (m, n) rows (0-d: one row of one)."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    xp = xp_of(a)
    moved = xp.moveaxis(a, d, -1)
    m = 1
    for k, n in enumerate(a.shape):
        if k != d:
            m *= n
    return xp.ascontiguousarray(moved).reshape(m, a.shape[d])


def _unrows(r, shape, d, n=None):
    """Back from rows to ``shape`` with dim ``d`` of length ``n`` (default: unchanged)."""
    if not shape:
        return r.reshape(())
    moved = [s for k, s in enumerate(shape) if k != d] + [shape[d] if n is None else n]
    xp = xp_of(r)
    return xp.ascontiguousarray(xp.moveaxis(r.reshape(moved), -1, d))


def _cu():
    from ..kernels.cuda import gatherlin  # lazy: the CUDA path loads on first use

    return gatherlin


def _wrap(a):
    from ..kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use

    return wrap(a)


def _take(rows, idx):
    """``take_along_axis(rows, idx, 1)`` for (m, n) rows on either device."""
    if type(rows) is DeviceArray:
        return _wrap(_cu().take_rows(rows.dense(), idx.contiguous().dense()))
    return np.take_along_axis(rows, idx, 1)


def _stable_argsort(rows, descending):
    if type(rows) is DeviceArray:  # a stable merge sort per row on the device
        m, n = rows.shape
        return _wrap(_cu().argsort_rows(rows.dense().reshape(m, n, 1), descending))
    if descending:  # stable descending = reversed stable ascending of the reversal
        n = rows.shape[1]
        return n - 1 - np.argsort(rows[:, ::-1], axis=1, kind="stable")[:, ::-1]
    return np.argsort(rows, axis=1, kind="stable")


def _select_vjp(node, grads):
    """Gradient of values gathered at ``indices`` along ``dim``: scattered back (summed where
    one position was selected several times, as by cummax)."""
    shape, dim = node.attrs
    idx = node.unpack("indices")
    g = grads[0]
    if not shape:
        return (g,)
    return (zeros(*shape, dtype=g.dtype, device=g.device).scatter_add(dim, idx, g),)


def _check_dim(x, dim):
    return _wrap_dim(dim, max(x._data.ndim, 1))


@op(
    "sort",
    "sorting",
    node={False: "SortBackward0", True: "SortBackward1"},
    vjp=_select_vjp,
    saves=(),
    variants=FM,
)
def sort(input, dim=-1, descending=False, *, stable=False):
    d = _check_dim(input, dim)
    rows = _rows(input._data, d)
    idx = _stable_argsort(rows, descending)
    vals = _take(rows, idx)
    shape = input._data.shape
    indices = _make(_unrows(idx, shape, d))
    values = sort.op.record(
        _unrows(vals, shape, d),
        (input,),
        overload=bool(stable),
        attrs=(shape, d),
        saved={"indices": indices},
    )
    return sort_result(values, indices)


@op("argsort", "sorting", variants=FM)
def argsort(input, dim=-1, descending=False, *, stable=False):
    d = _check_dim(input, dim)
    return _make(_unrows(_stable_argsort(_rows(input._data, d), descending), input._data.shape, d))


@op("msort", "sorting", variants=FM)
def msort(input):
    return sort(input, 0).values


@op("topk", "sorting", node="TopkBackward0", vjp=_select_vjp, saves=(), variants=FM)
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _check_dim(input, dim)
    shape = input._data.shape
    n = shape[d] if shape else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    rows = _rows(input._data, d)
    idx = _stable_argsort(rows, largest)[:, :k]
    vals = _take(rows, idx)
    if type(idx) is DeviceArray:
        idx = idx.contiguous()
    indices = _make(_unrows(idx, shape, d, k))
    values = topk.op.record(
        _unrows(vals, shape, d, k), (input,), attrs=(shape, d), saved={"indices": indices}
    )
    return topk_result(values, indices)


def _kth_vjp(node, grads):
    shape, dim, keepdim = node.attrs
    idx, g = node.unpack("indices"), grads[0]
    if not shape:
        return (g,)
    if not keepdim:
        idx, g = idx.unsqueeze(dim), g.unsqueeze(dim)
    return (zeros(*shape, dtype=g.dtype, device=g.device).scatter(dim, idx, g),)


@op("kthvalue", "sorting", node="KthvalueBackward0", vjp=_kth_vjp, saves=(), variants=FM)
def kthvalue(input, k, dim=-1, keepdim=False):
    d = _check_dim(input, dim)
    shape = input._data.shape
    n = shape[d] if shape else 1
    if not 1 <= k <= n:
        raise RuntimeError("kthvalue(): selected number k out of range for dimension %d" % d)
    rows = _rows(input._data, d)
    kth = _take(rows, _stable_argsort(rows, False)[:, k - 1 : k])
    # among equal values, the first position (what PyTorch's selection returns)
    if type(rows) is DeviceArray:
        idx = _wrap(_cu().first_equal(rows.dense(), kth.dense()))
    else:
        idx = np.argmax((rows == kth) | ((kth != kth) & (rows != rows)), axis=1)[:, None]
    values, indices = _unrows(kth, shape, d, 1), _unrows(idx, shape, d, 1)
    if not keepdim and shape:
        kept = shape[:d] + shape[d + 1 :]
        values, indices = values.reshape(kept), indices.reshape(kept)
    xp = xp_of(values)
    indices = _make(xp.ascontiguousarray(indices))
    values = kthvalue.op.record(
        xp.ascontiguousarray(values),
        (input,),
        attrs=(shape, d, keepdim),
        saved={"indices": indices},
    )
    return kthvalue_result(values, indices)


def _cumextreme(input, dim, take_max, opdef, result):
    d = _check_dim(input, dim)
    shape = input._data.shape
    rows = _rows(input._data, d)
    xp = xp_of(rows)
    values, indices = xp.empty_like(rows), xp.empty(rows.shape, np.int64)
    if rows.size:
        kernel_for(rows, K.cumextreme_rows_cpu)(rows, values, indices, take_max)
    indices = _make(_unrows(indices, shape, d))
    values = opdef.record(
        _unrows(values, shape, d), (input,), attrs=(shape, d), saved={"indices": indices}
    )
    return result(values, indices)


@op(
    "cummax",
    "sorting",
    node="CummaxBackward0",
    vjp=_select_vjp,
    saves=(),
    variants=FM,
    kernels={"cpu": K},
)
def cummax(input, dim):
    return _cummax_impl(input, dim, True)


@op(
    "cummin",
    "sorting",
    node="CumminBackward0",
    vjp=_select_vjp,
    saves=(),
    variants=FM,
    kernels={"cpu": K},
)
def cummin(input, dim):
    return _cummax_impl(input, dim, False)


def _cummax_impl(input, dim, take_max):
    if take_max:
        return _cumextreme(input, dim, True, cummax.op, cummax_result)
    return _cumextreme(input, dim, False, cummin.op, cummin_result)


def _unique_vjp(node, grads):
    raise NotImplementedError("the derivative for '_unique2' is not implemented.")


@op("unique", "sorting", variants=FM)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    a = input._data
    if type(a) is DeviceArray:
        u, inv, counts = _unique_cuda(a, dim)
    elif dim is None:
        u, inv, counts = np.unique(a, return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = _wrap_dim(dim, a.ndim)
        u, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    # no derivative, but a requires-grad input gets PyTorch's node, whose backward raises
    out = result(xp_of(u).ascontiguousarray(u), "Unique2Backward0", (input,), _unique_vjp)
    extra = []
    if return_inverse:
        extra.append(_make(inv.astype(np.int64, copy=False)))
    if return_counts:
        extra.append(_make(counts.astype(np.int64, copy=False)))
    return (out, *extra) if extra else out


def _unique_cuda(a, dim):
    """``np.unique(a, return_inverse=True, return_counts=True[, axis=dim])`` on the device: a
    stable sort of the items (scalars, or the slices along ``dim`` compared lexicographically),
    run starts flagged, a running count of them numbering the runs, then the starts compacted
    (NaNs are one value, as numpy's ``equal_nan``)."""
    from .cuda import index as ci  # lazy: the CUDA path loads on first use

    G = _cu()
    if dim is None:
        items = a.contiguous().reshape(a.size, 1)
        rest = ()
    else:
        d = _wrap_dim(dim, a.ndim)
        moved = xp_of(a).ascontiguousarray(xp_of(a).moveaxis(a, d, 0))
        rest = moved.shape[1:]
        items = moved.reshape(moved.shape[0], -1)
    n, L = items.shape
    perm = G.argsort_rows(items.dense().reshape(1, n, L), False)[0]
    sel = ci.select_lin(_wrap(perm), (n, L), 0)
    keys = ci.take_flat(items, sel)  # the sorted items, (n, L)
    flags = G.run_flags(keys.dense())
    starts = G.compact(flags)
    group = G.count_scan(flags)
    inv, counts = G.inverse_counts(perm, group, starts, n)
    u = ci.take_flat(keys, ci.select_lin(_wrap(starts), (n, L), 0))
    if dim is None:
        return u.reshape(u.size), _wrap(inv).reshape(a.shape), _wrap(counts)
    u = u.reshape((starts.shape[0],) + rest)
    return xp_of(u).moveaxis(u, 0, d), _wrap(inv), _wrap(counts)
