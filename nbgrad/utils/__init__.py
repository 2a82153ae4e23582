"""``nbgrad.utils``."""
from . import hooks  # noqa: F401
