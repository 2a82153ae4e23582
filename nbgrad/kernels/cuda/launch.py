"""Host-side launcher for the ``numba.cuda`` pointwise kernels built by kernels/build.py.

The CUDA half of the one-formula design (docs/design.md): a registry op's forward formula and
its fused backward expressions ``g * (partial)`` -- the exact (params, expr) that
``ops.dispatch._plan`` builds for the CPU ufuncs -- compiled by ``build.cuda_kernel`` into a
grid-stride kernel ``k(*inputs, out)`` over 1-D buffers.

This launcher takes host numpy inputs: it broadcasts them, copies them to the device, launches,
and copies the result back.  It is what the simulator test (tests/test_cuda_sim.py) drives; a real
``device='cuda'`` tensor path would keep the buffers on the device instead.

``numba.cuda`` (the numba-cuda package) is imported lazily inside the functions: this module
imports without it, and ``NUMBA_ENABLE_CUDASIM`` is read when numba is first imported
(NUMBA-NOTES section 6.2).
"""
from collections.abc import Mapping

import numpy as np

from ..build import cuda_kernel

__all__ = ["pointwise_plan", "run_pointwise_cuda", "MAX_THREADS_PER_BLOCK", "MAX_BLOCKS"]

# Grid-stride kernels are correct for any grid; keep blocks small (the simulator runs one Python
# thread per CUDA thread, NUMBA-NOTES 6.2) and cap the block count (6.3).
MAX_THREADS_PER_BLOCK = 64
MAX_BLOCKS = 1024


def _op(op):
    if isinstance(op, str):
        from ...ops.registry import REGISTRY
        try:
            op = REGISTRY[op]
        except KeyError:
            raise KeyError("no registry op named %r" % (op,)) from None
    if op.kind != "pointwise":
        raise ValueError("%r is not a pointwise op" % (op.name,))
    return op


def pointwise_plan(op, role):
    """``(tag, params, expr, param_types)`` of ``op``'s kernel for ``role``.

    ``role`` is ``'fwd'`` (params ``op.args + op.attrs``, the formula) or ``'vjp<i>'`` (params
    ``('g',) + names used``, ``'g * (partial_i)'``, taken from ``dispatch._plan`` so CPU and CUDA
    build from the same strings).  Passing the tuple to ``cpu_kernel`` or ``cuda_kernel`` gives
    the matching CPU ufunc or CUDA kernel.
    """
    op = _op(op)
    param_types = {n: "bool" for n in op.bool_args}
    if role == "fwd":
        return op.name, op.args + op.attrs, op.formula, param_types
    if role.startswith("vjp") and role[3:].isdigit():
        i = int(role[3:])
        from ...ops.dispatch import _plan  # lazy: ops imports kernels
        plan = _plan(op)
        if i >= len(plan):
            raise ValueError("%r has %d partials; no %s" % (op.name, len(plan), role))
        if plan[i] is None:
            raise ValueError("%r has no derivative for input %d (%s)"
                             % (op.name, i, op.args[i]))
        params, expr, _const = plan[i]
        # same tag as dispatch.pointwise_vjp uses for the CPU kernel
        return "%s_vjp%d" % (op.name, i), params, expr, param_types
    raise ValueError("role must be 'fwd' or 'vjp<i>', got %r" % (role,))


def run_pointwise_cuda(op, role, arrays, dtype, *, threads_per_block=MAX_THREADS_PER_BLOCK,
                       max_blocks=MAX_BLOCKS, stream=0):
    """Evaluate ``op``'s ``role`` kernel (see ``pointwise_plan``) on a CUDA device.

    ``arrays``: a mapping name -> array/scalar (extra names are ignored, so one dict of
    ``g``/inputs/``out``/attributes serves every role), or a sequence in the plan's param order.
    ``dtype``: the compute dtype name (``'float32'``, ``'float64'``, ...); inputs are cast to it,
    except the op's boolean arguments (``where``'s ``c``), which are cast to bool.  Inputs are
    broadcast against each other; returns a host numpy array of the broadcast shape.
    """
    from numba import cuda  # lazy (0.5-1.2 s; honours NUMBA_ENABLE_CUDASIM)

    dtype = np.dtype(dtype).name
    tag, params, expr, param_types = pointwise_plan(op, role)
    if isinstance(arrays, Mapping):
        missing = [p for p in params if p not in arrays]
        if missing:
            raise KeyError("%s %s needs %s" % (tag, params, missing))
        values = [arrays[p] for p in params]
    else:
        values = list(arrays)
        if len(values) != len(params):
            raise TypeError("%s takes %d arrays %s, got %d"
                            % (tag, len(params), params, len(values)))
    values = [np.asarray(v, dtype=np.bool_ if param_types.get(p) == "bool" else dtype)
              for p, v in zip(params, values)]
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
