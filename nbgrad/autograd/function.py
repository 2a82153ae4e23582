"""``nbgrad.autograd.Function``: user-defined ops with a custom backward.

The ctx *is* the graph node (as in PyTorch): ``<Name>Backward`` is a subclass of ``Node``
created per Function class, so user Functions run through the same engine code path and hooks
as built-in ops.  Forward runs under no_grad; backward runs with grad mode = create_graph.
"""

import functools
import inspect
import traceback
import warnings

from .. import _flags, grad_mode
from .._tensor import CM_CUSTOM_FUNCTION, Tensor, view_base
from ..creation import zeros, zeros_like
from .anomaly_mode import STATE as ANOMALY
from .dual import set_tangent, tangent_of
from .graph import Node, edge
from .saved import ERR_FREED, SavedOutput, SavedTensor

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction"]


class FunctionCtx:
    """What ``forward``/``setup_context`` and ``backward`` receive as ``ctx``."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument %d is "
                    "of type %s" % (i, type(t).__name__)
                )
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """Base of every ``<Name>Backward`` node class."""

    _forward_cls = None
    _tpos = None  # positions of the Tensor inputs among all inputs, None if all are Tensors
    _runs_undefined = True  # backward runs even if no output got a gradient (PyTorch)
    materialize_grads = True
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    _saved = None
    _freed = False

    def name(self):
        return type(self).__name__

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(ERR_FREED)
        if self._saved is None:  # read inside forward/setup_context: the raw tensors
            return tuple(self.to_save)
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    def apply(self, grads):
        if self._freed and self._saved is not None:
            raise RuntimeError(ERR_FREED)
        grads = list(grads)
        for i, g in enumerate(grads):
            if g is None and self.materialize_grads:
                shape, dtype, device = self._out_meta[i]
                if shape is not None:
                    grads[i] = zeros(*shape, dtype=dtype, device=device)
        result = _user_backward(self._forward_cls)(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        tpos = self._tpos
        n = len(self.next_functions) if tpos is None else self._n_inputs
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(
                "function %s returned an incorrect number of gradients (expected "
                "%d, got %d)" % (self.name(), n, len(result))
            )
        for i, r in enumerate(result):
            if r is None:
                continue
            if not isinstance(r, Tensor):
                raise RuntimeError("expected Variable or None (got %s)" % type(r).__name__)
            if tpos is not None and i not in tpos:
                raise RuntimeError(
                    "function %s returned a gradient different than None at "
                    "position %d, but the corresponding forward input was not a "
                    "Variable" % (self.name(), i + 1)
                )
        # one gradient per Tensor input: the node's edges (next_functions) are Tensor inputs only
        return result if tpos is None else tuple(result[i] for i in tpos)

    def release(self):
        if self._saved is not None:
            self._freed = True
            self._saved = ()

    def __repr__(self):
        return "<nbgrad.autograd.function.%s object at %#x>" % (self.name(), id(self))


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Subclass with static ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grads)``; call ``apply``."""

    def __init__(self, *args, **kwargs):
        warnings.warn(
            "%s should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an "
            "autograd function will raise an error in a future version of PyTorch." % type(self),
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is "
            "deprecated. Please use new-style autograd function with static "
            "forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for "
            "your custom autograd.Function to use it with backward mode "
            "AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom "
            "autograd.Function to use it with forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls.__new__(cls._backward_cls)
        custom_setup = cls.setup_context is not Function.setup_context
        if custom_setup:  # setup_context sees forward's arguments with defaults (PyTorch)
            bound = _signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        # inputs: the positional arguments, then keyword arguments' values (PyTorch)
        inputs = args + tuple(kwargs.values()) if kwargs else args
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in inputs)
        ctx.needs_input_grad = needs
        record = grad_mode.STATE.enabled and any(needs)
        dual = _flags.FWD and any(tangent_of(a) is not None for a in inputs)
        prev, prev_fwd = grad_mode.STATE.enabled, _flags.FWD
        grad_mode.STATE.enabled = False
        _flags.FWD = False  # the Function's jvp, not the ops inside forward, gives tangents
        try:
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            grad_mode.STATE.enabled = prev
            _flags.FWD = prev_fwd
        tangents = _run_jvp(cls, ctx, inputs) if dual else None
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        dirty = {id(t) for t in ctx.dirty_tensors}
        nondiff = {id(t) for t in ctx.non_differentiable}
        inputs_by_id = {id(a): a for a in inputs if isinstance(a, Tensor)}
        for t in ctx.dirty_tensors:
            if not any(o is t for o in outs):
                raise RuntimeError(
                    "Some elements marked as dirty during the forward method were "
                    "not returned as output. The inputs that are modified inplace "
                    "must all be outputs of the Function."
                )
            if record and t._grad_fn is None and t._requires_grad:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation."
                )
            t._vc[0] += 1
        if not record:
            return _with_tangents(outputs, tangents)
        tensors = [a for a in inputs if isinstance(a, Tensor)]
        Node.__init__(
            ctx,
            tuple([edge(a) for a in tensors]),
            tuple([(a._data.shape, a._dtype) for a in tensors]),
        )
        if len(tensors) != len(inputs):
            ctx._tpos = tuple(i for i, a in enumerate(inputs) if isinstance(a, Tensor))
            ctx._n_inputs = len(inputs)
        ctx._nout = len(outs)
        if _flags.TAPS and ANOMALY.enabled:  # NOTE [one flag]
            ctx._trace = traceback.extract_stack()[:-1]
        new_outs, meta = [], []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                new_outs.append(o)
                meta.append((None, None, None))
                continue
            meta.append((o._data.shape, o._dtype, o.device))
            if id(o) in nondiff:
                o._requires_grad = False
                new_outs.append(o)
                continue
            if id(o) in inputs_by_id and id(o) not in dirty:
                o = Tensor._make(o._data, None, 0, o._vc, view_base(o))
                o._cmeta = CM_CUSTOM_FUNCTION  # in-place on it is forbidden (check_inplace)
            elif o._basev is not None and id(o) not in dirty:
                # a view made inside forward: PyTorch's custom-Function view (not a no_grad one)
                o._cmeta = CM_CUSTOM_FUNCTION
            if o._dtype.is_inexact:
                o._grad_fn = ctx
                o._output_nr = i
                o._requires_grad = True
            new_outs.append(o)
        ctx._out_meta = tuple(meta)
        if ctx.dirty_tensors:
            _rebase_dirty(ctx, new_outs, dirty, tensors)
        saved = []
        for t in ctx.to_save:
            if t is None:
                saved.append(None)
            elif any(t is o for o in new_outs):
                saved.append(SavedOutput(t))
            else:
                saved.append(SavedTensor(t))
        ctx._saved = saved
        return _with_tangents(new_outs[0] if single else tuple(new_outs), tangents)


def _rebase_dirty(ctx, outs, dirty, tensors):
    """Inputs modified in place (mark_dirty) rewrite their base's history like a built-in
    in-place op: a dirty view gets CopySlices on its base, the other views of a dirty tensor
    read its new history (NOTE [views follow their base])."""
    from .inplace import _rebase, views_follow  # cycle: inplace sits above ops

    for i, o in enumerate(outs):
        if not isinstance(o, Tensor) or id(o) not in dirty or o._grad_fn is not ctx:
            continue
        base = o._basev
        if base is not None:
            if i != 0 or not tensors or tensors[0] is not o:
                raise RuntimeError(
                    "nbgrad: a view marked dirty must be the first input and the first output "
                    "of the custom Function (PyTorch's CopySlices assumes it)"
                )
            _rebase(o, ctx)
        else:
            views_follow(o, None)


@functools.lru_cache(maxsize=None)
def _signature(fn):
    return inspect.signature(fn)


def _user_backward(cls):
    """``backward``, or ``vjp`` (its alias) when that is what the Function implements."""
    b, v = cls.backward, cls.vjp
    if v is Function.vjp:
        return b
    if b is not Function.backward:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            "should only implement one of them."
        )
    return v


def _run_jvp(cls, ctx, args):
    """Forward-mode AD through a custom Function: its ``jvp(ctx, *tangents)`` (PyTorch's
    contract: one tangent per forward input, zeros for tensors without one, None otherwise).
    A Function without ``jvp`` raises PyTorch's NotImplementedError."""
    tans = tuple(
        (tangent_of(a) if tangent_of(a) is not None else zeros_like(a))
        if isinstance(a, Tensor)
        else None
        for a in args
    )
    res = cls.jvp(ctx, *tans)
    return res if isinstance(res, tuple) else (res,)


def _with_tangents(outputs, tangents):
    if tangents is not None:
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        for o, t in zip(outs, tangents):
            if isinstance(o, Tensor) and isinstance(t, Tensor) and o._dtype.is_inexact:
                set_tangent(o, t)
    return outputs


def once_differentiable(fn):
    """Run ``backward`` under no_grad; differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = grad_mode.STATE.enabled
        grad_mode.STATE.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            grad_mode.STATE.enabled = prev
        if not prev:
            return outputs
        needs = any(isinstance(a, Tensor) and a._requires_grad for a in args)
        if not needs:
            return outputs
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        err_inputs = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        wrapped = tuple(
            _DelayedError.apply(o, *err_inputs)[0] if isinstance(o, Tensor) else o for o in tup
        )
        return wrapped if isinstance(outputs, tuple) else wrapped[0]

    return wrapper


class _DelayedError(Function):
    @staticmethod
    def forward(ctx, out, *inputs):
        return (Tensor._make(out._data.copy()),)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )
