"""Elementwise ops: one line each -- forward formula, partial derivatives, Node name, surface.

Everything else is derived: the compiled CPU/CUDA kernels, the fused one-pass backward kernel
``g * d`` (create_graph=False), the differentiable backward (create_graph=True), the JVP, what is
saved, and the surface: the public function ``nbgrad.<name>`` (generated in ops/pointwise_fns.py
unless a PyTorch signature needs a hand-written one there), the Tensor method, the in-place
method and ``out=`` (``variants``, default all four).  ``numpy=`` names a numpy ufunc used for
the *forward* instead of the Numba kernel where it was measured faster (SIMD transcendentals,
plain arithmetic); see docs/performance.md.  ``exp log log1p expm1 tanh`` name none: their
kernels use kernels/cpu/vmath.py's vectorised functions, measured 1.6-12x faster than numpy's.
"""

import numpy as np

from ..autograd.batching import batched
from .formula import vjp_of
from .registry import FUNCTION, INPLACE, METHOD, OUT, OpDef, register

LN2 = "0.6931471805599453"


def no_complex(msg, exc=NotImplementedError):
    """Hint: PyTorch does not implement the op for complex dtypes (``%s``: the dtype name)."""
    return {"complex_error": (exc, msg)}


CLAMP_NO_COMPLEX = no_complex("clamp is not supported for complex types")


def pow_forward(x, p):
    """numpy forward of ``pow`` by a scalar: vocab.spow's special cases (PyTorch's), else C pow;
    decided once per call, not per element as in the kernel."""
    if p == 2:
        return np.multiply(x, x)
    if p == 0.5:
        return np.sqrt(x)
    if p == 3:
        return x * x * x
    if p == -0.5:
        return np.divide(1, np.sqrt(x))
    if p == -1:
        return np.divide(1, x)
    if p == -2:
        return np.divide(1, x * x)
    return np.power(x, p)


ALL = (FUNCTION, METHOD, INPLACE, OUT)
NONE = ()  # an overload: reached through its base op's public function


# Internal pointwise ops that are not in REGISTRY (no public surface, no op_db row): the
# differentiable conj and real part the complex backward is written with (ops/formula.py).
UNLISTED = {}


def pointwise(name, formula, partials, node, args=("x",), variants=ALL, listed=True, **kw):
    op = OpDef(
        name,
        "pointwise",
        formula=formula,
        partials=partials,
        node=node,
        args=args,
        variants=variants,
        **kw,
    )
    op.vjp = vjp_of(op)
    if not listed:
        UNLISTED[name] = op
        return op
    return register(op)


def unary(name, formula, d, node, **kw):
    return pointwise(name, formula, (d,), node, **kw)


def binary(name, formula, dx, dy, node, **kw):
    return pointwise(name, formula, (dx, dy), node, args=("x", "y"), **kw)


def nograd(name, ufunc, args=("x", "y"), variants=ALL, **kw):
    """Comparisons, logical ops, integer division: no gradient, a numpy ufunc forward."""
    return register(OpDef(name, "compare", numpy=ufunc, args=args, variants=variants, **kw))


# fmt: off  (a table: one op per line, aligned)
#      name          formula                      d/dx                                node
unary("neg", "-x", "-1", "NegBackward0", numpy=np.negative, aliases=("negative",))
unary("exp", "exp(x)", "out", "ExpBackward0", rule="float")
unary("exp2", "exp2(x)", "out * " + LN2, "Exp2Backward0", numpy=np.exp2, rule="float")
unary("log", "log(x)", "1 / x", "LogBackward0", rule="float", domain=(0.1, 5))
unary(
    "log2",
    "log2(x)",
    "1 / (x * %s)" % LN2,
    "Log2Backward0",
    numpy=np.log2,
    rule="float",
    domain=(0.1, 5),
)
unary(
    "log1p",
    "log1p(x)",
    "1 / (1 + x)",
    "Log1PBackward0",
    rule="float",
    domain=(-0.5, 5),
)
unary("expm1", "expm1(x)", "out + 1", "Expm1Backward0", rule="float")
unary("sqrt", "sqrt(x)", "0.5 / out", "SqrtBackward0", numpy=np.sqrt, rule="float", domain=(0.1, 5))
unary(
    "rsqrt",
    "rsqrt(x)",
    "-0.5 * out * out * out",
    "RsqrtBackward0",
    rule="float",
    domain=(0.1, 5),
)
unary("sin", "sin(x)", "cos(x)", "SinBackward0", numpy=np.sin, rule="float")
unary("cos", "cos(x)", "-sin(x)", "CosBackward0", numpy=np.cos, rule="float")
unary(
    "tan", "tan(x)", "1 + out * out", "TanBackward0", numpy=np.tan, rule="float", domain=(-1.2, 1.2)
)
unary("tanh", "tanh(x)", "1 - out * out", "TanhBackward0", rule="float")
unary("sigmoid", "1 / (1 + exp(-x))", "out * (1 - out)", "SigmoidBackward0", rule="float")
# relu(nan) is nan and relu(-0.0) is -0.0; its backward is threshold_backward: zero where out <= 0
unary(
    "relu",
    "where(x < 0, 0, x)",
    "where(out <= 0, 0, 1)",
    "ReluBackward0",
    double=(True, "ThresholdBackwardBackward0"),  # NOTE [backward nodes]
    kinks=(0.0,),
    **CLAMP_NO_COMPLEX,
)
# abs of a complex tensor is real; its gradient is g * sgn(z) (no conjugate: not holomorphic)
unary(
    "abs",
    "fabs(x)",
    "sign(x)",
    "AbsBackward0",
    numpy=np.abs,
    kinks=(0.0,),
    aliases=("absolute",),
    rule="real",
    complex_partials=("where(x == 0, 0, x / fabs(x))",),
    complex_jvp_formula="real(conj(t_x) * where(x == 0, 0, x / fabs(x)))",
)
unary(  # sign(nan) is 0, not numpy's nan
    "sign",
    "sign(x)",
    "0",
    "SignBackward0",
    kinks=(0.0,),
    **no_complex(
        "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
        "torch.sgn instead."
    ),
)
unary("reciprocal", "1 / x", "-out * out", "ReciprocalBackward0", rule="float", domain=(0.5, 3))
unary(
    "erf",
    "erf(x)",
    "1.1283791670955126 * exp(-x * x)",
    "ErfBackward0",
    rule="float",
    **no_complex("\"erf_vml_cpu\" not implemented for '%s'"),
)
unary(
    "floor",
    "floor(x)",
    "0",
    "FloorBackward0",
    numpy=np.floor,
    kinks="int",
    **no_complex("floor is not supported for complex inputs"),
)
unary(
    "ceil",
    "ceil(x)",
    "0",
    "CeilBackward0",
    numpy=np.ceil,
    kinks="int",
    **no_complex("ceil is not supported for complex inputs"),
)
unary(
    "round",
    "rint(x)",
    "0",
    "RoundBackward0",
    numpy=np.rint,
    kinks="half",
    **no_complex("\"round_vml_cpu\" not implemented for '%s'"),
)
# round(decimals=d): PyTorch's nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d (neg)
unary(
    "round.decimals",
    "where(neg, rint(x / t) * t, rint(x * t) / t)",
    "0",
    "RoundBackward1",
    attrs=("t", "neg"),
    variants=NONE,
    **no_complex("\"round_cpu\" not implemented for '%s'"),
)
unary(
    "trunc",
    "trunc(x)",
    "0",
    "TruncBackward0",
    numpy=np.trunc,
    kinks="int",
    **no_complex("trunc is not supported for complex inputs"),
)
# scalar attributes: the exponent p, the base c, clamp bounds lo/hi, masked_fill's value v
unary(
    "pow",
    "spow(x, p)",
    "where(p == 0, 0, p * spow(x, p - 1))",
    "PowBackward0",
    numpy=pow_forward,
    numpy_attrs=True,
    attrs=("p",),
    saved_names={"self": "x", "exponent": "p"},
    domain=(0.5, 2),
)
unary(
    "rpow",
    "c ** x",
    # pow_backward_exponent: 0 (not 0 * -inf) where the base is 0, multiplying the gradient
    "noselect(where((c == 0) & (x >= 0), 0, out * log(c)))",
    "PowBackward2",
    complex_partials=(
        "noselect(where((c == 0) & (x == real(x)) & (real(x) == fabs(real(x))), 0, "
        "conj(out * log(c))))",
    ),
    attrs=("c",),
    rule="float",
    variants=NONE,
    saved_names={"self": "c", "exponent": "x", "result": "out"},
)
# clamp is PyTorch's min(max(x, lo), hi) with std::max/std::min (NaN x stays NaN, -0.0 kept,
# lo > hi gives hi); a NaN bound makes every result NaN
CLAMP_LO = "where(x < lo, lo, x)"
CLAMP = "where((lo != lo) | (hi != hi), lo + hi, where(hi < {0}, hi, {0}))".format(CLAMP_LO)
unary(
    "clamp",
    CLAMP,
    "where((x >= lo) & (x <= hi), 1, 0)",
    "ClampBackward1",
    attrs=("lo", "hi"),
    saved_names={"self": "x", "min": "lo", "max": "hi"},
    aliases=("clip",),
    **CLAMP_NO_COMPLEX,
)
unary(
    "clamp_min",
    "where(lo != lo, lo, where(x < lo, lo, x))",
    "where(x >= lo, 1, 0)",
    "ClampMinBackward0",
    attrs=("lo",),
    saved_names={"self": "x", "min": "lo"},
    **CLAMP_NO_COMPLEX,
)
unary(
    "clamp_max",
    "where(hi != hi, hi, where(hi < x, hi, x))",
    "where(x <= hi, 1, 0)",
    "ClampMaxBackward0",
    attrs=("hi",),
    saved_names={"self": "x", "max": "hi"},
    **CLAMP_NO_COMPLEX,
)
# tensor bounds (clamp.Tensor): the same maths; the bounds get PyTorch's
# clamp_backward_min_max gradients
CLAMP_NAMES = {"self": "x", "min": "lo", "max": "hi"}
CLAMP_MIN = "where(lo != lo, lo, where(x < lo, lo, x))"
CLAMP_MAX = "where(hi != hi, hi, where(hi < x, hi, x))"
pointwise(
    "clamp.Tensor",
    CLAMP,
    (
        "where((x >= lo) & (x <= hi), 1, 0)",
        "where((x < lo) & (lo < hi), 1, 0)",
        "where((x > hi) | (hi < lo), 1, 0)",
    ),
    "ClampBackward0",
    args=("x", "lo", "hi"),
    variants=NONE,
    saved_names=CLAMP_NAMES,
    # PyTorch's clamp_jvp: the tangent of whichever value is returned
    jvp_formula="where(lo > hi, t_hi, where(x < lo, t_lo, where(x > hi, t_hi, t_x)))",
    **CLAMP_NO_COMPLEX,
)
# clamp(x, min=T) and clamp_min(x, T): same maths and backward, different nodes and tangents
# (PyTorch's clamp_jvp picks t_x only where x > lo; clamp_min.Tensor's where x >= lo)
for _name, _node, _cmp in (
    ("clamp.Tensor_min", "ClampBackward0", ">"),
    ("clamp_min.Tensor", "ClampMinBackward1", ">="),
):
    pointwise(
        _name,
        CLAMP_MIN,
        ("where(x >= lo, 1, 0)", "where(x < lo, 1, 0)"),
        _node,
        args=("x", "lo"),
        variants=NONE,
        saved_names=CLAMP_NAMES,
        jvp_formula="where(x %s lo, t_x, t_lo)" % _cmp,
        **CLAMP_NO_COMPLEX,
    )
for _name, _node, _cmp in (
    ("clamp.Tensor_max", "ClampBackward0", "<"),
    ("clamp_max.Tensor", "ClampMaxBackward1", "<="),
):
    pointwise(
        _name,
        CLAMP_MAX,
        ("where(x <= hi, 1, 0)", "where(x > hi, 1, 0)"),
        _node,
        args=("x", "hi"),
        variants=NONE,
        saved_names=CLAMP_NAMES,
        jvp_formula="where(x %s hi, t_x, t_hi)" % _cmp,
        **CLAMP_NO_COMPLEX,
    )

binary("add", "x + y", "1", "1", "AddBackward0", numpy=np.add)
binary("sub", "x - y", "1", "-1", "SubBackward0", numpy=np.subtract, aliases=("subtract",))
binary("rsub", "y - x", "-1", "1", "RsubBackward1", variants=(FUNCTION,))
binary("rsub.Tensor", "y - x", "-1", "1", "RsubBackward0", variants=NONE)  # rsub(x, tensor)
# add/sub with alpha != 1: PyTorch's one node (AddBackward0/SubBackward0, _saved_alpha) over one
# kernel x + alpha * y, not a MulBackward0 in front of y
binary(
    "add.alpha",
    "x + alpha * y",
    "1",
    "alpha",
    "AddBackward0",
    attrs=("alpha",),
    attr_defaults={"alpha": 1},
    variants=NONE,
)
binary(
    "sub.alpha",
    "x - alpha * y",
    "1",
    "-alpha",
    "SubBackward0",
    attrs=("alpha",),
    attr_defaults={"alpha": 1},
    variants=NONE,
)
binary("mul", "x * y", "y", "x", "MulBackward0", numpy=np.multiply, aliases=("multiply",))
binary(
    "div",
    "x / y",
    "1 / y",
    "-x / (y * y)",
    "DivBackward0",
    numpy=np.true_divide,
    rule="float",
    domain_y=(0.5, 3),
    aliases=("divide", "true_divide"),
    jvp_formula="(t_x - t_y * out) / y",  # PyTorch's: one division (no inf - inf at y = 0)
)
# div(rounding_mode=...): a step function, zero gradient (zeros, whatever the gradient holds)
binary(
    "div.floor",
    "floor(x / y)",
    "0",
    "0",
    "DivBackward2",
    numpy=np.floor_divide,
    variants=NONE,
    **no_complex("\"div_floor_cpu\" not implemented for '%s'"),
)
binary(
    "div.trunc",
    "trunc(x / y)",
    "0",
    "0",
    "DivBackward2",
    numpy=lambda a, b: np.trunc(np.true_divide(a, b)),  # a true division, then trunc
    variants=NONE,
    **no_complex("\"div_trunc_cpu\" not implemented for '%s'"),
)
binary(
    "pow.Tensor",
    "x ** y",
    "where(y == 0, 0, y * x ** (y - 1))",
    "noselect(where((x == 0) & (y >= 0), 0, out * log(x)))",
    "PowBackward1",
    complex_partials=(
        None,
        "noselect(where((x == 0) & (y == real(y)) & (real(y) == fabs(real(y))), 0, "
        "conj(out * log(x))))",
    ),
    saved_names={"self": "x", "exponent": "y", "result": "out"},
    domain=(0.5, 2),
    variants=NONE,
)
# maximum/minimum: the gradient is masked out only where the other input wins, so a NaN input
# (nothing wins) gives both the gradient; forward mode is PyTorch's other_t + m * (self_t -
# other_t) with m = where(x == y, 0.5, x > y), NaN-multiplying (jvp_formula)
binary(
    "maximum",
    "maximum(x, y)",
    "where(x < y, 0, where(x == y, 0.5, 1))",
    "where(x > y, 0, where(x == y, 0.5, 1))",
    "MaximumBackward0",
    numpy=np.maximum,
    variants=(FUNCTION, METHOD, OUT),
    jvp_formula="t_y + ((x > y) + 0.5 * (x == y)) * (t_x - t_y)",
    **no_complex("maximum not implemented for complex tensors.", RuntimeError),
)
binary(
    "minimum",
    "minimum(x, y)",
    "where(x > y, 0, where(x == y, 0.5, 1))",
    "where(x < y, 0, where(x == y, 0.5, 1))",
    "MinimumBackward0",
    numpy=np.minimum,
    variants=(FUNCTION, METHOD, OUT),
    jvp_formula="t_y + ((x < y) + 0.5 * (x == y)) * (t_x - t_y)",
    **no_complex("minimum not implemented for complex tensors.", RuntimeError),
)
REMAINDER_NO_COMPLEX = no_complex("\"remainder_cpu\" not implemented for '%s'")
# PyTorch's remainder: fmod, moved by y where its sign differs from y's (x - floor(x / y) * y
# is wrong where x / y rounds to an integer: 1 % 0.1 would be -5.6e-17)
REMAINDER = "where((fmod(x, y) != 0) & ((y < 0) != (fmod(x, y) < 0)), fmod(x, y) + y, fmod(x, y))"


def _remainder(x, y):
    """REMAINDER in numpy, bitwise PyTorch's: a zero result keeps x's sign (numpy's remainder
    gives it y's: -2 % 1 is 0.0 there, -0.0 in PyTorch); integers: numpy's floor modulo."""
    if np.result_type(x, y).kind != "f":
        return np.remainder(x, y)
    mod = np.fmod(x, y)
    return np.where((mod != 0) & ((np.asarray(y) < 0) != (mod < 0)), mod + y, mod)


unary(
    "remainder",
    REMAINDER,
    "1",
    "RemainderBackward0",
    attrs=("y",),
    numpy=_remainder,  # (the formula: for the CUDA kernels)
    numpy_attrs=True,
    **REMAINDER_NO_COMPLEX,
)
binary(
    "remainder.Tensor",
    REMAINDER,
    "1",
    "-floor_divide(x, y)",
    "RemainderBackward1",
    **REMAINDER_NO_COMPLEX,
    numpy=_remainder,
    domain_y=(0.5, 3),
    variants=NONE,
)
# PyTorch's lerp: x + w * (y - x) for |w| < 0.5, else y - (y - x) * (1 - w) (exact at w = 1,
# and lerp(inf, 0, 0.5) is inf)
LERP = "where(fabs(w) < 0.5, x + w * (y - x), y - (y - x) * (1 - w))"
# forward mode: PyTorch's lerp of the tangents (same split), plus t_w * (y - x) for a tensor w
LERP_T = "where(fabs(w) < 0.5, t_x + w * (t_y - t_x), t_y - (t_y - t_x) * (1 - w))"
binary(
    "lerp",
    LERP,
    "1 - w",
    "w",
    "LerpBackward0",
    attrs=("w",),
    saved_names={"weight": "w"},
    jvp_formula=LERP_T,
)
pointwise(
    "lerp.Tensor",
    LERP,
    ("1 - w", "w", "y - x"),
    "LerpBackward1",
    args=("x", "y", "w"),
    jvp_formula=LERP_T + " + t_w * (y - x)",
    saved_names={"self": "x", "end": "y", "weight": "w"},
    variants=NONE,
)
pointwise(
    "where",
    "where(c, x, y)",
    (None, "where(c, 1, 0)", "where(c, 0, 1)"),
    "WhereBackward0",
    args=("c", "x", "y"),
    saved_names={"condition": "c"},
    bool_args=("c",),
    variants=(FUNCTION, OUT),
)
pointwise(
    "masked_fill",
    "where(m, v, x)",
    ("where(m, 0, 1)", None),
    "MaskedFillBackward0",
    args=("x", "m"),
    saved_names={"mask": "m"},
    attrs=("v",),
    bool_args=("m",),
    variants=(FUNCTION, METHOD, INPLACE),
)
pointwise(  # masked_fill with a 0-d tensor value: the value gets the masked gradient's sum
    "masked_fill.Tensor",
    "where(m, v, x)",
    ("where(m, 0, 1)", None, "where(m, 1, 0)"),
    "MaskedFillBackward1",
    args=("x", "m", "v"),
    bool_args=("m",),
    variants=NONE,
    saved_names={"mask": "m"},
)

# internal: differentiable conj and real part for the complex backward (ops/formula.py); a
# partial that uses g is the whole backward expression
pointwise("conj", "conj(x)", ("conj(g)",), "ConjPhysicalBackward0", variants=NONE, listed=False)
pointwise(
    "real", "real(x)", ("real(g)",), "RealBackward0", variants=NONE, listed=False, rule="real"
)

# activations behind nn.functional (their public functions are F.gelu, F.silu, ...)
SQRT1_2 = "0.7071067811865476"  # 1 / sqrt(2)
INV_SQRT_2PI = "0.3989422804014327"  # 1 / sqrt(2 pi)
K_BETA = "0.7978845608028654"  # sqrt(2 / pi)
K_KAPPA = "0.044715"
_INNER = "%s * (x + %s * x * x * x)" % (K_BETA, K_KAPPA)  # tanh-GELU's inner argument
unary(
    "gelu",
    "0.5 * x * (1 + erf(x * %s))" % SQRT1_2,
    "0.5 * (1 + erf(x * %s)) + x * %s * exp(-0.5 * x * x)" % (SQRT1_2, INV_SQRT_2PI),
    "GeluBackward0",
    rule="float",
    variants=NONE,
    **no_complex("\"GeluKernelImpl\" not implemented for '%s'"),
)
unary(
    "gelu.tanh",
    "0.5 * x * (1 + tanh(%s))" % _INNER,
    "0.5 * (1 + tanh(%s)) + 0.5 * x * (1 - tanh(%s) * tanh(%s)) * %s * (1 + 3 * %s * x * x)"
    % (_INNER, _INNER, _INNER, K_BETA, K_KAPPA),
    "GeluBackward0",
    rule="float",
    variants=NONE,
    **no_complex("\"GeluKernelImpl\" not implemented for '%s'"),
)
unary(
    "silu",
    "x * sigmoid(x)",
    "sigmoid(x) * (1 + x * (1 - sigmoid(x)))",
    "SiluBackward0",
    rule="float",
    variants=NONE,
    **no_complex(
        "silu does not support automatic differentiation for outputs with complex dtype.",
        RuntimeError,
    ),
)
unary(
    "softplus",
    "where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)",
    "where(x * beta > threshold, 1, sigmoid(x * beta))",
    "SoftplusBackward0",
    attrs=("beta", "threshold"),
    rule="float",
    variants=NONE,
    **no_complex("\"softplus_cpu\" not implemented for '%s'"),
)
# elu: PyTorch's kernel (expm1 below 0, so elu(-0.0) is -0.0); its backward elu_backward is one
# differentiable function (NOTE [backward nodes]).  F.elu(inplace=True) records elu_'s node,
# whose backward reads the result (EluBackward1; a negative alpha raises there).  At a NaN input
# the gradients are those of PyTorch's vectorised CPU kernels, which hold for all but the last
# few elements of a tensor (its scalar tail loop passes the gradient through elu and blocks
# nothing in hardtanh): NaN for elu, 0 for hardtanh
ELU = "where(x > 0, x, expm1(x) * alpha)"
unary(
    "elu",
    ELU,
    "where(x > 0, 1, alpha * exp(x))",
    "EluBackward0",
    attrs=("alpha",),
    double=True,
    rule="float",
    variants=NONE,
    kinks=(0.0,),
    **no_complex("\"elu_cpu\" not implemented for '%s'"),
)
_ELU_RESULT = unary(
    "elu.result",
    ELU,
    "where(out > 0, 1, out + alpha)",
    "EluBackward1",
    attrs=("alpha",),
    double=True,
    rule="float",
    variants=NONE,
    kinks=(0.0,),
    **no_complex("\"elu_cpu\" not implemented for '%s'"),
)


@batched
def _elu_result_vjp(node, grads, _vjp=_ELU_RESULT.vjp):
    """elu_backward's check: the result does not determine the input for a negative alpha."""
    if node.attrs[0][0] < 0:
        raise RuntimeError(
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead."
        )
    return _vjp(node, grads)


_ELU_RESULT.vjp = _elu_result_vjp
# mish and its backward as PyTorch's kernels compute them (mish(-inf) and mish'(+-inf) are NaN)
TSP = "tanh(log1p(exp(x)))"
unary(
    "mish",
    "x * " + TSP,
    "{0} + x * sigmoid(x) * (1 - {0} * {0})".format(TSP),
    "MishBackward0",
    rule="float",
    variants=NONE,
    **no_complex("\"mish_cpu\" not implemented for '%s'"),
)
# hardtanh is clamp forward (NaN stays NaN); its gradient passes where lo < x < hi
unary(
    "hardtanh",
    CLAMP,
    "where((x > lo) & (x < hi), 1, 0)",
    "HardtanhBackward0",
    attrs=("lo", "hi"),
    double=True,
    variants=NONE,
    saved_names={"self": "x", "min_val": "lo", "max_val": "hi"},
    **CLAMP_NO_COMPLEX,
)
# prelu: PyTorch's _prelu_kernel over the input and the weight reshaped to broadcast (the
# weight's gradient is summed to its shape centrally); forward mode is PyTorch's formula
binary(
    "prelu",
    "where(x > 0, x, y * x)",
    "where(x > 0, 1, y)",
    "where(x > 0, 0, x)",
    "PreluKernelBackward0",
    double=True,
    variants=NONE,
    kinks=(0.0,),
    jvp_formula="where(x >= 0, t_x, y * t_x + t_y * x)",
    saved_names={"self": "x", "weight": "y"},
    **no_complex("\"prelu_cpu\" not implemented for '%s'"),
)
# xlogy(x, y) for F.kl_div (not public here; TODO(#12): the public xlogy replaces it): NaN where
# y is, 0 where x == 0; PyTorch's partials (xlogy(g, y) masked to 0 where x == 0 and y <= 0)
pointwise(
    "xlogy",
    "where(y != y, y, where(x == 0, 0, x * log(y)))",
    (
        "where((x == 0) & (y <= 0), 0, where(y != y, y, where(g == 0, 0, g * log(y))))",
        "x / y",
    ),
    "XlogyBackward0",
    args=("x", "y"),
    variants=NONE,
    listed=False,
)
unary(
    "leaky_relu",
    "where(x > 0, x, x * slope)",
    "where(x > 0, 1, slope)",
    "LeakyReluBackward0",
    double=True,  # NOTE [backward nodes]
    **no_complex("\"leaky_relu_cpu\" not implemented for '%s'"),
    attrs=("slope",),
    saved_names={"self": "x", "negative_slope": "slope"},
    kinks=(0.0,),
    variants=NONE,
)


# second tier: inverse trigonometric and hyperbolic functions, atan2, hypot, logaddexp, fmod,
# sinc, xlogy -- PyTorch's derivatives.yaml formulas (complex where PyTorch has it)
PI = "3.141592653589793"
# atan2_backward: grad * other * recip, recip 0 where x^2 + y^2 is 0 (multiplied: NaN stays)
ATAN2_RECIP = "noselect(where(x * x + y * y == 0, 0, 1 / (x * x + y * y)))"
unary(
    "atan",
    "atan(x)",
    "1 / (x * x + 1)",
    "AtanBackward0",
    numpy=np.arctan,
    rule="float",
    aliases=("arctan",),
)
unary(
    "asin",
    "asin(x)",
    "rsqrt(1 - x * x)",
    "AsinBackward0",
    numpy=np.arcsin,
    rule="float",
    domain=(-0.9, 0.9),
    aliases=("arcsin",),
)
unary(
    "acos",
    "acos(x)",
    "-rsqrt(1 - x * x)",
    "AcosBackward0",
    numpy=np.arccos,
    rule="float",
    domain=(-0.9, 0.9),
    aliases=("arccos",),
)
unary("sinh", "sinh(x)", "cosh(x)", "SinhBackward0", numpy=np.sinh, rule="float")
unary("cosh", "cosh(x)", "sinh(x)", "CoshBackward0", numpy=np.cosh, rule="float")
unary(
    "asinh",
    "asinh(x)",
    "rsqrt(x * x + 1)",
    "AsinhBackward0",
    numpy=np.arcsinh,
    rule="float",
    aliases=("arcsinh",),
)
unary(
    "acosh",
    "acosh(x)",
    "rsqrt(x * x - 1)",
    "AcoshBackward0",
    numpy=np.arccosh,
    rule="float",
    domain=(1.2, 3),
    complex_partials=("conj(rsqrt(x + 1) * rsqrt(x - 1))",),
    aliases=("arccosh",),
)
unary(
    "atanh",
    "atanh(x)",
    "1 / (1 - x * x)",
    "AtanhBackward0",
    numpy=np.arctanh,
    rule="float",
    domain=(-0.9, 0.9),
    aliases=("arctanh",),
)
# sinc(0) is 1 and its gradient is 0 wherever pi x^2 underflows to 0 (PyTorch's sinc_backward)
unary(
    "sinc",
    "where(x == 0, 1, sin(x * %s) / (x * %s))" % (PI, PI),
    "where(x * x * {0} == 0, 0, (x * {0} * cos(x * {0}) - sin(x * {0})) / (x * x * {0}))".format(
        PI
    ),
    "SincBackward0",
    rule="float",
)
binary(
    "atan2",
    "atan2(x, y)",
    "y * %s" % ATAN2_RECIP,
    "-x * %s" % ATAN2_RECIP,
    "Atan2Backward0",
    numpy=np.arctan2,
    rule="float",
    aliases=("arctan2",),
    jvp_formula="(-x * t_y + y * t_x) / (x * x + y * y)",
    **no_complex("\"atan2_cpu\" not implemented for '%s'"),
)
binary(
    "hypot",
    "hypot(x, y)",
    "x / out",
    "y / out",
    "HypotBackward0",
    numpy=np.hypot,
    **no_complex("\"hypot_cpu\" not implemented for '%s'"),
)
# PyTorch's max + log1p(exp(min - max)), x itself where both are the same infinity
binary(
    "logaddexp",
    "where(x == y, x + %s, where(real(x) >= real(y), x + log1p(exp(y - x)), "
    "y + log1p(exp(x - y))))" % LN2,
    "1 / (1 + exp(y - x))",
    "1 / (1 + exp(x - y))",
    "LogaddexpBackward0",
    variants=(FUNCTION, METHOD, OUT),
)
FMOD_NO_COMPLEX = no_complex("\"fmod_cpu\" not implemented for '%s'")
unary(
    "fmod",
    "fmod(x, y)",
    "1",
    "FmodBackward0",
    attrs=("y",),
    numpy=np.fmod,
    numpy_attrs=True,
    **FMOD_NO_COMPLEX,
)
binary(
    "fmod.Tensor",
    "fmod(x, y)",
    "1",
    "-trunc(x / y)",
    "FmodBackward1",
    numpy=np.fmod,
    domain_y=(0.5, 3),
    variants=NONE,
    **FMOD_NO_COMPLEX,
)
# xlogy: 0 where x == 0 (unless y is NaN); d/dx is PyTorch's xlogy(g, y) masked to 0 where
# x == 0 and y <= 0 (a partial written with g: it is the whole backward expression)
XLOGY = "where(y != y, y, where(x == 0, 0, x * log(y)))"
XLOGY_G = "where(y != y, y, where(g == 0, 0, g * log(y)))"
XLOGY_NO_COMPLEX = no_complex("\"xlogy_cpu\" not implemented for '%s'")
binary(
    "xlogy",
    XLOGY,
    "where((x == 0) & (y <= 0), 0, %s)" % XLOGY_G,
    "x / y",
    "XlogyBackward0",
    rule="float",
    domain_y=(0.5, 3),
    **XLOGY_NO_COMPLEX,
)
pointwise(
    "xlogy.Scalar_Self",
    XLOGY,
    ("x / y",),
    "XlogyBackward1",
    args=("y",),
    attrs=("x",),
    rule="float",
    domain=(0.5, 3),
    variants=NONE,
    **XLOGY_NO_COMPLEX,
)
unary(
    "xlogy.Scalar_Other",
    XLOGY,
    "where((x == 0) & ((y <= 0) | (y != y)), 0, %s)" % XLOGY_G,
    "XlogyBackward2",
    attrs=("y",),
    rule="float",
    variants=NONE,
    **XLOGY_NO_COMPLEX,
)

# fmt: on

# no gradient: comparisons, logical ops, integer division
nograd("eq", np.equal)
nograd("ne", np.not_equal, aliases=("not_equal",))
nograd("lt", np.less, aliases=("less",))
nograd("le", np.less_equal, aliases=("less_equal",))
nograd("gt", np.greater, aliases=("greater",))
nograd("ge", np.greater_equal, aliases=("greater_equal",))
nograd("logical_and", np.logical_and)
nograd("logical_or", np.logical_or)
nograd("logical_xor", np.logical_xor)
nograd("floor_divide", np.floor_divide)
nograd("logical_not", np.logical_not, args=("x",))
for _name, _uf in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
    nograd(_name, _uf, args=("x",), variants=(FUNCTION, METHOD, OUT))
