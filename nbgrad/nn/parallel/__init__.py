"""``nbgrad.nn.parallel`` (``torch.nn.parallel``): ``DistributedDataParallel`` over MPI
(docs/distributed.md)."""

from ..._missing import missing as _missing
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]


def __getattr__(name):
    raise _missing(__name__, name)
