"""``nbgrad.optim``: optimizers and ``lr_scheduler``.

SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and LBFGS.  The API is
``torch.optim``'s: ``param_groups``, ``state``, ``zero_grad(set_to_none=True)``,
``state_dict()`` / ``load_state_dict()`` in PyTorch's format, ``step(closure=None)`` and step
hooks.  Updates are written in place into the parameters' storage (fused Numba kernels, see
_functional.py) and bump their version counters as PyTorch's in-place ops would.
"""

from .._missing import missing as _missing
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "LBFGS",
    "lr_scheduler",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
]


def __getattr__(name):
    raise _missing(__name__, name)
