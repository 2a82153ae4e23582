"""Hand-written Numba CPU kernels (reductions, indexing).  Same names as kernels/cuda/."""
