"""``Adadelta`` (rho, eps, weight_decay, maximize)."""

from .._tensor import Tensor
from . import _functional as F
from .adam import _check_capturable, _step_tensor, _steps_to_tensors, _zeros_like
from .optimizer import Optimizer, _check_differentiable, _closure_loss, _scalar, _use_no_grad

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta, as ``torch.optim.Adadelta``.

    With ``g`` the gradient (``-g`` with ``maximize``)::

        g <- g + weight_decay * p
        v <- rho v + (1 - rho) g^2
        delta <- sqrt(u + eps) / sqrt(v + eps) * g
        u <- rho u + (1 - rho) delta^2
        p <- p - lr delta

    ``foreach`` is accepted for compatibility; ``capturable`` raises at ``step`` as it does
    for CPU tensors in PyTorch.
    """

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= rho <= 1.0:
            raise ValueError("Invalid rho value: {}".format(rho))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
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
            lr = _scalar(group["lr"])
            capturable = group["capturable"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if capturable:
                    _check_capturable(group, devices=["cuda", "xpu", "hpu", "privateuseone"])
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                F.adadelta_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    rho=group["rho"],
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
