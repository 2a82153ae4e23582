"""``np.matmul``'s semantics on CUDA arrays, over the tiled shared-memory GEMM of
kernels/cuda/linalg.py: 1-D operands promoted and squeezed back, batch dims broadcast, a
transposed operand (``w.T`` in ``linear``, ``a.mT`` in backward) read in place through the
kernel's transpose flags rather than copied."""

import math

from ...device import CPU, same_device_error
from ...kernels.cuda.array import CUDA0, DeviceArray, empty

__all__ = ["matmul", "mm_arrays"]


def _operand(x, batch):
    """``(dense device array (B, r, c) or (B, c, r) stored, transposed?)`` for ``x`` of shape
    ``batch + (r, c)``; a batch of one stays 1 (the kernel broadcasts it)."""
    r, c = x.shape[-2:]
    nb = math.prod(x.shape[:-2])
    bsize = math.prod(batch)
    if nb == 1 and bsize != 1:
        x = x.reshape(1, r, c)
    else:
        x = x.broadcast_to(tuple(batch) + (r, c))
        if nb != bsize:  # a broadcast batch: materialise it
            x = x.contiguous()
        x = x.reshape(bsize, r, c)
    if not x.is_c_contiguous:
        t = x.transpose(0, 2, 1)
        if t.is_c_contiguous:
            return t.dense(), True
        x = x.contiguous()
    return x.dense(), False


def matmul(a, b):
    """``a @ b`` for CUDA arrays with numpy's rules; raises ValueError when the shapes do not
    fit (the callers check shapes first and raise PyTorch's messages)."""
    from ...kernels.cuda.linalg import matmul_t_cuda  # lazy: the CUDA path loads on first use

    if type(a) is not DeviceArray or type(b) is not DeviceArray:
        raise same_device_error(CUDA0, CPU)
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a.reshape(1, a.shape[0])
    if vb:
        b = b.reshape(b.shape[0], 1)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError("matmul: mismatch %s @ %s" % (a.shape, b.shape))
    from .. import shape as _shape  # lazy: the CUDA path loads on first use

    batch = _shape.broadcast_shape([a.shape[:-2], b.shape[:-2]])
    m, n = a.shape[-2], b.shape[-1]
    da, ta = _operand(a, batch)
    db, tb = _operand(b, batch)
    bsize = math.prod(batch)
    out = empty((bsize, m, n), a.dtype)
    if out.size:
        matmul_t_cuda(da, db, out.dense(), ta, tb)
    shape = tuple(batch) + (m, n)
    if va:
        shape = shape[:-2] + (n,)
    if vb:
        shape = shape[:-1]
    return out.reshape(shape)


def mm_arrays(a, b):
    """The matmul of two arrays on either device (CPU: numpy's BLAS matmul)."""
    if type(a) is DeviceArray or type(b) is DeviceArray:
        return matmul(a, b)
    import numpy as np

    from ..._fpstate import call_quiet  # lazy: the CUDA path loads on first use

    return call_quiet(np.matmul, (a, b))
