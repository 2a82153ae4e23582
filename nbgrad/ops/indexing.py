"""Indexing: __getitem__/__setitem__, gather, scatter, index_select, nonzero.

NOTE [linear-index backward]: every gather-like op's gradient is a scatter-add of the incoming
gradient into zeros at the *flat positions* the forward read.  Those positions are obtained by
applying the same indexing to ``arange(numel).reshape(shape)``, so one Numba kernel
(``scatter_add_flat_cpu``) serves advanced indexing, gather and index_select, and duplicates
accumulate correctly.
"""

import numbers

import numpy as np

from .. import dtypes as _dt
from .._tensor import Tensor, _wrap_dim
from ..autograd.batching import BATCH, batched, lead
from ..kernels.cpu import index as K
from .registry import FUNCTION, INPLACE, LINEAR, METHOD, internal_op, node_class, op, record

FM = (FUNCTION, METHOD)
CPU = {"cpu": K}

_make = Tensor._make


def _lin(shape):
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


# -- the one backward op: scatter-add at flat positions ---------------------------------------


def _take_lin_vjp(node, grads):
    (lin,) = node.attrs
    return (_take_lin(grads[0], lin),)


def _scatter_lin_vjp(node, grads):
    shape, lin = node.attrs
    return (_scatter_lin(grads[0], shape, lin),)


@internal_op("take_lin", "indexing", node="IndexBackward0", vjp=_scatter_lin_vjp)
def _take_lin(g, lin):
    """out = g.flatten()[lin] (differentiable; the adjoint of _scatter_lin)."""
    arr = np.ascontiguousarray(g._data).reshape(-1)[lin]
    return _take_lin.op.record(arr, (g,), attrs=(g._data.shape, lin))


@internal_op("scatter_lin", "indexing", node="IndexPutBackward0", vjp=_take_lin_vjp)
def _scatter_lin(g, shape, lin):
    arr = K.scatter_add(shape, g._data.dtype, lin, np.broadcast_to(g._data, lin.shape))
    return _scatter_lin.op.record(arr, (g,), attrs=(lin,))


# -- __getitem__ ---------------------------------------------------------------------------


def _normalize(idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    out, advanced = [], False
    for i in idx:
        if isinstance(i, Tensor) and i._data.ndim == 0 and i._dtype.is_integral:
            out.append(int(i._data))  # a 0-dim integer tensor indexes like an int
            continue
        if isinstance(i, Tensor):
            if i._dtype.is_inexact:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(i._data)
            advanced = True
        elif isinstance(i, (list, np.ndarray)):
            a = np.asarray(i)
            if a.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if a.dtype.kind not in "biu" and a.size:
                raise IndexError("too many indices")
            out.append(a.astype(np.int64) if a.dtype.kind in "iu" or a.size == 0 else a)
            advanced = True
        elif isinstance(i, (bool, np.bool_)):
            out.append(np.asarray(i))
            advanced = True
        elif isinstance(i, numbers.Integral):
            out.append(int(i))
        elif i is None or i is Ellipsis or isinstance(i, slice):
            if isinstance(i, slice) and i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(i)
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or "
                "byte Variables are valid indices (got %s)" % type(i).__name__
            )
    return tuple(out), advanced


def _check_ints(shape, idx):
    """Bounds-check integer and integer-array indices before numpy touches memory."""
    n_consumed = sum(
        1
        for i in idx
        if i is not None
        and i is not Ellipsis
        and not (isinstance(i, np.ndarray) and i.dtype == np.bool_)
        or (isinstance(i, np.ndarray) and i.dtype == np.bool_ and False)
    )
    bool_dims = sum(i.ndim for i in idx if isinstance(i, np.ndarray) and i.dtype == np.bool_)
    if n_consumed + bool_dims > len(shape):
        raise IndexError("too many indices for tensor of dimension %d" % len(shape))
    dim = 0
    for k, i in enumerate(idx):
        if i is Ellipsis:
            dim = len(shape) - sum(
                (x.ndim if isinstance(x, np.ndarray) and x.dtype == np.bool_ else 1)
                for x in idx[k + 1 :]
                if x is not None and x is not Ellipsis
            )
            continue
        if i is None:
            continue
        if isinstance(i, np.ndarray) and i.dtype == np.bool_:
            if i.ndim and i.shape != shape[dim : dim + i.ndim]:
                raise IndexError(
                    "The shape of the mask %s at index %d does not match the shape "
                    "of the indexed tensor %s at index %d"
                    % (list(i.shape), k, list(shape[dim : dim + i.ndim]), k)
                )
            dim += i.ndim
            continue
        if isinstance(i, int):
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(
                    "index %d is out of bounds for dimension %d with size %d" % (i, dim, shape[dim])
                )
        elif isinstance(i, np.ndarray):
            K.check_index(i, shape[dim], dim)
        dim += 1


def _basic_name(idx):
    for i in reversed(idx):
        if i is Ellipsis:
            continue
        if i is None:
            return "UnsqueezeBackward0"
        if isinstance(i, int):
            return "SelectBackward0"
        return "SliceBackward0"
    return "AliasBackward0"


@batched
def _basic_vjp(node, grads):
    shape, idx = node.attrs
    return (embed(grads[0], shape, idx),)


@batched
def _embed_vjp(node, grads):
    (idx,) = node.attrs
    return (basic_index(grads[0], (slice(None),) * BATCH.dims + idx),)


@internal_op("embed", "indexing", node="SliceBackwardBackward0", vjp=_embed_vjp)  # basic index vjp
def embed(g, shape, idx):
    """zeros(shape) with ``g`` written at basic index ``idx`` (adjoint of basic indexing)."""
    b = lead(g)
    arr = np.zeros(b + shape, g._data.dtype)
    idx = (slice(None),) * len(b) + idx
    arr[idx] = g._data
    return embed.op.record(arr, (g,), attrs=(idx,))


def basic_index(x, idx, name=None):
    """A view of ``x`` at basic index ``idx``: what ``x[idx]`` and ``narrow`` record."""
    return record(
        x._data[idx],
        node_class(name or _basic_name(idx)),
        (x,),
        _basic_vjp,
        view_of=x,
        attrs=(x._data.shape, idx),
    )


def _advanced_vjp(node, grads):
    shape, idx = node.attrs
    return (_scatter_lin(grads[0], shape, _lin(shape)[idx]),)


@op("getitem", "indexing", node="IndexBackward0", vjp=_advanced_vjp)  # Tensor.__getitem__
def getitem(x, idx):
    if x._data.ndim == 0 and not (
        idx is None
        or idx is Ellipsis
        or idx == ()
        or isinstance(idx, (Tensor, list, np.ndarray, bool))
        or (isinstance(idx, tuple) and all(i is None or i is Ellipsis for i in idx))
    ):
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
        )
    nidx, advanced = _normalize(idx)
    _check_ints(x._data.shape, nidx)
    if not advanced:
        return basic_index(x, nidx)
    arr = x._data[nidx]
    return getitem.op.record(np.ascontiguousarray(arr), (x,), attrs=(x._data.shape, nidx))


# -- __setitem__ (CopySlices) --------------------------------------------------------------


def _index_put_vjp(node, grads):
    idx, vshape = node.attrs
    g = grads[0]
    gi = None
    if node.next_functions[0][0] is not None:
        gi = index_put(g, idx, 0.0)
    gv = None
    if node.next_functions[1][0] is not None:
        gv = getitem(g, idx)
        if gv._data.shape != vshape:
            gv = gv.sum_to_size(vshape)
    return (gi, gv)


@op("setitem", "indexing", node="torch::autograd::CopySlices", vjp=_index_put_vjp, jvp=LINEAR)
def index_put(x, idx, value):
    """Out of place: a copy of ``x`` with ``x[idx] = value`` (the body of __setitem__)."""
    nidx, _ = _normalize(idx)
    _check_ints(x._data.shape, nidx)
    arr = x._data.copy()
    if isinstance(value, Tensor):
        v = value._data
        vt = value
    else:
        v = value
        vt = None
    try:
        arr[nidx] = v
    except ValueError:
        tgt = list(x._data[nidx].shape)
        src = list(np.shape(v))
        n = max(len(tgt), len(src))
        pt, ps = [1] * (n - len(tgt)) + tgt, [1] * (n - len(src)) + src
        dim = next((k for k in range(n) if ps[k] != pt[k] and ps[k] != 1), 0)
        raise RuntimeError(
            "The expanded size of the tensor (%d) must match the existing size "
            "(%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
            "sizes: %s" % (pt[dim], ps[dim], dim, tgt, src)
        ) from None
    vshape = vt._data.shape if vt is not None else ()
    return index_put.op.record(arr, (x, vt), attrs=(nidx, vshape))


# -- gather / scatter / index_select ------------------------------------------------------


def _check_index_tensor(index, fn):
    if not isinstance(index, Tensor) or index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("%s(): Expected dtype int64 for index" % fn)


def _gather_lin(shape, dim, index):
    sl = tuple(slice(None) if k == dim else slice(0, n) for k, n in enumerate(index._data.shape))
    return np.take_along_axis(_lin(shape)[sl], index._data.astype(np.int64), dim)


def _clone_vjp(node, grads):
    return (grads[0],)


def _gather_vjp(node, grads):
    shape, dim, index = node.attrs
    return (_scatter_lin(grads[0], shape, _gather_lin(shape, dim, index)),)


@op(
    "gather",
    "indexing",
    node={"nd": "GatherBackward0", "0d": "GatherBackward0"},
    vjp={"nd": _gather_vjp, "0d": _clone_vjp},
    variants=FM,
    kernels=CPU,
)
def gather(input, dim, index, *, sparse_grad=False):
    _check_index_tensor(index, "gather")
    d = _wrap_dim(dim, input._data.ndim)
    if index._data.ndim != input._data.ndim and input._data.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(index._data.ndim):
        if k != d and index._data.shape[k] > input._data.shape[k]:
            raise RuntimeError(
                "Size does not match at dimension %d expected index %s to be "
                "smaller than self %s apart from dimension %d"
                % (k, list(index._data.shape), list(input._data.shape), d)
            )
    K.check_index(index._data, input._data.shape[d] if input._data.ndim else 1, d)
    if input._data.ndim == 0:
        return gather.op.record(input._data.copy(), (input,), overload="0d")
    sl = tuple(slice(0, n) for n in index._data.shape)
    sl = tuple(slice(None) if k == d else s for k, s in enumerate(sl))
    arr = np.take_along_axis(input._data[sl], index._data.astype(np.int64), d)
    return gather.op.record(arr, (input,), overload="nd", attrs=(input._data.shape, d, index))


def _scatter_vjp(node, grads):
    dim, index, add = node.attrs
    g = grads[0]
    gi = None
    if node.next_functions[0][0] is not None:
        gi = g if add else scatter(g, dim, index, 0.0)
    if len(node.next_functions) == 1:
        return (gi,)
    gs = gather(g, dim, index) if node.next_functions[1][0] is not None else None
    return (gi, gs)


def _scatter_impl(input, dim, index, src, add, opdef):
    _check_index_tensor(index, "scatter")
    d = _wrap_dim(dim, input._data.ndim)
    K.check_index(index._data, input._data.shape[d], d)
    if isinstance(src, Tensor):
        for k in range(index._data.ndim):
            if index._data.shape[k] > src._data.shape[k]:
                raise RuntimeError(
                    "Expected index %s to be smaller than self %s apart from "
                    "dimension %d and to be smaller size than src %s"
                    % (list(index._data.shape), list(input._data.shape), d, list(src._data.shape))
                )
        sl = tuple(slice(0, n) for n in index._data.shape)
        vals = src._data[sl].astype(input._data.dtype)
    else:
        vals = np.full(index._data.shape, src, input._data.dtype)
    lin = _gather_lin(input._data.shape, d, index).reshape(-1)
    out = input._data.copy()
    flat = out.reshape(-1)
    if add:
        K.scatter_add_flat_cpu(flat, lin, np.ascontiguousarray(vals).reshape(-1))
    else:
        K.scatter_flat_cpu(flat, lin, np.ascontiguousarray(vals).reshape(-1))
    if isinstance(src, Tensor):
        return opdef.record(out, (input, src), overload="src", attrs=(d, index, add))
    return opdef.record(out, (input,), overload="value", attrs=(d, index, add))


@op(
    "scatter",
    "indexing",
    node={"src": "ScatterBackward0", "value": "ScatterBackward1"},
    vjp=_scatter_vjp,
    variants=(FUNCTION, METHOD, INPLACE),
    kernels=CPU,
)
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    if reduce is not None:
        if reduce != "add":
            raise RuntimeError(
                "reduce argument must be either add or multiply."
                if reduce != "multiply"
                else "scatter(reduce='multiply') is not supported"
            )
        return scatter_add(input, dim, index, src)
    if src is None:
        src = value
    return _scatter_impl(input, dim, index, src, False, scatter.op)


@op(
    "scatter_add",
    "indexing",
    node={"src": "ScatterAddBackward0", "value": "ScatterAddBackward0"},
    vjp=_scatter_vjp,
    variants=(FUNCTION, METHOD, INPLACE),
    kernels=CPU,
)
def scatter_add(input, dim, index, src):
    return _scatter_impl(input, dim, index, src, True, scatter_add.op)


def _index_select_vjp(node, grads):
    shape, dim, index = node.attrs
    lin = np.take(_lin(shape), index, axis=dim)
    return (_scatter_lin(grads[0], shape, lin),)


@op(
    "index_select",
    "indexing",
    node="IndexSelectBackward0",
    vjp=_index_select_vjp,
    variants=FM,
    kernels=CPU,
)
def index_select(input, dim, index):
    if not isinstance(index, Tensor) or not index._dtype.is_integral:
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _wrap_dim(dim, input._data.ndim)
    idx = index._data.reshape(-1).astype(np.int64)
    K.check_index(idx, input._data.shape[d], d)
    idx = np.where(idx < 0, idx + input._data.shape[d], idx)
    return index_select.op.record(
        np.take(input._data, idx, axis=d), (input,), attrs=(input._data.shape, d, idx)
    )


@op("nonzero", "indexing", variants=FM)
def nonzero(input, *, as_tuple=False):
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(_make(a.astype(np.int64)) for a in nz)
    return _make(np.stack(nz, axis=1).astype(np.int64) if nz else np.zeros((0, 0), np.int64))


def _masked_select_vjp(node, grads):
    shape, lin = node.attrs  # broadcast shape: the engine sums the gradient to the input's
    return (_scatter_lin(grads[0], shape, lin),)


@op("masked_select", "indexing", node="MaskedSelectBackward0", vjp=_masked_select_vjp, variants=FM)
def masked_select(input, mask):
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    m = np.broadcast_to(mask._data, shape)
    arr = np.broadcast_to(input._data, shape)[m]
    return masked_select.op.record(arr, (input,), attrs=(shape, _lin(shape)[m]))
