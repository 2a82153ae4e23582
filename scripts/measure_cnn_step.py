#!/usr/bin/env python
"""Where the milliseconds of the ``cnn_step`` benchmark go (docs/performance.md, "CNN step").

Part 1 -- ops: each op of the step on the step's shapes (batch 64 of 28x28: conv 1->16 3x3,
ReLU, 2x2 max pool, conv 16->32 3x3, ReLU, 2x2 max pool), nbgrad against PyTorch, forward alone
and forward + backward.  The first conv's input takes no gradient, as in the step.

Part 2 -- phases: the step itself cut into its layers (forward), the loss, ``zero_grad``,
``backward`` and the SGD step, both libraries on the same model.

Part 3 -- kernels (nbgrad only): thread time inside the conv/pool array functions and Numba
kernels of one step (wrappers around the module functions).

Both libraries run on one thread (``torch.set_num_threads(1)``, ``numba.set_num_threads(1)``,
BLAS pools limited through threadpoolctl) and every number is the median of per-thread CPU time
(``time.thread_time``), which other processes on a shared machine disturb far less than wall
time.  Freshly allocated multi-megabyte arrays page-fault (docs/performance.md, "Measurement
pitfalls"): part 2 reports the page faults per phase next to the times.

Usage:  python scripts/measure_cnn_step.py [--repeat 15] [--part ops|phases|kernels]
"""

import argparse
import collections
import resource
import time

import numba
import numpy as np
import threadpoolctl

import nbgrad
from nbgrad.bench.workloads import _randn

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def _median_ms(fn, repeat):
    fn()
    t0, n = time.thread_time(), 0
    while time.thread_time() - t0 < 0.02:
        fn()
        n += 1
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        times.append((time.thread_time() - t0) / n)
    return float(np.median(times)) * 1e3


def _ops(T, repeat):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    w1 = (rng.standard_normal((16, 1, 3, 3)) / 3).astype(np.float32)
    w2 = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)
    b1, b2 = (rng.standard_normal(n).astype(np.float32) for n in (16, 32))
    y1 = rng.standard_normal((64, 16, 26, 26)).astype(np.float32)
    p1 = rng.standard_normal((64, 16, 13, 13)).astype(np.float32)
    y2 = rng.standard_normal((64, 32, 11, 11)).astype(np.float32)
    F = T.nn.functional

    def conv(xa, wa, ba, backward, x_grad):
        X = T.tensor(xa, requires_grad=x_grad)
        W, B = T.tensor(wa, requires_grad=True), T.tensor(ba, requires_grad=True)
        gshape = (xa.shape[0], wa.shape[0]) + (xa.shape[2] - 2,) * 2
        G = T.tensor(rng.standard_normal(gshape).astype(np.float32))

        def run():
            y = F.conv2d(X, W, B)
            if backward:
                y.backward(G)
                X.grad = W.grad = B.grad = None

        return run

    def unary(fn, a, backward):
        A = T.tensor(a, requires_grad=backward)

        def run():
            y = fn(A)
            y = y[0] if isinstance(y, tuple) else y
            if backward:
                y.sum().backward()
                A.grad = None

        return run

    pool = lambda t: F.max_pool2d(t, 2)  # noqa: E731
    cases = [
        ("conv1 1->16 forward", conv(x, w1, b1, False, False)),
        ("conv1 forward+backward (w, b)", conv(x, w1, b1, True, False)),
        ("conv2 16->32 forward", conv(p1, w2, b2, False, True)),
        ("conv2 forward+backward (x, w, b)", conv(p1, w2, b2, True, True)),
        ("relu 64x16x26x26 forward", unary(T.relu, y1, False)),
        ("relu 64x16x26x26 forward+backward", unary(T.relu, y1, True)),
        ("relu 64x32x11x11 forward+backward", unary(T.relu, y2, True)),
        ("max_pool2d 64x16x26x26 forward", unary(pool, y1, False)),
        ("max_pool2d 64x16x26x26 fwd+bwd", unary(pool, y1, True)),
        ("max_pool2d 64x32x11x11 forward", unary(pool, y2, False)),
        ("max_pool2d 64x32x11x11 fwd+bwd", unary(pool, y2, True)),
    ]
    return [(name, _median_ms(fn, repeat)) for name, fn in cases]


def part_ops(repeat):
    print("\n## ops (ms, median of %d, one thread, thread CPU time)" % repeat)
    res = {T.__name__: _ops(T, repeat) for T in (nbgrad, torch) if T is not None}
    print("%-36s %8s %8s %6s" % ("op", "nbgrad", "torch", "ratio"))
    for i, (name, tn) in enumerate(res["nbgrad"]):
        tt = res["torch"][i][1] if "torch" in res else float("nan")
        print("%-36s %8.3f %8.3f %6.2f" % (name, tn, tt, tn / tt))


def _model(T):
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
    xb = T.tensor(_randn((64, 1, 28, 28)))
    yb = T.tensor(np.random.default_rng(1).integers(0, 10, 64))
    return model, opt, xb, yb


PHASES = ["conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "linear"]
PHASES += ["cross_entropy", "zero_grad", "backward", "sgd.step"]


def _faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _phases(T, model, opt, xb, yb):
    times, faults = np.zeros(len(PHASES)), np.zeros(len(PHASES))

    def timed(k, fn):
        f0, t0 = _faults(), time.thread_time()
        out = fn()
        times[k] += time.thread_time() - t0
        faults[k] += _faults() - f0
        return out

    h = xb
    for k, m in enumerate(model):
        h = timed(k, lambda: m(h))  # noqa: B023
    loss = timed(8, lambda: T.nn.functional.cross_entropy(h, yb))
    timed(9, opt.zero_grad)
    timed(10, loss.backward)
    timed(11, opt.step)
    return times * 1e3, faults


def part_phases(repeat):
    n = max(repeat * 4, 40)
    print("\n## step phases (ms and page faults per step, median of %d steps)" % n)
    res = {}
    for T in (nbgrad, torch):
        if T is None:
            continue
        state = _model(T)
        for _ in range(20):
            _phases(T, *state)
        runs = [_phases(T, *state) for _ in range(n)]
        res[T.__name__] = (
            np.median([r[0] for r in runs], axis=0),
            np.median([r[1] for r in runs], axis=0),
        )
    print("%-14s %8s %8s %6s %8s %8s" % ("phase", "nbgrad", "torch", "ratio", "faults", "torch"))
    for k, name in enumerate(PHASES + ["sum"]):
        if name == "sum":
            tn, fn_ = res["nbgrad"][0].sum(), res["nbgrad"][1].sum()
            tt, ft = (res["torch"][0].sum(), res["torch"][1].sum()) if torch else (np.nan,) * 2
        else:
            tn, fn_ = res["nbgrad"][0][k], res["nbgrad"][1][k]
            tt, ft = (res["torch"][0][k], res["torch"][1][k]) if torch else (np.nan,) * 2
        print("%-14s %8.3f %8.3f %6.2f %8.0f %8.0f" % (name, tn, tt, tn / tt, fn_, ft))


def part_kernels(repeat):
    import nbgrad.kernels.cpu.conv as KC
    import nbgrad.kernels.cpu.pool as KP
    import nbgrad.ops.nn.conv as C

    acc, cnt = collections.defaultdict(float), collections.Counter()

    def wrap(mod, name, label):
        f = getattr(mod, name)

        def timed(*a, **k):
            t0 = time.thread_time()
            try:
                return f(*a, **k)
            finally:
                acc[label] += time.thread_time() - t0
                cnt[label] += 1

        setattr(mod, name, timed)
        return f

    saved = []
    for mod, names in (
        (C, ["_conv_y_arr", "_conv_x_arr", "_conv_w_arr", "_g_rows"]),
        (KC, [n for n in dir(KC) if n.endswith("_cpu")]),
        (KP, [n for n in dir(KP) if n.endswith("_cpu")]),
        (np, ["matmul"]),
    ):
        for name in names:
            if hasattr(mod, name):  # older trees lack some
                saved.append((mod, name, wrap(mod, name, name)))
    try:
        state = _model(nbgrad)
        step = _steps(nbgrad, *state)
        for _ in range(20):
            step()
        acc.clear()
        cnt.clear()
        n = max(repeat * 4, 40)
        t0 = time.thread_time()
        for _ in range(n):
            step()
        total = (time.thread_time() - t0) / n * 1e3
    finally:
        for mod, name, f in saved:
            setattr(mod, name, f)
    print("\n## nbgrad kernels inside one step (ms per step; step %.2f ms)" % total)
    print("(nested: the _conv_*_arr functions include the kernels and matmuls they call)")
    for name, v in sorted(acc.items(), key=lambda kv: -kv[1]):
        print("%-28s %7.3f  (%d calls)" % (name, v / n * 1e3, cnt[name] // n))


def _steps(T, model, opt, xb, yb):
    def run():
        loss = T.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--part", choices=["ops", "phases", "kernels"], action="append")
    args = ap.parse_args()
    threadpoolctl.threadpool_limits(1)
    numba.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(
        "nbgrad %s, numpy %s, numba %s, torch %s; one thread"
        % (
            nbgrad.__version__,
            np.__version__,
            numba.__version__,
            getattr(torch, "__version__", "-"),
        )
    )
    parts = args.part or ["ops", "phases", "kernels"]
    for part in parts:
        {"ops": part_ops, "phases": part_phases, "kernels": part_kernels}[part](args.repeat)


if __name__ == "__main__":
    main()
