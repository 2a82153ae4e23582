"""nbgrad.distributed (MPI) and DistributedDataParallel.

The multi-process checks live in tests/mpi_worker.py and run under ``mpirun -n 2`` (and
``-n 3`` for uneven buckets, sampler padding and any-source receives), launched here as
subprocesses with a timeout: collectives against NumPy, errors in PyTorch's words, DDP training
against one process on the concatenated batch, ``no_sync``, unused parameters, hook order, the
overlap of communication with backward, and jobs whose rank fails (they must end quickly).  They
skip, saying why, without mpi4py or an MPI launcher (``pip install 'nbgrad[mpi]'``).

The rest run in this process without initializing MPI: use before ``init_process_group``, the
import staying free of mpi4py, ``DistributedSampler`` and the bucket assignment against PyTorch.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.distributed as dist
from nbgrad.nn.parallel import DistributedDataParallel
from nbgrad.nn.parallel.distributed import _compute_bucket_assignment_by_size
from nbgrad.utils.data import DistributedSampler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "mpi_worker.py")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import mpi_worker  # noqa: E402  (its check names; importing it starts no MPI)

if torch is not None:
    import torch.distributed  # noqa: F401
    import torch.utils.data.distributed  # noqa: F401


# ---------------------------------------------------------------------------------------------
# the launcher


def _launcher():
    """(mpirun command prefix for n ranks, or None and why)."""
    if not dist.is_available():
        return None, "mpi4py is not installed (pip install 'nbgrad[mpi]')"
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    exe = shutil.which("mpirun", path=path) or shutil.which("mpiexec", path=path)
    if exe is None:
        return None, "no mpirun/mpiexec (pip install 'nbgrad[mpi]' brings Open MPI's)"
    try:
        version = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except Exception as e:  # pragma: no cover
        return None, "%s --version failed: %s" % (exe, e)
    return (exe, "Open MPI" in version or "OpenRTE" in version), None


LAUNCHER, WHY = _launcher()
needs_mpi = pytest.mark.skipif(LAUNCHER is None, reason=str(WHY))


def mpirun(n, *args, timeout=240, env=None):
    """Run tests/mpi_worker.py on ``n`` ranks; returns (returncode, output, seconds)."""
    exe, openmpi = LAUNCHER
    cmd = [exe, "-n", str(n)]
    if openmpi:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if n > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
    cmd += [sys.executable, WORKER, *args]
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    # one thread per rank (2 cores); ranks share the kernel cache of this run
    e.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    e["NBGRAD_CACHE_DIR"] = nbgrad._config.CACHE_DIR or e.get("NBGRAD_CACHE_DIR", "")
    e["NBGRAD_QUIET"] = "1"
    e.update(env or {})
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=ROOT)
    except subprocess.TimeoutExpired as ex:
        out = (ex.stdout or b"").decode() if isinstance(ex.stdout, bytes) else (ex.stdout or "")
        pytest.fail(
            "mpirun -n %d %s hung for %d s:\n%s" % (n, " ".join(args), timeout, out[-5000:])
        )
    return p.returncode, p.stdout + p.stderr, time.perf_counter() - t0


def _results(n, mode):
    rc, out, secs = mpirun(n, mode)
    res = {}
    for line in out.splitlines():
        if line.startswith("MPIRESULT "):
            r = json.loads(line[len("MPIRESULT ") :])
            res.setdefault(r["name"], {})[r["rank"]] = r
    return rc, out, res


@pytest.fixture(scope="module")
def two_ranks():
    return _results(2, "all")


@pytest.fixture(scope="module")
def three_ranks():
    return _results(3, "three")


def _assert_check(run, name, n):
    rc, out, res = run
    got = res.get(name, {})
    assert sorted(got) == list(range(n)), "check %s reported by ranks %s (rc %d):\n%s" % (
        name,
        sorted(got),
        rc,
        out[-6000:],
    )
    bad = {r: v["detail"] for r, v in got.items() if not v["ok"]}
    assert not bad, "check %s failed:\n%s" % (
        name,
        "\n".join("rank %d: %s" % (r, d) for r, d in sorted(bad.items())),
    )


TWO = [n for n, (_, modes) in mpi_worker.CHECKS.items() if "all" in modes]
THREE = [n for n, (_, modes) in mpi_worker.CHECKS.items() if "three" in modes]


@needs_mpi
@pytest.mark.parametrize("name", TWO)
def test_two_ranks(two_ranks, name):
    _assert_check(two_ranks, name, 2)


@needs_mpi
def test_two_rank_job_exits_cleanly(two_ranks):
    rc, out, _ = two_ranks
    assert rc == 0, out[-4000:]


@needs_mpi
@pytest.mark.parametrize("name", THREE)
def test_three_ranks(three_ranks, name):
    _assert_check(three_ranks, name, 3)


@needs_mpi
def test_rank_that_raises_ends_the_job():
    """Rank 1 raises while rank 0 waits in an all-reduce: the uncaught exception aborts the job
    (MPI_Abort) instead of leaving rank 0 waiting."""
    rc, out, secs = mpirun(2, "raise", timeout=120)
    assert rc != 0 and "rank 1 fails on purpose" in out, out[-4000:]
    assert "MPIRESULT" not in out, out[-4000:]  # rank 0 never got past the all-reduce
    assert secs < 60, secs


@needs_mpi
def test_stalled_rank_times_out():
    """Rank 1 never joins the all-reduce: rank 0 gives up after the group's timeout with
    PyTorch's watchdog message, and the job ends."""
    rc, out, secs = mpirun(2, "stall", timeout=120, env={"MPI_WORKER_TIMEOUT": "2"})
    assert rc != 0, out[-4000:]
    assert "Watchdog caught collective operation timeout" in out, out[-4000:]
    assert secs < 60, secs


# ---------------------------------------------------------------------------------------------
# in this process (no MPI)


def test_import_does_not_load_mpi4py():
    code = (
        "import sys, nbgrad, nbgrad.distributed, nbgrad.nn.parallel; "
        "print('mpi4py' in sys.modules, nbgrad.distributed is nbgrad.distributed)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.split() == ["False", "True"], r.stdout + r.stderr


def test_without_mpi4py_init_says_what_to_install():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "import nbgrad as torch\n"
        "print(torch.distributed.is_available(), torch.distributed.is_mpi_available())\n"
        "try:\n"
        "    torch.distributed.init_process_group('mpi')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    lines = r.stdout.splitlines()
    assert lines[0] == "False False", r.stdout + r.stderr
    assert "Distributed package doesn't have MPI built in" in lines[1]
    assert "pip install 'nbgrad[mpi]'" in lines[1]


@pytest.fixture(
    params=[
        pytest.param("nbgrad", id="nbgrad"),
        pytest.param("torch", id="torch", marks=needs_torch),
    ]
)
def D(request):
    return nbgrad.distributed if request.param == "nbgrad" else torch.distributed


NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def _lib(D):
    return nbgrad if D is nbgrad.distributed else torch


def test_use_before_init(D):
    T = _lib(D)
    assert not D.is_initialized()
    for fn, args in (
        (D.get_rank, ()),
        (D.get_world_size, ()),
        (D.barrier, ()),
        (D.all_reduce, (T.ones(2),)),
    ):
        with pytest.raises(ValueError) as e:
            fn(*args)
        assert str(e.value) == NOT_INIT
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        D.destroy_process_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        T.nn.parallel.DistributedDataParallel(T.nn.Linear(2, 2))


def test_init_arguments_checked_before_mpi(D):
    with pytest.raises(TypeError, match="Expected timeout argument to be of type datetime"):
        D.init_process_group("gloo" if D is not dist else "mpi", timeout=5)
    assert not D.is_initialized()


def test_other_backends_are_not_built_in():
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized() and not dist.is_nccl_available()


def test_reduce_op_names(D):
    assert str(D.ReduceOp.SUM) == "RedOpType.SUM"
    assert repr(D.ReduceOp.AVG) == "<RedOpType.AVG: 1>"
    assert [int(getattr(D.ReduceOp, n)) for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX")] == [
        0,
        1,
        2,
        3,
        4,
    ]


@needs_torch
@pytest.mark.parametrize("n", [7, 10, 12])
@pytest.mark.parametrize("ws", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_pytorch(n, ws, drop_last):
    for rank in range(ws):
        ours = DistributedSampler(range(n), ws, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.distributed.DistributedSampler(
            range(n), ws, rank, shuffle=False, drop_last=drop_last
        )
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("ws", [2, 3])
def test_distributed_sampler_shuffles_the_same_on_every_rank(ws):
    n = 11
    per_rank = [DistributedSampler(range(n), ws, r, seed=4) for r in range(ws)]
    parts = [list(s) for s in per_rank]
    flat = [i for p in parts for i in p]
    assert set(flat) == set(range(n)) and len(flat) == ws * -(-n // ws)  # padded
    # every rank draws the same permutation: rank r's indices are positions r, r + ws, ...
    perm = [None] * len(flat)
    for r, p in enumerate(parts):
        perm[r::ws] = p
    assert sorted(perm[:n]) == list(range(n))
    for s in per_rank:
        s.set_epoch(1)
    assert [list(s) for s in per_rank] != parts
    for s in per_rank:
        s.set_epoch(0)
    assert [list(s) for s in per_rank] == parts


def test_distributed_sampler_errors(D):
    Sampler = DistributedSampler if D is dist else torch.utils.data.distributed.DistributedSampler
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        Sampler(range(4), num_replicas=2, rank=2)
    if D is dist and not dist.is_available():  # no mpi4py (the floors run): PyTorch's check
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            Sampler(range(4))
        return
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        Sampler(range(4))


@needs_torch
@pytest.mark.parametrize(
    "limits", [[1 << 20, 25 << 20], [64], [200, 100], [10**9]], ids=["default", "64", "mix", "big"]
)
def test_bucket_assignment_matches_pytorch(limits):
    specs = [
        ((8, 16), "float32"),
        ((16,), "float32"),
        ((30,), "float64"),
        ((16, 16), "float32"),
        ((5,), "float64"),
        ((16,), "float32"),
        ((3, 3), "float32"),
    ]
    ours = [nbgrad.zeros(*s, dtype=getattr(nbgrad, d)) for s, d in specs]
    theirs = [torch.zeros(*s, dtype=getattr(torch, d)) for s, d in specs]
    expected = torch.distributed._compute_bucket_assignment_by_size(theirs, limits)[0]
    assert _compute_bucket_assignment_by_size(ours, limits) == [list(b) for b in expected]


def test_ddp_is_the_torch_name():
    assert nbgrad.nn.parallel.DistributedDataParallel is DistributedDataParallel
    assert nbgrad.utils.data.DistributedSampler is DistributedSampler
    assert timedelta(minutes=30) == dist.default_pg_timeout
