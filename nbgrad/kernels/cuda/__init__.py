"""CUDA side of the kernels: the vocabulary's device binding (scalar.py), the device storage
(array.py), generated elementwise kernels (elementwise.py) and, for every CPU kernel
``kernels/cpu/X.py:foo_cpu``, its twin ``kernels/cuda/X.py:foo_cuda`` with the same parameters
and semantics on device arrays (``twin``).  Nothing here imports ``numba.cuda`` until a CUDA
kernel is built or launched."""

import importlib

__all__ = ["twin"]

_TWINS = {}


def twin(kernel):
    """The CUDA twin of the CPU kernel ``kernel`` (a Numba dispatcher or function
    ``nbgrad.kernels.cpu.<module>.<name>_cpu``, or ``<name>``): ``<name>_cuda`` in
    ``nbgrad.kernels.cuda.<module>``."""
    t = _TWINS.get(kernel)
    if t is None:
        fn = getattr(kernel, "py_func", kernel)
        mod = fn.__module__.rsplit(".", 1)[1]
        name = fn.__name__
        base = name[:-4] if name.endswith("_cpu") else name  # (optim's *_step have none)
        cmod = importlib.import_module("nbgrad.kernels.cuda." + mod)
        t = _TWINS[kernel] = getattr(cmod, base + "_cuda")
    return t
