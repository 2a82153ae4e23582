"""``nbgrad.utils``: ``hooks`` is a leaf that nbgrad._tensor imports, so importing it must not
import ``checkpoint`` and ``data``, which sit above autograd: they load on first use."""

import importlib

from . import hooks  # noqa: F401


def __getattr__(name):
    if name in ("checkpoint", "data"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'nbgrad.utils' has no attribute %r" % name)
