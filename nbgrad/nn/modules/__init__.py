"""Layers.  ``module.py`` holds the Module base and the hook protocol."""
from .module import Module  # noqa: F401
