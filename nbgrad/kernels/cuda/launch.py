"""Host-side launcher for the grid-stride CUDA kernels that kernels/build.py generates.

It takes a kernel plan ``(tag, params, expr, param_types)`` -- for a registry op,
``ops.formula.kernel_plan`` gives exactly what the CPU side compiles -- and host numpy inputs:
it broadcasts them, copies them to the device, launches, and copies the result back.  The
simulator test (tests/test_cuda_sim.py) drives it; a real ``device='cuda'`` tensor path would
keep the buffers on the device instead.

``numba.cuda`` (the numba-cuda package) is imported inside ``run_formula``: this module imports
without it, and ``NUMBA_ENABLE_CUDASIM`` is read when numba is first imported (NUMBA-NOTES 6.2).
"""

from collections.abc import Mapping

import numpy as np

from ..build import cuda_kernel

__all__ = ["MAX_BLOCKS", "MAX_THREADS_PER_BLOCK", "run_formula"]

# Grid-stride kernels are correct for any grid; keep blocks small (the simulator runs one Python
# thread per CUDA thread, NUMBA-NOTES 6.2) and cap the block count (6.3).
MAX_THREADS_PER_BLOCK = 64
MAX_BLOCKS = 1024


def run_formula(
    plan, arrays, dtype, *, threads_per_block=MAX_THREADS_PER_BLOCK, max_blocks=MAX_BLOCKS, stream=0
):
    """Evaluate the kernel of ``plan = (tag, params, expr, param_types)`` on a CUDA device.

    ``arrays``: a mapping name -> array/scalar (extra names are ignored, so one dict of
    ``g``/inputs/``out``/attributes serves every plan of an op), or a sequence in ``params``
    order.  ``dtype``: the compute dtype name (``'float32'``, ...); inputs are cast to it, except
    parameters typed ``'bool'`` in ``param_types`` (``where``'s ``c``).  Inputs are broadcast
    against each other; returns a host numpy array of the broadcast shape.
    """
    from numba import cuda  # lazy (0.5-1.2 s; honours NUMBA_ENABLE_CUDASIM)

    dtype = np.dtype(dtype).name
    tag, params, expr, param_types = plan
    if isinstance(arrays, Mapping):
        missing = [p for p in params if p not in arrays]
        if missing:
            raise KeyError("%s %s needs %s" % (tag, params, missing))
        values = [arrays[p] for p in params]
    else:
        values = list(arrays)
        if len(values) != len(params):
            raise TypeError(
                "%s takes %d arrays %s, got %d" % (tag, len(params), params, len(values))
            )
    values = [
        np.asarray(v, dtype=np.bool_ if param_types.get(p) == "bool" else dtype)
        for p, v in zip(params, values)
    ]
    bcast = np.broadcast_arrays(*values)
    shape = bcast[0].shape if bcast else ()
    flat = [np.ascontiguousarray(b).ravel() for b in bcast]
    n = flat[0].size if flat else 1
    if n == 0:
        return np.empty(shape, dtype)

    kernel = cuda_kernel(tag, params, expr, dtype, param_types)
    tpb = max(1, min(int(threads_per_block), MAX_THREADS_PER_BLOCK, n))
    blocks = max(1, min((n + tpb - 1) // tpb, int(max_blocks)))
    d_in = [cuda.to_device(a, stream=stream) for a in flat]
    d_out = cuda.device_array(n, dtype=dtype, stream=stream)
    kernel[blocks, tpb, stream](*d_in, d_out)
    return d_out.copy_to_host(stream=stream).reshape(shape)
