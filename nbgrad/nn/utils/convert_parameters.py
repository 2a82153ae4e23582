"""Flatten parameters into one vector and back (``torch.nn.utils.convert_parameters``)."""

from ... import ops
from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """Concatenate the parameters, each flattened, into one 1-D tensor."""
    vec = [param.view(-1) for param in parameters]
    return ops.shape.cat(vec)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters' ``.data``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data
        pointer += num_param
