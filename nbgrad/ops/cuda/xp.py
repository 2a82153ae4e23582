"""The few numpy functions the ops' array code calls, for CUDA arrays (NOTE [device storage]).

Op code that allocates and reshapes around a kernel call is written once for both devices:
``xp = array_namespace(a)`` is numpy for a numpy array and this module for a ``DeviceArray``;
``kernel(a, K.foo_cpu)`` is the CPU kernel or its CUDA twin taking the same arguments.  Only
layout work lives here; every computation is a Numba CUDA kernel.
"""

import numpy as np

from ...kernels.cuda import array as _a, elementwise as _e, twin as _twin
from ...kernels.cuda.array import DeviceArray

__all__ = [
    "array_namespace",
    "kernel",
    "empty",
    "empty_like",
    "zeros",
    "zeros_like",
    "full",
    "ones",
    "ascontiguousarray",
    "asarray",
    "moveaxis",
    "broadcast_to",
]


def array_namespace(a):
    import sys

    return sys.modules[__name__] if type(a) is DeviceArray else np


def kernel(a, cpu_kernel):
    """``cpu_kernel`` for a numpy ``a``; for a CUDA ``a`` its twin, called with each
    ``DeviceArray`` argument as the dense numba device array the twins take (outputs are
    always freshly allocated, hence dense: written in place)."""
    if type(a) is not DeviceArray:
        return cpu_kernel
    t = _twin(cpu_kernel)

    def call(*args):
        return t(*[x.dense() if type(x) is DeviceArray else x for x in args])

    return call


def empty(shape, dtype=np.float64):
    if isinstance(shape, int):
        shape = (shape,)
    return _a.empty(shape, np.dtype(dtype))


def empty_like(a, dtype=None):
    return _a.empty(a.shape, a.dtype if dtype is None else np.dtype(dtype))


def full(shape, value, dtype=np.float64):
    out = empty(shape, dtype)
    _e.assign(out, value)
    return out


def zeros(shape, dtype=np.float64):
    return full(shape, 0, dtype)


def ones(shape, dtype=np.float64):
    return full(shape, 1, dtype)


def zeros_like(a, dtype=None):
    return full(a.shape, 0, a.dtype if dtype is None else dtype)


def ascontiguousarray(a, dtype=None):
    a = a.contiguous()
    return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)


def asarray(a, dtype=None, order=None):
    if order == "C":
        a = a.contiguous()
    return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)


def moveaxis(a, source, destination):
    nd = a.ndim
    src = source % nd
    dst = destination % nd
    order = [d for d in range(nd) if d != src]
    order.insert(dst, src)
    return a.transpose(order)


def broadcast_to(a, shape):
    return a.broadcast_to(shape)
