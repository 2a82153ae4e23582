"""``nbgrad.nn``: Module, Parameter, layers, functional, init, utils."""

from .._missing import missing as _missing
from . import (  # noqa: F401
    functional,
    init,
    modules,  # noqa: F401
    parallel,
    utils,
)
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401


def __getattr__(name):
    raise _missing(__name__, name)
