"""Samplers (``torch.utils.data.sampler``): which indices, in which order, in which batches.

Randomness comes from an nbgrad generator (``nbgrad.random.Generator`` or anything with a
numpy ``rng`` attribute; a ``numpy.random.Generator`` is accepted too).  Without one, a fresh
seed is drawn from nbgrad's default generator on every pass -- so ``nbgrad.manual_seed``
makes shuffling reproducible and each epoch still gets a new permutation, as in PyTorch.
"""

import itertools

import numpy as np

from ... import creation, random as _random

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]


def _np_rng(generator):
    """The numpy Generator behind an nbgrad generator (None: the default generator)."""
    if generator is None:
        return _random.default_generator.rng
    if isinstance(generator, np.random.Generator):
        return generator
    rng = getattr(generator, "rng", None)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError("expected an nbgrad Generator, got %s" % type(generator).__name__)


def _seed_from(generator):
    """A 63-bit seed drawn from ``generator`` (``torch.empty((), dtype=int64).random_()``)."""
    return int(_np_rng(generator).integers(0, 2**63 - 1, dtype=np.int64))


def _randperm(n, generator):
    return _np_rng(generator).permutation(n).tolist()


class Sampler:
    """Base class: an iterable over dataset indices (or batches of indices)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                "replacement should be a boolean value, but got replacement=%s"
                % (self.replacement,)
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                "num_samples=%s" % (self.num_samples,)
            )

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            rng = np.random.Generator(np.random.PCG64(_seed_from(None)))
        else:
            rng = _np_rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples, dtype=np.int64).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from rng.permutation(n).tolist()
            yield from rng.permutation(n).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                "num_samples=%s" % (num_samples,)
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                "replacement should be a boolean value, but got replacement=%s" % (replacement,)
            )
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape %s"
                % (tuple(w.shape),)
            )
        self.weights = creation.tensor(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        w = self.weights.numpy()
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > int((w > 0).sum()):
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        rng = _np_rng(self.generator)
        yield from rng.choice(
            len(w), size=self.num_samples, replace=self.replacement, p=w / w.sum()
        ).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                "batch_size should be a positive integer value, but got "
                "batch_size=%s" % (batch_size,)
            )
        if not isinstance(drop_last, bool):
            raise ValueError(
                "drop_last should be a boolean value, but got drop_last=%s" % (drop_last,)
            )
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            args = [sampler_iter] * self.batch_size
            for batch in zip(*args):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
