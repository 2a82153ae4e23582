"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from . import _functional as F
from .optimizer import Optimizer, _check_differentiable, _closure_loss, _scalar, _use_no_grad

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    For each parameter with a gradient ``g`` (``-g`` with ``maximize``)::

        g <- g + weight_decay * p                                  (weight_decay != 0)
        b <- g (first step),  b <- momentum * b + (1 - dampening) * g   (momentum != 0)
        g <- g + momentum * b (nesterov),  g <- b (otherwise)
        p <- p - lr * g

    ``foreach`` and ``fused`` are accepted for compatibility; there is one implementation.
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        if lr < 0.0:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if momentum < 0.0:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if weight_decay < 0.0:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_no_grad
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            cache = {}  # dtype-cast scalars shared by the group's parameters
            lr = _scalar(group["lr"])
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                F.sgd_update(
                    p,
                    p.grad,
                    self.state[p] if momentum != 0 else {},
                    lr=lr,
                    momentum=momentum,
                    dampening=group["dampening"],
                    weight_decay=_scalar(group["weight_decay"]),
                    nesterov=group["nesterov"],
                    maximize=group["maximize"],
                    cache=cache,
                )
        return loss
