"""Differential fuzzing of nbgrad against PyTorch: random programs, a runner, a shrinker.

A *program* is a list of ``Stmt``: one Python statement each, written against ``T`` (the
library: ``nbgrad`` or ``torch``) and ``F`` (``T.nn.functional``), so the same text runs on
either library and prints as a self-contained script (``Program.source()``).  Every statement
also carries what the generator knows about it (the names it defines, uses and mutates, an op
``key``); leaf tensors carry their values as numpy arrays so the shrinker can simplify them.

``generate(seed)`` builds a random program over the registry's ops (pointwise, reductions,
shape and view ops, indexing, linear algebra, softmax, nn.functional, tensor creation) with
0-d, empty, broadcast and non-contiguous inputs, in-place ops on non-leaves and on views,
gradient-changing hooks, ``retain_grad``, ``no_grad`` statements, ``detach`` and deliberate
errors, and ends with a backward pass (``backward()``, ``backward(gradient)`` or
``autograd.grad``).

``run(prog, lib)`` executes a program statement by statement and records a trace: after each
statement the tensors it defined or mutated (values, shape, strides, dtype, ``requires_grad``,
``is_leaf``, ``grad_fn`` name) or the exception it raised; at the end every live tensor again
plus the gradients of the leaves and of tensors that retain their gradient.  ``compare``
returns the first difference between nbgrad's and torch's traces as a ``Mismatch``;
``check(prog)`` does both.  ``shrink(prog, mismatch)`` removes statements, cuts the graph
(replaces an intermediate by a leaf holding its value), simplifies values and shapes while
the same mismatch persists, and returns the smallest program found.

Values compare NaN-aware (NaN positions must agree, infinities exactly, the rest within a
dtype tolerance); strides compare on the dimensions of size > 1 of non-empty tensors (the
stride of a size-1 dimension is not observable through indexing); exception types compare by
the built-in base of torch's exception (``torch.OutOfMemoryError`` -> ``RuntimeError``) and an
exception from numpy/numba internals is always a mismatch.
"""

import math
import random
import time
import warnings

import numpy as np

FLOATS = ("float64", "float32")

# ------------------------------------------------------------------------------------ the IR


class Leaf:
    """A leaf tensor's definition: value (numpy), dtype name, requires_grad, memory layout
    ('c' contiguous, 't' transposed view of a contiguous tensor, 's' every other element of a
    wider tensor, 'e' expanded from size-1 dimensions)."""

    __slots__ = ("value", "dtype", "grad", "layout")

    def __init__(self, value, dtype, grad, layout="c"):
        self.value, self.dtype, self.grad, self.layout = value, dtype, grad, layout

    def copy(self, **kw):
        d = dict(value=self.value, dtype=self.dtype, grad=self.grad, layout=self.layout)
        d.update(kw)
        return Leaf(**d)

    def render(self, name):
        v, dt = self.value, "T.%s" % self.dtype
        rg = ", requires_grad=True" if self.grad else ""
        if v.size == 0:
            return "%s = T.zeros(%s, dtype=%s%s)" % (name, _shape_src(v.shape), dt, rg)
        lay = self.layout if v.ndim >= 1 else "c"
        if lay == "t" and v.ndim >= 2:
            src = "T.tensor(%s, dtype=%s).mT" % (_lit(np.swapaxes(v, -1, -2)), dt)
        elif lay == "s":
            wide = np.repeat(v, 2, axis=-1)
            src = "T.tensor(%s, dtype=%s)[..., ::2]" % (_lit(wide), dt)
        elif lay == "e" and any(s > 1 for s in v.shape):
            small = v[tuple(slice(0, 1) for _ in v.shape)]
            if np.array_equal(np.broadcast_to(small, v.shape), v, equal_nan=True):
                src = "T.tensor(%s, dtype=%s).expand(%s)" % (
                    _lit(small),
                    dt,
                    _shape_src(v.shape),
                )
            else:
                src = "T.tensor(%s, dtype=%s)" % (_lit(v), dt)
        else:
            return "%s = T.tensor(%s, dtype=%s%s)" % (name, _lit(v), dt, rg)
        return "%s = %s%s" % (name, src, ".requires_grad_()" if self.grad else "")


def _lit(a):
    if a.dtype == bool:
        return repr(a.tolist())
    if a.dtype.kind in "iu":
        return repr(a.tolist())
    return repr(a.astype(np.float64).tolist())


def _shape_src(shape):
    if len(shape) == 1:
        return "(%d,)" % shape[0]
    return "(%s)" % ", ".join(str(s) for s in shape)


class Stmt:
    """One statement.  ``src`` is its text (a leaf's is rendered from ``leaf``; a backward's
    from ``terms``); ``out``: names defined, ``uses``: names read, ``mut``: names written in
    place, ``key``: the op (signatures and ``--ops``), ``nograd``: runs under no_grad."""

    __slots__ = ("src", "out", "uses", "mut", "key", "nograd", "leaf", "terms", "bw")

    def __init__(self, src="", out=(), uses=(), mut=(), key="", nograd=False, leaf=None):
        self.src, self.out, self.uses, self.mut = src, tuple(out), tuple(uses), tuple(mut)
        self.key, self.nograd, self.leaf = key, nograd, leaf
        self.terms = None  # backward: [(var, cotangent var or None)]
        self.bw = None  # backward style: 'sum', 'gradient', 'grad', 'twice'

    def copy(self):
        s = Stmt(self.src, self.out, self.uses, self.mut, self.key, self.nograd, self.leaf)
        s.terms = list(self.terms) if self.terms is not None else None
        s.bw = self.bw
        return s

    def text(self):
        if self.leaf is not None:
            return self.leaf.render(self.out[0])
        if self.terms is not None:
            return _render_backward(self)
        return self.src

    def all_uses(self):
        if self.terms is not None:
            u = []
            for v, c in self.terms:
                u.append(v)
                if c:
                    u.append(c)
            return tuple(u) + self.uses
        return self.uses


def _render_backward(st):
    ts = st.terms
    if st.bw == "gradient" and len(ts) == 1 and ts[0][1]:
        return "%s.backward(%s)" % ts[0]
    loss = " + ".join("(%s * %s).sum()" % (v, c) if c else "%s.sum()" % v for v, c in ts) or "None"
    if st.bw == "grad":
        wrt = ", ".join(st.uses)
        return "grads = T.autograd.grad(%s, [%s], allow_unused=True)" % (loss, wrt)
    if st.bw == "twice":
        return "L = %s\nL.backward(retain_graph=True)\nL.backward()" % loss
    if st.bw == "inputs":
        return "(%s).backward(inputs=[%s])" % (loss, ", ".join(st.uses))
    if st.bw == "double":
        return (
            "grads = T.autograd.grad(%s, [%s], create_graph=True)\n"
            "sum((g * g).sum() for g in grads).backward()" % (loss, ", ".join(st.uses))
        )
    return "(%s).backward()" % loss


class Program:
    def __init__(self, stmts, seed=None):
        self.stmts = stmts
        self.seed = seed

    def copy(self):
        return Program([s.copy() for s in self.stmts], self.seed)

    def source(self, lib="torch", header=True):
        lines = []
        if header:
            lines += [
                "import %s as T" % lib,
                "F = T.nn.functional",
                'nan, inf = float("nan"), float("inf")',
            ]
        block = False
        for st in self.stmts:
            text = st.text()
            if st.nograd:
                if not block:
                    lines.append("with T.no_grad():")
                    block = True
                lines += ["    " + t for t in text.split("\n")]
            else:
                block = False
                lines += text.split("\n")
        return "\n".join(lines)

    def keys(self):
        return [s.key for s in self.stmts if s.leaf is None]

    def __len__(self):
        return len(self.stmts)


def parse(source):
    """A Program from its printed Python source (as ``Program.source`` writes it): one
    statement per top-level line, each inside ``with T.no_grad():`` marked ``nograd``."""
    import ast

    tree = ast.parse(source)
    lines = source.split("\n")
    stmts = []

    def seg(node):
        return "\n".join(
            ln[node.col_offset :] if i == node.lineno - 1 else ln
            for i, ln in enumerate(lines[node.lineno - 1 : node.end_lineno], node.lineno - 1)
        )

    def add(node, nograd):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        outs, muts = [], []
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    outs.append(t.id)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    muts.append(t.value.id)
                elif isinstance(t, ast.Tuple):
                    outs += [e.id for e in t.elts if isinstance(e, ast.Name)]
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            muts.append(node.target.id)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            while isinstance(f, ast.Attribute) and not isinstance(f.value, ast.Name):
                f = f.value
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if f.value.id not in ("T", "F"):
                    muts.append(f.value.id)
        if outs in (["F"], ["nan", "inf"]):
            return
        uses = sorted(
            {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            - {"T", "F", "nan", "inf", "float", "sum", "g"}
        )
        text = seg(node)
        key = "backward" if ("backward(" in text or "autograd.grad" in text) else "stmt"
        stmts.append(Stmt(text, outs, uses, muts, key=key, nograd=nograd))

    for node in tree.body:
        if isinstance(node, ast.With):
            for inner in node.body:
                add(inner, True)
        else:
            add(node, False)
    return Program(stmts)


# ----------------------------------------------------------------------------- the generator


# Ops whose result can cancel to (nearly) zero, where two correct implementations may return 0
# and 1e-17: their results (and anything computed from them) are ``cz``, and the functions that
# are singular at 0 (sqrt, log, 1/x, ...) do not take them unless they are exact.
CANCEL = set(
    "sum mean var std norm cumsum sum_multi sum_to_size matmul mm bmm dot mv einsum linear "
    "conv1d conv2d layer_norm batch_norm mse_loss l1_loss bce bce_logits cross_entropy nll_loss "
    "add add_alpha sub sub_alpha lerp lerp_t adds rsubs softmax log_softmax logsumexp "
    "avg_pool2d int_mean normalize add_ sub_ iadd".split()
)


class Var:
    __slots__ = ("name", "shape", "dtype", "grad", "leaf", "exact", "view", "overlap", "cz")

    def __init__(self, name, shape, dtype, grad, leaf, exact, view=False, overlap=False):
        self.name, self.shape, self.dtype, self.grad = name, tuple(shape), dtype, grad
        self.leaf, self.exact, self.view, self.overlap = leaf, exact, view, overlap
        self.cz = False  # may be a cancellation zero (see CANCEL)

    @property
    def nd(self):
        return len(self.shape)

    @property
    def numel(self):
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def isfloat(self):
        return self.dtype in FLOATS


def broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


class Builder:
    """Program under construction: the live variables and what the generator knows of them."""

    def __init__(self, seed, ops=None, max_ops=None):
        self.r = random.Random(seed)
        self.nr = np.random.default_rng(seed)
        self.stmts = []
        self.vars = []
        self.n = 0
        self.nograd = False
        self.ops = ops
        self.max_ops = max_ops

    # -- names and values
    def name(self, prefix="x"):
        self.n += 1
        return "%s%d" % (prefix, self.n - 1)

    def values(self, shape, kind=None):
        r, size = self.r, int(np.prod(shape)) if shape else 1
        kind = (
            kind or r.choices(("uniform", "ints", "const", "special", "pos"), (70, 10, 4, 8, 8))[0]
        )
        if kind == "ints":
            a = self.nr.integers(-2, 3, size).astype(np.float64)
        elif kind == "const":
            a = np.full(size, float(r.choice((0.0, 1.0, -0.5, 2.0))))
        elif kind == "pos":
            a = np.round(self.nr.uniform(0.1, 2.0, size), 2)
        else:
            a = np.round(self.nr.uniform(-2.0, 2.0, size), 2)
            if kind == "special" and size:
                sp = (math.nan, math.inf, -math.inf, 0.0, -0.0)
                for _ in range(r.randint(1, 2)):
                    a[r.randrange(size)] = r.choice(sp)
        return a.reshape(shape)

    def shape(self, nd=None, allow_empty=True):
        r = self.r
        if nd is None:
            nd = r.choices((0, 1, 2, 3, 4), (10, 30, 35, 20, 5))[0]
        sizes = []
        for _ in range(nd):
            s = r.choices((0, 1, 2, 3, 4), (3 if allow_empty else 0, 15, 30, 35, 17))[0]
            sizes.append(s)
        return tuple(sizes)

    # -- emitting
    def add(self, st):
        if self.nograd and st.leaf is None and st.terms is None:
            st.nograd = True
        self.stmts.append(st)
        return st

    def leaf(self, shape, dtype=None, grad=None, kind=None, layout=None, prefix="x"):
        r = self.r
        dtype = dtype or r.choices(FLOATS, (85, 15))[0]
        if dtype in ("int64", "bool"):
            grad = False
        elif grad is None:
            grad = r.random() < 0.8
        if dtype == "bool":
            value = self.nr.random(shape) < 0.5
        elif dtype == "int64":
            value = self.nr.integers(-3, 4, shape)
        else:
            value = self.values(shape, kind)
        if layout is None:
            layout = r.choices("ctse", (80, 8, 6, 6))[0]
        if layout == "e":
            value = np.broadcast_to(value[tuple(slice(0, 1) for _ in shape)], shape).copy()
        name = self.name(prefix)
        self.add(Stmt(out=(name,), key="leaf", leaf=Leaf(np.asarray(value), dtype, grad, layout)))
        exact = True
        v = Var(name, shape, dtype, grad, True, exact, overlap=layout == "e")
        self.vars.append(v)
        return v

    def index_leaf(self, values, prefix="i"):
        name = self.name(prefix)
        value = np.asarray(values, dtype=np.int64)
        self.add(Stmt(out=(name,), key="leaf", leaf=Leaf(value, "int64", False)))
        v = Var(name, value.shape, "int64", False, True, True)
        self.vars.append(v)
        return v

    def emit(
        self, expr, shape, dtype, key, inputs, diff=True, exact=False, view=False, overlap=False
    ):
        name = self.name()
        grad = diff and dtype in FLOATS and not self.nograd and any(v.grad for v in inputs)
        ex = exact and all(v.exact for v in inputs)
        uses = tuple(dict.fromkeys(v.name for v in inputs))
        self.add(Stmt("%s = %s" % (name, expr), (name,), uses, key=key))
        v = Var(name, shape, dtype, grad, not grad, ex, view, overlap)
        v.cz = not ex and (key in CANCEL or any(i.cz for i in inputs))
        self.vars.append(v)
        return v

    def mutate(self, src, var, key, inputs=()):
        uses = tuple(dict.fromkeys([var.name] + [v.name for v in inputs]))
        self.add(Stmt(src, (), uses, (var.name,), key=key))
        if any(v.grad for v in inputs) and not self.nograd and var.isfloat:
            var.grad, var.leaf = True, False
        var.exact = var.exact and all(v.exact for v in inputs)
        var.cz = not var.exact and (var.cz or key in CANCEL or any(v.cz for v in inputs))

    # -- picking inputs
    def pick(self, pred=lambda v: True, fresh=0.15, shape=None, dtype=None, exact=False):
        """A live variable satisfying ``pred`` (recent ones preferred), or a fresh leaf."""
        cands = [v for v in self.vars if pred(v) and (v.exact or not exact)]
        if cands and self.r.random() > fresh:
            w = [1.0 + i for i in range(len(cands))]
            return self.r.choices(cands, w)[0]
        if shape is None:
            return None
        return self.leaf(shape, dtype)

    def fpick(self, exact=False, nd=None, min_nd=0, nonempty=False, fresh=0.15, nocz=False):
        def ok(v):
            return (
                v.isfloat
                and (nd is None or v.nd == nd)
                and v.nd >= min_nd
                and (not nonempty or v.numel > 0)
                and not (nocz and v.cz)
            )

        shp = self.shape(nd if nd is not None else None, allow_empty=not nonempty)
        while len(shp) < min_nd:
            shp = shp + (self.r.randint(1, 4),)
        return self.pick(ok, fresh, shape=shp, exact=exact)

    def partner(self, x, exact=False, nocz=False):
        """A float operand broadcastable with ``x``."""
        r = self.r
        cands = [
            v
            for v in self.vars
            if v.isfloat
            and v is not x
            and broadcast(v.shape, x.shape) is not None
            and (v.exact or not exact)
            and not (nocz and v.cz)
        ]
        if cands and r.random() < 0.5:
            return r.choice(cands)
        s = list(x.shape)
        mode = r.random()
        if mode < 0.4:
            pass
        elif mode < 0.6 and s:
            s = s[r.randint(1, len(s)) :]
        elif mode < 0.8:
            s = [1 if r.random() < 0.4 else d for d in s]
        elif mode < 0.9:
            s = []
        else:
            s = [r.randint(1, 3)] + [1 if r.random() < 0.3 else d for d in s]
        return self.leaf(tuple(s), dtype=r.choices(FLOATS, (85, 15))[0])

    def dim(self, nd):
        if nd == 0:
            return self.r.choice((0, -1))
        d = self.r.randrange(nd)
        return d - nd if self.r.random() < 0.3 else d

    def scalar(self):
        return self.r.choice((2, 0.5, -1.5, 3.0, 0.0, 1, -2))


def norm_dim(d, nd):
    return d % nd if nd else 0


# ------------------------------------------------------------------------------- op generators
# Each ``g_<key>(P)`` emits one statement (plus any fresh leaves it needs) and returns True, or
# returns False when it does not apply.  ``EXACT`` ops produce exactly the same bits in any
# correct implementation; ops with a kink or a jump (``KINKED``) only take exact inputs, so a
# last-bit difference upstream never flips a branch.

UNARY = (
    "neg exp exp2 log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid reciprocal erf square"
).split()
KINKED_UNARY = "abs relu sign floor ceil round trunc".split()
SINGULAR = set("sqrt rsqrt log log2 log1p reciprocal".split())
NN_UNARY = (
    "gelu",
    "gelu_tanh",
    "silu",
    "softplus",
    "leaky_relu",
    "nn_relu",
    "nn_sigmoid",
    "nn_tanh",
)


def g_unary(P):
    r = P.r
    kinked = r.random() < 0.35
    op = r.choice(KINKED_UNARY if kinked else UNARY)
    x = P.fpick(exact=kinked, nocz=op in SINGULAR)
    style = r.random()
    expr = "T.%s(%s)" % (op, x.name) if style < 0.5 else "%s.%s()" % (x.name, op)
    P.emit(expr, x.shape, x.dtype, op, [x], diff=True, exact=op in ("neg", "abs", "relu") or kinked)
    return True


def g_nn_unary(P):
    r = P.r
    op = r.choice(NN_UNARY)
    kinked = op in ("leaky_relu", "nn_relu")
    x = P.fpick(exact=kinked)
    expr = {
        "gelu": "F.gelu(%s)",
        "gelu_tanh": 'F.gelu(%s, approximate="tanh")',
        "silu": "F.silu(%s)",
        "softplus": "F.softplus(%s)",
        "leaky_relu": "F.leaky_relu(%s, 0.1)",
        "nn_relu": "F.relu(%s)",
        "nn_sigmoid": "F.sigmoid(%s)",
        "nn_tanh": "F.tanh(%s)",
    }[op] % x.name
    P.emit(expr, x.shape, x.dtype, op, [x], exact=kinked)
    return True


def g_scalar_op(P):
    r = P.r
    op = r.choice(
        (
            "pow",
            "powop",
            "rpow",
            "muls",
            "rmuls",
            "adds",
            "rsubs",
            "divs",
            "rdivs",
            "rem",
            "clamp",
            "clamp_min",
            "clamp_max",
            "clamp_kw",
        )
    )
    kinked = op in ("rem", "clamp", "clamp_min", "clamp_max", "clamp_kw")
    p = r.choice((2, 3, 0.5, -1, 2.5, 0, 1))
    singular = op == "rdivs" or (op in ("pow", "powop") and p in (0.5, -1, 2.5))
    x = P.fpick(exact=kinked, nocz=singular)
    n, s = x.name, P.scalar()
    lo, hi = r.choice(((-0.5, 0.7), (0.0, 1.0), (1.0, -1.0), (None, 0.5), (-1.0, None)))
    expr = {
        "pow": "T.pow(%s, %r)" % (n, p),
        "powop": "%s ** %r" % (n, p),
        "rpow": "2.0 ** %s" % n,
        "muls": "%s * %r" % (n, s),
        "rmuls": "%r * %s" % (s, n),
        "adds": "%s + %r" % (n, s),
        "rsubs": "%r - %s" % (s, n),
        "divs": "%s / %r" % (n, s),
        "rdivs": "%r / %s" % (s, n),
        "rem": "%s %% %r" % (n, r.choice((1.5, -1.5, 1))),
        "clamp": "T.clamp(%s, %r, %r)" % (n, lo, hi),
        "clamp_min": "T.clamp_min(%s, %r)" % (n, r.choice((0.1, -1.0))),
        "clamp_max": "%s.clamp_max(%r)" % (n, r.choice((0.3, -1.0))),
        "clamp_kw": "%s.clamp(min=%r, max=%r)" % (n, lo, hi),
    }[op]
    if op in ("clamp", "clamp_kw") and lo is None and hi is None:
        return False
    exact = op in ("clamp", "clamp_min", "clamp_max", "clamp_kw", "muls", "rmuls") and (
        op[0] == "c" or s in (2, 0.5, -1, -2, 0.0, 1)
    )
    P.emit(expr, x.shape, x.dtype, op, [x], exact=exact)
    return True


def _ptype(a, b, op=""):
    ds = (a.dtype, b.dtype)
    if "float64" in ds:
        return "float64"
    if "float32" in ds:
        return "float32"
    return "float32" if op == "div" else "int64"


def g_binary(P):
    r = P.r
    op = r.choice(
        (
            "add",
            "add_alpha",
            "sub",
            "sub_alpha",
            "mul",
            "div",
            "pow_t",
            "maximum",
            "minimum",
            "rem_t",
            "lerp",
            "lerp_t",
            "floor_divide",
        )
    )
    kinked = op in ("maximum", "minimum", "rem_t", "floor_divide")
    singular = op in ("div", "pow_t")
    x = P.fpick(exact=kinked, nocz=singular)
    ints = [v for v in P.vars if v.dtype == "int64" and broadcast(v.shape, x.shape)]
    if ints and op in ("add", "sub", "mul", "div", "maximum", "floor_divide") and r.random() < 0.2:
        y = r.choice(ints)  # integer operand: type promotion
    else:
        y = P.partner(x, exact=kinked, nocz=singular)
    if r.random() < 0.5:
        x, y = y, x
    shape = broadcast(x.shape, y.shape)
    a, b = x.name, y.name
    ins = [x, y]
    if op == "lerp_t":
        w = P.partner(x)
        shape2 = broadcast(shape, w.shape)
        if shape2 is None:
            return False
        shape, ins = shape2, [x, y, w]
    expr = {
        "add": "%s + %s" % (a, b),
        "add_alpha": "T.add(%s, %s, alpha=2)" % (a, b),
        "sub": "%s - %s" % (a, b),
        "sub_alpha": "T.sub(%s, %s, alpha=0.5)" % (a, b),
        "mul": "%s * %s" % (a, b),
        "div": "%s / %s" % (a, b),
        "pow_t": "%s ** %s" % (a, b),
        "maximum": "T.maximum(%s, %s)" % (a, b),
        "minimum": "T.minimum(%s, %s)" % (a, b),
        "rem_t": "T.remainder(%s, %s)" % (a, b),
        "lerp": "T.lerp(%s, %s, 0.3)" % (a, b),
        "lerp_t": "T.lerp(%s, %s, %s)" % (a, b, ins[-1].name),
        "floor_divide": "%s // %s" % (a, b),
    }[op]
    if op == "lerp_t" and len({v.dtype for v in ins}) > 1:
        return False  # lerp needs one dtype (an error the generator does not aim for here)
    if op == "lerp" and x.dtype != y.dtype:
        return False
    P.emit(
        expr,
        shape,
        _ptype(x, y, op),
        op,
        ins,
        diff=op != "floor_divide",
        exact=op in ("maximum", "minimum"),
    )
    return True


def g_compare(P):
    r = P.r
    op = r.choice(("eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite"))
    x = P.fpick(exact=True)
    if op.startswith("is"):
        P.emit("T.%s(%s)" % (op, x.name), x.shape, "bool", op, [x], diff=False, exact=True)
        return True
    y = P.partner(x, exact=True)
    shape = broadcast(x.shape, y.shape)
    style = r.random()
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    expr = (
        "%s %s %s" % (x.name, sym, y.name) if style < 0.5 else "T.%s(%s, %s)" % (op, x.name, y.name)
    )
    P.emit(expr, shape, "bool", op, [x, y], diff=False, exact=True)
    return True


def _mask_for(P, shape):
    """A bool tensor broadcastable to ``shape`` (an existing one or a fresh leaf)."""
    cands = [v for v in P.vars if v.dtype == "bool" and broadcast(v.shape, shape) == shape]
    if cands and P.r.random() < 0.6:
        return P.r.choice(cands)
    s = tuple(1 if P.r.random() < 0.3 else d for d in shape)
    if s and P.r.random() < 0.3:
        s = s[1:]
    return P.leaf(s, "bool")


def g_logical(P):
    r = P.r
    bools = [v for v in P.vars if v.dtype == "bool"]
    if not bools:
        return False
    x = r.choice(bools)
    op = r.choice(("logical_and", "logical_or", "logical_xor", "logical_not", "and_op", "inv"))
    if op == "logical_not":
        P.emit("T.logical_not(%s)" % x.name, x.shape, "bool", op, [x], diff=False, exact=True)
    elif op == "inv":
        P.emit("~%s" % x.name, x.shape, "bool", op, [x], diff=False, exact=True)
    else:
        y = _mask_for(P, x.shape)
        expr = (
            "%s & %s" % (x.name, y.name)
            if op == "and_op"
            else "T.%s(%s, %s)" % (op, x.name, y.name)
        )
        P.emit(expr, broadcast(x.shape, y.shape), "bool", op, [x, y], diff=False, exact=True)
    return True


def g_where(P):
    r = P.r
    x = P.fpick()
    if r.random() < 0.5:
        m = _mask_for(P, x.shape)
        v = r.choice((-1.5, 0.0, "nan", "inf"))
        v = {"nan": 'float("nan")', "inf": 'float("inf")'}.get(v, repr(v))
        P.emit(
            "%s.masked_fill(%s, %s)" % (x.name, m.name, v),
            x.shape,
            x.dtype,
            "masked_fill",
            [x, m],
            exact=True,
        )
        return True
    y = P.partner(x)
    shape = broadcast(x.shape, y.shape)
    m = _mask_for(P, shape)
    shape = broadcast(shape, m.shape)
    if shape is None:
        return False
    P.emit(
        "T.where(%s, %s, %s)" % (m.name, x.name, y.name),
        shape,
        _ptype(x, y),
        "where",
        [m, x, y],
        exact=True,
    )
    return True


# -- reductions


def _red_shape(shape, dims, keepdim):
    nd = len(shape)
    ds = {norm_dim(d, nd) for d in dims}
    if nd == 0:
        return ()
    return tuple(
        (1 if keepdim else None) if i in ds else s
        for i, s in enumerate(shape)
        if keepdim or i not in ds
    )


def g_reduce(P):
    r = P.r
    op = r.choice(
        (
            "sum",
            "mean",
            "prod",
            "amax",
            "amin",
            "max",
            "min",
            "max_dim",
            "min_dim",
            "max_idx",
            "argmax",
            "argmin",
            "var",
            "std",
            "norm",
            "logsumexp",
            "cumsum",
            "sum_multi",
            "softmax",
            "log_softmax",
            "all",
            "any",
        )
    )
    kinked = op in (
        "amax",
        "amin",
        "max",
        "min",
        "max_dim",
        "min_dim",
        "max_idx",
        "argmax",
        "argmin",
        "norm",
    )
    if op in ("all", "any"):
        bools = [v for v in P.vars if v.dtype == "bool"]
        x = r.choice(bools) if bools else None
        if x is None:
            return False
    else:
        x = P.fpick(exact=kinked)
    n, nd = x.name, x.nd
    full = r.random() < 0.3
    d = P.dim(nd)
    kd = r.random() < 0.3
    kds = ", keepdim=True" if kd else ""
    dt, out_diff = x.dtype, True
    if op in ("sum", "mean", "prod", "logsumexp") or op in ("var", "std"):
        if op == "logsumexp":
            full = False
        if full:
            c = ""
            if op in ("var", "std"):
                c = r.choice(("", "correction=0", "unbiased=False"))
            expr, shape = "%s.%s(%s)" % (n, op, c), ()
        else:
            extra = ""
            if op in ("var", "std"):
                extra = r.choice(("", ", correction=0", ", correction=2"))
            expr = "T.%s(%s, %d%s%s)" % (op, n, d, extra, kds)
            shape = _red_shape(x.shape, [d], kd)
    elif op == "sum_multi":
        if nd < 2:
            return False
        ds = r.sample(range(nd), 2)
        expr = "%s.sum((%d, %d)%s)" % (n, ds[0], ds[1], kds)
        shape = _red_shape(x.shape, ds, kd)
    elif op in ("amax", "amin"):
        expr, shape = "%s.%s(%d%s)" % (n, op, d, kds), _red_shape(x.shape, [d], kd)
    elif op in ("max", "min"):
        expr, shape = "%s.%s()" % (n, op), ()
    elif op in ("max_dim", "min_dim"):
        expr = "%s.%s(%d%s)%s" % (n, op[:3], d, kds, r.choice(("[0]", ".values")))
        shape = _red_shape(x.shape, [d], kd)
    elif op == "max_idx":
        expr = "%s.%s(%d%s).indices" % (n, r.choice(("max", "min")), d, kds)
        shape, dt, out_diff = _red_shape(x.shape, [d], kd), "int64", False
    elif op in ("argmax", "argmin"):
        if full:
            expr, shape = "T.%s(%s)" % (op, n), ()
        else:
            expr, shape = "%s.%s(%d%s)" % (n, op, d, kds), _red_shape(x.shape, [d], kd)
        dt, out_diff = "int64", False
    elif op == "norm":
        p = r.choice((2, 1, 3, "inf"))
        ps = 'float("inf")' if p == "inf" else repr(p)
        if full:
            expr, shape = "%s.norm(%s)" % (n, ps), ()
        else:
            expr, shape = "%s.norm(%s, dim=%d%s)" % (n, ps, d, kds), _red_shape(x.shape, [d], kd)
    elif op == "cumsum":
        expr, shape = "%s.cumsum(%d)" % (n, d), x.shape
    elif op in ("softmax", "log_softmax"):
        expr = ("T.%s(%s, %d)" if r.random() < 0.5 else "F.%s(%s, dim=%d)") % (op, n, d)
        shape = x.shape
    else:  # all / any
        if full:
            expr, shape = "%s.%s()" % (n, op), ()
        else:
            expr, shape = "%s.%s(%d%s)" % (n, op, d, kds), _red_shape(x.shape, [d], kd)
        dt, out_diff = "bool", False
    P.emit(
        expr,
        shape,
        dt,
        op,
        [x],
        diff=out_diff,
        exact=op
        in (
            "amax",
            "amin",
            "max",
            "min",
            "max_dim",
            "min_dim",
            "max_idx",
            "argmax",
            "argmin",
            "all",
            "any",
        ),
    )
    return True


# -- shape and view ops


def _factor(n):
    fs = [f for f in range(2, n) if n % f == 0]
    return fs


def g_view(P):
    r = P.r
    op = r.choice(
        (
            "view",
            "reshape",
            "flatten",
            "flatten_range",
            "unflatten",
            "squeeze",
            "squeeze_all",
            "unsqueeze",
            "transpose",
            "t",
            "mT",
            "permute",
            "movedim",
            "expand",
            "expand_as",
            "broadcast_to",
            "getitem_int",
            "getitem_slice",
            "getitem_none",
            "narrow",
            "detach",
            "unbind",
            "split",
            "chunk",
            "diag_view",
        )
    )
    x = P.pick(lambda v: True, fresh=0.1, shape=P.shape())
    n, nd, s = x.name, x.nd, x.shape
    is_view, overlap = True, x.overlap
    if op in ("view", "reshape"):
        shape = list(s)
        m = r.random()
        if m < 0.3 or nd == 0:
            shape = [x.numel]
        elif m < 0.5 and nd >= 2:
            i = r.randrange(nd - 1)
            shape[i : i + 2] = [shape[i] * shape[i + 1]]
        elif m < 0.7:
            i = r.randrange(nd)
            fs = _factor(shape[i])
            if fs:
                f = r.choice(fs)
                shape[i : i + 1] = [f, shape[i] // f]
            else:
                shape.insert(i, 1)
        else:
            shape.insert(r.randint(0, nd), 1)
        shape = tuple(shape)
        args = list(shape)
        if args and r.random() < 0.3 and x.numel > 0:
            args[r.randrange(len(args))] = -1
        expr = "%s.%s(%s)" % (
            n,
            op,
            ", ".join(map(str, args)) if len(args) != 1 or r.random() < 0.5 else "(%d,)" % args[0],
        )
        is_view = op == "view"
        key = op
    elif op == "flatten":
        expr, shape, key = "%s.flatten()" % n, (x.numel,), op
        is_view = nd == 1
    elif op == "flatten_range":
        if nd < 2:
            return False
        a = r.randrange(nd - 1)
        b = r.randrange(a + 1, nd)
        shape = s[:a] + (int(np.prod(s[a : b + 1])),) + s[b + 1 :]
        expr, key, is_view = "T.flatten(%s, %d, %d)" % (n, a, b), "flatten", False
    elif op == "unflatten":
        if nd == 0:
            return False
        d = r.randrange(nd)
        fs = _factor(s[d])
        if not fs:
            return False
        f = r.choice(fs)
        expr = "%s.unflatten(%d, (%d, %d))" % (n, d, f, s[d] // f)
        shape, key = s[:d] + (f, s[d] // f) + s[d + 1 :], op
    elif op == "squeeze":
        d = P.dim(nd)
        dd = norm_dim(d, nd)
        shape = tuple(v for i, v in enumerate(s) if not (i == dd and v == 1)) if nd else ()
        expr, key = "%s.squeeze(%d)" % (n, d), op
    elif op == "squeeze_all":
        expr, shape, key = "T.squeeze(%s)" % n, tuple(v for v in s if v != 1), "squeeze"
    elif op == "unsqueeze":
        d = r.randint(-nd - 1, nd)
        dd = d % (nd + 1)
        shape = s[:dd] + (1,) + s[dd:]
        expr, key = "%s.unsqueeze(%d)" % (n, d), op
    elif op == "transpose":
        a, b = P.dim(nd), P.dim(nd)
        shape = list(s)
        if nd:
            shape[norm_dim(a, nd)], shape[norm_dim(b, nd)] = s[norm_dim(b, nd)], s[norm_dim(a, nd)]
        expr, shape, key = "%s.transpose(%d, %d)" % (n, a, b), tuple(shape), op
    elif op == "t":
        if nd > 2:
            return False
        expr, shape, key = "%s.t()" % n, s[::-1], op
    elif op == "mT":
        if nd < 2:
            return False
        expr, shape, key = "%s.mT" % n, s[:-2] + (s[-1], s[-2]), op
    elif op == "permute":
        perm = list(range(nd))
        r.shuffle(perm)
        expr = "%s.permute(%s)" % (n, ", ".join(map(str, perm)) if nd != 1 else "0")
        if nd == 0:
            expr = "%s.permute(())" % n
        shape, key = tuple(s[p] for p in perm), op
    elif op == "movedim":
        if nd == 0:
            return False
        a, b = r.randrange(nd), r.randrange(nd)
        perm = [i for i in range(nd) if i != a]
        perm.insert(b, a)
        expr, shape, key = "T.movedim(%s, %d, %d)" % (n, a, b), tuple(s[p] for p in perm), op
    elif op in ("expand", "expand_as", "broadcast_to"):
        shape = tuple(r.randint(2, 3) if v == 1 and r.random() < 0.6 else v for v in s)
        if r.random() < 0.4:
            shape = (r.randint(1, 3),) + shape
        args = [
            (-1 if r.random() < 0.3 and i >= len(shape) - nd else v) for i, v in enumerate(shape)
        ]
        if op == "expand":
            expr = "%s.expand(%s)" % (n, ", ".join(map(str, args)) if args else "()")
        elif op == "broadcast_to":
            expr = "T.broadcast_to(%s, %s)" % (n, _shape_src(shape))
        else:
            y = P.leaf(shape, x.dtype if x.isfloat else "float64", grad=False)
            expr = "%s.expand_as(%s)" % (n, y.name)
        key, overlap = op, overlap or shape != s
    elif op == "getitem_int":
        if nd == 0 or s[0] == 0:
            return False
        i = r.randrange(s[0])
        i = i - s[0] if r.random() < 0.3 else i
        if nd >= 2 and s[1] > 0 and r.random() < 0.4:
            j = r.randrange(s[1])
            expr, shape = "%s[:, %d]" % (n, j), (s[0],) + s[2:]
        else:
            expr, shape = "%s[%d]" % (n, i), s[1:]
        key = "getitem"
    elif op == "getitem_slice":
        if nd == 0:
            return False
        d = r.randrange(nd)
        a = r.randint(0, max(s[d], 0))
        b = r.randint(a, s[d]) if r.random() < 0.7 else s[d] + 2
        st = r.choice((1, 1, 2, 3))
        ln = len(range(a, min(b, s[d]), st))
        sl = "%d:%d:%d" % (a, b, st)
        expr = "%s[%s%s]" % (n, ":, " * d, sl)
        shape, key = s[:d] + (ln,) + s[d + 1 :], "getitem"
    elif op == "getitem_none":
        expr, shape, key = "%s[None, ...]" % n, (1,) + s, "getitem"
        if nd and r.random() < 0.5:
            expr, shape = "%s[..., None]" % n, s + (1,)
    elif op == "narrow":
        if nd == 0:
            return False
        d = r.randrange(nd)
        a = r.randint(0, s[d])
        ln = r.randint(0, s[d] - a)
        expr, shape, key = (
            "T.narrow(%s, %d, %d, %d)" % (n, d, a, ln),
            s[:d] + (ln,) + s[d + 1 :],
            op,
        )
    elif op == "detach":
        expr, shape, key = "%s.detach()" % n, s, op
        v = P.emit(
            expr, shape, x.dtype, key, [x], diff=False, exact=True, view=True, overlap=overlap
        )
        v.grad, v.leaf = False, True
        return True
    elif op in ("unbind", "split", "chunk"):
        if nd == 0:
            return False
        d = r.randrange(nd)
        if op == "unbind":
            if s[d] == 0:
                return False
            k = r.randrange(s[d])
            expr, shape = "%s.unbind(%d)[%d]" % (n, d, k), s[:d] + s[d + 1 :]
        elif op == "split":
            sz = r.randint(1, max(1, s[d]))
            parts = [len(range(i, min(i + sz, s[d]))) for i in range(0, s[d], sz)] or [0]
            k = r.randrange(len(parts))
            expr, shape = (
                "T.split(%s, %d, %d)[%d]" % (n, sz, d, k),
                s[:d] + (parts[k],) + s[d + 1 :],
            )
        else:
            c = r.randint(1, 3)
            sz = -(-s[d] // c) if s[d] else 0
            parts = [len(range(i, min(i + sz, s[d]))) for i in range(0, s[d], sz)] if sz else [0]
            k = r.randrange(len(parts))
            expr, shape = "%s.chunk(%d, %d)[%d]" % (n, c, d, k), s[:d] + (parts[k],) + s[d + 1 :]
        key = op
    else:  # diag_view: x[..., idx, idx] style basic indexing with a step
        if nd < 1 or s[-1] < 2:
            return False
        expr, shape, key = "%s[..., 1:]" % n, s[:-1] + (s[-1] - 1,), "getitem"
    dt = x.dtype
    P.emit(expr, shape, dt, key, [x], diff=x.isfloat, exact=True, view=is_view, overlap=overlap)
    return True


def g_copyshape(P):
    """Shape ops that copy: cat, stack, flip, roll, tril/triu, repeat, clone, contiguous,
    dtype conversion, sum_to_size, broadcast_tensors."""
    r = P.r
    op = r.choice(
        (
            "cat",
            "stack",
            "flip",
            "roll",
            "tril",
            "triu",
            "repeat",
            "clone",
            "contiguous",
            "to",
            "sum_to_size",
            "broadcast_tensors",
            "flip_args",
        )
    )
    x = P.fpick()
    n, nd, s = x.name, x.nd, x.shape
    ins, dt, exact = [x], x.dtype, True
    if op in ("cat", "stack"):
        k = r.randint(1, 3)
        if op == "cat":
            if nd == 0:
                return False
            d = P.dim(nd)
            dd = norm_dim(d, nd)
            parts, total = [x], s[dd]
            for _ in range(k - 1):
                sh = list(s)
                sh[dd] = r.randint(0, 3)
                parts.append(P.leaf(tuple(sh), x.dtype))
                total += sh[dd]
            shape = s[:dd] + (total,) + s[dd + 1 :]
        else:
            d = r.randint(-nd - 1, nd)
            dd = d % (nd + 1)
            parts = [x] + [P.leaf(s, x.dtype) for _ in range(k - 1)]
            shape = s[:dd] + (k,) + s[dd:]
        r.shuffle(parts)
        fn = r.choice(("cat", "concat")) if op == "cat" else "stack"
        expr = "T.%s([%s], %d)" % (fn, ", ".join(v.name for v in parts), d)
        ins = parts
    elif op in ("flip", "flip_args"):
        if nd == 0:
            expr = "%s.flip(%s)" % (n, r.choice(("0", "(0,)", "()")))
        else:
            ds = r.sample(range(nd), r.randint(1, nd))
            if op == "flip_args":
                expr = "%s.flip(%s)" % (n, ", ".join(map(str, ds)))
            else:
                expr = "T.flip(%s, %s)" % (n, _shape_src(tuple(ds)))
        shape, op = s, "flip"
    elif op == "roll":
        sh = r.randint(-3, 3)
        if r.random() < 0.3 or nd == 0:
            expr = "T.roll(%s, %d)" % (n, sh)
        else:
            expr = "T.roll(%s, %d, %d)" % (n, sh, P.dim(nd))
        shape = s
    elif op in ("tril", "triu"):
        if nd < 2:
            return False
        expr, shape = "T.%s(%s, %d)" % (op, n, r.randint(-2, 2)), s
    elif op == "repeat":
        reps = [r.randint(1, 3) for _ in range(nd + r.randint(0, 1))] or [2]
        if len(reps) < nd:
            return False
        expr = "%s.repeat(%s)" % (n, ", ".join(map(str, reps)))
        ss = (1,) * (len(reps) - nd) + s
        shape = tuple(a * b for a, b in zip(ss, reps))
    elif op == "clone":
        expr, shape = "%s.clone()" % n, s
    elif op == "contiguous":
        expr, shape = "%s.contiguous()" % n, s
    elif op == "to":
        other = "float32" if x.dtype == "float64" else "float64"
        expr = r.choice(
            (
                "%s.to(T.%s)" % (n, other),
                "%s.%s()" % (n, "float" if other == "float32" else "double"),
            )
        )
        shape, dt, exact = s, other, other == "float64"
    elif op == "sum_to_size":
        shape = tuple(1 if r.random() < 0.5 else v for v in s)
        while shape and r.random() < 0.3 and shape[0] == 1:
            shape = shape[1:]
        expr = "%s.sum_to_size(%s)" % (n, ", ".join(map(str, shape)) if shape else "()")
        exact = False
    else:  # broadcast_tensors
        y = P.partner(x)
        shape = broadcast(x.shape, y.shape)
        k = r.randrange(2)
        expr = "T.broadcast_tensors(%s, %s)[%d]" % (n, y.name, k)
        ins = [x, y]
        dt = (x, y)[k].dtype
        ins = [(x, y)[k]] + [v for v in (x, y) if v is not (x, y)[k]]
        P.emit(expr, shape, dt, op, ins, exact=True, view=True, overlap=True)
        return True
    if op in ("cat", "stack"):
        dt = "float64" if any(v.dtype == "float64" for v in ins) else x.dtype
    P.emit(expr, shape, dt, op, ins, exact=exact)
    return True


# -- indexing


def g_index(P):
    r = P.r
    op = r.choice(
        (
            "adv_int",
            "adv_bool",
            "adv_pair",
            "adv_mixed",
            "gather",
            "scatter",
            "scatter_add",
            "index_select",
            "masked_select",
            "nonzero",
            "take_neg",
        )
    )
    x = P.fpick(min_nd=1, exact=False)
    n, nd, s = x.name, x.nd, x.shape
    if op == "adv_int":
        k = r.randint(0, 4)
        idx = [r.randrange(-s[0], s[0]) for _ in range(k)] if s[0] else []
        i = P.index_leaf(idx)
        expr, shape, ins = "%s[%s]" % (n, i.name), (k,) + s[1:], [x, i]
        key = "getitem_adv"
    elif op == "take_neg":
        if s[0] == 0:
            return False
        idx = [r.randrange(s[0]) for _ in range(r.randint(1, 3))]
        expr = "%s[%r]" % (n, idx)
        shape, ins, key = (len(idx),) + s[1:], [x], "getitem_list"
    elif op == "adv_bool":
        m = P.leaf(s[:1] if r.random() < 0.5 else s, "bool")
        # the number of True values fixes the shape
        leafv = P.stmts[-1].leaf.value
        cnt = int(np.count_nonzero(leafv))
        expr = "%s[%s]" % (n, m.name)
        shape, ins, key = (cnt,) + s[m.nd :], [x, m], "getitem_bool"
    elif op == "adv_pair":
        if nd < 2 or s[0] == 0 or s[1] == 0:
            return False
        k = r.randint(1, 3)
        a = [r.randrange(s[0]) for _ in range(k)]
        b = [r.randrange(s[1]) for _ in range(k)]
        expr, shape, ins, key = "%s[%r, %r]" % (n, a, b), (k,) + s[2:], [x], "getitem_pair"
    elif op == "adv_mixed":  # integers, slices and index lists (PyTorch: integers select first)
        if nd < 2 or 0 in s:
            return False
        comps, lists = [], 0
        for d in range(r.randint(2, nd)):
            c = r.choice(("int", "slice", "list"))
            if c == "int":
                comps.append(r.randrange(-s[d], s[d]))
            elif c == "list":
                comps.append([r.randrange(s[d]) for _ in range(r.randint(1, 2))])
                lists += 1
            else:
                comps.append(slice(None))
        if not lists:
            return False
        a = np.empty(s)[tuple(c if isinstance(c, int) else slice(None) for c in comps)]
        shape = a[tuple(c for c in comps if not isinstance(c, int))].shape
        txt = ", ".join(":" if isinstance(c, slice) else repr(c) for c in comps)
        expr, ins, key = "%s[%s]" % (n, txt), [x], "getitem_mixed"
    elif op in ("gather", "scatter", "scatter_add"):
        d = r.randrange(nd)
        ish = tuple(r.randint(0, v) if i != d else r.randint(0, 3) for i, v in enumerate(s))
        if op != "gather":
            ish = tuple(min(a, b) for a, b in zip(ish, s))
        if s[d] == 0 and int(np.prod(ish)) > 0:
            return False
        vals = P.nr.integers(0, max(s[d], 1), ish)
        i = P.index_leaf(vals)
        if op == "gather":
            expr = (
                "T.gather(%s, %d, %s)" % (n, d, i.name)
                if r.random() < 0.5
                else "%s.gather(%d, %s)" % (n, d, i.name)
            )
            shape, ins = ish, [x, i]
        else:
            src = P.leaf(ish, x.dtype)
            expr = "T.%s(%s, %d, %s, %s)" % (op, n, d, i.name, src.name)
            shape, ins = s, [x, i, src]
        key = op
    elif op == "index_select":
        d = r.randrange(nd)
        k = r.randint(0, 4)
        idx = [r.randrange(s[d]) for _ in range(k)] if s[d] else []
        i = P.index_leaf(idx)
        expr = "T.index_select(%s, %d, %s)" % (n, d, i.name)
        shape, ins, key = s[:d] + (k,) + s[d + 1 :], [x, i], op
    elif op == "masked_select":
        m = P.leaf(s[-1:] if r.random() < 0.5 else s, "bool")
        mv = np.broadcast_to(P.stmts[-1].leaf.value, s)
        expr = "T.masked_select(%s, %s)" % (n, m.name)
        shape, ins, key = (int(np.count_nonzero(mv)),), [x, m], op
    else:  # nonzero of a comparison: shape is data dependent, so ask only for a sum of it
        m = P.leaf(s, "bool")
        cnt = int(np.count_nonzero(P.stmts[-1].leaf.value))
        P.emit("T.nonzero(%s)" % m.name, (cnt, nd), "int64", "nonzero", [m], diff=False, exact=True)
        return True
    P.emit(expr, shape, x.dtype, key, ins, exact=True)
    return True


# -- linear algebra


def g_linalg(P):
    r = P.r
    op = r.choice(("matmul", "mm", "bmm", "dot", "mv", "outer", "einsum", "linear"))
    dims = [r.randint(0, 4) if r.random() < 0.1 else r.randint(1, 4) for _ in range(4)]
    a, b, c, bb = dims
    dt = r.choices(FLOATS, (85, 15))[0]

    def mat(shape):
        cands = [v for v in P.vars if v.isfloat and v.shape == shape and v.dtype == dt]
        if cands and r.random() < 0.6:
            return r.choice(cands)
        return P.leaf(shape, dt)

    if op == "matmul":
        kind = r.choice(("2x2", "1x2", "2x1", "1x1", "3x2", "3x3", "2x3"))
        sa = {"2": (a, b), "1": (b,), "3": (bb, a, b)}[kind[0]]
        sb = {"2": (b, c), "1": (b,), "3": (bb, b, c)}[kind[2]]
        x, y = mat(sa), mat(sb)
        out = np.matmul(np.empty(sa), np.empty(sb)).shape
        P.emit(
            "%s @ %s" % (x.name, y.name)
            if r.random() < 0.5
            else "T.matmul(%s, %s)" % (x.name, y.name),
            out,
            dt,
            op,
            [x, y],
        )
    elif op == "mm":
        x, y = mat((a, b)), mat((b, c))
        P.emit("T.mm(%s, %s)" % (x.name, y.name), (a, c), dt, op, [x, y])
    elif op == "bmm":
        x, y = mat((bb, a, b)), mat((bb, b, c))
        P.emit("T.bmm(%s, %s)" % (x.name, y.name), (bb, a, c), dt, op, [x, y])
    elif op == "dot":
        x, y = mat((b,)), mat((b,))
        P.emit("T.dot(%s, %s)" % (x.name, y.name), (), dt, op, [x, y])
    elif op == "mv":
        x, y = mat((a, b)), mat((b,))
        P.emit("T.mv(%s, %s)" % (x.name, y.name), (a,), dt, op, [x, y])
    elif op == "outer":
        x, y = mat((a,)), mat((b,))
        P.emit("T.outer(%s, %s)" % (x.name, y.name), (a, b), dt, op, [x, y])
    elif op == "linear":
        x = mat((a, b) if r.random() < 0.7 else (bb, a, b))
        w = mat((c, b))
        if r.random() < 0.6:
            bias = mat((c,))
            P.emit(
                "F.linear(%s, %s, %s)" % (x.name, w.name, bias.name),
                x.shape[:-1] + (c,),
                dt,
                op,
                [x, w, bias],
            )
        else:
            P.emit("F.linear(%s, %s)" % (x.name, w.name), x.shape[:-1] + (c,), dt, op, [x, w])
    else:
        eq = r.choice(
            (
                "ij,jk->ik",
                "ii->i",
                "ii->",
                "ij->ji",
                "bij,bjk->bik",
                "i,i->",
                "ij->",
                "ij,j->i",
                "i,j->ij",
                "ij,ij->ij",
            )
        )
        ins_s = eq.split("->")[0].split(",")
        size = {"i": a, "j": b, "k": c, "b": bb}
        if eq in ("ii->i", "ii->"):
            size["i"] = max(a, 1)
        ins = [mat(tuple(size[ch] for ch in sub)) for sub in ins_s]
        out = np.einsum(eq, *[np.zeros(v.shape) for v in ins]).shape
        P.emit("T.einsum(%r, %s)" % (eq, ", ".join(v.name for v in ins)), out, dt, "einsum", ins)
    return True


# -- nn.functional


def g_nn(P):
    r = P.r
    op = r.choice(
        (
            "conv1d",
            "conv2d",
            "embedding",
            "mse_loss",
            "nll_loss",
            "cross_entropy",
            "bce",
            "bce_logits",
            "layer_norm",
            "batch_norm",
            "pad",
            "max_pool2d",
            "avg_pool2d",
            "normalize",
            "l1_loss",
        )
    )
    dt = r.choices(FLOATS, (85, 15))[0]
    N, C, L = r.randint(1, 3), r.randint(1, 3), r.randint(3, 5)
    if op == "conv1d":
        x, w = P.leaf((N, C, L), dt), P.leaf((2, C, 2), dt)
        pad = r.choice((0, 1))
        P.emit(
            "F.conv1d(%s, %s, padding=%d)" % (x.name, w.name, pad),
            (N, 2, L - 1 + 2 * pad),
            dt,
            op,
            [x, w],
        )
    elif op == "conv2d":
        x, w = P.leaf((N, C, L, L), dt), P.leaf((2, C, 2, 2), dt)
        b = P.leaf((2,), dt)
        st = r.choice((1, 2))
        o = (L - 2) // st + 1
        P.emit(
            "F.conv2d(%s, %s, %s, stride=%d)" % (x.name, w.name, b.name, st),
            (N, 2, o, o),
            dt,
            op,
            [x, w, b],
        )
    elif op == "embedding":
        W = P.leaf((5, 3), dt)
        idx = P.index_leaf(P.nr.integers(0, 5, (r.randint(0, 4),)))
        P.emit("F.embedding(%s, %s)" % (idx.name, W.name), idx.shape + (3,), dt, op, [W, idx])
    elif op in ("mse_loss", "l1_loss"):
        x = P.fpick(exact=op == "l1_loss")
        t = P.leaf(x.shape, x.dtype, grad=r.random() < 0.3)
        red = r.choice(("mean", "sum", "none"))
        P.emit(
            'F.%s(%s, %s, reduction="%s")' % (op, x.name, t.name, red),
            x.shape if red == "none" else (),
            x.dtype,
            op,
            [x, t],
            exact=False,
        )
    elif op in ("nll_loss", "cross_entropy"):
        x = P.leaf((N, C), dt)
        t = P.index_leaf(P.nr.integers(0, C, (N,)))
        red = r.choice(("mean", "sum", "none"))
        xs = x.name if op == "cross_entropy" else "F.log_softmax(%s, 1)" % x.name
        P.emit(
            'F.%s(%s, %s, reduction="%s")' % (op, xs, t.name, red),
            (N,) if red == "none" else (),
            dt,
            op,
            [x, t],
        )
    elif op in ("bce", "bce_logits"):
        x = P.fpick()
        t = P.leaf(x.shape, x.dtype, grad=False, kind="pos")
        if op == "bce":
            P.emit(
                "F.binary_cross_entropy(T.sigmoid(%s), %s.clamp(0, 1))" % (x.name, t.name),
                (),
                x.dtype,
                op,
                [x, t],
            )
        else:
            P.emit(
                "F.binary_cross_entropy_with_logits(%s, %s)" % (x.name, t.name),
                (),
                x.dtype,
                op,
                [x, t],
            )
    elif op == "layer_norm":
        x = P.leaf((N, C, L), dt)
        w, b = P.leaf((L,), dt), P.leaf((L,), dt)
        P.emit(
            "F.layer_norm(%s, (%d,), %s, %s)" % (x.name, L, w.name, b.name),
            x.shape,
            dt,
            op,
            [x, w, b],
        )
    elif op == "batch_norm":
        x = P.leaf((N + 1, C, L), dt)
        w, b = P.leaf((C,), dt), P.leaf((C,), dt)
        P.emit(
            "F.batch_norm(%s, None, None, %s, %s, training=True)" % (x.name, w.name, b.name),
            x.shape,
            dt,
            op,
            [x, w, b],
        )
    elif op == "pad":
        mode = r.choice(("constant", "reflect", "replicate", "circular"))
        x = P.leaf((N, C, L), dt)
        p = (r.randint(0, 2), r.randint(0, 2))
        P.emit(
            'F.pad(%s, %r, mode="%s")' % (x.name, p, mode),
            (N, C, L + sum(p)),
            dt,
            "pad_" + mode,
            [x],
        )
    elif op in ("max_pool2d", "avg_pool2d"):
        x = P.leaf(
            (N, C, L, L), dt, kind="ints" if op == "max_pool2d" and r.random() < 0.3 else None
        )
        P.emit("F.%s(%s, 2)" % (op, x.name), (N, C, L // 2, L // 2), dt, op, [x])
    else:  # normalize
        x = P.fpick(min_nd=1, nonempty=True)
        P.emit("F.normalize(%s, dim=%d)" % (x.name, P.dim(x.nd)), x.shape, x.dtype, op, [x])
    return True


# -- creation


def g_create(P):
    r = P.r
    op = r.choice(
        (
            "zeros",
            "ones",
            "full",
            "arange",
            "eye",
            "linspace",
            "zeros_like",
            "ones_like",
            "full_like",
            "scalar_tensor",
            "tensor_scalar",
        )
    )
    dt = r.choice(FLOATS)
    rg = r.random() < 0.5
    rgs = ", requires_grad=True" if rg else ""
    s = P.shape(r.randint(0, 3))
    name = P.name()
    if op in ("zeros", "ones"):
        expr, shape = "T.%s(%s, dtype=T.%s%s)" % (op, _shape_src(s), dt, rgs), s
    elif op == "full":
        expr, shape = "T.full(%s, %r, dtype=T.%s%s)" % (_shape_src(s), P.scalar(), dt, rgs), s
    elif op == "arange":
        a, b, st = r.randint(-3, 2), r.randint(-2, 6), r.choice((1, 2, 0.5))
        shape = (len(np.arange(a, b, st)),)
        expr = "T.arange(%d, %d, %r, dtype=T.%s%s)" % (a, b, st, dt, rgs)
    elif op == "eye":
        k, m = r.randint(0, 3), r.randint(0, 3)
        expr, shape = "T.eye(%d, %d, dtype=T.%s%s)" % (k, m, dt, rgs), (k, m)
    elif op == "linspace":
        k = r.randint(0, 5)
        expr, shape = "T.linspace(-1, 2, %d, dtype=T.%s%s)" % (k, dt, rgs), (k,)
    elif op in ("zeros_like", "ones_like", "full_like"):
        x = P.fpick()
        fill = ", %r" % P.scalar() if op == "full_like" else ""
        expr, shape, dt = "T.%s(%s%s%s)" % (op, x.name, fill, rgs), x.shape, x.dtype
        P.add(Stmt("%s = %s" % (name, expr), (name,), (x.name,), key=op))
        P.vars.append(Var(name, shape, dt, rg, True, True))
        return True
    elif op == "scalar_tensor":
        expr, shape = "T.scalar_tensor(%r, dtype=T.%s%s)" % (P.scalar(), dt, rgs), ()
    else:
        expr, shape = "T.tensor(%r, dtype=T.%s%s)" % (float(P.scalar()), dt, rgs), ()
    P.add(Stmt("%s = %s" % (name, expr), (name,), (), key=op))
    P.vars.append(Var(name, shape, dt, rg, True, True))
    return True


# -- in-place, hooks, retain_grad, detach


INPLACE_UNARY = "exp sin tanh sigmoid neg relu abs floor sqrt".split()


def g_inplace(P):
    r = P.r
    # prefer non-leaves and views of non-leaves; leaves requiring grad make the deliberate error
    cands = [v for v in P.vars if v.isfloat and (not v.leaf or r.random() < 0.15)]
    if not cands:
        return False
    w = [3.0 if v.view else 1.0 for v in cands]
    x = r.choices(cands, w)[0]
    if x.overlap and r.random() < 0.7:
        return False
    n = x.name
    op = r.choice(
        (
            "add_",
            "mul_",
            "sub_",
            "div_",
            "unary_",
            "clamp_",
            "zero_",
            "fill_",
            "setitem",
            "copy_",
            "masked_fill_",
            "scatter_",
            "pow_",
            "tril_",
            "setitem_t",
            "iadd",
            "imul",
        )
    )
    ins = []
    if op in ("add_", "mul_", "sub_", "div_", "copy_", "iadd", "imul"):
        ys = tuple(1 if r.random() < 0.3 else v for v in x.shape)
        if r.random() < 0.2:
            ys = ys[1:] if ys else ys
        y = P.pick(lambda v: v.isfloat and v.shape == ys and v is not x, fresh=0.5, shape=ys)
        ins = [y]
        src = {
            "add_": "%s.add_(%s)",
            "mul_": "%s.mul_(%s)",
            "sub_": "%s.sub_(%s, alpha=2)",
            "div_": "%s.div_(%s)",
            "copy_": "%s.copy_(%s)",
            "iadd": "%s += %s",
            "imul": "%s *= %s",
        }[op] % (n, y.name)
    elif op == "unary_":
        u = r.choice(INPLACE_UNARY)
        if u in ("relu", "abs", "floor") and not x.exact:
            return False
        src, op = "%s.%s_()" % (n, u), u + "_"
    elif op == "clamp_":
        if not x.exact:
            return False
        src = "%s.clamp_(%r, %r)" % (n, -0.5, 0.5)
    elif op == "zero_":
        src = "%s.zero_()" % n
    elif op == "fill_":
        src = "%s.fill_(%r)" % (n, P.scalar())
    elif op == "pow_":
        src = "%s.pow_(2)" % n
    elif op == "tril_":
        if x.nd < 2:
            return False
        src = "%s.tril_()" % n
    elif op in ("setitem", "setitem_t"):
        if x.nd == 0:
            src = "%s[...] = %r" % (n, P.scalar())
        elif x.shape[0] == 0:
            return False
        else:
            i = r.randrange(x.shape[0])
            if op == "setitem":
                src = "%s[%d] = %r" % (n, i, P.scalar())
            else:
                y = P.pick(
                    lambda v: v.isfloat and v.shape == x.shape[1:] and v is not x,
                    fresh=0.5,
                    shape=x.shape[1:],
                )
                ins = [y]
                src = "%s[%d] = %s" % (n, i, y.name)
    elif op == "masked_fill_":
        m = _mask_for(P, x.shape)
        ins = [m]
        src = "%s.masked_fill_(%s, %r)" % (n, m.name, P.scalar())
    else:  # scatter_
        if x.nd == 0 or 0 in x.shape:
            return False
        d = r.randrange(x.nd)
        ish = tuple(r.randint(1, v) for v in x.shape)
        i = P.index_leaf(P.nr.integers(0, x.shape[d], ish))
        src_v = P.leaf(ish, x.dtype)
        ins = [i, src_v]
        src = "%s.scatter_(%d, %s, %s)" % (n, d, i.name, src_v.name)
    P.mutate(src, x, op, ins)
    if op not in (
        "zero_",
        "fill_",
        "clamp_",
        "relu_",
        "abs_",
        "floor_",
        "neg_",
        "copy_",
        "setitem",
        "masked_fill_",
        "tril_",
    ):
        x.exact = False
    return True


def g_index_inplace(P):
    """Write (in-range values) into an index tensor after an op used it: PyTorch's saved
    indices are version-checked, so a backward through that op must raise."""
    r = P.r
    cands = [v for v in P.vars if v.dtype == "int64" and v.numel > 0 and v.name[0] == "i"]
    if not cands:
        return False
    i = r.choice(cands)
    src = r.choice(("%s.fill_(0)", "%s.zero_()", "%s.data.fill_(0)")) % i.name
    P.mutate(src, i, "index_inplace")
    return True


def g_cast(P):
    """Integer and bool tensors from floats (``long``, ``to(int64)``, ``bool``), and float ops
    applied to them (type promotion to the default float dtype)."""
    r = P.r
    ints = [v for v in P.vars if v.dtype == "int64"]
    if ints and r.random() < 0.5:
        x = r.choice(ints)
        op = r.choice(("sqrt", "exp", "neg", "abs", "sum", "mean_f", "float", "sigmoid"))
        if op == "mean_f":
            P.emit("%s.float().mean()" % x.name, (), "float32", "int_mean", [x], exact=False)
        elif op == "float":
            P.emit("%s.to(T.float64)" % x.name, x.shape, "float64", "int_to", [x], exact=True)
        elif op == "sum":
            P.emit("%s.sum()" % x.name, (), "int64", "int_sum", [x], diff=False, exact=True)
        else:
            dt = "int64" if op in ("neg", "abs") else "float32"
            P.emit("T.%s(%s)" % (op, x.name), x.shape, dt, "int_" + op, [x], diff=False)
        return True
    x = P.fpick(exact=True)
    op = r.choice(("long", "to_int", "bool"))
    if op == "bool":
        P.emit("%s.bool()" % x.name, x.shape, "bool", "to_bool", [x], diff=False, exact=True)
        return True
    # nan/inf to int is undefined behaviour (platform-dependent): zero them first
    fin = "%s.masked_fill(~T.isfinite(%s), 0)" % (x.name, x.name)
    expr = "%s.long()" % fin if op == "long" else "%s.to(T.int64)" % fin
    P.emit(expr, x.shape, "int64", "to_int", [x], diff=False, exact=True)
    return True


def g_out(P):
    """``out=`` variants: the result is written into a given tensor (an error when an input
    requires grad and grad mode is on)."""
    r = P.r
    op = r.choice(("exp", "add", "sum", "matmul", "cat"))
    x = P.fpick()
    dt = x.dtype
    if op == "exp":
        shape, call = x.shape, "T.exp(%s, out=%%s)" % x.name
    elif op == "add":
        y = P.partner(x)
        shape, dt = broadcast(x.shape, y.shape), _ptype(x, y)
        call = "T.add(%s, %s, out=%%s)" % (x.name, y.name)
    elif op == "sum":
        if x.nd == 0:
            return False
        d = P.dim(x.nd)
        shape, call = _red_shape(x.shape, [d], False), "T.sum(%s, %d, out=%%s)" % (x.name, d)
    elif op == "matmul":
        if x.nd != 2:
            return False
        y = P.leaf((x.shape[1], r.randint(1, 3)), x.dtype)
        shape, call = (x.shape[0], y.shape[1]), "T.matmul(%s, %s, out=%%s)" % (x.name, y.name)
    else:
        if x.nd == 0:
            return False
        shape = (2 * x.shape[0],) + x.shape[1:]
        call = "T.cat([%s, %s], out=%%s)" % (x.name, x.name)
    o = P.leaf(shape if r.random() < 0.8 else (0,), dt, grad=False, layout="c", prefix="o")
    P.add(Stmt(call % o.name, (), (x.name, o.name), (o.name,), key="out_" + op))
    return True


HOOKS = (
    "lambda g: g * 2",
    "lambda g: None",
    "lambda g: g + 1",
    "lambda g: g.clamp(-1, 1)",
    "lambda g: g * 0",
)


def g_hook(P):
    r = P.r
    cands = [v for v in P.vars if v.grad]
    if not cands:
        return False
    x = r.choice(cands)
    h = r.choice(HOOKS)
    P.add(Stmt("%s.register_hook(%s)" % (x.name, h), (), (x.name,), key="hook"))
    return True


NODE_HOOKS = (
    "lambda go: tuple(None if g is None else g * 2 for g in go)",
    "lambda go: None",
)


def g_node_hook(P):
    """Hooks on autograd nodes: pre-hooks and hooks of ``grad_fn``, a pre-hook on the node
    one edge further (a leaf's gradient accumulator when the op's first input is a leaf),
    and post-accumulate-grad hooks of leaves."""
    r = P.r
    op = r.choice(("prehook", "hook", "next_prehook", "post_acc"))
    if op == "post_acc":
        leaves = [v for v in P.vars if v.leaf and v.grad]
        if not leaves:
            return False
        x = r.choice(leaves)
        src = "%s.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(2) and None)" % x.name
    else:
        cands = [v for v in P.vars if v.grad and not v.leaf]
        if not cands:
            return False
        x = r.choice(cands)
        if op == "prehook":
            src = "%s.grad_fn.register_prehook(%s)" % (x.name, r.choice(NODE_HOOKS))
        elif op == "hook":
            src = "%s.grad_fn.register_hook(%s)" % (
                x.name,
                "lambda gi, go: tuple(None if g is None else g * 3 for g in gi)",
            )
        else:
            src = "%s.grad_fn.next_functions[0][0].register_prehook(%s)" % (
                x.name,
                r.choice(NODE_HOOKS),
            )
    P.add(Stmt(src, (), (x.name,), key="node_" + op))
    return True


def g_retain(P):
    cands = [v for v in P.vars if v.grad and not v.leaf]
    if not cands:
        return False
    x = P.r.choice(cands)
    P.add(Stmt("%s.retain_grad()" % x.name, (), (x.name,), key="retain_grad"))
    return True


def g_detach_leaf(P):
    x = P.pick(lambda v: v.isfloat and v.grad)
    if x is None:
        return False
    name = P.name()
    P.add(
        Stmt(
            "%s = %s.detach().requires_grad_()" % (name, x.name),
            (name,),
            (x.name,),
            key="detach_leaf",
        )
    )
    P.vars.append(Var(name, x.shape, x.dtype, True, True, x.exact, view=True))
    return True


# -- deliberate errors: both libraries must raise the same exception type


def g_error(P):
    r = P.r
    op = r.choice(
        (
            "bad_broadcast",
            "bad_dim",
            "bad_view",
            "bad_matmul",
            "bad_mm_dtype",
            "bad_cat",
            "leaf_inplace",
            "bad_index",
            "bad_reshape",
            "int_grad",
            "bad_transpose",
            "bad_gather",
            "bad_index_select",
            "bad_expand",
            "nonleaf_requires_grad",
            "bad_squeeze_unflatten",
            "bad_softmax_dim",
        )
    )
    x = P.fpick(min_nd=1, nonempty=True)
    n, nd, s = x.name, x.nd, x.shape
    if op == "bad_broadcast":
        if all(v == 1 for v in s):
            return False
        y = P.leaf(tuple(v + 1 for v in s), x.dtype)
        expr = "%s + %s" % (n, y.name)
        P.emit(expr, s, x.dtype, "err_broadcast", [x, y])
    elif op == "bad_dim":
        d = r.choice((nd, -nd - 1, nd + 3))
        fn = r.choice(
            ("sum", "mean", "softmax", "cumsum", "amax", "max", "flip", "squeeze", "unsqueeze")
        )
        if fn == "unsqueeze":
            d = r.choice((nd + 1, -nd - 2))
        P.emit("%s.%s(%d)" % (n, fn, d), s, x.dtype, "err_dim_" + fn, [x])
    elif op == "bad_view":
        if nd < 2 or s[-1] < 2 or s[-2] < 2:
            return False
        P.emit("%s.mT.view(-1)" % n, (x.numel,), x.dtype, "err_view", [x])
    elif op == "bad_reshape":
        P.emit("%s.reshape(%d, -1)" % (n, x.numel + 1), s, x.dtype, "err_reshape", [x])
    elif op == "bad_matmul":
        y = P.leaf((s[-1] + 1, 2), x.dtype)
        P.emit("%s @ %s" % (n, y.name), s, x.dtype, "err_matmul", [x, y])
    elif op == "bad_mm_dtype":
        other = "float32" if x.dtype == "float64" else "float64"
        a = P.leaf((2, 3), x.dtype)
        y = P.leaf((3, 2), other)
        P.emit("T.mm(%s, %s)" % (a.name, y.name), (2, 2), x.dtype, "err_mm_dtype", [a, y])
    elif op == "bad_cat":
        y = P.leaf(tuple(v + 1 for v in s) + ((1,) if r.random() < 0.5 else ()), x.dtype)
        P.emit("T.cat([%s, %s])" % (n, y.name), s, x.dtype, "err_cat", [x, y])
    elif op == "leaf_inplace":
        leaves = [v for v in P.vars if v.leaf and v.grad and v.isfloat]
        if not leaves:
            return False
        v = r.choice(leaves)
        P.add(
            Stmt(
                "%s.%s" % (v.name, r.choice(("add_(1)", "mul_(2)", "zero_()", "exp_()"))),
                (),
                (v.name,),
                (v.name,),
                key="err_leaf_inplace",
            )
        )
    elif op == "bad_index":
        P.emit(
            "%s[%d]" % (n, r.choice((s[0], -s[0] - 1, s[0] + 5))), s[1:], x.dtype, "err_index", [x]
        )
    elif op == "int_grad":
        name = P.name()
        P.add(
            Stmt("%s = T.tensor([1, 2]).requires_grad_()" % name, (name,), (), key="err_int_grad")
        )
    elif op == "bad_transpose":
        P.emit("%s.transpose(0, %d)" % (n, nd + 1), s, x.dtype, "err_transpose", [x])
    elif op == "bad_gather":
        i = P.index_leaf(np.full((1,) * nd, r.choice((s[0] + 2, -1))))
        P.emit("T.gather(%s, 0, %s)" % (n, i.name), (1,) * nd, x.dtype, "err_gather", [x, i])
    elif op == "bad_index_select":
        i = P.index_leaf([r.choice((s[0], -1, 7))])
        P.emit(
            "T.index_select(%s, 0, %s)" % (n, i.name),
            (1,) + s[1:],
            x.dtype,
            "err_index_select",
            [x, i],
        )
    elif op == "bad_expand":
        P.emit(
            "%s.expand(%s)" % (n, ", ".join(str(v + 1) for v in s)), s, x.dtype, "err_expand", [x]
        )
    elif op == "nonleaf_requires_grad":
        nl = [v for v in P.vars if not v.leaf and v.grad]
        if not nl:
            return False
        v = r.choice(nl)
        P.add(Stmt("%s.requires_grad_(False)" % v.name, (), (v.name,), key="err_requires_grad"))
    elif op == "bad_squeeze_unflatten":
        P.emit("%s.unflatten(0, (%d, -1))" % (n, s[0] + 1), s, x.dtype, "err_unflatten", [x])
    else:
        P.emit("T.softmax(%s, %d)" % (n, nd + 1), s, x.dtype, "err_softmax_dim", [x])
    return True


GENERATORS = {
    "unary": (g_unary, 14),
    "nn_unary": (g_nn_unary, 3),
    "scalar": (g_scalar_op, 8),
    "binary": (g_binary, 12),
    "compare": (g_compare, 3),
    "logical": (g_logical, 1),
    "where": (g_where, 3),
    "reduce": (g_reduce, 12),
    "view": (g_view, 14),
    "copyshape": (g_copyshape, 7),
    "index": (g_index, 6),
    "linalg": (g_linalg, 5),
    "nn": (g_nn, 4),
    "create": (g_create, 2),
    "inplace": (g_inplace, 8),
    "hook": (g_hook, 4),
    "retain": (g_retain, 3),
    "node_hook": (g_node_hook, 2),
    "detach_leaf": (g_detach_leaf, 1),
    "error": (g_error, 3),
    "index_inplace": (g_index_inplace, 1),
    "cast": (g_cast, 2),
    "out": (g_out, 2),
}


def generate(seed, groups=None, n_ops=None):
    """A random program.  ``groups`` limits the generator groups (keys of ``GENERATORS``;
    leaves, backward and the autograd features stay on)."""
    P = Builder(seed)
    r = P.r
    for _ in range(r.randint(1, 3)):
        P.leaf(P.shape())
    names = [k for k in GENERATORS if groups is None or k in groups]
    if groups is not None:
        names += [k for k in ("inplace", "hook", "retain") if k not in names]
    weights = [GENERATORS[k][1] for k in names]
    n = n_ops if n_ops is not None else r.randint(2, 10)
    done = 0
    tries = 0
    while done < n and tries < 4 * n + 10:
        tries += 1
        P.nograd = r.random() < 0.06
        g = GENERATORS[r.choices(names, weights)[0]][0]
        if g(P):
            done += 1
        P.nograd = False
    _finish(P)
    return Program(P.stmts, seed)


def _finish(P):
    r = P.r
    used = set()
    for st in P.stmts:
        used.update(st.uses)
    outs = [v for v in P.vars if v.grad and v.isfloat]
    if not outs:
        return
    sinks = [v for v in outs if v.name not in used] or outs
    k = min(len(sinks), r.choice((1, 1, 2)))
    chosen = r.sample(sinks, k)
    terms = []
    for v in chosen:
        c = (
            P.leaf(v.shape, v.dtype, grad=False, layout="c", prefix="c")
            if r.random() < 0.8
            else None
        )
        terms.append((v.name, c.name if c else None))
    st = Stmt(key="backward")
    st.terms = terms
    style = r.random()
    if style < 0.15 and len(terms) == 1 and terms[0][1]:
        st.bw = "gradient"
    elif style < 0.3:
        leaves = [v.name for v in P.vars if v.leaf and v.grad]
        if not leaves:
            st.bw = "sum"
        else:
            st.bw = "grad"
            st.uses = tuple(r.sample(leaves, min(len(leaves), r.randint(1, 2))))
            st.out = ("grads",)
    elif style < 0.35:
        st.bw = "twice"
    elif style < 0.42:
        st.bw = "inputs"
        st.uses = tuple(r.sample([v.name for v in outs], min(len(outs), r.randint(1, 2))))
    elif style < 0.5:
        leaves = [v.name for v in P.vars if v.leaf and v.grad]
        st.bw = "double" if leaves else "sum"
        if leaves:
            st.uses = (r.choice(leaves),)
            st.out = ("grads",)
    else:
        st.bw = "sum"
    P.add(st)


# ------------------------------------------------------------------------------------ runner


class Snap:
    __slots__ = ("dtype", "shape", "stride", "value", "rg", "leaf", "fn")

    def __eq__(self, other):  # pragma: no cover - not used
        return NotImplemented


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def snap(t):
    """What is compared of one tensor (or a tuple/list of tensors, or None)."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return [snap(e) for e in t]
    if not hasattr(t, "requires_grad"):
        return ("py", repr(t))
    s = Snap()
    s.dtype = _dtype_name(t)
    s.shape = tuple(t.shape)
    s.stride = tuple(t.stride())
    # a copy first: torch marks the storage behind .numpy() as not resizable, which would
    # change what a later out= or resize does (and can then crash torch itself)
    s.value = np.array(t.detach().clone().numpy(), copy=True)
    s.rg = bool(t.requires_grad)
    s.leaf = _attr(t, lambda t: bool(t.is_leaf))
    s.fn = _attr(t, lambda t: type(t.grad_fn).__name__ if t.grad_fn is not None else None)
    return s


def _attr(t, get):
    try:
        return get(t)
    except Exception as e:  # torch refuses grad_fn of a view whose base changed out of no_grad
        return "raises " + _builtin_base(e).__name__


def _grads(env, names):
    out = {}
    for n in names:
        t = env.get(n)
        if t is None or not hasattr(t, "requires_grad"):
            continue
        g = _attr(t, lambda t: t.grad)
        if isinstance(g, str):
            out[n] = ("py", g)
        else:
            out[n] = snap(g) if g is not None else None
    return out


_CODE = {}


def _compiled(st):
    text = st.text()
    if st.nograd:
        text = "with T.no_grad():\n" + "\n".join("    " + t for t in text.split("\n"))
    c = _CODE.get(text)
    if c is None:
        if len(_CODE) > 20000:
            _CODE.clear()
        c = _CODE[text] = compile(text, "<fuzz>", "exec")
    return c


def run(prog, lib):
    """Execute ``prog`` with ``T = lib``.  Returns ``(steps, final, grads)``: one entry per
    statement (``('ok', {name: Snap})``, ``('exc', exception)``, ``('skip',)``), the snapshots
    of every live tensor at the end, and the gradients (``.grad`` of leaves and of tensors that
    retain their gradient)."""
    env = {"T": lib, "F": lib.nn.functional, "nan": math.nan, "inf": math.inf}
    steps, dead, names = [], set(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for st in prog.stmts:
            if dead.intersection(st.all_uses()):
                dead.update(st.out)
                steps.append(("skip",))
                continue
            try:
                exec(_compiled(st), env)
            except Exception as e:  # the outcome is part of the trace
                steps.append(("exc", e))
                dead.update(st.out)
                continue
            snaps = {}
            # after an in-place statement every live tensor (views share memory)
            for n in st.out + (tuple(names) if st.mut else ()):
                if n in env:
                    snaps[n] = snap(env[n])
                    if n == "grads":
                        snaps[n] = ("grads", snaps[n])
                    if n not in names:
                        names.append(n)
            steps.append(("ok", snaps))
        final = {n: snap(env[n]) for n in names if n in env and n != "grads"}
        grads = _grads(env, names)
    return steps, final, grads


class Mismatch:
    def __init__(self, kind, where, key, detail):
        self.kind, self.where, self.key, self.detail = kind, where, key, detail

    @property
    def signature(self):
        return "%s @ %s" % (self.kind, self.key)

    def __repr__(self):
        return "Mismatch(%s, stmt %s: %s)" % (self.signature, self.where, self.detail)


TOL = {"float64": (1e-6, 1e-9), "float32": (2e-4, 1e-5)}
# a program that computes anything in float32 (or in the default dtype from integers) may
# carry float32 rounding into float64 results, through type promotion and through gradients
# cast to a float32 input's dtype: there, every value is compared with this tolerance
TOL_MIXED = (2e-4, 1e-4)


def _low_precision(prog):
    return any(
        "float32" in t or ".float()" in t or st.key.startswith("int_")
        for st in prog.stmts
        for t in (st.text(),)
    )


def _foreign(e):
    mod = type(e).__module__ or ""
    return mod.split(".")[0] in ("numpy", "numba", "llvmlite")


def _builtin_base(e):
    for c in type(e).__mro__:
        if c.__module__ == "builtins":
            return c
    return Exception


def _exc_match(nb, th):
    if _foreign(nb):
        return False
    return isinstance(nb, _builtin_base(th))


def _values_differ(a, b, dtype, mixed=False):
    if a.shape != b.shape:
        return "shape %s vs %s" % (a.shape, b.shape)
    if a.dtype.kind not in "fc":
        if not np.array_equal(a, b):
            return "values %s vs %s" % (_short(a), _short(b))
        return None
    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return "NaN at %s vs %s: %s vs %s" % (
            np.argwhere(na).tolist()[:4],
            np.argwhere(nb).tolist()[:4],
            _short(a),
            _short(b),
        )
    fa, fb = np.where(na, 0, a), np.where(nb, 0, b)
    inf = np.isinf(fa) | np.isinf(fb)
    if not np.array_equal(fa[inf], fb[inf]):
        return "inf values %s vs %s" % (_short(a), _short(b))
    rtol, atol = TOL_MIXED if mixed else TOL.get(dtype, TOL["float32"])
    fa, fb = np.where(inf, 0, fa), np.where(inf, 0, fb)
    if not np.allclose(fa, fb, rtol=rtol, atol=atol):
        return "values %s vs %s" % (_short(a), _short(b))
    return None


def _short(a):
    s = np.array2string(np.asarray(a), precision=5, threshold=12, separator=", ")
    return s.replace("\n", "")


def _cmp_snap(a, b, name, what, mixed=False):
    """First difference between nbgrad's snapshot ``a`` and torch's ``b`` as (kind, detail)."""
    if (a is None) != (b is None):
        return what + "-none", "%s: nbgrad %s, torch %s" % (
            name,
            "None" if a is None else "a tensor",
            "None" if b is None else "a tensor",
        )
    if a is None:
        return None
    if isinstance(b, list) or isinstance(a, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return what, "%s: %r vs %r" % (name, type(a), type(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = _cmp_snap(x, y, "%s[%d]" % (name, i), what, mixed)
            if d:
                return d
        return None
    if isinstance(b, tuple) and b[0] == "grads" and isinstance(a, tuple) and a[0] == "grads":
        return _cmp_snap(a[1], b[1], name, "grad", mixed)
    if isinstance(b, tuple) or isinstance(a, tuple):
        if a != b:
            return what, "%s: %r vs %r" % (name, a, b)
        return None
    if a.dtype != b.dtype:
        return what + "-dtype", "%s: %s vs %s" % (name, a.dtype, b.dtype)
    if a.shape != b.shape:
        return what + "-shape", "%s: %s vs %s" % (name, a.shape, b.shape)
    d = _values_differ(a.value, b.value, b.dtype, mixed)
    if d:
        kind = "-nan" if d.startswith("NaN") else "-inf" if d.startswith("inf") else "-value"
        return what + kind, "%s: %s" % (name, d)
    if what == "grad":
        if b.value.size and not name.startswith("grads"):
            sa = tuple(s for s, n in zip(a.stride, a.shape) if n > 1)
            sb = tuple(s for s, n in zip(b.stride, b.shape) if n > 1)
            if sa != sb:
                return "grad-stride", "%s: %s vs %s (shape %s)" % (
                    name,
                    a.stride,
                    b.stride,
                    b.shape,
                )
        return None
    if a.rg != b.rg:
        return "requires_grad", "%s: %s vs %s" % (name, a.rg, b.rg)
    if a.leaf != b.leaf:
        return "is_leaf", "%s: %s vs %s" % (name, a.leaf, b.leaf)
    if a.fn != b.fn:
        return "grad_fn", "%s: %s vs %s" % (name, a.fn, b.fn)
    if b.value.size:
        sa = tuple(s for s, n in zip(a.stride, a.shape) if n > 1)
        sb = tuple(s for s, n in zip(b.stride, b.shape) if n > 1)
        if sa != sb:
            return "stride", "%s: %s vs %s (shape %s)" % (name, a.stride, b.stride, b.shape)
    return None


def compare(prog, nb_trace, th_trace):
    """The first difference between nbgrad's and torch's traces, or None."""
    (s1, f1, g1), (s2, f2, g2) = nb_trace, th_trace
    mixed = _low_precision(prog)
    for i, (a, b, st) in enumerate(zip(s1, s2, prog.stmts)):
        if a[0] != b[0]:
            if a[0] == "exc":
                return Mismatch(
                    "raises " + type(a[1]).__name__,
                    i,
                    st.key,
                    "nbgrad raised %s: %s; torch did not" % (type(a[1]).__name__, str(a[1])[:200]),
                )
            if b[0] == "exc":
                return Mismatch(
                    "no-raise " + _builtin_base(b[1]).__name__,
                    i,
                    st.key,
                    "torch raised %s: %s; nbgrad did not" % (type(b[1]).__name__, str(b[1])[:200]),
                )
            return Mismatch("skip", i, st.key, "%s vs %s" % (a[0], b[0]))
        if a[0] == "exc":
            if not _exc_match(a[1], b[1]):
                kind = "exc-type %s/%s" % (type(a[1]).__name__, _builtin_base(b[1]).__name__)
                return Mismatch(
                    kind,
                    i,
                    st.key,
                    "nbgrad %s: %s | torch %s: %s"
                    % (type(a[1]).__name__, str(a[1])[:150], type(b[1]).__name__, str(b[1])[:150]),
                )
        elif a[0] == "ok":
            for n in b[1]:
                d = _cmp_snap(a[1].get(n), b[1][n], n, "result", mixed)
                if d:
                    return Mismatch(d[0], i, st.key, d[1])
    last = len(prog.stmts) - 1
    for n in f2:
        d = _cmp_snap(f1.get(n), f2[n], n, "final", mixed)
        if d:
            return Mismatch(d[0], last, "final", d[1])
    bkey = prog.stmts[last].key if prog.stmts else "final"
    for n in sorted(set(g1) | set(g2)):
        if n not in g2 or n not in g1:
            return Mismatch(
                "grad-presence", last, bkey, "%s: in nbgrad %s, in torch %s" % (n, n in g1, n in g2)
            )
        d = _cmp_snap(g1[n], g2[n], n + ".grad", "grad", mixed)
        if d:
            return Mismatch(d[0], last, bkey, d[1])
    return None


def check(prog, nb, th):
    """Run ``prog`` on both libraries; the first Mismatch or None."""
    return compare(prog, run(prog, nb), run(prog, th))


# ------------------------------------------------------------------------------------ shrinker


def _remove(prog, idxs):
    """``prog`` without statements ``idxs`` and everything that depends on what they define
    (a backward term whose tensor disappears is dropped from the loss)."""
    drop = set(idxs)
    gone = set()
    for i in sorted(drop):
        gone.update(prog.stmts[i].out)
    out = []
    for i, st in enumerate(prog.stmts):
        if i in drop:
            continue
        if st.terms is not None:
            st = st.copy()
            st.terms = [(v, c) for v, c in st.terms if v not in gone]
            st.terms = [(v, c if c not in gone else None) for v, c in st.terms]
            st.uses = tuple(u for u in st.uses if u not in gone)
            if not st.terms or (st.bw == "grad" and not st.uses):
                continue
            out.append(st)
            continue
        if gone.intersection(st.uses) or gone.intersection(st.mut):
            gone.update(st.out)
            continue
        out.append(st)
    return Program(out, prog.seed)


def _unused_leaves(prog):
    used = set()
    for st in prog.stmts:
        used.update(st.all_uses())
        used.update(st.mut)
    return [i for i, st in enumerate(prog.stmts) if st.leaf is not None and st.out[0] not in used]


def shrink(prog, mismatch, nb, th, budget=400, time_limit=60.0):
    """The smallest program found (by removing statements, cutting the graph, simplifying
    values and shapes) that still shows a mismatch of the same kind at the same op."""
    t0 = time.time()
    calls = [0]
    target = (mismatch.kind, mismatch.key)

    def same(p):
        if calls[0] >= budget or time.time() - t0 > time_limit:
            return None
        calls[0] += 1
        try:
            m = check(p, nb, th)
        except Exception:  # pragma: no cover - a runner failure is not the mismatch
            return None
        if m is not None and (m.kind, m.key) == target:
            return m
        return None

    best, best_m = prog, mismatch
    changed = True
    while changed and calls[0] < budget and time.time() - t0 < time_limit:
        changed = False
        # 1. drop statements (with their dependents), from the end; then chunks
        i = len(best.stmts) - 1
        while i >= 0:
            if i < len(best.stmts):
                cand = _remove(best, [i])
                if len(cand.stmts) < len(best.stmts):
                    m = same(cand)
                    if m:
                        best, best_m, changed = cand, m, True
            i -= 1
        cand = _remove(best, _unused_leaves(best))
        if len(cand.stmts) < len(best.stmts):
            m = same(cand)
            if m:
                best, best_m, changed = cand, m, True
        # 2. cut: replace an intermediate by a leaf holding its (torch) value
        steps = run(best, th)[0]
        i = 0
        while i < len(best.stmts):
            st = best.stmts[i]
            i += 1
            if st.leaf is not None or st.terms is not None or len(st.out) != 1 or st.mut:
                continue
            if i - 1 >= len(steps) or steps[i - 1][0] != "ok":
                continue
            s = steps[i - 1][1].get(st.out[0])
            if not isinstance(s, Snap) or s.dtype not in FLOATS + ("int64", "bool"):
                continue
            for grad in (s.rg, False) if s.rg else (False,):
                cand = best.copy()
                cand.stmts[i - 1] = Stmt(out=st.out, key="leaf", leaf=Leaf(s.value, s.dtype, grad))
                cand = _remove(cand, _unused_leaves(cand))
                m = same(cand)
                if m:
                    best, best_m, changed = cand, m, True
                    steps, i = run(best, th)[0], 0
                    break
        # 3. simpler values and smaller shapes for leaves
        for i, st in enumerate(best.stmts):
            if i >= len(best.stmts) or best.stmts[i].leaf is None:
                continue
            lf = best.stmts[i].leaf
            for new in _leaf_variants(lf):
                cand = best.copy()
                cand.stmts[i].leaf = new
                m = same(cand)
                if m:
                    best, best_m, changed = cand, m, True
                    lf = new
        # 4. no_grad flags off
        for i, st in enumerate(best.stmts):
            if st.nograd:
                cand = best.copy()
                cand.stmts[i].nograd = False
                m = same(cand)
                if m:
                    best, best_m, changed = cand, m, True
    return best, best_m


def last_op(prog):
    """The key of the last operation of a program (not a leaf, not the backward)."""
    for st in reversed(prog.stmts):
        if st.leaf is None and st.terms is None and st.key not in ("backward", "stmt"):
            return st.key
    return "?"


def classify(prog, m, nb, th, budget=100):
    """``(signature, minimal program, its mismatch)``.  A difference seen at an op is
    ``kind @ op``; one seen only in the gradients or in the final values is attributed by
    shrinking (deterministic: a call budget, no time limit): ``kind @ backward via <last op
    of the minimal program>``."""
    if m.key not in ("backward", "final"):
        return m.signature, prog, m
    small, sm = shrink(prog, m, nb, th, budget=budget, time_limit=1e9)
    return signature_of(small, sm), small, sm


def signature_of(small, sm):
    if sm.key in ("backward", "final"):
        return "%s via %s" % (sm.signature, last_op(small))
    return sm.signature


def _leaf_variants(lf):
    v = lf.value
    out = []
    if lf.layout != "c":
        out.append(lf.copy(layout="c"))
    if v.dtype.kind == "f" and v.size:
        fin = np.isfinite(v)
        r = np.where(fin, np.round(v), v)
        if not np.array_equal(r, v, equal_nan=True):
            out.append(lf.copy(value=r))
        ones = np.where(fin, 1.0, v)
        if not np.array_equal(ones, v, equal_nan=True):
            out.append(lf.copy(value=ones))
    for d in range(v.ndim):
        if v.shape[d] > 1:
            out.append(lf.copy(value=np.take(v, range(1), axis=d)))
            out.append(lf.copy(value=np.take(v, range(v.shape[d] - 1), axis=d)))
    return out


# ---------------------------------------------------------------------------- driving a batch


def fuzz(seeds, nb, th, groups=None, do_shrink=True, on_result=None, shrink_budget=400):
    """Run ``generate(seed)`` for each seed; returns ``[(seed, program, mismatch, minimal
    program, minimal mismatch)]`` for the graphs that disagree."""
    found = []
    for seed in seeds:
        prog = generate(seed, groups)
        m = check(prog, nb, th)
        if m is None:
            if on_result:
                on_result(seed, None)
            continue
        small, sm = shrink(prog, m, nb, th, budget=shrink_budget) if do_shrink else (prog, m)
        found.append((seed, prog, m, small, sm))
        if on_result:
            on_result(seed, (prog, m, small, sm))
    return found
