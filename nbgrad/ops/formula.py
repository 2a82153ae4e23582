"""Everything that evaluates a pointwise op's formula and partial strings (ops/pointwise.py).

One string, several bindings: the fused Numba backward and the differentiable (``create_graph``)
backward of ``vjp_of``, the forward-mode JVP, the kernel plans the CUDA launcher runs, and the
vocabulary bound to differentiable nbgrad functions that the last three evaluate partials with.
"""

import ast
import re

import numpy as np

from .. import _flags, dtypes as _dt, grad_mode
from .._tensor import Tensor
from ..autograd.batching import batched
from ..autograd.dual import DUAL, set_tangent, tangent_of
from ..autograd.saved import SavedOutput, SavedTensor
from ..creation import tensor
from ..grad_mode import STATE
from ..kernels import vocab
from ..kernels.build import cpu_kernel, cpu_loop, names_in, select_form
from ..kernels.cuda.array import DeviceArray
from .registry import REGISTRY

__all__ = [
    "OP_OF",
    "kernel_plan",
    "names_in",
    "partials_of",
    "pointwise_jvp",
    "pointwise_vjp",
    "tensor_namespace",
    "typed_where",
    "vjp_of",
]

_make = Tensor._make
_NP_OF = {name: d.np for name, d in _dt._NAMES.items()}  # compute dtype name -> numpy dtype
_SAVED = (SavedTensor, SavedOutput)
_HEAVY = "exp exp2 expm1 log log2 log1p tanh sigmoid erf sin cos tan sinh cosh atan spow".split()

# The nbgrad op computing a vocabulary function, where the names differ (same maths).
OP_OF = {"fabs": "abs", "rint": "round", "spow": "pow", "floor_divide": "div_floor"}

# ---------------------------------------------------------------------------------------------
# The vocabulary bound to nbgrad functions

_TENSOR_NS = None


def _lift(tensor_fn, scalar_fn):
    def f(x, *rest):
        if isinstance(x, Tensor):
            return tensor_fn(x, *rest)
        try:
            return scalar_fn(x, *rest)
        except (ValueError, ZeroDivisionError, OverflowError):  # math.log(0): IEEE -inf instead
            return tensor_fn(tensor(float(x), dtype=_dt.float64), *rest).item()

    f.__name__ = scalar_fn.__name__
    return f


def _where(c, a, b):
    if isinstance(c, bool):
        return a if c else b
    return _fns().where(c, a, b)


def _fns():
    from . import pointwise_fns  # cycle: the public functions are built from this module's vjps

    return pointwise_fns


def typed_where(dtype):
    """``where`` whose Python-number branches are created in ``dtype`` (not the default)."""

    def where(c, a, b):
        if isinstance(c, bool):
            return a if c else b
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = tensor(a, dtype=dtype)
        return _fns().where(c, a, b)

    return where


def tensor_namespace():
    """``eval`` globals binding the vocabulary to differentiable nbgrad functions.

    Each name also takes Python scalars (then it is vocab.py's plain-Python function), so a
    partial such as ``out * log(c)`` (``c`` a scalar attribute) evaluates either way.  Built on
    first use: ops/pointwise_fns.py, which holds the functions, imports this module.
    """
    global _TENSOR_NS
    if _TENSOR_NS is None:
        fns = _fns()
        ns = {}
        for n in vocab.VOCAB:  # a name without an nbgrad function (noselect) is its own
            scalar_fn = getattr(vocab, n)
            ns[n] = _lift(getattr(fns, OP_OF.get(n, n), scalar_fn), scalar_fn)
        ns["where"] = _where
        ns["__builtins__"] = {}
        _TENSOR_NS = ns
    return _TENSOR_NS


# ---------------------------------------------------------------------------------------------
# Per-partial plans, built once per op


def conj_form(partial):
    """``partial`` conjugated for a complex backward, ``g * conj(d)`` (PyTorch's convention for
    holomorphic ops): ``conj`` goes inside ``where`` branches so the select form still selects,
    and numbers stay as they are."""

    def conj(node):
        if isinstance(node, ast.Constant):
            return node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "where"
            and len(node.args) == 3
        ):
            return ast.Call(node.func, [node.args[0], conj(node.args[1]), conj(node.args[2])], [])
        return ast.Call(ast.Name("conj", ast.Load()), [node], [])

    tree = ast.Expression(conj(ast.parse(partial, mode="eval").body))
    return ast.unparse(ast.fix_missing_locations(tree))


class _Partial:
    """One partial derivative ``d`` of a pointwise op, prepared for the backward: the fused
    kernel ``g * (d)`` (its tag, parameters, kernels per compute dtype), the constant ``d`` is
    when it is a number (then no kernel runs), and ``g * (d)`` compiled for differentiable
    evaluation.  ``g * (d)`` is always evaluated in its select form (kernels/build.py, NOTE
    [select, never multiply by a mask]): ``g * where(c, 1, 0)`` is ``where(c, g, 0)`` and
    ``g * 0`` is ``0``, so a NaN/Inf gradient never leaks through a zero partial.

    A partial that uses ``g`` is the whole backward expression (``conj(g)``).  Complex compute
    dtypes use ``g * conj(d)``, or the op's ``complex_partials`` (non-holomorphic ops: abs)."""

    __slots__ = (
        "ccode",
        "cexpr",
        "code",
        "const",
        "cparams",
        "expr",
        "kernels",
        "param_types",
        "params",
        "heavy",
        "sources",
        "tag",
    )

    def __init__(self, op, i, partial, tag="vjp"):
        known = op.args + ("out",) + op.attrs
        used = names_in(partial)
        self.tag = "%s_%s%d" % (op.name, tag, i)
        self.params = ("g",) + tuple(n for n in known if n in used)
        explicit = "g" in used
        self.expr = partial if explicit else "g * (%s)" % partial
        self.param_types = {n: "bool" for n in op.bool_args}
        self.code = compile(select_form(self.expr), "<%s partial %d>" % (op.name, i), "eval")
        # a number ("1", "-1", "0") needs no kernel: the gradient is passed on, scaled, or
        # replaced by zeros (never multiplied by 0: NaN * 0 is NaN)
        self.const = None if used else float(eval(compile(partial, "", "eval"), {}))
        own = op.hints.get("complex_partials")
        if own is not None and own[i] is not None:
            cpartial = own[i]
            self.cexpr = cpartial if "g" in names_in(cpartial) else "g * (%s)" % cpartial
        else:
            self.cexpr = self.expr if explicit else "g * (%s)" % conj_form(partial)
        cused = names_in(self.cexpr)
        self.cparams = ("g",) + tuple(n for n in known if n in cused)
        self.ccode = compile(select_form(self.cexpr), "<%s cpartial %d>" % (op.name, i), "eval")
        self.kernels = {}  # compute dtype name -> the fused ufunc
        self.sources = None  # filled by _slot_plan
        # a transcendental in the partial: compute-bound, worth a contiguous gradient
        self.heavy = re.search(r"\b(%s)\(" % "|".join(_HEAVY), self.expr) is not None

    def kernel(self, dtype):
        """The fused ufunc for compute dtype ``dtype``; ``k.params`` is what it takes."""
        k = self.kernels.get(dtype)
        if k is None:
            if dtype.startswith("complex"):
                tag, params, expr = self.tag + "_c", self.cparams, self.cexpr
            else:
                tag, params, expr = self.tag, self.params, self.expr
            k = self.kernels[dtype] = (
                cpu_kernel(tag, params, expr, dtype, self.param_types),
                params,
            )
        return k

    def evaluate(self, ns, g, complex_=False):
        """``g * (d)`` (select form) over the nbgrad values in ``ns``: a Tensor, never a number
        (a constant zero partial gives zeros shaped like ``g`` that do not require grad, as
        PyTorch's ``zeros_like(grad)``)."""
        ns["g"] = g
        r = eval(self.ccode if complex_ else self.code, ns)
        if isinstance(r, Tensor):
            return r
        # a constant (PyTorch's zeros_like(grad)): outside the graph even under create_graph
        if type(g._data) is DeviceArray:
            from ..kernels.cuda.array import empty  # lazy: the CUDA path loads on first use
            from ..kernels.cuda.elementwise import assign  # lazy: the CUDA path loads on first use

            return _make(assign(empty(g._data.shape, g._data.dtype), r))
        return _make(np.full(g._data.shape, r, g._data.dtype))


_PARTIALS = {}  # OpDef -> tuple of _Partial (None where the op has no derivative)
_JVP_FORMULAS = {}  # OpDef -> compiled jvp formula


def partials_of(op):
    parts = _PARTIALS.get(op)
    if parts is None:
        parts = _PARTIALS[op] = tuple(
            None if p is None else _Partial(op, i, p) for i, p in enumerate(op.partials)
        )
    return parts


def _jvp_formula(op, complex_, missing):
    """The op's own forward-mode formula (hint ``jvp_formula``, or ``complex_jvp_formula`` for a
    complex input: an expression over the arguments, the attributes and the tangents
    ``t_<arg>``), used where PyTorch's forward-mode formula is not the backward's partials
    (maximum/minimum, div, lerp, clamp with tensor bounds, abs of complex), or None.  A missing
    tangent is a literal 0, a strong zero in the select form (PyTorch's ZeroTensor: 0 * NaN is
    0), so the formula is compiled per set of ``missing`` tangents."""
    key = (op, complex_, missing)
    code = _JVP_FORMULAS.get(key, False)
    if code is False:
        f = op.hints.get("complex_jvp_formula") if complex_ else None
        f = f or op.hints.get("jvp_formula")
        if f is not None:
            zero = {"t_" + n for n in missing}
            tree = ast.parse(f, mode="eval")
            for node in ast.walk(tree):
                for field, value in ast.iter_fields(node):
                    if isinstance(value, list):
                        value[:] = [
                            ast.Constant(0) if isinstance(v, ast.Name) and v.id in zero else v
                            for v in value
                        ]
                    elif isinstance(value, ast.Name) and value.id in zero:
                        setattr(node, field, ast.Constant(0))
            f = ast.unparse(ast.fix_missing_locations(tree))
            code = compile(select_form(f), "<%s jvp>" % op.name, "eval")
        else:
            code = None
        _JVP_FORMULAS[key] = code
    return code


def kernel_plan(op, role):
    """``(tag, params, expr, param_types)`` of a pointwise op's kernel for ``role``.

    ``role`` is ``'fwd'`` (the formula over ``op.args + op.attrs``, as dispatch compiles it) or
    ``'vjp<i>'`` (``'g * (partial_i)'`` over ``g`` and the names it uses, as ``pointwise_vjp``
    compiles it).  ``cpu_kernel(*plan[:3], dtype, plan[3])`` or the CUDA launcher
    (kernels/cuda/launch.py) turn it into a CPU ufunc or a CUDA kernel.
    """
    if isinstance(op, str):
        try:
            op = REGISTRY[op]
        except KeyError:
            raise KeyError("no registry op named %r" % (op,)) from None
    if op.kind != "pointwise":
        raise ValueError("%r is not a pointwise op" % (op.name,))
    if role == "fwd":
        return op.name, op.args + op.attrs, op.formula, {n: "bool" for n in op.bool_args}
    if role.startswith("vjp") and role[3:].isdigit():
        i = int(role[3:])
        parts = partials_of(op)
        if i >= len(parts):
            raise ValueError("%r has %d partials; no %s" % (op.name, len(parts), role))
        if parts[i] is None:
            raise ValueError("%r has no derivative for input %d (%s)" % (op.name, i, op.args[i]))
        p = parts[i]
        return p.tag, p.params, p.expr, dict(p.param_types)
    raise ValueError("role must be 'fwd' or 'vjp<i>', got %r" % (role,))


# ---------------------------------------------------------------------------------------------
# Backward and forward mode


def vjp_of(op):
    """The node backward of pointwise ``op``; broadcasting makes it batch-aware as it is."""

    def vjp(node, grads):
        if STATE.enabled:
            return pointwise_vjp(op, node, grads)
        return _vjp_arrays(op, node, grads[0])

    return batched(vjp)


def _slot_plan(op):
    """``((slot, partial), ...)`` for the op's node slots (slot k is argument ``op.slots[k]``),
    and per partial the sources of its parameters after ``g``: ``(name, attribute index or
    -1 for a saved value, cast)`` -- precomputed so the backward does no name lookups."""
    parts = partials_of(op)
    plan = []
    for k, i in enumerate(op.slots):
        part = parts[i]
        if part is not None and part.const is None and part.sources is None:
            part.sources = tuple(
                (n, op.attrs.index(n) if n in op.attrs else -1, n not in part.param_types)
                for n in part.params[1:]
            )
        plan.append((k, part))
    plan = _SLOT_PLANS[op] = tuple(plan)
    return plan


_SLOT_PLANS = {}


def _loop_call(k, args, garr, npd):
    """A partial with transcendentals on a large gradient through the generated loop kernel
    (NOTE [loop kernels] in kernels/build.py: numba's ufunc loop leaves it scalar, up to 8x
    slower); every array operand must have the gradient's shape.  A broadcast (stride-0)
    gradient from sum or mean is made contiguous first: one copy is cheaper.  None: take the
    ufunc."""
    loop = cpu_loop(k)
    if loop is None:
        return None
    shape = garr.shape
    flat = []
    for i, a in enumerate(args):
        if type(a) is np.ndarray:
            if a.shape != shape or a.dtype != npd:
                if a.ndim == 0 and a.dtype == npd:
                    flat.append(a[()])
                    continue
                return None
            if i == 0 and not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            elif not a.flags.c_contiguous:
                return None
            flat.append(a.reshape(-1))
        else:
            flat.append(npd.type(a))
    out = np.empty(shape, npd)
    loop(out.reshape(-1), *flat)
    return out


def _vjp_arrays(op, node, g):
    """The create_graph=False backward of a pointwise op (NOTE [per-node cost]): straight on
    arrays, one fused kernel per partial, no graph, no name lookups."""
    attrs, cd = node.attrs
    saved = node.saved
    if saved is not None:
        res = saved.get("out")  # PyTorch unpacks (version-checks) a saved result even when
        if res is not None and res.hooked is None and res.vc[0] != res.version:
            res.check(node)  # no partial needed here reads it
    plan = _SLOT_PLANS.get(op)
    if plan is None:
        plan = _slot_plan(op)
    npd = _NP_OF[cd]
    garr = g._data
    if type(garr) is DeviceArray:  # NOTE [device storage]
        from .cuda.pointwise import vjp_arrays  # lazy: the CUDA path loads on first use

        return vjp_arrays(op, node, g, plan)
    if garr.dtype != npd:
        garr = garr.astype(npd)
    nf = node.next_functions
    out = [None] * len(nf)
    for k, part in plan:
        if part is None or nf[k][0] is None:
            continue
        const = part.const
        if const is not None:
            # a number needs no kernel: pass on, scale, or zeros (never g * 0: NaN * 0 is NaN)
            if const == 1.0:
                r = garr
            elif const == 0.0:
                r = np.zeros(garr.shape, npd)
            else:
                r = np.asarray(garr * npd.type(const))
        else:
            kp = part.kernels.get(cd)
            if kp is None:
                kp = part.kernel(cd)
            args = [garr]
            for n, ai, cast in part.sources:
                if 0 <= ai < len(attrs):
                    v = attrs[ai]
                else:
                    v = saved[n]
                    if type(v) in _SAVED:
                        v = v.array(node)
                    # an input of another dtype (float64 0-d with float32, int with float) is
                    # cast to the compute dtype like the forward cast it: the ufunc has one
                    # signature and numpy will not down-cast on its own
                    if cast and type(v) is np.ndarray and v.dtype != npd:
                        v = v.astype(npd)
                args.append(v)
            r = None
            if part.heavy and garr.size >= 4096:
                r = _loop_call(kp[0], args, garr, npd)
            if r is None:
                r = kp[0](*args)
            if type(r) is not np.ndarray:
                r = np.asarray(r)
        if npd.kind == "c" and not node._in_meta[k][1].is_complex:
            r = r.real.copy()  # a real input's gradient is the real part (PyTorch)
        out[k] = g if r is g._data else _make(r)
    return tuple(out)


def pointwise_vjp(op, node, grads):
    """``g * partial_i`` for each input that needs a gradient: one fused Numba pass per partial
    when no graph is built, differentiable nbgrad ops under ``create_graph``."""
    if not STATE.enabled:
        return _vjp_arrays(op, node, grads[0])
    g = grads[0]
    nf = node.next_functions
    attrs, cd = node.attrs
    saved = node.saved
    if saved is not None and "out" in saved:  # PyTorch unpacks (version-checks) a saved
        res = saved["out"]  # result even when no partial needed here reads it
        if res.hooked is None and res.vc[0] != res.version:
            res.check(node)
    parts = _PARTIALS.get(op)
    if parts is None:
        parts = partials_of(op)
    out = []
    ns = dict(tensor_namespace())
    ns["where"] = typed_where(g.dtype)  # where(c, 1, 0.5): numbers take the gradient's dtype
    for n in node.saved or ():
        ns[n] = node.unpack(n)
    for n, v in zip(op.attrs, attrs):
        ns[n] = v
    cplx = cd.startswith("complex")
    for k, i in enumerate(op.slots):
        part = parts[i]
        if part is None or nf[k][0] is None:
            out.append(None)
            continue
        r = part.evaluate(ns, g, cplx)
        if r._dtype.is_complex and not node._in_meta[k][1].is_complex:
            r = _fns().real(r)
        out.append(r)
    return tuple(out)


def pointwise_jvp(op, inputs, attrs, out):
    """Forward mode: give ``out`` the tangent ``sum_i t_i * partial_i`` (same partials, same
    select form), or the op's own ``jvp_formula``."""
    tans = [tangent_of(x) for x in inputs]
    if all(t is None for t in tans) or not out.dtype.is_inexact:
        return
    parts = partials_of(op)
    batch_dims = DUAL.tangent_batch_dims
    _flags.FWD = False
    try:
        with grad_mode.set_grad_enabled(grad_mode.is_grad_enabled()):
            ns = dict(tensor_namespace())
            for name, x in zip(op.args, inputs):
                ns[name] = x.detach() if isinstance(x, Tensor) else x
            ns["out"] = out.detach()
            for n, v in zip(op.attrs, attrs):
                ns[n] = v
            total = None
            nd = out.ndim
            own = None
            if op.hints.get("jvp_formula") or op.hints.get("complex_jvp_formula"):
                own = _jvp_formula(
                    op,
                    any(isinstance(x, Tensor) and x._dtype.is_complex for x in inputs),
                    tuple(n for n, t in zip(op.args, tans) if t is None),
                )
            for i, t in enumerate(tans):
                if t is None:
                    continue
                if batch_dims and t.ndim - 1 < nd:  # keep the batch dim in front of out's
                    t = t.reshape(t.shape[0], *((1,) * (nd - t.ndim + 1)), *t.shape[1:])
                if own is not None:
                    ns["t_" + op.args[i]] = t
                elif parts[i] is not None:
                    term = parts[i].evaluate(ns, t)
                    total = term if total is None else total + term
            if own is not None:
                total = eval(own, ns)
        if total is not None:
            full = tuple(total.shape[:batch_dims]) + tuple(out.shape)
            if tuple(total.shape) != full:
                total = total.expand(*full)
            set_tangent(out, total.to(out.dtype) if total.dtype is not out.dtype else total)
    finally:
        _flags.FWD = True
