"""``Adagrad`` (lr_decay, weight_decay, initial_accumulator_value, eps, maximize, fused)."""

import numpy as np

from .._tensor import Tensor
from . import _functional as F
from .adam import _scalar_np_dtype
from .optimizer import Optimizer, _check_differentiable, _closure_loss, _scalar, _use_no_grad

__all__ = ["Adagrad"]

_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _adagrad_step_tensor(fused, value=0.0):
    """``state["step"]``: float32 for the fused implementation, else the scalar dtype."""
    return Tensor._make(np.array(value, dtype=np.float32 if fused else _scalar_np_dtype()))


def _full_like(p, value):
    a = p._data
    if a.dtype.kind == "c":
        value = complex(value, value)
    return Tensor._make(np.full(a.shape, value, a.dtype))


def _device_dtype_check_for_fused(p):
    if not p.is_floating_point():
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of "
            "supported devices: %s but %s and cpu" % (_FUSED_DEVICES, p.dtype)
        )


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

        With ``g`` the gradient (``-g`` with ``maximize``) and ``t`` the step count::

            clr <- lr / (1 + (t - 1) lr_decay)
            g <- g + weight_decay * p
            s <- s + g^2                       (s starts at initial_accumulator_value)
            p <- p - clr g / (sqrt(s) + eps)

        As in PyTorch, the state (``step``, ``sum``) of every parameter is created by the
        constructor, not at the first step.  ``foreach`` is accepted for compatibility; ``fused``
        keeps PyTorch's checks, its float32 ``step`` and its version counters (the fused kernel does
    not bump the parameter's or ``sum``'s); every path runs the same fused Numba kernel.
    """

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= lr_decay:
            raise ValueError("Invalid lr_decay value: {}".format(lr_decay))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                "Invalid initial_accumulator_value value: {}".format(initial_accumulator_value)
            )
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        _check_differentiable(differentiable)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

        if fused:
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
            self._need_device_dtype_check_for_fused = True
            self._step_supports_amp_scaling = True

        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _adagrad_step_tensor(group["fused"])
                state["sum"] = _full_like(p, initial_accumulator_value)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            fused = group.setdefault("fused", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _adagrad_step_tensor(fused, float(p_state["step"]))

    def _check_fused(self, group):
        """PyTorch's checks before a fused step (nothing is updated when one fails)."""
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            if getattr(self, "_need_device_dtype_check_for_fused", True):
                _device_dtype_check_for_fused(p)
                self._need_device_dtype_check_for_fused = False
            if len(self.state[p]) == 0:
                _device_dtype_check_for_fused(p)
            has_complex |= p.is_complex()
        if has_complex:
            raise RuntimeError("`fused` does not support sparse grad or complex param")

    @_use_no_grad
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            cache = {}  # dtype-cast scalars shared by the group's parameters
            lr = _scalar(group["lr"])
            fused = group["fused"]
            if fused:
                self._check_fused(group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:  # a parameter added after construction
                    state["step"] = _adagrad_step_tensor(fused)
                    state["sum"] = _full_like(p, self.defaults["initial_accumulator_value"])
                F.adagrad_update(
                    p,
                    p.grad,
                    state,
                    lr=lr,
                    lr_decay=group["lr_decay"],
                    eps=group["eps"],
                    weight_decay=_scalar(group["weight_decay"]),
                    maximize=group["maximize"],
                    fused=bool(fused),
                    cache=cache,
                )
        return loss
