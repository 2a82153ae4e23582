"""The nn op families (conv, pooling, norms, losses, padding, embedding, linear): forward array
code, geometry, vjp and ``@op`` declaration side by side, one module per kernels/cpu/ stem.
Importing this package registers them; nn/functional.py is their PyTorch-signature layer."""

from . import conv, embedding, linear, loss, norm, pad, pool
from .attention import scaled_dot_product_attention  # noqa: F401  (registers the op)

__all__ = ["conv", "embedding", "linear", "loss", "norm", "pad", "pool"]

from . import upsample  # noqa: E402  (second tier: registers the upsampling ops)

__all__ += ["upsample"]
