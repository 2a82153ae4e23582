"""Module full backward (pre-)hooks, PyTorch's design: an identity autograd Function wraps the
module's tensor inputs and outputs, and node pre-hooks on its two nodes see grad_output (output
side) and grad_input (input side).  Used only by ``Module.__call__`` (NOTE [module hooks])."""

import warnings

from ... import grad_mode
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.graph import run_hook
from ...creation import zeros_like


class BackwardHookFunction(Function):
    """The identity whose ``grad_fn`` carries the hooks (module outputs become its views)."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        ctx.set_materialize_grads(False)
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


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
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        wrapped = BackwardHookFunction.apply(*[values[i] for i in idx])
        new = list(values)
        node = None
        for i, w in zip(idx, wrapped):
            new[i] = w
            if w.grad_fn is not None:
                node = w.grad_fn
        return new, idx, node

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        if (
            not self.user_hooks
            or not grad_mode.is_grad_enabled()
            or not any(isinstance(a, Tensor) and a.requires_grad for a in args)
        ):
            return args
        new, idx, node = self._wrap(args)
        self.input_tensors_index = idx
        self.input_hooked = True
        node.register_prehook(lambda grads: self._input_hook(grads, new))
        return tuple(new)

    def _input_hook(self, grads, wrapped):
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
            r = run_hook("module_backward", hook, self.module, grad_input, self.grad_outputs)
            if r is None:
                continue
            r = tuple(r)
            if len(r) != len(grad_input):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    "got %d, but expected %d" % (len(r), len(grad_input))
                )
            grad_input = r
        return tuple(grad_input[i] for i in self.input_tensors_index)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result)
        if not grad_mode.is_grad_enabled() or not any(
            isinstance(o, Tensor) and o.requires_grad for o in outs
        ):
            return result
        new, idx, node = self._wrap(outs)
        n_out = len(idx)

        def prehook(grads):
            grads = tuple(grads)
            for hook in self.user_pre_hooks:
                r = run_hook("module_backward_pre", hook, self.module, grads)
                if r is None:
                    continue
                r = tuple(r)
                if len(r) != n_out:
                    raise RuntimeError(
                        "Backward pre hook returned an invalid number of "
                        "grad_output, got %d, but expected %d" % (len(r), n_out)
                    )
                grads = r
            self.grad_outputs = grads
            if not self.input_hooked and self.user_hooks:
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with "
                    "respect to module outputs since no inputs require gradients. See "
                    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                    "#torch.nn.Module.register_full_backward_hook for more details.",
                    UserWarning,
                    stacklevel=2,
                )
                grad_input = (None,) * self.n_inputs
                for hook in self.user_hooks:
                    r = run_hook(
                        "module_backward", hook, self.module, grad_input, self.grad_outputs
                    )
                    if r is not None and any(x is not None for x in r):
                        raise RuntimeError(
                            "Backward hook for Modules where no input requires "
                            "gradient should always return None or None for all "
                            "gradients."
                        )
            return grads

        node.register_prehook(prehook)
        return new[0] if single else tuple(new)
