"""In-place ops and ``out=`` writes under autograd: PyTorch's checks, the generic ``x.op_()``
(compute out of place, write back, rewire history), CopySlices for in-place on views, the
regeneration of the other views of a modified base, and forward-mode tangents of in-place ops.

Above ops (it runs any op's forward and backward); ``_tensor_methods`` installs the ``*_``
methods and ``__setitem__`` from here."""

import numpy as np

from .. import _flags
from .._tensor import Tensor, _bounds, _dense, view_positions
from ..creation import tensor
from ..grad_mode import STATE
from ..ops.indexing import _normalize, _scatter_lin, _take_lin, index_put
from ..ops.registry import new_node, node_class
from .dual import DUAL, set_tangent, tangent_of, zeros_like_layout
from .engine import conform_grads
from .graph import Node, SavedOutput, edge

_make = Tensor._make

# nodes of the ops that return several views (PyTorch's CreationMeta::MULTI_OUTPUT_NODE)
_MULTI_VIEW = {"SplitBackward0": "Split", "SplitWithSizesBackward0": "SplitWithSizes"}
_MULTI_VIEW["UnbindBackward0"] = "Unbind"

_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and %s with grad mode enabled. Given that this use case is "
    "ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the "
    "view and the inplace either both inside the no_grad block (if you don't want the inplace to "
    "be tracked) or both outside (if you want the inplace to be tracked)."
)
_FN_VIEW = (
    "Output %d of %s is a view and %s. This view was created inside a custom Function (or because "
    "an input was returned as-is) and the autograd logic to handle view+inplace would override the "
    "custom backward associated with the custom Function, leading to incorrect gradients. This "
    "behavior is forbidden. You can fix this by cloning the output of the custom Function."
)
_MULTI_VIEW_MSG = (
    "Output %d of %s is a view and %s. This view is the output of a function that returns "
    "multiple views. Such functions do not allow the output views to be modified inplace. You "
    "should replace the inplace operation by an out-of-place one."
)
_MODIFIED = "is being modified inplace"
_BASE_MODIFIED = "its base or another view of its base has been modified inplace"
_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)


def _view_error(t, what):
    """PyTorch's error for an in-place op that involves view ``t`` (None: allowed)."""
    fv = t.__dict__.get("_fn_view")
    if fv is not None:
        return _FN_VIEW % (fv[0], fv[1], what)
    if t.__dict__.get("_view_no_grad"):
        return _NO_GRAD_VIEW % (
            "is being modified inplace"
            if what == _MODIFIED
            else "its base or another view of its base has been modified inplace"
        )
    node = t.grad_fn
    if node is not None and node.name() in _MULTI_VIEW:
        return _MULTI_VIEW_MSG % (t._output_nr, _MULTI_VIEW[node.name()], what)
    return None


def check_inplace(self, record=None):
    """PyTorch's errors for in-place writes that autograd cannot record.  ``record``: the write
    is recorded (grad mode on and ``self`` or an operand requires grad)."""
    a = self._data
    if a.size and any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to "
            "tensor refers to a single memory location. Please clone() the tensor "
            "before performing the operation."
        )
    if self._inference and not STATE.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not "
            "allowed.You can make a clone to get a normal tensor before doing "
            "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
            "details."
        )
    if not STATE.enabled:
        return
    if record is None:
        record = self._requires_grad
    if not record:
        return
    base = self._base
    node = self.grad_fn
    if base is not None or (node is not None and node.name() in _MULTI_VIEW):
        msg = _view_error(self, _MODIFIED)
        if msg is not None:
            raise RuntimeError(msg)
        if base is not None and self._requires_grad and base.grad_fn is None:
            # a view whose base is a leaf: a leaf view that requires grad (of a tensor that does
            # not), or a view of such a leaf view
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
    elif node is None and self._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )


# ---------------------------------------------------------------------------------------------
# Memory overlap between the written-to tensor and the operands (PyTorch's MemoryOverlap.cpp)


def _overlap(out, other):
    """ "no", "full" or "partial": PyTorch's get_overlap_status (non-dense operands, whose
    overlap is 'too hard' to tell, count as no overlap, as there)."""
    if out is other:
        return "full"
    a, b = out._data, other._data
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return "no"
    if not _dense(a) or not _dense(b):
        return "no"
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    if alo == blo and ahi == bhi:
        return "full" if a.strides == b.strides else "partial"
    return "partial" if alo < bhi and blo < ahi else "no"


# ops whose operands must not overlap the output at all (PyTorch's assert_no_overlap)
_NO_OVERLAP = {"scatter", "scatter_add"}
_NO_OVERLAP |= {"index_add", "index_copy", "index_fill", "scatter_reduce"}


def _check_overlap(self, fn, args, kwargs):
    name = getattr(fn, "__name__", "")
    if name in ("index_put", "_index_put_fw"):  # x[idx] = v: checked by setitem
        return
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
    fill) or an index_put (advanced indices: no overlap with ``x`` at all), as PyTorch."""
    if not isinstance(value, Tensor) or value._data.size == 0:
        return
    try:
        nidx, advanced = _normalize(idx)
    except Exception:  # index_put raises the proper error
        return
    if advanced:
        if _overlap(x, value) != "no":
            raise RuntimeError(_OVERLAP)
        return
    if value._data.ndim == 0:
        return
    try:
        target = x._data[tuple(nidx)]
    except Exception:
        return
    if _overlap(_make(target), value) == "partial":
        raise RuntimeError(_OVERLAP)


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
    check_inplace(self, record)
    if operands:
        _check_overlap(self, fn, args, kwargs)
    src = self
    fw = tangent_of(self) if _flags.FWD else None
    if record or fw is not None:
        src = _make(self._data.copy(), self.grad_fn, self._output_nr)
        src._requires_grad = self._requires_grad
        if self.grad_fn is None and self._requires_grad:  # a no_grad view: its own accumulator
            src._accum = None
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
    self._data[...] = res._data
    self._vc[0] += 1
    if _flags.FWD and self._dtype.is_inexact:
        new = res.__dict__.get("_fw_grad")
        if new is not None or fw is not None:
            _write_tangent(self, new)
    if res.grad_fn is not None:
        node = res.grad_fn
        if self._base is not None and (self._base._requires_grad or record):
            _rebase(self, node)
        else:
            old, old_nr = self.grad_fn, self._output_nr
            self.grad_fn = node
            self._output_nr = res._output_nr
            self._requires_grad = True
            if self._retains_grad and old is not None and old._retain:
                _move_retain(old, old_nr, node, res._output_nr)
            refresh_views(self, None)
        if node.saved and "out" in node.saved:
            node.saved["out"] = SavedOutput(self)
    else:  # not recorded (no_grad): the views still follow the new version (PyTorch)
        base = self._basev if self._basev is not None else self
        if base._views and base._requires_grad and not self.__dict__.get("_detached"):
            refresh_views(base, None)
    return self


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

    fn_node = not hasattr(node, "op")  # a custom Function that marked the view dirty
    nout = getattr(node, "_nout", 1)

    def copy_slices_vjp(cs, grads):
        g = grads[0]
        gslice = _take_lin(g, lin)
        if fn_node:
            inner = conform_grads(node, node.apply((gslice,) + (None,) * (nout - 1)))
        else:
            inner = conform_grads(node, node.op(node, (gslice,)))
        keep = g - _scatter_lin(gslice, shape, lin)  # g with the view region zeroed
        gbase = keep if inner[0] is None else keep + _scatter_lin(inner[0], shape, lin)
        return (gbase,) + tuple(inner[1:])

    old, old_nr = base.grad_fn, base._output_nr
    cs = new_node(node_class("torch::autograd::CopySlices"), (), copy_slices_vjp)
    cs.next_functions = (edge(base),) + node.next_functions[1:]
    cs._in_meta = ((shape, base._dtype),) + node._in_meta[1:]
    base.grad_fn = cs
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
    refresh_views(base, view)


def _set_view_fn(v, node):
    """A view's new grad_fn; its retain_grad moves along (PyTorch's
    update_tensor_hooks_on_new_gradfn), hooks registered before stay with the old node."""
    old, old_nr = v.grad_fn, v._output_nr
    v.grad_fn = node
    v._output_nr = 0
    v._requires_grad = True
    if v._retains_grad and old is not None and old._retain:
        _move_retain(old, old_nr, node, 0)


class _ViewError(Node):
    """The grad_fn of a view that PyTorch forbids using after its base changed in place
    (PyTorch raises when the grad_fn is read; nbgrad raises when it runs)."""

    _name = "AsStridedBackward0"

    def apply(self, grads):
        raise RuntimeError(self.msg)


def refresh_views(base, skip):
    """NOTE [views follow their base] (_tensor.py): after an in-place op rewrote ``base``'s
    history, every other live view of it gets PyTorch's regenerated grad_fn, an
    ``AsStridedBackward0`` reading the base's new history (or, for the views PyTorch forbids
    to use afterwards, a node raising its error)."""
    views = base._views
    if not views or not base._requires_grad:
        return
    edge_ = edge(base)
    meta = ((base._data.shape, base._dtype),)
    for ref in list(views):
        v = ref()
        if v is None or v is skip or v._basev is not base or not v._dtype.is_inexact:
            continue
        if v._dtype is not base._dtype or not np.may_share_memory(v._data, base._data):
            continue  # a dtype view (not differentiable), or a copy that only claims a base
        msg = _view_error(v, _BASE_MODIFIED)
        if msg is not None:
            node = _ViewError(((edge_),), meta)
            node.msg = msg
        else:
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
    view = base is not None and not self.__dict__.get("_detached")
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
    """``x[idx] = value``: an in-place index_put (CopySlices when recorded)."""
    if STATE.enabled and x.grad_fn is None and x._requires_grad:
        # PyTorch writes through a view (x[idx].copy_(value)), hence the "view of a leaf" text
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    if isinstance(value, (list, tuple, np.ndarray)):
        value = tensor(value, dtype=x._dtype)
    if isinstance(value, Tensor) and value._dtype is not x._dtype:
        value = value.to(x._dtype)
    _check_setitem_overlap(x, idx, value)
    if _flags.FWD and not DUAL.tangent_batch_dims:
        inplace(x, _index_put_fw, idx, value)
    else:
        inplace(x, index_put, idx, value)


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
