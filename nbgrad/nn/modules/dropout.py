"""``Dropout`` (``torch.nn.modules.dropout``): ``F.dropout`` with the module's training flag."""

from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes elements with probability ``p`` in training mode, scaling the rest by 1/(1-p)."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


# -- second tier: Dropout2d --------------------------------------------------------------------

__all__ += ["Dropout2d"]


class Dropout2d(_DropoutNd):
    """Zeroes whole channels (feature maps) with probability ``p`` in training mode
    (``F.dropout2d``)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)
