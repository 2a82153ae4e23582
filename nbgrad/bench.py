"""Micro-benchmark: per-op forward cost while recording, per-node backward cost, a GELU written
from primitive ops (4M float32, forward+backward) and an MLP train step; ratios to PyTorch when
it is installed (measured interleaved in the same process)."""

import argparse
import time

import numpy as np

import nbgrad


def _timeit(fn, repeat=5, number=1):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def demo(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp().sum()
    y.backward()
    return y, x.grad


def chain(T, n):
    x = T.ones(4, requires_grad=True)

    def run():
        y = x
        for _ in range(n):
            y = y * 1.0001
        return y

    return run


def per_op(T):
    f20, f0 = chain(T, 20), chain(T, 0)
    t20 = _timeit(f20, repeat=7, number=50)
    t0 = _timeit(f0, repeat=7, number=50)
    return (t20 - t0) / 20


def per_node(T):
    x = T.ones(4, requires_grad=True)

    def make(n):
        def run():
            y = x
            for _ in range(n):
                y = y * 1.0001
            y.sum().backward()

        return run

    t_fwd = per_op(T)
    t20 = _timeit(make(20), repeat=7, number=20)
    t0 = _timeit(make(0), repeat=7, number=20)
    return (t20 - t0) / 20 - t_fwd


def gelu_step(T, n=1 << 22):
    x = T.tensor(np.random.default_rng(0).standard_normal(n).astype(np.float32), requires_grad=True)
    c = float(np.sqrt(2 / np.pi))

    def run():
        y = 0.5 * x * (1 + T.tanh(c * (x + 0.044715 * x * x * x)))
        y.sum().backward()
        x.grad = None

    return run


def mlp_step(T, batch=128):
    rng = np.random.default_rng(0)
    ws = [
        T.tensor((rng.standard_normal(s) * 0.05).astype(np.float32), requires_grad=True)
        for s in [(784, 512), (512, 512), (512, 10)]
    ]
    bs = [T.zeros(s, requires_grad=True) for s in (512, 512, 10)]
    xb = T.tensor(rng.standard_normal((batch, 784)).astype(np.float32))

    def run():
        h = xb
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = h @ w + b
            if i < 2:
                h = h.relu()
        loss = (h.log_softmax(1)).mean()
        loss.backward()
        with T.no_grad():
            for p in ws + bs:
                p -= 0.01 * p.grad
                p.grad = None

    return run


def softmax_ce_step(T, n=128, c=10000):
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((n, c)).astype(np.float32), requires_grad=True)
    y = T.tensor(rng.integers(0, c, n))

    def run():
        loss = T.nn.functional.cross_entropy(x, y)
        loss.backward()
        x.grad = None

    return run


def cnn_step(T, batch=64):
    rng = np.random.default_rng(0)
    T.manual_seed(0)
    nn = T.nn
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 10),
    )
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    xb = T.tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
    yb = T.tensor(rng.integers(0, 10, batch))

    def run():
        loss = T.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


def jacobian_100(T, **kw):
    """The Jacobian (100 x 50) of a small 2-layer tanh network: rows one backward each
    (vectorize=False), one batched backward (vectorize=True) or one batched forward pass."""
    rng = np.random.default_rng(0)
    w1, b1 = T.tensor(rng.standard_normal((64, 50)) * 0.2), T.tensor(rng.standard_normal(64))
    w2 = T.tensor(rng.standard_normal((100, 64)) * 0.2)
    x = T.tensor(rng.standard_normal(50))

    def f(v):
        return T.tanh(w2 @ T.tanh(w1 @ v + b1))

    return lambda: T.autograd.functional.jacobian(f, x, **kw)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m nbgrad", description=__doc__)
    p.add_argument("--quick", action="store_true", help="skip the 4M-element GELU")
    args = p.parse_args(argv)
    try:
        import torch
    except Exception:
        torch = None
    y, g = demo(nbgrad)
    print("demo: y = (2x).exp().sum() =", y)
    print("      x.grad =", g)
    print("      y.grad_fn =", y.grad_fn.name())
    t0 = time.perf_counter()
    nbgrad.warmup(("float32",))
    print("warm-up (compile or load kernels): %.2f s" % (time.perf_counter() - t0))
    rows = [
        ("per-op forward while recording (us)", lambda T: per_op(T) * 1e6),
        ("per-node backward (us)", lambda T: per_node(T) * 1e6),
        ("MLP 784-512-512-10 step, batch 128 (ms)", lambda T: _timeit(mlp_step(T, 128)) * 1e3),
        ("MLP 784-512-512-10 step, batch 16 (ms)", lambda T: _timeit(mlp_step(T, 16)) * 1e3),
        (
            "softmax+cross-entropy 128x10000 fwd+bwd (ms)",
            lambda T: _timeit(softmax_ce_step(T)) * 1e3,
        ),
        ("CNN train step, batch 64 of 28x28 (ms)", lambda T: _timeit(cnn_step(T)) * 1e3),
        ("jacobian 100x50, row loop (ms)", lambda T: _timeit(jacobian_100(T)) * 1e3),
        (
            "jacobian 100x50, vectorize=True (ms)",
            lambda T: _timeit(jacobian_100(T, vectorize=True)) * 1e3,
        ),
        (
            "jacobian 100x50, forward-mode vectorized (ms)",
            lambda T: _timeit(jacobian_100(T, vectorize=True, strategy="forward-mode")) * 1e3,
        ),
    ]
    if not args.quick:
        rows.append(
            (
                "GELU from primitives 4M f32 fwd+bwd (ms)",
                lambda T: _timeit(gelu_step(T), repeat=3) * 1e3,
            )
        )
    print("%-44s %10s %10s %7s" % ("workload", "nbgrad", "torch", "ratio"))
    for name, fn in rows:
        a = fn(nbgrad)  # interleave A B A B, best of two each: the machine is noisy
        b = fn(torch) if torch is not None else float("nan")
        a = min(a, fn(nbgrad))
        if torch is not None:
            b = min(b, fn(torch))
        print(
            "%-44s %10.2f %10.2f %7.2f" % (name, a, b, a / b if torch is not None else float("nan"))
        )
    return 0
