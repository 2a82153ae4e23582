"""``nbgrad.elementwise``: turn a scalar Python formula into a differentiable elementwise op.

    @nbgrad.elementwise
    def gelu(x):
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))

The function body (one ``return`` expression) is differentiated symbolically here, per argument,
and registered like any op in ops/pointwise.py: a compiled Numba forward ufunc, a fused one-pass
compiled backward ``g * d`` per input, a differentiable backward for create_graph, broadcasting
and dtype promotion.  Accepted: numbers, the function's arguments, + - * / ** and unary -,
``where(cond, a, b)`` (cond a comparison), ``maximum``, ``minimum``, and each one-argument
vocabulary function (kernels/vocab.py) whose registry op's partial gives its derivative: exp exp2
log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid erf abs round floor ceil trunc sign
atan asin acos sinh cosh asinh acosh atanh (Python's ``abs`` and ``round`` are the vocabulary's
``fabs`` and ``rint``).
"""

import ast
import copy
import inspect
import textwrap

from .._tensor import Tensor
from ..creation import tensor
from ..kernels.vocab import VOCAB
from .dispatch import pointwise
from .formula import OP_OF, vjp_of
from .registry import REGISTRY, OpDef, register

# Python builtins a formula may use for vocabulary functions: abs -> fabs, round -> rint
_RENAME = {op: f for f, op in OP_OF.items()}

_DERIVATIVES = {}  # vocabulary function -> its registry partial as an ast over x and out


def _derivative_rule(f):
    """The registry partial of the one-argument op computing vocabulary function ``f``, parsed:
    the op's formula is ``f(x)`` (or the same maths, e.g. sigmoid's ``1 / (1 + exp(-x))``), so
    ``d f(u) / du`` is that partial with ``x := u`` and ``out := f(u)``.  None if ``f`` has no
    such op."""
    rule = _DERIVATIVES.get(f)
    if rule is None and f in VOCAB:
        op = REGISTRY.get(OP_OF.get(f, f))
        if (
            op is not None
            and op.kind == "pointwise"
            and op.args == ("x",)
            and not op.attrs
            and len(op.partials) == 1
            and op.partials[0] is not None
        ):
            rule = _DERIVATIVES[f] = ast.parse(op.partials[0], mode="eval").body
    return rule


class _Substitute(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        new = self.names.get(node.id)
        return copy.deepcopy(new) if new is not None else node


def _chain_factor(f, u):
    """``d f(u) / du`` as an expression string, or None if ``f`` is not differentiable here."""
    rule = _derivative_rule(f)
    if rule is None:
        return None
    call = ast.Call(func=ast.Name(id=f, ctx=ast.Load()), args=[u], keywords=[])
    tree = _Substitute({"x": u, "out": call}).visit(copy.deepcopy(rule))
    return _src(ast.fix_missing_locations(tree))


def _src(node):
    return ast.unparse(node)


def _is_zero(s):
    return s in ("0", "0.0", "(0)")


def _is_one(s):
    return s in ("1", "1.0", "(1)")


def _mul(a, b):
    if _is_zero(a) or _is_zero(b):
        return "0"
    if _is_one(a):
        return b
    if _is_one(b):
        return a
    return "(%s) * (%s)" % (a, b)


def _add(a, b):
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    return "(%s) + (%s)" % (a, b)


def _sub(a, b):
    if _is_zero(b):
        return a
    if _is_zero(a):
        return "-(%s)" % b
    return "(%s) - (%s)" % (a, b)


def derive(node, var):
    """d(node)/d(var) as an expression string (node: an ast expression)."""
    if isinstance(node, ast.Constant):
        return "0"
    if isinstance(node, ast.Name):
        return "1" if node.id == var else "0"
    if isinstance(node, ast.UnaryOp):
        d = derive(node.operand, var)
        if isinstance(node.op, ast.USub):
            return "0" if _is_zero(d) else "-(%s)" % d
        if isinstance(node.op, ast.UAdd):
            return d
    if isinstance(node, ast.BinOp):
        a, b = _src(node.left), _src(node.right)
        da, db = derive(node.left, var), derive(node.right, var)
        if isinstance(node.op, ast.Add):
            return _add(da, db)
        if isinstance(node.op, ast.Sub):
            return _sub(da, db)
        if isinstance(node.op, ast.Mult):
            return _add(_mul(da, b), _mul(a, db))
        if isinstance(node.op, ast.Div):
            return _sub(_mul(da, "1 / (%s)" % b), _mul(db, "(%s) / ((%s) * (%s))" % (a, b, b)))
        if isinstance(node.op, ast.Pow):
            if _is_zero(db):  # u ** c
                return _mul(da, "(%s) * (%s) ** ((%s) - 1)" % (b, a, b))
            return _add(
                _mul(da, "(%s) * (%s) ** ((%s) - 1)" % (b, a, b)),
                _mul(db, "(%s) ** (%s) * log(%s)" % (a, b, a)),
            )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        f = node.func.id
        args = node.args
        if len(args) == 1 and f not in ("where", "maximum", "minimum"):
            factor = _chain_factor(f, args[0])
            if factor is not None:
                du = derive(args[0], var)
                if _is_zero(du) or _is_zero(factor):
                    return "0"
                return _mul(du, factor)
        if f == "where" and len(args) == 3:
            da, db = derive(args[1], var), derive(args[2], var)
            if _is_zero(da) and _is_zero(db):
                return "0"
            return "where(%s, %s, %s)" % (_src(args[0]), da, db)
        if f in ("maximum", "minimum") and len(args) == 2:
            # the registry op's partials: an input loses its gradient only where the other
            # wins, shares it on ties, and keeps it at NaN (nothing wins)
            a, b = _src(args[0]), _src(args[1])
            da, db = derive(args[0], var), derive(args[1], var)
            lt, gt = ("<", ">") if f == "maximum" else (">", "<")
            share = "where((%s) == (%s), 0.5, 1)" % (a, b)
            wa = "where((%s) %s (%s), 0, %s)" % (a, lt, b, share)
            wb = "where((%s) %s (%s), 0, %s)" % (a, gt, b, share)
            return _add(_mul(da, wa), _mul(db, wb))
    raise ValueError(
        "nbgrad.elementwise: cannot differentiate %r (see the docstring of "
        "nbgrad.ops.symbolic for the accepted vocabulary)" % _src(node)
    )


def _formula(fn):
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)))
    if isinstance(fdef, ast.Lambda):
        return [a.arg for a in fdef.args.args], fdef.body
    body = [
        s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        raise ValueError("nbgrad.elementwise: the function body must be a single return expression")
    return [a.arg for a in fdef.args.args], body[0].value


class _Rename(ast.NodeTransformer):
    def visit_Name(self, node):
        node.id = _RENAME.get(node.id, node.id)
        return node


def elementwise(fn=None, *, name=None):
    """Decorator: a scalar formula -> a differentiable, compiled elementwise nbgrad op."""
    if fn is None:
        return lambda f: elementwise(f, name=name)
    argnames, expr = _formula(fn)
    expr = _Rename().visit(expr)
    # internal names: x, y, z, ... are free for the user too; keep theirs
    partials = tuple(derive(expr, a) for a in argnames)
    opname = name or "elementwise." + fn.__name__
    camel = "".join(p.capitalize() for p in fn.__name__.split("_"))
    op = OpDef(
        opname,
        "pointwise",
        formula=_src(expr),
        partials=partials,
        args=tuple(argnames),
        node=camel + "Backward",
        rule="float",
        method=False,
        inplace=False,
    )
    op.vjp = vjp_of(op)
    register(op)

    def apply(*args):
        if len(args) != len(argnames):
            raise TypeError(
                "%s() takes %d arguments (%d given)" % (fn.__name__, len(argnames), len(args))
            )
        if not any(isinstance(a, Tensor) for a in args):
            raise TypeError("%s(): expected at least one Tensor argument" % fn.__name__)
        first = next(i for i, a in enumerate(args) if isinstance(a, Tensor))
        if first != 0:  # promotion/dispatch expects a tensor first: wrap scalars
            args = tuple(
                a if isinstance(a, Tensor) else tensor(a, dtype=args[first].dtype) for a in args
            )
        return pointwise(op, args)

    apply.__name__ = fn.__name__
    apply.__doc__ = fn.__doc__
    apply.op = op
    apply.partials = dict(zip(argnames, partials))
    return apply
