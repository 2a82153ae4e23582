"""``NAdam``: Adam with Nesterov momentum (momentum_decay, decoupled_weight_decay)."""

from .._tensor import Tensor
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

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""NAdam, as ``torch.optim.NAdam``.

    With ``g`` the gradient (``-g`` with ``maximize``), ``t`` the step count and
    ``mu_t = beta1 (1 - 0.5 * 0.96^(t momentum_decay))``::

        g <- g + weight_decay * p          (or p <- p (1 - lr weight_decay) when decoupled)
        mu_product <- mu_product * mu_t    (a 0-d state tensor)
        m <- lerp(m, g, 1 - beta1);  v <- beta2 v + (1 - beta2) g^2
        d <- sqrt(v / (1 - beta2^t)) + eps
        p <- p - lr (1 - mu_t) / (1 - mu_product) g / d
        p <- p - lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / d

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
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError("Invalid momentum_decay value: {}".format(momentum_decay))
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["mu_product"], Tensor):
                    p_state["mu_product"] = _step_tensor(float(p_state["mu_product"]))
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
                    state["mu_product"] = _step_tensor(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                if capturable:
                    _check_capturable(group, what="params, mu_products and state_steps")
                F.nadam_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    beta1=beta1,
                    beta2=beta2,
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    momentum_decay=group["momentum_decay"],
                    decoupled_weight_decay=group["decoupled_weight_decay"],
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
