"""The op registry: one ``OpDef`` per op declares its whole surface and its derivative.

An op is declared once, either as a formula line in ops/pointwise.py or with ``@op(...)`` on its
forward function.  From the declaration come: the public function (``nbgrad.<name>`` and its
aliases), the ``Tensor`` method, the in-place method ``<name>_``, the ``out=`` keyword, the
node classes (one name per overload), what is saved, the backward (``vjp``) and the forward-mode
rule.  ``_tensor_methods.py`` and ``nbgrad/__init__.py`` install the surface from REGISTRY;
tests/test_registry.py fails for any declared variant that is missing.

NOTE [formula vocabulary]: pointwise formulas and partial derivatives are expression strings over
the argument names (``x``, ``y``, ``z``), ``out`` (the result), the op's scalar attributes, and
the kernel vocabulary.  What a pointwise op saves is inferred from the names its partials use, as
PyTorch's codegen infers it from derivatives.yaml; a structured op declares ``saves``.
"""

import functools
import traceback

import numpy as np

from .. import _flags
from .._tensor import ERR_PARTIAL_OVERLAP, Tensor, overlap_status, view_meta
from ..autograd.anomaly_mode import STATE as _anomaly
from ..autograd.graph import Node, SavedOutput, SavedTensor, edge, next_seq
from ..autograd.profiler import op_call
from ..autograd.saved import ERR_FREED
from ..grad_mode import STATE
from ..kernels.build import names_in
from ..kernels.cuda.array import DeviceArray

REGISTRY = {}
_NODE_CLASSES = {}

# variants: where an op appears besides the registry
FUNCTION, METHOD, INPLACE, OUT = "function", "method", "inplace", "out"
# forward-mode rules: tangents from the registry partials (pointwise ops, in dispatch), by
# applying the op to the tangent (ops linear in their first argument), by transposing the VJP
# (any other differentiable op), or none needed (no gradient, or a composite of other ops)
ELEMENTWISE, LINEAR, TRANSPOSE, COMPOSITE = "elementwise", "linear", "transpose", "composite"
FORWARD_RULES = {}  # rule -> fn(impl) -> forward-mode impl; filled by autograd.forward_ad


class OpDef:
    """One op.  ``kind``: 'pointwise' (formula + partials, kernels generated), 'compare' (no
    gradient, numpy ufunc) or a family name for ops with a Python forward over kernels and a
    ``vjp`` written in nbgrad ops ('reduction', 'shape', 'indexing', 'linalg', 'softmax', 'nn')."""

    __slots__ = (
        "_arg_index",
        "name",
        "kind",
        "node",
        "nodes",
        "formula",
        "partials",
        "args",
        "attrs",
        "saves",
        "saves_for",
        "rule",
        "numpy",
        "variants",
        "aliases",
        "hints",
        "differentiable",
        "vjp",
        "jvp",
        "bool_args",
        "kernels",
        "fn",
        "impl",
        "_forward_mode",
        "_cache",
        "slots",
    )

    def __init__(
        self,
        name,
        kind,
        *,
        node=None,
        formula=None,
        partials=(),
        args=("x",),
        attrs=(),
        rule="promote",
        numpy=None,
        variants=(),
        aliases=(),
        vjp=None,
        jvp=None,
        saves=None,
        bool_args=(),
        kernels=None,
        **hints,
    ):
        self.name = name
        self.kind = kind
        # node: one name, or {overload: name} when overloads record different nodes
        names = node if isinstance(node, dict) else ({None: node} if node else {})
        self.nodes = {k: node_class(v) for k, v in names.items()}
        self.node = next(iter(self.nodes.values()), None)
        self.formula = formula
        self.partials = tuple(partials)
        self.args = tuple(args)
        self.attrs = tuple(attrs)
        self.rule = rule
        self.numpy = numpy
        self.variants = frozenset(variants)
        self.aliases = tuple(aliases)
        self.hints = hints  # test hints: domain, domain_y, kinks
        self.vjp = vjp
        self.bool_args = tuple(bool_args)
        # the args with a slot in the node: masks and conditions have none (PyTorch's
        # WhereBackward0 has two next_functions, self and other)
        self.slots = tuple(i for i, n in enumerate(self.args) if n not in self.bool_args)
        self._arg_index = {n: i for i, n in enumerate(self.args)}
        self.differentiable = bool(self.nodes)
        self.jvp = jvp or (
            ELEMENTWISE if kind == "pointwise" else TRANSPOSE if self.differentiable else COMPOSITE
        )
        self.kernels = kernels or {}  # device -> kernel module (structured ops)
        self.fn = None  # the public function, set by define()
        self.impl = None
        self._forward_mode = None
        self._cache = {}  # pointwise: (compute dtype, with attrs) -> forward kernel
        self.saves_for = None
        if saves is None:  # pointwise: what the partials read
            saves, saves_for = _inferred_saves(self.args, self.partials)
            if kind == "pointwise":
                self.saves_for = saves_for
        self.saves = saves if isinstance(saves, dict) else tuple(saves)  # or per overload
        # PyTorch's names for them on the node (``_saved_self``, ``_saved_exponent``, ...)
        names = hints.pop("saved_names", None)
        double = hints.pop("double", None)
        # an attribute a node of this class may lack (plain add's alpha): its value then
        defaults = hints.pop("attr_defaults", None)
        for cls in self.nodes.values():
            if double is not None:
                cls._double = double
            declared = saves.values() if isinstance(saves, dict) else (saves,)
            cls._declared_saves = cls._declared_saves.union(*declared)
            if names is not None:
                cls._torch_names = names
            if kind == "pointwise" and (self.attrs or not cls._attr_names):
                cls._attr_names = self.attrs
            if defaults:
                cls._attr_defaults = dict(cls._attr_defaults, **defaults)

    def __repr__(self):
        return "OpDef(%r)" % self.name

    def saves_of(self, inputs):
        """What a node of this op saves for these inputs: all declared saves, or for a pointwise
        op only what the partials of the inputs that require grad read (see _inferred_saves)."""
        if self.saves_for is None:
            return self.saves
        mask = 0
        for i, t in enumerate(inputs):
            if isinstance(t, Tensor) and t._requires_grad:
                mask |= 1 << i
        return self.saves_for[mask]

    @property
    def public_names(self):
        return (self.name,) + self.aliases

    def define(self, impl):
        """Make ``impl`` this op's public function: adds ``out=`` when declared and the
        forward-mode rule (one flag check while no dual level is active)."""
        self.impl = impl
        impl.op = self
        fwd = self.jvp if self.jvp in (LINEAR, TRANSPOSE) else None
        if fwd is None and OUT not in self.variants and self.kind == "pointwise":
            # a pointwise op's impl enters through dispatch, which tests the profiler flag
            # itself (NOTE [profiler flag]); every other op tests it here, or the profiler
            # and nbgrad.compile's capture would not see it (argmax, nonzero, outer, ...)
            self.fn = impl
            return impl
        op = self

        if OUT in self.variants:

            def public(*args, out=None, **kwargs):
                if _flags.FWD or _flags.PROFILE:
                    res = op._call(args, kwargs, fwd)
                else:
                    res = impl(*args, **kwargs)
                return res if out is None else write_out(res, out, op.name, args)
        else:

            def public(*args, **kwargs):
                if _flags.FWD or _flags.PROFILE:
                    return op._call(args, kwargs, fwd)
                return impl(*args, **kwargs)

        self.fn = functools.wraps(impl)(public)
        self.fn.op = self
        return self.fn

    def _call(self, args, kwargs, fwd=True):
        """The slow path: forward mode inside a dual level, an event while profiling."""
        f = self.impl
        if _flags.FWD and fwd:
            f = self._forward_mode
            if f is None:
                f = self._forward_mode = FORWARD_RULES[self.jvp](self.impl)
        if _flags.PROFILE:
            return op_call(self.name, f, args, kwargs)
        return f(*args, **kwargs)

    def record(self, arr, inputs, *, overload=None, attrs=None, saved=None, view_of=None):
        """Wrap the forward result ``arr`` and, when an input requires grad, record this op's
        node (of ``overload``) with its declared saves; see ``record``."""
        if not (STATE.enabled and _wants_grad(inputs)):
            return record(arr, None, (), None, view_of=view_of)
        slots = grads = inputs
        if self.bool_args:  # masks and conditions take no gradient and have no slot
            grads = [None if n in self.bool_args else t for n, t in zip(self.args, inputs)]
            slots = [inputs[i] for i in self.slots]
        names = _pick(self.saves, overload) if overload is not None else self.saves_of(grads)
        index = self._arg_index
        return record(
            arr,
            self.nodes.get(overload),
            slots,
            _pick(self.vjp, overload),
            attrs=attrs,
            saved=saved,
            view_of=view_of,
            saves=[(n, inputs[index[n]] if n != "out" else None) for n in names],
        )


def _wants_grad(inputs):
    """Whether any of ``inputs`` (Tensors, or None for slots without a gradient) requires
    grad: a plain loop, twice as fast as ``any()`` over a generator."""
    for t in inputs:
        if isinstance(t, Tensor) and t._requires_grad:
            return True
    return False


def _inferred_saves(args, partials):
    """A pointwise op's saves, inferred from its partials as PyTorch's codegen infers them from
    derivatives.yaml: ``(all, per_mask)``.  ``per_mask[m]`` is what a node saves when the inputs
    in bitmask ``m`` require grad: the arguments read by *their* partials only (``x * 2`` saves
    no ``x``: only ``d/dx = y`` is needed), and ``out`` whenever any partial reads it (PyTorch
    saves results unconditionally).  Precomputed, so dispatch looks it up by the mask."""
    used = [names_in(p) if p is not None else set() for p in partials]
    everything = set().union(*used)
    per_mask = []
    for mask in range(1 << len(args)):
        need = set().union(*[u for i, u in enumerate(used) if mask >> i & 1])
        per_mask.append(
            tuple(n for n in args + ("out",) if n in need or n == "out" and n in everything)
        )
    return tuple(n for n in args + ("out",) if n in everything), tuple(per_mask)


def record(arr, cls, inputs, vjp, *, attrs=None, saved=None, view_of=None, saves=()):
    """The one recorder: wrap ``arr`` (an array, or a tuple of arrays for several outputs) and,
    when grad mode is on and an input requires grad, create the node of class ``cls``.

    ``inputs`` are the node's input slots (Tensors, or None for slots without a gradient);
    ``saves`` is ``[(name, value)]`` with value None for ``out`` (the result itself); ``saved``
    adds other values by name; ``view_of``: the result is a view of that tensor (it shares its
    version counter and base).
    """
    multi = type(arr) is tuple
    if not (STATE.enabled and _wants_grad(inputs)):
        if multi:
            return tuple(Tensor._make(_arr(a)) for a in arr)
        if view_of is None:
            return Tensor._make(_arr(arr))
        return _view(arr, None, view_of)
    node = new_node(cls, inputs, vjp, attrs)
    if multi:
        node._nout = len(arr)
        outs = tuple(Tensor._make(_arr(a), node, i) for i, a in enumerate(arr))
    elif view_of is None:
        outs = Tensor._make(_arr(arr), node, 0)
    else:
        outs = _view(arr, node, view_of)
    s = {}
    for name, value in saves:
        s[name] = (
            SavedOutput(outs)
            if name == "out"
            else (SavedTensor(value) if isinstance(value, Tensor) else value)
        )
    if saved:
        for k, v in saved.items():
            s[k] = SavedTensor(v) if isinstance(v, Tensor) else v
    node.saved = s or None
    return outs


def result(arr, name, inputs, vjp, saved=None, attrs=None):
    """``record`` for nodes that are no registry op (backward helpers, copies) by node name."""
    return record(arr, node_class(name), inputs, vjp, attrs=attrs, saved=saved)


def _arr(a):
    return a if type(a) is np.ndarray or type(a) is DeviceArray else np.asarray(a)


def _pick(v, overload):
    return v[overload] if isinstance(v, dict) else v


def _view(arr, node, x):
    base = x._basev
    if base is None:
        base = x
    t = Tensor._make(_arr(arr), node, 0, x._vc, base)
    if not STATE.enabled or x._cmeta or x._inference:
        # NOTE [view creation meta] (_tensor.py): a view made under no_grad requires grad
        # while its base does; an in-place op on it later with grad enabled is an error
        view_meta(t, x, base, False)
    return t


def new_node(cls, inputs, vjp, attrs=None):
    """A node of class ``cls`` whose input slots are ``inputs`` (Tensors, or None for slots that
    take no gradient).  The one node recorder; dispatch's two hot-path inlines (``binary``,
    ``unary``) set the same fields (NOTE [per-op cost])."""
    node = cls.__new__(cls)
    nf, meta = [], []
    for t in inputs:
        if isinstance(t, Tensor):
            nf.append(edge(t))
            meta.append((t._data.shape, t._dtype))
        else:
            nf.append((None, 0))
            meta.append(None)
    node.next_functions = tuple(nf)
    node._in_meta = tuple(meta)
    node._seq = next_seq()
    node.op = vjp
    node.attrs = attrs
    node.saved = None
    if _flags.TAPS:
        taps(node)
    return node


def taps(node):
    """What listeners need from every new node (today: anomaly mode's forward trace)."""
    if _anomaly.enabled:
        node._trace = traceback.extract_stack()[:-3]


def write_out(res, out, name, inputs=()):
    """The ``out=`` variant: copy into ``out`` (resized if empty), bump its version.
    ``inputs``: the op's arguments; one that partially overlaps ``out`` is PyTorch's error."""
    if out is None:
        return res
    for x in inputs:
        for t in x if isinstance(x, (list, tuple)) else (x,):  # cat/stack: a list of tensors
            if isinstance(t, Tensor) and overlap_status(t._data, out._data) == "partial":
                raise RuntimeError(ERR_PARTIAL_OVERLAP)
    if STATE.enabled and (res._requires_grad or out._requires_grad):
        raise RuntimeError(
            "%s(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad." % name
        )
    if out._data.shape != res._data.shape:
        if out._data.size == 0:  # resized with the result's layout, as PyTorch's iterator
            r = res._data
            perm = list(range(r.ndim))
            if r.size and not r.flags.c_contiguous:  # dims outermost first, by stride
                perm.sort(key=lambda d: -abs(r.strides[d]))
            arr = np.empty([r.shape[d] for d in perm], out._data.dtype)
            out._data = arr.transpose(np.argsort(perm)) if perm != sorted(perm) else arr
        else:
            raise RuntimeError(
                "output with shape %s doesn't match the broadcast shape %s"
                % (list(out._data.shape), list(res._data.shape))
            )
    out._data[...] = res._data
    out._vc[0] += 1
    return out


class _Freed(dict):
    """The ``saved`` of a node whose saved values were released (empty, like no saves): a
    sentinel in the ``saved`` slot instead of a per-node flag (NOTE [per-node cost]: setting a
    non-slot attribute makes the node a ``__dict__``)."""

    def __setitem__(self, key, value):
        raise RuntimeError(ERR_FREED)


_FREED = _Freed()


class FnNode(Node):
    """Node of a registry op: ``apply`` calls the op's backward with this node as context."""

    __slots__ = ("op", "saved", "attrs")
    _nout = 1
    _declared_saves = frozenset()  # names any node of this class may save (else: None)
    _torch_names = {"self": "x", "other": "y", "result": "out"}  # _saved_<torch name> -> ours
    _attr_names = ()  # a pointwise node's scalar attributes (node.attrs[0]), by name
    _attr_defaults = {}  # values of those a node of another overload does not carry

    _double = None  # NOTE [backward nodes]: zeros? or (zeros?, double-backward node name)

    def apply(self, grads):
        if self.saved is _FREED:
            raise RuntimeError(ERR_FREED)
        if self._double is not None and STATE.enabled:
            return _linked(self, self.op(self, grads))
        return self.op(self, grads)

    def release(self):
        if self.saved:
            self.saved = _FREED

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
            cls = type(self)
            key = cls._torch_names.get(item[7:], item[7:])
            if key in cls._attr_names:
                vals = object.__getattribute__(self, "attrs")[0]
                i = cls._attr_names.index(key)
                if i < len(vals):
                    return vals[i]
                if key in cls._attr_defaults:
                    return cls._attr_defaults[key]
            saved = object.__getattribute__(self, "saved")
            if saved is _FREED:
                raise RuntimeError(ERR_FREED)
            if saved is not None and key in saved:
                return self.unpack(key)
            if key in cls._declared_saves:  # not needed by this node: not saved
                return None
        raise AttributeError(item)


# NOTE [backward nodes]: where PyTorch's backward of an op is one differentiable function of
# the op's inputs (``max_pool2d_with_indices_backward(grad, self, ...)``,
# ``threshold_backward(grad, result, 0)``, ``native_layer_norm_backward``...), every gradient
# it returns under create_graph is in the graph whenever an input requires grad, even one
# that does not depend on it (its double backward gives that input zeros, or nothing).
# nbgrad's vjp computes such a gradient from the incoming gradient alone, so the op declares
# ``double=zeros`` (or ``(zeros, node name)``) and a gradient left outside the graph is linked
# to the op's inputs by a node named as PyTorch's (``<Name>BackwardBackward0``) that gives them
# zeros (``zeros``) or no gradient.  Cost: one class-attribute test per node under create_graph.


def _link_vjp(node, grads):
    zeros, metas = node.attrs
    if not zeros:
        return (None,) * len(metas)
    return tuple(_zeros(m) for m in metas)


def _zeros(meta, like=None):
    """Zeros for an input slot without a gradient, on the device of ``like`` (a gradient of
    the same node) when given."""
    shape, dtype = meta
    if like is not None and type(like._data) is DeviceArray:
        from .transfer import zeros_on  # lazy: the CUDA path loads on first use

        return Tensor._make(zeros_on(shape, dtype.np, like.device))
    return Tensor._make(np.zeros(shape, dtype.np))


def _linked(node, gx):
    """``gx`` (the vjp's result) with each gradient outside the graph linked to ``node``'s
    inputs (NOTE [backward nodes])."""
    edges = [(e, m) for e, m in zip(node.next_functions, node._in_meta) if e[0] is not None]
    if not edges:
        return gx
    zeros = node._double
    name = node.name()
    if isinstance(zeros, tuple):
        zeros, name = zeros
    else:  # e.g. MaxPool2DWithIndicesBackward0 -> MaxPool2DWithIndicesBackwardBackward0
        name = name[: -len("Backward0")] + "BackwardBackward0"
    cls = node_class(name)
    out = list(gx)
    for i, g in enumerate(out):
        if g is None or g._requires_grad:
            continue
        link = cls.__new__(cls)
        link.next_functions = tuple(e for e, _ in edges)
        link._in_meta = tuple(m for _, m in edges)
        link._seq = next_seq()
        link.op = _link_vjp
        link.saved = None
        link.attrs = (zeros, link._in_meta)
        if _flags.TAPS:
            taps(link)
        out[i] = Tensor._make(g._data, link)
    return tuple(out)


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


def op(name, kind, **decl):
    """Decorator: declare op ``name`` (see OpDef) with the function below as its forward and
    public function; returns the public function."""

    def deco(impl):
        return register(OpDef(name, kind, **decl)).define(impl)

    return deco


def internal_op(name, kind, **decl):
    """``op`` for a helper op that is no public surface (a backward built from other ops'
    backwards): declared the same way, but not in REGISTRY."""

    def deco(impl):
        return OpDef(name, kind, **decl).define(impl)

    return deco


def implements(name):
    """Decorator: the function below is the public function of the already declared ``name``
    (a pointwise op whose PyTorch signature needs more than the generated one)."""

    def deco(impl):
        op = REGISTRY[name]
        op.fn = op.impl = impl  # takes out= itself; pointwise forward mode is in dispatch
        return impl

    return deco


def missing_variants(op, namespace):
    """The declared variants of ``op`` that ``namespace`` (the ``nbgrad`` module) and ``Tensor``
    do not provide: what tests/test_registry.py asserts is empty for every op."""
    import inspect

    missing = []
    fn = op.fn or missing  # an op never defined has no public function at all
    for name in op.public_names:
        if FUNCTION in op.variants and getattr(namespace, name, None) is not fn:
            missing.append("nbgrad.%s" % name)
        if METHOD in op.variants and getattr(Tensor, name, None) is not fn:
            missing.append("Tensor.%s" % name)
        if INPLACE in op.variants and not callable(getattr(Tensor, name + "_", None)):
            missing.append("Tensor.%s_" % name)
    if OUT in op.variants and (
        op.fn is None or "out" not in inspect.signature(op.fn).parameters and not _wraps_out(op.fn)
    ):
        missing.append("%s(out=)" % op.name)
    if op.differentiable and op.vjp is None:
        missing.append("%s backward" % op.name)
    return missing


def _wraps_out(fn):
    return (
        "out" in fn.__code__.co_varnames[: fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount]
    )
