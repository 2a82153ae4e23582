"""Public functions for the elementwise ops (``nbgrad.exp``, ``nbgrad.add``, ...), plus the
generic in-place and ``out=`` paths shared by every op."""
import math
import numbers

import numpy as np

from .. import _flags
from .. import dtypes as _dt
from .._tensor import Tensor
from ..grad_mode import STATE
from . import pointwise as _pwdefs  # noqa: F401  (fills the registry)
from .dispatch import _broadcast_error, binary, pointwise, save_output, unary
from .registry import REGISTRY

R = REGISTRY
_make = Tensor._make


def _t(x, fn="op"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                        % (fn, type(x).__name__))
    return x


def _operand(x):
    """Tensors pass through; numbers stay Python scalars; arrays/lists become tensors."""
    if isinstance(x, (Tensor, numbers.Number)):
        return x
    if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
        from ..creation import tensor
        return tensor(x)
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError("unsupported operand type: %s" % type(x).__name__)


def write_out(res, out, name):
    """The ``out=`` path: copy into ``out`` (resized if empty), bump its version."""
    if out is None:
        return res
    if STATE.enabled and (res._requires_grad or out._requires_grad):
        raise RuntimeError("%s(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad." % name)
    if out._data.shape != res._data.shape:
        if out._data.size == 0:
            out._data = np.empty(res._data.shape, out._data.dtype)
        else:
            raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                               % (list(out._data.shape), list(res._data.shape)))
    out._data[...] = res._data
    out._vc[0] += 1
    return out


def _unary(name):
    op = R[name]

    def f(input, *, out=None):
        if out is None and isinstance(input, Tensor):
            return unary(op, input)
        return write_out(pointwise(op, (_t(input, name),)), out, name)
    f.__name__ = name
    f.__doc__ = "Elementwise ``%s`` (see ``torch.%s``)." % (op.formula, name)
    return f


for _n in ("neg", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
           "tan", "tanh", "sigmoid", "relu", "abs", "sign", "reciprocal", "erf", "floor", "ceil",
           "trunc"):
    globals()[_n] = _unary(_n)
negative = neg  # noqa: F821
absolute = abs  # noqa: A001,F821


def round(input, *, decimals=0, out=None):  # noqa: A001
    if decimals:
        s = 10.0 ** decimals
        return write_out(div(_unary("round")(mul(input, s)), s), out, "round")
    return write_out(pointwise(R["round"], (_t(input, "round"),)), out, "round")


def add(input, other, *, alpha=1, out=None):
    if alpha == 1 and out is None and isinstance(input, Tensor):
        return binary(R["add"], input, other)
    other = _operand(other)
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    if not isinstance(input, Tensor):
        input = _operand(input)
        if not isinstance(input, Tensor):
            return write_out(add(other, input), out, "add")
    return write_out(pointwise(R["add"], (input, other)), out, "add")


def sub(input, other, *, alpha=1, out=None):
    if alpha == 1 and out is None and isinstance(input, Tensor) and input._dtype is not _dt.bool:
        return binary(R["sub"], input, other)
    other = _operand(other)
    if input._dtype is _dt.bool and isinstance(other, Tensor) and other._dtype is _dt.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return write_out(pointwise(R["sub"], (_t(input, "sub"), other)), out, "sub")


subtract = sub


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (what ``2 - t`` calls)."""
    if alpha != 1:
        input = mul(input, alpha)
    return pointwise(R["rsub"], (input, _operand(other)))


def mul(input, other, *, out=None):
    if out is None and isinstance(input, Tensor):
        return binary(R["mul"], input, other)
    if not isinstance(input, Tensor):
        input, other = other, input
    return write_out(pointwise(R["mul"], (_t(input, "mul"), _operand(other))), out, "mul")


multiply = mul


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None and out is None and isinstance(input, Tensor):
        return binary(R["div"], input, other)
    if not isinstance(input, Tensor):
        from ..creation import tensor
        input = tensor(input, dtype=other._dtype if other._dtype.category >= 2 else None)
    other = _operand(other)
    if rounding_mode is None:
        res = pointwise(R["div"], (input, other))
    elif rounding_mode == "trunc":
        res = trunc(pointwise(R["div"], (input, other)).detach())  # noqa: F821
        res = _cast_int_result(res, input, other)
    elif rounding_mode == "floor":
        res = floor_divide(input, other)
    else:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           "found '%s'" % rounding_mode)
    return write_out(res, out, "div")


def _cast_int_result(res, a, b):
    dt = _dt.result_type(a, b)
    return res if dt.category >= 2 else _make(res._data.astype(dt.np))


true_divide = divide = div


def pow(input, exponent, *, out=None):  # noqa: A001
    if not isinstance(input, Tensor):
        return write_out(pointwise(R["rpow"], (_t(exponent, "pow"),), (input,)), out, "pow")
    exponent = _operand(exponent)
    if isinstance(exponent, Tensor):
        return write_out(pointwise(R["pow.Tensor"], (input, exponent)), out, "pow")
    if input._dtype.category < 2 and isinstance(exponent, numbers.Integral) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if input._dtype.category < 2 and isinstance(exponent, float):
        input = input.to(_dt._default[0])
    return write_out(pointwise(R["pow"], (input,), (exponent,)), out, "pow")


def square(input, *, out=None):
    return pow(input, 2, out=out)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        r = input
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return write_out(r, out, "clamp")
    if input._dtype.category < 2:
        lo = min if min is not None else None
        return write_out(_make(np.clip(input._data, lo, max)), out, "clamp")
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    return write_out(pointwise(R["clamp"], (input,), (lo, hi)), out, "clamp")


clip = clamp


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


def maximum(input, other, *, out=None):
    return write_out(pointwise(R["maximum"], (_t(input, "maximum"), _t(other, "maximum"))), out,
                     "maximum")


def minimum(input, other, *, out=None):
    return write_out(pointwise(R["minimum"], (_t(input, "minimum"), _t(other, "minimum"))), out,
                     "minimum")


def remainder(input, other, *, out=None):
    if not isinstance(input, Tensor):
        from ..creation import tensor
        input = tensor(input)
    other = _operand(other)
    if isinstance(other, Tensor):
        return write_out(pointwise(R["remainder.Tensor"], (input, other)), out, "remainder")
    return write_out(pointwise(R["remainder"], (input,), (other,)), out, "remainder")


fmod_ = None


def lerp(input, end, weight, *, out=None):
    if isinstance(weight, Tensor):
        return write_out(pointwise(R["lerp.Tensor"], (input, end, weight)), out, "lerp")
    return write_out(pointwise(R["lerp"], (input, end), (float(weight),)), out, "lerp")


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor) or condition._dtype is not _dt.bool:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           "with dtype %s" % (getattr(condition, "_dtype", type(condition)),))
    input, other = _operand(input), _operand(other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from ..creation import tensor
        input = tensor(input, dtype=_dt.result_type(input, other))
    return write_out(pointwise(R["where"], (condition, input, other)), out, "where")


def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype %s"
                           % getattr(mask, "_dtype", type(mask).__name__))
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               "tensor with %d dimension(s)." % value._data.ndim)
        value = value.item()
    if input._dtype.category < 2:
        arr = np.where(mask._data, value, input._data).astype(input._data.dtype)
        return _make(arr)
    return pointwise(R["masked_fill"], (input, mask), (float(value),))


# -- no-gradient ops -----------------------------------------------------------------------

def _compare(name):
    uf = R[name].numpy

    def f(input, other, *, out=None):
        a = input._data if isinstance(input, Tensor) else input
        o = _operand(other)
        b = o._data if isinstance(o, Tensor) else o
        try:
            r = uf(a, b)
        except ValueError:
            raise _broadcast_error((input, o)) from None
        return write_out(_make(np.asarray(r)), out, name)
    f.__name__ = name
    return f


for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    globals()[_n] = _compare(_n)
greater, greater_equal, less, less_equal = gt, ge, lt, le  # noqa: F821
not_equal = ne  # noqa: F821


def floor_divide(input, other, *, out=None):
    o = _operand(other)
    dt = _dt.result_type(input, o)
    a = input._data.astype(dt.np, copy=False)
    b = o._data.astype(dt.np, copy=False) if isinstance(o, Tensor) else o
    if dt.category < 2 and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    try:
        r = np.floor_divide(a, b)
    except ValueError:
        raise _broadcast_error((input, o)) from None
    return write_out(_make(np.asarray(r).astype(dt.np, copy=False)), out, "floor_divide")


def _unary_nograd(name):
    uf = R[name].numpy

    def f(input, *, out=None):
        return write_out(_make(np.asarray(uf(_t(input, name)._data))), out, name)
    f.__name__ = name
    return f


for _n in ("logical_not", "isnan", "isinf", "isfinite"):
    globals()[_n] = _unary_nograd(_n)


def equal(input, other):
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data,
                                                                             other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _make(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


# -- in place ------------------------------------------------------------------------------

def check_inplace(self):
    """PyTorch's errors for in-place writes that autograd cannot record."""
    a = self._data
    if any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the tensor "
                           "before performing the operation.")
    if self._inference and not STATE.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                           "details.")
    if not STATE.enabled:
        return
    fv = self.__dict__.get("_fn_view")
    if fv is not None and self._requires_grad:
        raise RuntimeError(
            "Output %d of %s is a view and is being modified inplace. This view was created "
            "inside a custom Function (or because an input was returned as-is) and the autograd "
            "logic to handle view+inplace would override the custom backward associated with the "
            "custom Function, leading to incorrect gradients. This behavior is forbidden. You can "
            "fix this by cloning the output of the custom Function." % fv)
    base = self._base
    if base is not None and base.grad_fn is None and base._requires_grad:
        if getattr(self, "_view_no_grad", False):
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if self.grad_fn is None and self._requires_grad and base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def inplace(self, fn, *args, **kwargs):
    """``self.<op>_(...)``: compute out of place, write into self's storage, rewire history.

    A saved copy of the old value stands in for ``self`` so the op's backward (which may need
    the input) never sees the overwritten storage.  NOTE [in-place on a view]: when ``self`` is
    a view and the write is recorded, the base's history is rewritten with a CopySlices node
    (``_rebase``) so gradients reach the base and everything it came from.
    """
    check_inplace(self)
    record = STATE.enabled and (self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args))
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
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (res._dtype._legacy, self._dtype._legacy))
    if res._data.shape != self._data.shape:
        try:
            np.broadcast_to(res._data, self._data.shape)
        except ValueError:
            raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                               % (list(self._data.shape), list(res._data.shape))) from None
        if res._data.size != self._data.size:
            raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                               % (list(self._data.shape), list(res._data.shape)))
    self._data[...] = res._data
    self._vc[0] += 1
    if _flags.FWD and "_fw_grad" in res.__dict__:
        from ..autograd.forward_ad import _set_tangent
        _set_tangent(self, res._fw_grad)
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
            save_output(node, "out", self)
    return self


def _view_positions(view, base):
    """Flat (C-order) positions in ``base`` of each element of ``view`` (same storage)."""
    b = base._data
    if not b.flags.c_contiguous:
        raise RuntimeError("nbgrad: in-place on a view of a non-contiguous tensor that requires "
                           "grad is not supported; clone() the base first")
    isz = b.itemsize
    off = (view._data.__array_interface__["data"][0] - b.__array_interface__["data"][0]) // isz
    strides = tuple(st // isz for st in view._data.strides)
    lin = np.arange(b.size, dtype=np.int64)
    return np.lib.stride_tricks.as_strided(lin[off:], shape=view._data.shape,
                                           strides=tuple(st * 8 for st in strides)).copy()


def _rebase(view, node):
    """PyTorch's CopySlices: the base's new grad_fn routes the region's gradient through the
    in-place op's node; the view becomes an AsStrided view of the new base."""
    from ..autograd.engine import _fit
    from ..autograd.graph import edge
    from .dispatch import new_node
    from .indexing import _scatter_lin, _take_lin
    base = view._base
    lin = _view_positions(view, base)
    shape = base._data.shape

    def copy_slices_vjp(cs, grads):
        g = grads[0]
        gslice = _take_lin(g, lin)
        inner = _fit(node, node.op(node, (gslice,)))
        keep = g - _scatter_lin(gslice, shape, lin)     # g with the view region zeroed
        gbase = keep if inner[0] is None else keep + _scatter_lin(inner[0], shape, lin)
        return (gbase,) + tuple(inner[1:])

    cs = new_node("torch::autograd::CopySlices", (), copy_slices_vjp)
    cs.next_functions = (edge(base),) + node.next_functions[1:]
    cs._in_meta = ((shape, base._dtype),) + node._in_meta[1:]
    base.grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True

    def as_strided_vjp(n, grads):
        return (_scatter_lin(grads[0], shape, lin),)

    vn = new_node("AsStridedBackward0", (), as_strided_vjp)
    vn.next_functions = ((cs, 0),)
    vn._in_meta = ((shape, base._dtype),)
    view.grad_fn = vn
    view._output_nr = 0
    view._requires_grad = True
