"""Thread safety: concurrent backward into shared leaves, concurrent first use of kernels.

PyTorch lets several threads run ``backward()`` at once; gradients flowing into one leaf are
all accumulated (its AccumulateGrad holds a mutex).  nbgrad's accumulation holds a per-leaf lock
(NOTE [thread-safe accumulation] in autograd/graph.py).  The races only show under contention,
so each test runs several trials with a tiny switch interval and large arrays (numpy releases
the GIL inside ``np.add`` on large arrays); before the fix about one trial in three lost updates.

The accumulation tests take the fixture ``T`` (nbgrad, and torch when installed: the same
assertions hold for the oracle).
"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(
    params=[
        pytest.param("nbgrad", id="nbgrad"),
        pytest.param("torch", id="torch", marks=needs_torch),
    ]
)
def T(request):
    return nbgrad if request.param == "nbgrad" else torch


@pytest.fixture
def fast_switching():
    prev = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(prev)


def _run_threads(n, work):
    barrier = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_concurrent_backward_into_one_leaf_loses_no_update(T, fast_switching):
    n_threads, per_thread = 4, 6
    for _ in range(12):
        x = T.zeros(200_000, dtype=T.float64, requires_grad=True)

        def work(i):
            for _ in range(per_thread):
                (x * 1.0).sum().backward()

        _run_threads(n_threads, work)
        assert x.grad is not None
        np.testing.assert_array_equal(x.grad.numpy(), n_threads * per_thread)


def test_concurrent_first_accumulation_keeps_every_gradient(T, fast_switching):
    """The first gradient of a leaf is a check-then-set: two threads must not both 'set'."""
    n_threads = 6
    for _ in range(10):
        x = T.zeros(50_000, dtype=T.float64, requires_grad=True)
        # each thread's graph is built before the race so all of them reach .grad at once
        losses = [(x * float(i + 1)).sum() for i in range(n_threads)]

        def work(i):
            losses[i].backward()

        _run_threads(n_threads, work)
        np.testing.assert_array_equal(x.grad.numpy(), sum(range(1, n_threads + 1)))


def test_concurrent_backward_through_one_graph_with_retained_grad(fast_switching):
    # nbgrad only: PyTorch's retain_grad hook is not atomic, it loses updates here and was seen
    # to segfault inside torch's engine in this race (the leaf case above runs on both)
    T = nbgrad
    n_threads = 4
    for _ in range(5):
        x = T.ones(20_000, dtype=T.float64, requires_grad=True)
        y = x * 2.0
        y.retain_grad()
        loss = (y * 3.0).sum()

        def work(i):
            loss.backward(retain_graph=True)

        _run_threads(n_threads, work)
        np.testing.assert_array_equal(x.grad.numpy(), 6.0 * n_threads)
        np.testing.assert_array_equal(y.grad.numpy(), 3.0 * n_threads)


def test_concurrent_backward_into_many_leaves(fast_switching):
    """Threads sharing some leaves and owning others: every leaf gets exactly its sum."""
    shared = nbgrad.zeros(30_000, dtype=nbgrad.float64, requires_grad=True)
    own = [nbgrad.zeros(30_000, dtype=nbgrad.float64, requires_grad=True) for _ in range(4)]

    def work(i):
        for k in range(5):
            ((shared * own[i]).sum() + (shared * float(i)).sum() + own[i].sum()).backward()

    _run_threads(4, work)
    np.testing.assert_array_equal(shared.grad.numpy(), 5 * (0 + 1 + 2 + 3))
    for o in own:
        np.testing.assert_array_equal(o.grad.numpy(), 5.0)


def test_concurrent_first_use_of_user_elementwise_kernels(fast_switching, tmp_path):
    """Several threads run, at the same moment, a forward and backward whose kernels do not
    exist yet (a formula never seen before: its forward and fused-backward modules are
    generated, written and compiled while the other threads ask for the same ones)."""
    salt = float(np.random.default_rng().integers(1, 10**9)) / 7.0  # a new formula each run
    src = tmp_path / "salted_formula.py"  # @elementwise reads the function's source
    src.write_text("def f(x, y):\n    return sin(x * %r) * y + x * x\n" % salt)
    sys.path.insert(0, str(tmp_path))
    try:
        import salted_formula
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("salted_formula", None)
    f = nbgrad.elementwise(salted_formula.f, name="test_threads.f_%d" % int(salt * 7))
    data = np.linspace(-1.0, 1.0, 1000)
    results = [None] * 4

    def work(i):
        x = nbgrad.tensor(data, requires_grad=True)
        y = nbgrad.tensor(data[::-1].copy(), requires_grad=True)
        f(x, y).sum().backward()
        results[i] = (x.grad.numpy().copy(), y.grad.numpy().copy())

    _run_threads(4, work)
    want_x = salt * np.cos(data * salt) * data[::-1] + 2 * data
    want_y = np.sin(data * salt)
    for gx, gy in results:
        np.testing.assert_allclose(gx, want_x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gy, want_y, rtol=1e-12, atol=1e-12)


_FRESH_CACHE_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    sys.setswitchinterval(1e-6)
    import nbgrad as T

    def run():
        x = T.tensor(np.linspace(-2, 2, 512), requires_grad=True)
        w = T.tensor(np.linspace(1, 3, 512), requires_grad=True)
        y = (T.tanh(x) * w + T.sigmoid(x * w) - T.relu(x) / w).pow(2)
        y = T.where(x > 0, y, T.exp(x)).sum()
        y.backward()
        return x.grad.numpy().copy(), w.grad.numpy().copy()

    out, errors = [None] * 6, []
    barrier = threading.Barrier(6)

    def body(i):
        try:
            barrier.wait()
            out[i] = run()
        except BaseException as e:
            errors.append(repr(e))

    ts = [threading.Thread(target=body, args=(i,)) for i in range(6)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors, errors
    ref = run()  # kernels now cached: the single-threaded reference
    for gx, gw in out:
        assert np.array_equal(gx, ref[0]) and np.array_equal(gw, ref[1])
    print("OK")
    """
)


def test_concurrent_first_use_of_kernels_with_an_empty_cache(tmp_path):
    """A fresh process with an empty kernel cache: six threads hit the same kernels first,
    so module generation, the disk cache and Numba compilation all race."""
    env = dict(os.environ)
    env["NBGRAD_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH_CACHE_SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("OK")


def test_concurrent_processes_share_an_empty_cache(tmp_path):
    """Two processes fill the same empty kernel cache at once (generated sources are written
    to private temporary files and renamed into place; Numba's index files are per kernel):
    both finish with the right gradients, and a third process then loads from the cache."""
    env = dict(os.environ)
    env["NBGRAD_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")

    def start():
        return subprocess.Popen(
            [sys.executable, "-c", _FRESH_CACHE_SCRIPT],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    procs = [start(), start()]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, out + err
        assert out.strip().endswith("OK")
    gen = tmp_path / "cache" / "nbgrad_gen"
    assert not list(gen.glob("*.tmp")), "a temporary source file was left behind"
    third = start()
    out, err = third.communicate(timeout=600)
    assert third.returncode == 0 and out.strip().endswith("OK"), out + err
