"""CUDA twins of kernels/cpu/activation.py: glu over the (outer, 2, m) view of its input, a
grid-stride loop over the outer * m output elements.  ``one`` is passed in x's dtype so that the
sigmoid runs in x's dtype (float32 stays float32), as the CPU kernel and PyTorch's."""

from numba import cuda

from .blockred import exp
from .config import grid

__all__ = ["glu_fwd_cuda", "glu_bwd_cuda"]


@cuda.jit
def _glu_fwd(x, one, out):
    outer, _, m = x.shape
    for q in range(cuda.grid(1), outer * m, cuda.gridsize(1)):
        o = q // m
        j = q % m
        out[o, j] = x[o, 0, j] * (one / (one + exp(-x[o, 1, j])))


def glu_fwd_cuda(x, out):
    """out = a * sigmoid(b), with a = x[:, 0] and b = x[:, 1]."""
    outer, _, m = x.shape
    if outer * m:
        _glu_fwd[grid(outer * m)](x, x.dtype.type(1), out)


@cuda.jit
def _glu_bwd(x, g, one, gx):
    outer, _, m = x.shape
    for q in range(cuda.grid(1), outer * m, cuda.gridsize(1)):
        o = q // m
        j = q % m
        s = one / (one + exp(-x[o, 1, j]))
        gj = g[o, j]
        gx[o, 0, j] = s * gj
        gx[o, 1, j] = (one - s) * s * x[o, 0, j] * gj


def glu_bwd_cuda(x, g, gx):
    """d/da = sigmoid(b) * g;  d/db = (1 - sigmoid(b)) * sigmoid(b) * a * g."""
    outer, _, m = x.shape
    if outer * m:
        _glu_bwd[grid(outer * m)](x, g, x.dtype.type(1), gx)
