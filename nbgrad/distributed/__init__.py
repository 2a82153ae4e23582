"""``nbgrad.distributed`` (``torch.distributed``) over MPI.

``init_process_group(backend="mpi")`` under an MPI launcher (``mpirun -n 4 python train.py``),
then collectives on tensors in place (``all_reduce``, ``broadcast``, ``all_gather``,
``reduce_scatter``, ``gather``, ``scatter``, ``reduce``, ``barrier``) and point-to-point
``send``/``recv``/``isend``/``irecv``; ``async_op=True`` returns a ``Work``.  mpi4py is imported
by ``init_process_group`` only: this package imports without it, and ``is_available()`` says
whether it is installed.  See docs/distributed.md.
"""

from .._missing import missing as _missing
from . import distributed_c10d
from .distributed_c10d import (  # noqa: F401
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_single,
    all_reduce,
    barrier,
    broadcast,
    default_pg_timeout,
    destroy_process_group,
    gather,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    send,
)

__all__ = distributed_c10d.__all__ + ["is_available"]


def is_available() -> bool:
    """Whether distributed training can be used: the MPI backend's ``mpi4py`` is installed."""
    return is_mpi_available()


def __getattr__(name):
    raise _missing(__name__, name)
