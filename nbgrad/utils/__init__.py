"""``nbgrad.utils``: ``hooks`` is a leaf that nbgrad._tensor imports, so this package imports
nothing above it; ``checkpoint``, ``data`` and ``collect_env`` sit above autograd and are
imported by ``nbgrad/__init__.py`` once everything below them is loaded."""

from . import hooks  # noqa: F401
