"""``nbgrad.utils.data``: datasets, samplers and the DataLoader, in the main process or in
worker processes (the ``torch.utils.data`` API)."""

from .collate import default_collate, default_convert  # noqa: F401
from .dataloader import DataLoader, get_worker_info  # noqa: F401
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,  # noqa: F401
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler  # noqa: F401
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,  # noqa: F401
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
