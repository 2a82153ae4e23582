"""``nn.Parameter``: a leaf Tensor that Modules register automatically."""

from .._tensor import Tensor, _user_state, _warn_unpickled_hooks
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
        p = Parameter(Tensor._make(self._data.copy(order="K")), self.requires_grad)
        memo[id(self)] = p
        return p

    def __copy__(self):  # shares memory, as PyTorch's (its __reduce_ex__ rebuilds on self.data)
        p = Parameter(Tensor._make(self._data), self.requires_grad)
        p.__dict__.update(_user_state(self))
        return p

    def __reduce_ex__(self, proto):
        _warn_unpickled_hooks(self)
        return (_rebuild_parameter, (self.data, self.requires_grad, _user_state(self)))


def _rebuild_parameter(data, requires_grad, state):
    """Unpickle a Parameter (``Parameter.__reduce_ex__``; PyTorch's ``_rebuild_parameter``)."""
    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p
