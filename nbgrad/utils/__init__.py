"""``nbgrad.utils``."""
from . import checkpoint, data, hooks  # noqa: F401
