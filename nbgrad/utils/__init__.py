"""``nbgrad.utils``: ``hooks`` is a leaf that nbgrad._tensor imports, so this package imports
nothing above it; ``checkpoint``, ``data``, ``collect_env`` and ``dlpack`` sit above autograd and
are imported by ``nbgrad/__init__.py`` once everything below them is loaded (``safetensors`` on
first use: it needs the optional ``safetensors`` package)."""

from . import hooks  # noqa: F401
