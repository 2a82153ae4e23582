"""``DistributedSampler`` (``torch.utils.data.distributed``): each rank's share of a dataset.

Every rank draws the same permutation (seeded by ``seed + epoch``: call ``set_epoch`` at the
start of each epoch for a new one) and takes every ``num_replicas``-th index from its ``rank``
on.  Without ``drop_last`` the indices are padded with the first ones so that every rank gets
``ceil(len / num_replicas)``; with it the tail is dropped so that every rank gets
``floor(len / num_replicas)``.  The permutation is nbgrad's (NumPy's PCG64), so it is not the
one PyTorch draws for the same seed.
"""

import math

from ... import distributed as dist
from ...random import Generator
from .sampler import Sampler, _randperm

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Restrict data loading to this rank's subset of ``dataset`` (pass it as a DataLoader's
    ``sampler``).  ``num_replicas`` and ``rank`` default to the process group's."""

    def __init__(
        self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False
    ):
        if num_replicas is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                "Invalid rank %s, rank should be in the interval [0, %s]" % (rank, num_replicas - 1)
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = _randperm(n, Generator(self.seed + self.epoch))
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(
                "Number of indices (%d) does not match total_size (%d)"
                % (len(indices), self.total_size)
            )
        indices = indices[self.rank : self.total_size : self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(
                "Number of subsampled indices (%d) does not match num_samples (%d)"
                % (len(indices), self.num_samples)
            )
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch: with ``shuffle``, each epoch draws another permutation (the same on
        every rank)."""
        self.epoch = epoch
