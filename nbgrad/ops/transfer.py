"""Moving array data between devices (NOTE [device storage]): the one place that copies
between host memory and a CUDA device.  ``Tensor.to`` / ``cuda()`` / ``cpu()`` record the move
as a ``ToCopyBackward0`` node whose backward moves the gradient back (ops/shape.py)."""

import numpy as np

from ..device import CPU, check_device
from ..kernels.cuda.array import DeviceArray

__all__ = ["array_device", "move", "zeros_on"]


def array_device(arr):
    return arr.device if type(arr) is DeviceArray else CPU


def move(arr, device):
    """``arr`` on ``device`` (itself when already there; a copy otherwise)."""
    device = check_device(device)
    if type(arr) is DeviceArray:
        return arr if device.type == "cuda" else arr.to_host()
    if device.type == "cpu":
        return arr
    from ..kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use

    return from_host(arr)


def zeros_on(shape, npdtype, device):
    if device.type == "cuda":
        from ..kernels.cuda.array import empty  # lazy: the CUDA path loads on first use
        from ..kernels.cuda.elementwise import assign  # lazy: the CUDA path loads on first use

        return assign(empty(shape, npdtype), 0)
    return np.zeros(shape, npdtype)
