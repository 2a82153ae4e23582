"""In-place ops and ``out=`` writes under autograd: PyTorch's checks, the generic ``x.op_()``
(compute out of place, write back, rewire history) and CopySlices for in-place on views.

Above ops (it runs any op's forward and backward); ``_tensor_methods`` installs the ``*_``
methods and ``__setitem__`` from here."""

import numpy as np

from .. import _flags
from .._tensor import Tensor
from ..creation import tensor
from ..grad_mode import STATE
from ..ops.indexing import _scatter_lin, _take_lin, index_put
from ..ops.registry import new_node, node_class
from .dual import set_tangent
from .engine import conform_grads
from .graph import SavedOutput, edge

_make = Tensor._make


def check_inplace(self):
    """PyTorch's errors for in-place writes that autograd cannot record."""
    a = self._data
    if any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)):
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
    fv = self.__dict__.get("_fn_view")
    if fv is not None and self._requires_grad:
        raise RuntimeError(
            "Output %d of %s is a view and is being modified inplace. This view was created "
            "inside a custom Function (or because an input was returned as-is) and the autograd "
            "logic to handle view+inplace would override the custom backward associated with the "
            "custom Function, leading to incorrect gradients. This behavior is forbidden. You can "
            "fix this by cloning the output of the custom Function." % fv
        )
    base = self._base
    if base is not None and base.grad_fn is None and base._requires_grad:
        if getattr(self, "_view_no_grad", False):
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked)."
            )
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    if self.grad_fn is None and self._requires_grad and base is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )


def inplace(self, fn, *args, **kwargs):
    """``self.<op>_(...)``: compute out of place, write into self's storage, rewire history.

    A saved copy of the old value stands in for ``self`` so the op's backward (which may need
    the input) never sees the overwritten storage.  NOTE [in-place on a view]: when ``self`` is
    a view and the write is recorded, the base's history is rewritten with a CopySlices node
    (``_rebase``) so gradients reach the base and everything it came from.
    """
    check_inplace(self)
    record = STATE.enabled and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    src = self
    if record:
        src = _make(self._data.copy(), self.grad_fn, self._output_nr)
        src._requires_grad = self._requires_grad
        if self.grad_fn is None and self._requires_grad:  # a no_grad view: its own accumulator
            src._accum = None
        if "_fw_grad" in self.__dict__:
            src._fw_grad = self._fw_grad
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
    if _flags.FWD and "_fw_grad" in res.__dict__:
        set_tangent(self, res._fw_grad)
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
                # retain_grad follows the newest version of the tensor (SEMANTICS.md 1)
                ref = old._retain.pop(old_nr, None)
                if ref is not None:
                    if node._retain is None:
                        node._retain = {}
                    node._retain[res._output_nr] = ref
        if node.saved and "out" in node.saved:
            node.saved["out"] = SavedOutput(self)
    return self


def _view_positions(view, base):
    """Flat (C-order) positions in ``base`` of each element of ``view`` (same storage)."""
    b = base._data
    if not b.flags.c_contiguous:
        raise RuntimeError(
            "nbgrad: in-place on a view of a non-contiguous tensor that requires "
            "grad is not supported; clone() the base first"
        )
    isz = b.itemsize
    off = (view._data.__array_interface__["data"][0] - b.__array_interface__["data"][0]) // isz
    strides = tuple(st // isz for st in view._data.strides)
    lin = np.arange(b.size, dtype=np.int64)
    return np.lib.stride_tricks.as_strided(
        lin[off:], shape=view._data.shape, strides=tuple(st * 8 for st in strides)
    ).copy()


def _rebase(view, node):
    """PyTorch's CopySlices: the base's new grad_fn routes the region's gradient through the
    in-place op's node; the view becomes an AsStrided view of the new base."""
    base = view._base
    lin = _view_positions(view, base)
    shape = base._data.shape

    def copy_slices_vjp(cs, grads):
        g = grads[0]
        gslice = _take_lin(g, lin)
        inner = conform_grads(node, node.op(node, (gslice,)))
        keep = g - _scatter_lin(gslice, shape, lin)  # g with the view region zeroed
        gbase = keep if inner[0] is None else keep + _scatter_lin(inner[0], shape, lin)
        return (gbase,) + tuple(inner[1:])

    cs = new_node(node_class("torch::autograd::CopySlices"), (), copy_slices_vjp)
    cs.next_functions = (edge(base),) + node.next_functions[1:]
    cs._in_meta = ((shape, base._dtype),) + node._in_meta[1:]
    base.grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True

    def as_strided_vjp(n, grads):
        return (_scatter_lin(grads[0], shape, lin),)

    vn = new_node(node_class("AsStridedBackward0"), (), as_strided_vjp)
    vn.next_functions = ((cs, 0),)
    vn._in_meta = ((shape, base._dtype),)
    view.grad_fn = vn
    view._output_nr = 0
    view._requires_grad = True


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
    inplace(x, index_put, idx, value)
