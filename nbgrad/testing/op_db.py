"""The op table that drives the tests: one or more OpInfo per registry op.

``fn(T, *args)`` runs with ``T`` = nbgrad or torch (the oracle), so one lambda serves both;
``ref(*arrays)`` is the numpy reference for forward values.  Sample argument specs:
  F(shape, lo, hi)       random float tensor (differentiable), T=True: passed transposed (.mT)
  N(shape, lo, hi)       random float tensor that does not require grad
  I(values) / B(values)  fixed int64 / bool tensor;  C(value): a plain Python value
"""

import copy

import numpy as np

import nbgrad

from ..ops.registry import FUNCTION, REGISTRY


class F:
    def __init__(self, shape, lo=-2.0, hi=2.0, T=False, grad=True):
        self.shape, self.lo, self.hi, self.T, self.grad = tuple(shape), lo, hi, T, grad
        self.kinks = None  # set from OpInfo(kinks=): points where the op is not smooth

    def array(self, rng):
        shp = self.shape[::-1] if self.T else self.shape
        return dodge(rng.uniform(self.lo, self.hi, shp), self.kinks)


KINK_GAP = 0.05  # finite differences (eps <= 1e-3) never straddle a kink


def dodge(a, kinks):
    """Move samples within KINK_GAP of a kink (a number, "int": every integer, "half": every
    half-integer) to KINK_GAP away from it, so gradient checks test the smooth parts."""
    if kinks is None:
        return a
    if kinks in ("int", "half"):
        off = 0.5 if kinks == "half" else 0.0
        k = np.round(a - off) + off
    else:
        pts = np.asarray(kinks, dtype=float)
        k = pts[np.argmin(np.abs(a[..., None] - pts), axis=-1)]
    d = a - k
    return np.where(np.abs(d) < KINK_GAP, k + np.where(d < 0, -KINK_GAP, KINK_GAP), a)


def N(shape, lo=-2.0, hi=2.0):
    return F(shape, lo, hi, grad=False)


class I:
    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)


class B:
    def __init__(self, values):
        self.values = np.asarray(values, dtype=bool)


class C:
    def __init__(self, value):
        self.value = value


class OpInfo:
    def __init__(
        self,
        name,
        fn,
        ref=None,
        samples=None,
        grad=True,
        gradgrad=True,
        node=None,
        rtol=1e-5,
        atol=1e-6,
        kinks=None,
        torch_grad_names=True,
        dtypes=("float32", "float64"),
        grad_tol=None,
    ):
        self.name = name
        self.fn = fn
        self.ref = ref
        self.samples = samples or [(F((3, 4)),)]
        self.grad = grad
        self.gradgrad = gradgrad
        self.node = node
        self.rtol, self.atol = rtol, atol
        self.kinks = kinks
        self.torch_grad_names = torch_grad_names
        self.dtypes = dtypes
        self.grad_tol = grad_tol or {}  # looser only where the op itself rounds (dtype casts)
        if kinks is not None:  # copies: sample specs are shared between entries
            self.samples = [tuple(_with_kinks(spec, kinks) for spec in smp) for smp in self.samples]

    def __repr__(self):
        return self.name


def _with_kinks(spec, kinks):
    if not isinstance(spec, F):
        return spec
    spec = copy.copy(spec)
    spec.kinks = kinks
    return spec


def materialize(T, sample, dtype, requires_grad, seed=0):
    """(leaves, args): leaves are what gradients are taken for; args are passed to fn."""
    rng = np.random.default_rng(seed)
    leaves, args = [], []
    dt = getattr(T, dtype)
    for spec in sample:
        if isinstance(spec, F):
            arr = spec.array(rng)
            t = T.tensor(arr, dtype=dt)
            if spec.grad and requires_grad:
                t.requires_grad_(True)
                leaves.append(t)
            args.append(t.mT if spec.T else t)
        elif isinstance(spec, I):
            args.append(T.tensor(spec.values))
        elif isinstance(spec, B):
            args.append(T.tensor(spec.values))
        else:
            args.append(spec.value)
    return leaves, args


def leaf_fn(info, sample, args_template):
    """``info.fn`` as a function of the differentiable leaves only (other arguments fixed)."""

    def fn(*leaves):
        it = iter(leaves)
        args = []
        for spec, a in zip(sample, args_template):
            if isinstance(spec, F) and spec.grad:
                leaf = next(it)
                args.append(leaf.mT if spec.T else leaf)
            else:
                args.append(a)
        return info.fn(nbgrad, *args)

    return fn


def arrays_of(sample, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for spec in sample:
        if isinstance(spec, F):
            a = spec.array(rng)
            out.append(a.T if spec.T else a)
        elif isinstance(spec, (I, B)):
            out.append(spec.values)
        else:
            out.append(spec.value)
    return out


# ---------------------------------------------------------------------------------------------
# Elementwise unary ops: one entry each, generated from the registry.  The forward reference is
# the op's numpy ufunc, an independent numpy expression below, or (for a new op declared by its
# formula alone) the formula evaluated by numpy in float64.
REFS = {
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    "reciprocal": lambda x: 1 / x,
    "sinc": np.sinc,
}

STD = [(F((3, 4)),), (F(()),), (F((5,)),), (F((4, 3), T=True),)]


def _erf(x):
    import math

    return np.vectorize(math.erf)(x)


NUMPY_VOCAB = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "fabs": np.abs,
    "sign": np.sign,
    "erf": _erf,
    "where": np.where,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "rsqrt": lambda v: 1 / np.sqrt(v),
    "isnan": np.isnan,
    "atan": np.arctan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "real": np.real,
}


def formula_ref(op):
    """numpy evaluation of ``op``'s formula (the reference of last resort)."""
    code = compile(op.formula, op.name, "eval")
    return lambda *xs: eval(code, dict(NUMPY_VOCAB, **dict(zip(op.args, xs))))


def _unary_entries():
    out = []
    for name, op in REGISTRY.items():
        if (
            op.kind != "pointwise"
            or FUNCTION not in op.variants
            or op.args != ("x",)
            or op.attrs
            or op.fn is None
            or "." in name
            or name in ("round", "clamp")
        ):
            continue  # not a plain unary function (attributes, overloads, extra arguments)
        ref = REFS.get(name) or op.numpy or formula_ref(op)
        lo, hi = op.hints.get("domain", (-2.0, 2.0))
        samples = [tuple(F(s.shape, lo, hi, T=s.T) for s in smp) for smp in STD]
        nondiff = op.partials == ("0",)
        out.append(
            OpInfo(
                name,
                (lambda n: lambda T, x: getattr(T, n)(x))(name),
                ref,
                samples,
                grad=True,
                gradgrad=not nondiff and name not in ("abs", "relu", "sign"),
                kinks=op.hints.get("kinks"),
            )
        )
    out.append(OpInfo("round", lambda T, x: T.round(x), np.rint, STD))
    return out


BIN = [
    (F((3, 4)), F((3, 4))),
    (F((3, 1)), F((4,))),
    (F(()), F((2, 3))),
    (F((3, 4), T=True), F((3, 4))),
]
POS = dict(lo=0.5, hi=2.0)


def _bin(shape_pairs, **kw):
    return [(F(a.shape, T=a.T, **kw), F(b.shape, T=b.T, **kw)) for a, b in shape_pairs]


OP_DB = _unary_entries() + [
    OpInfo("add", lambda T, x, y: T.add(x, y), lambda x, y: x + y, BIN),
    OpInfo("add", lambda T, x, y: x + y * 2.5, lambda x, y: x + y * 2.5, BIN[:2]),
    OpInfo("add", lambda T, x: x + 1.5, lambda x: x + 1.5, [(F((3,)),)]),
    OpInfo("sub", lambda T, x, y: T.sub(x, y, alpha=2), lambda x, y: x - 2 * y, BIN),
    OpInfo("rsub", lambda T, x: 2.0 - x, lambda x: 2.0 - x, [(F((3, 2)),)]),
    OpInfo("mul", lambda T, x, y: x * y, lambda x, y: x * y, BIN),
    OpInfo("mul", lambda T, x: x * 3, lambda x: x * 3, [(F((4,)),)]),
    OpInfo(
        "div",
        lambda T, x, y: x / y,
        lambda x, y: x / y,
        [(F((3, 4)), F((3, 4), **POS)), (F((3, 1)), F((4,), **POS))],
    ),
    OpInfo("div", lambda T, x: 2.0 / x, lambda x: 2.0 / x, [(F((3,), **POS),)]),
    OpInfo("pow", lambda T, x: x**3, lambda x: x**3, [(F((3, 4)),), (F(()),)]),
    OpInfo("pow", lambda T, x: T.pow(x, 2.5), lambda x: x**2.5, [(F((3, 4), **POS),)]),
    OpInfo("square", lambda T, x: T.square(x), lambda x: x * x, [(F((5,)),)]),
    OpInfo("pow.Tensor", lambda T, x, y: x**y, lambda x, y: x**y, _bin(BIN[:2], **POS)),
    OpInfo("rpow", lambda T, x: 2.0**x, lambda x: 2.0**x, [(F((3, 4)),)]),
    OpInfo(
        "clamp",
        lambda T, x: T.clamp(x, -0.5, 0.7),
        lambda x: np.clip(x, -0.5, 0.7),
        [(F((4, 5)),)],
        kinks=(-0.5, 0.7),
        gradgrad=False,
    ),
    OpInfo(
        "clamp",
        lambda T, x: x.clamp(min=0.1),
        lambda x: np.maximum(x, 0.1),
        [(F((6,)),)],
        kinks=(0.1,),
        gradgrad=False,
    ),
    OpInfo(
        "clamp_min",
        lambda T, x: T.clamp_min(x, 0.1),
        lambda x: np.maximum(x, 0.1),
        [(F((6,)),)],
        kinks=(0.1,),
        gradgrad=False,
    ),
    OpInfo(
        "clamp_max",
        lambda T, x: x.clamp_max(0.3),
        lambda x: np.minimum(x, 0.3),
        [(F((6,)),)],
        kinks=(0.3,),
        gradgrad=False,
    ),
    OpInfo("maximum", lambda T, x, y: T.maximum(x, y), np.maximum, BIN[:2], gradgrad=False),
    OpInfo("minimum", lambda T, x, y: T.minimum(x, y), np.minimum, BIN[:2], gradgrad=False),
    OpInfo(
        "remainder.Tensor",
        lambda T, x, y: T.remainder(x, y),
        np.remainder,
        [(F((3, 4)), F((3, 4), **POS))],
        gradgrad=False,
    ),
    OpInfo(
        "remainder",
        lambda T, x: x % 1.5,
        lambda x: np.remainder(x, 1.5),
        [(F((3, 4)),)],
        gradgrad=False,
    ),
    OpInfo("lerp", lambda T, x, y: T.lerp(x, y, 0.3), lambda x, y: x + 0.3 * (y - x), BIN[:2]),
    OpInfo(
        "lerp.Tensor",
        lambda T, x, y, w: T.lerp(x, y, w),
        lambda x, y, w: x + w * (y - x),
        [(F((3, 4)), F((3, 4)), F((3, 4))), (F((3, 1)), F((4,)), F(()))],
    ),
    OpInfo(
        "where",
        lambda T, c, x, y: T.where(c, x, y),
        np.where,
        [
            (B([[True, False, True], [False, False, True]]), F((2, 3)), F((2, 3))),
            (B([True, False, True]), F((2, 3)), F(())),
        ],
    ),
    OpInfo(
        "masked_fill",
        lambda T, x, m: x.masked_fill(m, -1.5),
        lambda x, m: np.where(m, -1.5, x),
        [(F((2, 3)), B([True, False, True]))],
    ),
    # overloads reached through a public function (variants=NONE in the registry)
    OpInfo(
        "masked_fill.Tensor",
        lambda T, x, m, v: x.masked_fill(m, v),
        lambda x, m, v: np.where(m, v, x),
        [(F((2, 3)), B([True, False, True]), F(()))],
    ),
    OpInfo(
        "clamp.Tensor",
        lambda T, x, lo, hi: T.clamp(x, lo, hi),
        lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
        [(F((2, 3)), F((2, 3), -2.0, -0.5), F((3,), 0.5, 2.0))],
        gradgrad=False,
    ),
    OpInfo(
        "clamp.Tensor_min",
        lambda T, x, lo: T.clamp(x, min=lo),
        np.maximum,
        [(F((2, 3)), F((3,)))],
        gradgrad=False,
    ),
    OpInfo(
        "clamp.Tensor_max",
        lambda T, x, hi: T.clamp(x, max=hi),
        np.minimum,
        [(F((2, 3)), F((3,)))],
        gradgrad=False,
    ),
    OpInfo(
        "clamp_min.Tensor",
        lambda T, x, lo: T.clamp_min(x, lo),
        np.maximum,
        [(F((2, 3)), F((2, 1)))],
        gradgrad=False,
    ),
    OpInfo(
        "clamp_max.Tensor",
        lambda T, x, hi: T.clamp_max(x, hi),
        np.minimum,
        [(F((2, 3)), F(()))],
        gradgrad=False,
    ),
    OpInfo("rsub.Tensor", lambda T, x, y: T.rsub(x, y), lambda x, y: y - x, BIN[:2]),
    OpInfo("add.alpha", lambda T, x, y: T.add(x, y, alpha=2.5), lambda x, y: x + 2.5 * y, BIN[:2]),
    OpInfo("sub.alpha", lambda T, x, y: T.sub(x, y, alpha=-0.5), lambda x, y: x + 0.5 * y, BIN[:2]),
    OpInfo(
        "div.floor",
        lambda T, x, y: T.div(x, y, rounding_mode="floor"),
        lambda x, y: np.floor(x / y),
        [(F((3, 4)), F((3, 4), **POS))],
        gradgrad=False,
    ),
    OpInfo(
        "div.trunc",
        lambda T, x, y: T.div(x, y, rounding_mode="trunc"),
        lambda x, y: np.trunc(x / y),
        [(F((3, 4)), F((3, 4), **POS))],
        gradgrad=False,
    ),
    OpInfo(
        "round.decimals",
        lambda T, x: T.round(x, decimals=1),
        lambda x: np.rint(x * 10.0) / 10.0,
        [(F((3, 4)),)],
        gradgrad=False,
    ),
]

CMP = [(N((3, 4)), N((3, 4))), (N((3, 1)), N((4,)))]
for _n, _f in [
    ("eq", np.equal),
    ("ne", np.not_equal),
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
]:
    OP_DB.append(
        OpInfo(_n, (lambda n: lambda T, x, y: getattr(T, n)(x, y))(_n), _f, CMP, grad=False)
    )
LOG = [(B([[True, False], [True, True]]), B([[False, False], [True, False]]))]
for _n, _f in [
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor),
]:
    OP_DB.append(
        OpInfo(_n, (lambda n: lambda T, x, y: getattr(T, n)(x, y))(_n), _f, LOG, grad=False)
    )
OP_DB += [
    OpInfo(
        "logical_not",
        lambda T, x: T.logical_not(x),
        np.logical_not,
        [(B([True, False]),)],
        grad=False,
    ),
    OpInfo(
        "isnan",
        lambda T, x: T.isnan(T.log(x)),
        lambda x: np.isnan(np.log(x)),
        [(N((5,)),)],
        grad=False,
    ),
    OpInfo(
        "isinf",
        lambda T, x: T.isinf(1 / (x * 0)),
        lambda x: np.isinf(1 / (x * 0)),
        [(N((5,)),)],
        grad=False,
    ),
    OpInfo(
        "isfinite",
        lambda T, x: T.isfinite(T.log(x)),
        lambda x: np.isfinite(np.log(x)),
        [(N((5,)),)],
        grad=False,
    ),
    OpInfo(
        "floor_divide",
        lambda T, x, y: x // y,
        np.floor_divide,
        [(N((3, 4)), N((3, 4), 0.5, 2.0))],
        grad=False,
    ),
    OpInfo(
        "equal",
        lambda T, x, y: T.tensor(T.equal(x, y)),
        lambda x, y: np.array_equal(x, y),
        [(N((3, 4)), N((3, 4)))],
        grad=False,
    ),
    OpInfo(
        "allclose",
        lambda T, x, y: T.tensor(x.allclose(x + y * 1e-9)),
        lambda x, y: np.allclose(x, x + y * 1e-9),
        [(N((3, 4)), N((3, 4)))],
        grad=False,
    ),
    OpInfo(
        "isclose",
        lambda T, x, y: T.isclose(x, y, atol=0.5),
        lambda x, y: np.isclose(x, y, atol=0.5),
        [(N((3, 4)), N((3, 4)))],
        grad=False,
    ),
]

# -- reductions --------------------------------------------------------------------------------
R3 = [(F((3, 4, 5)),)]
OP_DB += [
    OpInfo("sum", lambda T, x: x.sum(), lambda x: x.sum(), STD),
    OpInfo("sum", lambda T, x: x.sum(1), lambda x: x.sum(1), R3 + [(F((4, 3), T=True),)]),
    OpInfo(
        "sum", lambda T, x: x.sum((0, 2), keepdim=True), lambda x: x.sum((0, 2), keepdims=True), R3
    ),
    OpInfo("mean", lambda T, x: x.mean(), lambda x: x.mean(), STD),
    OpInfo("mean", lambda T, x: x.mean(-1, keepdim=True), lambda x: x.mean(-1, keepdims=True), R3),
    OpInfo("prod", lambda T, x: x.prod(), lambda x: x.prod(), [(F((2, 3), 0.5, 1.5),)]),
    OpInfo("prod", lambda T, x: x.prod(1), lambda x: x.prod(1), [(F((3, 4), 0.5, 1.5),)]),
    OpInfo("amax", lambda T, x: x.amax(1), lambda x: x.max(1), R3, gradgrad=False),
    OpInfo("amin", lambda T, x: T.amin(x, (0, 1)), lambda x: x.min((0, 1)), R3, gradgrad=False),
    OpInfo("max", lambda T, x: x.max(), lambda x: x.max(), STD, gradgrad=False),
    OpInfo("max", lambda T, x: x.max(1)[0], lambda x: x.max(1), R3, gradgrad=False),
    OpInfo(
        "max",
        lambda T, x: x.max(0, keepdim=True).values,
        lambda x: x.max(0, keepdims=True),
        [(F((4, 3)),)],
        gradgrad=False,
    ),
    OpInfo("min", lambda T, x: x.min(), lambda x: x.min(), STD, gradgrad=False),
    OpInfo("min", lambda T, x: x.min(-1)[0], lambda x: x.min(-1), R3, gradgrad=False),
    OpInfo("argmax", lambda T, x: x.argmax(1), lambda x: x.argmax(1), R3, grad=False),
    OpInfo("argmax", lambda T, x: T.argmax(x), lambda x: x.argmax(), R3, grad=False),
    OpInfo("argmin", lambda T, x: x.argmin(0), lambda x: x.argmin(0), R3, grad=False),
    OpInfo("var", lambda T, x: x.var(), lambda x: x.var(ddof=1), STD[:1] + STD[2:]),
    OpInfo(
        "var",
        lambda T, x: x.var(1, keepdim=True, correction=0),
        lambda x: x.var(1, keepdims=True),
        R3,
    ),
    OpInfo("std", lambda T, x: x.std(), lambda x: x.std(ddof=1), [(F((3, 4)),)]),
    OpInfo("std", lambda T, x: T.std(x, 0, unbiased=False), lambda x: x.std(0), R3),
    OpInfo("norm", lambda T, x: x.norm(), lambda x: np.sqrt((x * x).sum()), STD[:1] + STD[2:]),
    OpInfo("norm", lambda T, x: x.norm(1, dim=1), lambda x: np.abs(x).sum(1), R3, gradgrad=False),
    OpInfo(
        "norm", lambda T, x: x.norm(3, dim=-1), lambda x: (np.abs(x) ** 3).sum(-1) ** (1 / 3), R3
    ),
    OpInfo(
        "logsumexp",
        lambda T, x: T.logsumexp(x, 1),
        lambda x: np.log(np.exp(x).sum(1)),
        R3 + [(F((4, 3), T=True),)],
    ),
    OpInfo("cumsum", lambda T, x: x.cumsum(1), lambda x: x.cumsum(1), R3 + [(F((4, 3), T=True),)]),
    OpInfo("cumsum", lambda T, x: T.cumsum(x, 0), lambda x: x.cumsum(0), [(F((5,)),)]),
    OpInfo(
        "all", lambda T, x: (x > 0).all(1), lambda x: (x > 0).all(1), [(N((3, 4)),)], grad=False
    ),
    OpInfo("any", lambda T, x: (x > 1).any(), lambda x: (x > 1).any(), [(N((3, 4)),)], grad=False),
]

# -- shape ---------------------------------------------------------------------------------------
M = [(F((3, 4)),), (F((4, 3), T=True),)]
OP_DB += [
    OpInfo("view", lambda T, x: x.view(2, 6), lambda x: x.reshape(2, 6), [(F((3, 4)),)]),
    OpInfo("reshape", lambda T, x: x.reshape(-1, 2), lambda x: x.reshape(-1, 2), M),
    OpInfo("flatten", lambda T, x: x.flatten(), lambda x: x.reshape(-1), [(F((2, 3, 2)),)]),
    OpInfo(
        "unflatten",
        lambda T, x: x.unflatten(1, (2, 2)),
        lambda x: x.reshape(3, 2, 2),
        [(F((3, 4)),)],
    ),
    OpInfo("squeeze", lambda T, x: x.squeeze(1), lambda x: x.squeeze(1), [(F((3, 1, 2)),)]),
    OpInfo("squeeze", lambda T, x: x.squeeze(), lambda x: x.squeeze(), [(F((1, 3, 1)),)]),
    OpInfo("unsqueeze", lambda T, x: x.unsqueeze(-1), lambda x: x[..., None], M),
    OpInfo("transpose", lambda T, x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2), R3),
    OpInfo("permute", lambda T, x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1), R3),
    OpInfo("t", lambda T, x: x.t(), lambda x: x.T, M),
    OpInfo(
        "expand",
        lambda T, x: x.expand(2, 3, 4),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        [(F((3, 1)),)],
    ),
    OpInfo(
        "expand_as",
        lambda T, x, y: x.expand_as(y),
        lambda x, y: np.broadcast_to(x, y.shape),
        [(F((4,)), N((2, 4)))],
    ),
    OpInfo(
        "broadcast_to",
        lambda T, x: T.broadcast_to(x, (2, 4)),
        lambda x: np.broadcast_to(x, (2, 4)),
        [(F((1, 4)),)],
    ),
    OpInfo(
        "broadcast_tensors",
        lambda T, x, y: T.broadcast_tensors(x, y),
        lambda x, y: tuple(np.broadcast_arrays(x, y)),
        [(F((3, 1)), F((4,)))],
    ),
    OpInfo(
        "cat",
        lambda T, x, y: T.cat([x, y], 1),
        lambda x, y: np.concatenate([x, y], 1),
        [(F((2, 3)), F((2, 2))), (F((2, 3), T=True), F((2, 1)))],
    ),
    OpInfo(
        "stack",
        lambda T, x, y: T.stack([x, y], 1),
        lambda x, y: np.stack([x, y], 1),
        [(F((2, 3)), F((2, 3)))],
    ),
    OpInfo(
        "split", lambda T, x: T.split(x, 2, 1), lambda x: tuple(np.split(x, [2], 1)), [(F((3, 4)),)]
    ),
    OpInfo("split", lambda T, x: x.split([1, 3], 1)[1], lambda x: x[:, 1:], [(F((3, 4)),)]),
    OpInfo(
        "chunk",
        lambda T, x: T.chunk(x, 3, 0),
        lambda x: tuple(np.array_split(x, 3, 0)),
        [(F((6, 2)),)],
    ),
    OpInfo(
        "unbind", lambda T, x: x.unbind(1), lambda x: tuple(np.moveaxis(x, 1, 0)), [(F((2, 3)),)]
    ),
    OpInfo("flip", lambda T, x: T.flip(x, (0, 1)), lambda x: np.flip(x, (0, 1)), M),
    OpInfo("roll", lambda T, x: T.roll(x, 1, 1), lambda x: np.roll(x, 1, 1), M),
    OpInfo("roll", lambda T, x: T.roll(x, 2), lambda x: np.roll(x, 2), [(F((3, 2)),)]),
    OpInfo("narrow", lambda T, x: T.narrow(x, 1, 1, 2), lambda x: x[:, 1:3], M),
    OpInfo("tril", lambda T, x: T.tril(x), np.tril, M),
    OpInfo("triu", lambda T, x: T.triu(x, 1), lambda x: np.triu(x, 1), M),
    OpInfo("clone", lambda T, x: x.clone(), lambda x: x.copy(), M),
    OpInfo("contiguous", lambda T, x: x.contiguous(), lambda x: x.copy(), [(F((4, 3), T=True),)]),
    OpInfo(
        "to",
        lambda T, x: x.double().float() if x.dtype == T.float32 else x.float().double(),
        lambda x: x.astype(np.float32).astype(x.dtype),
        [(F((3,)),)],
        grad_tol=dict(eps=1e-3, rtol=1e-3, atol=1e-4),
    ),  # the op rounds to float32
    OpInfo("repeat", lambda T, x: x.repeat(2, 3), lambda x: np.tile(x, (2, 3)), [(F((2, 2)),)]),
    OpInfo(
        "sum_to_size",
        lambda T, x: x.sum_to_size(1, 4),
        lambda x: x.sum(0, keepdims=True),
        [(F((3, 4)),)],
    ),
    OpInfo("movedim", lambda T, x: T.movedim(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), R3),
]

# -- indexing ------------------------------------------------------------------------------------
OP_DB += [
    OpInfo("getitem", lambda T, x: x[1], lambda x: x[1], M),
    OpInfo("getitem", lambda T, x: x[:, 1::2], lambda x: x[:, 1::2], M),
    OpInfo("getitem", lambda T, x: x[None, ..., 0], lambda x: x[None, ..., 0], R3),
    OpInfo("getitem", lambda T, x, i: x[i], lambda x, i: x[i], [(F((4, 3)), I([0, 2, 2, -1]))]),
    OpInfo(
        "getitem",
        lambda T, x, m: x[m],
        lambda x, m: x[m],
        [(F((2, 3)), B([[True, False, True], [False, True, True]]))],
    ),
    OpInfo("getitem", lambda T, x: x[[0, 1], [2, 0]], lambda x: x[[0, 1], [2, 0]], [(F((3, 4)),)]),
    OpInfo(
        "setitem",
        lambda T, x, v: _setitem(x, v),
        lambda x, v: _np_setitem(x, v),
        [(F((3, 4)), F((4,)))],
    ),
    OpInfo(
        "gather",
        lambda T, x, i: T.gather(x, 1, i),
        lambda x, i: np.take_along_axis(x, i, 1),
        [(F((3, 4)), I([[0, 1], [3, 3], [2, 0]]))],
    ),
    OpInfo(
        "scatter",
        lambda T, x, s, i: T.scatter(x, 1, i, s),
        lambda x, s, i: _np_scatter(x, s, i, False),
        [(F((3, 4)), F((3, 2)), I([[0, 1], [3, 2], [2, 0]]))],
    ),
    OpInfo(
        "scatter_add",
        lambda T, x, s, i: T.scatter_add(x, 1, i, s),
        lambda x, s, i: _np_scatter(x, s, i, True),
        [(F((3, 4)), F((3, 2)), I([[0, 0], [3, 2], [2, 2]]))],
    ),
    OpInfo(
        "index_select",
        lambda T, x, i: T.index_select(x, 0, i),
        lambda x, i: x[i],
        [(F((4, 3)), I([3, 0, 3]))],
    ),
    OpInfo(
        "nonzero",
        lambda T, x: T.nonzero(x > 0),
        lambda x: np.stack(np.nonzero(x > 0), 1),
        [(N((3, 4)),)],
        grad=False,
    ),
    OpInfo(
        "masked_select",
        lambda T, x, m: T.masked_select(x, m),
        lambda x, m: x[np.broadcast_to(m, x.shape)],
        [(F((2, 3)), B([True, False, True]))],
    ),
]


def _setitem(x, v):
    y = x * 1
    y[1] = v
    return y


def _np_setitem(x, v):
    y = x.copy()
    y[1] = v
    return y


def _np_scatter(x, s, i, add):
    y = x.copy()
    for r in range(i.shape[0]):
        for c in range(i.shape[1]):
            if add:
                y[r, i[r, c]] += s[r, c]
            else:
                y[r, i[r, c]] = s[r, c]
    return y


# -- sorting and scans ---------------------------------------------------------------------------
S3 = [(F((3, 4, 5)),), (F((4, 3), T=True),)]


def _np_sort(x, d, descending=False):
    idx = np.argsort(-x if descending else x, axis=d, kind="stable")
    return np.take_along_axis(x, idx, d), idx


def _np_cum(x, d, fn):
    v = fn.accumulate(x, axis=d)
    n = x.shape[d]
    shape = [1] * x.ndim
    shape[d] = n
    pos = np.broadcast_to(np.arange(n).reshape(shape), x.shape)
    idx = np.maximum.accumulate(np.where(x == v, pos, 0), axis=d)  # last position of the extreme
    return v, idx


OP_DB += [
    OpInfo("sort", lambda T, x: T.sort(x, 1), lambda x: _np_sort(x, 1), S3),
    OpInfo(
        "sort",
        lambda T, x: x.sort(descending=True, stable=True).values,
        lambda x: _np_sort(x, -1, True)[0],
        S3,
    ),
    OpInfo("sort", lambda T, x: x.sort().values, lambda x: x, [(F(()),)]),
    OpInfo(
        "argsort",
        lambda T, x: T.argsort(x, 0),
        lambda x: np.argsort(x, 0, kind="stable"),
        S3,
        grad=False,
    ),
    OpInfo("msort", lambda T, x: T.msort(x), lambda x: np.sort(x, 0), S3),
    OpInfo(
        "topk",
        lambda T, x: T.topk(x, 2, 1),
        lambda x: tuple(a[:, :2] for a in _np_sort(x, 1, True)),
        S3,
    ),
    OpInfo(
        "topk",
        lambda T, x: x.topk(2, largest=False).values,
        lambda x: _np_sort(x, -1)[0][..., :2],
        S3,
    ),
    OpInfo(
        "kthvalue",
        lambda T, x: T.kthvalue(x, 2, 1),
        lambda x: tuple(a[:, 1] for a in _np_sort(x, 1)),
        S3,
    ),
    OpInfo(
        "kthvalue",
        lambda T, x: x.kthvalue(3, 0, keepdim=True).values,
        lambda x: _np_sort(x, 0)[0][2:3],
        S3,
    ),
    OpInfo("cummax", lambda T, x: T.cummax(x, 1), lambda x: _np_cum(x, 1, np.maximum), S3),
    OpInfo("cummin", lambda T, x: x.cummin(0), lambda x: _np_cum(x, 0, np.minimum), S3),
    OpInfo(
        "unique",
        lambda T, x: T.unique(x, return_inverse=True, return_counts=True),
        lambda x: np.unique(x, return_inverse=True, return_counts=True),
        [(I([[3, 1, 1], [2, 3, 0]]),)],
        grad=False,
    ),
]

# -- diagonals ------------------------------------------------------------------------------------
OP_DB += [
    OpInfo("diagonal", lambda T, x: T.diagonal(x), lambda x: np.diagonal(x).copy(), M),
    OpInfo(
        "diagonal", lambda T, x: x.diagonal(-1, 2, 0), lambda x: np.diagonal(x, -1, 2, 0).copy(), R3
    ),
    OpInfo("diagonal", lambda T, x: x.diagonal(5), lambda x: np.diagonal(x, 5).copy(), M),
    OpInfo("diag", lambda T, x: T.diag(x), np.diag, [(F((4,)),)]),
    OpInfo("diag", lambda T, x: x.diag(-2), lambda x: np.diag(x, -2), [(F((3,)),)]),
    OpInfo("diag", lambda T, x: T.diag(x, 1), lambda x: np.diag(x, 1), M),
    OpInfo("trace", lambda T, x: T.trace(x), np.trace, M),
]

# -- linear algebra and softmax ------------------------------------------------------------------
OP_DB += [
    OpInfo(
        "matmul",
        lambda T, a, b: a @ b,
        lambda a, b: a @ b,
        [
            (F((3, 4)), F((4, 2))),
            (F((2, 3, 4)), F((4, 5))),
            (F((4,)), F((4, 2))),
            (F((3, 4)), F((4,))),
            (F((3, 4), T=True), F((4, 2))),
        ],
    ),
    OpInfo("mm", lambda T, a, b: T.mm(a, b), lambda a, b: a @ b, [(F((3, 4)), F((4, 2)))]),
    OpInfo("bmm", lambda T, a, b: T.bmm(a, b), lambda a, b: a @ b, [(F((2, 3, 4)), F((2, 4, 2)))]),
    OpInfo("dot", lambda T, a, b: T.dot(a, b), np.dot, [(F((5,)), F((5,)))]),
    OpInfo("mv", lambda T, a, b: T.mv(a, b), lambda a, b: a @ b, [(F((3, 4)), F((4,)))]),
    OpInfo("outer", lambda T, a, b: T.outer(a, b), np.outer, [(F((3,)), F((4,)))]),
    OpInfo(
        "einsum",
        lambda T, a, b: T.einsum("ij,jk->ik", a, b),
        lambda a, b: a @ b,
        [(F((3, 4)), F((4, 2)))],
    ),
    OpInfo(
        "einsum",
        lambda T, a, b: T.einsum("bij,bj->bi", a, b),
        lambda a, b: np.einsum("bij,bj->bi", a, b),
        [(F((2, 3, 4)), F((2, 4)))],
    ),
    OpInfo("einsum", lambda T, a: T.einsum("ij->", a), lambda a: a.sum(), [(F((3, 4)),)]),
    OpInfo("softmax", lambda T, x: T.softmax(x, 1), lambda x: _np_softmax(x, 1), R3 + M),
    OpInfo("softmax", lambda T, x: x.softmax(-1), lambda x: _np_softmax(x, -1), R3),
    OpInfo(
        "log_softmax", lambda T, x: T.log_softmax(x, 1), lambda x: np.log(_np_softmax(x, 1)), R3 + M
    ),
]


def _np_softmax(x, d):
    e = np.exp(x - x.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


# -- second tier: elementwise math, scans and moments, indexing -----------------------------------


def _np_xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(y), y, np.where(x == 0, 0.0, x * np.log(y)))


def _np_index_add(x, d, idx, src, alpha=1.0):
    y = np.moveaxis(x.copy(), d, 0)
    np.add.at(y, idx, np.moveaxis(src, d, 0) * alpha)
    return np.moveaxis(y, 0, d)


def _np_index_copy(x, d, idx, src):
    y = np.moveaxis(x.copy(), d, 0)
    y[idx] = np.moveaxis(src, d, 0)
    return np.moveaxis(y, 0, d)


def _np_index_fill(x, d, idx, v):
    y = np.moveaxis(x.copy(), d, 0)
    y[idx] = v
    return np.moveaxis(y, 0, d)


_NP_REDUCE = {
    "sum": np.add,
    "prod": np.multiply,
    "mean": np.add,
    "amax": np.maximum,
    "amin": np.minimum,
}


def _np_scatter_reduce(x, s, i, reduce, include_self):
    """scatter_reduce along dim 1 (a loop; the reference is slow on purpose)."""
    y = x.copy()
    uf = _NP_REDUCE[reduce]
    count = np.ones_like(x) if include_self else np.zeros_like(x)
    seen = np.zeros(x.shape, bool)
    for r in range(i.shape[0]):
        for c in range(i.shape[1]):
            t = (r, i[r, c])
            if not include_self and not seen[t]:
                y[t] = s[r, c]
                seen[t] = True
                count[t] = 1
                continue
            y[t] = uf(y[t], s[r, c])
            count[t] += 1
    if reduce == "mean":
        y = y / np.where(count == 0, 1, count)
    return y


def _np_masked_scatter(x, s, m):
    y = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape)))
    mb = np.broadcast_to(m, y.shape)
    y[mb] = s.reshape(-1)[: int(mb.sum())]
    return y


SR_IDX = I([[0, 1, 0], [3, 3, 3], [2, 0, 1]])
Z4 = [1.0, 0.0, 1.0, 0.0]  # zeros in cumprod's input: PyTorch's zero-aware backward
OP_DB += [
    OpInfo("atan2", lambda T, x, y: T.atan2(x, y), np.arctan2, BIN),
    OpInfo("hypot", lambda T, x, y: T.hypot(x, y), np.hypot, BIN),
    OpInfo("logaddexp", lambda T, x, y: T.logaddexp(x, y), np.logaddexp, BIN),
    OpInfo(
        "fmod",
        lambda T, x: T.fmod(x, 1.5),
        lambda x: np.fmod(x, 1.5),
        [(F((3, 4)),)],
        gradgrad=False,
    ),
    OpInfo(
        "fmod.Tensor",
        lambda T, x, y: x.fmod(y),
        np.fmod,
        [(F((3, 4)), F((3, 4), **POS))],
        gradgrad=False,
    ),
    OpInfo(
        "xlogy",
        lambda T, x, y: T.xlogy(x, y),
        _np_xlogy,
        [(F((3, 4)), F((3, 4), **POS)), (F((3, 1)), F((4,), **POS))],
    ),
    OpInfo(
        "xlogy.Scalar_Self",
        lambda T, y: T.xlogy(2.5, y),
        lambda y: 2.5 * np.log(y),
        [(F((3, 4), **POS),)],
    ),
    OpInfo(
        "xlogy.Scalar_Other",
        lambda T, x: x.xlogy(1.7),
        lambda x: x * np.log(1.7),
        [(F((3, 4)),)],
    ),
    OpInfo("cumprod", lambda T, x: x.cumprod(1), lambda x: x.cumprod(1), S3),
    OpInfo("cumprod", lambda T, x: T.cumprod(x, 0), lambda x: x.cumprod(0), [(F((5,)),)]),
    OpInfo(
        "cumprod",
        lambda T, x: T.cumprod(x * T.tensor(Z4, dtype=x.dtype), -1),
        lambda x: np.cumprod(x * np.asarray(Z4, x.dtype), -1),
        [(F((3, 4)),)],
    ),
    OpInfo(
        "var_mean",
        lambda T, x: T.var_mean(x, 1),
        lambda x: (x.var(1, ddof=1), x.mean(1)),
        R3,
    ),
    OpInfo(
        "var_mean",
        lambda T, x: T.var_mean(x, (0, 2), keepdim=True, correction=0),
        lambda x: (x.var((0, 2), keepdims=True), x.mean((0, 2), keepdims=True)),
        R3,
    ),
    OpInfo(
        "std_mean",
        lambda T, x: T.std_mean(x, unbiased=False),
        lambda x: (x.std(), x.mean()),
        [(F((3, 4)),)],
    ),
    OpInfo(
        "std_mean",
        lambda T, x: T.std_mean(x, -1, keepdim=True),
        lambda x: (x.std(-1, ddof=1, keepdims=True), x.mean(-1, keepdims=True)),
        R3,
    ),
    OpInfo("select", lambda T, x: x.select(1, -1), lambda x: x[:, -1], M),
    OpInfo("select", lambda T, x: T.select(x, 0, 1), lambda x: x[1], R3),
    OpInfo("tile", lambda T, x: x.tile((2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)), M),
    OpInfo("tile", lambda T, x: T.tile(x, (2,)), lambda x: np.tile(x, (1, 2)), M),
    OpInfo(
        "repeat_interleave",
        lambda T, x: x.repeat_interleave(2, dim=1),
        lambda x: np.repeat(x, 2, 1),
        M,
    ),
    OpInfo(
        "repeat_interleave",
        lambda T, x: T.repeat_interleave(x, 3),
        lambda x: np.repeat(x.reshape(-1), 3),
        [(F((2, 3)),)],
    ),
    OpInfo(
        "repeat_interleave",
        lambda T, x, r: x.repeat_interleave(r, dim=0),
        lambda x, r: np.repeat(x, r, 0),
        [(F((3, 4)), I([1, 0, 2]))],
    ),
    OpInfo(
        "argwhere",
        lambda T, x: T.argwhere(x > 0),
        lambda x: np.argwhere(x > 0),
        [(N((3, 4)),)],
        grad=False,
    ),
    OpInfo(
        "index_add",
        lambda T, x, s, i: x.index_add(1, i, s, alpha=2.0),
        lambda x, s, i: _np_index_add(x, 1, i, s, 2.0),
        [(F((3, 4)), F((3, 3)), I([0, 2, 0]))],
    ),
    OpInfo(
        "index_add",
        lambda T, x, s, i: T.index_add(x, 0, i, s),
        lambda x, s, i: _np_index_add(x, 0, i, s),
        [(F((4, 3)), F((2, 3)), I([3, 1]))],
    ),
    OpInfo(
        "index_copy",
        lambda T, x, s, i: x.index_copy(1, i, s),
        lambda x, s, i: _np_index_copy(x, 1, i, s),
        [(F((3, 4)), F((3, 2)), I([3, 0]))],
    ),
    OpInfo(
        "index_fill",
        lambda T, x, i: x.index_fill(1, i, -1.5),
        lambda x, i: _np_index_fill(x, 1, i, -1.5),
        [(F((3, 4)), I([3, -4]))],
    ),
    OpInfo(
        "index_fill",
        lambda T, x, v, i: T.index_fill(x, 0, i, v),
        lambda x, v, i: _np_index_fill(x, 0, i, v),
        [(F((3, 4)), F(()), I([2, 0, 2]))],
    ),
    OpInfo(
        "masked_scatter",
        lambda T, x, s, m: x.masked_scatter(m, s),
        _np_masked_scatter,
        [
            (F((3, 4)), F((3, 4)), B([True, False, True, True])),
            (F((4,)), F((2, 5)), B([[True], [False]])),
        ],
    ),
]
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        OP_DB.append(
            OpInfo(
                "scatter_reduce",
                (lambda r, inc: lambda T, x, s, i: x.scatter_reduce(1, i, s, r, include_self=inc))(
                    _red, _inc
                ),
                (lambda r, inc: lambda x, s, i: _np_scatter_reduce(x, s, i, r, inc))(_red, _inc),
                [(F((3, 4)), F((3, 3)), SR_IDX)],
                gradgrad=_red not in ("amax", "amin"),
            )
        )


def op_names():
    return {info.name for info in OP_DB}


# nn.functional's primitives (conv, pooling, norms, losses, activations) live in their own table
from .op_db_nn import OP_DB_NN  # noqa: E402

OP_DB += OP_DB_NN
