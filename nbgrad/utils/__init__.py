"""``nbgrad.utils``: ``hooks`` is a leaf that nbgrad._tensor imports, so this package imports
nothing above it; ``checkpoint``, ``data``, ``collect_env``, ``dlpack`` and ``safetensors`` sit
above autograd and load on first use (NOTE [lazy imports] in ``nbgrad/__init__.py``;
``safetensors`` needs the optional ``safetensors`` package)."""

from . import hooks  # noqa: F401

_LAZY = ("checkpoint", "collect_env", "data", "dlpack", "safetensors")


def __getattr__(name):
    """NOTE [lazy imports] (nbgrad/__init__.py): the submodules above autograd load on use."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(__name__ + "." + name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
