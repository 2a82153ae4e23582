"""The formula vocabulary bound to differentiable nbgrad ops (used when create_graph=True).

Each name accepts Tensors or Python scalars, so a partial such as ``out * log(c)`` (c a scalar
attribute) evaluates either way.  The CPU/CUDA bindings are kernels/scalar.py / cuda_scalar.py.
"""
import math

from .._tensor import Tensor


def _lift(name, scalar_fn):
    def f(x, *rest):
        if isinstance(x, Tensor):
            from . import pointwise_fns as api
            return getattr(api, name)(x, *rest)
        return scalar_fn(x, *rest)
    f.__name__ = name
    return f


def _where(c, a, b):
    from . import pointwise_fns as api
    if isinstance(c, bool):
        return a if c else b
    return api.where(c, a, b)


def typed_where(dtype):
    """``where`` whose Python-number branches are created in ``dtype`` (not the default)."""
    def where(c, a, b):
        if isinstance(c, bool):
            return a if c else b
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            from ..creation import tensor
            a = tensor(a, dtype=dtype)
        from . import pointwise_fns as api
        return api.where(c, a, b)
    return where


def _sign(x):
    from . import pointwise_fns as api
    return api.sign(x) if isinstance(x, Tensor) else float((x > 0) - (x < 0))


TENSOR_NS = {
    "exp": _lift("exp", math.exp), "exp2": _lift("exp2", lambda v: 2.0 ** v),
    "log": _lift("log", math.log), "log2": _lift("log2", math.log2),
    "log1p": _lift("log1p", math.log1p), "expm1": _lift("expm1", math.expm1),
    "sqrt": _lift("sqrt", math.sqrt), "rsqrt": _lift("rsqrt", lambda v: 1 / math.sqrt(v)),
    "sin": _lift("sin", math.sin), "cos": _lift("cos", math.cos), "tan": _lift("tan", math.tan),
    "tanh": _lift("tanh", math.tanh), "erf": _lift("erf", math.erf),
    "sigmoid": _lift("sigmoid", lambda v: 1 / (1 + math.exp(-v))),
    "floor": _lift("floor", math.floor), "ceil": _lift("ceil", math.ceil),
    "trunc": _lift("trunc", math.trunc), "rint": _lift("round", round),
    "fabs": _lift("abs", abs), "sign": _sign, "where": _where,
    "maximum": _lift("maximum", max), "minimum": _lift("minimum", min),
    "__builtins__": {},
}
