"""``torch.nn.parallel.DistributedDataParallel`` over ``nbgrad.distributed`` (MPI).

NOTE [DDP buckets]: the parameters that require a gradient (each once, in registration order)
are grouped by dtype into buckets of about ``bucket_cap_mb`` (the first-registered ones into a
smaller first bucket of 1 MiB when ``bucket_cap_mb`` is not given), and the buckets are numbered
in reverse: bucket 0 holds the last-registered parameters, whose gradients backward produces
first.  Each bucket is one flat array; each parameter has a view of it.

NOTE [DDP hooks]: DDP registers a post-accumulate-grad hook on every parameter.  When the hook of
a parameter fires (its ``.grad`` is final for this backward), the gradient is copied into its
bucket view divided by the world size; when a bucket has all its gradients and every bucket
before it has been launched, its non-blocking all-reduce (``MPI_Iallreduce``) starts, so the
communication of early buckets overlaps the rest of the backward.  Each hook call also tests
the all-reduces in flight, which is what moves them forward (NOTE [MPI progress] in
distributed_c10d.py).  When the last bucket is launched, a final callback is queued on the
engine (``autograd.engine.queue_callback``, PyTorch's ``queue_callback``): it waits for every
bucket and writes the averaged gradients back to ``.grad`` before ``backward()`` returns.

User hooks on parameters run first, in order: tensor hooks run before accumulation, and a
post-accumulate hook registered before DDP runs before DDP's.  One registered after DDP would
run after it, so DDP's hook then moves itself to the end of the parameter's hooks (for every
later backward) and, this once, takes the gradient at the next DDP hook or at the end of
backward instead of at once.

Buckets are launched in order on every rank, so all ranks issue the same all-reduces in the
same order.  A parameter that gets no gradient blocks its bucket: without
``find_unused_parameters=True`` the next forward raises PyTorch's "Expected to have finished
reduction in the prior iteration" error; with it, the forward pass's graph is searched for the
parameters it does not reach, which are marked ready (zeros) at the first hook, and a parameter
unused on every rank keeps its ``.grad``.  Inside ``no_sync()`` the forward does not arm the
hooks: gradients accumulate locally and are reduced by the first backward after it.
"""

from __future__ import annotations

import functools
import time
import warnings
from contextlib import contextmanager

import numpy as np

from ... import _flags, grad_mode
from ..._tensor import Tensor, _dense
from ...autograd import profiler
from ...autograd.engine import queue_callback
from ...autograd.graph import AccumulateGrad
from ...distributed import distributed_c10d as c10d
from ...dtypes import int32
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_MB = 1024 * 1024
_warned_no_unused = [False]


def _compute_bucket_assignment_by_size(params, limits):
    """PyTorch's ``compute_bucket_assignment_by_size``: walk ``params`` in order, per dtype,
    closing a bucket once its size reaches the current limit (then the next limit); buckets
    are sorted by their smallest index."""
    result, open_buckets = [], {}
    for i, p in enumerate(params):
        acc = open_buckets.setdefault(p._dtype, [[], 0, 0])
        acc[0].append(i)
        acc[1] += p._data.size * p._dtype.itemsize
        if acc[1] >= limits[acc[2]]:
            result.append(acc[0])
            acc[0], acc[1] = [], 0
            acc[2] = min(acc[2] + 1, len(limits) - 1)
    result += [acc[0] for acc in open_buckets.values() if acc[0]]
    result.sort(key=min)
    return result


class _Bucket:
    __slots__ = ("indices", "dtype", "flat", "views", "assigned", "pending", "work")

    def __init__(self, params, indices):
        self.indices = list(indices)
        self.dtype = params[indices[0]]._dtype
        self.flat = np.zeros(sum(params[i]._data.size for i in indices), self.dtype.np)
        self.views, off = [], 0
        for i in indices:
            a = params[i]._data
            self.views.append(self.flat[off : off + a.size].reshape(a.shape))
            off += a.size
        self.assigned = [None] * len(indices)  # the bucket-view grads (gradient_as_bucket_view)
        self.pending = len(indices)
        self.work = None


class Reducer:
    """DistributedDataParallel's gradient reduction (NOTE [DDP buckets], NOTE [DDP hooks])."""

    def __init__(self, params, bucket_indices, pg, find_unused, as_view):
        self.params = params
        self.pg = pg
        self.find_unused = find_unused
        self.as_view = as_view
        self.buckets = [_Bucket(params, idx) for idx in bucket_indices]
        self.locator = [None] * len(params)
        for b, bucket in enumerate(self.buckets):
            for j, i in enumerate(bucket.indices):
                self.locator[i] = (b, j)
        self.expect_hooks = False
        self.require_finalize = False
        self.next_bucket = 0
        self.first_pending = 0
        self.ready = set()
        self.unused = []
        self.has_marked_unused = False
        self.finalize_queued = False
        self.deferred = []
        self.local_used = np.zeros(len(params), np.int32) if find_unused else None
        self.local_used_work = None
        self.num_iterations = 0
        self.t_backward_start = self.t_comm_start = None
        self.stats = []  # per reduced backward: the timings of _get_ddp_logging_data
        self.handles, self.keys = [], []
        for i, p in enumerate(params):
            h = p.register_post_accumulate_grad_hook(functools.partial(self._hook, i))
            self.handles.append(h)
            self.keys.append(h.id)
        if as_view:  # existing gradients move into their bucket views now
            for bucket in self.buckets:
                for j, i in enumerate(bucket.indices):
                    p = params[i]
                    if p._grad is not None:
                        np.copyto(bucket.views[j], p._grad._data)
                        p._grad = bucket.assigned[j] = Tensor._make(bucket.views[j])

    @property
    def bucket_indices(self):
        """The parameter indices of each bucket, in reduction order."""
        return [list(b.indices) for b in self.buckets]

    def remove_hooks(self):
        for h in self.handles:
            h.remove()

    # -- the iteration ------------------------------------------------------------------------
    def prepare_for_backward(self, outputs):
        self.t_backward_start = time.perf_counter()
        self.t_comm_start = None
        self.expect_hooks = True
        self.next_bucket = self.first_pending = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
            bucket.work = None
        self.has_marked_unused = False
        self.finalize_queued = False
        self.ready.clear()
        self.deferred.clear()
        if self.find_unused:
            self.unused = self._search_unused_parameters(outputs)

    def _search_unused_parameters(self, outputs):
        seen, stack = set(), [t._grad_fn for t in outputs if t._grad_fn is not None]
        seen.update(id(n) for n in stack)
        used = set()
        while stack:
            node = stack.pop()
            if type(node) is AccumulateGrad:
                used.add(id(node.variable))
            for child, _ in node.next_functions:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
        unused = [i for i, p in enumerate(self.params) if id(p) not in used]
        if not unused and not _warned_no_unused[0]:
            _warned_no_unused[0] = True
            warnings.warn(
                "find_unused_parameters=True was specified in DDP constructor, but did not find "
                "any unused parameters in the forward pass. This flag results in an extra "
                "traversal of the autograd graph every iteration,  which can adversely affect "
                "performance. If your model indeed never has any unused parameters in the "
                "forward pass, consider turning this flag off. Note that this warning may be a "
                "false positive if your model has flow control causing later iterations to have "
                "unused parameters.",
                UserWarning,
                stacklevel=2,
            )
        return unused

    def _hook(self, index, param):
        if not self.expect_hooks:
            return
        self._progress()
        if self.deferred:
            self._flush_deferred()
        if self.local_used is not None:
            self.local_used[index] = 1
        if not self.has_marked_unused:
            self.has_marked_unused = True
            for u in self.unused:
                self._mark_ready(u)
        hooks = param._post_acc_hooks
        key = self.keys[index]
        if next(reversed(hooks)) != key:
            # user post-accumulate hooks registered after DDP's run after this call: from the
            # next backward on DDP's runs last; this time the gradient is taken later
            hooks[key] = hooks.pop(key)
            self.deferred.append(index)
            queue_callback(self._flush_deferred)
            return
        self._mark_ready(index)

    def _flush_deferred(self):
        while self.deferred:
            self._mark_ready(self.deferred.pop(0))

    def _progress(self):
        """Test the all-reduces in flight, oldest first (this is what advances them)."""
        k = self.first_pending
        while k < self.next_bucket and self.buckets[k].work._test():
            k += 1
        self.first_pending = k

    def _mark_ready(self, index):
        if index in self.ready:
            raise RuntimeError(_marked_twice_message(index))
        self.ready.add(index)
        self.require_finalize = True
        b, j = self.locator[index]
        bucket = self.buckets[b]
        view = bucket.views[j]
        p = self.params[index]
        g = p._grad
        scale = bucket.dtype.np.type(1.0 / self.pg._size)
        if g is None:
            view[...] = 0
        elif g is bucket.assigned[j]:  # the gradient already is the bucket view
            np.multiply(view, scale, out=view)
        else:
            np.multiply(g._data, scale, out=view, casting="unsafe")
            if self.as_view:
                p._grad = bucket.assigned[j] = Tensor._make(view)
        bucket.pending -= 1
        if bucket.pending == 0:
            self._mark_bucket_ready(b)
        if self.next_bucket == len(self.buckets) and not self.finalize_queued:
            self.finalize_queued = True
            if self.local_used is not None:
                self.local_used_work = c10d._all_reduce_flat(self.pg, self.local_used, int32)
            queue_callback(self._finalize)

    def _mark_bucket_ready(self, b):
        if b > self.next_bucket:
            return  # buckets are launched in order, on every rank
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            if self.t_comm_start is None:
                self.t_comm_start = time.perf_counter()
            bucket.work = c10d._all_reduce_flat(self.pg, bucket.flat, bucket.dtype)
            self.next_bucket += 1

    def _finalize(self):
        """The final callback: wait for every bucket, write the averaged gradients."""
        t_compute_end = time.perf_counter()
        ev = (
            profiler.begin("DistributedDataParallel.finalize_backward", "comm")
            if _flags.PROFILE
            else None
        )
        try:
            self.expect_hooks = False
            self.require_finalize = False
            for bucket in self.buckets:
                bucket.work.wait()
            global_used = None
            if self.local_used is not None:
                self.local_used_work.wait()
                global_used = self.local_used > 0
            for bucket in self.buckets:
                for j, i in enumerate(bucket.indices):
                    if global_used is not None and not global_used[i]:
                        continue  # unused on every rank: .grad is left as it was
                    self._write_grad(self.params[i], bucket, j)
            if self.local_used is not None:
                self.local_used[:] = 0
        finally:
            if ev is not None:
                profiler.end(ev)
        self.stats.append(
            (
                self.t_backward_start,
                t_compute_end,
                self.t_comm_start,
                time.perf_counter(),
                [(b.work.t_start, b.work.t_end, b.flat.nbytes) for b in self.buckets],
            )
        )
        del self.stats[:-1000]

    def _write_grad(self, p, bucket, j):
        view, g = bucket.views[j], p._grad
        if self.as_view:
            if g is None:
                p._grad = bucket.assigned[j] = Tensor._make(view)
            elif g is not bucket.assigned[j]:
                raise RuntimeError(
                    "Detected at least one parameter gradient is not the expected DDP bucket view "
                    "with gradient_as_bucket_view=True. This may happen (for example) if multiple "
                    "allreduce hooks were registered onto the same parameter. If you hit this "
                    "error, please file an issue with a minimal repro."
                )
            else:
                g._vc[0] += 1
        elif g is None:
            a = p._data
            arr = np.empty_like(a) if _dense(a) else np.empty(a.shape, a.dtype)
            np.copyto(arr, view)
            p._grad = Tensor._make(arr)
        else:
            np.copyto(g._data, view, casting="unsafe")
            g._vc[0] += 1

    def ensure_prior_reduction_finished(self):
        if not self.require_finalize:
            return
        unmarked = [i for i in range(len(self.params)) if i not in self.ready]
        msg = (
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. "
        )
        outputs_msg = "making sure all `forward` function outputs participate in calculating loss. "
        bug_msg = (
            "\nIf you already have done the above, then the distributed data parallel module "
            "wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the return "
            "value of `forward` of your module when reporting this issue (e.g. list, dict, "
            "iterable)."
        )
        if not self.find_unused:
            msg += (
                "You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, "
                "and by \n"
            )
        else:
            msg += (
                "Since `find_unused_parameters=True` is enabled, this likely  means that not all "
                "`forward` outputs participate in computing loss. You can fix this by "
            )
        msg += outputs_msg + bug_msg
        msg += "\nParameter indices which did not receive grad for rank %d: %s" % (
            self.pg._rank,
            " ".join(str(i) for i in unmarked),
        )
        msg += (
            "\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to "
            "either INFO or DETAIL to print out information about which particular parameters did "
            "not receive gradient on this rank as part of this error"
        )
        raise RuntimeError(msg)


def _marked_twice_message(index):
    return (
        "Expected to mark a variable ready only once. This error is caused by one of the "
        "following reasons: 1) Use of a module parameter outside the `forward` function. Please "
        "make sure model parameters are not shared across multiple concurrent forward-backward "
        "passes. or try to use _set_static_graph() as a workaround if this module graph does not "
        "change during training loop.2) Reused parameters in multiple reentrant backward passes. "
        "For example, if you use multiple `checkpoint` functions to wrap the same part of your "
        "model, it would result in the same set of parameters been used by different reentrant "
        "backward passes multiple times, and hence marking a variable ready multiple times. DDP "
        "does not support such use cases in default. You can try to use _set_static_graph() as "
        "a workaround if your module graph does not change over iterations.\n"
        "Parameter at index %d has been marked as ready twice. This means that multiple "
        "autograd engine  hooks have fired for this particular parameter during this iteration. "
        "You can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to "
        "print parameter names for further debugging." % index
    )


def _find_tensors(obj):
    """The tensors in a forward's output (nested lists, tuples and dicts)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    return []


def _by_dtype(arrays):
    groups = {}
    for a in arrays:
        groups.setdefault(a.dtype, []).append(a)
    return groups


def _broadcast_arrays(pg, arrays, src=0):
    """Broadcast numpy arrays from rank ``src`` in place, one flat message per dtype (PyTorch's
    ``_broadcast_coalesced``); returns whether anything was written."""
    for dtype, group in _by_dtype(arrays).items():
        flat = np.concatenate([a.reshape(-1) for a in group]) if pg._rank == src else None
        if flat is None:
            flat = np.empty(sum(a.size for a in group), dtype)
        c10d._broadcast_flat(pg, flat, src).wait()
        if pg._rank != src:
            off = 0
            for a in group:
                np.copyto(a, flat[off : off + a.size].reshape(a.shape))
                off += a.size


def _verify_param_shape_across_processes(pg, params):
    """PyTorch's check that every rank has the same parameters: their number, then their sizes
    and strides (and here their dtypes).  Every rank raises when one rank differs (one that did
    not would wait for the others in the next collective): that rank with PyTorch's message,
    the others naming it."""
    rank = pg._rank
    counts = c10d._all_gather_flat(pg, np.array([len(params)], np.int64))[:, 0]
    for r in range(pg._size):
        if counts[r] != len(params):
            raise RuntimeError(
                "DDP expects same model across all ranks, but Rank %d has %d params, while rank "
                "%d has inconsistent %d params." % (rank, len(params), r, counts[r])
            )

    def meta(p):
        a = p._data
        return (
            [c10d._SCALAR_TYPE[p._dtype.name][0], a.ndim]
            + list(a.shape)
            + [s // a.itemsize for s in a.strides]
        )

    mine = [meta(p) for p in params]
    lengths = c10d._all_gather_flat(pg, np.array([len(m) for m in mine], np.int64))
    bad = -1  # the first parameter of this rank that differs from rank 0's
    if np.array_equal(lengths[0], lengths[rank]):
        ref = np.array([x for m in mine for x in m], np.int64)
        c10d._broadcast_flat(pg, ref, 0).wait()
        off = 0
        for k, m in enumerate(mine):
            if bad < 0 and list(ref[off : off + len(m)]) != m:
                bad, theirs = k, list(ref[off : off + len(m)])
            off += len(m)
    else:
        c10d._broadcast_flat(pg, np.zeros(int(lengths[0].sum()), np.int64), 0).wait()
        bad = next(k for k in range(len(params)) if lengths[0][k] != lengths[rank][k])
        theirs = None
    bads = c10d._all_gather_flat(pg, np.array([bad], np.int64))[:, 0]
    if bad >= 0:
        p = params[bad]
        if theirs is not None and theirs[0] != mine[bad][0]:
            raise RuntimeError(
                "[%d]: params[%d] in this process with dtype torch.%s appears not to match the "
                "dtype of the same param in process 0." % (rank, bad, p._dtype.name)
            )
        what = "sizes"
        if theirs is not None and theirs[: 2 + p._data.ndim] == mine[bad][: 2 + p._data.ndim]:
            what = "strides"
        raise RuntimeError(
            "[%d]: params[%d] in this process with sizes %s appears not to match %s of the same "
            "param in process 0." % (rank, bad, list(p._data.shape), what)
        )
    for r in range(pg._size):
        if bads[r] >= 0:
            raise RuntimeError(
                "DDP expects same model across all ranks, but params[%d] of rank %d does not "
                "match the same param in process 0 (rank %d raised the details)." % (bads[r], r, r)
            )


class DistributedDataParallel(Module):
    """Data parallelism over MPI (``torch.nn.parallel.DistributedDataParallel``): wrap the model
    on every rank; parameters and buffers are broadcast from rank 0 here, and ``backward()``
    returns with every parameter's ``.grad`` averaged over the ranks, its all-reduces
    overlapping the backward pass (NOTE [DDP buckets], NOTE [DDP hooks])."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        init_sync=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
    ):
        super().__init__()
        self.process_group = pg = c10d._group(process_group)
        if getattr(module, "_ddp_params_and_buffers_to_ignore", None):
            ignore = set(module._ddp_params_and_buffers_to_ignore)
        else:
            ignore = set()
        self.parameters_to_ignore = ignore
        params, seen = [], set()
        for mname, m in module.named_modules():
            for pname, p in m.named_parameters(recurse=False):
                full = (mname + "." if mname else "") + pname
                if p.requires_grad and full not in ignore and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        if device_ids or output_device is not None:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                "%s, output_device %s, and module parameters %s."
                % (device_ids, output_device, {p.device for p in params})
            )
        if check_reduction:
            warnings.warn(
                "The `check_reduction` argument in `DistributedDataParallel` module is "
                "deprecated. Please avoid using it.",
                FutureWarning,
                stacklevel=2,
            )
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.modules_buffers = [
            b for n, b in module.named_buffers() if n not in ignore and b is not None
        ]
        if bucket_cap_mb is None:
            bucket_cap_mb = _DEFAULT_BUCKET_CAP_MB
            first = _DEFAULT_FIRST_BUCKET_BYTES
        else:
            first = int(bucket_cap_mb * _MB)
        self.bucket_bytes_cap = int(bucket_cap_mb * _MB)
        if init_sync:
            _verify_param_shape_across_processes(pg, params)
            state = [p._data for p in params] + [
                p._data for n, p in module.named_parameters() if n in ignore
            ]
            if broadcast_buffers:
                state += [b._data for b in self.modules_buffers]
            _broadcast_arrays(pg, state, 0)
            for t in params + self.modules_buffers:
                t._vc[0] += 1
        buckets = _compute_bucket_assignment_by_size(params, [first, self.bucket_bytes_cap])
        self.reducer = Reducer(
            params, list(reversed(buckets)), pg, find_unused_parameters, gradient_as_bucket_view
        )

    def forward(self, *inputs, **kwargs):
        if _flags.PROFILE:
            with profiler.record_function("DistributedDataParallel.forward"):
                return self._forward(inputs, kwargs)
        return self._forward(inputs, kwargs)

    def _forward(self, inputs, kwargs):
        grad_on = grad_mode.is_grad_enabled()
        reducer = self.reducer
        if grad_on and self.require_backward_grad_sync:
            reducer.num_iterations += 1
        if grad_on:
            reducer.ensure_prior_reduction_finished()
        if self.require_forward_param_sync and self.broadcast_buffers and self.modules_buffers:
            _broadcast_arrays(self.process_group, [b._data for b in self.modules_buffers], 0)
            for b in self.modules_buffers:
                b._vc[0] += 1
        output = self.module(*inputs, **kwargs)
        if grad_on and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            reducer.prepare_for_backward(
                _find_tensors(output) if self.find_unused_parameters else []
            )
        else:
            self.require_forward_param_sync = False
        return output

    @contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce of the backward passes whose forward runs inside: the
        gradients accumulate locally and the first synchronized backward after it reduces
        their sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _get_ddp_logging_data(self):
        """PyTorch's runtime statistics (nanoseconds, averaged over the reduced backward passes):
        ``avg_backward_compute_time`` (end of forward to the last gradient),
        ``avg_backward_comm_time`` (first bucket launched to gradients written) and
        ``avg_backward_compute_comm_overlap_time`` (first bucket launched to the last gradient),
        plus nbgrad's ``bucket_count`` and ``iteration_count``."""
        stats = [s for s in self.reducer.stats if s[2] is not None]
        data = {
            "bucket_count": len(self.reducer.buckets),
            "bucket_size_limit": self.bucket_bytes_cap,
            "find_unused_parameters": self.find_unused_parameters,
            "gradient_as_bucket_view": self.gradient_as_bucket_view,
            "iteration_count": len(stats),
            "world_size": self.process_group._size,
            "rank": self.process_group._rank,
            "backend_name": "mpi",
        }
        if stats:
            ns = 1e9
            data["avg_backward_compute_time"] = int(np.mean([(s[1] - s[0]) * ns for s in stats]))
            data["avg_backward_comm_time"] = int(np.mean([(s[3] - s[2]) * ns for s in stats]))
            data["avg_backward_compute_comm_overlap_time"] = int(
                np.mean([max(0.0, s[1] - s[2]) * ns for s in stats])
            )
        return data
