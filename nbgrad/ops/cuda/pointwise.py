"""Pointwise and comparison ops on CUDA tensors: the registry's formula strings through the
strided elementwise kernels (kernels/cuda/elementwise.py), forward and fused backward.

The same steps as the CPU dispatch (ops/dispatch.py): PyTorch's dtype promotion, the compute
dtype (float16 computes in float32), one kernel, one node with the op's declared saves; the
backward without ``create_graph`` evaluates each partial ``g * (d)`` as one fused kernel over
the saved device arrays (the CPU's ``_vjp_arrays``), with ``create_graph`` the differentiable
formulas run as nbgrad ops, which land here again.
"""

import numpy as np

from ... import _flags, dtypes as _dt
from ..._tensor import Tensor
from ...autograd.saved import SavedOutput, SavedTensor
from ...grad_mode import STATE
from ...kernels.cuda import elementwise
from . import arrays_on_device

__all__ = ["pointwise", "compare", "vjp_arrays", "COMPARE_FORMULAS"]

_make = Tensor._make
_SAVED = (SavedTensor, SavedOutput)

# The comparison ops have numpy ufuncs on the CPU; on CUDA they are formulas like the others
# (computed in the promoted dtype; isinf/isfinite by IEEE arithmetic: inf - inf is NaN).
COMPARE_FORMULAS = {
    "eq": "x == y",
    "ne": "x != y",
    "lt": "x < y",
    "le": "x <= y",
    "gt": "x > y",
    "ge": "x >= y",
    "logical_and": "(x != 0) & (y != 0)",
    "logical_or": "(x != 0) | (y != 0)",
    "logical_xor": "(x != 0) != (y != 0)",
    "logical_not": "x == 0",
    "isnan": "x != x",
    "isinf": "(x == x) & (x - x != x - x)",
    "isfinite": "x - x == x - x",
    "floor_divide": "floor_divide(x, y)",
}


def _not_complex(dt):
    if dt.is_complex:
        raise RuntimeError("nbgrad: complex tensors are not supported on CUDA yet")


def _run(tag, params, expr, cd, values, out_dt, param_types, inputs):
    try:
        return elementwise.run(
            tag, params, expr, cd.name, values, out_dtype=out_dt.np, param_types=param_types
        )
    except elementwise.BroadcastError:
        from ..dispatch import broadcast_error  # cycle: dispatch hands over to this module

        raise broadcast_error(inputs) from None


def pointwise(op, inputs, attrs=()):
    """``dispatch.pointwise`` for operands of which at least one is a CUDA tensor."""
    from ..dispatch import pointwise_dtype  # lazy: the CUDA path loads on first use
    from ..formula import pointwise_jvp  # lazy: the CUDA path loads on first use

    dt = pointwise_dtype(op, inputs)
    _not_complex(dt)
    cd = _dt.float32 if dt is _dt.float16 else dt
    values = arrays_on_device(inputs, scalars_ok=True)
    if op.rule == "real":
        dt = dt.to_real()
    param_types = {n: "bool" for n in op.bool_args}
    out = _run(
        op.name, op.args + op.attrs, op.formula, cd, values + list(attrs), dt, param_types, inputs
    )
    rg = any(isinstance(x, Tensor) and x._requires_grad for x in inputs)
    if rg and STATE.enabled and op.differentiable and dt.is_inexact:
        t = op.record(out, inputs, attrs=(tuple(attrs), cd.name))
    else:
        t = _make(out)
    if _flags.FWD:
        pointwise_jvp(op, inputs, attrs, t)
    return t


def compare(op, inputs):
    """A comparison (or ``floor_divide``) on CUDA operands: a bool result (the promoted dtype
    for ``floor_divide``), no gradient."""
    tensors = [x for x in inputs if isinstance(x, Tensor)]
    dt = _dt.result_type(*inputs) if len(inputs) == 2 else tensors[0]._dtype
    _not_complex(dt)
    cd = _dt.float32 if dt is _dt.float16 else dt
    out_dt = dt if op.name == "floor_divide" else _dt.bool
    params = ("x", "y")[: len(inputs)]
    values = arrays_on_device(inputs, scalars_ok=True)
    return _make(_run(op.name, params, COMPARE_FORMULAS[op.name], cd, values, out_dt, {}, inputs))


def bitwise(a, b, expr):
    """``&``, ``|``, ``^`` (``b`` a tensor or Python int/bool) and ``~`` (``b`` None) of
    integer/bool CUDA tensors, in the promoted dtype."""
    inputs = (a,) if b is None else (a, b)
    dt = _dt.result_type(*inputs) if b is not None else a._dtype
    values = arrays_on_device(inputs, scalars_ok=True)
    params = ("x", "y")[: len(inputs)]
    return _make(_run("bitwise", params, expr, dt, values, dt, {}, inputs))


_ISCLOSE = (
    "where(x == y, True, (fabs(x - y) <= atol + rtol * fabs(y)) & (x - x == 0) & (y - y == 0))"
    " | ((en != 0) & (x != x) & (y != y))"
)


def isclose(a, b, rtol, atol, equal_nan):
    """numpy's isclose (|x - y| <= atol + rtol * |y|, infinities equal only to themselves,
    NaN equal to NaN with ``equal_nan``) in the promoted dtype."""
    dt = _dt.result_type(a, b)
    values = arrays_on_device((a, b), scalars_ok=True)
    return _make(
        _run(
            "isclose",
            ("x", "y", "rtol", "atol", "en"),
            _ISCLOSE,
            dt,
            values + [float(rtol), float(atol), float(bool(equal_nan))],
            _dt.bool,
            {},
            (a, b),
        )
    )


def vjp_arrays(op, node, g, plan):
    """The fused backward of a pointwise op on device arrays (``formula._vjp_arrays``)."""
    attrs, cd = node.attrs
    saved = node.saved
    garr = g._data
    nf = node.next_functions
    out = [None] * len(nf)
    for k, part in plan:
        if part is None or nf[k][0] is None:
            continue
        const = part.const
        if const == 1.0:
            r = garr
        elif const is not None:  # never g * 0: NaN * 0 is NaN (a select, as the CPU)
            expr = "g * 0" if const == 0.0 else "g * %r" % const
            r = elementwise.run("%s_const" % part.tag, ("g",), expr, cd, (garr,))
            if const == 0.0:
                elementwise.assign(r, 0)
        else:
            args = [garr]
            for n, ai, _cast in part.sources:
                if 0 <= ai < len(attrs):
                    v = attrs[ai]
                else:
                    v = saved[n]
                    if type(v) in _SAVED:
                        v = v.array(node)
                    if type(v) is np.ndarray:  # a 0-d CPU operand (a scalar to the kernel)
                        v = v[()].item()
                args.append(v)
            r = elementwise.run(
                part.tag, part.params, part.expr, cd, args, param_types=part.param_types
            )
        out[k] = g if r is garr else _make(r)
    return tuple(out)
