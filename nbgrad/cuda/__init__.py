"""``nbgrad.cuda``: device queries.  numba.cuda is imported lazily, only when asked."""

import functools

from .. import random

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "manual_seed_all"]


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


def manual_seed(seed):
    random.manual_seed(seed)


manual_seed_all = manual_seed
