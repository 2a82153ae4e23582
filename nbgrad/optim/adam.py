"""``Adam`` (with AMSGrad, maximize and optional decoupled weight decay)."""

import numpy as np

from .._tensor import Tensor
from ..dtypes import float64, get_default_dtype
from ..ops.transfer import zeros_on
from . import _functional as F
from .optimizer import Optimizer, _check_differentiable, _closure_loss, _scalar, _use_no_grad

__all__ = ["Adam"]


def _scalar_np_dtype():
    """The dtype of ``state["step"]``: float64 when the default dtype is float64, else float32
    (PyTorch's ``_get_scalar_dtype``)."""
    return np.float64 if get_default_dtype() is float64 else np.float32


def _step_tensor(value=0.0):
    return Tensor._make(np.array(value, dtype=_scalar_np_dtype()))


def _zeros_like(p):
    return Tensor._make(zeros_on(p._data.shape, p._data.dtype, p.device))


def _steps_to_tensors(optimizer):
    """Saved states whose ``step`` is a plain number get a 0-d tensor (as PyTorch does)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, [])
            if len(p_state) != 0 and "step" in p_state and not isinstance(p_state["step"], Tensor):
                p_state["step"] = _step_tensor(float(p_state["step"]))


_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def _check_capturable(group, what="params and state_steps", devices=_CAPTURABLE_DEVICES):
    """``capturable=True`` needs accelerator tensors: PyTorch raises this for CPU ones."""
    if group.get("capturable"):
        raise AssertionError(
            "If capturable=True, %s must be on supported devices: %s." % (what, devices)
        )


class Adam(Optimizer):
    r"""Adam, as ``torch.optim.Adam``.

    With ``g`` the gradient (``-g`` with ``maximize``) and ``t`` the step count::

        g <- g + weight_decay * p          (or p <- p (1 - lr weight_decay) when decoupled)
        m <- lerp(m, g, 1 - beta1);  v <- beta2 v + (1 - beta2) g^2
        vmax <- max(vmax, v)               (amsgrad; v below reads vmax)
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    ``foreach``/``fused`` are accepted for compatibility; ``capturable`` raises at ``step`` as
    it does for CPU tensors in PyTorch.
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if not (
            (isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))
        ):
            raise ValueError("betas must be either both floats or both Tensors")
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        _steps_to_tensors(self)

    def _init_state(self, p, state, amsgrad):
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = _zeros_like(p)

    @_use_no_grad
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            cache = {}  # dtype-cast scalars shared by the group's parameters
            _check_capturable(group)
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            lr = _scalar(group["lr"])
            amsgrad = group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                self._init_state(p, state, amsgrad)
                F.adam_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    beta1=beta1,
                    beta2=beta2,
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    amsgrad=amsgrad,
                    maximize=group["maximize"],
                    decoupled_weight_decay=group["decoupled_weight_decay"],
                    cache=cache,
                )
        return loss
