"""Public functions of the elementwise ops: generated from the registry (``nbgrad.exp``, ...)
except where PyTorch's signature needs more (``add(alpha=)``, ``div(rounding_mode=)``, scalar
overloads of ``pow``/``remainder``/``lerp``, ``clamp`` bounds): those are written here with
``@implements``."""

import math
import numbers

import numpy as np

from .. import _flags, dtypes as _dt
from .._tensor import Tensor
from ..autograd.profiler import op_call
from ..creation import tensor
from ..kernels.cuda.array import DeviceArray
from . import pointwise as _table  # (fills the registry)
from .dispatch import (
    any_strided,
    binary,
    broadcast_error,
    cast,
    needs_grad,
    pointwise,
    pointwise_dtype,
    torch_layout,
    unary,
)
from .indexing import nonzero
from .registry import (
    FUNCTION,
    INPLACE,
    METHOD,
    OUT,
    REGISTRY,
    implements,
    op,
    result,
    write_out,
)

R = REGISTRY
U = _table.UNLISTED  # internal: conj and real for the complex backward (not in REGISTRY)
_make = Tensor._make


def _t(x, fn="op"):
    if not isinstance(x, Tensor):
        raise TypeError(
            "%s(): argument 'input' (position 1) must be Tensor, not %s" % (fn, type(x).__name__)
        )
    return x


def _operand(x):
    """Tensors pass through; numbers stay Python scalars; arrays/lists become tensors."""
    if isinstance(x, (Tensor, numbers.Number)):
        return x
    if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
        return tensor(x)
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError("unsupported operand type: %s" % type(x).__name__)


# -- generated: one function per registry op that declares none of its own -----------------


def _unary(op):
    name = op.name

    def f(input, *, out=None):
        if out is None and isinstance(input, Tensor):
            return unary(op, input)
        return write_out(pointwise(op, (_t(input, name),)), out, name, inputs=(input,))

    f.__doc__ = "Elementwise ``%s`` (see ``torch.%s``)." % (op.formula, name)
    return f


def _binary(op):
    name = op.name

    def f(input, other, *, out=None):
        if out is None and isinstance(input, Tensor):
            return binary(op, input, other)
        return write_out(
            pointwise(op, (_t(input, name), _operand(other))), out, name, inputs=(input, other)
        )

    f.__doc__ = "Elementwise ``%s`` (see ``torch.%s``)." % (op.formula, name)
    return f


def _compare(op):
    uf, name = op.numpy, op.name

    def f(input, other, *, out=None):
        if _flags.PROFILE:  # NOTE [profiler flag]
            return op_call(name, f_, (input, other), {"out": out} if out is not None else {})
        return f_(input, other, out=out)

    def f_(input, other, *, out=None):
        a = input._data if isinstance(input, Tensor) else input
        o = _operand(other)
        b = o._data if isinstance(o, Tensor) else o
        if type(a) is DeviceArray or type(b) is DeviceArray:  # NOTE [device storage]
            from .cuda.pointwise import compare  # lazy: the CUDA path loads on first use

            return write_out(compare(op, (input, o)), out, name, inputs=(input, other))
        try:
            r = uf(a, b)
        except ValueError:
            raise broadcast_error((input, o)) from None
        r = np.asarray(r)
        if r.ndim > 1 and any_strided((a, b)):
            r = torch_layout(r, (a, b))
        return write_out(_make(r), out, name, inputs=(input, other))

    return f


def _unary_nograd(op):
    uf, name = op.numpy, op.name

    def f(input, *, out=None):
        if _flags.PROFILE:  # NOTE [profiler flag]
            return op_call(name, f_, (input,), {"out": out} if out is not None else {})
        return f_(input, out=out)

    def f_(input, *, out=None):
        x = _t(input, name)
        if type(x._data) is DeviceArray:  # NOTE [device storage]
            from .cuda.pointwise import compare  # lazy: the CUDA path loads on first use

            return write_out(compare(op, (x,)), out, name, inputs=(input,))
        return write_out(_make(np.asarray(uf(x._data))), out, name, inputs=(input,))

    return f


def generate(op):
    """The public function of a pointwise/compare op declared without one."""
    if op.kind == "compare":
        f = (_compare if len(op.args) == 2 else _unary_nograd)(op)
    else:
        f = (_binary if len(op.args) == 2 else _unary)(op)
    f.__name__ = f.__qualname__ = op.name
    op.fn = op.impl = f
    return f


# -- hand-written: PyTorch signatures with more than the operands ---------------------------


@implements("abs")
def abs(input, *, out=None):  # noqa: A001
    if out is None and isinstance(input, Tensor) and not input._dtype.is_complex:
        return unary(R["abs"], input)
    return write_out(
        pointwise(R["abs"], (_t(input, "abs"),)), out, "abs", inputs=(input,)
    )  # complex: real


def div_floor(input, other):
    """``div(input, other, rounding_mode='floor')``: the vocabulary's floor_divide, internal."""
    return div(input, other, rounding_mode="floor")


def noselect(input):
    """The vocabulary's noselect (the identity), internal."""
    return input


def conj(input):
    """Differentiable complex conjugate (the identity on real tensors); internal, for the
    complex backward of ops/formula.py."""
    return pointwise(U["conj"], (input,)) if input._dtype.is_complex else input


def real(input):
    """Differentiable real part (the identity on real tensors); internal, as ``conj``."""
    return pointwise(U["real"], (input,)) if input._dtype.is_complex else input


@implements("round")
def round(input, *, decimals=None, out=None):  # noqa: A001
    if decimals is None:
        return write_out(
            pointwise(R["round"], (_t(input, "round"),)), out, "round", inputs=(input,)
        )
    # round.decimals (RoundBackward1, even for decimals=0): floating point only
    if not _t(input, "round")._dtype.is_inexact:
        raise NotImplementedError("\"round_cpu\" not implemented for '%s'" % input._dtype._legacy)
    d = int(decimals)
    t, neg = 10.0 ** (-d if d < 0 else d), float(d < 0)
    return write_out(
        pointwise(R["round.decimals"], (input,), (t, neg)), out, "round", inputs=(input,)
    )


def _alpha_check(input, other, alpha):
    """PyTorch's alpha_check against the result dtype of add/sub; alpha as the kernel takes it
    (a bool for a bool result: True + 2 * True is True)."""
    dt = _dt.result_type(input, other)
    if isinstance(alpha, bool) and dt is not _dt.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not dt.is_inexact and not isinstance(alpha, numbers.Integral):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if not dt.is_complex and isinstance(alpha, complex):
        raise RuntimeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )
    return bool(alpha) if dt is _dt.bool else alpha


@implements("add")
def add(input, other, *, alpha=1, out=None):
    if alpha == 1 and out is None and isinstance(input, Tensor):
        return binary(R["add"], input, other)
    other = _operand(other)
    if alpha != 1:
        if isinstance(input, Tensor):
            alpha = _alpha_check(input, other, alpha)
            if isinstance(other, Tensor):  # one AddBackward0 (PyTorch's), no MulBackward0
                res = pointwise(R["add.alpha"], (input, other), (alpha,))
                return write_out(res, out, "add", inputs=(input, other))
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    if not isinstance(input, Tensor):
        input = _operand(input)
        if not isinstance(input, Tensor):
            return write_out(add(other, input), out, "add", inputs=(input, other))
    return write_out(pointwise(R["add"], (input, other)), out, "add", inputs=(input, other))


@implements("sub")
def sub(input, other, *, alpha=1, out=None):
    if alpha == 1 and out is None and isinstance(input, Tensor) and input._dtype is not _dt.bool:
        return binary(R["sub"], input, other)
    other = _operand(other)
    if input._dtype is _dt.bool and isinstance(other, Tensor) and other._dtype is _dt.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not "
            "supported. Use the `^` or `logical_xor()` operator instead."
        )
    if alpha != 1:
        alpha = _alpha_check(_t(input, "sub"), other, alpha)
        if isinstance(other, Tensor):  # one SubBackward0 (PyTorch's), no MulBackward0
            res = pointwise(R["sub.alpha"], (input, other), (alpha,))
            return write_out(res, out, "sub", inputs=(input, other))
        other = other * alpha
    res = pointwise(R["sub"], (_t(input, "sub"), other))
    return write_out(res, out, "sub", inputs=(input, other))


@implements("rsub")
def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (what ``2 - t`` calls: RsubBackward1; a tensor ``other``:
    RsubBackward0)."""
    if alpha != 1:
        input = mul(input, alpha)
    other = _operand(other)
    return pointwise((R["rsub.Tensor"] if isinstance(other, Tensor) else R["rsub"]), (input, other))


@implements("mul")
def mul(input, other, *, out=None):
    if out is None and isinstance(input, Tensor):
        return binary(R["mul"], input, other)
    if not isinstance(input, Tensor):
        input, other = other, input
    return write_out(
        pointwise(R["mul"], (_t(input, "mul"), _operand(other))), out, "mul", inputs=(input, other)
    )


@implements("div")
def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None and out is None and isinstance(input, Tensor):
        return binary(R["div"], input, other)
    if not isinstance(input, Tensor):
        input = tensor(input, dtype=other._dtype if other._dtype.is_inexact else None)
    other = _operand(other)
    if rounding_mode is None:
        res = pointwise(R["div"], (input, other))
    elif rounding_mode in ("trunc", "floor") and _dt.result_type(input, other).is_inexact:
        res = pointwise(R["div." + rounding_mode], (input, other))  # DivBackward2: zero grads
    elif rounding_mode == "trunc":
        res = unary(R["trunc"], pointwise(R["div"], (input, other)).detach())
        res = _cast_int_result(res, input, other)
    elif rounding_mode == "floor":
        res = floor_divide(input, other).detach()
    else:
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
            "found '%s'" % rounding_mode
        )
    return write_out(res, out, "div", inputs=(input, other))


def _cast_int_result(res, a, b):
    dt = _dt.result_type(a, b)
    return res if dt.is_inexact else _make(res._data.astype(dt.np))


@implements("pow")
def pow(input, exponent, *, out=None):  # noqa: A001
    if not isinstance(input, Tensor):
        # pow(Scalar, Tensor) allocates a contiguous result in PyTorch, whatever the layout
        rp = pointwise(R["rpow"], (_t(exponent, "pow"),), (input,), contiguous=True)
        return write_out(rp, out, "pow", inputs=(input, exponent))
    exponent = _operand(exponent)
    if isinstance(exponent, Tensor):
        return write_out(
            pointwise(R["pow.Tensor"], (input, exponent)), out, "pow", inputs=(input, exponent)
        )
    if not input._dtype.is_inexact and isinstance(exponent, numbers.Integral) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not input._dtype.is_inexact and isinstance(exponent, float):
        input = input.to(_dt._default[0])
    return write_out(
        pointwise(R["pow"], (input,), (exponent,)), out, "pow", inputs=(input, exponent)
    )


@op("square", "composite", variants=(FUNCTION, METHOD, INPLACE, OUT))
def square(input):
    return pow(input, 2)


_CLAMP_OVERLOADS = (
    " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
    " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n"
)


def _as_number(b, args):
    """clamp(x, Tensor, number): PyTorch binds a 0-d tensor that requires no grad to its Number
    overload; any other tensor next to a number matches no overload."""
    if b._data.ndim or b._requires_grad:
        raise TypeError(
            "clamp() received an invalid combination of arguments - got (%s), but expected one "
            "of:\n%s" % (", ".join(["Tensor"] + [type(a).__name__ for a in args]), _CLAMP_OVERLOADS)
        )
    return b.item()


@implements("clamp")
def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if min is not None and max is not None and isinstance(min, Tensor) != isinstance(max, Tensor):
        args = (min, max)
        min = _as_number(min, args) if isinstance(min, Tensor) else min
        max = _as_number(max, args) if isinstance(max, Tensor) else max
    if isinstance(min, Tensor) or isinstance(max, Tensor):  # clamp.Tensor: ClampBackward0
        if min is None:
            r = pointwise(R["clamp.Tensor_max"], (input, max))
        elif max is None:
            r = pointwise(R["clamp.Tensor_min"], (input, min))
        else:
            r = pointwise(R["clamp.Tensor"], (input, min, max))
        return write_out(r, out, "clamp", inputs=(input, min, max))
    if not input._dtype.is_inexact:
        if not isinstance(min, float) and not isinstance(max, float):
            return write_out(
                _make(np.clip(input._data, min, max)), out, "clamp", inputs=(input, min, max)
            )
        input = input.to(_dt._default[0])  # an int tensor clamped to a float bound is float
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    return write_out(
        pointwise(R["clamp"], (input,), (lo, hi)), out, "clamp", inputs=(input, min, max)
    )


@implements("clamp_min")
def clamp_min(input, min, *, out=None):  # noqa: A002
    if isinstance(min, Tensor):
        return write_out(
            pointwise(R["clamp_min.Tensor"], (input, min)), out, "clamp_min", inputs=(input, min)
        )
    if not input._dtype.is_inexact:
        return clamp(input, min=min, out=out)
    return write_out(
        pointwise(R["clamp_min"], (input,), (float(min),)), out, "clamp_min", inputs=(input, min)
    )


@implements("clamp_max")
def clamp_max(input, max, *, out=None):  # noqa: A002
    if isinstance(max, Tensor):
        return write_out(
            pointwise(R["clamp_max.Tensor"], (input, max)), out, "clamp_max", inputs=(input, max)
        )
    if not input._dtype.is_inexact:
        return clamp(input, max=max, out=out)
    return write_out(
        pointwise(R["clamp_max"], (input,), (float(max),)), out, "clamp_max", inputs=(input, max)
    )


@implements("maximum")
def maximum(input, other, *, out=None):
    return write_out(
        pointwise(R["maximum"], (_t(input, "maximum"), _t(other, "maximum"))),
        out,
        "maximum",
        inputs=(input, other),
    )


@implements("minimum")
def minimum(input, other, *, out=None):
    return write_out(
        pointwise(R["minimum"], (_t(input, "minimum"), _t(other, "minimum"))),
        out,
        "minimum",
        inputs=(input, other),
    )


@implements("remainder")
def remainder(input, other, *, out=None):
    if not isinstance(input, Tensor):
        input = tensor(input)
    other = _operand(other)
    if not _dt.result_type(input, other).is_inexact:  # integer remainder by zero: PyTorch raises
        b = other._data if isinstance(other, Tensor) else other
        if np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
    if isinstance(other, Tensor):
        return write_out(
            pointwise(R["remainder.Tensor"], (input, other)),
            out,
            "remainder",
            inputs=(input, other),
        )
    return write_out(
        pointwise(R["remainder"], (input,), (other,)), out, "remainder", inputs=(input, other)
    )


@implements("lerp")
def lerp(input, end, weight, *, out=None):
    # PyTorch's lerp takes no type promotion: end, and a weight tensor of one dimension or
    # more, must have the input's dtype (a 0-d weight is promoted like a scalar)
    if isinstance(input, Tensor):
        for name, t in (("end", end), ("weight", weight)):
            if (
                isinstance(t, Tensor)
                and t._dtype is not input._dtype
                and (name == "end" or t._data.ndim)
            ):
                raise RuntimeError(
                    "expected dtype %s for `%s` but got dtype %s"
                    % (input._dtype.c_name, name, t._dtype.c_name)
                )
    if isinstance(weight, Tensor):
        opdef, inputs, attrs, kernel = R["lerp.Tensor"], (input, end, weight), (), "tensor"
    else:
        opdef, inputs, attrs, kernel = R["lerp"], (input, end), (float(weight),), "scalar"
    if isinstance(input, Tensor):
        dt = pointwise_dtype(opdef, inputs)
        if not dt.is_inexact:
            raise NotImplementedError(
                "\"lerp_kernel_%s\" not implemented for '%s'" % (kernel, dt._legacy)
            )
    return write_out(pointwise(opdef, inputs, attrs), out, "lerp", inputs=(input, end, weight))


@implements("where")
def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor) or condition._dtype is not _dt.bool:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor "
            "with dtype %s" % (getattr(condition, "_dtype", type(condition)),)
        )
    input, other = _operand(input), _operand(other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = tensor(input, dtype=_dt.result_type(input, other))
    return write_out(
        pointwise(R["where"], (condition, input, other)),
        out,
        "where",
        inputs=(condition, input, other),
    )


@implements("masked_fill")
def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool:
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype %s"
            % getattr(mask, "_dtype", type(mask).__name__)
        )
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got "
                "tensor with %d dimension(s)." % value._data.ndim
            )
        if input._dtype.is_inexact:  # MaskedFillBackward1: the value gets a gradient too
            if value._dtype is not input._dtype:
                value = value.to(input._dtype)
            return pointwise(R["masked_fill.Tensor"], (input, mask, value), contiguous=True)
        value = value.item()
    if not input._dtype.is_inexact:
        arr = np.where(mask._data, value, input._data).astype(input._data.dtype)
        return _make(arr)
    # PyTorch clones the input contiguous, then fills: the result is C-contiguous
    value = value if isinstance(value, complex) else float(value)
    return pointwise(R["masked_fill"], (input, mask), (value,), contiguous=True)


@implements("floor_divide")
def floor_divide(input, other, *, out=None):
    if _flags.PROFILE:  # NOTE [profiler flag]
        kw = {"out": out} if out is not None else {}
        return op_call("floor_divide", _floor_divide, (input, other), kw)
    return _floor_divide(input, other, out=out)


def _floor_divide(input, other, *, out=None):
    o = _operand(other)
    dt = _dt.result_type(input, o)
    if dt.is_complex:
        raise NotImplementedError("\"div_floor_cpu\" not implemented for '%s'" % dt._legacy)
    if type(input._data) is DeviceArray or type(getattr(o, "_data", None)) is DeviceArray:
        from .cuda.pointwise import compare  # lazy: the CUDA path loads on first use

        zero = bool((o == 0).any()) if isinstance(o, Tensor) else o == 0
        if not dt.is_inexact and zero:
            raise RuntimeError("ZeroDivisionError")
        r = compare(R["floor_divide"], (input, o))._data
    else:
        r = _floor_divide_host(input, o, dt)
    if dt.is_inexact and needs_grad((input, o)):  # PyTorch: a node whose backward raises
        res = result(r, "torch::autograd::NotImplemented", (input, o), _floor_divide_vjp)
        return write_out(res, out, "floor_divide", inputs=(input, other))
    return write_out(_make(r), out, "floor_divide", inputs=(input, other))


def _floor_divide_host(input, o, dt):
    a = input._data if input._data.dtype == dt.np else cast(input._data, dt.np)
    b = o
    if isinstance(o, Tensor):
        b = o._data if o._data.dtype == dt.np else cast(o._data, dt.np)
    if not dt.is_inexact and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    try:
        with np.errstate(all="ignore"):  # IEEE results, no numpy warnings (PyTorch)
            r = np.floor_divide(a, b)
    except ValueError:
        raise broadcast_error((input, o)) from None
    r = np.asarray(r).astype(dt.np, copy=False)
    if r.ndim > 1 and any_strided((a, b)):
        r = torch_layout(r, (a, b))  # a TensorIterator result in PyTorch
    return r


def _floor_divide_vjp(node, grads):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


@op("equal", "compare", variants=(FUNCTION, METHOD))
def equal(input, other):
    if type(input._data) is DeviceArray or type(other._data) is DeviceArray:
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(input, other)
        return input._data.shape == other._data.shape and bool((input == other).all())
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


@op("allclose", "compare", variants=(FUNCTION, METHOD))
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if type(input._data) is DeviceArray or type(other._data) is DeviceArray:
        return bool(isclose(input, other, rtol, atol, equal_nan).all())
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@op("isclose", "compare", variants=(FUNCTION, METHOD))
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if type(input._data) is DeviceArray or type(other._data) is DeviceArray:
        from .cuda.pointwise import isclose as cuda_isclose  # lazy: the CUDA path

        return cuda_isclose(input, other, rtol, atol, equal_nan)
    return _make(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


# -- second tier: atan2 hypot logaddexp (Tensor, Tensor), fmod and xlogy (scalar overloads) --


def _tensor_other(other, fn):
    if not isinstance(other, Tensor):
        raise TypeError(
            "%s(): argument 'other' (position 2) must be Tensor, not %s"
            % (fn, type(other).__name__)
        )
    return other


def _float_only(input, other, fn):
    """hypot and logaddexp have floating kernels only: PyTorch's error for another result."""
    dt = _dt.result_type(input, other)
    if not dt.is_inexact:
        raise NotImplementedError("\"%s_cpu\" not implemented for '%s'" % (fn, dt._legacy))


@implements("atan2")
def atan2(input, other, *, out=None):
    op = R["atan2"]
    return write_out(
        pointwise(op, (_t(input, "atan2"), _tensor_other(other, "atan2"))),
        out,
        "atan2",
        inputs=(input, other),
    )


@implements("hypot")
def hypot(input, other, *, out=None):
    _float_only(_t(input, "hypot"), _tensor_other(other, "hypot"), "hypot")
    return write_out(pointwise(R["hypot"], (input, other)), out, "hypot", inputs=(input, other))


@implements("logaddexp")
def logaddexp(input, other, *, out=None):
    _float_only(_t(input, "logaddexp"), _tensor_other(other, "logaddexp"), "logaddexp")
    return write_out(
        pointwise(R["logaddexp"], (input, other)), out, "logaddexp", inputs=(input, other)
    )


@implements("fmod")
def fmod(input, other, *, out=None):
    if not isinstance(input, Tensor):
        raise TypeError(
            "fmod() received an invalid combination of arguments - got (%s, %s), but expected "
            "one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, "
            "Number other, *, Tensor out = None)\n" % (type(input).__name__, type(other).__name__)
        )
    other = _operand(other)
    dt = _dt.result_type(input, other)
    if dt is _dt.bool:
        raise NotImplementedError("\"fmod_cpu\" not implemented for 'Bool'")
    if not dt.is_inexact and not dt.is_complex:  # integer fmod by zero: PyTorch raises
        b = other._data if isinstance(other, Tensor) else other
        if np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
    if isinstance(other, Tensor):
        res = pointwise(R["fmod.Tensor"], (input, other))
    else:
        if input._dtype is not dt:  # an integer (or bool) tensor and a float (or int) number
            input = input.to(dt)
        res = pointwise(R["fmod"], (input,), (other,))
    return write_out(res, out, "fmod", inputs=(input, other))


def _xlogy_complex(a, b):
    dt = _dt.result_type(a, b)
    if dt.is_complex:
        raise NotImplementedError("\"xlogy_cpu\" not implemented for '%s'" % dt._legacy)


_XLOGY_OVERLOADS = (
    " * (Tensor input, Tensor other, *, Tensor out = None)\n"
    " * (Number self, Tensor other, *, Tensor out = None)\n"
    " * (Tensor input, Number other, *, Tensor out = None)\n"
)


@implements("xlogy")
def xlogy(input, other, *, out=None):
    input, other = _operand(input), _operand(other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        res = pointwise(R["xlogy"], (input, other))
    elif isinstance(other, Tensor):  # xlogy.Scalar_Self: a number times log of a tensor
        _xlogy_complex(input, other)
        res = pointwise(R["xlogy.Scalar_Self"], (other,), (input,))
    elif isinstance(input, Tensor):  # xlogy.Scalar_Other
        _xlogy_complex(input, other)
        res = pointwise(R["xlogy.Scalar_Other"], (input,), (other,))
    else:
        raise TypeError(
            "xlogy() received an invalid combination of arguments - got (%s, %s), but expected "
            "one of:\n%s" % (type(input).__name__, type(other).__name__, _XLOGY_OVERLOADS)
        )
    return write_out(res, out, "xlogy", inputs=(input, other))


def _inplace_not_implemented(name):
    """``Tensor.<name>_`` for acosh/asinh/atanh: PyTorch records ``<Name>Backward1``, whose
    backward raises (derivatives.yaml: not_implemented("inplace version of <name>"))."""
    op = R[name]
    node = name[0].upper() + name[1:] + "Backward1"

    def vjp(node, grads):
        raise NotImplementedError(
            "the derivative for 'inplace version of %s' is not implemented." % name
        )

    def f(input):
        r = unary(op, input.detach())
        if needs_grad((input,)) and input._dtype.is_inexact:
            return result(r._data, node, (input,), vjp)
        return r

    f.__name__ = name
    return f


for _name in ("acosh", "asinh", "atanh"):
    R[_name].hints["inplace"] = _inplace_not_implemented(_name)

for _op in list(REGISTRY.values()):
    if _op.kind in ("pointwise", "compare") and FUNCTION in _op.variants:
        if _op.fn is None:
            generate(_op)
        for _name in _op.public_names:  # module attributes too, for the ops' own vjps
            globals()[_name] = _op.fn
