"""The nn op families (conv, pooling, norms, losses, padding, embedding, linear): forward array
code, geometry, vjp and ``@op`` declaration side by side, one module per kernels/cpu/ stem.
Importing this package registers them; nn/functional.py is their PyTorch-signature layer."""

from . import (
    activation,
    conv,
    distance,
    embedding,
    linear,
    loss,
    norm,
    pad,
    pool,
    rnn,
    upsample,
)
from .attention import scaled_dot_product_attention  # noqa: F401  (registers the op)

__all__ = [
    "activation",
    "conv",
    "distance",
    "embedding",
    "linear",
    "loss",
    "norm",
    "pad",
    "pool",
    "rnn",
    "upsample",
]
