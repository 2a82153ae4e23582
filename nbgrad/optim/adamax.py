"""``Adamax``: Adam with the infinity norm of past gradients."""

from . import _functional as F
from .adam import _check_capturable, _step_tensor, _steps_to_tensors, _zeros_like
from .optimizer import (
    Optimizer,
    _check_adam_args,
    _check_differentiable,
    _closure_loss,
    _scalar,
    _use_no_grad,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax, as ``torch.optim.Adamax``.

    With ``g`` the gradient (``-g`` with ``maximize``) and ``t`` the step count::

        g <- g + weight_decay * p
        m <- lerp(m, g, 1 - beta1);  u <- max(beta2 u, |g| + eps)
        p <- p - lr / (1 - beta1^t) * m / u

    ``foreach`` is accepted for compatibility; ``capturable`` raises at ``step`` as it does
    for CPU tensors in PyTorch.
    """

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_adam_args(lr, eps, betas, weight_decay)
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _steps_to_tensors(self)

    @_use_no_grad
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            cache = {}  # dtype-cast scalars shared by the group's parameters
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            lr = _scalar(group["lr"])
            capturable = group["capturable"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                if capturable:
                    _check_capturable(group)
                F.adamax_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    beta1=beta1,
                    beta2=beta2,
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
