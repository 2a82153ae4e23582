"""``DataLoader``: batches from a dataset (``torch.utils.data.DataLoader``).

``num_workers=0`` loads in the main process.  ``num_workers > 0`` starts that many worker
processes (from ``multiprocessing_context``; the platform's default start method otherwise,
fork on Linux) as PyTorch does: each worker has its own index queue, batches are assigned
round-robin, ``prefetch_factor`` batches per worker are in flight, results come back through
one result queue (pickled; a tensor crosses as one numpy buffer of its bytes) and are returned
in sampler order (``in_order=True``).  Worker errors are re-raised in the main process with the
worker's traceback; a worker that dies raises "DataLoader worker (pid(s) ...) exited
unexpectedly".  ``persistent_workers=True`` keeps the workers across epochs.

``pin_memory=True`` pins batches when CUDA is available; otherwise it warns (as PyTorch does
without an accelerator) and goes on.
"""

import atexit
import collections.abc
import copy
import itertools
import multiprocessing as python_multiprocessing
import os
import queue
import signal
import threading
import time
import warnings
import weakref
from multiprocessing import connection as _mp_connection
from pickle import PicklingError

from ... import cuda as _cuda
from ..._tensor import Tensor
from . import _worker, collate as _collate
from ._fetch import _DatasetKind
from ._worker import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _seed_from

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _collate.default_collate
default_convert = _collate.default_convert

_python_exit_status = [False]


def _set_python_exit_flag():
    _python_exit_status[0] = True


atexit.register(_set_python_exit_flag)

# The processes and queues of each live multi-process iterator, by id(iterator).  When an
# iterator is garbage in a reference cycle, the collector runs the queues' own finalizers (which
# stop their feeder threads) before the iterator's __del__, whose final ``None`` to each worker
# would then never be sent and every worker would only end when terminated.  Holding them here
# keeps them alive until _shutdown_workers is done with them.
_worker_resources = {}

_persistent_workers_atexit_lock = threading.Lock()
_persistent_workers_atexit_registered = [False]
_persistent_workers_atexit = weakref.WeakSet()


class _InfiniteConstantSampler(Sampler):
    """``itertools.repeat(None)``: the sampler of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def pin_memory(data, device=None):
    """``data`` with every tensor (or object with a ``pin_memory()`` method) in it pinned,
    containers rebuilt with their type (``torch.utils.data._utils.pin_memory.pin_memory``)."""
    if isinstance(data, Tensor):
        return data.pin_memory()
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(sample, device) for k, sample in data.items()})
                return clone
            return type(data)({k: pin_memory(sample, device) for k, sample in data.items()})
        except TypeError:
            return {k: pin_memory(sample, device) for k, sample in data.items()}
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(pin_memory(sample, device) for sample in data))
        return type(data)(pin_memory(sample, device) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, item in enumerate(data):
                    clone[i] = pin_memory(item, device)
                return clone
            return type(data)([pin_memory(sample, device) for sample in data])
        except TypeError:
            return [pin_memory(sample, device) for sample in data]
    return data


class DataLoader:
    """Combine a dataset and a sampler and iterate over batches.

    DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
               num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
               worker_init_fn=None, multiprocessing_context=None, generator=None, *,
               prefetch_factor=None, persistent_workers=False, pin_memory_device="",
               in_order=True)
    """

    __initialized = False

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to "
                "disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in "
                "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                "otherwise set prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle "
                    "option, but got shuffle=%s" % (shuffle,)
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler "
                    "option, but got sampler=%s" % (sampler,)
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    "batch_sampler option, but got batch_sampler=%s" % (batch_sampler,)
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, "
                    "shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is "
                    "mutually exclusive with drop_last"
                )

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None  # len(loader) of an IterableDataset, to warn
        self._iterator = None  # the persistent workers' iterator
        self.check_worker_number_rationality()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = python_multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start "
                            "method in %r, but got multiprocessing_context=%r"
                            % (valid_start_methods, multiprocessing_context)
                        )
                    multiprocessing_context = python_multiprocessing.get_context(
                        multiprocessing_context
                    )
                if not isinstance(
                    multiprocessing_context, python_multiprocessing.context.BaseContext
                ):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context object or "
                        "a string specifying the start method, but got "
                        "multiprocessing_context=%s" % (multiprocessing_context,)
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    "(num_workers > 0), but got num_workers=%s" % (self.num_workers,)
                )
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(
                "%s attribute should not be set after %s is initialized"
                % (attr, type(self).__name__)
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        # With persistent workers one iterator (and its worker processes) serves every epoch.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil

                length = (
                    length // self.batch_size
                    if self.drop_last
                    else int(ceil(length / self.batch_size))
                )
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        """Warn when more workers are asked for than this process may use CPUs (PyTorch's
        check: ``os.sched_getaffinity`` where it exists, ``os.cpu_count()`` otherwise)."""
        if not self.num_workers:
            return
        max_num_worker_suggest = _cpu_count()
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            if max_num_worker_suggest is not None:
                suggested = (
                    "Our suggested max number of worker in current system is %d%s, which is "
                    "smaller than what this DataLoader is going to create."
                    % (
                        max_num_worker_suggest,
                        "" if cpuset_checked else " (`cpuset` is not taken into account)",
                    )
                )
            else:
                suggested = (
                    "DataLoader is not able to compute a suggested max number of worker in "
                    "current system."
                )
            warnings.warn(
                "This DataLoader will create %d worker processes in total. %s Please be aware "
                "that excessive worker creation might get DataLoader running slow or even "
                "freeze, lower the worker number to avoid potential slowness/freeze if "
                "necessary." % (self.num_workers, suggested),
                stacklevel=2,
            )


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._shared_seed = None
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the "
                "device,ignore pin_memory_device='%s'." % (loader.pin_memory_device,),
                stacklevel=2,
            )
        accelerator = bool(loader.pin_memory) and _cuda.is_available()
        if loader.pin_memory and not accelerator:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=2,
            )
        self._pin_memory = accelerator
        self._pin_memory_device = "cuda" if accelerator else None
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # drawn from the loader's generator (nbgrad's default one without) on every pass, as
        # PyTorch does, so the random streams stay in step; workers seed from it
        self._base_seed = _seed_from(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and self._IterableDataset_len_called is not None
            and self._num_yielded > self._IterableDataset_len_called
        ):
            warn_msg = (
                "Length of IterableDataset %s was reported to be %s(when accessing "
                "len(dataloader)), but %s samples have been fetched. "
                % (self._dataset, self._IterableDataset_len_called, self._num_yielded)
            )
            if self._num_workers > 0:
                warn_msg += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                    "for examples."
                )
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:  # PyTorch's check: a timeout needs worker processes
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind,
            self._dataset,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
        )

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration
        if self._pin_memory:
            data = pin_memory(data, self._pin_memory_device)
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes feeding one result queue (PyTorch's design, kept name for name).

    Task ``i`` (the ``i``-th index the sampler yields) goes to the index queue of the next
    active worker in round-robin order; at most ``prefetch_factor * num_workers`` tasks are
    outstanding.  ``_task_info[i]`` is ``(worker_id,)`` while task ``i`` is outstanding and
    ``(worker_id, data)`` once it arrived out of order; ``_rcvd_idx`` is the next task to
    return.  A worker whose IterableDataset replica ends is marked unavailable and its
    outstanding tasks are skipped.

    Waiting on the result queue also waits on the live workers' process sentinels, so a worker
    that dies is reported at once (PyTorch installs a SIGCHLD handler for that).
    """

    def __init__(self, loader):
        self._shutdown = True  # nothing to shut down until the workers exist
        self._workers = []
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._num_workers <= 0:
            raise AssertionError(
                "num_workers must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        if loader.multiprocessing_context is None:
            multiprocessing_context = python_multiprocessing
        else:
            multiprocessing_context = loader.multiprocessing_context
        self._worker_init_fn = loader.worker_init_fn

        self._worker_result_queue = multiprocessing_context.Queue()
        self._shutdown = False
        self._workers_done_event = multiprocessing_context.Event()
        self._index_queues = []
        self._workers_status = []
        _worker_resources[id(self)] = (
            self._workers,
            self._index_queues,
            self._worker_result_queue,
            self._workers_done_event,
        )
        for i in range(self._num_workers):
            index_queue = multiprocessing_context.Queue()
            index_queue.cancel_join_thread()
            w = multiprocessing_context.Process(
                target=_worker._worker_loop,
                args=(
                    self._dataset_kind,
                    self._dataset,
                    index_queue,
                    self._worker_result_queue,
                    self._workers_done_event,
                    self._auto_collation,
                    self._collate_fn,
                    self._drop_last,
                    self._base_seed,
                    self._worker_init_fn,
                    i,
                    self._num_workers,
                    self._persistent_workers,
                    self._shared_seed,
                ),
            )
            w.daemon = True
            # only started workers are recorded, so shutdown never joins an unstarted one
            try:
                w.start()
            except (TypeError, AttributeError, PicklingError):
                warnings.warn(
                    "Got pickle error when attempting to start a worker Process. This might "
                    "be because the worker Process arguments are not picklable. Python 3.14+ "
                    "changed the multiprocessing start method in non-Mac POSIX platforms to "
                    "'forkserver', which requires the worker Process arguments to be "
                    "picklable. You can also try multiprocessing.set_start_method('fork').",
                    stacklevel=2,
                )
                raise
            self._index_queues.append(index_queue)
            self._workers.append(w)
            self._workers_status.append(True)
        self._data_queue = self._worker_result_queue
        if self._persistent_workers:
            self._register_persistent_workers_atexit()
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # index of the next task to send to a worker
        self._rcvd_idx = 0  # index of the next task to return from __next__
        self._task_info = {}
        self._tasks_outstanding = 0  # entries of _task_info still waiting for their data
        # whether each worker still has work this epoch (False once its IterableDataset
        # replica is exhausted; persistent workers become available again next epoch)
        self._workers_status = [True for _ in range(self._num_workers)]
        self._workers_num_tasks = [0 for _ in range(self._num_workers)]
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: restart every worker's fetcher and wait for the
            # acknowledgements (results of the previous epoch still in flight are dropped)
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_worker._ResumeIteration(self._shared_seed))
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, return_data = self._get_data()
                if isinstance(return_idx, _worker._ResumeIteration):
                    resume_iteration_cnt -= 1
        for _ in range(self._prefetch_factor * self._num_workers):  # prime the prefetch
            self._try_put_index()

    def _worker_death_error(self, ready):
        """PyTorch's SIGCHLD-handler message for the first active worker that died by a signal
        or with a non-zero exit code, or None.  ``ready``: the sentinels that fired."""
        for worker_id, w in enumerate(self._workers):
            if not self._workers_status[worker_id]:
                continue
            if w.sentinel in ready:
                # its pipe closes a moment before the process can be reaped: wait for that
                deadline = time.monotonic() + 1.0
                while w.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.001)
            if w.is_alive():
                continue
            code = w.exitcode
            if code is not None and code < 0:
                try:
                    name = signal.strsignal(-code)
                except ValueError:
                    name = None
                return RuntimeError(
                    "DataLoader worker (pid %s) is killed by signal: %s. "
                    % (w.pid, name or "Unknown signal: %d" % -code)
                )
            if not code:
                continue
            return RuntimeError(
                "DataLoader worker (pid %s) exited unexpectedly with exit code %s. Details are "
                "lost due to multiprocessing. Rerunning with num_workers=0 may give better "
                "error trace." % (w.pid, code)
            )
        return None

    def _get_from_queue(self, timeout):
        """One item from the result queue within ``timeout`` seconds (queue.Empty if none);
        raises as soon as an active worker has died."""
        reader = getattr(self._data_queue, "_reader", None)
        if reader is None:  # not a multiprocessing queue: plain polling
            return self._data_queue.get(timeout=timeout)
        sentinels = [w.sentinel for i, w in enumerate(self._workers) if self._workers_status[i]]
        ready = _mp_connection.wait([reader, *sentinels], timeout)
        if reader in ready:
            return self._data_queue.get(timeout=timeout)
        if ready:
            err = self._worker_death_error(ready)
            if err is not None:
                try:
                    raise err
                finally:
                    del err  # no frame -> exception -> traceback -> frame cycle
        raise queue.Empty

    def _try_get_data(self, timeout=MP_STATUS_CHECK_INTERVAL):
        # Returns (True, data) or (False, None) on a timeout; raises RuntimeError when a worker
        # died (the cause says how: killed by which signal, or its exit code).
        try:
            data = self._get_from_queue(timeout)
            return (True, data)
        except Exception as e:
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if len(failed_workers) > 0:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(
                    "DataLoader worker (pid(s) %s) exited unexpectedly" % pids_str
                ) from e
            if isinstance(e, queue.Empty):
                return (False, None)
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError("DataLoader timed out after %s seconds" % (self._timeout,))
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            # Skip tasks of workers that ended (an exhausted IterableDataset replica) without
            # delivering them.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break  # has data, or its worker is still active
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError(
                    "Invalid iterator state: shutdown or no outstanding tasks when fetching "
                    "next data"
                )
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable:
                if isinstance(data, _worker._IterableDatasetStopIteration):
                    if self._persistent_workers:
                        self._workers_status[data.worker_id] = False
                    else:
                        self._mark_worker_as_unavailable(data.worker_id)
                    self._try_put_index()
                    continue

            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)  # keep it until its turn
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                elif self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(
                    self._workers_status
                ):
                    break  # out of order: only a worker with spare capacity
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        if self._pin_memory:
            data = pin_memory(data, self._pin_memory_device)
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        # A worker that finished (an exhausted IterableDataset replica) or died: it gets the
        # final signal; joining waits for _shutdown_workers.
        if not self._workers_status[worker_id] and not self._persistent_workers and not shutdown:
            raise AssertionError("Worker status inconsistent when marking worker as unavailable")
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False
        if self._workers_done_event.is_set() != shutdown:
            raise AssertionError("_workers_done_event state does not match shutdown flag")

    def _shutdown_workers(self):
        # Called when the iterator is exhausted or garbage collected: every worker gets the
        # final signal and is joined (terminated if it does not exit in time), so no process
        # is left behind.  A no-op while Python shuts down (multiprocessing then terminates
        # the daemonic workers itself).
        if _python_exit_status[0] or getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            _worker_resources.pop(id(self), None)

    @staticmethod
    def _clean_up_persistent_workers_atexit():
        with _persistent_workers_atexit_lock:
            iterators = tuple(_persistent_workers_atexit)
        for iterator in iterators:
            iterator._shutdown_workers()

    def _register_persistent_workers_atexit(self):
        with _persistent_workers_atexit_lock:
            _persistent_workers_atexit.add(self)
            if _persistent_workers_atexit_registered[0]:
                return
            atexit.register(_MultiProcessingDataLoaderIter._clean_up_persistent_workers_atexit)
            _persistent_workers_atexit_registered[0] = True

    def __del__(self):
        self._shutdown_workers()
