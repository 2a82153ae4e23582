"""Indexing: __getitem__/__setitem__, gather, scatter, index_select, nonzero.

NOTE [linear-index backward]: every gather-like op's gradient is a scatter-add of the incoming
gradient into zeros at the *flat positions* the forward read.  Those positions are obtained by
applying the same indexing to ``arange(numel).reshape(shape)``, so one Numba kernel
(``scatter_add_flat_cpu``, bounds-checked) serves advanced indexing, gather and index_select,
and duplicates accumulate correctly.  The indices themselves are saved tensors: NOTE [saved
indices] below.
"""

import numbers
import warnings

import numpy as np

from .. import dtypes as _dt
from .._devarray import DeviceArray
from .._tensor import Tensor, _wrap_dim
from ..autograd.batching import BATCH, batched, lead
from ..creation import _alloc
from ..kernels.cpu import index as K
from .dispatch import broadcast_error, iter_perm, with_perm
from .registry import FUNCTION, INPLACE, METHOD, internal_op, node_class, op, record

FM = (FUNCTION, METHOD)
CPU = {"cpu": K}

_make = Tensor._make
_ARR = (np.ndarray, DeviceArray)  # an index array on either device


def _cu():
    from .cuda import index  # lazy: the CUDA path loads on first use

    return index


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
    if type(g._data) is DeviceArray:
        arr = _cu().take_flat(g._data, lin)
    else:
        arr = np.ascontiguousarray(g._data).reshape(-1)[lin]
    return _take_lin.op.record(arr, (g,), attrs=(g._data.shape, lin))


@internal_op("scatter_lin", "indexing", node="IndexPutBackward0", vjp=_take_lin_vjp)
def _scatter_lin(g, shape, lin):
    if type(g._data) is DeviceArray:
        arr = _cu().scatter_add(shape, g._data.dtype, lin, g._data)
    else:
        arr = K.scatter_add(shape, g._data.dtype, lin, np.broadcast_to(g._data, lin.shape))
    return _scatter_lin.op.record(arr, (g,), attrs=(lin,))


# -- __getitem__ ---------------------------------------------------------------------------

# NOTE [saved indices]: an op that indexes with a tensor saves that tensor (a SavedTensor:
# version-checked on unpack, freed after a non-retained backward, so a second backward raises as
# in PyTorch) and its backward reads the tensor's *current* values, bounds-checked again: a
# change through ``.data`` bumps no version, and PyTorch's backward then uses (or rejects) the
# new values.  Lists and numpy arrays are copied at the forward, as PyTorch converts them.

_INDEX_DTYPES = ("int64", "int32", "uint8", "bool")
_BAD_INDEX = "tensors used as indices must be long, int, byte or bool tensors"


def _normalize(idx):
    """``idx`` as a tuple of ints, slices, None, Ellipsis, index arrays (lists and numpy arrays,
    copied) and index Tensors (kept: they are saved); ``advanced``: any array or Tensor."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out, advanced = [], False
    for i in idx:
        if isinstance(i, Tensor):
            if i._data.ndim == 0 and i._dtype.is_integral and i._dtype.name != "uint8":
                a = i._data  # a 0-dim integer tensor indexes like an int
                out.append(int(a if type(a) is not DeviceArray else a.to_host()))
                continue
            if i._dtype.name not in _INDEX_DTYPES:
                raise IndexError(_BAD_INDEX)
            if i._dtype.name == "uint8":
                warnings.warn(
                    "indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                    "torch.bool instead.",
                    UserWarning,
                    stacklevel=4,
                )
            out.append(i)
            advanced = True
        elif isinstance(i, (list, np.ndarray)):
            a = np.asarray(i)
            if a.dtype.kind == "f":
                raise IndexError(_BAD_INDEX)
            if a.dtype.kind not in "biu" and a.size:
                raise IndexError("too many indices")
            out.append(a.astype(np.int64) if a.dtype.kind in "iu" or a.size == 0 else a.copy())
            advanced = True
        elif isinstance(i, (bool, np.bool_)):
            out.append(np.asarray(i))
            advanced = True
        elif isinstance(i, numbers.Integral):
            i = int(i)
            if not -(2**63) <= i < 2**63:
                raise ValueError("Overflow when unpacking long long")
            out.append(i)
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


def _as_index(a):
    """An index array as numpy uses it: byte masks become boolean masks."""
    return a.astype(np.bool_) if a.dtype == np.uint8 else a


def _arrays(nidx):
    """``nidx`` with every index Tensor replaced by its (current) array."""
    return tuple(_as_index(i._data) if isinstance(i, Tensor) else i for i in nidx)


def _split_saved(nidx):
    """What an advanced-indexing node saves: each index array or Tensor under a key, and under
    "idx" the index with those replaced by their keys (strs, which no index component can be).
    The node then always holds saved values, so a second backward through it raises."""
    tmpl, saved = [], {}
    for k, i in enumerate(nidx):
        if isinstance(i, (Tensor, np.ndarray)):
            key = "i%d" % k
            saved[key] = i
            tmpl.append(key)
        else:
            tmpl.append(i)
    saved["idx"] = tuple(tmpl)
    return saved


def _saved_index(node, shape):
    """The index arrays of an indexing node, read now (version-checked) and bounds-checked."""
    tmpl = node.saved["idx"]
    idx = tuple(_as_index(node.array(i)) if isinstance(i, str) else i for i in tmpl)
    for i in idx:
        if isinstance(i, _ARR) and i.dtype.kind not in "biu":
            raise IndexError(_BAD_INDEX)
    _check_ints(shape, idx)
    return idx


def _is_mask(i):
    return isinstance(i, _ARR) and i.dtype == np.bool_


def _check_ints(shape, idx):
    """Bounds-check integer and integer-array indices before numpy touches memory, with
    PyTorch's messages: an index array's dimension is its rank among the advanced indices, and
    a mask is reported against the tensor as basic indexing leaves it (ints dropped, None
    added, slices applied)."""
    n = len(shape)
    if sum(i.ndim if _is_mask(i) else 1 for i in idx if i is not None and i is not Ellipsis) > n:
        raise IndexError("too many indices for tensor of dimension %d" % n)
    dim = 0
    shapes = []  # of the advanced indices, as PyTorch reports them (a mask: one per dim)
    for k, i in enumerate(idx):
        if i is Ellipsis:
            dim = n - sum(
                x.ndim if _is_mask(x) else 1
                for x in idx[k + 1 :]
                if x is not None and x is not Ellipsis
            )
            continue
        if i is None:
            continue
        if _is_mask(i):
            if i.ndim and i.shape != shape[dim : dim + i.ndim]:
                sliced = _sliced_shape(shape, idx)
                pos = _sliced_pos(shape, idx, k)
                j = next(j for j in range(i.ndim) if i.shape[j] != shape[dim + j])
                raise IndexError(
                    "The shape of the mask %s at index %d does not match the shape "
                    "of the indexed tensor %s at index %d" % (list(i.shape), j, sliced, pos + j)
                )
            nz = np.count_nonzero(i) if type(i) is not DeviceArray else _cu().count_nonzero(i)
            shapes += [(int(nz),)] * max(i.ndim, 1)
            dim += i.ndim
            continue
        if isinstance(i, int):
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(
                    "index %d is out of bounds for dimension %d with size %d" % (i, dim, shape[dim])
                )
        elif isinstance(i, _ARR):
            if type(i) is DeviceArray:
                _cu().check_index(i, shape[dim], len(shapes))
            else:
                K.check_index(i, shape[dim], len(shapes))
            shapes.append(i.shape)
        dim += 1
    if len(shapes) > 1:
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError(
                "shape mismatch: indexing tensors could not be broadcast together with shapes "
                + ", ".join(str(list(s)) for s in shapes)
            ) from None


def _walk(shape, idx):
    """(position in idx, sizes it leaves after basic indexing) for each index component."""
    n = len(shape)
    dim = 0
    for k, i in enumerate(idx):
        if i is Ellipsis:
            rest = sum(
                x.ndim if _is_mask(x) else 1
                for x in idx[k + 1 :]
                if x is not None and x is not Ellipsis
            )
            yield k, list(shape[dim : n - rest])
            dim = n - rest
        elif i is None:
            yield k, [1]
        elif isinstance(i, int):
            yield k, []
            dim += 1
        elif isinstance(i, slice):
            yield k, [len(range(*i.indices(shape[dim])))]
            dim += 1
        else:
            m = i.ndim if _is_mask(i) else 1
            yield k, list(shape[dim : dim + m])
            dim += m
    yield len(idx), list(shape[dim:])


def _sliced_shape(shape, idx):
    return [s for _, sizes in _walk(shape, idx) for s in sizes]


def _sliced_pos(shape, idx, k):
    return sum(len(sizes) for j, sizes in _walk(shape, idx) if j < k)


def _basic_name(idx, shape):
    """PyTorch's node for a basic index: that of the last component that does something (a
    slice ``start in (None, 0), stop None or >= size, step in (None, 1)`` is skipped, as
    PyTorch's applySlice returns ``self`` for it); nothing left: AliasBackward0."""
    n, dim, dims = len(shape), 0, []
    for k, i in enumerate(idx):
        if i is Ellipsis:
            dim = n - sum(1 for x in idx[k + 1 :] if x is not None and x is not Ellipsis)
        dims.append(dim)
        if i is not None and i is not Ellipsis:
            dim += 1
    for i, d in zip(reversed(idx), reversed(dims)):
        if i is Ellipsis:
            continue
        if i is None:
            return "UnsqueezeBackward0"
        if isinstance(i, int):
            return "SelectBackward0"
        if (
            i.step in (None, 1)
            and (i.start is None or i.start == 0)
            and (i.stop is None or i.stop >= shape[d])
        ):
            continue
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
    if type(g._data) is DeviceArray:
        from .cuda import xp  # lazy: the CUDA path loads on first use

        arr = xp.zeros(b + shape, g._data.dtype)
    else:
        arr = np.zeros(b + shape, g._data.dtype)
    idx = (slice(None),) * len(b) + idx
    arr[idx] = g._data
    return embed.op.record(arr, (g,), attrs=(idx,))


def basic_index(x, idx, name=None):
    """A view of ``x`` at basic index ``idx``: what ``x[idx]`` and ``narrow`` record.  An index
    of integers alone gets a trailing Ellipsis, so numpy returns a 0-d view (not a scalar copy)
    through which in-place ops write ``x``."""
    a = x._data
    v = a[idx] if Ellipsis in idx else a[idx + (Ellipsis,)]
    return record(
        v,
        node_class(name or _basic_name(idx, a.shape)),
        (x,),
        _basic_vjp,
        view_of=x,
        attrs=(a.shape, idx),
    )


def _shape_mismatch(vshape, ishape):
    return RuntimeError(
        "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
        "shape %s" % (list(vshape), list(ishape))
    )


def _broadcasts(vshape, ishape):
    try:
        return np.broadcast_shapes(vshape, ishape) == tuple(ishape)
    except ValueError:
        return False


def _advanced_vjp(node, grads):
    (shape,) = node.attrs
    idx = _saved_index(node, shape)
    if type(grads[0]._data) is DeviceArray:
        lin = _cu().adv_lin(shape, idx)
    else:
        lin = _lin(shape)[idx]
    g = grads[0]
    if g._data.shape != lin.shape and not _broadcasts(g._data.shape, lin.shape):
        raise _shape_mismatch(g._data.shape, lin.shape)  # a mask changed through .data
    return (_scatter_lin(g, shape, lin),)


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
    arrs = _arrays(nidx)
    _check_ints(x._data.shape, arrs)
    if not advanced:  # a bare slice is never skipped (PyTorch's single-slice fast path)
        return basic_index(x, nidx, "SliceBackward0" if type(idx) is slice else None)
    split = _views_first(nidx)
    if split is not None:
        return getitem(basic_index(x, split[0]), split[1])
    if type(x._data) is DeviceArray:
        cu = _cu()
        arr = cu.take_flat(x._data.contiguous(), cu.adv_lin(x._data.shape, arrs))
        return getitem.op.record(arr, (x,), attrs=(x._data.shape,), saved=_split_saved(nidx))
    arr = x._data[arrs]
    return getitem.op.record(
        _index_layout(arr, x._data, arrs), (x,), attrs=(x._data.shape,), saved=_split_saved(nidx)
    )


def _views_first(nidx):
    """PyTorch applies the integers of an index as ``select`` views before the advanced
    indices (numpy makes them advanced indices, which moves the result's dims:
    ``x[0, :, [1, 0]]`` is (3, 2) in PyTorch, (2, 3) in numpy): (the basic index, the rest)
    when ``nidx`` mixes integers and index arrays, else None."""
    if not any(type(i) is int for i in nidx):
        return None
    basic, rest = [], []
    for i in nidx:
        if type(i) is int:
            basic.append(i)
        elif i is Ellipsis:
            basic.append(i)
            rest.append(i)
        elif i is None or isinstance(i, slice):
            basic.append(i)
            rest.append(slice(None))
        else:
            a = i._data if isinstance(i, Tensor) else i
            if a.ndim == 0:  # a 0-d mask adds a dim: keep numpy's reading
                return None
            basic.extend([slice(None)] * (a.ndim if _is_mask(_as_index(a)) else 1))
            rest.append(i)
    return tuple(basic), tuple(rest)


def _index_layout(arr, src, arrs):
    """The advanced-indexing result ``arr = src[arrs]`` (no integers in ``arrs``) in
    PyTorch's layout: TensorIterator over the source restrided to the result (0 strides on the
    indexed dims; indexed dims moved to the front when not adjacent) and the broadcast index
    tensors.  C order when every operand is C-contiguous."""
    idx = [a for a in arrs if isinstance(a, np.ndarray)]
    if src.flags.c_contiguous and all(a.flags.c_contiguous or a.ndim < 2 for a in idx):
        return np.ascontiguousarray(arr)
    if any(a.ndim == 0 for a in idx) or arr.ndim < 2:
        return np.ascontiguousarray(arr)
    view, pos, k = [], [], 0  # the basic part as a view of src; each index's dims in it
    n_rest = sum(a.ndim if _is_mask(a) else 1 for a in idx) + sum(
        1 for i in arrs if isinstance(i, slice)
    )
    for i in arrs:
        if isinstance(i, np.ndarray):
            m = i.ndim if _is_mask(i) else 1
            view.extend([slice(None)] * m)
            pos.extend(range(k, k + m))
            k += m
        elif i is Ellipsis:
            view.append(i)
            k += src.ndim - n_rest
        else:
            view.append(i)
            k += 1
    v = src[tuple(view)]
    ints = []
    for a in idx:
        ints.extend(np.nonzero(a) if _is_mask(a) else (a,))
    b = np.broadcast_shapes(*[a.shape for a in ints])
    if pos != list(range(pos[0], pos[0] + len(pos))):  # not adjacent: to the front
        v = v.transpose(pos + [d for d in range(v.ndim) if d not in pos])
        pos = list(range(len(pos)))
    before, after = pos[0], pos[-1] + 1
    shape = v.shape[:before] + b + v.shape[after:]
    if shape != arr.shape:
        return np.ascontiguousarray(arr)
    tail = [0] * (v.ndim - after)
    strides = [list(v.strides[:before]) + [0] * len(b) + list(v.strides[after:])]
    for a in ints:
        e = np.broadcast_to(a, b)
        strides.append([0] * before + [0 if n == 1 else st for n, st in zip(b, e.strides)] + tail)
    return with_perm(np.ascontiguousarray(arr), iter_perm(shape, strides))


# -- __setitem__ (CopySlices) --------------------------------------------------------------


def _index_put_vjp(node, grads):
    shape, vshape = node.attrs
    idx = _saved_index(node, shape)
    g = grads[0]
    gi = None
    if node.next_functions[0][0] is not None:
        gi = index_put(g, idx, 0.0)
    gv = None
    if node.next_functions[1][0] is not None:
        gv = getitem(g, idx)
        if gv._data.shape != vshape:
            if not _broadcasts(vshape, gv._data.shape):
                raise _shape_mismatch(vshape, gv._data.shape)  # a mask changed through .data
            gv = gv.sum_to_size(vshape)
    return (gi, gv)


def _put_cuda(arr, arrs, v):
    """``arr[arrs] = v`` for a dense CUDA ``arr`` and an advanced index (ValueError when ``v``
    does not broadcast to the indexed shape, as numpy's assignment)."""
    cu = _cu()
    lin = cu.adv_lin(arr.shape, arrs)
    if isinstance(v, np.ndarray):
        if v.ndim:
            from ..device import CPU, same_device_error  # lazy: only this error needs it

            raise same_device_error(arr.device, CPU)
        v = v[()].item()
    if isinstance(v, DeviceArray):
        np.broadcast_shapes(v.shape, lin.shape)  # ValueError when it does not broadcast
        if not _broadcasts(v.shape, lin.shape):
            raise ValueError("shape mismatch")
    cu.scatter_into(arr, lin, v, False)


# x[i] = v is affine, not linear, in x: forward mode takes the transposed rule
@op("setitem", "indexing", node="torch::autograd::CopySlices", vjp=_index_put_vjp)
def index_put(x, idx, value):
    """Out of place: a copy of ``x`` with ``x[idx] = value`` (the body of __setitem__)."""
    nidx, advanced = _normalize(idx)
    arrs = _arrays(nidx)
    _check_ints(x._data.shape, arrs)
    arr = x._data.copy()
    if isinstance(value, Tensor):
        v = value._data
        vt = value
    else:
        v = value
        vt = None
    try:
        if advanced and type(arr) is DeviceArray:
            _put_cuda(arr, arrs, v)
        else:
            arr[arrs] = v
    except ValueError:
        if advanced and type(arr) is DeviceArray:
            tgt = list(_cu().adv_lin(arr.shape, arrs).shape)
        else:
            tgt = list(x._data[arrs].shape)
        src = list(np.shape(v))
        if advanced:
            raise _shape_mismatch(src, tgt) from None
        n = max(len(tgt), len(src))
        pt, ps = [1] * (n - len(tgt)) + tgt, [1] * (n - len(src)) + src
        dim = next((k for k in range(n) if ps[k] != pt[k] and ps[k] != 1), 0)
        raise RuntimeError(
            "The expanded size of the tensor (%d) must match the existing size "
            "(%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
            "sizes: %s" % (pt[dim], ps[dim], dim, tgt, src)
        ) from None
    vshape = vt._data.shape if vt is not None else ()
    # CopySlices always holds saved state: a second backward through it raises (PyTorch)
    return index_put.op.record(
        arr, (x, vt), attrs=(x._data.shape, vshape), saved=_split_saved(nidx)
    )


# -- gather / scatter / index_select ------------------------------------------------------


def _check_index_tensor(index, fn):
    """PyTorch's scatter_gather_dtype_check: the dtype of an empty index is not checked."""
    if not isinstance(index, Tensor) or (
        index._dtype not in (_dt.int64, _dt.int32) and index._data.size
    ):
        raise RuntimeError("%s(): Expected dtype int32/int64 for index" % fn)


def _nd(shape):
    """A 0-d shape as (1,): gather and scatter treat a scalar as a one-element vector."""
    return shape if shape else (1,)


def _check_dims(index, input, fn):
    if len(_nd(index._data.shape)) != len(_nd(input._data.shape)):
        raise RuntimeError("Index tensor must have the same number of dimensions as %s" % fn)


def _read_index(node, name, shape):
    """A saved index tensor's current array (version-checked), as it was at the forward: a
    tensor whose data was replaced through ``.data`` by one of another shape or dtype is
    refused rather than read out of bounds."""
    a = node.array(name)
    if a.shape != shape or (a.dtype.kind not in "iu" and a.size):
        raise RuntimeError(
            "the index tensor saved for %s was replaced after the forward (now shape %s, "
            "dtype %s; it was shape %s)" % (node.name(), list(a.shape), a.dtype, list(shape))
        )
    return a


def _gather_lin(shape, dim, index):
    """Flat positions in an array of ``shape`` that gather(dim, index) reads (index checked);
    an empty index (of any rank and dtype: PyTorch checks neither) reads nothing."""
    if type(index) is DeviceArray:
        return _cu().dim_lin(index, _nd(shape), dim)
    if not index.size:
        return np.zeros(index.shape, np.int64)
    shape, ishape = _nd(shape), _nd(index.shape)
    sl = tuple(slice(None) if k == dim else slice(0, n) for k, n in enumerate(ishape))
    return np.take_along_axis(_lin(shape)[sl], index.reshape(ishape).astype(np.int64), dim)


def _check_gather_index(index, shape, d):
    if type(index) is DeviceArray:
        _cu().check_index(index, _nd(shape)[d], d, RuntimeError, negative=False)
    else:
        K.check_index(index, _nd(shape)[d], d, RuntimeError, negative=False)


def _gather_vjp(node, grads):
    shape, d, ishape = node.attrs
    node.array("x")  # version check: PyTorch's gather_backward(grad, self, ...) reads it
    index = _read_index(node, "index", ishape)
    _check_gather_index(index, shape, d)
    lin = _gather_lin(shape, d, index).reshape(ishape)
    return (_scatter_lin(grads[0], shape, lin),)


@op(
    "gather",
    "indexing",
    node="GatherBackward0",
    vjp=_gather_vjp,
    variants=FM,
    kernels=CPU,
    saves=("x",),
)
def gather(input, dim, index, *, sparse_grad=False):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    _check_index_tensor(index, "gather")
    ishape = index._data.shape
    if type(input._data) is DeviceArray or type(index._data) is DeviceArray:
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(input, index)
    if not index._data.size:  # PyTorch checks no rank nor size of an empty index
        if type(input._data) is DeviceArray:
            from .cuda import xp  # lazy: the CUDA path loads on first use

            arr = xp.empty(ishape, input._data.dtype)
        else:
            arr = _alloc(np.empty, ishape, input._dtype)  # PyTorch's contiguous strides
        return gather.op.record(arr, (input,), attrs=(shape, d, ishape), saved={"index": index})
    _check_dims(index, input, "input tensor")
    for k, (ni, n) in enumerate(zip(_nd(ishape), _nd(shape))):
        if k != d and ni > n:
            raise RuntimeError(
                "Size does not match at dimension %d expected index %s to be no larger "
                "than self %s apart from dimension %d" % (k, list(ishape), list(shape), d)
            )
    _check_gather_index(index._data, shape, d)
    if type(input._data) is DeviceArray:
        lin = _gather_lin(shape, d, index._data).reshape(ishape)
        arr = _cu().take_flat(input._data.contiguous(), lin)
        return gather.op.record(arr, (input,), attrs=(shape, d, ishape), saved={"index": index})
    arr = np.take_along_axis(
        input._data.reshape(_nd(shape))[
            tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(_nd(ishape)))
        ],
        index._data.reshape(_nd(ishape)).astype(np.int64),
        d,
    ).reshape(ishape)
    return gather.op.record(arr, (input,), attrs=(shape, d, ishape), saved={"index": index})


def _scatter_vjp(node, grads):
    dim, ishape, add = node.attrs
    g = grads[0]
    index = None
    if node.saved and "index" in node.saved:
        index = _make(_read_index(node, "index", ishape))
    gi = None
    if node.next_functions[0][0] is not None:
        gi = g if add else scatter(g, dim, index, 0.0)
    if len(node.next_functions) == 1:
        return (gi,)
    gs = gather(g, dim, index) if node.next_functions[1][0] is not None else None
    return (gi, gs)


def _scatter_impl(input, dim, index, src, add, opdef):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    # PyTorch's scatter_gather_dtype_check (named "scatter" for scatter_add too), then its
    # shape checks, which an empty index skips
    _check_index_tensor(index, "scatter")
    is_src = isinstance(src, Tensor)
    if is_src and src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    ishape = index._data.shape
    empty = not index._data.size
    if not empty:
        _check_dims(index, input, "self tensor")
        if is_src:
            _check_dims(index, src, "src tensor")
    for k, ni in enumerate(() if empty else _nd(ishape)):
        if (k != d and ni > _nd(shape)[k]) or (is_src and ni > _nd(src._data.shape)[k]):
            msg = "Expected index %s to be no larger than self %s apart from dimension %d" % (
                list(ishape),
                list(shape),
                d,
            )
            if is_src:
                msg += " and to be no larger size than src %s" % list(src._data.shape)
            raise RuntimeError(msg)
    cuda = type(input._data) is DeviceArray or type(index._data) is DeviceArray
    if cuda:
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(input, index, src if is_src else None)
    _check_gather_index(index._data, shape, d)
    out = input._data.copy()
    if cuda and not empty:
        vals = src._data if is_src else src
        if is_src:
            sl = tuple(slice(0, n) for n in _nd(ishape))
            vals = vals.reshape(_nd(src._data.shape))[sl]
        lin = _gather_lin(shape, d, index._data).reshape(_nd(ishape))
        _cu().scatter_into(out.reshape(_nd(shape)), lin, vals, add)
    elif not empty:
        if is_src:
            sl = tuple(slice(0, n) for n in _nd(ishape))
            vals = src._data.reshape(_nd(src._data.shape))[sl]
        else:
            vals = np.full(_nd(ishape), src, input._data.dtype)
        K.scatter_flat(out.reshape(-1), _gather_lin(shape, d, index._data), vals, add)
    # scatter's self gradient needs the index; scatter_add's only the src gradient does
    keep = not add or (is_src and src._requires_grad)
    saved = {"index": index} if keep else None
    inputs = (input, src) if is_src else (input,)
    return opdef.record(
        out, inputs, overload="src" if is_src else "value", attrs=(d, ishape, add), saved=saved
    )


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
    shape, d, ishape = node.attrs
    idx = _read_index(node, "index", ishape).reshape(-1)
    n = _nd(shape)[d]
    bad = K.first_bad(idx, 0, n) if type(idx) is not DeviceArray else _cu().first_bad(idx, 0, n)
    if bad is not None:  # PyTorch's index_add_: its scatter_add_ fast path, or its own check
        if len(shape) > 1 and d in (0, len(shape) - 1) and idx.dtype == np.int64:
            raise RuntimeError(
                "index %d is out of bounds for dimension %d with size %d" % (bad, d, n)
            )
        raise IndexError("index out of range in self")
    if type(idx) is DeviceArray:
        lin = _cu().select_lin(idx, _nd(shape), d)
    else:
        lin = np.take(_lin(_nd(shape)), idx.astype(np.int64), axis=d)
    if not shape:
        lin = lin.reshape(())
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
    if not isinstance(index, Tensor) or index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    n = _nd(shape)[d]
    idx = index._data.reshape(-1)
    if not shape and idx.size != 1:
        raise RuntimeError(
            "index_select(): Index to scalar can have only 1 value, got %d value(s)" % idx.size
        )
    cuda = type(input._data) is DeviceArray or type(idx) is DeviceArray
    if cuda:
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(input, index)
    bad = K.first_bad(idx, 0, n) if not cuda else _cu().first_bad(idx, 0, n)
    if bad is not None:
        if d == 1 and len(shape) >= 2:  # PyTorch's CPU kernel for dim 1 says it this way
            raise RuntimeError(
                "INDICES element is out of DATA bounds, id=%d axis_dim=%d" % (bad, n)
            )
        raise IndexError("index out of range in self")
    if cuda:
        arr = _cu().take_flat(input._data.contiguous(), _cu().select_lin(idx, _nd(shape), d))
    else:
        arr = np.take(input._data.reshape(_nd(shape)), idx.astype(np.int64), axis=d)
    if not shape:
        arr = arr.reshape(())  # a scalar input stays a scalar
    return index_select.op.record(
        arr, (input,), attrs=(shape, d, index._data.shape), saved={"index": index}
    )


@op("nonzero", "indexing", variants=FM)
def nonzero(input, *, as_tuple=False):
    if type(input._data) is DeviceArray:
        a = input._data
        if a.ndim == 0:  # numpy's reading of a scalar: one dim of length 0 or 1
            a = a.reshape(1)
        c = _cu().nonzero(a)  # (ndim, count) C order
        if as_tuple:
            return tuple(_make(c[k]) for k in range(c.shape[0]))
        return _make(c.T)
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(_make(a.astype(np.int64)) for a in nz)
    if not nz:
        return _make(np.zeros((0, 0), np.int64))
    # PyTorch's result is column-major: (n, ndim) with strides (1, n)
    return _make(np.stack(nz, axis=0).astype(np.int64, copy=False).T)


def _masked_select_vjp(node, grads):
    (shape,) = node.attrs  # broadcast shape: the engine sums the gradient to the input's
    node.array("x")  # version check: PyTorch's masked_select_backward(grad, self, mask) reads it
    m = node.array("mask")
    try:
        m = np.broadcast_to(m, shape) if type(m) is not DeviceArray else m.broadcast_to(shape)
    except ValueError:
        raise broadcast_error((_make(m), _make(np.empty(shape)))) from None
    if type(m) is DeviceArray:
        lin = _cu().masked_lin(m, shape)
    else:
        lin = _lin(shape)[m.astype(np.bool_, copy=False)]
    g = grads[0]
    n = g._data.shape[0] if g._data.ndim else 1
    if lin.size > n:  # the mask gained ones through .data: PyTorch's masked_scatter_ error
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if lin.size < n:
        g = g[: lin.size]
    return (_scatter_lin(g, shape, lin),)


@op(
    "masked_select",
    "indexing",
    node="MaskedSelectBackward0",
    vjp=_masked_select_vjp,
    variants=FM,
    saves=("x",),  # PyTorch: masked_select_backward(grad, self, mask) -- version-checked
)
def masked_select(input, mask):
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    try:
        shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        raise broadcast_error((mask, input)) from None
    if type(input._data) is DeviceArray or type(mask._data) is DeviceArray:
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(input, mask)
        cu = _cu()
        lin = cu.masked_lin(mask._data, shape)
        arr = cu.take_flat(input._data.broadcast_to(shape).contiguous(), lin)
    else:
        m = np.broadcast_to(mask._data, shape)
        arr = np.broadcast_to(input._data, shape)[m]
    return masked_select.op.record(arr, (input,), attrs=(shape,), saved={"mask": mask})
