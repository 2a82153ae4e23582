"""Array and argument helpers shared by the nn op families (no autograd logic here)."""

import numpy as np

from ... import dtypes as _dt
from ...grad_mode import STATE
from ...kernels.cuda.array import DeviceArray
from ..cuda import device_of


def compute_dtype(dt):
    """numpy compute dtype of an nbgrad float dtype (float16 is storage-only on CPU)."""
    return np.dtype(np.float32) if dt is _dt.float16 else np.dtype(dt.np)


def carray(t, cd):
    """A C-contiguous compute-dtype array of tensor ``t`` (no copy when it already is one),
    on ``t``'s device."""
    a = t._data
    if type(a) is DeviceArray:  # NOTE [device storage]
        return a.astype(cd, copy=False).contiguous()
    return np.ascontiguousarray(a, dtype=cd)


def on_cuda(*tensors):
    """Whether the operands (tensors or None) live on CUDA; raises PyTorch's same-device error
    when they are split between devices (``device_of``)."""
    for t in tensors:
        if t is not None and type(t._data) is DeviceArray:
            device_of(*tensors)
            return True
    return False


def needs(node, i):
    """Whether input slot ``i`` of ``node`` takes a gradient."""
    return node.next_functions[i][0] is not None


def check_float(x, fn):
    """PyTorch's dispatch error for a kernel without integer support (``fn``: its kernel name)."""
    if not x._dtype.is_inexact:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (fn, x._dtype._legacy))
    if x._dtype.is_complex:
        raise RuntimeError("%s: complex tensors are not supported" % fn)


def check_no_grad(t, fn, name):
    if t is not None and STATE.enabled and t._requires_grad:
        raise RuntimeError(
            "The function '%s' is not differentiable with respect to argument "
            "'%s'. This input cannot have requires_grad True." % (fn, name)
        )


def size_str(shape):
    """``torch.Size([...])`` as PyTorch prints it in messages."""
    return "torch.Size(%s)" % (list(shape),)
