"""The benchmark workloads of ``nbgrad-bench`` and of ``asv_bench/``, each written once.

Every workload is code against a library module ``T`` -- ``nbgrad`` or ``torch``, the same code
-- plus, where the performance issue asks for one, the same computation hand-written in numpy.
A workload has one or more *parts* (a part is a callable that the timer runs in a calibrated
loop); its value is a linear combination of the parts' per-call times, which is how slopes are
measured: the per-op forward cost is ``(time(20-op chain) - time(0-op chain)) / 20``.

This file uses only the standard library, numpy and the public API of ``T`` (never nbgrad's
internals), because asv loads it *from the checkout* to benchmark past commits whose nbgrad
has no ``nbgrad.bench.workloads``.  A workload that needs an API some library or commit does
not have declares it (``requires``) and is reported as ``skipped: <reason>``.

Sizes: ``full`` is the size the performance targets are stated at; ``quick`` is small enough to
run every workload once in a test (``nbgrad-bench --quick``).
"""

import contextlib
import fnmatch
import importlib
import importlib.util
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["WORKLOADS", "Workload", "get", "select", "library"]


class Workload:
    """One benchmark.

    ``parts`` maps a part name to ``factory(T, **params) -> callable``; ``coef`` maps a part name
    to its coefficient in the value (seconds).  ``numpy`` maps part names to
    ``factory(**params) -> callable`` for the hand-written numpy version.  A ``self_timed``
    workload's callables return the seconds they measured themselves (fresh-process workloads)
    instead of being timed in a loop.  ``requires(T)`` returns ``None`` or the reason the
    workload cannot run with ``T``.  ``quick_test`` is ``None`` or the reason the workload is
    left out of the run-every-workload-once test.
    """

    def __init__(
        self,
        name,
        title,
        group,
        unit,
        parts,
        coef=None,
        full=None,
        quick=None,
        numpy=None,
        torch=True,
        self_timed=False,
        requires=None,
        quick_test=None,
        doc="",
    ):
        self.name = name
        self.title = title
        self.group = group
        self.unit = unit
        self.parts = dict(parts)
        self.coef = dict(coef) if coef is not None else {p: 1.0 for p in self.parts}
        assert set(self.coef) <= set(self.parts), name
        self.sizes = {
            "full": dict(full or {}),
            "quick": dict(quick if quick is not None else full or {}),
        }
        self.numpy = dict(numpy) if numpy else None
        self.torch = torch
        self.self_timed = self_timed
        self.requires = requires
        self.quick_test = quick_test
        self.doc = doc

    def __repr__(self):
        return "<Workload %s>" % self.name

    def params(self, quick=False):
        return dict(self.sizes["quick" if quick else "full"])

    def label(self, quick=False):
        """The title with this size's parameters filled in."""
        p = self.params(quick)
        p.update({k + "_h": _human(v) for k, v in p.items() if isinstance(v, int)})
        return self.title.format(**p)

    def libraries(self):
        """Which libraries this workload is defined for."""
        return ["nbgrad"] + (["torch"] if self.torch else []) + (["numpy"] if self.numpy else [])

    def skip_reason(self, T):
        """``None`` when the workload can run with ``T`` (a module, or None for numpy)."""
        if T is None:
            return None if self.numpy else "no numpy version"
        reason = self.requires(T) if self.requires is not None else None
        if T.__name__ == "torch" and not self.torch:
            return reason or "no PyTorch counterpart"
        return reason

    def setup(self, T, quick=False):
        """``{part: callable}`` for library ``T`` (``None``: the numpy version)."""
        p = self.params(quick)
        if T is None:
            return {part: f(**p) for part, f in self.numpy.items()}
        return {part: f(T, **p) for part, f in self.parts.items()}

    def value(self, seconds):
        """The workload's value from ``{part: seconds per call}``."""
        return sum(c * seconds[p] for p, c in self.coef.items())


def _human(n):
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d%s" % (n // size, unit)
    return "{:,}".format(n)


def library(name):
    """The module called ``name`` ('nbgrad', 'torch'; ImportError if absent); None for numpy."""
    if name == "numpy":
        return None
    return importlib.import_module(name)


def close(fns):
    """Release what a setup's callables hold (temporary folders)."""
    for fn in fns.values():
        c = getattr(fn, "close", None)
        if c is not None:
            c()


def _randn(shape, seed=0, scale=1.0, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------------------------------------
# per-op, per-node, one backward() call: a chain of `n` multiplications by a Python scalar on a
# 4-element tensor, then `.sum()`; the backward parts also call `.backward()`.


def _chain(T, n, backward):
    x = T.ones(4, requires_grad=True)

    if backward:

        def run():
            y = x
            for _ in range(n):
                y = y * 1.0001
            y.sum().backward()
            x.grad = None

    else:

        def run():
            y = x
            for _ in range(n):
                y = y * 1.0001
            y.sum()
            x.grad = None

    return run


def _chain_part(n, backward):
    return lambda T, n_ops: _chain(T, n if n is not None else n_ops, backward)


_CHAIN_PARTS = {
    "fwd_n": _chain_part(None, False),
    "fwd_0": _chain_part(0, False),
    "fwd_bwd_n": _chain_part(None, True),
    "fwd_bwd_0": _chain_part(0, True),
}


def _slope(parts, n):
    return {p: c / n for p, c in parts.items()}


# ---------------------------------------------------------------------------------------------
# large tensors


def softmax_cross_entropy(T, rows, classes):
    x = T.tensor(_randn((rows, classes)), requires_grad=True)
    y = T.tensor(np.random.default_rng(1).integers(0, classes, rows))
    F = T.nn.functional

    def run():
        F.cross_entropy(x, y).backward()
        x.grad = None

    return run


def gelu_primitives(T, n):
    x = T.tensor(_randn(n), requires_grad=True)
    c = math.sqrt(2 / math.pi)

    def run():
        y = 0.5 * x * (1 + T.tanh(c * (x + 0.044715 * x * x * x)))
        y.sum().backward()
        x.grad = None

    return run


# ---------------------------------------------------------------------------------------------
# the "fastest autograd" scalar graph


def _scalar_plan(n_inputs, n_ops):
    """Which earlier nodes each op reads: fixed by a seeded RNG, the same for every library."""
    rng = random.Random(0)
    plan, count = [], n_inputs
    for i in range(n_ops):
        kind = i % 4
        if kind == 0:
            plan.append((0, (rng.randrange(count),)))
            count += 1
        elif kind == 1:
            plan.append((1, tuple(rng.randrange(count) for _ in range(4))))
            count += 1
        elif kind == 2:
            plan.append((2, (rng.randrange(count), rng.randrange(count))))
            count += 1
        else:
            plan.append((3, ()))
            count += 4
    return plan


def scalar_graph_parts(T, n_inputs, n_ops, dtype=None):
    """``(x, step)``: the leaf (``n_inputs`` values of an arange) and the forward + backward of
    the scalar graph (``scalar_graph``), which accumulates into ``x.grad``."""
    x = (T.arange(n_inputs, dtype=dtype) / n_inputs).requires_grad_()
    step_of = scalar_step(T, n_inputs, n_ops)
    return x, lambda: step_of(x)


def scalar_step(T, n_inputs, n_ops):
    """The scalar graph's forward + backward as a function of its leaf ``x``."""
    plan = _scalar_plan(n_inputs, n_ops)
    softplus = T.nn.functional.softplus

    def step(x):
        nodes = list(x.unbind(0))
        for kind, idx in plan:
            if kind == 0:
                nodes.append(softplus(nodes[idx[0]]))
            elif kind == 1:
                nodes.append(sum([nodes[i] for i in idx]))
            elif kind == 2:
                nodes.append(nodes[idx[0]] * nodes[idx[1]])
            else:
                nodes.extend(T.softmax(T.stack(nodes[-4:]), 0).unbind(0))
        nodes[-1].backward()

    return step


def scalar_graph(T, n_inputs, n_ops):
    """``n_inputs`` 0-d inputs (``unbind`` of an arange), ``n_ops`` ops cycling softplus / Python
    ``sum`` of 4 earlier nodes / product of two earlier nodes / softmax over a ``stack`` of the
    last 4 (whose elements are appended); backward from the last node."""
    x, step = scalar_graph_parts(T, n_inputs, n_ops)

    def run():
        step()
        x.grad = None

    return run


# ---------------------------------------------------------------------------------------------
# nbgrad.compile (issue 16): the same steps, compiled with nbgrad and eager with PyTorch


def chain20(T, n):
    """20 pointwise ops (mul, add, tanh, sub, cycling) on ``n`` float64 elements, sum,
    backward."""
    x = T.tensor(_randn(n).astype(np.float64), requires_grad=True)

    def run():
        y = x
        for _ in range(5):
            y = (y * 1.01 + 0.1).tanh() - 0.5
        y = y * 1.0  # the 20th op
        y.sum().backward()
        x.grad = None

    return run


def compiled(factory):
    """``factory``'s step through ``nbgrad.compile`` for nbgrad, eager for any other library
    (the issue's targets compare compiled nbgrad with eager PyTorch); warmed by one call, which
    captures."""

    def make(T, **params):
        run = factory(T, **params)
        if T.__name__.split(".")[0] == "nbgrad":
            run = T.compile(run)
            run()
        return run

    make.__name__ = "compiled_" + factory.__name__
    return make


def _needs_compile(T):
    return None if hasattr(T, "compile") else "needs nbgrad.compile (issue 16)"


# ---------------------------------------------------------------------------------------------
# training steps


def _mlp_data(batch):
    sizes = [784, 512, 512, 10]
    ws = [
        _randn((a, b), seed=i, scale=1 / math.sqrt(a))
        for i, (a, b) in enumerate(zip(sizes, sizes[1:]))
    ]
    bs = [np.zeros(b, np.float32) for b in sizes[1:]]
    x = _randn((batch, 784), seed=10)
    y = np.random.default_rng(11).integers(0, 10, batch)
    return ws, bs, x, y


def mlp_step(T, batch):
    """784-512-512-10 ReLU MLP, cross-entropy, ``optim.SGD`` step (zero_grad, backward, step)."""
    ws, bs, x, y = _mlp_data(batch)
    w1, w2, w3, b1, b2, b3 = params = [T.tensor(a, requires_grad=True) for a in ws + bs]
    xb, yb = T.tensor(x), T.tensor(y)
    opt = T.optim.SGD(params, lr=0.01)
    F = T.nn.functional

    def run():
        h = F.relu(xb @ w1 + b1)
        h = F.relu(h @ w2 + b2)
        loss = F.cross_entropy(h @ w3 + b3, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


def mlp_step_numpy(batch):
    """The same step hand-written in numpy (float32, in-place SGD update)."""
    ws, bs, x, y = _mlp_data(batch)
    w1, w2, w3 = ws
    b1, b2, b3 = bs
    rows = np.arange(batch)
    lr = np.float32(0.01)

    def run():
        h1 = x @ w1 + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2 + b2
        a2 = np.maximum(h2, 0)
        z = a2 @ w3 + b3
        z -= z.max(1, keepdims=True)
        e = np.exp(z)
        s = e.sum(1, keepdims=True)
        loss = (np.log(s[:, 0]) - z[rows, y]).mean()
        dz = e / s
        dz[rows, y] -= 1
        dz /= batch
        d2 = (dz @ w3.T) * (h2 > 0)
        d1 = (d2 @ w2.T) * (h1 > 0)
        grads = (x.T @ d1, a1.T @ d2, a2.T @ dz, d1.sum(0), d2.sum(0), dz.sum(0))
        for p, g in zip((w1, w2, w3, b1, b2, b3), grads):
            p -= lr * g
        return loss

    return run


def cnn_step(T, batch):
    """conv 1->16 3x3, ReLU, maxpool 2, conv 16->32 3x3, ReLU, maxpool 2, linear 800->10;
    cross-entropy, ``optim.SGD`` step, a batch of 28x28 images."""
    nn = T.nn
    T.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(800, 10),
    )
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    xb = T.tensor(_randn((batch, 1, 28, 28)))
    yb = T.tensor(np.random.default_rng(1).integers(0, 10, batch))

    def run():
        loss = T.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


def lstm_step(T, seq, batch, inputs, hidden):
    """``nn.LSTM(inputs, hidden)`` over a (seq, batch, inputs) float32 sequence, forward and
    backward of ``output.sum()`` (the weights' gradients are reset after each call)."""
    T.manual_seed(0)
    lstm = T.nn.LSTM(inputs, hidden)
    x = T.tensor(_randn((seq, batch, inputs)), requires_grad=True)

    def run():
        out, _ = lstm(x)
        out.sum().backward()
        x.grad = None
        for p in lstm.parameters():
            p.grad = None

    return run


# ---------------------------------------------------------------------------------------------
# attention


def _requires_attention(T):
    F = T.nn.functional
    if not hasattr(F, "scaled_dot_product_attention") or not hasattr(T.nn, "TransformerEncoder"):
        return "no F.scaled_dot_product_attention / nn.TransformerEncoder"
    return None


def sdpa_fwd_bwd(T, batch, heads, seq, head_dim, causal):
    """``F.scaled_dot_product_attention`` on (batch, heads, seq, head_dim) float32 q, k, v,
    then ``backward`` (the fused kernels of both libraries)."""
    shape = (batch, heads, seq, head_dim)
    q, k, v = (T.tensor(_randn(shape, seed=i), requires_grad=True) for i in range(3))
    g = T.tensor(_randn(shape, seed=3))
    sdpa = T.nn.functional.scaled_dot_product_attention

    def run():
        sdpa(q, k, v, is_causal=causal).backward(g)
        q.grad = k.grad = v.grad = None

    return run


def transformer_step(T, batch, seq, d_model):
    """scripts/train_tiny_transformer.py's step: token + position embeddings, a 2-layer
    ``TransformerEncoder`` (4 heads, feed-forward 2 d_model, no dropout), a linear head per
    position, cross-entropy, ``optim.Adam`` step."""
    nn = T.nn
    T.manual_seed(0)
    tok, pos, head = nn.Embedding(10, d_model), nn.Embedding(seq, d_model), nn.Linear(d_model, 10)
    layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    params = [p for m in (tok, pos, enc, head) for p in m.parameters()]
    opt = T.optim.Adam(params, lr=1e-3)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 10, (batch, seq))
    xb, yb, positions = T.tensor(x), T.tensor(np.sort(x, 1).reshape(-1)), T.arange(seq)

    def run():
        logits = head(enc(tok(xb) + pos(positions)))
        loss = T.nn.functional.cross_entropy(logits.reshape(-1, 10), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


# ---------------------------------------------------------------------------------------------
# hooks


def _noop_tensor_hook(grad):
    return None


def _noop_module_hook(module, grad_input, grad_output):
    return None


def tensor_hooks(T, n_ops, hooks):
    """``backward(retain_graph=True)`` of a kept ``n_ops``-op chain whose every intermediate
    has (or has not) a no-op ``register_hook``: the difference is ``n_ops`` hook firings."""
    x = T.ones(4, requires_grad=True)
    y = x
    for _ in range(n_ops):
        y = y * 1.0001
        if hooks:
            y.register_hook(_noop_tensor_hook)
    loss = y.sum()

    def run():
        loss.backward(retain_graph=True)
        x.grad = None

    return run


def module_hooks(T, n_ops, hooks):
    """Forward + backward through ``n_ops`` ``Linear(4, 4)`` modules, each with (or without) a
    no-op ``register_full_backward_hook``."""
    T.manual_seed(0)
    model = T.nn.Sequential(*[T.nn.Linear(4, 4) for _ in range(n_ops)])
    if hooks:
        for m in model:
            m.register_full_backward_hook(_noop_module_hook)
    x = T.ones(2, 4, requires_grad=True)

    def run():
        model(x).sum().backward()
        x.grad = None

    return run


# ---------------------------------------------------------------------------------------------
# profiler


def _profiler(T):
    try:
        mod = importlib.import_module(T.__name__ + ".autograd.profiler")
    except ImportError:
        return None
    return getattr(mod, "profile", None)


def _requires_profiler(T):
    if _profiler(T) is None:
        return "%s.autograd.profiler.profile does not exist yet" % T.__name__
    return None


@contextlib.contextmanager
def _stderr_to_devnull():
    """File descriptor 2 to /dev/null: PyTorch's profiler logs two lines from C++ per session."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def profiled_chain(T, n_ops, per_session, profiled):
    """``per_session`` forward+backward passes of an ``n_ops``-op chain inside one
    ``autograd.profiler.profile()`` session (or none; both with stderr silenced, whose cost
    cancels in the slope)."""
    profile = _profiler(T) if profiled else None
    x = T.ones(4, requires_grad=True)

    def run():
        with _stderr_to_devnull(), profile() if profiled else contextlib.nullcontext():
            for _ in range(per_session):
                y = x
                for _ in range(n_ops):
                    y = y * 1.0001
                y.sum().backward()
                x.grad = None

    return run


# ---------------------------------------------------------------------------------------------
# functional API


def _tanh_net(T, n_in, n_out):
    rng = np.random.default_rng(0)
    w1 = T.tensor(rng.standard_normal((64, n_in)) * 0.2)
    b1 = T.tensor(rng.standard_normal(64))
    w2 = T.tensor(rng.standard_normal((n_out, 64)) * 0.2)
    x = T.tensor(rng.standard_normal(n_in))
    return w1, b1, w2, x


def jacobian(T, n_in, n_out, mode):
    """The ``n_out x n_in`` Jacobian of ``tanh(W2 @ tanh(W1 @ x + b1))`` (float64) by
    ``autograd.functional.jacobian``: a row loop, one batched backward (``vectorize=True``) or
    one batched forward-mode pass."""
    w1, b1, w2, x = _tanh_net(T, n_in, n_out)
    kw = {
        "rows": {},
        "vectorize": {"vectorize": True},
        "forward-mode": {"vectorize": True, "strategy": "forward-mode"},
    }[mode]

    def f(v):
        return T.tanh(w2 @ T.tanh(w1 @ v + b1))

    return lambda: T.autograd.functional.jacobian(f, x, **kw)


def hessian(T, n_in):
    """The ``n_in x n_in`` Hessian of ``sum(tanh(W1 @ x + b1) ** 2)`` (float64) by
    ``autograd.functional.hessian`` (reverse-over-reverse, a row loop)."""
    w1, b1, _, x = _tanh_net(T, n_in, 1)

    def f(v):
        return (T.tanh(w1 @ v + b1) ** 2).sum()

    return lambda: T.autograd.functional.hessian(f, x)


# ---------------------------------------------------------------------------------------------
# fresh processes: the code runs in a new interpreter and prints its own elapsed seconds, from
# just before ``import T`` (so the interpreter's own start-up is not counted)

IMPORT_CODE = """\
import time
t0 = time.perf_counter()
import {module}
print(repr(time.perf_counter() - t0))
"""

FIRST_BACKWARD_CODE = """\
import time
t0 = time.perf_counter()
import {module} as T
x = T.ones(16, 8) / 8
w1 = T.ones(8, 32, requires_grad=True)
b1 = T.zeros(32, requires_grad=True)
w2 = T.ones(32, 10, requires_grad=True)
h = (x @ w1 + b1).relu()
loss = T.nn.functional.cross_entropy(h @ w2, T.arange(16) % 10)
loss.backward()
print(repr(time.perf_counter() - t0))
"""


class FreshProcess:
    """A callable that runs ``code`` (formatted with ``module``) in a new interpreter and
    returns the seconds it printed.  ``cache``: ``None`` or ``"warm"`` (the kernel cache this
    process uses, which the untimed ``warm_up`` run fills with what the code needs) or
    ``"empty"`` (a new empty folder for every call).  ``extra_env`` (class-wide) is added to
    the child's environment: ``nbgrad-bench --threads`` puts its thread settings there."""

    extra_env = {}

    def __init__(self, T, code, cache=None):
        self.module = T.__name__
        self.code = code.format(module=self.module)
        self.cache = cache
        self.env = dict(os.environ, NBGRAD_QUIET="1", **self.extra_env)
        root = os.path.dirname(os.path.dirname(os.path.abspath(T.__file__)))
        self.env["PYTHONPATH"] = os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        )
        self.tmp = tempfile.mkdtemp(prefix="nbgrad-bench-") if cache == "empty" else None

    def _run(self, env):
        out = subprocess.run(
            [sys.executable, "-c", self.code], env=env, capture_output=True, text=True
        )
        if out.returncode != 0:
            raise RuntimeError(
                "fresh %s process failed (exit %d): %s"
                % (self.module, out.returncode, out.stderr.strip()[-2000:])
            )
        return float(out.stdout.strip().splitlines()[-1])

    def warm_up(self):
        """One untimed run: fills the kernel cache (``"warm"``), the file-system cache and the
        byte-code files; nothing for ``"empty"``, which every run starts from anyway."""
        if self.cache != "empty":
            self._run(self.env)

    def __call__(self):
        if self.cache != "empty":
            return self._run(self.env)
        folder = tempfile.mkdtemp(dir=self.tmp)
        try:
            return self._run(dict(self.env, NBGRAD_CACHE_DIR=os.path.join(folder, "cache")))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self):
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def _requires_kernel_cache(T):
    if T.__name__ != "nbgrad":
        return "only nbgrad has a kernel cache"
    return None


# Data-parallel training over MPI: scripts/bench_ddp.py on 2 ranks (mpirun), one mode per
# workload; the script's own report (both modes interleaved, the overlap timeline) is what
# docs/performance.md quotes.

_BENCH_DDP = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "scripts",
    "bench_ddp.py",
)


def _mpirun():
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("mpirun", path=path) or shutil.which("mpiexec", path=path)


def _requires_mpi(T):
    if T.__name__ != "nbgrad":
        return "nbgrad's MPI data parallelism (PyTorch's CPU wheel has no MPI backend)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'nbgrad[mpi]')"
    if _mpirun() is None:
        return "no mpirun/mpiexec on PATH"
    if not os.path.isfile(_BENCH_DDP):
        return "scripts/bench_ddp.py is not in this checkout"
    try:
        importlib.import_module(T.__name__ + ".nn.parallel")
    except ImportError:
        return "this nbgrad has no nn.parallel.DistributedDataParallel"
    return None


class MpiRun:
    """A callable that runs scripts/bench_ddp.py's ranks for one ``mode`` under ``mpirun -n 2``
    with library ``T`` and returns the median seconds per training step it measured."""

    def __init__(self, T, mode, ranks, **params):
        self.mode = mode
        exe = _mpirun()
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        cmd = [exe, "-n", str(ranks)]
        if "Open MPI" in version:
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                cmd.append("--allow-run-as-root")
            if ranks > (os.cpu_count() or 1):
                cmd.append("--oversubscribe")
        self.cmd = (
            cmd
            + [sys.executable, _BENCH_DDP, "--worker", "--modes", mode]
            + ["--%s=%s" % (k.replace("_", "-"), v) for k, v in sorted(params.items())]
        )
        root = os.path.dirname(os.path.dirname(os.path.abspath(T.__file__)))
        self.env = dict(os.environ, NBGRAD_QUIET="1", NBGRAD_DISTRIBUTED_CHECKS="0")
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            self.env.setdefault(var, "1")
        self.env["PYTHONPATH"] = os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        )

    def warm_up(self):
        self()

    def __call__(self):
        out = subprocess.run(self.cmd, env=self.env, capture_output=True, text=True, timeout=600)
        for line in out.stdout.splitlines():
            if line.startswith("BENCHDDP "):
                import json

                doc = json.loads(line[len("BENCHDDP ") :])
                return doc["modes"][self.mode]["median_ms"] / 1e3
        raise RuntimeError(
            "mpirun of bench_ddp.py failed (exit %d): %s"
            % (out.returncode, (out.stdout + out.stderr).strip()[-2000:])
        )


_DDP_FULL = {"ranks": 2, "hidden": 512, "layers": 8, "batch": 16, "bucket_cap_mb": 1.0}
_DDP_QUICK = {"ranks": 2, "hidden": 32, "layers": 2, "batch": 4, "bucket_cap_mb": 0.001}


# ---------------------------------------------------------------------------------------------
# the table

_COMPILED = [
    Workload(
        "compiled_scalar_graph",
        "nbgrad.compile: scalar graph, {n_inputs} inputs, {n_ops_h} ops, fwd+bwd",
        "compile",
        "ms",
        {"step": compiled(scalar_graph)},
        full={"n_inputs": 100, "n_ops": 1000},
        quick={"n_inputs": 20, "n_ops": 100},
        requires=_needs_compile,
    ),
    Workload(
        "compiled_gelu_primitives",
        "nbgrad.compile: GELU from primitive ops, {n_h} float32, fwd+bwd",
        "compile",
        "ms",
        {"step": compiled(gelu_primitives)},
        full={"n": 1 << 22},
        quick={"n": 1 << 16},
        requires=_needs_compile,
    ),
    Workload(
        "compiled_chain20",
        "nbgrad.compile: 20-op pointwise chain, {n} float64, fwd+bwd",
        "compile",
        "us",
        {"step": compiled(chain20)},
        full={"n": 16},
        quick={"n": 16},
        requires=_needs_compile,
    ),
    Workload(
        "compiled_mlp_step",
        "nbgrad.compile: MLP 784-512-512-10 SGD step, batch {batch}",
        "compile",
        "ms",
        {"step": compiled(mlp_step)},
        full={"batch": 64},
        quick={"batch": 16},
        requires=_needs_compile,
    ),
    Workload(
        "compiled_cnn_step",
        "nbgrad.compile: CNN (conv 1-16, conv 16-32, linear 800-10) SGD step, batch {batch}",
        "compile",
        "ms",
        {"step": compiled(cnn_step)},
        full={"batch": 64},
        quick={"batch": 8},
        requires=_needs_compile,
    ),
]

WORKLOADS = [
    Workload(
        "per_op_forward",
        "per-op forward while recording, 4-element tensor ({n_ops}-op chain slope)",
        "engine",
        "us",
        {"fwd_n": _CHAIN_PARTS["fwd_n"], "fwd_0": _CHAIN_PARTS["fwd_0"]},
        coef=_slope({"fwd_n": 1, "fwd_0": -1}, 20),
        full={"n_ops": 20},
        doc="(t(n-op chain + sum) - t(0-op chain + sum)) / n; the ops multiply by a Python scalar",
    ),
    Workload(
        "per_node_backward",
        "per-node backward, 4-element tensor ({n_ops}-op chain slope)",
        "engine",
        "us",
        _CHAIN_PARTS,
        coef=_slope({"fwd_bwd_n": 1, "fwd_n": -1, "fwd_bwd_0": -1, "fwd_0": 1}, 20),
        full={"n_ops": 20},
        doc="slope in n of the backward() time: ((fb_n - f_n) - (fb_0 - f_0)) / n",
    ),
    Workload(
        "backward_call",
        "fixed cost of one backward() call (sum of a 4-element leaf)",
        "engine",
        "us",
        {"fwd_bwd_0": _CHAIN_PARTS["fwd_bwd_0"], "fwd_0": _CHAIN_PARTS["fwd_0"]},
        coef={"fwd_bwd_0": 1, "fwd_0": -1},
        full={"n_ops": 20},
        doc="t(x.sum().backward()) - t(x.sum()): one SumBackward0 node, one leaf, the engine",
    ),
    Workload(
        "softmax_cross_entropy",
        "softmax + cross-entropy {rows}x{classes} float32, fwd+bwd",
        "workload",
        "ms",
        {"step": softmax_cross_entropy},
        full={"rows": 128, "classes": 10000},
        quick={"rows": 32, "classes": 1000},
    ),
    Workload(
        "gelu_primitives",
        "GELU from primitive ops, {n_h} float32, fwd+bwd",
        "workload",
        "ms",
        {"step": gelu_primitives},
        full={"n": 1 << 22},
        quick={"n": 1 << 16},
    ),
    Workload(
        "scalar_graph",
        '"fastest autograd" scalar graph, {n_inputs} inputs, {n_ops_h} ops, fwd+bwd',
        "workload",
        "ms",
        {"step": scalar_graph},
        full={"n_inputs": 100, "n_ops": 1000},
        quick={"n_inputs": 20, "n_ops": 100},
    ),
    Workload(
        "mlp_step_b16",
        "MLP 784-512-512-10 SGD step, batch {batch}",
        "workload",
        "ms",
        {"step": mlp_step},
        full={"batch": 16},
        numpy={"step": mlp_step_numpy},
    ),
    Workload(
        "mlp_step_b128",
        "MLP 784-512-512-10 SGD step, batch {batch}",
        "workload",
        "ms",
        {"step": mlp_step},
        full={"batch": 128},
        numpy={"step": mlp_step_numpy},
    ),
    Workload(
        "cnn_step",
        "CNN (conv 1-16, conv 16-32, linear 800-10) SGD step, batch {batch} of 28x28",
        "workload",
        "ms",
        {"step": cnn_step},
        full={"batch": 64},
        quick={"batch": 8},
    ),
    Workload(
        "sdpa_fwd_bwd",
        "scaled_dot_product_attention fwd+bwd, {batch}x{heads}x{seq}x{head_dim} float32",
        "workload",
        "ms",
        {"call": lambda T, **p: sdpa_fwd_bwd(T, causal=False, **p)},
        full={"batch": 4, "heads": 8, "seq": 256, "head_dim": 64},
        quick={"batch": 1, "heads": 2, "seq": 16, "head_dim": 8},
        requires=_requires_attention,
    ),
    Workload(
        "sdpa_causal_fwd_bwd",
        "scaled_dot_product_attention is_causal fwd+bwd, {batch}x{heads}x{seq}x{head_dim}",
        "workload",
        "ms",
        {"call": lambda T, **p: sdpa_fwd_bwd(T, causal=True, **p)},
        full={"batch": 4, "heads": 8, "seq": 256, "head_dim": 64},
        quick={"batch": 1, "heads": 2, "seq": 16, "head_dim": 8},
        requires=_requires_attention,
    ),
    Workload(
        "transformer_step",
        "2-layer TransformerEncoder (d_model {d_model}) Adam step, batch {batch} x {seq} tokens",
        "workload",
        "ms",
        {"step": transformer_step},
        full={"batch": 64, "seq": 8, "d_model": 64},
        quick={"batch": 4, "seq": 4, "d_model": 8},
        requires=_requires_attention,
    ),
    Workload(
        "lstm_step",
        "LSTM {inputs}-{hidden}, {seq} steps x batch {batch} float32, fwd+bwd",
        "workload",
        "ms",
        {"step": lstm_step},
        full={"seq": 50, "batch": 32, "inputs": 64, "hidden": 128},
        quick={"seq": 4, "batch": 2, "inputs": 3, "hidden": 5},
        doc="time loop of fused cell ops (nbgrad) vs PyTorch's CPU LSTM (oneDNN for float32)",
    ),
    Workload(
        "tensor_hook",
        "no-op tensor hook, per firing ({n_ops} hooked nodes)",
        "hooks",
        "us",
        {
            "hooked": lambda T, n_ops: tensor_hooks(T, n_ops, True),
            "plain": lambda T, n_ops: tensor_hooks(T, n_ops, False),
        },
        coef=_slope({"hooked": 1, "plain": -1}, 20),
        full={"n_ops": 20},
        doc="(t(backward with a hook on each of n nodes) - t(without)) / n, retain_graph=True",
    ),
    Workload(
        "module_full_backward_hook",
        "no-op module full-backward hook, per module call ({n_ops} Linear(4, 4))",
        "hooks",
        "us",
        {
            "hooked": lambda T, n_ops: module_hooks(T, n_ops, True),
            "plain": lambda T, n_ops: module_hooks(T, n_ops, False),
        },
        coef=_slope({"hooked": 1, "plain": -1}, 20),
        full={"n_ops": 20},
        doc="(t(fwd+bwd of n hooked modules) - t(the same without hooks)) / n",
    ),
    Workload(
        "profiler_overhead",
        "profiler overhead per recorded op + node ({n_ops}-op chain slope)",
        "profiler",
        "us",
        {
            "prof_n": lambda T, n_ops, k: profiled_chain(T, n_ops, k, True),
            "prof_0": lambda T, n_ops, k: profiled_chain(T, 0, k, True),
            "plain_n": lambda T, n_ops, k: profiled_chain(T, n_ops, k, False),
            "plain_0": lambda T, n_ops, k: profiled_chain(T, 0, k, False),
        },
        coef=_slope({"prof_n": 1, "prof_0": -1, "plain_n": -1, "plain_0": 1}, 20 * 10),
        full={"n_ops": 20, "k": 10},
        requires=_requires_profiler,
        doc="((prof_n - prof_0) - (plain_n - plain_0)) / (n k): k fwd+bwd passes per session",
    ),
    Workload(
        "jacobian_rows",
        "jacobian {n_out}x{n_in}, row loop (one backward per row)",
        "functional",
        "ms",
        {"call": lambda T, n_in, n_out: jacobian(T, n_in, n_out, "rows")},
        full={"n_in": 50, "n_out": 100},
        quick={"n_in": 10, "n_out": 20},
    ),
    Workload(
        "jacobian_vectorize",
        "jacobian {n_out}x{n_in}, vectorize=True (one batched backward)",
        "functional",
        "ms",
        {"call": lambda T, n_in, n_out: jacobian(T, n_in, n_out, "vectorize")},
        full={"n_in": 50, "n_out": 100},
        quick={"n_in": 10, "n_out": 20},
    ),
    Workload(
        "jacobian_forward_mode",
        "jacobian {n_out}x{n_in}, forward-mode, vectorized",
        "functional",
        "ms",
        {"call": lambda T, n_in, n_out: jacobian(T, n_in, n_out, "forward-mode")},
        full={"n_in": 50, "n_out": 100},
        quick={"n_in": 10, "n_out": 20},
    ),
    Workload(
        "hessian",
        "hessian {n_in}x{n_in} (reverse-over-reverse row loop)",
        "functional",
        "ms",
        {"call": hessian},
        full={"n_in": 50},
        quick={"n_in": 10},
    ),
    Workload(
        "ddp_step_overlap",
        "DDP step, 2 MPI ranks, {layers} x (Linear({hidden}, {hidden}), ReLU), batch {batch}/rank, "
        "{bucket_cap_mb} MB buckets overlapping backward",
        "distributed",
        "ms",
        {"process": lambda T, **p: MpiRun(T, "overlap", steps=5, rounds=3, **p)},
        full=_DDP_FULL,
        quick=_DDP_QUICK,
        torch=False,
        self_timed=True,
        requires=_requires_mpi,
        doc="scripts/bench_ddp.py --modes overlap under mpirun -n 2: median step of the slowest "
        "rank; bucket all-reduces start from the post-accumulate-grad hooks",
    ),
    Workload(
        "ddp_step_after_backward",
        "DDP step, 2 MPI ranks, {layers} x (Linear({hidden}, {hidden}), ReLU), batch {batch}/rank, "
        "one all-reduce after backward",
        "distributed",
        "ms",
        {"process": lambda T, **p: MpiRun(T, "after_backward", steps=5, rounds=3, **p)},
        full=_DDP_FULL,
        quick=_DDP_QUICK,
        torch=False,
        self_timed=True,
        requires=_requires_mpi,
        doc="as ddp_step_overlap with one bucket: its all-reduce starts when backward has "
        "produced the last gradient",
    ),
    Workload(
        "import_time",
        "import in a fresh process",
        "cold start",
        "s",
        {"process": lambda T: FreshProcess(T, IMPORT_CODE)},
        self_timed=True,
        doc="seconds from before `import T` to after it, in a new interpreter",
    ),
    Workload(
        "first_backward_warm_cache",
        "import + first forward/backward, fresh process, warm kernel cache",
        "cold start",
        "s",
        {"process": lambda T: FreshProcess(T, FIRST_BACKWARD_CODE, cache="warm")},
        self_timed=True,
        doc="a tiny MLP's forward and backward in a new interpreter, its kernels in the cache",
    ),
    Workload(
        "first_backward_empty_cache",
        "import + first forward/backward, fresh process, empty kernel cache",
        "cold start",
        "s",
        {"process": lambda T: FreshProcess(T, FIRST_BACKWARD_CODE, cache="empty")},
        torch=False,
        self_timed=True,
        requires=_requires_kernel_cache,
        quick_test="compiles every kernel of its graph from nothing (seconds of Numba time)",
        doc="as first_backward_warm_cache with a new empty NBGRAD_CACHE_DIR for every run",
    ),
]

WORKLOADS += _COMPILED
_BY_NAME = {w.name: w for w in WORKLOADS}
assert len(_BY_NAME) == len(WORKLOADS)


def get(name):
    """The workload called ``name`` (KeyError lists the names)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError("no workload %r; known: %s" % (name, ", ".join(_BY_NAME))) from None


def select(patterns=None):
    """Workloads whose name, title or group contains any of ``patterns`` (case-insensitive;
    shell wildcards ``*?[]`` allowed); all of them when ``patterns`` is empty."""
    if not patterns:
        return list(WORKLOADS)
    out = []
    for w in WORKLOADS:
        hay = [w.name.lower(), w.title.lower(), w.group.lower()]
        for p in patterns:
            p = p.lower()
            glob = any(ch in p for ch in "*?[")
            if any(fnmatch.fnmatchcase(h, p) if glob else p in h for h in hay):
                out.append(w)
                break
    return out
