"""Allocating CUDA arrays (``empty``, ``from_host``, ``wrap``); the storage class itself,
``DeviceArray``, lives in ``nbgrad/_devarray.py`` (NOTE [device storage]), below the tensor."""

import math

import numpy as np

from ..._devarray import CUDA0, DeviceArray, c_strides

__all__ = ["DeviceArray", "CUDA0", "c_strides", "empty", "from_host", "wrap"]


def empty(shape, dtype):
    from numba import cuda  # lazy: this module is imported by every tensor (the class)

    shape = tuple(int(s) for s in shape)
    return DeviceArray(cuda.device_array(max(math.prod(shape), 1), dtype=np.dtype(dtype)), shape)


def from_host(arr):
    """A device copy of a numpy array (C order)."""
    from numba import cuda

    shape = np.shape(arr)  # (np.ascontiguousarray makes a 0-d array 1-d)
    a = np.ascontiguousarray(arr)
    if a.size == 0:
        return empty(shape, a.dtype)
    flat = a.reshape(-1)
    if flat.strides[0] != flat.itemsize:  # a one-element view may keep a negative stride
        flat = flat.copy()
    return DeviceArray(cuda.to_device(flat), shape)


def wrap(devarr):
    """A ``DeviceArray`` over a C-contiguous numba device array (a kernel's output)."""
    shape = devarr.shape
    return DeviceArray(devarr.reshape(-1) if len(shape) != 1 else devarr, shape)
