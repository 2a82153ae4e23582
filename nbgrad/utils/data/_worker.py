"""What runs inside a DataLoader worker process (``torch.utils.data._utils.worker``).

Each worker seeds Python's ``random``, nbgrad's default generator (with ``base_seed +
worker_id``) and numpy's legacy global generator (with ``_generate_state``), publishes its
``WorkerInfo`` for ``get_worker_info()``, runs ``worker_init_fn(worker_id)`` and then serves
``(task index, sampler index)`` pairs from its index queue: each batch is fetched and collated
in the worker and put on the shared result queue, pickled (a plain tensor travels as its numpy
array, a large one in shared memory: ``_reduce_tensor_for_transport``).  An exception travels
as an ``ExceptionWrapper`` that the main process re-raises with the worker's traceback.
``None`` on the index queue ends the worker.
"""

import math
import mmap
import os
import queue
import random as _py_random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing import context, reduction
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import random as _random
from ..._tensor import Tensor
from ._fetch import _DatasetKind

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side is still alive while waiting on a queue."""


_SHARED_MIN_BYTES = 1 << 19
"""Arrays from this size on cross processes in shared memory rather than through the pipe."""


def _rebuild_plain_tensor(arr):
    return Tensor._make(arr)


def _rebuild_shared_tensor(df, shape, dtype):
    """Map the memfd that ``df`` (a ``multiprocessing.reduction.DupFd``) hands over: the
    tensor's array is that shared memory, no copy (it is unmapped when the array is freed)."""
    fd = df.detach()
    try:
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        buf = mmap.mmap(fd, count * dtype.itemsize)
    finally:
        os.close(fd)
    return Tensor._make(np.frombuffer(buf, dtype=dtype, count=count).reshape(shape))


def _to_shared_memory(a):
    """``a`` copied into a new anonymous shared-memory file (Linux ``memfd_create``); the
    descriptor travels as a ``DupFd`` (the receiving process fetches it from this one's
    resource sharer, as PyTorch's file-descriptor sharing does)."""
    fd = os.memfd_create("nbgrad-batch", getattr(os, "MFD_CLOEXEC", 0))
    try:
        os.ftruncate(fd, a.nbytes)
        with mmap.mmap(fd, a.nbytes) as m:
            np.frombuffer(m, dtype=a.dtype, count=a.size).reshape(a.shape)[...] = a
        df = reduction.DupFd(fd)
    finally:
        os.close(fd)
    return (_rebuild_shared_tensor, (df, a.shape, a.dtype.str))


def _reduce_tensor_for_transport(t):
    """How a Tensor crosses a multiprocessing queue or pipe (``ForkingPickler``, where
    ``torch.multiprocessing`` registers its own reductions).  A plain contiguous tensor -- what
    collation produces -- travels as its numpy array (a third of the cost of the general
    tensor pickle, which keeps strides, views, hooks and attributes and is used for everything
    else); from 512 KiB on, in shared memory (Linux), so the receiving process maps it instead
    of reading it through the pipe (3-10x faster for image-sized batches)."""
    a = t._data
    if (
        t._requires_grad
        or t.grad_fn is not None
        or t.__dict__
        or not a.flags.c_contiguous
        or not a.flags.writeable
        or a.dtype.kind not in "biufc"
        or not a.dtype.isnative
    ):
        return t.__reduce_ex__(4)
    if (
        a.nbytes >= _SHARED_MIN_BYTES
        and hasattr(os, "memfd_create")
        and context.get_spawning_popen() is None  # not a spawn's arguments: see DupFd
    ):
        try:
            return _to_shared_memory(a)
        except OSError:
            pass  # no memfd (or out of descriptors / memory): the pipe still works
    return (_rebuild_plain_tensor, (a,))


ForkingPickler.register(Tensor, _reduce_tensor_for_transport)

_worker_info = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """Information about the current DataLoader worker process: ``id`` (0 to num_workers - 1),
    ``num_workers``, ``seed`` (this worker's seed) and ``dataset`` (this process's copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """The ``WorkerInfo`` of the DataLoader worker process this is called in; None in the main
    process (``torch.utils.data.get_worker_info``)."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose IterableDataset replica is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (acknowledged by echoing it)."""

    seed: object = None


class KeyErrorMessage(str):
    """str subclass whose repr is itself (a KeyError's message shows its newlines)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, picklable so it can cross processes
    (``torch._utils.ExceptionWrapper``)."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception type here, its message prefixed with where it came from
        ("Caught ValueError in DataLoader worker process 1.\\nOriginal Traceback ...")."""
        msg = "Caught %s %s.\nOriginal %s" % (self.exc_type.__name__, self.where, self.exc_msg)
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # no frame -> exception -> traceback -> frame cycle keeps the iterator


def _generate_state(base_seed, worker_id):
    """Four 32-bit words seeding numpy's global generator in a worker: numpy's SeedSequence
    hashing of ``[worker_id, base_seed low, base_seed high, 0]``, as PyTorch computes it."""
    INIT_A = 0x43B0D7E5
    MULT_A = 0x931E8875
    INIT_B = 0x8B51F9DD
    MULT_B = 0x58F38DED
    MIX_MULT_L = 0xCA01F9DD
    MIX_MULT_R = 0x4973F715
    XSHIFT = 4 * 8 // 2
    MASK32 = 0xFFFFFFFF

    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        value = (value ^ (value >> XSHIFT)) & MASK32
        return value

    def mix(x, y):
        result_x = (MIX_MULT_L * x) & MASK32
        result_y = (MIX_MULT_R * y) & MASK32
        result = (result_x - result_y) & MASK32
        result = (result ^ (result >> XSHIFT)) & MASK32
        return result

    for i in range(len(pool)):
        pool[i] = hash(entropy[i])
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))

    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = pool[i_dst]
        data_val = (data_val ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        data_val = (data_val ^ (data_val >> XSHIFT)) & MASK32
        state.append(data_val)
    return state


class ManagerWatchdog:
    """Whether the process that started this worker is still alive (its parent pid stays)."""

    def __init__(self):
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self):
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


def _worker_loop(
    dataset_kind,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    persistent_workers,
    shared_seed,
):
    """The body of worker process ``worker_id`` (see the module docstring)."""
    try:
        seed = base_seed + worker_id
        _py_random.seed(seed)
        _random.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))

        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(
                dataset_kind, dataset, auto_collation, collate_fn, drop_last
            )
        except Exception:
            init_exception = ExceptionWrapper(where="in DataLoader worker process %d" % worker_id)

        # An IterableDataset replica can end before the others: the worker then reports
        # _IterableDatasetStopIteration once and idles (iteration_end) until it gets None.
        iteration_end = False
        watchdog = ManagerWatchdog()
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))  # acknowledge
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(
                    dataset_kind, dataset, auto_collation, collate_fn, drop_last
                )
                continue
            elif r is None:
                break  # the final signal
            elif done_event.is_set() or iteration_end:
                continue  # shutting down or exhausted: skip work until the final signal
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where="in DataLoader worker process %d" % worker_id)
            data_queue.put((idx, data))
            del data, idx, index, r  # free the batch while waiting for the next task
    except KeyboardInterrupt:
        pass  # the main process raises KeyboardInterrupt itself
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
