"""nbgrad.utils.data: datasets, samplers, default_collate and the DataLoader (num_workers=0;
worker processes are tested in test_data_workers.py)."""

import collections

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.random import Generator
from nbgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


def make_ds(n=10):
    x = nbgrad.arange(n * 2, dtype=nbgrad.float32).reshape(n, 2)
    y = nbgrad.arange(n)
    return TensorDataset(x, y)


def labels(loader):
    return [b[1].tolist() for b in loader]


# ------------------------------------------------------------------------------------------
# datasets


def test_tensor_dataset():
    ds = make_ds(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    xs, ys = ds[1:3]
    assert xs.shape == (2, 2) and ys.tolist() == [1, 2]
    assert len(TensorDataset(nbgrad.ones(4))) == 4


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(nbgrad.ones(3, 2), nbgrad.ones(4))


def test_dataset_base_and_concat_subset_stack():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    a, b = make_ds(3), make_ds(4)
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 7
    assert c[3][1].item() == 0 and c[-1][1].item() == 3
    s = Subset(make_ds(10), [9, 0, 4])
    assert len(s) == 3 and [s[i][1].item() for i in range(3)] == [9, 0, 4]
    st = StackDataset(make_ds(3), make_ds(3))
    assert len(st) == 3 and st[1][0][1].item() == 1
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(make_ds(3), make_ds(4))


def test_random_split_lengths_fractions_and_reproducibility():
    ds = make_ds(10)
    parts = random_split(ds, [3, 7], generator=Generator().manual_seed(42))
    assert [len(p) for p in parts] == [3, 7]
    idx = sorted(parts[0].indices + parts[1].indices)
    assert idx == list(range(10))
    again = random_split(ds, [3, 7], generator=Generator().manual_seed(42))
    assert again[0].indices == parts[0].indices
    assert [len(p) for p in random_split(range(30), [0.3, 0.3, 0.4])] == [9, 9, 12]
    assert [len(p) for p in random_split(range(10), [0.25, 0.75])] == [3, 7]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])
    nbgrad.manual_seed(5)
    a = random_split(ds, [5, 5])[0].indices
    nbgrad.manual_seed(5)
    assert random_split(ds, [5, 5])[0].indices == a


# ------------------------------------------------------------------------------------------
# DataLoader


def test_sequential_batches_and_len():
    ds = make_ds(10)
    dl = DataLoader(ds, batch_size=3)
    assert len(dl) == 4
    batches = list(dl)
    assert labels(batches) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    x, y = batches[0]
    assert isinstance(batches[0], list)  # a tuple sample collates to a list
    assert x.shape == (3, 2) and x.dtype is nbgrad.float32 and y.dtype is nbgrad.int64
    dl = DataLoader(ds, batch_size=3, drop_last=True)
    assert len(dl) == 3 and labels(dl) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(DataLoader(ds)) == 10
    assert [b[1].shape for b in DataLoader(ds)][0] == (1,)
    assert len(DataLoader(ds, batch_size=5)) == 2 and len(DataLoader(ds, batch_size=20)) == 1


def test_shuffle_same_seed_same_order_new_epoch_new_permutation():
    ds = make_ds(20)
    dl1 = DataLoader(ds, batch_size=4, shuffle=True, generator=Generator().manual_seed(0))
    dl2 = DataLoader(ds, batch_size=4, shuffle=True, generator=Generator().manual_seed(0))
    e1a, e1b = labels(dl1), labels(dl1)
    e2a, e2b = labels(dl2), labels(dl2)
    assert e1a == e2a and e1b == e2b  # same seed -> same order, epoch by epoch
    assert e1a != e1b  # a new permutation every epoch
    for epoch in (e1a, e1b):
        assert sorted(sum(epoch, [])) == list(range(20))
    dl3 = DataLoader(ds, batch_size=4, shuffle=True, generator=Generator().manual_seed(1))
    assert labels(dl3) != e1a
    # no generator: the default generator (nbgrad.manual_seed) decides
    nbgrad.manual_seed(7)
    d1 = labels(DataLoader(ds, batch_size=4, shuffle=True))
    nbgrad.manual_seed(7)
    d2 = labels(DataLoader(ds, batch_size=4, shuffle=True))
    assert d1 == d2 and sorted(sum(d1, [])) == list(range(20))
    assert d1 != labels(DataLoader(ds, batch_size=4, shuffle=True))


def test_shuffle_with_drop_last_keeps_full_batches_only():
    dl = DataLoader(
        make_ds(10),
        batch_size=4,
        shuffle=True,
        drop_last=True,
        generator=Generator().manual_seed(3),
    )
    out = labels(dl)
    assert len(dl) == 2 and [len(b) for b in out] == [4, 4]
    assert len(set(sum(out, []))) == 8


def test_argument_errors_match_pytorch():
    ds = make_ds(4)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, shuffle=True, sampler=SequentialSampler(ds))
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=BatchSampler(SequentialSampler(ds), 2, False))
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(SequentialSampler(ds), 2, 1)
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        dl.batch_size = 3


def test_custom_sampler_batch_sampler_collate_fn_and_no_autobatching():
    ds = make_ds(6)
    dl = DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert labels(dl) == [[5, 4], [3, 2], [1, 0]]
    dl = DataLoader(ds, batch_sampler=[[0, 5], [1]])
    assert labels(dl) == [[0, 5], [1]]
    dl = DataLoader(ds, batch_size=4, collate_fn=lambda batch: len(batch))
    assert list(dl) == [4, 2]
    dl = DataLoader(ds, batch_size=None)
    first = next(iter(dl))  # default_convert: a tuple sample becomes a list (PyTorch)
    assert isinstance(first, list) and first[1].item() == 0 and first[0].shape == (2,)
    assert len(dl) == 6
    dl = DataLoader(ds, batch_size=3, num_workers=2)  # worker processes, same batches
    assert labels(dl) == [[0, 1, 2], [3, 4, 5]]
    assert get_worker_info() is None


def test_dict_and_numpy_datasets():
    class DictDS(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full(3, i, np.float32), "y": i, "w": float(i) / 2, "name": "s%d" % i}

    b = next(iter(DataLoader(DictDS(), batch_size=2)))
    assert set(b) == {"x", "y", "w", "name"}
    assert b["x"].shape == (2, 3) and b["x"].dtype is nbgrad.float32
    assert b["y"].tolist() == [0, 1] and b["y"].dtype is nbgrad.int64
    assert b["w"].dtype is nbgrad.float64 and b["w"].tolist() == [0.0, 0.5]
    assert b["name"] == ["s0", "s1"] or b["name"] == ("s0", "s1")


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


# ------------------------------------------------------------------------------------------
# samplers


def test_samplers():
    ds = make_ds(10)
    assert list(SequentialSampler(ds)) == list(range(10))
    g = Generator().manual_seed(0)
    perm = list(RandomSampler(ds, generator=g))
    assert sorted(perm) == list(range(10))
    assert list(RandomSampler(ds, generator=Generator().manual_seed(0))) == perm
    rs = RandomSampler(ds, replacement=True, num_samples=25, generator=g)
    draws = list(rs)
    assert len(rs) == 25 and len(draws) == 25 and all(0 <= d < 10 for d in draws)
    long = list(RandomSampler(ds, num_samples=23, generator=g))
    assert len(long) == 23
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(ds, num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(ds, replacement=1)
    sub = list(SubsetRandomSampler([3, 5, 7], generator=g))
    assert sorted(sub) == [3, 5, 7]
    w = list(WeightedRandomSampler([0, 0, 1.0, 0], 6, generator=g))
    assert w == [2] * 6
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False, generator=g)) == [0, 1, 2]
    bs = BatchSampler(SequentialSampler(range(10)), 3, False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = BatchSampler(SequentialSampler(range(10)), 3, True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3


# ------------------------------------------------------------------------------------------
# collate: same structure as torch.utils.data.default_collate

Point = collections.namedtuple("Point", "x y")


def _structure(obj):
    """Replace tensors by (shape, values, dtype name) for cross-library comparison."""
    if hasattr(obj, "numpy") and hasattr(obj, "dtype") and not isinstance(obj, np.ndarray):
        return ("T", tuple(obj.shape), obj.tolist(), str(obj.dtype).split(".")[-1])
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: _structure(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj).__name__, tuple(_structure(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_structure(v) for v in obj])
    return obj


def batches(lib):
    return [
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [(1, 2.0), (3, 4.0)],
        [[1, 2], [3, 4]],
        [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
        [Point(1, 2.0), Point(3, 4.0)],
        [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)],
        [np.float64(1.5), np.float64(2.5)],
        [np.int32(1), np.int32(2)],
        [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
        [(lib.tensor([1, 2]), 1), (lib.tensor([3, 4]), 2)],
        [
            collections.OrderedDict(z=lib.tensor(1.0), a=2),
            collections.OrderedDict(z=lib.tensor(2.0), a=3),
        ],
    ]


@needs_torch
def test_default_collate_matches_pytorch():
    from torch.utils.data import default_collate as tcollate, default_convert as tconvert

    for ours, theirs in zip(batches(nbgrad), batches(torch)):
        assert _structure(default_collate(ours)) == _structure(tcollate(theirs)), ours
        assert _structure(default_convert(ours)) == _structure(tconvert(theirs)), ours


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError):
        default_collate([nbgrad.ones(2), nbgrad.ones(3)])  # stack of unequal shapes


@needs_torch
def test_loader_batches_match_pytorch_for_sequential_loading():
    xs = np.arange(30, dtype=np.float32).reshape(10, 3)
    ys = np.arange(10)
    ours = DataLoader(TensorDataset(nbgrad.tensor(xs), nbgrad.tensor(ys)), batch_size=4)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(xs), torch.tensor(ys)), batch_size=4
    )
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert _structure(a) == _structure(b)
