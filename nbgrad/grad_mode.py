"""Grad-mode switches (thread-local): no_grad, enable_grad, set_grad_enabled, inference_mode.

NOTE [mode state]: every mode is one small class whose class attributes are the defaults (only
immutable values), with one module-level instance that the switches assign to.  Where PyTorch's
state is thread-local the class subclasses ``threading.local``, so a new thread starts from the
defaults: grad mode (here: enabled, inference off), the batched-backward dims
(autograd/batching.py) and the saved-tensor hooks stack (autograd/graph.py).  Anomaly mode
(autograd/anomaly_mode.py) is process-global, as in PyTorch.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable
from typing import Any

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
]


class _State(threading.local):
    enabled = True  # record graphs (what every op checks)
    inference = False
    shown = None  # what is_grad_enabled() reports inside inference_mode, if set


STATE = _State()


def is_grad_enabled() -> bool:
    """Whether ops record the autograd graph now (``torch.is_grad_enabled``)."""
    if STATE.inference and STATE.shown is not None:
        return STATE.shown
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active."""
    return STATE.inference


class _DecoratorContextManager:
    """Context manager usable as ``@ctx()`` / ``@ctx`` on functions and generators."""

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isclass(func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing "
                "else.",
                FutureWarning,
                stacklevel=2,
            )
            cls = func
            func = lambda *args, **kwargs: cls(*args, **kwargs)  # noqa: E731 (PyTorch's lambda)
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as e:
                return e.value

        return wrapper

    def clone(self) -> _DecoratorContextManager:
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block (``nbgrad.no_grad``)."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is not None and callable(orig_func):  # bare @no_grad
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func: Callable[..., Any] | None = None) -> None:
        self.prev = []

    def __enter__(self) -> None:
        self.prev.append(STATE.enabled)
        STATE.enabled = False

    def __exit__(self, *exc: object) -> bool:
        STATE.enabled = self.prev.pop()
        return False


class enable_grad(_DecoratorContextManager):
    """Re-enable gradient recording inside the block (``nbgrad.enable_grad``)."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func: Callable[..., Any] | None = None) -> None:
        self.prev = []

    def __enter__(self) -> None:
        self.prev.append((STATE.enabled, STATE.shown))
        if STATE.inference:  # grad mode reads True, but inference tensors never record
            STATE.shown = True
        else:
            STATE.enabled = True

    def __exit__(self, *exc: object) -> bool:
        STATE.enabled, STATE.shown = self.prev.pop()
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode; takes effect at once when called, restores on ``__exit__``."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(
                "set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                "not %s" % type(mode).__name__
            )
        self.prev = STATE.enabled
        self.mode = mode
        STATE.enabled = mode

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        STATE.enabled = self.prev
        return super().__call__(func)

    def __enter__(self) -> None:
        STATE.enabled = self.mode

    def __exit__(self, *exc: object) -> bool:
        STATE.enabled = self.prev
        return False

    def clone(self) -> _DecoratorContextManager:
        return _SetGrad(self.mode)


class _SetGrad(_DecoratorContextManager):
    def __init__(self, mode: bool) -> None:
        self.mode = mode
        self.prev = []

    def __enter__(self) -> None:
        self.prev.append(STATE.enabled)
        STATE.enabled = self.mode

    def __exit__(self, *exc: object) -> bool:
        STATE.enabled = self.prev.pop()
        return False

    def clone(self) -> _DecoratorContextManager:
        return _SetGrad(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``; tensors created inside are inference tensors (``is_inference()``)."""

    def __new__(cls, mode: bool | Callable[..., Any] = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prev = []

    def __enter__(self) -> None:
        self.prev.append((STATE.enabled, STATE.inference, STATE.shown))
        STATE.shown = None
        if self.mode:
            STATE.enabled = False
            STATE.inference = True
        else:
            STATE.inference = False
            STATE.enabled = True

    def __exit__(self, *exc: object) -> bool:
        STATE.enabled, STATE.inference, STATE.shown = self.prev.pop()
        return False

    def clone(self) -> _DecoratorContextManager:
        return self.__class__(self.mode)
