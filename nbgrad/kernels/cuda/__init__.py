"""CUDA side of the kernels: the vocabulary's device binding (scalar.py) and the host launcher
(launch.py).  Nothing here imports ``numba.cuda`` until a CUDA kernel is built or launched."""
