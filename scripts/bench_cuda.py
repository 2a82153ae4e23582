"""CUDA benchmarks (run by scripts/gpu_check.sh on a machine with a GPU).

1. Elementwise bandwidth: ``y = x * 1.5`` on 64M float32 (one read of x, one write of y) and a
   float32 -> float64 cast, effective GB/s against the device's theoretical peak (memory clock
   x bus width from the driver, or --peak-gbs).
2. MLP 784-512-512-10 train step (batch 128, SGD) and the small CNN step (batch 64 of 28x28):
   nbgrad vs PyTorch CUDA when PyTorch with CUDA is installed, alternating, median of rounds
   with the spread.  Prints a table; ``--json FILE`` writes the figures.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import nbgrad


def _sync():
    nbgrad.cuda.synchronize()


def _timeit(fn, sync, reps):
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps


def peak_gbs():
    """Theoretical HBM bandwidth: 2 (double data rate) x memory clock x bus width, from the
    device attributes numba exposes (an H100 80GB HBM3: 2619 MHz x 5120 bits = 3352 GB/s)."""
    from numba import cuda

    dev = cuda.get_current_device()
    try:
        return 2 * dev.MEMORY_CLOCK_RATE * 1e3 * (dev.GLOBAL_MEMORY_BUS_WIDTH / 8) / 1e9
    except Exception:
        return None


def bench_elementwise(n, reps):
    """GB/s of one elementwise kernel (``x * 1.5``: read x, write y) and of a contiguous
    copy-cast (``x.double()``: read 4 bytes, write 8 per element)."""
    x = nbgrad.randn(n, device="cuda")
    t_mul = _timeit(lambda: x * 1.5, _sync, reps)
    t_cast = _timeit(lambda: x.double(), _sync, reps)
    return {"mul_GBs": 8 * n / t_mul / 1e9, "cast_GBs": 12 * n / t_cast / 1e9}


def _mlp(T, device):
    T.manual_seed(0)
    m = T.nn.Sequential(
        T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(), T.nn.Linear(512, 10)
    ).to(device)
    opt = T.optim.SGD(m.parameters(), lr=0.01)
    x = T.randn(128, 784, device=device)
    y = T.randint(0, 10, (128,), device=device)

    def step():
        opt.zero_grad()
        T.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    return step


def _cnn(T, device):
    T.manual_seed(0)
    nn = T.nn
    m = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    ).to(device)  # fmt: skip
    opt = T.optim.SGD(m.parameters(), lr=0.01)
    x = T.randn(64, 1, 28, 28, device=device)
    y = T.randint(0, 10, (64,), device=device)

    def step():
        opt.zero_grad()
        T.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    return step


def compare(name, make, rounds, reps):
    try:
        import torch

        has_torch = torch.cuda.is_available()
    except Exception:
        has_torch = False
    ours = make(nbgrad, "cuda")
    theirs = make(torch, "cuda") if has_torch else None
    rows = []
    for _ in range(rounds):
        a = _timeit(ours, _sync, reps)
        b = _timeit(theirs, torch.cuda.synchronize, reps) if has_torch else None
        rows.append((a, b))
    ta = statistics.median(r[0] for r in rows)
    out = {"workload": name, "nbgrad_ms": ta * 1e3}
    if has_torch:
        ratios = [a / b for a, b in rows]
        out.update(
            torch_ms=statistics.median(r[1] for r in rows) * 1e3,
            ratio=statistics.median(ratios),
            ratio_min=min(ratios),
            ratio_max=max(ratios),
        )
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 26)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--peak-gbs", type=float, default=None)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if not nbgrad.cuda.is_available():
        print("no CUDA device: nothing to benchmark")
        return 1
    res = {"device": nbgrad.cuda.get_device_name()}
    peak = a.peak_gbs or peak_gbs()
    bw = bench_elementwise(a.n, a.reps)
    res["elementwise"] = dict(bw, peak_GBs=peak)
    print("device:", res["device"])
    for k, v in bw.items():
        frac = " (%.0f%% of %.0f GB/s peak)" % (100 * v / peak, peak) if peak else ""
        print("  %-12s %8.1f GB/s%s" % (k, v, frac))
    res["steps"] = []
    for name, make in (("mlp_step_b128", _mlp), ("cnn_step_b64", _cnn)):
        r = compare(name, make, a.rounds, a.reps)
        res["steps"].append(r)
        if "ratio" in r:
            print(
                "  %-14s nbgrad %7.2f ms  torch %7.2f ms  ratio %.2f [%.2f, %.2f]"
                % (name, r["nbgrad_ms"], r["torch_ms"], r["ratio"], r["ratio_min"], r["ratio_max"])
            )
        else:
            print("  %-14s nbgrad %7.2f ms  (PyTorch CUDA not installed)" % (name, r["nbgrad_ms"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
