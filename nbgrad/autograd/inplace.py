"""In-place ops and ``out=`` writes under autograd: PyTorch's checks, the generic ``x.op_()``
(compute out of place, write back, rewire history), CopySlices for in-place on views, the
regeneration of the other views of a modified base, and forward-mode tangents of in-place ops.

Above ops (it runs any op's forward and backward); ``_tensor_methods`` installs the ``*_``
methods and ``__setitem__`` from here."""

import numbers
import warnings

import numpy as np

from .. import _flags
from .._tensor import (
    ERR_PARTIAL_OVERLAP,
    Tensor,
    overlap_status,
    prune_views,
    storage_root,
    view_positions,
    view_rebase_error,
)
from ..creation import tensor
from ..grad_mode import STATE
from ..ops.indexing import _normalize, _scatter_lin, _take_lin, index_put
from ..ops.registry import new_node, node_class
from .dual import DUAL, set_tangent, tangent_of, zeros_like_layout
from .engine import conform_grads
from .graph import SavedOutput, edge
from .saved import MUTATION

_make = Tensor._make

_OVERLAP = ERR_PARTIAL_OVERLAP
_INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def check_inplace(self, record=None, fn=None, args=()):
    """PyTorch's errors for in-place writes that autograd cannot record (its check_inplace /
    can_mutate_inplace), then for a written-to tensor whose elements overlap (an expanded
    tensor), unless the op ``fn(self, *args)`` is one PyTorch allows there (``overlap_ok``).
    ``record``: the write is recorded (grad mode on and ``self`` or an operand requires
    grad)."""
    if MUTATION:  # NOTE [mutation on saved tensors]
        MUTATION[-1](self)
    if self._inference and not STATE.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not "
            "allowed.You can make a clone to get a normal tensor before doing "
            "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
            "details."
        )
    if STATE.enabled and (self._requires_grad if record is None else record):
        base = self._basev
        if base is not None:
            if self._cmeta:  # NOTE [view creation meta] (_tensor.py)
                raise RuntimeError(view_rebase_error(self, False))
            if self._requires_grad and base._grad_fn is None:
                # a view of a leaf that requires grad, or a requires-grad leaf view of a tensor
                # that does not (or a view of one)
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation."
                )
        elif self._grad_fn is None and self._requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
    a = self._data
    if 0 in a.strides and internal_overlap(a) and (fn is None or not overlap_ok(fn, args, a)):
        raise RuntimeError(_INTERNAL_OVERLAP)


def internal_overlap(a):
    """Elements of ``a`` share memory (a stride 0 over a dimension of size > 1), PyTorch's
    has_internal_overlap == YES."""
    return a.size > 1 and any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


# In-place ops PyTorch allows on a tensor whose elements overlap (an expanded one): scalar fills
# and ops that only write selected elements; some with a deprecation warning.
_OVERLAP_OK = {"tril": None, "triu": None, "masked_fill": "masked_fill_"}
_OVERLAP_OK["index_put"] = _OVERLAP_OK["_index_put_fw"] = "index_put_"
_OVERLAP_OK["_put_view"] = _OVERLAP_OK["_put_view_fw"] = None  # setitem checked the view
_OVERLAP_EXAMPLE = {
    "masked_fill_": "tensor[mask] = scalar",
    "index_put_": "tensor[indices] = tensor",
}


def overlap_ok(fn, args, a):
    """``fn`` (the out-of-place op behind ``x.op_()``) may write into an expanded ``x`` (array
    ``a``): fills, tril_/triu_, masked_fill_/index_put_ with a deprecation warning, and a copy_
    of the very same data (PyTorch's copy_ returns before checking)."""
    name = getattr(fn, "__name__", "")
    if name == "_filled":
        return True  # fill_(Scalar) / zero_: every element gets the same value
    if name == "_copied":
        return isinstance(args[0], Tensor) and same_data(a, args[0]._data)
    if name not in _OVERLAP_OK:
        return False
    op = _OVERLAP_OK[name]
    if op is not None:
        warnings.warn(
            "Use of %s on expanded tensors is deprecated. Please clone() the tensor before "
            "performing this operation. This also applies to advanced indexing e.g. %s"
            % (op, _OVERLAP_EXAMPLE[op]),
            UserWarning,
            stacklevel=5,  # the user's line: x.op_() or x[idx] = v
        )
    return True


def same_data(dst, src):
    """``src`` (broadcast as copy_ does) is ``dst``'s very data: same address, shape, dtype and
    strides (over the dimensions of size > 1), PyTorch's early exit of copy_."""
    if src.dtype != dst.dtype:
        return False
    while src.ndim > dst.ndim and src.shape[0] == 1:
        src = src[0]
    try:
        src = np.broadcast_to(src, dst.shape)
    except ValueError:
        return False
    return src.__array_interface__["data"][0] == dst.__array_interface__["data"][0] and all(
        s == t for s, t, n in zip(src.strides, dst.strides, dst.shape) if n > 1
    )


def _write_overlapping(dst, new):
    """Write ``new`` into ``dst`` whose elements overlap: only the elements the op changed are
    written, so a memory location gets the new value when any of its aliases was selected
    (PyTorch's element loop), not whatever its last alias holds."""
    changed = new != dst
    if new.dtype.kind in "fc":
        changed |= np.signbit(new.real) != np.signbit(dst.real)
    np.copyto(dst, new, where=changed)


# ---------------------------------------------------------------------------------------------
# Memory overlap between the written-to tensor and the operands (PyTorch's MemoryOverlap.cpp)


def _overlap(out, other):
    """``overlap_status`` of two tensors (the same tensor: "full")."""
    return "full" if out is other else overlap_status(out._data, other._data)


# ops whose operands must not overlap the output at all (PyTorch's assert_no_overlap)
_NO_OVERLAP = {"scatter", "scatter_add"}
_NO_OVERLAP |= {"index_add", "index_copy", "index_fill", "scatter_reduce"}


def _check_overlap(self, fn, args, kwargs):
    name = getattr(fn, "__name__", "")
    if name in ("index_put", "_index_put_fw", "_put_view", "_put_view_fw", "_filled_t"):
        return  # x[idx] = v: checked by setitem; fill_(Tensor) reads one number first
    if name == "masked_fill":  # the value is a Scalar there; only the mask is an operand
        args, kwargs = args[:1], {}
    strict = name in _NO_OVERLAP
    for o in (*args, *kwargs.values()):
        if isinstance(o, Tensor):
            status = _overlap(self, o)
            if status == "partial" or (strict and status == "full"):
                raise RuntimeError(_OVERLAP)


def _check_setitem_overlap(x, idx, value):
    """``x[idx] = value``: a copy into the view ``x[idx]`` (basic indices; a 0-d value is a
    fill), which must not overlap itself nor ``value`` in part, or an index_put (advanced
    indices: no overlap with ``x`` at all), as PyTorch.  Returns whether the indices are basic
    (None when they cannot be told: index_put raises the proper error)."""
    try:
        nidx, advanced = _normalize(idx)
    except Exception:
        return None
    if advanced:
        if isinstance(value, Tensor) and value._data.size and _overlap(x, value) != "no":
            raise RuntimeError(_OVERLAP)
        return False
    try:
        target = x._data[tuple(nidx)]
    except Exception:
        return None
    if 0 in target.strides and internal_overlap(target):
        if not (isinstance(value, Tensor) and value._data.ndim and same_data(target, value._data)):
            raise RuntimeError(_INTERNAL_OVERLAP)
    if isinstance(value, Tensor) and value._data.ndim and value._data.size:
        if _overlap(_make(target), value) == "partial":
            raise RuntimeError(_OVERLAP)
    return True


# ---------------------------------------------------------------------------------------------
# x.op_(...)


def inplace(self, fn, *args, **kwargs):
    """``self.<op>_(...)``: compute out of place, write into self's storage, rewire history.

    A saved copy of the old value stands in for ``self`` so the op's backward (which may need
    the input) never sees the overwritten storage.  NOTE [in-place on a view]: when ``self`` is
    a view and the write is recorded, the base's history is rewritten with a CopySlices node
    (``_rebase``) so gradients reach the base and everything it came from; every other view of
    the base then reads from the new history (``refresh_views``).
    """
    operands = [a for a in args if isinstance(a, Tensor)]
    if kwargs:
        operands += [a for a in kwargs.values() if isinstance(a, Tensor)]
    record = STATE.enabled and (self._requires_grad or any(a._requires_grad for a in operands))
    check_inplace(self, record, fn, args)
    if operands:
        _check_overlap(self, fn, args, kwargs)
    src = self
    fw = tangent_of(self) if _flags.FWD else None
    if record or fw is not None:
        src = _make(self._data.copy(), self._grad_fn, self._output_nr)
        src._requires_grad = self._requires_grad
        if fw is not None:
            src._fw_grad = fw
    res = fn(src, *args, **kwargs)
    if res._dtype.category > self._dtype.category:
        raise RuntimeError(
            "result type %s can't be cast to the desired output type %s"
            % (res._dtype._legacy, self._dtype._legacy)
        )
    if res._data.shape != self._data.shape:
        try:
            np.broadcast_to(res._data, self._data.shape)
        except ValueError:
            raise RuntimeError(
                "output with shape %s doesn't match the broadcast shape %s"
                % (list(self._data.shape), list(res._data.shape))
            ) from None
        if res._data.size != self._data.size:
            raise RuntimeError(
                "output with shape %s doesn't match the broadcast shape %s"
                % (list(self._data.shape), list(res._data.shape))
            )
    if 0 in self._data.strides and internal_overlap(self._data):
        _write_overlapping(self._data, np.broadcast_to(res._data, self._data.shape))
    else:
        self._data[...] = res._data
    self._vc[0] += 1
    if _flags.FWD and self._dtype.is_inexact:
        new = res.__dict__.get("_fw_grad")
        if new is not None or fw is not None:
            _write_tangent(self, new)
    node = res._grad_fn
    if node is not None:
        if self._basev is not None:
            _rebase(self, node)
        else:
            old, old_nr = self._grad_fn, self._output_nr
            self._grad_fn = node
            self._output_nr = res._output_nr
            self._requires_grad = True
            if self._retains_grad and old is not None and old._retain:
                _move_retain(old, old_nr, node, res._output_nr)
            if self._views is not None or self._alias is not None:
                views_follow(self, None)
        if node.saved and "out" in node.saved:
            fw = node.saved["out"].fw  # the result's tangent (forward-over-reverse reads it)
            node.saved["out"] = SavedOutput(self)
            node.saved["out"].fw = fw
    elif self._views is not None or self._basev is not None or self._alias is not None:
        views_follow(self, None)  # not recorded (no_grad): the views still follow (PyTorch)
    return self


def views_follow(t, skip):
    """After a write into ``t``: every live view sharing its memory and version counter (the
    views of its base, and of the ``detach()``ed aliases of that base) follows, as PyTorch's
    grad_fn getter sees the shared version counter moved."""
    root = storage_root(t)
    if root._views:
        refresh_views(root, skip)


def _move_retain(old, old_nr, node, nr):
    """retain_grad follows the newest version of the tensor (SEMANTICS.md 1)."""
    ref = old._retain.pop(old_nr, None)
    if ref is not None:
        if node._retain is None:
            node._retain = {}
        node._retain[nr] = ref


# ---------------------------------------------------------------------------------------------
# Element positions of a view in its base


def _view_positions(view, base):
    return view_positions(view._data, base._data)


def _rebase(view, node):
    """PyTorch's CopySlices: the base's new grad_fn routes the region's gradient through the
    in-place op's node; the view becomes an AsStrided view of the new base."""
    base = view._base
    lin = _view_positions(view, base)
    shape = base._data.shape
    base_size = base._data.size
    overlap = internal_overlap(view._data)

    fn_node = not hasattr(node, "op")  # a custom Function that marked the view dirty
    nout = getattr(node, "_nout", 1)

    def copy_slices_vjp(cs, grads):
        if overlap:  # PyTorch copies the op's gradient into the (overlapping) region
            raise RuntimeError(_INTERNAL_OVERLAP)
        g = grads[0]
        gslice = _take_lin(g, lin)
        if fn_node:
            inner = conform_grads(node, node.apply((gslice,) + (None,) * (nout - 1)))
        else:
            inner = conform_grads(node, node.op(node, (gslice,)))
        # g with the region replaced by the op's gradient (PyTorch copies it in): selected,
        # so a NaN/Inf of the overwritten region's gradient does not leak
        keep = g.masked_fill(_region(), 0.0)
        gbase = keep if inner[0] is None else keep + _scatter_lin(inner[0], shape, lin)
        return (gbase,) + tuple(inner[1:])

    def _region():
        m = np.zeros(base_size, np.bool_)
        m[lin.reshape(-1)] = True
        return _make(m.reshape(shape))

    old, old_nr = base._grad_fn, base._output_nr
    cs = new_node(node_class("torch::autograd::CopySlices"), (), copy_slices_vjp)
    cs.next_functions = (edge(base),) + node.next_functions[1:]
    cs._in_meta = ((shape, base._dtype),) + node._in_meta[1:]
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    if base._retains_grad and old is not None and old._retain:
        _move_retain(old, old_nr, cs, 0)  # the base's .grad is its newest version's (PyTorch)

    def as_strided_vjp(n, grads):
        return (_scatter_lin(grads[0], shape, lin),)

    vn = new_node(node_class("AsStridedBackward0"), (), as_strided_vjp)
    vn.next_functions = ((cs, 0),)
    vn._in_meta = ((shape, base._dtype),)
    _set_view_fn(view, vn)
    views_follow(base, view)


def _set_view_fn(v, node):
    """A view's new grad_fn; its retain_grad moves along (PyTorch's
    update_tensor_hooks_on_new_gradfn), hooks registered before stay with the old node."""
    old, old_nr = v._grad_fn, v._output_nr
    v._grad_fn = node
    v._output_nr = 0
    v._requires_grad = True
    if v._retains_grad and old is not None and old._retain:
        _move_retain(old, old_nr, node, 0)


def refresh_views(base, skip, moved_only=False):
    """NOTE [views follow their base] (_tensor.py): after an in-place write into ``base`` or
    one of its views, every other live view of it that takes part in autograd (it has a
    grad_fn, or its base requires grad) gets PyTorch's regenerated grad_fn, an
    ``AsStridedBackward0`` reading the base's new history, or, for a view made any other way
    than DEFAULT, goes stale (NOTE [view creation meta]: reading its grad_fn raises).  A view
    left out because neither holds is marked ``_moved``: when its base starts to require grad,
    PyTorch's getter sees the version moved, and ``moved_only`` then refreshes just those."""
    views = base._views
    if not views:
        return
    rg = base._requires_grad
    edge_ = meta = None
    live = [v for v in (r() for r in list(views)) if v is not None]
    if len(live) < len(views):
        prune_views(views)
    for v in live:
        if v is skip or v._stale is not None:
            continue
        if v._basev is not base:
            if v._alias is not None and v._alias[0]() is base and v._views and not moved_only:
                # a detach()ed alias: its own views
                refresh_views(v, skip)
            continue
        if moved_only and not v.__dict__.pop("_moved", False):
            continue
        if v._grad_fn is None and not rg:
            v._moved = True  # PyTorch's getter: nothing to regenerate, as long as this holds
            continue
        if not v._dtype.is_inexact or v._dtype is not base._dtype:
            continue  # not differentiable, or a dtype view
        if v._data.size and not np.may_share_memory(v._data, base._data):
            continue  # a copy that only claims a base
        if v._cmeta:
            v._stale = (v._grad_fn,)  # what its error message names
            v._grad_fn = None
            v._accum = None
            v._requires_grad = True
            continue
        if edge_ is None:
            edge_ = edge(base)
            meta = ((base._data.shape, base._dtype),)
        node = new_node(node_class("AsStridedBackward0"), (), _regenerated_vjp)
        node.next_functions = (edge_,)
        node._in_meta = meta
        node.attrs = [v, base, None]  # positions computed at the first backward
        _set_view_fn(v, node)


def _regenerated_vjp(node, grads):
    a = node.attrs
    if a[2] is None:
        a[2] = _view_positions(a[0], a[1])
        a[0] = a[1] = None  # keep no tensors alive through the graph
    return (_scatter_lin(grads[0], node._in_meta[0][0], a[2]),)


# ---------------------------------------------------------------------------------------------
# Forward mode: the tangent of an in-place op


def _writable_like(t, primal):
    """``t`` can take an in-place write standing for ``primal``'s tangent: same layout
    (PyTorch keeps a tangent's layout equal to its primal's), no internal overlap."""
    a, p = t._data, primal._data
    nb = a.ndim - p.ndim
    return (
        a.flags.writeable
        and a.shape[nb:] == p.shape
        and a.strides[nb:] == p.strides
        and not any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape))
    )


def _write_tangent(self, new):
    """The in-place op's result tangent ``new`` (None: zero, e.g. ``zero_``/``copy_`` of a
    constant) becomes ``self``'s tangent *in place*, so that every view sharing the tangent's
    memory sees it (PyTorch).  A view's tangent is an alias into its base's tangent (created,
    zero, with the base's layout if needed), and the write lands in the base's tangent."""
    nb = DUAL.tangent_batch_dims
    own = tangent_of(self)
    if new is not None:
        new_data = new._data
    else:
        lead = own._data.shape[:nb] if (nb and own is not None) else ()
        new_data = np.zeros(lead + self._data.shape, self._data.dtype)
    batch = new_data.shape[:nb] if nb else ()
    base = self._base
    view = base is not None
    if view:
        tb = tangent_of(base)
        if tb is None or not _writable_like(tb, base):
            arr = zeros_like_layout(base._data, batch)
            if tb is not None:
                arr[...] = tb._data
            tb = _make(arr)
            set_tangent(base, tb)
        own = tangent_of(self)  # an alias into the base's tangent unless it had its own
    if own is not None and _writable_like(own, self):
        own._data[...] = new_data
    else:
        arr = zeros_like_layout(self._data, batch)
        arr[...] = new_data
        own = _make(arr)
        set_tangent(self, own)
    if view:  # idempotent when ``own`` aliases the base's tangent
        pos = np.unravel_index(_view_positions(self, base), base._data.shape)
        tb._data[(slice(None),) * nb + pos] = own._data


# ---------------------------------------------------------------------------------------------
# x[idx] = value


def setitem(x, idx, value):
    """``x[idx] = value``, as PyTorch: ``x`` itself takes a copy_/fill_ when ``idx`` keeps all
    of it (``_whole``); other basic indices write into the view ``x[idx]`` and advanced ones
    are an index_put_ (an in-place index_put here, CopySlices when recorded)."""
    if _whole(x, idx):
        return _setitem_whole(x, value)
    if STATE.enabled and x._grad_fn is None and x._requires_grad:
        # PyTorch writes through a view (x[idx].copy_(value)), hence the "view of a leaf" text
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    if isinstance(value, (list, tuple, np.ndarray)):
        value = tensor(value, dtype=x._dtype)
    if isinstance(value, Tensor) and value._dtype is not x._dtype:
        value = value.to(x._dtype)
    basic = _check_setitem_overlap(x, idx, value)
    if _flags.FWD and not DUAL.tangent_batch_dims:
        inplace(x, _put_view_fw if basic else _index_put_fw, idx, value)
    else:
        inplace(x, _put_view if basic else index_put, idx, value)


def _whole(x, idx):
    """``x[idx]`` is ``x`` itself for PyTorch's setitem: only Ellipsis and slices from 0 with step
    1 that reach the end of their dimension (its slice optimisation)."""
    if idx is Ellipsis:
        return True
    if isinstance(idx, slice):
        idx = (idx,)
    elif type(idx) is not tuple:
        return False
    nd = x._data.ndim
    n = len(idx) - sum(1 for i in idx if i is Ellipsis)
    if n > nd or len(idx) - n > 1:
        return False
    d = 0
    for i in idx:
        if i is Ellipsis:
            d += nd - n
            continue
        if type(i) is not slice or not (i.start is None or _is_int(i.start, 0)):
            return False
        if not (i.step is None or _is_int(i.step, 1)):
            return False
        if not (i.stop is None or (_is_int(i.stop) and i.stop >= x._data.shape[d])):
            return False
        d += 1
    return True


def _is_int(v, value=None):
    ok = isinstance(v, numbers.Integral) and not isinstance(v, bool)
    return ok and (value is None or v == value)


def _setitem_whole(x, value):
    """PyTorch's copy_to(x, value): copy_ for the same shape, fill_ for a 0-d value (a Python
    scalar becomes one), else copy_ of the value without its leading 1s expanded to x."""
    if not isinstance(value, Tensor):
        value = tensor(value, dtype=x._dtype)
    shape = x._data.shape
    vshape = value._data.shape
    if vshape == shape:
        return x.copy_(value)
    if not vshape:
        return x.fill_(value)
    k = 0
    while k < len(vshape) and vshape[k] == 1:
        k += 1
    value = value.view(vshape[k:])
    if vshape[k:] != shape:
        value = value.expand(shape)
    return x.copy_(value)


def _put_view(src, idx, value):
    """``x[idx] = value`` with basic indices: a write into the view ``x[idx]``."""
    return index_put(src, idx, value)


def _put_view_fw(src, idx, value):
    return _index_put_fw(src, idx, value)


def _index_put_fw(src, idx, value):
    """index_put in forward mode: it is affine in ``src``, so its tangent is the tangent of
    ``src`` with the tangent of ``value`` (zero for a constant) put at ``idx``."""
    t = tangent_of(src)
    tv = tangent_of(value) if isinstance(value, Tensor) else None
    _flags.FWD = False
    try:
        res = index_put(src, idx, value)
        if t is not None or tv is not None:
            base = t if t is not None else _make(np.zeros(src._data.shape, src._data.dtype))
            tan = index_put(base.detach(), idx, tv.detach() if tv is not None else 0.0)
            set_tangent(res, tan)
    finally:
        _flags.FWD = True
    return res
