"""nbgrad.compile benchmarks (issue 16): compiled nbgrad against eager nbgrad and eager PyTorch
in the same process, alternating, median of rounds with [min, max].

    python scripts/bench_compile.py [--rounds 5] [--threads 1]

Workloads: GELU from primitive ops on 4M float32 (forward + backward), a 20-op pointwise chain
on 16 float64 elements (forward + backward), the MLP 784-512-512-10 SGD step (batch 64).
"""

import argparse
import statistics
import time

import numpy as np

import nbgrad


def _gelu(T):
    def f(x):
        y = 0.5 * x * (1 + T.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        y.sum().backward()
        return y

    return f


def _chain(T):
    def f(x):
        y = x
        for k in range(5):
            y = (y * 1.01 + 0.1).tanh() * 2 - 0.5
        y.sum().backward()
        return y

    return f


def _mlp(T):
    T.manual_seed(0)
    m = T.nn.Sequential(
        T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(), T.nn.Linear(512, 10)
    )
    opt = T.optim.SGD(m.parameters(), lr=0.01)

    def f(x, y):
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    return f


def _time(fn, args, reps):
    fn(*args)
    t = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    return (time.perf_counter() - t) / reps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    if a.threads:
        if torch is not None:
            torch.set_num_threads(a.threads)
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(a.threads)
        except ImportError:
            pass
    rng = np.random.default_rng(0)
    xg = rng.standard_normal(1 << 22).astype(np.float32)
    xc = rng.standard_normal(16)
    xm = rng.standard_normal((64, 784)).astype(np.float32)
    ym = rng.integers(0, 10, 64)
    cases = [
        ("gelu_4M_f32_fwd_bwd", _gelu, lambda T: (T.tensor(xg, requires_grad=True),), 5),
        ("chain20_fwd_bwd", _chain, lambda T: (T.tensor(xc, requires_grad=True),), 300),
        ("mlp_step_b64", _mlp, lambda T: (T.tensor(xm), T.tensor(ym)), 20),
    ]
    print("%-22s %12s %12s %12s  %s" % ("workload", "compiled", "eager", "torch", "ratios"))
    for name, make, args_of, reps in cases:
        eager = make(nbgrad)
        comp = nbgrad.compile(make(nbgrad))
        na = args_of(nbgrad)
        t0 = time.perf_counter()
        comp(*na)
        first = time.perf_counter() - t0
        peer = make(torch) if torch is not None else None
        ta = args_of(torch) if torch is not None else None
        rows = []
        for _ in range(a.rounds):
            c = _time(comp, na, reps)
            e = _time(eager, na, reps)
            t = _time(peer, ta, reps) if peer is not None else float("nan")
            rows.append((c, e, t))
        med = [statistics.median(r[k] for r in rows) for k in range(3)]
        ce = [r[0] / r[1] for r in rows]
        ct = [r[0] / r[2] for r in rows]
        print(
            "%-22s %9.3f ms %9.3f ms %9.3f ms  compiled/eager %.2f [%.2f, %.2f]  "
            "compiled/torch %.2f [%.2f, %.2f]  first call %.2f s"
            % (name, med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, statistics.median(ce), min(ce),
               max(ce), statistics.median(ct), min(ct), max(ct), first)
        )  # fmt: skip


if __name__ == "__main__":
    main()
