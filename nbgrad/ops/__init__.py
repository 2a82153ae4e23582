"""The op registry and the op families: importing this package registers every built-in op
(the families of nn.functional's structured ops are in ops/nn/, which nn.functional imports)."""

from . import (  # noqa: F401
    diagonal,
    index_ops,
    indexing,
    linalg,
    pointwise_fns,
    reduction,
    shape,
    softmax,
    sorting,
)
