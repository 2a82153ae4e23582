"""Creation functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), rand*,
arange, linspace, eye."""

import numbers
import warnings

import numpy as np

from . import dtypes as _dt, random as _random
from ._tensor import Tensor, _dense, _to_array
from .device import check_device

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "arange",
    "linspace",
    "eye",
    "scalar_tensor",
]


def _finish(arr, device, requires_grad):
    check_device(device)
    t = Tensor._make(arr)
    if requires_grad:
        if not t._dtype.is_inexact:
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        t._requires_grad = True
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Copy ``data`` into a new leaf tensor (``torch.tensor``)."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
            "requires_grad_(True), rather than torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    arr = _to_array(data, dtype)
    arr = np.array(arr, copy=True, order="C")
    return _finish(arr, device, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or _dt._default[0], device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Share memory with ``data`` when it already is a Tensor / ndarray of the right dtype."""
    if isinstance(data, Tensor):
        if dtype is None or _dt.as_dtype(dtype) is data._dtype:
            return data
        return data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or _dt.as_dtype(dtype).np == data.dtype):
        return from_numpy(data) if data.dtype in _dt._FROM_NP else tensor(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """Zero-copy: the tensor and the array share memory."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError("expected np.ndarray (got %s)" % type(ndarray).__name__)
    _dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(
                "empty(): argument 'size' must be tuple of ints, but found element of "
                "type %s" % type(s).__name__
            )
        if s < 0:
            raise RuntimeError(
                "Trying to create tensor with negative dimension %d: %s" % (s, list(size))
            )
        shape.append(int(s))
    return tuple(shape)


def _dtype_or_default(dtype):
    return _dt.as_dtype(dtype) if dtype is not None else _dt._default[0]


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.zeros(_shape(size), _dtype_or_default(dtype).np), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.ones(_shape(size), _dtype_or_default(dtype).np), device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    return _finish(np.empty(_shape(size), _dtype_or_default(dtype).np), device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = _dt.scalar_dtype(fill_value)
        if isinstance(fill_value, Tensor):
            dtype = fill_value._dtype
    d = _dt.as_dtype(dtype)
    return _finish(
        np.full(
            _shape((size,)) if not isinstance(size, numbers.Integral) else (int(size),),
            _scalar(fill_value),
            d.np,
        ),
        device,
        requires_grad,
    )


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def _like(t, dtype):
    if not isinstance(t, Tensor):
        raise TypeError("expected a Tensor, got %s" % type(t).__name__)
    return (_dt.as_dtype(dtype) or t._dtype).np


def _empty_like(input, dtype):
    """Same strides as ``input`` when it is dense (PyTorch's preserve_format), else C order."""
    a = input._data
    if _dense(a):
        return np.empty_like(a, dtype=dtype)
    return np.empty(a.shape, dtype)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    out = _empty_like(input, _like(input, dtype))
    out[...] = 0
    return _finish(out, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    out = _empty_like(input, _like(input, dtype))
    out[...] = 1
    return _finish(out, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(_empty_like(input, _like(input, dtype)), device, requires_grad)


def full_like(
    input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None
):
    out = _empty_like(input, _like(input, dtype))
    out[...] = _scalar(fill_value)
    return _finish(out, device, requires_grad)


def _float_dtype(dtype, fn):
    d = _dtype_or_default(dtype)
    if not d.is_inexact:
        raise RuntimeError("\"%s\" not implemented for '%s'" % (fn, d._legacy))
    return d


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    d = _float_dtype(dtype, "check_uniform_bounds")
    arr = _random.rng(generator).random(_shape(size), dtype=np.float64).astype(d.np)
    return _finish(arr, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    d = _float_dtype(dtype, "normal_kernel_cpu")
    arr = _random.rng(generator).standard_normal(_shape(size)).astype(d.np)
    return _finish(arr, device, requires_grad)


def randint(
    low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(
            "random_ expects 'from' to be less than 'to', but got from=%d >= to=%d" % (low, high)
        )
    d = _dt.as_dtype(dtype) or _dt.int64
    arr = _random.rng(generator).integers(low, high, size=_shape((size,))).astype(d.np)
    return _finish(arr, device, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    out = _empty_like(input, _like(input, dtype))
    out[...] = rand(*input.shape, dtype=dtype or input._dtype)._data
    return _finish(out, device, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    out = _empty_like(input, _like(input, dtype))
    out[...] = randn(*input.shape, dtype=dtype or input._dtype)._data
    return _finish(out, device, requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    start, end, step = (_scalar(v) for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        d = _dt._default[0] if is_float else _dt.int64
    else:
        d = _dt.as_dtype(dtype)
    n = int(np.ceil((end - start) / step))
    arr = start + step * np.arange(n, dtype=np.float64 if d.is_inexact else np.int64)
    return _finish(arr.astype(d.np), device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    d = _dtype_or_default(dtype)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    arr = np.linspace(_scalar(start), _scalar(end), int(steps)).astype(d.np)
    return _finish(arr, device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    return _finish(
        np.eye(n, m if m is not None else n, dtype=_dtype_or_default(dtype).np),
        device,
        requires_grad,
    )
