"""``nn.Parameter``: a leaf Tensor that Modules register automatically."""

from .._tensor import Tensor
from ..creation import empty

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A Tensor that is a module parameter (requires grad by default)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        t = Tensor._make.__func__(cls, data._data)
        t._vc = data._vc
        t._is_param = True
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._make(self._data.copy()), self.requires_grad)
        memo[id(self)] = p
        return p
