"""The rank side of tests/test_distributed.py: run under ``mpirun -n N python tests/mpi_worker.py
<mode>``; each check prints one ``MPIRESULT {json}`` line per rank (``ok`` and a detail).

Modes: ``all`` (every check, 2 ranks), ``three`` (the checks that need an odd world size: uneven
buckets, sampler padding, any-source receives), ``raise`` and ``stall`` (a rank fails: the job
must end quickly, not hang).  Checks compare with NumPy and with one process training on the
concatenated batch; each ends with a barrier so that the ranks stay in step even when one fails
(the collective checks turn a misstep into an error, not a hang).
"""

import json
import os
import sys
import time
import traceback
import warnings
from datetime import timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import nbgrad as torch  # noqa: E402
import nbgrad.distributed as dist  # noqa: E402
from nbgrad import nn  # noqa: E402
from nbgrad.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

CHECKS = {}


def check(*modes):
    def deco(fn):
        CHECKS[fn.__name__] = (fn, modes)
        return fn

    return deco


def raises(exc, phrase, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        assert phrase in str(e), "%s: %r lacks %r" % (type(e).__name__, str(e), phrase)
        return str(e)
    raise AssertionError("expected %s(%r)" % (exc.__name__, phrase))


def close(a, b, rtol=1e-5, atol=1e-6, what=""):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, "%s: shape %s vs %s" % (what, a.shape, b.shape)
    assert np.allclose(a, b, rtol=rtol, atol=atol), "%s: max diff %g" % (
        what,
        np.max(np.abs(a - b)),
    )


def rank_data(r, shape, dtype=np.float64, seed=0):
    """The data rank ``r`` contributes (every rank can compute every rank's)."""
    return np.random.default_rng(seed * 1000 + r).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# collectives vs NumPy


@check("all", "three")
def collectives(rank, ws):
    shape = (3, 4)
    every = [rank_data(r, shape) for r in range(ws)]
    for dtype in (np.float32, np.float64, np.int64):
        data = [(e * 10).astype(dtype) if dtype == np.int64 else e.astype(dtype) + 2 for e in every]
        for op, ref in (
            (dist.ReduceOp.SUM, np.sum),
            (dist.ReduceOp.MAX, np.max),
            (dist.ReduceOp.MIN, np.min),
            (dist.ReduceOp.PRODUCT, np.prod),
        ):
            t = torch.from_numpy(data[rank].copy())
            dist.all_reduce(t, op=op)
            close(t, ref(np.stack(data), axis=0).astype(dtype), rtol=1e-6, what=str(op))
        if dtype != np.int64:
            t = torch.from_numpy(data[rank].copy())
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            close(t, np.mean(np.stack(data), axis=0), rtol=1e-6, what="avg")
    # async: a Work, completed by wait(); result() is the tensor
    t = torch.from_numpy(every[rank].copy())
    w = dist.all_reduce(t, async_op=True)
    assert w.wait() is True and w.is_completed() and w.is_success()
    assert w.result()[0] is t
    close(t, sum(every))
    assert t._version > 0
    # other dtypes: float16 (MPI has no half type), bool (logical), complex (sum)
    h = torch.from_numpy(every[rank].astype(np.float16))
    dist.all_reduce(h)
    close(h, sum(e.astype(np.float16) for e in every), rtol=2e-3, atol=2e-3, what="half")
    b = torch.tensor([rank == 0, False, True])
    dist.all_reduce(b)  # SUM on bools is a logical or (NCCL's mapping)
    assert b.tolist() == [True, False, True]
    c = torch.from_numpy(every[rank][0] + 1j * every[rank][1])
    dist.all_reduce(c)
    close(c, sum(e[0] + 1j * e[1] for e in every), what="complex")
    # broadcast from the last rank
    t = torch.from_numpy(every[rank].copy())
    dist.broadcast(t, src=ws - 1)
    close(t, every[ws - 1], rtol=0, atol=0)
    # all_gather, all_gather_into_tensor
    outs = [torch.zeros(*shape, dtype=torch.float64) for _ in range(ws)]
    dist.all_gather(outs, torch.from_numpy(every[rank]))
    for r in range(ws):
        close(outs[r], every[r], rtol=0, atol=0)
    big = torch.zeros(ws * 3, 4, dtype=torch.float64)
    dist.all_gather_into_tensor(big, torch.from_numpy(every[rank]))
    close(big, np.concatenate(every), rtol=0, atol=0)
    # reduce_scatter, reduce_scatter_tensor: rank i gets the sum of every rank's piece i
    pieces = [
        [torch.from_numpy(rank_data(r, shape, seed=10 + i)) for i in range(ws)] for r in range(ws)
    ]
    out = torch.zeros(*shape, dtype=torch.float64)
    dist.reduce_scatter(out, pieces[rank])
    close(out, sum(p[rank].numpy() for p in pieces), what="reduce_scatter")
    out = torch.zeros(*shape, dtype=torch.float64)
    dist.reduce_scatter(out, pieces[rank], op=dist.ReduceOp.AVG)
    close(out, sum(p[rank].numpy() for p in pieces) / ws, what="reduce_scatter avg")
    out = torch.zeros(*shape, dtype=torch.float64)
    dist.reduce_scatter_tensor(out, torch.cat(pieces[rank]), op=dist.ReduceOp.MAX)
    close(out, np.max([p[rank].numpy() for p in pieces], axis=0), what="reduce_scatter_tensor")
    # gather to rank 0, scatter from the last rank, reduce to rank 1
    src = torch.from_numpy(every[rank])
    if rank == 0:
        gl = [torch.zeros(*shape, dtype=torch.float64) for _ in range(ws)]
        dist.gather(src, gl, dst=0)
        for r in range(ws):
            close(gl[r], every[r], rtol=0, atol=0)
    else:
        dist.gather(src, dst=0)
    out = torch.zeros(*shape, dtype=torch.float64)
    if rank == ws - 1:
        dist.scatter(
            out, [torch.from_numpy(rank_data(r, shape, seed=7)) for r in range(ws)], src=ws - 1
        )
    else:
        dist.scatter(out, src=ws - 1)
    close(out, rank_data(rank, shape, seed=7), rtol=0, atol=0)
    t = torch.from_numpy(every[rank].copy())
    dist.reduce(t, dst=1, op=dist.ReduceOp.SUM)
    close(t, sum(every) if rank == 1 else every[rank], what="reduce")
    # point to point: a ring with blocking send/recv, then isend/irecv from any source
    right, left = (rank + 1) % ws, (rank - 1) % ws
    got = torch.zeros(*shape, dtype=torch.float64)
    if rank % 2 == 0:
        dist.send(torch.from_numpy(every[rank]), dst=right)
        assert dist.recv(got, src=left) == left
    else:
        assert dist.recv(got, src=left) == left
        dist.send(torch.from_numpy(every[rank]), dst=right)
    close(got, every[left], rtol=0, atol=0)
    if rank == 0:
        bufs = [torch.zeros(2, dtype=torch.int64) for _ in range(ws - 1)]
        works = [dist.irecv(b, tag=5) for b in bufs]  # from any rank
        for w in works:
            w.wait()
        senders = sorted(w.source_rank() for w in works)
        assert senders == list(range(1, ws)), senders
        assert sorted(b.tolist()[0] for b in bufs) == list(range(1, ws))
    else:
        dist.isend(torch.tensor([rank, 7]), dst=0, tag=5).wait()
    w = dist.barrier(async_op=True)
    w.wait()
    return "ok"


class DeviceTensor(torch.Tensor):
    """A tensor that reports a CUDA device: without CUDA-aware MPI its data must go through host
    memory (``cpu()`` before, ``copy_()`` after)."""

    calls = []

    @property
    def device(self):
        return torch.device("cuda")

    def cpu(self, memory_format=None):
        DeviceTensor.calls.append("cpu")
        return torch.Tensor._make(self._data.copy())

    def copy_(self, src, non_blocking=False):
        DeviceTensor.calls.append("copy_")
        self._data[...] = src._data
        return self


@check("all")
def device_staging(rank, ws):
    import shutil
    import subprocess

    pg = dist.group.WORLD
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    info = shutil.which("ompi_info", path=path)
    if info is not None:  # Open MPI says whether it was built with CUDA support
        out = subprocess.run([info, "--parsable", "--all"], capture_output=True, text=True).stdout
        built = "built_with_cuda_support:value:true" in out
        assert "built_with_cuda_support:value:" in out
        assert pg._cuda_aware == built, (pg._cuda_aware, built)
    if pg._cuda_aware:
        return "CUDA-aware MPI: no staging"
    DeviceTensor.calls.clear()
    t = DeviceTensor._make(np.full(3, rank + 1.0, np.float32))
    dist.all_reduce(t)
    assert t._data.tolist() == [ws * (ws + 1) / 2] * 3, t._data
    assert DeviceTensor.calls == ["cpu", "copy_"], DeviceTensor.calls
    return "staged through host memory (ompi_info: %s)" % ("found" if info else "absent")


# ---------------------------------------------------------------------------------------------
# errors: the same mistake on every rank (a local check), or a cross-rank mismatch


@check("all")
def errors(rank, ws):
    t = torch.ones(3)
    raises(
        RuntimeError,
        "All gather: number of output tensors should equal to the world size",
        dist.all_gather,
        [torch.zeros(3)] * (ws + 1),
        t,
    )
    raises(
        RuntimeError,
        "Tensors are not equal in size or data type",
        dist.all_gather,
        [torch.zeros(4) for _ in range(ws)],
        t,
    )
    raises(
        ValueError,
        "Invalid usage of tensors with different dtypes",
        dist.all_gather,
        [torch.zeros(3, dtype=torch.float64) for _ in range(ws)],
        t,
    )
    raises(
        TypeError,
        "Expected parameter `tensor_list` of type List[torch.Tensor]",
        dist.all_gather,
        torch.zeros(3),
        t,
    )
    raises(RuntimeError, "input tensor has to be contiguous", dist.all_reduce, torch.ones(4, 4).t())
    raises(
        ValueError,
        "all_reduce does not support RedOpType.MAX on complex tensors",
        dist.all_reduce,
        torch.ones(2, dtype=torch.complex64),
        op=dist.ReduceOp.MAX,
    )
    raises(
        RuntimeError,
        "Cannot use ReduceOp.AVG with boolean inputs",
        dist.all_reduce,
        torch.ones(2, dtype=torch.bool),
        op=dist.ReduceOp.AVG,
    )
    raises(TypeError, "op must be a torch.distributed.ReduceOp", dist.all_reduce, t, op="sum")
    if rank == 0:
        raises(
            ValueError,
            "Argument ``gather_list`` must be specified on destination rank.",
            dist.gather,
            t,
            None,
            0,
        )
    else:
        raises(
            ValueError,
            "Argument ``gather_list`` must NOT be specified on non-destination ranks.",
            dist.gather,
            t,
            [torch.zeros(3)] * ws,
            0,
        )
    raises(ValueError, "Must specify global_rank or group_rank", dist.broadcast, t)
    raises(
        ValueError,
        "trying to initialize the default process group twice!",
        dist.init_process_group,
        "mpi",
    )
    raises(ValueError, "Invalid destination rank", dist.send, t, rank)
    # ranks that disagree: every rank raises, none hangs
    msg = raises(
        RuntimeError,
        "Detected mismatch between collectives on ranks",
        dist.all_reduce,
        torch.ones(2 + rank),
    )
    assert "TensorShape=[%d]" % (2 + rank) in msg and "Tensor shapes" in msg, msg
    msg = raises(
        RuntimeError,
        "Detected mismatch between collectives on ranks",
        dist.all_reduce,
        torch.ones(2, dtype=torch.float64 if rank else torch.float32),
    )
    assert "TensorDtypes=Float" in msg and "TensorDtypes=Double" in msg, msg
    msg = raises(
        RuntimeError,
        "Detected mismatch between collectives on ranks",
        dist.broadcast,
        torch.ones(2),
        src=rank,
    )
    assert "Root rank" in msg, msg
    if rank == 0:
        raises(RuntimeError, "Detected mismatch", dist.all_reduce, torch.ones(2))
    else:
        raises(RuntimeError, "Detected mismatch", dist.broadcast, torch.ones(2), src=0)
    # a receive of another dtype or size than was sent
    if rank == 0:
        dist.send(torch.ones(3, dtype=torch.float64), dst=1, tag=3)
    elif rank == 1:
        msg = raises(
            RuntimeError,
            "rank 0 sent a tensor of 3 elements of dtype Double",
            dist.recv,
            torch.zeros(3),
            src=0,
            tag=3,
        )
    # a wait that times out, then the message arrives
    if rank == 0:
        w = dist.irecv(torch.zeros(2), src=1, tag=9)
        raises(
            RuntimeError,
            "Watchdog caught collective operation timeout",
            w.wait,
            timedelta(seconds=0.3),
        )
    dist.barrier()
    if rank == 1:
        dist.send(torch.ones(2), dst=0, tag=9)
    if rank == 0:
        w.wait()
    return "ok"


# ---------------------------------------------------------------------------------------------
# DistributedDataParallel


def mlp(seed, d_in=8, hidden=16, d_out=4):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(d_in, hidden),
        nn.Tanh(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, d_out),
    )


def batches(ws, steps, b=6, d_in=8, d_out=4):
    """Every rank's batch of every step: ([x of rank r], [y of rank r]) per step."""
    rng = np.random.default_rng(123)
    out = []
    for _ in range(steps):
        xs = [rng.standard_normal((b, d_in)).astype(np.float32) for _ in range(ws)]
        ys = [rng.standard_normal((b, d_out)).astype(np.float32) for _ in range(ws)]
        out.append((xs, ys))
    return out


def train_reference(model, data, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for xs, ys in data:
        opt.zero_grad()
        x, y = torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def train_ddp(ddp, data, rank, lr=0.1):
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    for xs, ys in data:
        opt.zero_grad()
        x, y = torch.from_numpy(xs[rank]), torch.from_numpy(ys[rank])
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return ddp


def same_on_every_rank(tensors):
    for t in tensors:
        t = t.detach().contiguous()
        every = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
        dist.all_gather(every, t)
        for e in every:
            assert np.array_equal(e.numpy(), t.numpy()), "ranks differ"


def ddp_vs_single(rank, ws, **kw):
    model = mlp(seed=100 + rank)  # different on every rank: DDP broadcasts rank 0's
    ddp = DDP(model, **kw)
    ref = mlp(seed=100)
    for p, q in zip(model.parameters(), ref.parameters()):
        close(p, q, rtol=0, atol=0, what="broadcast at construction")
    data = batches(ws, steps=4)
    train_ddp(ddp, data, rank)
    train_reference(ref, data)
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        close(p, q, rtol=1e-5, atol=1e-6, what=n)
    same_on_every_rank(list(model.parameters()))
    return ddp


@check("all", "three")
def ddp_equivalence(rank, ws):
    ddp = ddp_vs_single(rank, ws)
    assert ddp.reducer.bucket_indices == [[0, 1, 2, 3, 4, 5]], ddp.reducer.bucket_indices
    # small buckets: uneven, in reverse registration order
    ddp = ddp_vs_single(rank, ws, bucket_cap_mb=524 / 2**20)
    assert ddp.reducer.bucket_indices == [[3, 4, 5], [2], [0, 1]], ddp.reducer.bucket_indices
    return "buckets %s" % ddp.reducer.bucket_indices


@check("all")
def ddp_gradient_as_bucket_view(rank, ws):
    ddp = ddp_vs_single(rank, ws, bucket_cap_mb=524 / 2**20, gradient_as_bucket_view=True)
    for bucket in ddp.reducer.buckets:
        for j, i in enumerate(bucket.indices):
            g = ddp.reducer.params[i].grad
            assert np.shares_memory(g.numpy(), bucket.flat), "grad %d is not a bucket view" % i
    return "ok"


@check("all")
def ddp_no_sync(rank, ws):
    model = mlp(seed=5)
    ddp = DDP(model, bucket_cap_mb=524 / 2**20)
    ref = mlp(seed=5)
    data = batches(ws, steps=3)
    with ddp.no_sync():
        for xs, ys in data[:2]:
            nn.functional.mse_loss(
                ddp(torch.from_numpy(xs[rank])), torch.from_numpy(ys[rank])
            ).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    every = [torch.zeros(1) for _ in range(ws)]
    dist.all_gather(every, torch.tensor([float(local[0].sum())]))
    assert len({float(e) for e in every}) == ws, "no_sync reduced the gradients"
    xs, ys = data[2]
    nn.functional.mse_loss(ddp(torch.from_numpy(xs[rank])), torch.from_numpy(ys[rank])).backward()
    for xs, ys in data:
        x, y = torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))
        nn.functional.mse_loss(ref(x), y).backward()
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        close(p.grad, q.grad, what=n)
    same_on_every_rank([p.grad for p in model.parameters()])
    return "ok"


class Branchy(nn.Module):
    """``used`` is used; ``rare`` only where ``use_rare``; ``never`` never."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 3)
        self.rare = nn.Linear(4, 3)
        self.never = nn.Linear(4, 3)

    def forward(self, x, use_rare=False):
        y = self.used(x)
        return y + self.rare(x) if use_rare else y


@check("all")
def ddp_unused_parameters(rank, ws):
    torch.manual_seed(0)
    ddp = DDP(Branchy())
    x = torch.from_numpy(rank_data(rank, (5, 4), np.float32))
    ddp(x).sum().backward()  # rare and never get no gradient: their bucket never completes
    msg = raises(RuntimeError, "Expected to have finished reduction in the prior iteration", ddp, x)
    assert "find_unused_parameters=True" in msg, msg
    assert "Parameter indices which did not receive grad for rank %d: 2 3 4 5" % rank in msg, msg
    # find_unused_parameters=True: rare is used on rank 0 only, never nowhere
    torch.manual_seed(0)
    model = Branchy()
    ref = Branchy()
    ref.load_state_dict(model.state_dict())
    ddp = DDP(model, find_unused_parameters=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(2):
            for p in model.parameters():
                p.grad = None
            ddp(x, use_rare=rank == 0).sum().backward()
    assert model.never.weight.grad is None and model.never.bias.grad is None
    # reference: the average over ranks of each rank's gradient
    xs = [torch.from_numpy(rank_data(r, (5, 4), np.float32)) for r in range(ws)]
    grads = {}
    for r in range(ws):
        for p in ref.parameters():
            p.grad = None
        ref(xs[r], use_rare=r == 0).sum().backward()
        for n, p in ref.named_parameters():
            if p.grad is not None:
                grads[n] = grads.get(n, 0) + p.grad.numpy() / ws
    for n, p in model.named_parameters():
        if n.startswith("never"):
            continue
        close(p.grad, grads[n], what=n)
    return "ok"


@check("all")
def ddp_hook_order(rank, ws):
    """Tensor hooks and post-accumulate hooks registered before and after DDP all run, in order,
    before the reduction reads the gradient."""
    model = nn.Linear(3, 2)
    log = []

    def tensor_hook(n):
        def hook(g):
            log.append(("tensor", n))
            return g * 2

        return hook

    def post_hook(when, n, fn):
        def hook(p):
            log.append((when, n))
            fn(p.grad)

        return hook

    for n, p in model.named_parameters():
        p.register_hook(tensor_hook(n))
        p.register_post_accumulate_grad_hook(post_hook("before", n, lambda g: g.add_(1)))
    ddp = DDP(model)
    for n, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(post_hook("after", n, lambda g: g.mul_(3)))
    xs = [torch.from_numpy(rank_data(r, (4, 3), np.float32)) for r in range(ws)]
    plain = nn.Linear(3, 2)
    plain.load_state_dict(model.state_dict())
    expected = {}
    for r in range(ws):
        for p in plain.parameters():
            p.grad = None
        plain(xs[r]).sum().backward()
        for n, p in plain.named_parameters():
            expected[n] = expected.get(n, 0) + (p.grad.numpy() * 2 + 1) * 3 / ws
    for step in range(2):  # the first pass defers the reduction; then DDP's hook runs last
        log.clear()
        for p in model.parameters():
            p.grad = None
        ddp(xs[rank]).sum().backward()
        for n in ("weight", "bias"):
            assert [e for e in log if e[1] == n] == [("tensor", n), ("before", n), ("after", n)], (
                log
            )
        for n, p in model.named_parameters():
            close(p.grad, expected[n], what="step %d %s" % (step, n))
    return "ok"


class WithBuffer(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("scale", torch.full((2,), float(rank + 1)))

    def forward(self, x):
        return self.lin(x) * self.scale


@check("all")
def ddp_buffers_and_model_check(rank, ws):
    m = WithBuffer(rank)
    ddp = DDP(m)
    assert m.scale.tolist() == [1.0, 1.0]  # rank 0's, broadcast at construction
    m.scale.fill_(float(rank + 5))
    ddp(torch.ones(1, 2))
    assert m.scale.tolist() == [5.0, 5.0]  # and before every forward
    # a model that differs across ranks: every rank raises
    torch.manual_seed(0)
    bad = nn.Linear(3, 4 + rank)
    msg = raises(
        RuntimeError,
        "appears not to match" if rank else "DDP expects same model across all ranks",
        DDP,
        bad,
    )
    if rank:
        assert "params[0] in this process with sizes [%d, 3]" % (4 + rank) in msg, msg
    raises(
        RuntimeError,
        "DistributedDataParallel is not needed when a module doesn't have any "
        "parameter that requires a gradient.",
        DDP,
        nn.ReLU(),
    )
    return "ok"


@check("all")
def ddp_overlap_trace(rank, ws):
    """The first bucket's all-reduce starts before backward has accumulated its last gradient
    (profiler events), and the finalize callback waits for all buckets before backward returns."""
    model = mlp(seed=1, d_in=32, hidden=64)
    ddp = DDP(model, bucket_cap_mb=4096 / 2**20)
    x = torch.from_numpy(rank_data(rank, (16, 32), np.float32))
    ddp(x).sum().backward()  # warm
    for p in model.parameters():
        p.grad = None
    with torch.autograd.profiler.profile() as prof:
        ddp(x).sum().backward()
    ev = prof.function_events
    launches = [e for e in ev if e.name == "mpi:all_reduce"]
    accs = [e for e in ev if e.name.endswith("AccumulateGrad")]
    final = [e for e in ev if e.name == "DistributedDataParallel.finalize_backward"]
    assert len(launches) == len(ddp.reducer.buckets) >= 3, (
        len(launches),
        ddp.reducer.bucket_indices,
    )
    assert min(e.start for e in launches) < max(e.end for e in accs), "no overlap"
    assert len(final) == 1 and final[0].start >= max(e.end for e in accs)
    data = ddp._get_ddp_logging_data()
    assert data["avg_backward_compute_comm_overlap_time"] > 0, data
    assert all(b.work._done for b in ddp.reducer.buckets)
    return "overlap %.0f us of %.0f us compute" % (
        data["avg_backward_compute_comm_overlap_time"] / 1e3,
        data["avg_backward_compute_time"] / 1e3,
    )


# ---------------------------------------------------------------------------------------------
# DistributedSampler


@check("all", "three")
def sampler(rank, ws):
    from nbgrad.utils.data import DistributedSampler

    n = 10
    for drop_last in (False, True):
        s = DistributedSampler(range(n), shuffle=True, seed=3, drop_last=drop_last)
        mine = list(s)
        assert len(mine) == len(s) == (n // ws if drop_last else -(-n // ws))
        every = [torch.zeros(len(mine), dtype=torch.int64) for _ in range(ws)]
        dist.all_gather(every, torch.tensor(mine))
        flat = [i for e in every for i in e.tolist()]
        if drop_last:
            assert len(set(flat)) == len(flat) == ws * (n // ws)
        else:
            assert set(flat) == set(range(n)) and len(flat) == ws * -(-n // ws)
        s.set_epoch(1)
        assert list(s) != mine or ws == 1
    return "ok"


# ---------------------------------------------------------------------------------------------
# failing ranks (each its own job)


def fail_raise(rank, ws):
    if rank == 1:
        raise ValueError("rank 1 fails on purpose")
    dist.all_reduce(torch.ones(2))  # rank 1 never joins: the job must end anyway


def fail_stall(rank, ws):
    if rank == 1:
        time.sleep(600)  # never reaches the collective; rank 0 times out
    dist.all_reduce(torch.ones(2))


def main():
    mode = sys.argv[1]
    timeout = timedelta(seconds=float(os.environ.get("MPI_WORKER_TIMEOUT", "60")))
    dist.init_process_group("mpi", timeout=timeout)
    rank, ws = dist.get_rank(), dist.get_world_size()
    if mode in ("raise", "stall"):
        (fail_raise if mode == "raise" else fail_stall)(rank, ws)
        print("MPIRESULT", json.dumps({"rank": rank, "name": mode, "ok": True}), flush=True)
        return
    names = sys.argv[2:] or [n for n, (_, modes) in CHECKS.items() if mode in modes]
    for name in names:
        fn = CHECKS[name][0]
        t0 = time.perf_counter()
        try:
            detail, ok = fn(rank, ws), True
        except Exception:
            detail, ok = traceback.format_exc(), False
        try:
            dist.barrier()
        except Exception:
            detail += "\nbarrier after the check: " + traceback.format_exc()
            ok = False
        res = {
            "rank": rank,
            "name": name,
            "ok": ok,
            "detail": detail,
            "s": time.perf_counter() - t0,
        }
        print("MPIRESULT", json.dumps(res), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
