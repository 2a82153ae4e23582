"""OpDef and the REGISTRY dict; node classes named like PyTorch's (``MulBackward0``).

NOTE [formula vocabulary]: pointwise formulas and partial derivatives are expression strings over
the argument names (``x``, ``y``, ``z``), ``out`` (the result), the op's scalar attributes, and
the names exported by kernels/scalar.py.  What an op saves for backward is inferred from the names
its partials use, as PyTorch's codegen infers it from derivatives.yaml.
"""
from ..autograd.graph import Node
from ..kernels.build import names_in

REGISTRY = {}
_NODE_CLASSES = {}


class OpDef:
    """One op.  ``kind`` is 'pointwise' (formula + partials) or 'structured' (Python forward
    over arrays/kernels and a ``vjp`` written in nbgrad ops)."""

    __slots__ = ("name", "kind", "node", "formula", "partials", "args", "attrs", "saves",
                 "rule", "numpy", "method", "inplace", "hints", "differentiable",
                 "vjp", "jvp", "bool_args", "notes", "kernels")

    def __init__(self, name, kind, *, node=None, formula=None, partials=(), args=("x",),
                 attrs=(), rule="promote", numpy=None, method=True, inplace=True, vjp=None,
                 jvp=None, bool_args=(), notes="", **hints):
        self.name = name
        self.kind = kind
        self.node = node_class(node) if node else None
        self.formula = formula
        self.partials = tuple(partials)
        self.args = tuple(args)
        self.attrs = tuple(attrs)
        self.rule = rule
        self.numpy = numpy
        self.method = method
        self.inplace = inplace
        self.hints = hints  # test hints: domain, domain_y, kinks
        self.vjp = vjp
        self.jvp = jvp
        self.bool_args = tuple(bool_args)
        self.notes = notes
        self.differentiable = bool(node)
        self.kernels = {}  # (compute dtype, with attrs) -> forward kernel, filled on first use
        used = set()
        for p in self.partials:
            if p is not None:
                used |= names_in(p)
        self.saves = tuple(n for n in self.args + ("out",) if n in used)

    def __repr__(self):
        return "OpDef(%r)" % self.name


class FnNode(Node):
    """Node of a registry op: ``apply`` calls the op's backward with this node as context."""

    __slots__ = ("op", "saved", "attrs")
    _nout = 1
    _released = False

    def apply(self, grads):
        if self._released:
            from ..autograd.graph import ERR_FREED
            raise RuntimeError(ERR_FREED)
        return self.op(self, grads)

    def release(self):
        if self.saved:
            self.saved = None
            self._released = True

    def unpack(self, name):
        s = self.saved[name]
        return s.unpack(self) if hasattr(s, "unpack") else s

    def array(self, name):
        s = self.saved[name]
        return s.array(self) if hasattr(s, "array") else s

    def __getattr__(self, item):  # _saved_self / _saved_other like PyTorch's nodes
        if item == "_saved_self_sym_sizes":
            return list(object.__getattribute__(self, "_in_meta")[0][0])
        if item.startswith("_saved_"):
            key = {"self": "x", "other": "y", "result": "out"}.get(item[7:], item[7:])
            saved = object.__getattribute__(self, "saved")
            if saved is None:
                if object.__getattribute__(self, "_released"):
                    from ..autograd.graph import ERR_FREED
                    raise RuntimeError(ERR_FREED)
            elif key in saved:
                return self.unpack(key)
        raise AttributeError(item)


def node_class(name):
    """The node class for a PyTorch node name; ``torch::autograd::CopySlices`` gives class
    ``CopySlices`` whose ``name()`` is the full string, as in PyTorch."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        short = name.rsplit("::", 1)[-1]
        ns = {"__slots__": ()}
        if short != name:
            ns["_name"] = name
        cls = _NODE_CLASSES[name] = type(short, (FnNode,), ns)
    return cls


def register(op):
    if op.name in REGISTRY:
        raise ValueError("op %r registered twice" % op.name)
    REGISTRY[op.name] = op
    return op
