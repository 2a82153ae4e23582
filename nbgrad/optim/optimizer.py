"""``Optimizer``: parameter groups, per-parameter state, state dicts, step hooks.

Follows torch/optim/optimizer.py: ``param_groups`` is a list of dicts (each group's options
default to ``defaults``), ``state`` is a ``defaultdict(dict)`` keyed by parameter, and
``state_dict()`` replaces parameters by their position (0, 1, ... across groups in order) so a
state dict can be loaded into a new optimizer over other parameter objects.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .._tensor import Tensor
from ..grad_mode import enable_grad, no_grad
from ..utils.hooks import RemovableHandle, add_hook

__all__ = [
    "Optimizer",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
    "required",
]

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


class _RequiredParameter:
    """Marks an option with no default (a group must give it)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):  # nbgrad.typename (the root package sits above optim)
    return obj.type() if isinstance(obj, Tensor) else type(obj).__name__


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` before every optimizer step."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs) -> None`` after every optimizer step."""
    return add_hook(_global_optimizer_post_hooks, hook)


def _step_with_hooks(func):
    """Wrap a class's ``step`` so global and per-instance step hooks run around it."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        for pre_hook in chain(
            _global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()
        ):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        "%s must return None or a tuple of (new_args, new_kwargs), "
                        "but got %s." % (func, result)
                    )
        out = func(*args, **kwargs)
        for post_hook in chain(
            self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()
        ):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


def _use_no_grad(func):
    """Run ``step`` under no_grad (the update is not part of any graph)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)

    return wrapper


def _closure_loss(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _scalar(x):
    """A hyperparameter as a Python number (a 1-element Tensor ``lr`` is allowed)."""
    return x.item() if isinstance(x, Tensor) else x


def _check_adam_args(lr, eps, betas, weight_decay):
    """The Adam family's argument checks, in PyTorch's order and words (Adamax, NAdam, RAdam)."""
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


def _check_differentiable(differentiable):
    if differentiable:
        raise NotImplementedError(
            "nbgrad.optim: differentiable=True (autograd through the "
            "optimizer step) is not supported"
        )


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): Tensors, ``(name, Tensor)`` pairs, or dicts defining parameter
            groups (``{"params": [...], "lr": ...}``).
        defaults (dict): default values of the optimization options.
    """

    def __init__(
        self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]
    ) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                "Tensors or dicts, but got " + _typename(params)
            )

        self.state = defaultdict(dict)
        self.param_groups = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # -- pickling-style state (also used by load_state_dict) --------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += "Parameter Group %d\n" % i
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += "    %s: %s\n" % (key, group[key])
        format_string += ")"
        return format_string

    def _patch_step_function(self):
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _step_with_hooks(cls.step)

    # -- hooks ------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer)`` before ``state_dict`` builds the dict."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend=prepend)

    def register_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` on the built dict; a returned dict replaces it."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend=prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` before loading; a returned dict is loaded."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend=prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer)`` after ``load_state_dict``."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend=prepend)

    # -- state dicts ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Like PyTorch, the per-parameter state dicts and their tensors are the live ones, not
        copies (``copy.deepcopy`` the result to snapshot it)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update(
                {
                    id(p): i
                    for i, p in enumerate(group["params"], start_index)
                    if id(p) not in param_mappings
                }
            )
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v
            for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        # Floating-point state follows the parameter's dtype; ``step`` is kept as saved.
        if key == "step":
            return value
        if param.is_floating_point() and value._dtype is not param._dtype:
            return value.to(param._dtype)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by :meth:`state_dict` (of an optimizer over the same number of
        groups and parameters per group)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match "
                "the size of optimizer's group"
            )

        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key
                )
            if isinstance(value, dict):
                return {
                    k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                    for k, v in value.items()
                }
            if isinstance(value, (list, tuple)):
                return type(value)(
                    _cast(param, v, param_id=param_id, param_groups=param_groups) for v in value
                )
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- gradients and steps ----------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's ``.grad`` to None (default) or zero it in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimization step (subclasses implement it)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``"params"`` and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError("param_group must be a dict, but got %s" % type(param_group))

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, "
                "but the ordering of tensors in sets will change between runs. "
                "Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError(
                    "all optimizer params should be with/without names. Some param "
                    "names are missing"
                )

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + _typename(param)
                )
            if not self.defaults.get("differentiable", None) and not (
                param.is_leaf or param.retains_grad
            ):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required "
                    "optimization parameter " + name
                )
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in "
                "future, this will cause an error; see "
                "github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    "cannot add param group %s to the optimizer" % current
                )
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)
