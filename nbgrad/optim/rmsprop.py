"""``RMSprop`` (alpha, eps, weight_decay, momentum, centered, maximize)."""

from .._tensor import Tensor
from . import _functional as F
from .adam import _check_capturable, _step_tensor, _steps_to_tensors, _zeros_like
from .optimizer import Optimizer, _check_differentiable, _closure_loss, _scalar, _use_no_grad

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop``.

    With ``g`` the gradient (``-g`` with ``maximize``)::

        g <- g + weight_decay * p
        v <- alpha v + (1 - alpha) g^2
        avg <- sqrt(v - gavg^2) with gavg <- lerp(gavg, g, 1 - alpha) (centered), else sqrt(v)
        b <- momentum b + g / (avg + eps);  p <- p - lr b        (momentum > 0)
        p <- p - lr g / (avg + eps)                              (otherwise)
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= momentum:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if not 0.0 <= alpha:
            raise ValueError("Invalid alpha value: {}".format(alpha))
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
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
            _check_capturable(group)
            lr = _scalar(group["lr"])
            momentum, centered = group["momentum"], group["centered"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                F.rmsprop_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    alpha=group["alpha"],
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    momentum=momentum,
                    centered=centered,
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
