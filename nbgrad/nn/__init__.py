"""``nbgrad.nn``: Module, Parameter, layers, functional, init, utils."""

from . import (  # noqa: F401
    functional,
    init,
    modules,  # noqa: F401
    utils,
)
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401
