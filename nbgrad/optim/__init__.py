"""``nbgrad.optim``: optimizers (SGD, Adam, AdamW, RMSprop) and ``lr_scheduler``.

The API is ``torch.optim``'s: ``param_groups``, ``state``, ``zero_grad(set_to_none=True)``,
``state_dict()`` / ``load_state_dict()`` in PyTorch's format, ``step(closure=None)`` and step
hooks.  Updates are written in place into the parameters' storage (fused Numba kernels, see
_functional.py) and bump their version counters as PyTorch's in-place ops would.
"""

from .._missing import missing as _missing
from . import lr_scheduler  # noqa: F401
from .adam import Adam
from .adamw import AdamW
from .optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "lr_scheduler",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
]


def __getattr__(name):
    raise _missing(__name__, name)
