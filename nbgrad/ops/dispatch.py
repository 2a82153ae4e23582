"""Forward dispatch of pointwise ops: promote dtypes, one kernel-cache lookup, run, record.

Hot path (NOTE [per-op cost]): one "grad enabled and an input requires grad" test, one Node
(``OpDef.record``, or the two inlined copies in ``binary``/``unary``), one flag (``_flags.TAPS``)
for listeners and one (``_flags.FWD``) for forward-mode AD.
"""

import numpy as np

from .. import _flags, dtypes as _dt
from .._fpstate import EXTOBJ as _EXTOBJ, IGNORE as _IGNORE, call_quiet as _call_quiet
from .._tensor import Tensor, _dense
from ..autograd.graph import SavedOutput, SavedTensor, edge, next_seq
from ..autograd.profiler import leaf_op
from ..grad_mode import STATE
from ..kernels.build import cpu_kernel
from ..kernels.cuda.array import DeviceArray
from .formula import pointwise_jvp
from .registry import taps

_make = Tensor._make


# NOTE [device check by exception]: the per-op hot paths (binary, unary, pointwise) do not test
# their operands' device: a CUDA operand's DeviceArray refuses numpy ufuncs and Numba's CPU
# kernels with a TypeError (``__array_ufunc__ = None``; Numba cannot type it), and only then
# is the device looked at and the op handed to ops/cuda/pointwise.py (or, for a CPU/CUDA mix,
# PyTorch's same-device error raised there).  Nothing has been recorded or written before the
# kernel call, so starting over is safe; a CPU op pays nothing (-6 % per-op overhead measured
# against two type checks before the call).


def _on_device(inputs):
    for x in inputs:
        if type(getattr(x, "_data", None)) is DeviceArray:
            return True
    return False


def _cuda_pointwise(op, inputs, attrs):
    from .cuda import pointwise as cpw  # lazy: the CUDA path loads on first use

    return cpw.pointwise(op, inputs, tuple(attrs))


def needs_grad(inputs):
    if not STATE.enabled:
        return False
    for t in inputs:
        if isinstance(t, Tensor) and t._requires_grad:
            return True
    return False


def broadcast_error(inputs):
    shapes = [t._data.shape for t in inputs if isinstance(t, Tensor)]
    if len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                return RuntimeError(
                    "The size of tensor a (%d) must match the size of tensor b "
                    "(%d) at non-singleton dimension %d" % (pa[i], pb[i], i)
                )
    return RuntimeError("shape mismatch: %s" % (shapes,))


def torch_layout(out, arrays):
    """``out`` with PyTorch's memory layout for an elementwise result of ``arrays`` (its
    operands in order; Python scalars ignored), where numpy's order='K' lets C order win any
    conflict.  They differ only when an operand is not C-contiguous, so dispatch calls this
    only then; ``out`` itself is returned when its layout already agrees."""
    shape = out.shape
    ops = [a for a in arrays if isinstance(a, np.ndarray) and a.ndim]
    if all(a.flags.c_contiguous and a.shape == shape for a in ops):
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    strides = []
    for a in ops:
        off = len(shape) - a.ndim
        st = [0] * off
        for i in range(a.ndim):
            st.append(0 if a.shape[i] == 1 and shape[off + i] != 1 else a.strides[i])
        strides.append(st)
    return with_perm(out, iter_perm(shape, strides))


def iter_perm(shape, strides):
    """TensorIterator's dim order (``reorder_dimensions``) for operands with these strides
    (one list per operand, broadcast dims 0), innermost first: the *first* operand with a
    strict preference decides each pair (0 strides skipped; equal strides: the smaller dim
    inner), by an insertion sort from the reversed dims."""

    def order(d0, d1):  # > 0: d0 goes outside d1
        for st in strides:
            s0, s1 = abs(st[d0]), abs(st[d1])
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))  # perm[0]: the innermost dim
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = order(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def with_perm(out, perm):
    """``out``'s values in the dense layout whose dims, innermost first, are ``perm``."""
    shape = out.shape
    want = [0] * out.ndim
    step = out.itemsize
    for d in perm:
        want[d] = step
        step *= shape[d]
    if list(out.strides) == want or out.size <= 1:
        return out
    outer_first = perm[::-1]
    res = np.empty([shape[d] for d in outer_first], out.dtype).transpose(np.argsort(outer_first))
    res[...] = out
    return res


def any_strided(arrays):
    """Whether an operand is a non-C-contiguous array of 2+ dims: the only case where the
    result's layout may need ``torch_layout`` (a broadcast first operand leaves the choice to a
    later one in PyTorch, e.g. ``where(mask_1d, x.mT, y)``)."""
    for a in arrays:
        if type(a) is np.ndarray and a.ndim > 1 and not a.flags.c_contiguous:
            return True
    return False


def cast(arr, npd):
    """``arr`` in dtype ``npd`` laid out as PyTorch's ``tensor.to(dtype)`` (preserve_format): a
    dense, non-overlapping array keeps its layout, any other (expanded, stepped) becomes
    C-contiguous; the operands' layouts then decide the result's (TensorIterator casts them
    first), where numpy's ``astype`` would keep an expanded array's stride order."""
    if arr.flags.c_contiguous or _dense(arr):
        return arr.astype(npd)
    return arr.astype(npd, order="C")


def pointwise_dtype(op, inputs):
    a = inputs[0]
    if len(inputs) == 1:
        dt = a._dtype
    elif len(inputs) == 2 and not op.bool_args:
        b = inputs[1]
        tb = type(b)
        ad = a._dtype
        if tb is float and ad.is_inexact:
            dt = ad
        elif tb is int and ad.category >= 1:
            dt = ad
        elif isinstance(b, Tensor) and b._dtype is ad:
            dt = ad
        else:
            dt = _dt.result_type(a, b)
    else:
        dt = _dt.result_type(*[x for x, n in zip(inputs, op.args) if n not in op.bool_args])
    if not dt.is_inexact and op.rule == "float":
        dt = _dt._default[0]
    return dt


def complex_check(op, dt):
    """PyTorch's error for an op it does not implement for complex ``dt`` (hint
    ``complex_error``: exception type and message, ``%s`` the dtype's legacy name)."""
    err = op.hints.get("complex_error")
    if err is not None and dt.is_complex:
        exc, msg = err
        raise exc(msg % dt._legacy if "%s" in msg else msg)


def _kernel(op, cd, with_attrs):
    """The forward kernel of ``op`` for compute dtype ``cd`` (one dict lookup when warm; a
    complex dtype the op rejects never gets an entry, so it raises on every call)."""
    key = (cd, with_attrs)
    k = op._cache.get(key)
    if k is None:
        complex_check(op, cd)
        if (
            op.numpy is not None
            and (not with_attrs or op.hints.get("numpy_attrs"))
            and not (cd is _dt.float32 and op.hints.get("vmath"))
        ):
            k = op.numpy
        else:
            k = cpu_kernel(
                op.name, op.args + op.attrs, op.formula, cd.name, {n: "bool" for n in op.bool_args}
            )
        op._cache[key] = k
    return k


def pointwise(op, inputs, attrs=(), contiguous=False):
    """The general path: any number of Tensor / scalar arguments, scalar attributes;
    ``contiguous``: a C-contiguous result whatever the inputs' layout (masked_fill)."""
    if _flags.PROFILE:  # NOTE [profiler flag]
        return leaf_op(op.name, pointwise, op, inputs, attrs, contiguous)
    if len(inputs) == 1 and not contiguous and op.rule != "real":
        a = inputs[0]
        if isinstance(a, Tensor) and not a._dtype.is_complex and len(op.args) == 1:
            return unary(op, a, tuple(attrs))
    dt = pointwise_dtype(op, inputs)
    cd = _dt.float32 if dt is _dt.float16 else dt
    npd = cd.np
    arrays = []
    rg = False
    for x, name in zip(inputs, op.args):
        if isinstance(x, Tensor):
            arr = x._data
            if arr.dtype != npd and name not in op.bool_args:
                arr = cast(arr, npd)
            arrays.append(arr)
            if x._requires_grad:
                rg = True
        else:
            arrays.append(x)
    if attrs:
        arrays.extend(attrs)
    try:
        out = _call_quiet(_kernel(op, cd, bool(attrs)), arrays)
    except ValueError:
        raise broadcast_error(inputs) from None
    except TypeError:
        if _on_device(inputs):  # NOTE [device check by exception]
            return _cuda_pointwise(op, inputs, attrs)
        raise
    if type(out) is not np.ndarray:
        if type(out) is DeviceArray:  # a numpy-expression kernel ran on the device operand
            return _cuda_pointwise(op, inputs, attrs)
        out = np.asarray(out)
    if op.rule == "real" and dt.is_complex:  # abs of a complex tensor is real
        dt = dt.to_real()
        if out.dtype.kind == "c":
            out = out.real
    if out.dtype != dt.np:
        out = out.astype(dt.np)
    if contiguous:
        if not out.flags.c_contiguous:
            out = np.ascontiguousarray(out)
    elif out.ndim > 1 and any_strided(arrays):
        out = torch_layout(out, arrays[: len(inputs)])  # the operands as ``cast`` left them
    if rg and STATE.enabled and op.differentiable and dt.is_inexact:
        t = op.record(out, inputs, attrs=(attrs, cd.name))
    else:
        t = _make(out)
    if _flags.FWD:
        pointwise_jvp(op, inputs, attrs, t)
    return t


_SCALAR_CAT = {float: 2, int: 1, bool: 0}


def binary(op, a, b):
    """Fast path of ``pointwise`` for (Tensor, Tensor | Python scalar): the per-op hot path."""
    if _flags.PROFILE:  # NOTE [profiler flag]
        return leaf_op(op.name, binary, op, a, b)
    ad = a._dtype
    cat = _SCALAR_CAT.get(type(b))
    if cat is not None:
        bt = None
        dt = ad if (ad.category >= cat and ad.category > 0) else _dt.result_type(a, b)
    elif isinstance(b, Tensor):
        bt = b
        dt = ad if b._dtype is ad else _dt.result_type(a, b)
    else:
        return pointwise(op, (a, b))
    if not dt.is_inexact and op.rule == "float":
        dt = _dt._default[0]
    cd = _dt.float32 if dt is _dt.float16 else dt
    npd = cd.np
    xa = a._data
    if xa.dtype != npd:
        xa = cast(xa, npd)
    xb = b
    if bt is not None:
        xb = b._data
        if xb.dtype != npd:
            xb = cast(xb, npd)
    k = op._cache.get((cd, False))
    if k is None:
        k = _kernel(op, cd, False)
    token = _EXTOBJ.set(_IGNORE)
    try:
        out = k(xa, xb)
    except ValueError:
        raise broadcast_error((a, b)) from None
    except TypeError:
        if _on_device((a, b)):  # NOTE [device check by exception]
            return _cuda_pointwise(op, (a, b), ())
        raise
    finally:
        _EXTOBJ.reset(token)
    if type(out) is not np.ndarray:
        if type(out) is DeviceArray:  # a numpy-expression kernel ran on the device operand
            return _cuda_pointwise(op, (a, b), ())
        out = np.asarray(out)
    if out.dtype != dt.np:
        out = out.astype(dt.np)
    if bt is not None and xa.ndim > 1 and not xa.flags.c_contiguous:
        out = torch_layout(out, (xa, xb))  # a layout conflict numpy resolves differently
    if (
        (a._requires_grad or (bt is not None and bt._requires_grad))
        and STATE.enabled
        and op.differentiable
        and dt.is_inexact
    ):
        node = op.node.__new__(op.node)
        if bt is None:
            node.next_functions = (edge(a), (None, 0))
            node._in_meta = ((a._data.shape, ad), None)
            saves = op.saves_for[1]
        else:
            node.next_functions = (edge(a), edge(bt))
            node._in_meta = ((a._data.shape, ad), (bt._data.shape, bt._dtype))
            saves = op.saves_for[a._requires_grad | bt._requires_grad << 1]
        node._seq = next_seq()
        node.op = op.vjp
        node.attrs = ((), cd.name)
        t = _make(out, node, 0)
        if saves:
            saved = {}
            for name in saves:
                if name == "x":
                    saved["x"] = SavedTensor(a)
                elif name == "y":
                    saved["y"] = SavedTensor(bt) if bt is not None else b
                else:
                    saved["out"] = SavedOutput(t)
            node.saved = saved
        else:
            node.saved = None
        if _flags.TAPS:
            taps(node)
    else:
        t = _make(out)
    if _flags.FWD:
        pointwise_jvp(op, (a, b), (), t)
    return t


def unary(op, a, attrs=()):
    """Fast path of ``pointwise`` for one real Tensor argument (and scalar attributes)."""
    if _flags.PROFILE:  # NOTE [profiler flag]
        if attrs:
            return leaf_op(op.name, unary, op, a, attrs)
        return leaf_op(op.name, unary, op, a)
    dt = a._dtype
    if not dt.is_inexact and op.rule == "float":
        dt = _dt._default[0]
    cd = _dt.float32 if dt is _dt.float16 else dt
    xa = a._data
    if xa.dtype != cd.np:
        xa = cast(xa, cd.np)
    k = op._cache.get((cd, bool(attrs)))
    if k is None:
        k = _kernel(op, cd, bool(attrs))
    token = _EXTOBJ.set(_IGNORE)
    try:
        out = k(xa, *attrs) if attrs else k(xa)
    except TypeError:
        if type(a._data) is DeviceArray:  # NOTE [device check by exception]
            return _cuda_pointwise(op, (a,), attrs)
        raise
    finally:
        _EXTOBJ.reset(token)
    if type(out) is not np.ndarray:
        if type(out) is DeviceArray:  # a numpy-expression kernel ran on the device operand
            return _cuda_pointwise(op, (a,), attrs)
        out = np.asarray(out)
    if out.dtype != dt.np:
        out = out.astype(dt.np)
    if a._requires_grad and STATE.enabled and op.differentiable and dt.is_inexact:
        node = op.node.__new__(op.node)
        node.next_functions = (edge(a),)
        node._in_meta = ((a._data.shape, a._dtype),)
        node._seq = next_seq()
        node.op = op.vjp
        node.attrs = (attrs, cd.name)
        t = _make(out, node, 0)
        saves = op.saves
        if saves:
            node.saved = {n: (SavedOutput(t) if n == "out" else SavedTensor(a)) for n in saves}
        else:
            node.saved = None
        if _flags.TAPS:
            taps(node)
    else:
        t = _make(out)
    if _flags.FWD:
        pointwise_jvp(op, (a,), attrs, t)
    return t
