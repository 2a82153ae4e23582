"""Creation functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), rand*,
arange, linspace, eye."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt, random as _random
from ._tensor import Tensor, _dense, _to_array
from .device import CPU, as_device, check_device, device as _Device
from .random import Generator

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "from_dlpack",
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
    d = as_device(device)  # None: the default device (set_default_device)
    if d is not CPU and check_device(d).type == "cuda":
        from .ops.transfer import move  # cycle: calls up into the CUDA path

        arr = move(arr, d)
    t = Tensor._make(arr)
    if requires_grad:
        if not t._dtype.is_inexact:
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        t._requires_grad = True
    return t


def tensor(
    data: Any,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """Copy ``data`` (a number, nested lists/tuples, an ndarray, a tensor of any library) into
    a new leaf tensor (``torch.tensor``); the dtype is inferred unless given."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
            "requires_grad_(True), rather than torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    if _is_dlpack(data):  # a torch / CuPy / JAX tensor: read through DLPack, then copied
        data = _dlpack_array(data)
    try:
        arr = _to_array(data, dtype)
    except OverflowError:  # an int beyond int64
        raise ValueError("Overflow when unpacking long long") from None
    arr = np.array(arr, copy=True, order="C")
    return _finish(arr, device, requires_grad)


def scalar_tensor(
    s: complex,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """A 0-d tensor holding ``s`` (the default dtype unless given)."""
    return tensor(s, dtype=dtype or _dt._default[0], device=device, requires_grad=requires_grad)


def as_tensor(
    data: Any, dtype: _dt.dtype | None = None, device: _Device | str | int | None = None
) -> Tensor:
    """Share memory with ``data`` when it already is a Tensor / ndarray of the right dtype."""
    if isinstance(data, Tensor):
        if dtype is None or _dt.as_dtype(dtype) is data._dtype:
            return data
        return data.to(dtype)
    if _has_cuda_interface(data):  # a CuPy / PyTorch / Numba GPU array: shared
        return _from_cuda_array_interface(data, dtype)
    if _is_dlpack(data):  # shares memory with a torch / CuPy / JAX CPU tensor
        data = _dlpack_array(data)
    if isinstance(data, np.ndarray) and (dtype is None or _dt.as_dtype(dtype).np == data.dtype):
        return from_numpy(data) if data.dtype in _dt._FROM_NP else tensor(data)
    return tensor(data, dtype=dtype, device=device)


def _has_cuda_interface(obj):
    """Whether ``obj`` exposes GPU memory (a PyTorch CPU tensor's property raises)."""
    if isinstance(obj, (Tensor, np.ndarray)) or not hasattr(type(obj), "__cuda_array_interface__"):
        return False
    try:
        return obj.__cuda_array_interface__ is not None
    except (AttributeError, RuntimeError, TypeError):
        return False


def _from_cuda_array_interface(obj, dtype=None):
    """A CUDA tensor sharing ``obj``'s device memory (its ``__cuda_array_interface__``); a
    non-contiguous array is copied (nbgrad's storage views one flat buffer)."""
    from numba import cuda  # lazy: numba.cuda only with CUDA data

    from .kernels.cuda.array import wrap  # cycle: creation (graph layer) calls up into CUDA

    dev = cuda.as_cuda_array(obj)  # shares memory, keeps obj alive
    if not dev.is_c_contiguous():  # copied into C order (through the host: rare, documented)
        dev = cuda.to_device(np.ascontiguousarray(dev.copy_to_host()))
    t = Tensor._make(wrap(dev))
    if dtype is not None and _dt.as_dtype(dtype) is not t._dtype:
        t = t.to(dtype)
    return t


def from_dlpack(
    ext_tensor: Any, *, device: _Device | str | int | None = None, copy: bool | None = None
) -> Tensor:
    """A tensor sharing memory with ``ext_tensor``: any object with ``__dlpack__`` (a PyTorch
    tensor, a NumPy array, a CPU CuPy/JAX array, an nbgrad tensor) or a DLPack capsule
    (``torch.utils.dlpack.to_dlpack``; a capsule is consumed once).  ``copy=True`` copies,
    ``copy=False`` raises BufferError when sharing is impossible (NumPy's ``from_dlpack``)."""
    check_device(device)
    if _has_cuda_interface(ext_tensor):  # a CUDA producer: its memory, shared through the
        return _from_cuda_array_interface(ext_tensor)  # CUDA Array Interface (docs/gpu.md)
    dev = getattr(ext_tensor, "__dlpack_device__", None)
    if dev is not None and dev()[0] == 2:  # kDLCUDA without the interface (JAX): the capsule
        return _from_cuda_dlpack(ext_tensor)
    return Tensor._make(_dlpack_array(ext_tensor, copy))


class _CudaMemory:
    """A DLPack import presented through the CUDA Array Interface (numba reads that)."""

    def __init__(self, imported):
        self.imported = imported  # releasing it (garbage collection) hands the memory back
        isz = imported.dtype.itemsize
        self.__cuda_array_interface__ = {
            "shape": imported.shape,
            "strides": tuple(s * isz for s in imported.strides),
            "typestr": imported.dtype.str,
            "data": (imported.ptr, False),
            "version": 3,
        }


def _from_cuda_dlpack(obj):
    from .utils import _dlpack_capsule as dl  # cycle: interop helpers sit above creation

    return _from_cuda_array_interface(_CudaMemory(dl.read(obj.__dlpack__(stream=None))))


class _Capsule:
    """Presents a bare DLPack capsule to ``np.from_dlpack``."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # the capsule's own device field is checked by NumPy when it reads it


def _is_dlpack(data):
    return not isinstance(data, (Tensor, np.ndarray, np.generic)) and hasattr(
        type(data), "__dlpack__"
    )


def _dlpack_array(obj, copy=None):
    if type(obj).__name__ == "PyCapsule":
        obj = _Capsule(obj)
    elif not hasattr(obj, "__dlpack__"):
        raise TypeError(
            "from_dlpack expects an object with __dlpack__ or a DLPack capsule, got %s"
            % type(obj).__name__
        )
    try:
        arr = np.from_dlpack(obj, copy=copy)
    except RuntimeError as e:
        if "device" in str(e).lower():  # a CUDA/ROCm tensor: nbgrad stores data on the CPU
            raise BufferError(
                "nbgrad.from_dlpack: the DLPack tensor is not in CPU memory (%s) and offers no "
                "__cuda_array_interface__ to read it on the GPU: move it to the CPU first "
                "(e.g. .cpu())" % e
            ) from None
        raise
    _dt.from_numpy_dtype(arr.dtype)
    if arr.size == 0:  # nothing to share; NumPy gives an empty import zero strides
        arr = empty_strided_array(arr.shape, contiguous_strides(arr.shape), arr.dtype)
    return arr


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """Zero-copy: the tensor and the array share memory."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError("expected np.ndarray (got %s)" % type(ndarray).__name__)
    _dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray)


_I64_MAX = 2**63 - 1
_U64_MAX = 2**64 - 1


def _type_name(v):
    t = type(v)
    if t.__module__ in ("builtins", __name__.rsplit(".", 1)[0] + "._tensor"):
        return t.__name__
    return "%s.%s" % (t.__module__.split(".")[0], t.__name__)


def _int_arg(v):
    """``v`` as a Python int when PyTorch's parser takes it as one (ints, numpy integers, 0-dim
    integral tensors), else None."""
    if isinstance(v, Tensor):
        if v._data.ndim == 0 and v._dtype.is_integral:
            return int(v._data)
        return None
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    return None


def _shape(size, fn="empty"):
    """PyTorch's parsing of a ``size`` argument (``f(2, 3)`` or ``f((2, 3))``): ints only,
    in the int64 range, and no negative dimension."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
        for k, s in enumerate(size):
            if _int_arg(s) is None:
                raise TypeError(
                    "%s(): argument 'size' (position 1) must be tuple of ints, but found element "
                    "of type %s at pos %d" % (fn, _type_name(s), k)
                )
    elif len(size) == 1 and _int_arg(size[0]) is None:
        raise TypeError(
            "%s(): argument 'size' (position 1) must be tuple of ints, not %s"
            % (fn, _type_name(size[0]))
        )
    shape = []
    for k, s in enumerate(size):
        v = _int_arg(s)
        if v is None:
            if not isinstance(s, bool):
                raise TypeError(
                    "%s(): argument 'size' failed to unpack the object at pos %d with error "
                    '"type must be tuple of ints,but got %s"' % (fn, k + 1, _type_name(s))
                )
            v = int(s)  # PyTorch's parser takes a bool after the first size
        if not -_I64_MAX - 1 <= v <= _I64_MAX:
            raise TypeError(
                "%s(): argument 'size' failed to unpack the object at pos %d with error "
                '"Overflow when unpacking long long"' % (fn, k + 1)
            )
        shape.append(v)
    for s in shape:
        if s < 0:
            if fn == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(
                "Trying to create tensor with negative dimension %d: %s" % (s, shape)
            )
    return tuple(shape)


def _check_alloc(shape, itemsize):
    """PyTorch's checks before allocating a contiguous ``shape`` (EmptyTensor.cpp): the byte
    count must fit in int64 (each partial product of the sizes in uint64), and so must the
    strides; nothing is allocated when they fail.  Returns the byte count."""
    n = 1
    over = False
    for s in shape:
        n *= s
        over = over or n > _U64_MAX
    nbytes = n * itemsize
    if over or nbytes > _I64_MAX:
        raise RuntimeError("Storage size calculation overflowed with sizes=%s" % list(shape))
    if n == 0:  # otherwise every stride is at most numel
        st = 1
        for s in shape[:0:-1]:
            st *= max(s, 1)
            if st > _I64_MAX:
                raise RuntimeError("Stride calculation overflowed")
    return nbytes


def contiguous_strides(shape):
    """PyTorch's contiguous strides in elements (a size-0 dim counts as 1)."""
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def empty_strided_array(shape, strides, npdtype):
    """An uninitialised array of ``shape`` with element ``strides`` (non-negative, dense or
    empty: the storage is the span they cover)."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if 0 not in shape else 0
    buf = np.empty(span, npdtype)
    isz = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, shape, tuple(s * isz for s in strides))


def _alloc(make, shape, dt, *args, itemsize=None):
    """``make(shape, *args, dtype)`` after PyTorch's size checks (for elements of ``itemsize``
    bytes, by default the dtype's); an allocation the system refuses raises PyTorch's
    RuntimeError, not MemoryError."""
    nbytes = _check_alloc(shape, itemsize or dt.itemsize)
    if 0 in shape:  # PyTorch's contiguous strides (numpy's are 0)
        try:
            return empty_strided_array(shape, contiguous_strides(shape), dt.np)
        except ValueError:  # numpy caps the product of the sizes even when one is 0
            raise RuntimeError(
                "nbgrad: an empty tensor of sizes %s cannot be represented (the product of its "
                "non-zero sizes exceeds int64; PyTorch allows it)" % list(shape)
            ) from None
    try:
        return make(shape, *args, dt.np)
    except (MemoryError, ValueError) as e:
        if isinstance(e, ValueError) and "too big" not in str(e):
            raise
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
            "memory: you tried to allocate %d bytes. Error code 12 (Cannot allocate memory)"
            % nbytes
        ) from None


def _dtype_or_default(dtype):
    return _dt.as_dtype(dtype) if dtype is not None else _dt._default[0]


def zeros(
    *size: int | Sequence[int],
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """A tensor of zeros of shape ``size`` (``zeros(2, 3)`` or ``zeros((2, 3))``)."""
    d = _dtype_or_default(dtype)
    return _finish(_alloc(np.zeros, _shape(size, "zeros"), d), device, requires_grad)


def ones(
    *size: int | Sequence[int],
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """A tensor of ones of shape ``size`` (``ones(2, 3)`` or ``ones((2, 3))``)."""
    d = _dtype_or_default(dtype)
    return _finish(_alloc(np.ones, _shape(size, "ones"), d), device, requires_grad)


def empty(
    *size: int | Sequence[int],
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
    out: Tensor | None = None,
) -> Tensor:
    """An uninitialised tensor of shape ``size``."""
    d = _dtype_or_default(dtype)
    return _finish(_alloc(np.empty, _shape(size, "empty"), d), device, requires_grad)


def full(
    size: Sequence[int],
    fill_value: complex,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it unless
    given)."""
    if not isinstance(size, (tuple, list)):  # PyTorch takes no bare int here
        raise TypeError(
            "full(): argument 'size' (position 1) must be tuple of ints, not %s" % _type_name(size)
        )
    if dtype is None:
        dtype = (
            fill_value._dtype if isinstance(fill_value, Tensor) else _dt.scalar_dtype(fill_value)
        )
    d = _dt.as_dtype(dtype)
    shape = _shape((size,), "full")
    return _finish(_alloc(np.full, shape, d, _fill(fill_value, d)), device, requires_grad)


def _fill(v, d):
    """A fill value for dtype ``d`` as PyTorch converts it: a Python int must fit in 64 bits,
    and in the integral dtype (an unsigned one wraps a negative value)."""
    v = _scalar(v)
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        v = int(v)
        if not -(2**63) <= v < 2**64:
            raise OverflowError("int too big to convert")
        if d.is_integral:
            info = np.iinfo(d.np)
            if not (info.min <= v <= info.max or (info.min == 0 and 0 < -v <= info.max)):
                raise RuntimeError(
                    "value cannot be converted to type %s without overflow" % _C_INT[d.name]
                )
            return v % (int(info.max) + 1) if info.min == 0 else v
    return v


_C_INT = {
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
}


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def _like(t, dtype):
    if not isinstance(t, Tensor):
        raise TypeError("expected a Tensor, got %s" % type(t).__name__)
    return (_dt.as_dtype(dtype) or t._dtype).np


def _empty_like(input, dtype):
    """Same strides as ``input`` when it is dense (PyTorch's preserve_format), else C order."""
    a = input._data
    if type(a) is not np.ndarray:  # a CUDA tensor: made on the host, moved by _finish
        return np.empty(a.shape, dtype)
    if _dense(a):
        return np.empty_like(a, dtype=dtype)
    return np.empty(a.shape, dtype)


def zeros_like(
    input: Tensor,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Zeros with the shape (and dtype, unless given) of ``input``."""
    out = _empty_like(input, _like(input, dtype))
    out[...] = 0
    return _finish(out, input.device if device is None else device, requires_grad)


def ones_like(
    input: Tensor,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Ones with the shape (and dtype, unless given) of ``input``."""
    out = _empty_like(input, _like(input, dtype))
    out[...] = 1
    return _finish(out, input.device if device is None else device, requires_grad)


def empty_like(
    input: Tensor,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """An uninitialised tensor with the shape and dtype of ``input``."""
    return _finish(
        _empty_like(input, _like(input, dtype)),
        input.device if device is None else device,
        requires_grad,
    )


def full_like(
    input: Tensor,
    fill_value: complex,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """``fill_value`` everywhere, with the shape (and dtype, unless given) of ``input``."""
    out = _empty_like(input, _like(input, dtype))
    out[...] = _fill(fill_value, _dt.from_numpy_dtype(out.dtype))
    return _finish(out, input.device if device is None else device, requires_grad)


def _float_dtype(dtype, fn):
    d = _dtype_or_default(dtype)
    if not d.is_inexact:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (fn, d._legacy))
    return d


def _as(arr, d):
    """``arr`` cast to dtype ``d`` (an empty one keeps PyTorch's strides)."""
    if arr.size == 0:
        return _alloc(np.empty, arr.shape, d)
    return arr.astype(d.np, copy=False)


def rand(
    *size: int | Sequence[int],
    generator: Generator | None = None,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform samples from ``[0, 1)`` of shape ``size``."""
    d = _float_dtype(dtype, "check_uniform_bounds")
    shape = _shape(size, "rand")
    if generator is None and as_device(device).type == "cuda":
        return _device_random(shape, d, device, requires_grad, "uniform", 0.0, 1.0)
    arr = _alloc(_random.rng(generator).random, shape, _dt.float64, itemsize=d.itemsize)
    return _finish(_as(arr, d), device, requires_grad)


def randn(
    *size: int | Sequence[int],
    generator: Generator | None = None,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples of shape ``size``."""
    d = _float_dtype(dtype, "normal_kernel_cpu")
    shape = _shape(size, "randn")
    if generator is None and as_device(device).type == "cuda":
        return _device_random(shape, d, device, requires_grad, "normal", 0.0, 1.0)
    arr = _alloc(_random.rng(generator).standard_normal, shape, _dt.float64, itemsize=d.itemsize)
    return _finish(_as(arr, d), device, requires_grad)


def _device_random(shape, d, device, requires_grad, kind, a, b):
    """``rand``/``randn`` on a CUDA device: drawn there by the device generator
    (kernels/cuda/random.py; PyTorch's CUDA numbers differ from its CPU ones too)."""
    from .kernels.cuda import array as cuda_array, random as cuda_random  # cycle: up to CUDA

    check_device(device)
    cd = np.float32 if d is _dt.float16 else d.np
    out = cuda_array.empty(shape, cd)
    if out.size:
        fill = cuda_random.uniform_cuda if kind == "uniform" else cuda_random.normal_cuda
        fill(out.dense().reshape(out.size), a, b)
    t = Tensor._make(out.astype(d.np, copy=False))
    if requires_grad:
        t._requires_grad = True
    return t


def _randint_bounds(low, high, d):
    """PyTorch's check_random_bounds / check_from_to_in_range for ``randint``."""
    if d.is_complex:
        raise RuntimeError(
            "check_random_bounds handles only integral, floating-point and boolean types"
        )
    if low >= high:
        raise RuntimeError(
            "random_ expects 'from' to be less than 'to', but got from=%d >= to=%d" % (low, high)
        )
    if d.is_floating_point:
        lo, hi = float(np.finfo(d.np).min), float(np.finfo(d.np).max)
    elif d is _dt.bool:
        lo, hi = 0, 1
    else:
        info = np.iinfo(d.np)
        lo, hi = int(info.min), int(info.max)
    if not lo <= low <= hi:
        raise RuntimeError("from is out of bounds for %s" % d.c_name)
    if not lo <= high - 1 <= hi:
        raise RuntimeError("to - 1 is out of bounds for %s" % d.c_name)
    if d.is_floating_point:
        digits = np.finfo(d.np).nmant + 1
        name = {2: "c10::Half", 4: "float", 8: "double"}[d.itemsize]
        for what, v in (("from", low), ("to - 1", high - 1)):
            if not -(2**digits) <= v <= 2**digits:
                warnings.warn(
                    "%s is out of bounds [-(2^%d), 2^%d]. Due to precision limitations %s can "
                    "support discrete uniform distribution only within this range. This warning "
                    "will become an error in version 1.7 release, please fix the code in advance"
                    % (what, digits, digits, name),
                    UserWarning,
                    stacklevel=3,
                )


def randint(
    low: int = 0,
    high: int | Sequence[int] | None = None,
    size: Sequence[int] | None = None,
    *,
    generator: Generator | None = None,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from ``[low, high)`` (``randint(high, size)`` or
    ``randint(low, high, size)``), int64 unless ``dtype`` is given."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    bounds = (_int_arg(low), _int_arg(high))
    if None in bounds or not isinstance(size, (tuple, list)):
        raise TypeError(
            "randint() received an invalid combination of arguments - got (%s), but expected "
            "one of:" % ", ".join(_type_name(v) for v in (low, high, size))
        )
    low, high = bounds
    if not (-_I64_MAX - 1 <= low <= _I64_MAX and -_I64_MAX - 1 <= high <= _I64_MAX):
        raise ValueError("Overflow when unpacking long long")
    d = _dt.as_dtype(dtype) or _dt.int64
    _randint_bounds(low, high, d)
    shape = _shape((size,), "randint")
    arr = _alloc(
        lambda shape, npd: _random.rng(generator).integers(low, high, shape, npd),
        shape,
        _dt.int64,
        itemsize=d.itemsize,
    )
    return _finish(_as(arr, d), device, requires_grad)


def rand_like(
    input: Tensor,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Uniform ``[0, 1)`` samples with the shape and dtype of ``input``."""
    out = _empty_like(input, _like(input, dtype))
    out[...] = rand(*input.shape, dtype=dtype or input._dtype)._data
    return _finish(out, device, requires_grad)


def randn_like(
    input: Tensor,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Standard normal samples with the shape and dtype of ``input``."""
    out = _empty_like(input, _like(input, dtype))
    out[...] = randn(*input.shape, dtype=dtype or input._dtype)._data
    return _finish(out, device, requires_grad)


def _range_scalar(v):
    v = _scalar(v)
    if isinstance(v, numbers.Integral) and not -_I64_MAX - 1 <= v <= _I64_MAX:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return v


def arange(
    start: float = 0,
    end: float | None = None,
    step: float = 1,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Values from ``start`` to ``end`` (excluded) by ``step``; ``arange(n)`` is ``0..n-1``.
    int64 when all arguments are integers, else the default dtype."""
    start, end, step = (_range_scalar(v) for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        d = _dt._default[0] if is_float else _dt.int64
    else:
        d = _dt.as_dtype(dtype)
    if d is _dt.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    # PyTorch's checks (RangeFactories.cpp), in its order
    if not (step > 0 or step < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError("unsupported range: %s -> %s" % (_g(start), _g(end)))
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    size = math.ceil((end - start) / step)
    if not 0 <= size <= _I64_MAX:
        raise RuntimeError("invalid size, possible overflow?")
    _check_alloc((size,), d.itemsize)
    arr = _alloc(
        lambda shape, npd: np.arange(shape[0], dtype=npd),
        (size,),
        _dt.float64 if d.is_inexact else _dt.int64,
        itemsize=d.itemsize,
    )
    if size:
        arr = (start + step * arr).astype(d.np)
    else:
        arr = _alloc(np.empty, (0,), d)
    return _finish(arr, device, requires_grad)


def _g(v):
    """A number as C++'s ostream prints it (PyTorch's messages)."""
    return "%g" % v if isinstance(v, float) else str(v)


def linspace(
    start: complex,
    end: complex,
    steps: int,
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    if _int_arg(steps) is None:
        raise TypeError(
            "linspace() received an invalid combination of arguments - got (%s), but expected "
            "one of:" % ", ".join(_type_name(v) for v in (start, end, steps))
        )
    steps = _int_arg(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = _dtype_or_default(dtype)
    _check_alloc((steps,), d.itemsize)
    start, end = _scalar(start), _scalar(end)
    if steps == 0:
        arr = _alloc(np.empty, (0,), d)
    elif steps == 1:
        arr = np.full((1,), start, d.np)
    else:
        # PyTorch's kernel: the first half counts up from start, the second half down from
        # end (so NaN/Inf at either end propagate as in PyTorch); integral results truncate
        ct = d.np if d.is_inexact else np.dtype(np.float64)
        with np.errstate(all="ignore"):
            a = np.asarray(start).astype(d.np).astype(ct)[()]
            b = np.asarray(end).astype(d.np).astype(ct)[()]
            step = (b - a) / ct.type(steps - 1)
            i = np.arange(steps)
            half = steps // 2
            up = a + step * i[:half].astype(ct)
            down = b - step * (steps - i[half:] - 1).astype(ct)
            arr = np.concatenate([up, down]).astype(d.np)
    return _finish(arr, device, requires_grad)


_NO_M = object()


def eye(
    n: int,
    m: int = _NO_M,  # type: ignore[assignment]
    *,
    dtype: _dt.dtype | None = None,
    device: _Device | str | int | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """An ``n`` x ``m`` (``m`` defaults to ``n``) matrix with ones on the diagonal."""
    if _int_arg(n) is None:
        raise TypeError("eye(): argument 'n' (position 1) must be int, not %s" % _type_name(n))
    if m is not _NO_M and _int_arg(m) is None:
        raise TypeError(
            "eye() received an invalid combination of arguments - got (%s, %s), but expected "
            "one of:" % (_type_name(n), _type_name(m))
        )
    n = _int_arg(n)
    m = n if m is _NO_M else _int_arg(m)
    if n < 0:
        raise RuntimeError("n must be greater or equal to 0, got %d" % n)
    if m < 0:
        raise RuntimeError("m must be greater or equal to 0, got %d" % m)
    if n * m > _I64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    d = _dtype_or_default(dtype)
    arr = _alloc(np.zeros, (n, m), d)
    np.fill_diagonal(arr, 1)
    return _finish(arr, device, requires_grad)
