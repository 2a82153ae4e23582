"""Numba CPU kernels: the vocabulary's CPU binding (scalar.py) and the hand-written kernels
(reductions, softmax, indexing, conv, pooling, norms, losses, optimizers)."""
