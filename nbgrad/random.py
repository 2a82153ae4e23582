"""The default random generator (numpy's PCG64), seeded by ``nbgrad.manual_seed``."""

from __future__ import annotations

import numpy as np

__all__ = ["manual_seed", "seed", "initial_seed", "default_generator"]


class Generator:
    """A random number generator (``torch.Generator``): NumPy's PCG64 with a seed; pass it as
    ``generator=`` to ``rand``, ``randn``, ``randint`` and the random in-place fills."""

    def __init__(self, seed: int = 67280421310721) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        """Reseed this generator (any int64 or uint64 value); returns it."""
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:  # PyTorch's parser: int64 or uint64
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & (2**64 - 1)  # PyTorch keeps it as uint64: -1 is 2**64 - 1
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator and every CUDA device's (``torch.manual_seed``); returns the
    CPU generator."""
    g = default_generator.manual_seed(seed)
    _seed_cuda(seed)
    return g


def _seed_cuda(seed):
    """Seed the CUDA generators: now when their module is loaded, else when it loads."""
    import sys

    mod = sys.modules.get("nbgrad.kernels.cuda.random")
    if mod is not None:
        mod.manual_seed_all(seed)
    else:
        CUDA_SEED[0] = seed


CUDA_SEED = [None]  # a seed for the CUDA generators given before they were created


def seed() -> int:
    """Seed the default generator from OS entropy; returns the seed."""
    s = int(np.random.SeedSequence().entropy & (2**63 - 1))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the default generator."""
    return default_generator.initial_seed()


def rng(generator: Generator | None = None) -> np.random.Generator:
    return (generator or default_generator).rng
