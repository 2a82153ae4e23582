"""nbgrad.compile benchmarks (issue 16): compiled nbgrad against eager nbgrad and eager PyTorch
in the same process, alternating, median of rounds with [min, max].

    python scripts/bench_compile.py [--rounds 5] [--threads 1]

Workloads (nbgrad/bench/workloads.py, the ones ``nbgrad-bench -k compiled`` runs): the scalar
graph (100 inputs, 1,000 ops), GELU from primitive ops on 4M float32, the 20-op chain on 16
float64 elements, the MLP 784-512-512-10 SGD step (batch 64), the small CNN SGD step (batch
64); forward + backward each.
"""

import argparse
import statistics
import time

import numba

import nbgrad
from nbgrad.bench import workloads as W


def _time(fn, reps):
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("-k", default="", help="only the workloads whose name contains this")
    a = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    if a.threads:
        numba.set_num_threads(a.threads)  # (the fused kernels of large regions are parallel)
        if torch is not None:
            torch.set_num_threads(a.threads)
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(a.threads)
        except ImportError:
            pass
    cases = [  # (name, step factory, its sizes, repetitions per round)
        ("scalar_graph", W.scalar_graph, dict(n_inputs=100, n_ops=1000), 20),
        ("gelu_4M_f32", W.gelu_primitives, dict(n=1 << 22), 5),
        ("chain20_16_f64", W.chain20, dict(n=16), 300),
        ("mlp_step_b64", W.mlp_step, dict(batch=64), 20),
        ("cnn_step_b64", W.cnn_step, dict(batch=64), 10),
    ]
    print("%-22s %12s %12s %12s  %s" % ("workload", "compiled", "eager", "torch", "ratios"))
    for name, make, sizes, reps in cases:
        if a.k not in name:
            continue
        eager = make(nbgrad, **sizes)
        comp = nbgrad.compile(make(nbgrad, **sizes))
        t0 = time.perf_counter()
        comp()
        first = time.perf_counter() - t0
        peer = make(torch, **sizes) if torch is not None else None
        rows = []
        for _ in range(a.rounds):
            c = _time(comp, reps)
            e = _time(eager, reps)
            t = _time(peer, reps) if peer is not None else float("nan")
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
