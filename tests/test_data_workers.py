"""DataLoader(num_workers>0): worker processes, seeding, errors, shutdown, pin_memory.

The workers start with the platform default (fork on Linux), so each test costs a few ms of
process start-up; datasets are tiny.
"""

import gc
import mmap
import multiprocessing
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    _worker,
    get_worker_info,
)

PIN_WARNING = (
    "'pin_memory' argument is set as true but no accelerator is found, then device pinned "
    "memory won't be used."
)


def make_ds(n=10):
    x = nbgrad.arange(n * 2, dtype=nbgrad.float32).reshape(n, 2)
    y = nbgrad.arange(n)
    return TensorDataset(x, y)


def structure(batch):
    """Nested lists of (shape, dtype name, values) for tensors of either library."""
    if isinstance(batch, (list, tuple)):
        return [structure(b) for b in batch]
    if isinstance(batch, dict):
        return {k: structure(v) for k, v in batch.items()}
    if hasattr(batch, "tolist") and hasattr(batch, "dtype"):
        return (
            tuple(batch.shape),
            str(batch.dtype).replace("torch.", "").replace("nbgrad.", ""),
            batch.tolist(),
        )
    return batch


def no_children(pids=()):
    """No worker process is left: none is active (active_children also reaps finished ones)
    and none of ``pids`` is still a process (not even a zombie).  No gc.collect(): iterators
    are freed by reference counting, their workers must be gone already."""
    left = multiprocessing.active_children()
    zombies = [p for p in pids if os.path.exists("/proc/%d" % p)]
    return not left and not zombies


class PidDataset(Dataset):
    """Sample i: (i, this process's pid)."""

    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, os.getpid()


class SeedDataset(Dataset):
    """Sample i: what the worker's random state and WorkerInfo look like."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "i": i,
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "initial_seed": nbgrad.initial_seed(),
            "py": random.random(),
            "np": float(np.random.rand()),
            "nb": nbgrad.rand(1).item(),
            "dataset_type": type(info.dataset).__name__,
        }


class FailingDataset(Dataset):
    def __init__(self, exc, at=3):
        self.exc, self.at = exc, at

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.at:
            raise self.exc
        return i


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


# ------------------------------------------------------------------------------------------
# batches and order


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(batch_size=3),
        dict(batch_size=3, drop_last=True),
        dict(batch_size=None),
        dict(batch_size=2, sampler=[7, 1, 5, 3, 0]),
        dict(batch_sampler=[[0, 5], [1], [9, 8, 7]]),
        dict(batch_size=4, collate_fn=len),
    ],
)
@pytest.mark.parametrize("prefetch_factor", [1, 2])
def test_batches_and_order_match_single_process(kwargs, prefetch_factor):
    ds = make_ds(10)
    want = [structure(b) for b in DataLoader(ds, **kwargs)]
    dl = DataLoader(ds, num_workers=2, prefetch_factor=prefetch_factor, **kwargs)
    assert len(dl) == len(want)
    got = [structure(b) for b in dl]
    assert got == want
    assert no_children()


def test_shuffle_with_seeded_generator_matches_single_process():
    ds = make_ds(12)
    orders = []
    for workers in (0, 2):
        g = nbgrad.random.Generator(7)
        dl = DataLoader(ds, batch_size=5, shuffle=True, generator=g, num_workers=workers)
        orders.append([[b[1].tolist() for b in dl] for _ in range(2)])  # two epochs
    assert orders[0] == orders[1]
    assert orders[0][0] != orders[0][1]  # a new permutation each epoch
    # the default generator advances exactly as with num_workers=0 (one base seed per pass)
    draws = []
    for workers in (0, 2):
        nbgrad.manual_seed(3)
        order = [
            b[1].tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers)
        ]
        draws.append((order, nbgrad.rand(3).tolist()))
    assert draws[0] == draws[1]


def test_batches_are_assigned_round_robin():
    dl = DataLoader(PidDataset(8), batch_size=2, num_workers=2)
    batches = list(dl)
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    pids = [b[1].tolist() for b in batches]
    assert all(len(set(p)) == 1 for p in pids)  # one worker per batch
    assert pids[0] == pids[2] and pids[1] == pids[3] and pids[0] != pids[1]
    assert os.getpid() not in {p[0] for p in pids}
    assert no_children({p[0] for p in pids})


def test_out_of_order_returns_every_batch():
    class Slow(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 0:
                time.sleep(0.4)
            return i

    got = [b.tolist() for b in DataLoader(Slow(), batch_size=1, num_workers=2, in_order=False)]
    assert sorted(got) == [[i] for i in range(6)]
    assert got[0] != [0]  # the slow first batch did not hold the others back
    got = [b.tolist() for b in DataLoader(Slow(), batch_size=1, num_workers=2)]
    assert got == [[i] for i in range(6)]


def test_numpy_and_dict_samples_cross_processes():
    class D(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full((2, 3), i, np.float32), "y": i, "name": "s%d" % i}

    want = [structure(b) for b in DataLoader(D(), batch_size=2)]
    got = [structure(b) for b in DataLoader(D(), batch_size=2, num_workers=2)]
    assert got == want
    b = next(iter(DataLoader(D(), batch_size=2, num_workers=1)))
    assert isinstance(b["x"], nbgrad.Tensor) and b["x"].dtype is nbgrad.float32
    b["x"].add_(1)  # batches are writeable tensors
    assert b["x"][1, 0, 0].item() == 2.0


@needs_torch
def test_batches_match_pytorch_with_workers():
    xs = np.arange(30, dtype=np.float32).reshape(10, 3)
    ys = np.arange(10)
    ours = DataLoader(
        TensorDataset(nbgrad.tensor(xs), nbgrad.tensor(ys)), batch_size=4, num_workers=2
    )
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(xs), torch.tensor(ys)),
        batch_size=4,
        num_workers=2,
    )
    assert len(ours) == len(theirs)
    assert [structure(a) for a in ours] == [structure(b) for b in theirs]


# ------------------------------------------------------------------------------------------
# worker info, seeding, worker_init_fn


def test_worker_info_and_seeds():
    assert get_worker_info() is None
    nbgrad.manual_seed(123)
    base = int(nbgrad.random.Generator(123).rng.integers(0, 2**63 - 1, dtype=np.int64))
    rows = list(DataLoader(SeedDataset(), batch_size=None, num_workers=2))
    assert get_worker_info() is None
    assert [r["i"] for r in rows] == [0, 1, 2, 3]
    assert [r["id"] for r in rows] == [0, 1, 0, 1]
    for r in rows:
        seed = base + r["id"]
        assert r["num_workers"] == 2 and r["dataset_type"] == "SeedDataset"
        assert r["seed"] == seed and r["initial_seed"] == seed
    first = {r["id"]: r for r in rows[:2]}
    for wid, r in first.items():
        seed = base + wid
        assert r["py"] == random.Random(seed).random()
        rs = np.random.RandomState(_worker._generate_state(base, wid))
        assert r["np"] == float(rs.rand())
        nbgrad.manual_seed(seed)
        assert r["nb"] == nbgrad.rand(1).item()
    assert first[0]["py"] != first[1]["py"] and first[0]["np"] != first[1]["np"]
    # a new pass draws a new base seed
    nbgrad.manual_seed(123)
    seeds = [
        {b["seed"] for b in DataLoader(SeedDataset(), batch_size=None, num_workers=2)}
        for _ in range(2)
    ]
    assert seeds[0] != seeds[1]


@needs_torch
def test_numpy_worker_state_matches_pytorch():
    from torch.utils.data._utils.worker import _generate_state

    for base, wid in [(0, 0), (12345, 1), (2**63 - 2, 3), (987654321987, 7)]:
        assert _worker._generate_state(base, wid) == _generate_state(base, wid)


def test_worker_init_fn_configures_each_worker():
    calls = []

    class D(Dataset):
        offset = 0

        def __len__(self):
            return 6

        def __getitem__(self, i):
            return i + self.offset

    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id
        info.dataset.offset = 100 * (worker_id + 1)
        calls.append(worker_id)  # in the worker's memory only

    got = [b for b in DataLoader(D(), batch_size=None, num_workers=2, worker_init_fn=init)]
    assert got == [100, 201, 102, 203, 104, 205]
    assert calls == []


def test_worker_init_fn_error_is_reraised():
    def init(worker_id):
        if worker_id == 1:
            raise ValueError("bad init")

    it = iter(DataLoader(make_ds(4), batch_size=1, num_workers=2, worker_init_fn=init))
    assert next(it)[1].tolist() == [0]
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 1"):
        next(it)
    assert next(it)[1].tolist() == [2]  # the worker lives on; later tasks are served
    del it
    assert no_children()


# ------------------------------------------------------------------------------------------
# persistent workers and shutdown


def worker_pids(loader):
    return {p for b in loader for p in b[1].tolist()}


def test_persistent_workers_reuse_processes_across_epochs():
    dl = DataLoader(PidDataset(8), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = [b[0].tolist() for b in dl]
    p1 = worker_pids(dl)
    p2 = worker_pids(dl)
    assert e1 == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert p1 == p2 and len(p1) == 2
    assert {p.pid for p in multiprocessing.active_children()} == p1  # alive between epochs
    # an epoch stopped early: the next one still starts from the beginning
    it = iter(dl)
    next(it)
    assert [b[0].tolist() for b in dl] == e1
    del dl, it
    assert no_children(p1)


def test_non_persistent_workers_are_new_each_epoch_and_exit():
    dl = DataLoader(PidDataset(4), batch_size=2, num_workers=2)
    p1 = worker_pids(dl)
    assert no_children(p1)
    p2 = worker_pids(dl)
    assert p1.isdisjoint(p2)
    assert no_children(p2)


def test_workers_exit_when_iterator_is_deleted_early():
    it = iter(DataLoader(PidDataset(8), batch_size=2, num_workers=2))
    pids = set(next(it)[1].tolist())
    workers = list(it._workers)
    assert all(w.is_alive() and w.daemon for w in workers)
    del it
    assert all(w.exitcode == 0 for w in workers)  # they got the final signal, not a kill
    assert no_children(pids | {w.pid for w in workers})


def test_workers_exit_when_iterator_in_a_reference_cycle_is_collected():
    # the collector finalizes the index queues before the iterator: the final signal must
    # still reach the workers (else they would only end when terminated, after 5 s)
    it = iter(DataLoader(PidDataset(8), batch_size=2, num_workers=2))
    next(it)
    it.cycle = it
    workers = list(it._workers)
    del it
    t0 = time.perf_counter()
    gc.collect()
    assert time.perf_counter() - t0 < 2
    assert all(w.exitcode == 0 for w in workers)
    assert no_children({w.pid for w in workers})


# ------------------------------------------------------------------------------------------
# errors


def test_worker_exception_is_reraised_with_prefix_and_traceback():
    it = iter(DataLoader(FailingDataset(ValueError("bad sample 3")), batch_size=1, num_workers=2))
    assert [next(it).item() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError) as ei:
        next(it)
    msg = str(ei.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\n")
    assert "Original Traceback (most recent call last):" in msg
    assert "in __getitem__" in msg and "ValueError: bad sample 3" in msg
    assert next(it).item() == 4  # iteration can go on, as in PyTorch
    del it, ei
    assert no_children()


def test_worker_keyerror_and_unconstructible_exception():
    with pytest.raises(KeyError) as ei:
        list(DataLoader(FailingDataset(KeyError("k")), batch_size=2, num_workers=2))
    assert str(ei.value).startswith("Caught KeyError in DataLoader worker process 1.\n")
    assert "\\n" not in str(ei.value)  # the message is not repr-escaped
    del ei
    with pytest.raises(RuntimeError, match="Caught TwoArgError in DataLoader worker process 0"):
        list(DataLoader(FailingDataset(TwoArgError(1, 2), at=0), batch_size=2, num_workers=2))
    assert no_children()


@needs_torch
def test_exception_message_format_matches_pytorch():
    class TD(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 1:
                raise ValueError("bad")
            return i

    it = iter(torch.utils.data.DataLoader(TD(), batch_size=1, num_workers=2))
    with pytest.raises(ValueError) as theirs:
        list(it)
    it._shutdown_workers()  # its re-raise leaves the iterator in a reference cycle
    with pytest.raises(ValueError) as ours:
        list(DataLoader(FailingDataset(ValueError("bad"), at=1), batch_size=1, num_workers=2))
    first = [str(e.value).split("\n")[:2] for e in (theirs, ours)]
    assert first[0] == first[1]
    del theirs, ours, it
    assert no_children()


def test_timeout():
    class Sleepy(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 1:
                time.sleep(1.0)
            return i

    it = iter(DataLoader(Sleepy(), batch_size=1, num_workers=2, timeout=0.2))
    assert next(it).item() == 0
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0\.2 seconds"):
        next(it)
    assert time.perf_counter() - t0 < 0.9
    del it
    assert no_children()
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Sleepy(), num_workers=1, timeout=-1)
    with pytest.raises(AssertionError, match="requires timeout == 0"):  # as PyTorch
        iter(DataLoader(Sleepy(), timeout=1))


class Killer(Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return i


@pytest.mark.parametrize(
    "how, cause",
    [
        ("kill", r"DataLoader worker \(pid \d+\) is killed by signal: Killed\. $"),
        ("exit", r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\. "),
    ],
)
def test_worker_killed_raises_runtime_error(how, cause):
    import re

    t0 = time.perf_counter()
    it = iter(DataLoader(Killer(how), batch_size=1, num_workers=2))
    pids = [w.pid for w in it._workers]
    with pytest.raises(RuntimeError) as ei:
        for _ in it:
            pass
    assert re.fullmatch(
        r"DataLoader worker \(pid\(s\) %d\) exited unexpectedly" % pids[1], str(ei.value)
    )
    assert re.match(cause, str(ei.value.__cause__))
    del it, ei
    assert no_children(pids)
    assert time.perf_counter() - t0 < 3


# ------------------------------------------------------------------------------------------
# IterableDataset


class Stream(IterableDataset):
    """range(start, end); with ``shard`` each worker yields every num_workers-th element."""

    def __init__(self, end, shard=True):
        self.end, self.shard = end, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.end))
        return iter(range(info.id, self.end, info.num_workers))


def test_iterable_dataset_replicas_and_sharding():
    # without sharding each worker iterates its own full replica
    got = [b.tolist() for b in DataLoader(Stream(5, shard=False), batch_size=2, num_workers=2)]
    assert got == [[0, 1], [0, 1], [2, 3], [2, 3], [4], [4]]
    # sharded through get_worker_info: every element once; worker 0's shard is longer
    got = [b.tolist() for b in DataLoader(Stream(7), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5]]
    got = [b.tolist() for b in DataLoader(Stream(7), batch_size=2, num_workers=2, drop_last=True)]
    assert got == [[0, 2], [1, 3], [4, 6]]
    got = [b for b in DataLoader(Stream(5), batch_size=None, num_workers=2)]
    assert got == [0, 1, 2, 3, 4]
    # more workers than data: the idle worker ends at once
    assert [b.tolist() for b in DataLoader(Stream(1), batch_size=4, num_workers=2)] == [[0]]
    assert no_children()


def test_iterable_dataset_persistent_workers_two_epochs():
    dl = DataLoader(Stream(7), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in dl] == [b.tolist() for b in dl] == [[0, 2], [1, 3], [4, 6], [5]]
    del dl
    assert no_children()


def test_iterable_dataset_len_warning():
    class Sized(Stream):
        def __len__(self):
            return 4

    dl = DataLoader(Sized(4, shard=False), batch_size=None, num_workers=2)
    assert len(dl) == 4
    with pytest.warns(UserWarning, match=r"Length of IterableDataset .* was reported to be 4"):
        got = [b for b in dl]
    assert got == [0, 0, 1, 1, 2, 2, 3, 3]


@needs_torch
def test_iterable_dataset_matches_pytorch():
    class TStream(torch.utils.data.IterableDataset):
        def __init__(self, end, shard):
            self.end, self.shard = end, shard

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            if info is None or not self.shard:
                return iter(range(self.end))
            return iter(range(info.id, self.end, info.num_workers))

    for end, shard, bs in [(7, True, 2), (5, False, 2), (9, True, 3), (3, True, 4)]:
        ours = [b.tolist() for b in DataLoader(Stream(end, shard), batch_size=bs, num_workers=2)]
        theirs = [
            b.tolist()
            for b in torch.utils.data.DataLoader(TStream(end, shard), batch_size=bs, num_workers=2)
        ]
        assert ours == theirs


# ------------------------------------------------------------------------------------------
# options


def test_multiprocessing_context_options():
    ds = make_ds(6)
    with pytest.raises(ValueError, match="should specify a valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="should be a valid context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="can only be used with multi-process loading"):
        DataLoader(ds, multiprocessing_context="fork")
    dl = DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="fork")
    assert dl.multiprocessing_context.get_start_method() == "fork"
    assert [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader(ds, num_workers=1, prefetch_factor=0))  # PyTorch's check, on iter()
    assert no_children()


def test_spawn_context():
    ctx = multiprocessing.get_context("spawn")
    dl = DataLoader(make_ds(6), batch_size=4, num_workers=1, multiprocessing_context=ctx)
    assert [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5]]
    assert no_children()


def test_too_many_workers_warns():
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with pytest.warns(
        UserWarning, match="This DataLoader will create %d worker processes" % (n + 1)
    ):
        DataLoader(make_ds(4), num_workers=n + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(make_ds(4), num_workers=1)


# ------------------------------------------------------------------------------------------
# pin_memory


@pytest.mark.skipif(nbgrad.cuda.is_available(), reason="checks the no-accelerator behaviour")
def test_tensor_pin_memory_without_accelerator():
    t = nbgrad.ones(3)
    assert t.is_pinned() is False
    with pytest.raises(
        RuntimeError, match="Cannot access accelerator device when none is available"
    ):
        t.pin_memory()
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.pin_memory"):
        with pytest.raises(RuntimeError, match="CPU device type not an accelerator"):
            t.pin_memory("cpu")
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.is_pinned"):
        assert t.is_pinned("cpu") is False


@needs_torch
@pytest.mark.skipif(nbgrad.cuda.is_available(), reason="checks the no-accelerator behaviour")
def test_tensor_pin_memory_matches_pytorch_without_accelerator():
    if torch.accelerator.is_available():
        pytest.skip("PyTorch sees an accelerator")
    for lib in (torch, nbgrad):
        t = lib.ones(2)
        assert t.is_pinned() is False
        with pytest.raises(RuntimeError) as ei:
            t.pin_memory()
        assert str(ei.value) == "Cannot access accelerator device when none is available."


@pytest.mark.skipif(nbgrad.cuda.is_available(), reason="checks the no-accelerator behaviour")
@pytest.mark.parametrize("workers", [0, 2])
def test_loader_pin_memory_warns_without_accelerator(workers):
    ds = make_ds(5)
    want = [structure(b) for b in DataLoader(ds, batch_size=2)]
    dl = DataLoader(ds, batch_size=2, num_workers=workers, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator"):
        got = [structure(b) for b in dl]
    assert got == want
    with pytest.warns(UserWarning, match="pin_memory_device is deprecated"):
        iter(DataLoader(ds, pin_memory=True, pin_memory_device="cuda"))


@needs_torch
def test_loader_pin_memory_warning_text_matches_pytorch():
    if torch.accelerator.is_available() or nbgrad.cuda.is_available():
        pytest.skip("an accelerator is present")
    for lib in (torch, nbgrad):
        dl = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.ones(2)), pin_memory=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            list(dl)
        assert [str(x.message) for x in w] == [PIN_WARNING]


class Pinnable:
    """A custom batch member with its own pin_memory (PyTorch calls it)."""

    def __init__(self, v, pinned=False):
        self.v, self.pinned = v, pinned

    def pin_memory(self):
        return Pinnable(self.v, True)


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_pins_every_tensor_when_an_accelerator_is_present(monkeypatch, workers):
    """With CUDA available the loader pins each batch (tensors and objects with a pin_memory
    method, inside containers); the allocation itself is stood in for here."""
    pinned = []

    def fake_pin_memory(self, device=None):
        out = self.clone()
        pinned.append(out)
        return out

    monkeypatch.setattr(nbgrad.cuda, "is_available", lambda: True)
    monkeypatch.setattr(nbgrad.Tensor, "pin_memory", fake_pin_memory)

    class D(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"x": np.full(2, i, np.float32), "p": Pinnable(i)}

    def collate(samples):
        return {
            "x": nbgrad.stack([nbgrad.from_numpy(s["x"]) for s in samples]),
            "p": [s["p"] for s in samples],
        }

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "no accelerator" warning
        batches = list(
            DataLoader(D(), batch_size=2, num_workers=workers, pin_memory=True, collate_fn=collate)
        )
    assert [b["x"].tolist() for b in batches] == [[[0, 0], [1, 1]], [[2, 2], [3, 3]]]
    assert len(pinned) == 2 and all(b["x"] is p for b, p in zip(batches, pinned))
    assert all(p.pinned for b in batches for p in b["p"])


# ------------------------------------------------------------------------------------------
# transport


def _mapped(arr):
    b = arr
    while b is not None and not isinstance(b, mmap.mmap):
        b = b.obj if isinstance(b, memoryview) else getattr(b, "base", None)
    return b is not None


def test_large_batches_cross_in_shared_memory_small_ones_through_the_pipe():
    class Images(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return np.full((3, 128, 128), i, np.float32), i  # 192 KiB a sample

    fds = len(os.listdir("/proc/self/fd"))
    want = [structure(b) for b in DataLoader(Images(), batch_size=3)]
    batches = list(DataLoader(Images(), batch_size=3, num_workers=2))
    assert [structure(b) for b in batches] == want
    x = batches[0][0]
    assert _mapped(x._data) == hasattr(os, "memfd_create")  # 576 KiB: shared memory
    assert not _mapped(batches[0][1]._data)  # the labels: through the pipe
    x.add_(1)  # writeable, private to this process
    assert x[0, 0, 0, 0].item() == 1.0
    del batches, x
    assert len(os.listdir("/proc/self/fd")) == fds  # no descriptor left open
    assert no_children()


def test_transport_pickling_keeps_tensor_state():
    from multiprocessing.reduction import ForkingPickler

    def roundtrip(t):
        return ForkingPickler.loads(ForkingPickler.dumps(t))

    plain = nbgrad.arange(6.0).reshape(2, 3)
    out = roundtrip(plain)
    assert type(out) is nbgrad.Tensor and out.tolist() == plain.tolist()
    assert out.dtype is plain.dtype and not out.requires_grad
    leaf = nbgrad.ones(3, requires_grad=True)
    assert roundtrip(leaf).requires_grad
    tagged = nbgrad.ones(2)
    tagged.note = "kept"
    assert roundtrip(tagged).note == "kept"
    view = nbgrad.arange(12.0).reshape(3, 4).t()
    out = roundtrip(view)
    assert out.tolist() == view.tolist() and out.stride() == view.stride()
    p = nbgrad.nn.Parameter(nbgrad.ones(2))
    assert isinstance(roundtrip(p), nbgrad.nn.Parameter)
    big = nbgrad.arange(200_000, dtype=nbgrad.float32)  # 800 KB: shared memory
    out = roundtrip(big)
    assert nbgrad.equal(out, big) and out.dtype is nbgrad.float32
