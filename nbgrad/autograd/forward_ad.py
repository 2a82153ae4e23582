"""``nbgrad.autograd.forward_ad``: forward-mode AD with dual tensors.

Inside ``dual_level()``, ``make_dual(p, t)`` attaches tangent ``t`` to (an alias of) ``p`` and
every op propagates tangents as it computes primals:
  * elementwise ops use the JVP derived from their registry partials: t_out = sum_i t_i * d_i
    (``ops.formula.pointwise_jvp``, the same strings as the fused backward);
  * every other op (reductions, views, indexing, matmul, softmax, ...) gets its JVP by
    transposing its VJP (``_transposed_jvp``): for a linear-in-v function vjp(v) = J^T v,
    J t = d<vjp(v), t>/dv, computed with one double backward through the op's own,
    differentiable backward formula.
The tangent state itself lives in autograd/dual.py, below ops.
"""

import collections
import functools

from .. import _flags, grad_mode
from .._tensor import Tensor
from ..creation import tensor, zeros, zeros_like
from ..ops.registry import FORWARD_RULES, LINEAR, TRANSPOSE
from . import grad
from .dual import (
    DUAL,
    close_level,
    open_level,
    set_tangent,
    tangent_of,
    zeros_like_layout,
)

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]


UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    return open_level()


def exit_dual_level(*, level=None):
    close_level()


class dual_level:
    """Context manager for a forward-AD level: tangents live only inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def make_dual(tensor, tangent, *, level=None):
    """An alias of ``tensor`` whose tangent is ``tangent`` (same shape)."""
    if DUAL.level < 0:
        raise RuntimeError(
            "make_dual can only be used inside a dual_level context (use `with fwAD.dual_level():`)"
        )
    if not isinstance(tangent, Tensor) or tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than "
            "that of the original Tensor, this is not supported. Tensor is of "
            "size %s while the given forward gradient is of size %s."
            % (list(tensor.shape), list(getattr(tangent, "shape", ())))
        )
    if not tensor.dtype.is_inexact:
        raise RuntimeError(
            "Expected both tensor and its forward grad to be floating point or complex"
        )
    alias = _alias(tensor)
    tangent = tangent.to(tensor.dtype)
    if tangent._data.strides != tensor._data.strides and tensor._data.size > 1:
        # PyTorch: a tangent of another layout is copied to the primal's layout
        arr = zeros_like_layout(tensor._data)
        arr[...] = tangent._data
        tangent = Tensor._make(arr)
    set_tangent(alias, tangent)
    return alias


def _alias(t):
    """A new tensor object sharing ``t``'s data, version counter and graph."""
    return (
        t.view_as(t)
        if t.requires_grad
        else Tensor._make(t._data, None, 0, t._vc, t._base if t._base is not None else t)
    )


def batched_dual_level(tensors, tangents):
    """Enter a dual level whose tangents have one leading batch dim; returns the dual
    aliases of ``tensors`` (tangent i has shape ``(B, *tensors[i].shape)``)."""
    open_level(tangent_batch_dims=1)
    duals = []
    for x, t in zip(tensors, tangents):
        alias = _alias(x)
        set_tangent(alias, t.to(x.dtype))
        duals.append(alias)
    return duals


def _batch_shape(t):
    return t.shape[: DUAL.tangent_batch_dims]


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): the primal is an alias without tangent; tangent is None if unset."""
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    prev = _flags.FWD
    _flags.FWD = False
    try:
        primal = _alias(tensor)
    finally:
        _flags.FWD = prev
    return UnpackedDualTensor(primal, tangent)


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    return out


def _replace(obj, mapping):
    if isinstance(obj, Tensor):
        return mapping.get(id(obj), obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_replace(o, mapping) for o in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_replace(o, mapping) for o in obj)
    return obj


def _transposed_jvp(fn, args, kwargs, outs):
    """Tangents of ``outs`` = fn(args) by transposing fn's VJP (one double backward)."""
    duals = [t for t in _tensors_in(args, []) if tangent_of(t) is not None]
    with grad_mode.enable_grad():
        prims = {id(t): t.detach().requires_grad_(True) for t in duals}
        out2 = _tensors_in(fn(*_replace(args, prims), **kwargs), [])
        pairs = [(o2, o) for o2, o in zip(out2, outs) if o2.requires_grad]
        if not pairs:
            return
        vs = [zeros_like(o2).requires_grad_(True) for o2, _ in pairs]
        gs = grad(
            [o2 for o2, _ in pairs], list(prims.values()), vs, create_graph=True, allow_unused=True
        )
        used = [(g, tangent_of(t)) for g, t in zip(gs, duals) if g is not None and g.requires_grad]
        if not used:
            return
        # batched tangents: the second backward is a batched one (NOTE [batched backward])
        ts = grad(
            [g for g, _ in used],
            vs,
            [tan for _, tan in used],
            allow_unused=True,
            is_grads_batched=bool(DUAL.tangent_batch_dims),
        )
    lead = _batch_shape(used[0][1])
    for (o2, o), tan in zip(pairs, ts):
        if tan is None:
            tan = zeros(*(tuple(lead) + tuple(o2.shape)), dtype=o2.dtype)
        set_tangent(o, tan.detach())


def with_jvp(fn):
    """Wrap a structured op so it propagates tangents inside a dual level (one flag check
    otherwise)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _flags.FWD:
            return fn(*args, **kwargs)
        if not any(tangent_of(t) is not None for t in _tensors_in(args, [])):
            return fn(*args, **kwargs)
        _flags.FWD = False
        try:
            result = fn(*args, **kwargs)
            outs = [o for o in _tensors_in(result, []) if o.dtype.is_inexact]
            _transposed_jvp(fn, args, kwargs, outs)
        finally:
            _flags.FWD = True
        return result

    wrapper.__wrapped_jvp__ = True
    return wrapper


def linear_jvp(fn):
    """Forward mode for an op linear in its first argument (views, sums, shape ops): the
    tangent is the op applied to the tangent, one call instead of the transposed VJP's double
    backward.  Batched tangents, or tangents on other arguments, take the transposed rule."""
    general = with_jvp(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _flags.FWD:
            return fn(*args, **kwargs)
        t = tangent_of(args[0]) if args else None
        if (
            t is None
            or DUAL.tangent_batch_dims
            or any(tangent_of(a) is not None for a in _tensors_in(args[1:], []))
        ):
            return general(*args, **kwargs)
        _flags.FWD = False
        try:
            result = fn(*args, **kwargs)
            tangents = fn(t, *args[1:], **kwargs)
        finally:
            _flags.FWD = True
        for o, ot in zip(_tensors_in(result, []), _tensors_in(tangents, [])):
            if o.dtype.is_inexact:
                set_tangent(o, ot.detach())
        return result

    return wrapper


def _check_forward_ad(func, inputs, idx, eps, atol, rtol):
    """gradcheck(check_forward_ad=True): forward-mode JVPs against central differences."""
    import numpy as np

    rng = np.random.default_rng(0)
    for i in idx:
        x = inputs[i]
        u = rng.standard_normal(x.shape)
        with dual_level():
            args = list(inputs)
            args[i] = make_dual(
                x.detach().requires_grad_(x.requires_grad), tensor(u, dtype=x.dtype)
            )
            outs = _tensors_in(func(*args), [])
            tans = [unpack_dual(o).tangent for o in outs]
        orig = x._data.copy()
        x._data[...] = orig + eps * u
        plus = [o._data.astype(np.float64) for o in _tensors_in(func(*inputs), [])]
        x._data[...] = orig - eps * u
        minus = [o._data.astype(np.float64) for o in _tensors_in(func(*inputs), [])]
        x._data[...] = orig
        for t, p, m in zip(tans, plus, minus):
            num = (p - m) / (2 * eps)
            got = np.zeros_like(num) if t is None else t._data
            if not np.allclose(got, num, atol=atol, rtol=rtol):
                return False
    return True


# the registry's ops call this rule inside a dual level (ops/registry.py: OpDef.define)
FORWARD_RULES[TRANSPOSE] = with_jvp
FORWARD_RULES[LINEAR] = linear_jvp
