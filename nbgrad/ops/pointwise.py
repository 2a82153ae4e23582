"""Elementwise ops: one line each -- forward formula, partial derivatives, Node name, hints.

Everything else is derived (see ops/dispatch.py): the public function, the Tensor method and
in-place method, the compiled CPU/CUDA kernels, the fused one-pass backward kernel
``g * d`` (create_graph=False), the differentiable backward (create_graph=True) and what is
saved.  ``numpy=`` names a numpy ufunc used for the *forward* instead of the Numba kernel where
it was measured faster (SIMD transcendentals, plain arithmetic); see docs/performance.md.
"""
import numpy as np

from .formula import vjp_of
from .registry import OpDef, register

LN2 = "0.6931471805599453"


def _pw(name, formula, partials, node, args=("x",), **kw):
    op = OpDef(name, "pointwise", formula=formula, partials=partials, node=node, args=args, **kw)
    op.vjp = vjp_of(op)
    return register(op)


def unary(name, formula, d, node, **kw):
    return _pw(name, formula, (d,), node, **kw)


def binary(name, formula, dx, dy, node, **kw):
    return _pw(name, formula, (dx, dy), node, args=("x", "y"), **kw)


#      name          formula                      d/dx                                node
unary("neg",        "-x",                       "-1",                               "NegBackward0", numpy=np.negative)
unary("exp",        "exp(x)",                   "out",                              "ExpBackward0", numpy=np.exp, rule="float")
unary("exp2",       "exp2(x)",                  "out * " + LN2,                     "Exp2Backward0", numpy=np.exp2, rule="float")
unary("log",        "log(x)",                   "1 / x",                            "LogBackward0", numpy=np.log, rule="float", domain=(0.1, 5))
unary("log2",       "log2(x)",                  "1 / (x * %s)" % LN2,               "Log2Backward0", numpy=np.log2, rule="float", domain=(0.1, 5))
unary("log1p",      "log1p(x)",                 "1 / (1 + x)",                      "Log1PBackward0", numpy=np.log1p, rule="float", domain=(-0.5, 5))
unary("expm1",      "expm1(x)",                 "out + 1",                          "Expm1Backward0", numpy=np.expm1, rule="float")
unary("sqrt",       "sqrt(x)",                  "0.5 / out",                        "SqrtBackward0", numpy=np.sqrt, rule="float", domain=(0.1, 5))
unary("rsqrt",      "1 / sqrt(x)",                 "-0.5 * out * out * out",           "RsqrtBackward0", rule="float", domain=(0.1, 5))
unary("sin",        "sin(x)",                   "cos(x)",                           "SinBackward0", numpy=np.sin, rule="float")
unary("cos",        "cos(x)",                   "-sin(x)",                          "CosBackward0", numpy=np.cos, rule="float")
unary("tan",        "tan(x)",                   "1 + out * out",                    "TanBackward0", numpy=np.tan, rule="float", domain=(-1.2, 1.2))
unary("tanh",       "tanh(x)",                  "1 - out * out",                    "TanhBackward0", numpy=np.tanh, rule="float")
unary("sigmoid",    "1 / (1 + exp(-x))",               "out * (1 - out)",                  "SigmoidBackward0", rule="float")
unary("relu",       "where(x > 0, x, 0)",       "where(out > 0, 1, 0)",             "ReluBackward0", kinks=(0.0,))
unary("abs",        "fabs(x)",                  "sign(x)",                          "AbsBackward0", numpy=np.abs, kinks=(0.0,))
unary("sign",       "sign(x)",                  "0",                                "SignBackward0", numpy=np.sign, kinks=(0.0,))
unary("reciprocal", "1 / x",                    "-out * out",                       "ReciprocalBackward0", rule="float", domain=(0.5, 3))
unary("erf",        "erf(x)",                   "1.1283791670955126 * exp(-x * x)", "ErfBackward0", rule="float")
unary("floor",      "floor(x)",                 "0",                                "FloorBackward0", numpy=np.floor, kinks="int")
unary("ceil",       "ceil(x)",                  "0",                                "CeilBackward0", numpy=np.ceil, kinks="int")
unary("round",      "rint(x)",                  "0",                                "RoundBackward0", numpy=np.rint, kinks="half")
unary("trunc",      "trunc(x)",                 "0",                                "TruncBackward0", numpy=np.trunc, kinks="int")
# scalar attributes: the exponent p, the base c, clamp bounds lo/hi, masked_fill's value v
unary("pow",        "x ** p",                   "where(p == 0, 0, p * x ** (p - 1))", "PowBackward0", attrs=("p",), domain=(0.5, 2))
unary("rpow",       "c ** x",                   "out * log(c)",                     "PowBackward2", attrs=("c",), rule="float")
unary("clamp",      "where(x < lo, lo, where(x > hi, hi, x))",
                    "where((x >= lo) & (x <= hi), 1, 0)",                           "ClampBackward1", attrs=("lo", "hi"))

binary("add",       "x + y",                    "1", "1",                           "AddBackward0", numpy=np.add)
binary("sub",       "x - y",                    "1", "-1",                          "SubBackward0", numpy=np.subtract)
binary("rsub",      "y - x",                    "-1", "1",                          "RsubBackward1")
binary("mul",       "x * y",                    "y", "x",                           "MulBackward0", numpy=np.multiply)
binary("div",       "x / y",                    "1 / y", "-x / (y * y)",            "DivBackward0", numpy=np.true_divide, rule="float", domain_y=(0.5, 3))
binary("pow.Tensor", "x ** y",                  "where(y == 0, 0, y * x ** (y - 1))",
                                                "where((x == 0) & (y >= 0), 0, out * log(x))", "PowBackward1", domain=(0.5, 2))
binary("maximum",   "maximum(x, y)",            "where(x > y, 1, where(x == y, 0.5, 0))",
                                                "where(y > x, 1, where(x == y, 0.5, 0))", "MaximumBackward0", numpy=np.maximum)
binary("minimum",   "minimum(x, y)",            "where(x < y, 1, where(x == y, 0.5, 0))",
                                                "where(y < x, 1, where(x == y, 0.5, 0))", "MinimumBackward0", numpy=np.minimum)
unary("remainder",  "x - floor(x / y) * y",     "1",                                "RemainderBackward0", attrs=("y",))
binary("remainder.Tensor", "x - floor(x / y) * y", "1", "-floor(x / y)",           "RemainderBackward1", numpy=np.remainder, domain_y=(0.5, 3))
binary("lerp",      "x + w * (y - x)",          "1 - w", "w",                       "LerpBackward0", attrs=("w",))
_pw("lerp.Tensor",  "x + w * (y - x)",          ("1 - w", "w", "y - x"),            "LerpBackward1", args=("x", "y", "w"))
_pw("where",        "where(c, x, y)",           (None, "where(c, 1, 0)", "where(c, 0, 1)"), "WhereBackward0",
    args=("c", "x", "y"), bool_args=("c",))
_pw("masked_fill",  "where(m, v, x)",           ("where(m, 0, 1)", None),           "MaskedFillBackward0",
    args=("x", "m"), attrs=("v",), bool_args=("m",))

# no gradient: comparisons, logical ops, integer division
_NOGRAD = [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
           ("gt", np.greater), ("ge", np.greater_equal), ("logical_and", np.logical_and),
           ("logical_or", np.logical_or), ("logical_xor", np.logical_xor),
           ("floor_divide", np.floor_divide)]
for _name, _uf in _NOGRAD:
    register(OpDef(_name, "compare", numpy=_uf, args=("x", "y")))
for _name, _uf in [("logical_not", np.logical_not), ("isnan", np.isnan), ("isinf", np.isinf),
                   ("isfinite", np.isfinite)]:
    register(OpDef(_name, "compare", numpy=_uf, args=("x",)))
