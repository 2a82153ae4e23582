"""``nn.Module``: parameters/buffers/children by attribute assignment, state dicts, and the
full hook protocol (SEMANTICS.md section 5) with five global hook registries.

NOTE [module hooks]: ``__call__`` takes a fast path straight to ``forward`` when no hook of any
kind exists (local or global).  Full backward hooks use PyTorch's design (``BackwardHook`` in
_backward_hook.py): an identity autograd Function wraps the module's tensor inputs and outputs;
node pre-hooks on its two nodes see grad_output (output side) and grad_input (input side).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ... import grad_mode
from ..._tensor import Tensor
from ...autograd.graph import run_hook
from ...dtypes import dtype, float16, float32, float64
from ...utils.hooks import HookDict, RemovableHandle, add_hook
from ..parameter import Parameter
from ._backward_hook import BackwardHook

__all__ = [
    "Module",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_backward_hook",
]

_global_forward_pre_hooks = HookDict()
_global_forward_hooks = HookDict()
_global_forward_hooks_always_called = {}
_global_forward_hooks_with_kwargs = {}
_global_backward_pre_hooks = HookDict()
_global_backward_hooks = HookDict()
_global_is_full_backward_hook = [None]

_M = TypeVar("_M", bound="Module")  # methods that return self keep the subclass's type
_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeys(_IncompatibleKeys):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _any_global_hooks():
    return bool(
        _global_forward_pre_hooks
        or _global_forward_hooks
        or _global_backward_pre_hooks
        or _global_backward_hooks
    )


def register_module_forward_pre_hook(hook):
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    h = add_hook(
        _global_forward_hooks,
        hook,
        extra=[_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs],
    )
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h


def register_module_full_backward_pre_hook(hook):
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_backward_hook(hook):
    if _global_is_full_backward_hook[0] is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook[0] = False
    return add_hook(_global_backward_hooks, hook)


def register_module_full_backward_hook(hook):
    if _global_is_full_backward_hook[0] is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook[0] = True
    return add_hook(_global_backward_hooks, hook)


def _addindent(s_, numSpaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(numSpaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class Module:
    """Base class for all neural-network modules (``torch.nn.Module``)."""

    training = True
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError("Module.__init__() takes no arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = HookDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = HookDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_backward_pre_hooks"] = HookDict()
        d["_backward_hooks"] = HookDict()
        d["_is_full_backward_hook"] = None

    def forward(self, *input):
        """The computation of the module; subclasses define it (call the module, not this)."""
        raise NotImplementedError(
            'Module [%s] is missing the required "forward" function' % type(self).__name__
        )

    # -- registration -----------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` as parameter ``name`` (None declares an absent parameter)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError("parameter name should be a string. Got %s" % type(name).__name__)
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError("attribute '%s' already exists" % name)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                "cannot assign '%s' object to parameter '%s' (torch.nn.Parameter or "
                "None required)" % (type(param).__name__, name)
            )
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter); ``persistent=False`` keeps it out of the
        state dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError("buffer name should be a string. Got %s" % type(name).__name__)
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError("attribute '%s' already exists" % name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                "cannot assign '%s' object to buffer '%s' (torch Tensor or None "
                "required)" % (type(tensor).__name__, name)
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add ``module`` as child ``name`` (``register_module`` is an alias)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError("%s is not a Module subclass" % type(module).__name__)
        if not isinstance(name, str):
            raise TypeError("module name should be a string. Got %s" % type(name).__name__)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError("attribute '%s' already exists" % name)
        if "." in name:
            raise KeyError('module name can\'t contain ".", got: %s' % name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        mod = self
        for item in target.split(".") if target else []:
            mod = getattr(mod, item)
        return mod

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            for store in ("_buffers", "_modules"):
                d[store].pop(name, None)
            d.pop(name, None)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    "cannot assign '%s' as parameter '%s' (torch.nn.Parameter or "
                    "None expected)" % (type(value).__name__, name)
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            for store in ("_parameters", "_buffers"):
                d[store].pop(name, None)
            d.pop(name, None)
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(
                    "cannot assign '%s' as child module '%s' (torch.nn.Module or "
                    "None expected)" % (type(value).__name__, name)
                )
            d["_modules"][name] = value
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    "cannot assign '%s' as buffer '%s' (torch.Tensor or None "
                    "expected)" % (type(value).__name__, name)
                )
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            s = self.__dict__.get(store)
            if s is not None and name in s:
                del s[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = (
            list(object.__dir__(self))
            + list(self._parameters)
            + list(self._modules)
            + list(self._buffers)
        )
        return sorted(k for k in keys if not k[0].isdigit())

    # -- iteration ------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and, with ``recurse``, of its descendants), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs."""
        return self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and, with ``recurse``, of its descendants)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, submodule)`` pairs of the direct submodules."""
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self) -> Iterator[Module]:
        """This module and all its descendants, each once."""
        for _, m in self.named_modules():
            yield m

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` pairs for this module (name ``prefix``) and its descendants."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(
                memo, prefix + ("." if prefix else "") + name, remove_duplicate
            )

    # -- modes and conversion -------------------------------------------------------------
    def train(self: _M, mode: bool = True) -> _M:
        """Set training mode (affects dropout, batch norm, ...) here and below; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's ``forward`` in place with ``nbgrad.compile`` (PyTorch's
        ``Module.compile``): calls keep running this module's own hooks eagerly around it."""
        from ...compile import CompiledFunction  # cycle: compile patches nn while capturing

        fwd = self.__dict__.get("forward")
        if isinstance(fwd, CompiledFunction):
            return
        kwargs.pop("backend", None), kwargs.pop("mode", None), kwargs.pop("options", None)
        object.__setattr__(
            self, "forward", CompiledFunction(self.forward, params=self.parameters, **kwargs)
        )

    def eval(self: _M) -> _M:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self: _M, requires_grad: bool = True) -> _M:
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's ``.grad`` to None (default) or zero it in place."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def _apply(self, fn):
        for m in self.children():
            m._apply(fn)
        for key, p in self._parameters.items():
            if p is None:
                continue
            with grad_mode.no_grad():
                new = fn(p)
            if new is not p:  # keep the Parameter object (optimizers hold it): swap its data
                p._data = new._data
                p._dtype = new._dtype
                if p._grad is not None:
                    with grad_mode.no_grad():
                        g = fn(p._grad)
                    p._grad = g
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def apply(self: _M, fn: Callable[[Module], None]) -> _M:
        """Call ``fn`` on every submodule (children first) and then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self: _M, *args: Any, **kwargs: Any) -> _M:
        """Convert the floating point parameters and buffers in place (``to(dtype)``,
        ``to(device)``, ``to(tensor)``); returns self."""
        return self._apply(
            lambda t: (
                t.to(*args, **kwargs)
                if t.is_floating_point()
                else t.to(
                    *[a for a in args if not _is_dtype(a)],
                    **{k: v for k, v in kwargs.items() if k != "dtype"},
                )
            )
        )

    def float(self: _M) -> _M:
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.to(float32) if t.is_floating_point() else t)

    def double(self: _M) -> _M:
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.to(float64) if t.is_floating_point() else t)

    def half(self: _M) -> _M:
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.to(float16) if t.is_floating_point() else t)

    def cpu(self: _M) -> _M:
        """Move the parameters and buffers to host memory (in place); returns self."""
        return self._apply(lambda t: t.cpu())

    def cuda(self: _M, device: Any = None) -> _M:
        """Move the parameters and buffers to a CUDA device (in place); returns self."""
        return self._apply(lambda t: t.cuda(device))

    def type(self: _M, dst_type: Any) -> _M:
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    # -- state dict -----------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(
        self,
        *args: Any,
        destination: dict[str, Any] | None = None,
        prefix: str = "",
        keep_vars: bool = False,
    ) -> dict[str, Any]:
        """An ordered dict of the parameters and persistent buffers by dotted name (detached
        unless ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """Copy values from ``state_dict`` into the parameters and buffers (``assign`` replaces
        them instead); returns ``(missing_keys, unexpected_keys)``."""
        if not hasattr(state_dict, "keys"):
            raise TypeError("Expected state_dict to be dict-like, got %s." % type(state_dict))
        missing, unexpected, errors = [], [], []
        expected = set()
        for mprefix, m in self.named_modules(remove_duplicate=False):
            pre = mprefix + "." if mprefix else ""
            local = {
                **{k: v for k, v in m._parameters.items() if v is not None},
                **{
                    k: v
                    for k, v in m._buffers.items()
                    if v is not None and k not in m._non_persistent_buffers_set
                },
            }
            for name, param in local.items():
                key = pre + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                src = state_dict[key]
                if not isinstance(src, Tensor):
                    errors.append(
                        'While copying the parameter named "%s", expected '
                        "torch.Tensor or Tensor-like object from checkpoint but "
                        "received %s" % (key, type(src))
                    )
                    continue
                if tuple(src.shape) != tuple(param.shape):
                    errors.append(
                        "size mismatch for %s: copying a param with shape %s from "
                        "checkpoint, the shape in current model is %s."
                        % (key, src.shape, param.shape)
                    )
                    continue
                with grad_mode.no_grad():
                    if assign:
                        if name in m._parameters:
                            m._parameters[name] = Parameter(src, param.requires_grad)
                        else:
                            m._buffers[name] = src
                    else:
                        param.copy_(src)
        for key in state_dict.keys():
            if key not in expected:
                unexpected.append(key)
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: %s. "
                    % ", ".join('"%s"' % k for k in unexpected),
                )
            if missing:
                errors.insert(
                    0, "Missing key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in missing)
                )
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for %s:\n\t%s"
                % (type(self).__name__, "\n\t".join(errors))
            )
        return _IncompatibleKeys(missing, unexpected)

    # -- hooks ----------------------------------------------------------------------------
    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before each forward; a returned value replaces the args."""
        h = add_hook(
            self._forward_pre_hooks,
            hook,
            prepend=prepend,
            extra=self._forward_pre_hooks_with_kwargs,
        )
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        return h

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each forward; a returned value replaces the
        output."""
        h = add_hook(
            self._forward_hooks,
            hook,
            prepend=prepend,
            extra=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        return h

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` before the module's input gradients are computed."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once the module's input gradients are
        computed; a returned tuple replaces ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks "
                "on a single Module. Please use only one of them."
            )
        self.__dict__["_is_full_backward_hook"] = True
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks "
                "on a single Module. Please use only one of them."
            )
        self.__dict__["_is_full_backward_hook"] = False
        return add_hook(self._backward_hooks, hook)

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (
            self._forward_hooks
            or self._forward_pre_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _any_global_hooks()
        ):
            return self.forward(*args, **kwargs)  # NOTE [module hooks]: the fast path
        return self._call_with_hooks(args, kwargs)

    def _full_backward_hooks(self):
        full, non_full = [], []
        if _global_is_full_backward_hook[0] is True:
            full += list(_global_backward_hooks.values())
        elif _global_is_full_backward_hook[0] is False:
            non_full += list(_global_backward_hooks.values())
        if self._is_full_backward_hook is True:
            full += list(self._backward_hooks.values())
        elif self._is_full_backward_hook is False:
            non_full += list(self._backward_hooks.values())
        return full, non_full

    def _call_with_hooks(self, args, kwargs):
        full_hooks, non_full_hooks = self._full_backward_hooks()
        pre_hooks = list(_global_backward_pre_hooks.values()) + list(
            self._backward_pre_hooks.values()
        )
        called_always = False
        result = None
        try:
            for hid, hook in list(_global_forward_pre_hooks.items()) + list(
                self._forward_pre_hooks.items()
            ):
                if self._forward_pre_hooks_with_kwargs.get(hid):
                    r = run_hook("module_forward_pre", hook, self, args, kwargs)
                    if r is not None:
                        if isinstance(r, tuple) and len(r) == 2:
                            args, kwargs = r
                        else:
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of "
                                "(new_args, new_kwargs), but got %s." % (r,)
                            )
                else:
                    r = run_hook("module_forward_pre", hook, self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
            bw_hook = None
            if full_hooks or pre_hooks:
                bw_hook = BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in list(_global_forward_hooks.items()) + list(
                self._forward_hooks.items()
            ):
                with_kw = _global_forward_hooks_with_kwargs.get(
                    hid
                ) or self._forward_hooks_with_kwargs.get(hid)
                r = (
                    run_hook("module_forward", hook, self, args, kwargs, result)
                    if with_kw
                    else run_hook("module_forward", hook, self, args, result)
                )
                if r is not None:
                    result = r
            called_always = True
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn(
                        "For backward hooks to be called, module output should be a "
                        "Tensor or a tuple of Tensors but received %s" % type(result),
                        UserWarning,
                        stacklevel=3,
                    )
                else:
                    result = bw_hook.setup_output_hook(result)
            if non_full_hooks:
                result = self._setup_old_backward_hooks(result, non_full_hooks)
            return result
        except Exception:
            if not called_always:
                for hid, hook in list(_global_forward_hooks.items()) + list(
                    self._forward_hooks.items()
                ):
                    if _global_forward_hooks_always_called.get(
                        hid
                    ) or self._forward_hooks_always_called.get(hid):
                        try:
                            with_kw = _global_forward_hooks_with_kwargs.get(
                                hid
                            ) or self._forward_hooks_with_kwargs.get(hid)
                            if with_kw:
                                run_hook("module_forward", hook, self, args, kwargs, result)
                            else:
                                run_hook("module_forward", hook, self, args, result)
                        except Exception as e:
                            warnings.warn(
                                "forward hook with ``always_call=True`` raised an "
                                "exception that was silenced as another error was "
                                "raised in forward: %s" % e
                            )
            raise

    def _setup_old_backward_hooks(self, result, hooks):
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            elif isinstance(var, (list, tuple)) and var:
                if not isinstance(var, tuple) or any(not isinstance(v, Tensor) for v in var):
                    warnings.warn(
                        "Using non-full backward hooks on a Module that does not "
                        "return a single Tensor or a tuple of Tensors is deprecated "
                        "and will be removed in future versions. This hook will be "
                        "missing some of the grad_output. Please use "
                        "register_full_backward_hook to get the documented behavior.",
                        FutureWarning,
                        stacklevel=4,
                    )
                var = var[0]
            else:
                return result
        grad_fn = var.grad_fn
        if grad_fn is not None:
            warnings.warn(
                "Using a non-full backward hook when the forward contains multiple "
                "autograd Nodes is deprecated and will be removed in future versions. "
                "This hook will be missing some grad_input. Please use "
                "register_full_backward_hook to get the documented behavior.",
                FutureWarning,
                stacklevel=4,
            )
            module = self
            for hook in hooks:
                grad_fn.register_hook((lambda h: lambda gi, go: h(module, gi, go))(hook))
        return result

    # -- printing -------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings for its repr (subclasses override it)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = []
        for key, m in self._modules.items():
            mod_str = _addindent(repr(m), 2)
            child_lines.append("(" + key + "): " + mod_str)
        main = self._get_name() + "("
        lines = lines + child_lines
        if lines:
            if len(lines) == 1 and not child_lines:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __setstate__(self, state):
        self.__dict__.update(state)


def _is_dtype(a):
    return isinstance(a, dtype)
