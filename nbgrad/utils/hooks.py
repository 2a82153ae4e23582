"""``RemovableHandle``: what every ``register_*hook`` returns.

Hook registries are ``dict``s keyed by handle id (insertion ordered), so ``prepend=True`` is a
rebuild with the new id first and removal is a ``pop``.
"""
import itertools
import weakref

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Removes its hook from one or more registries; idempotent; a context manager."""

    _ids = itertools.count()
    __slots__ = ("id", "_refs", "__weakref__")

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.id = next(RemovableHandle._ids)
        dicts = [hooks_dict] + (list(extra_dict) if isinstance(extra_dict, (list, tuple))
                                else ([extra_dict] if extra_dict is not None else []))
        self._refs = tuple(_ref(d) for d in dicts)

    def remove(self):
        for r in self._refs:
            d = r()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _Strong:
    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def __call__(self):
        return self.d


def _ref(d):
    try:
        return weakref.ref(d)
    except TypeError:  # plain dicts are not weak-referenceable
        return _Strong(d)


class HookDict(dict):
    """A dict that can be weakly referenced (so a handle never keeps a graph alive)."""
    __slots__ = ("__weakref__",)


def prepend_to(d, key):
    """Move ``key`` to the front of ordered dict ``d``."""
    items = list(d.items())
    d.clear()
    for k, v in items:
        if k == key:
            d[k] = v
    for k, v in items:
        if k != key:
            d[k] = v


class BackwardHook:
    """Module full backward (pre-)hooks: identity Functions around inputs and outputs whose
    node pre-hooks see grad_output (output side) and grad_input (input side)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_tensors_index = None
        self.input_hooked = False

    def _wrap(self, values):
        from .._tensor import Tensor
        from ..autograd.function import Function
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        fn = _backward_hook_function(Function)
        wrapped = fn.apply(*[values[i] for i in idx])
        new = list(values)
        node = None
        for i, w in zip(idx, wrapped):
            new[i] = w
            if w.grad_fn is not None:
                node = w.grad_fn
        return new, idx, node

    def setup_input_hook(self, args):
        from .. import grad_mode
        from .._tensor import Tensor
        self.n_inputs = len(args)
        if not self.user_hooks or not grad_mode.is_grad_enabled() or not any(
                isinstance(a, Tensor) and a.requires_grad for a in args):
            return args
        new, idx, node = self._wrap(args)
        self.input_tensors_index = idx
        self.input_hooked = True
        node.register_prehook(lambda grads: self._input_hook(grads, new))
        return tuple(new)

    def _input_hook(self, grads, wrapped):
        from ..creation import zeros_like
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing through the hooked outputs
            # (e.g. a dict output): PyTorch does not call the hooks then
            return None
        grad_input = [None] * self.n_inputs
        for k, i in enumerate(self.input_tensors_index):
            g = grads[k]
            grad_input[i] = g if g is not None else zeros_like(wrapped[i])
        grad_input = tuple(grad_input)
        for hook in self.user_hooks:
            r = hook(self.module, grad_input, self.grad_outputs)
            if r is None:
                continue
            r = tuple(r)
            if len(r) != len(grad_input):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   "got %d, but expected %d" % (len(r), len(grad_input)))
            grad_input = r
        return tuple(grad_input[i] for i in self.input_tensors_index)

    def setup_output_hook(self, result):
        from .. import grad_mode
        from .._tensor import Tensor
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result)
        if not grad_mode.is_grad_enabled() or not any(
                isinstance(o, Tensor) and o.requires_grad for o in outs):
            return result
        new, idx, node = self._wrap(outs)
        n_out = len(idx)

        def prehook(grads):
            grads = tuple(grads)
            for hook in self.user_pre_hooks:
                r = hook(self.module, grads)
                if r is None:
                    continue
                r = tuple(r)
                if len(r) != n_out:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       "grad_output, got %d, but expected %d" % (len(r), n_out))
                grads = r
            self.grad_outputs = grads
            if not self.input_hooked and self.user_hooks:
                import warnings
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. See "
                              "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                              "#torch.nn.Module.register_full_backward_hook for more details.",
                              UserWarning, stacklevel=2)
                grad_input = (None,) * self.n_inputs
                for hook in self.user_hooks:
                    r = hook(self.module, grad_input, self.grad_outputs)
                    if r is not None and any(x is not None for x in r):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for all "
                                           "gradients.")
            return grads
        node.register_prehook(prehook)
        return new[0] if single else tuple(new)


_BHF = []


def _backward_hook_function(Function):
    if _BHF:
        return _BHF[0]

    class BackwardHookFunction(Function):
        @staticmethod
        def forward(ctx, *args):
            ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
            ctx.set_materialize_grads(False)
            return args

        @staticmethod
        def backward(ctx, *grads):
            return grads

    _BHF.append(BackwardHookFunction)
    return BackwardHookFunction
