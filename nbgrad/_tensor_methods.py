"""Install the Tensor surface: every registry op's method and in-place variant (declared in its
OpDef), then the hand-written rest: operators, conversions, fills and copies.

Kept out of _tensor.py so the class file stays about storage and autograd fields.
"""

import numbers
import warnings

import numpy as np

from . import _flags, creation, cuda as _cuda_mod, dtypes as _dt, random as _random
from ._devarray import DeviceArray
from ._tensor import Tensor
from .autograd.dual import set_tangent, tangent_of
from .autograd.inplace import check_inplace, inplace, setitem
from .device import as_device, check_device
from .ops import indexing, linalg, pointwise_fns as pw, shape
from .ops.dispatch import binary as _binary
from .ops.registry import INPLACE, METHOD, REGISTRY, result

_make = Tensor._make


def _make_inplace(fn, name):
    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def install(op):
    """Put ``op``'s declared Tensor variants on Tensor (method and/or ``name_`` in place)."""
    for name in op.public_names:
        if METHOD in op.variants:
            setattr(Tensor, name, op.fn)
        if INPLACE in op.variants:  # hint "inplace": an op whose in-place form records another node
            setattr(Tensor, name + "_", _make_inplace(op.hints.get("inplace", op.fn), name + "_"))


for _op in REGISTRY.values():
    install(_op)


def where(self, condition, other):
    return pw.where(condition, self, other)


Tensor.where = where


def _operand(o):
    if isinstance(o, (Tensor, numbers.Number)):
        return o
    if isinstance(o, np.generic):
        return o.item()
    return NotImplemented


def _eq(self, other):
    """``==``; an ndarray is compared as a tensor (PyTorch's ``__eq__``, unlike its ``!=``, ``<``
    and arithmetic, which leave an ndarray to NumPy: ``t + a`` is ``np.add(t, a)`` wrapped back
    into a tensor by ``Tensor.__array_wrap__``)."""
    if _operand(other) is not NotImplemented:
        return pw.eq(self, other)
    if not isinstance(other, np.ndarray) or other.dtype.kind not in "biufc":
        return False
    if any(st < 0 for st in other.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().) "
        )
    return pw.eq(self, creation.from_numpy(other))


def _binop(fn, reflected=False):
    def op(self, other):
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return op


def _rtruediv(self, other):
    other = _operand(other)
    if other is NotImplemented:
        return NotImplemented
    return (
        pw.mul(pw.reciprocal(self), other)
        if isinstance(other, numbers.Number) and self._dtype.is_inexact
        else pw.div(other, self)
    )


def _rfloordiv(self, other):
    return pw.floor_divide(
        creation.tensor(other, dtype=self._dtype if isinstance(other, int) else None), self
    )


def _rmod(self, other):
    return pw.remainder(creation.tensor(other), self)


def _check_bool(self, other, name):
    if self._dtype.is_inexact or (isinstance(other, Tensor) and other._dtype.is_inexact):
        raise RuntimeError("\"%s_cpu\" not implemented for '%s'" % (name, self._dtype._legacy))


def _and(self, other):
    _check_bool(self, other, "bitwise_and")
    o = other._data if isinstance(other, Tensor) else other
    if type(self._data) is not np.ndarray or type(o) is DeviceArray:
        return _bitwise_cuda(self, other, "x & y")
    return _make(np.asarray(np.bitwise_and(self._data, o)))


def _or(self, other):
    _check_bool(self, other, "bitwise_or")
    o = other._data if isinstance(other, Tensor) else other
    if type(self._data) is not np.ndarray or type(o) is DeviceArray:
        return _bitwise_cuda(self, other, "x | y")
    return _make(np.asarray(np.bitwise_or(self._data, o)))


def _xor(self, other):
    _check_bool(self, other, "bitwise_xor")
    o = other._data if isinstance(other, Tensor) else other
    if type(self._data) is not np.ndarray or type(o) is DeviceArray:
        return _bitwise_cuda(self, other, "x ^ y")
    return _make(np.asarray(np.bitwise_xor(self._data, o)))


def _invert(self):
    if self._dtype.is_inexact:
        raise RuntimeError("bitwise_not is only supported for integer and boolean tensors")
    if type(self._data) is DeviceArray:
        return _bitwise_cuda(self, None, "x == 0" if self._dtype is _dt.bool else "~x")
    return _make(np.asarray(np.invert(self._data)))


def _bitwise_cuda(a, b, expr):
    from .ops.cuda.pointwise import bitwise  # lazy: the CUDA path loads on first use

    return bitwise(a, b, expr)


def _inplace_op(fn):
    def op(self, other):
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        return inplace(self, fn, other)

    return op


_FAST = (Tensor, float, int, bool)


def _fast(name, fallback):
    """Operators call the binary fast path directly for Tensor / Python-number operands."""
    op = REGISTRY[name]

    def method(self, other):
        if isinstance(other, _FAST):
            return _binary(op, self, other)
        return fallback(self, other)

    return method


_OPS = {
    "__add__": _fast("add", _binop(pw.add)),
    "__radd__": _fast("add", _binop(pw.add)),
    "__sub__": _binop(pw.sub),
    "__rsub__": lambda s, o: pw.rsub(s, o) if _operand(o) is not NotImplemented else NotImplemented,
    "__mul__": _fast("mul", _binop(pw.mul)),
    "__rmul__": _fast("mul", _binop(pw.mul)),
    "__truediv__": _fast("div", _binop(pw.div)),
    "__rtruediv__": _rtruediv,
    "__floordiv__": _binop(pw.floor_divide),
    "__rfloordiv__": _rfloordiv,
    "__mod__": _binop(pw.remainder),
    "__rmod__": _rmod,
    "__pow__": _binop(pw.pow),
    "__rpow__": _binop(pw.pow, reflected=True),
    "__matmul__": lambda s, o: linalg.matmul(s, o) if isinstance(o, Tensor) else NotImplemented,
    "__rmatmul__": lambda s, o: linalg.matmul(o, s) if isinstance(o, Tensor) else NotImplemented,
    "__neg__": pw.neg,
    "__pos__": lambda s: s,
    "__abs__": pw.abs,
    "__invert__": _invert,
    "__lt__": _binop(pw.lt),
    "__le__": _binop(pw.le),
    "__gt__": _binop(pw.gt),
    "__ge__": _binop(pw.ge),
    "__eq__": _eq,
    "__ne__": lambda s, o: pw.ne(s, o) if _operand(o) is not NotImplemented else True,
    "__and__": _and,
    "__rand__": _and,
    "__or__": _or,
    "__ror__": _or,
    "__xor__": _xor,
    "__rxor__": _xor,
    "__iadd__": _inplace_op(pw.add),
    "__isub__": _inplace_op(pw.sub),
    "__imul__": _inplace_op(pw.mul),
    "__itruediv__": _inplace_op(pw.div),
    "__ipow__": _inplace_op(pw.pow),
    "__ifloordiv__": _inplace_op(pw.floor_divide),
    "__imod__": _inplace_op(pw.remainder),
    "__getitem__": indexing.getitem,
    "__setitem__": setitem,
}
for _n, _f in _OPS.items():
    setattr(Tensor, _n, _f)


# -- properties ------------------------------------------------------------------------------


_WARNED = set()  # PyTorch's TORCH_WARN_ONCE: each deprecation warns once per process


def _warn_once(key, msg):
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(msg, UserWarning, stacklevel=3)


def _T(self):
    nd = self._data.ndim
    if nd == 0:
        _warn_once(
            "T0",
            "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
        )
    elif nd != 2:
        _warn_once(
            "T",
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.",
        )
    # a permute view even for 0-d and 1-d tensors (PermuteBackward0), as PyTorch
    return shape.permute(self, tuple(range(nd - 1, -1, -1)))


def _mT(self):
    if self._data.ndim == 0:  # PyTorch: deprecated, the tensor itself
        _warn_once(
            "mT0",
            "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
        )
        return self
    if self._data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got "
            "%d-D tensor." % self._data.ndim
        )
    return shape.transpose(self, -2, -1)


Tensor.T = property(_T)
Tensor.mT = property(_mT)


# -- conversion ------------------------------------------------------------------------------


def to(self, *args, **kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    for a in args:
        if isinstance(a, Tensor):  # to(other): its dtype and its device
            dtype = a._dtype
            device = a.device
        elif isinstance(a, (_dt.dtype, type)) or (
            isinstance(a, str) and a.replace("torch.", "") in _dt._NAMES
        ):
            dtype = a
        elif a is not None:
            device = a
    if device is not None:
        device = check_device(as_device(device))
        if device == self.device or (device.index is None and device.type == self.device.type):
            device = None
    if dtype is None and device is None:
        return self.clone() if copy else self
    return shape.to_dtype(self, dtype, copy, device)


Tensor.to = to
Tensor.float = lambda self: to(self, _dt.float32)
Tensor.double = lambda self: to(self, _dt.float64)
Tensor.half = lambda self: to(self, _dt.float16)
Tensor.int = lambda self: to(self, _dt.int32)
Tensor.long = lambda self: to(self, _dt.int64)
Tensor.bool = lambda self: to(self, _dt.bool)


def cpu(self, memory_format=None):
    """The tensor in host memory: itself when already there, else a differentiable copy."""
    return self if not self.is_cuda else shape.to_dtype(self, None, False, "cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """The tensor on a CUDA device: itself when already there, else a differentiable copy."""
    d = check_device(as_device(device if device is not None else "cuda"))
    return self if self.is_cuda else shape.to_dtype(self, None, False, d)


Tensor.cpu = cpu


Tensor.cuda = cuda


# Pinned (page-locked) host memory, PyTorch's Tensor.pin_memory / is_pinned.  Without an
# accelerator PyTorch raises on pin_memory() and answers False to is_pinned(); with CUDA (numba
# finds a GPU) nbgrad copies into memory from cuMemHostAlloc (numba.cuda.pinned_array), which
# is_pinned() recognises through the array's base chain (views of pinned memory are pinned).
def _pin_device_arg(name, device):
    if device is None:
        return None
    warnings.warn(
        "The argument 'device' of Tensor.%s() is deprecated. Please do not pass this argument."
        % name,
        DeprecationWarning,
        stacklevel=3,
    )
    return as_device(device)


def _pinned_owner_types():
    if not _cuda_mod.is_available():
        return ()
    driver = _cuda_mod._numba_cuda().cudadrv.driver
    return tuple(
        t for t in (getattr(driver, n, None) for n in ("PinnedMemory", "MappedMemory")) if t
    )


def _array_is_pinned(arr, owner_types):
    b = arr
    while b is not None:
        if isinstance(b, owner_types):
            return True
        if isinstance(b, memoryview):
            b = b.obj
        else:
            b = getattr(b, "base", None)
    return False


def is_pinned(self, device=None):
    """Whether the tensor lives in pinned host memory (``Tensor.is_pinned``)."""
    d = _pin_device_arg("is_pinned", device)
    if d is not None and d.type == "cpu":
        return False
    types = _pinned_owner_types()
    return bool(types) and _array_is_pinned(self._data, types)


def pin_memory(self, device=None):
    """A copy of the tensor in pinned host memory, or the tensor itself when it already is
    pinned (``Tensor.pin_memory``); raises without an accelerator, as PyTorch does."""
    d = _pin_device_arg("pin_memory", device)
    if d is not None and d.type == "cpu":
        raise RuntimeError("CPU device type not an accelerator.")
    types = _pinned_owner_types()
    if not types:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if _array_is_pinned(self._data, types):
        return self
    arr = self._data
    buf = _cuda_mod._numba_cuda().pinned_array(arr.shape, dtype=arr.dtype)
    out = _make(buf)
    return out.copy_(self)  # differentiable: the gradient flows back to self


Tensor.is_pinned = is_pinned
Tensor.pin_memory = pin_memory


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return "torch.%sTensor" % self._dtype._legacy
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        name = dtype.split(".")[-1][:-6]
        for d in _dt.ALL:
            if d._legacy == name:
                return to(self, d)
    return to(self, dtype)


Tensor.type = type_
Tensor.type_as = lambda self, other: to(self, other._dtype)
Tensor.view_as = lambda self, other: shape.view(self, *other._data.shape)
Tensor.reshape_as = lambda self, other: shape.reshape(self, *other._data.shape)


def _new(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return fn(*size, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad)

    return method


Tensor.new_zeros = _new(creation.zeros)
Tensor.new_ones = _new(creation.ones)
Tensor.new_empty = _new(creation.empty)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return creation.full(size, fill_value, dtype=dtype or self._dtype, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return creation.tensor(data, dtype=dtype or self._dtype, requires_grad=requires_grad)


Tensor.new_full = new_full
Tensor.new_tensor = new_tensor


# -- in-place fills and copies ---------------------------------------------------------------


def _fill_vjp(node, grads):
    # PyTorch's zeros_like(grad): exact zeros, never grad * 0 (inf * 0 is NaN), and no graph
    return (creation.zeros_like(grads[0]),) if node.next_functions[0][0] is not None else (None,)


def _filled(self, value, name):
    return result(np.full(self._data.shape, value, self._data.dtype), name, (self,), _fill_vjp)


def zero_(self):
    return inplace(self, _filled, 0, "ZeroBackward0")


def _fill_t_vjp(node, grads):
    """fill_(Tensor): self gets zero_'s gradient, the value the sum of the gradient."""
    gv = grads[0].sum() if node.next_functions[1][0] is not None else None
    return (_fill_vjp(node, grads)[0], gv)


def _filled_t(self, value):
    arr = np.full(self._data.shape, value._data, self._data.dtype)
    return result(arr, "FillBackward3", (self, value), _fill_t_vjp)


def fill_(self, value):
    """PyTorch's fill_.Scalar (FillBackward2) and fill_.Tensor (FillBackward3: the 0-d value
    gets a gradient; an expanded ``self`` is refused, as a copy)."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                "%d dimensions." % value._data.ndim
            )
        return inplace(self, _filled_t, value)
    return inplace(self, _filled, value, "FillBackward2")


def _copy_vjp(node, grads):
    g = grads[0]
    gs = None
    if node.next_functions[1][0] is not None:
        gs = g
    gself = creation.zeros_like(g) if node.next_functions[0][0] is not None else None
    return (gself, gs)


def _copied(self, src):
    if not isinstance(src, Tensor):
        raise TypeError("copy_(): argument 'src' must be Tensor, not %s" % type(src).__name__)
    try:
        arr = np.broadcast_to(src._data, self._data.shape).astype(self._data.dtype)
    except ValueError:
        raise RuntimeError(
            "The size of tensor a (%s) must match the size of tensor b (%s) at "
            "non-singleton dimension" % (list(self._data.shape), list(src._data.shape))
        ) from None
    out = result(np.array(arr), "torch::autograd::CopyBackwards", (self, src), _copy_vjp)
    if _flags.FWD:  # forward mode: the tangent is src's (none: zero, see autograd/inplace.py)
        t = tangent_of(src)
        if t is not None:
            nb = t._data.ndim - src._data.ndim
            lead = t._data.shape[:nb]
            pad = (1,) * (self._data.ndim - src._data.ndim)
            ta = t._data.reshape(lead + pad + src._data.shape)
            set_tangent(out, _make(np.broadcast_to(ta, lead + self._data.shape).astype(arr.dtype)))
    return out


def copy_(self, src, non_blocking=False):
    return inplace(self, _copied, src)


def _random_fill(self, arr):
    check_inplace(self)
    self._data[...] = arr
    self._vc[0] += 1
    return self


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    r = _random.rng(generator).uniform(a, b, self._data.shape)
    return _random_fill(self, r)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    r = _random.rng(generator).normal(mean, std, self._data.shape)
    return _random_fill(self, r)


def bernoulli_(self, p=0.5, *, generator=None):
    return _random_fill(self, _random.rng(generator).random(self._data.shape) < p)


Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
Tensor.bernoulli_ = bernoulli_
