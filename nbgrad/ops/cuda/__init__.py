"""The CUDA side of the ops: what an op does when its operands are CUDA tensors (NOTE [device
storage]).  Each CPU implementation that reaches a kernel checks its operand's storage type once
(``type(x._data) is DeviceArray``) and hands over to the function of the same family here; the
autograd side (nodes, saved tensors, hooks, version counters) is shared, so only the array work
differs.  Imported on first use by a CUDA tensor.
"""

import numpy as np

from ...device import CPU, same_device_error
from ...kernels.cuda.array import CUDA0, DeviceArray

__all__ = ["arrays_on_device", "device_of", "xp_of", "kernel_for"]


def xp_of(a):
    """numpy for a numpy array; for a CUDA array the same-named functions of ``xp.py``."""
    if type(a) is np.ndarray:
        return np
    from . import xp  # lazy: the CUDA path loads on first use

    return xp


def kernel_for(a, k):
    """The CPU kernel ``k`` for a numpy ``a``, its CUDA twin for a CUDA ``a``."""
    if type(a) is not DeviceArray:
        return k
    from .xp import kernel  # lazy: the CUDA path loads on first use

    return kernel(a, k)


def device_of(*tensors):
    """The CUDA device of the operands, after checking none lives elsewhere (PyTorch's
    "Expected all tensors to be on the same device"); 0-d CPU tensors are allowed by the
    elementwise ops only (``scalars_ok``)."""
    for t in tensors:
        if t is not None and type(t._data) is not DeviceArray:
            raise same_device_error(CUDA0, CPU)
    return CUDA0


def arrays_on_device(tensors, scalars_ok=False):
    """The operands' data for a CUDA kernel: device arrays, Python scalars as they are, 0-d
    CPU tensors as Python scalars when ``scalars_ok`` (PyTorch lets a CPU scalar tensor join a
    CUDA elementwise op)."""
    out = []
    for t in tensors:
        d = getattr(t, "_data", t)
        if type(d) is DeviceArray or not hasattr(t, "_data"):
            out.append(d)
        elif scalars_ok and d.ndim == 0:
            out.append(d[()].item())
        else:
            raise same_device_error(CUDA0, CPU)
    return out
