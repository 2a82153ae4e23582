"""``nbgrad.cuda``: device queries.  numba.cuda is imported lazily, only when asked."""

import functools

from .. import random

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "get_device_name",
    "synchronize",
    "manual_seed",
    "manual_seed_all",
    "initial_seed",
]


@functools.lru_cache(maxsize=None)
def _numba_cuda():
    try:
        from numba import cuda
    except Exception:  # numba-cuda missing or broken: no CUDA, not an error
        return None
    return cuda


def is_available():
    cuda = _numba_cuda()
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


def device_count():
    if not is_available():
        return 0
    return len(_numba_cuda().gpus)


def synchronize(device=None):
    if is_available():
        _numba_cuda().synchronize()


def current_device():
    """The index of the current CUDA device (nbgrad uses device 0)."""
    if not is_available():
        raise RuntimeError("No CUDA GPUs are available")
    return 0


def get_device_name(device=None):
    """The GPU's name (``"simulator"`` under numba's CUDA simulator)."""
    if not is_available():
        raise RuntimeError("No CUDA GPUs are available")
    cuda = _numba_cuda()
    if cuda.config.ENABLE_CUDASIM:
        return "simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def _rng():
    from ..kernels.cuda import random as cuda_random  # lazy: numba.cuda loads on first use

    return cuda_random


def manual_seed(seed):
    """Seed the current CUDA device's generator (``torch.cuda.manual_seed``); without CUDA,
    remembered for when one is used (PyTorch's lazy seeding)."""
    if not is_available():
        random.CUDA_SEED[0] = int(seed)
        return
    _rng().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's generator."""
    if not is_available():
        random.CUDA_SEED[0] = int(seed)
        return
    _rng().manual_seed_all(seed)


def initial_seed():
    """The seed of the current CUDA device's generator."""
    return _rng().initial_seed()
