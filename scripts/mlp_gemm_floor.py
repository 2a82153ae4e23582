"""The MLP step's GEMM floor (issue 16's MLP target): the eight matrix products of one
784-512-512-10 SGD step at batch 64 (three forward, five backward, with the step's
transposes) in numpy, against the eager and compiled nbgrad steps, alternating, median of
rounds.  ``floor`` is GEMMs / eager step: no compiled step can beat it by more than the rest.

    python scripts/mlp_gemm_floor.py [--rounds 5] [--threads 1]
"""

import argparse
import statistics
import time

import numpy as np

import nbgrad
from nbgrad.bench import workloads as W


def _time(fn, reps=40):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    if a.threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(a.threads)
    ws, _, x, _ = W._mlp_data(64)
    w1, w2, w3 = ws
    rng = np.random.default_rng(0)
    a1, a2, d1, d2 = (rng.random((64, 512), np.float32) for _ in range(4))
    dz = rng.random((64, 10), np.float32)

    def gemms():
        x @ w1, a1 @ w2, a2 @ w3  # forward
        dz @ w3.T, a2.T @ dz, d2 @ w2.T, a1.T @ d2, x.T @ d1  # backward (x needs no grad)

    eager = W.mlp_step(nbgrad, 64)
    compiled = W.compiled(W.mlp_step)(nbgrad, batch=64)
    rows = [(_time(gemms), _time(eager), _time(compiled)) for _ in range(a.rounds)]
    g, e, c = (statistics.median(r[i] for r in rows) for i in range(3))
    floor = [r[0] / r[1] for r in rows]
    print("GEMMs %.3f ms  eager step %.3f ms  compiled step %.3f ms" % (g * 1e3, e * 1e3, c * 1e3))
    print("floor (GEMMs / eager) %.2f [%.2f, %.2f]" % (statistics.median(floor), min(floor),
                                                       max(floor)))  # fmt: skip


if __name__ == "__main__":
    main()
