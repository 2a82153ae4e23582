"""The default random generator (numpy's PCG64), seeded by ``nbgrad.manual_seed``."""

import numpy as np

__all__ = ["manual_seed", "seed", "initial_seed", "default_generator"]


class Generator:
    def __init__(self, seed=67280421310721):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:  # PyTorch's parser: int64 or uint64
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & (2**64 - 1)  # PyTorch keeps it as uint64: -1 is 2**64 - 1
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self):
        return self._seed


default_generator = Generator()


def manual_seed(seed):
    return default_generator.manual_seed(seed)


def seed():
    s = int(np.random.SeedSequence().entropy & (2**63 - 1))
    default_generator.manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def rng(generator=None):
    return (generator or default_generator).rng
