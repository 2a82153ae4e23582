"""``RAdam``: Adam with a rectified adaptive learning rate (decoupled_weight_decay)."""

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

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""RAdam, as ``torch.optim.RAdam``.

    With ``g`` the gradient (``-g`` with ``maximize``), ``t`` the step count,
    ``rho_inf = 2 / (1 - beta2) - 1`` and ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``::

        g <- g + weight_decay * p          (or p <- p (1 - lr weight_decay) when decoupled)
        m <- lerp(m, g, 1 - beta1);  v <- beta2 v + (1 - beta2) g^2
        m_hat <- m / (1 - beta1^t)
        p <- p - m_hat lr sqrt(1 - beta2^t) / (sqrt(v) + eps) r_t   (rho_t > 5; r_t the
             rectification sqrt((rho_t-4)(rho_t-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho_t)))
        p <- p - m_hat lr                                           (otherwise)

    ``foreach`` is accepted for compatibility; ``capturable`` raises at ``step`` as it does
    for CPU tensors in PyTorch.
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_adam_args(lr, eps, betas, weight_decay)
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
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
                    state["exp_avg_sq"] = _zeros_like(p)
                if capturable:
                    _check_capturable(group)
                F.radam_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    beta1=beta1,
                    beta2=beta2,
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    decoupled_weight_decay=group["decoupled_weight_decay"],
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
