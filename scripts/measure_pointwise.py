#!/usr/bin/env python
"""Numpy ufunc vs nbgrad's generated Numba kernel, per pointwise op (docs/performance.md).

Part 1 -- forward: for every pointwise op in ``nbgrad.ops.registry.REGISTRY`` that names a
``numpy=`` ufunc, time that ufunc against the Numba ufunc nbgrad would otherwise build from the
op's formula (``cpu_kernel(op.name, op.args + op.attrs, op.formula, dtype)``), on N_LARGE and
N_SMALL float32 elements.

Part 2 -- fused backward: the one-pass ``g * d`` kernel that ``pointwise_vjp`` uses when
``create_graph=False`` (its ``ops.formula.kernel_plan``) against the numpy expression that
computes the same thing with temporaries.

Both sides allocate their output, as the library does.  Repeats are interleaved (A, B, A, B,
...) and the median of each side is reported; the ratio is Numba time / numpy time, so a value
below 1 means the Numba kernel is faster.  Both sides are single-threaded, so by default the clock
is the calling thread's CPU time (``time.thread_time``), which other processes on a shared
machine disturb far less than wall time; ``--clock wall`` uses ``time.perf_counter``.

Usage:  python scripts/measure_pointwise.py [--repeat 15] [--dtype float32] [--clock cpu|wall]
"""

import argparse
import statistics
import time

import numpy as np

import nbgrad
from nbgrad.kernels.build import cpu_kernel
from nbgrad.ops.formula import kernel_plan
from nbgrad.ops.registry import REGISTRY

N_LARGE = 1 << 22  # 4M
N_SMALL = 1 << 10  # 1K


def _inputs(op, n, dtype, rng):
    lo, hi = op.hints.get("domain", (-2.0, 2.0))
    arrays = [rng.uniform(lo, hi, n).astype(dtype)]
    if len(op.args) == 2:
        lo, hi = op.hints.get("domain_y", (-2.0, 2.0))
        arrays.append(rng.uniform(lo, hi, n).astype(dtype))
    return arrays


CLOCK = time.thread_time


def _sample(fn, number):
    t0 = CLOCK()
    for _ in range(number):
        fn()
    return (CLOCK() - t0) / number


def ab(fa, fb, n, repeat):
    """Interleaved medians (seconds per call) of fa and fb."""
    number = max(1, int(2e5 // max(n, 1)))  # ~0.1 ms+ per sample for small arrays
    fa(), fb()  # compile / page in
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(_sample(fa, number))
        tb.append(_sample(fb, number))
    return statistics.median(ta), statistics.median(tb)


def _fmt_t(s):
    return "%.1f us" % (s * 1e6) if s < 1e-3 else "%.2f ms" % (s * 1e3)


def forward_table(dtype, repeat, rng):
    ops = [
        op
        for op in REGISTRY.values()
        if op.kind == "pointwise" and op.numpy is not None and not op.attrs  # (pow: attrs)
    ]
    rows = []
    for op in ops:
        k = cpu_kernel(op.name, op.args + op.attrs, op.formula, dtype)
        cells = [op.name, "`np.%s`" % op.numpy.__name__, "`%s`" % op.formula]
        for n in (N_LARGE, N_SMALL):
            arrs = _inputs(op, n, dtype, rng)
            uf = op.numpy
            with np.errstate(all="ignore"):
                a, b = ab(
                    lambda uf=uf, arrs=arrs: uf(*arrs), lambda k=k, arrs=arrs: k(*arrs), n, repeat
                )
                ra, rb = uf(*arrs), k(*arrs)
            assert ra.dtype == rb.dtype == np.dtype(dtype), (op.name, ra.dtype, rb.dtype)
            cells += [_fmt_t(a), _fmt_t(b), "%.2f" % (b / a)]
        rows.append(cells)
    head = (
        "| op | numpy ufunc | formula | numpy 4M | Numba 4M | ratio 4M | numpy 1K | Numba 1K "
        "| ratio 1K |"
    )
    print(head)
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


# numpy composites equal to g * (partial), as a user writing the backward by hand would
NUMPY_VJP = {
    "tanh": (0, lambda v: v["g"] * (1 - v["out"] * v["out"])),
    "sigmoid": (0, lambda v: v["g"] * (v["out"] * (1 - v["out"]))),
    "exp": (0, lambda v: v["g"] * v["out"]),
    "mul": (0, lambda v: v["g"] * v["y"]),
}


def backward_table(dtype, repeat, rng):
    n = N_LARGE
    print("| op | fused Numba kernel | numpy composite | Numba 4M | numpy 4M | ratio |")
    print("|---|---|---|---:|---:|---:|")
    for name, (i, composite) in NUMPY_VJP.items():
        op = REGISTRY[name]
        tag, params, expr, _ = kernel_plan(op, "vjp%d" % i)
        k = cpu_kernel(tag, params, expr, dtype)
        xs = _inputs(op, n, dtype, rng)
        fwd = op.numpy or cpu_kernel(op.name, op.args, op.formula, dtype)
        values = {"g": rng.standard_normal(n).astype(dtype), "out": fwd(*xs)}
        values.update(zip(op.args, xs))
        args = [values[p] for p in params]
        np.testing.assert_allclose(k(*args), composite(values), rtol=1e-5, atol=1e-6)
        a, b = ab(
            lambda k=k, args=args: k(*args),
            lambda composite=composite, values=values: composite(values),
            n,
            repeat,
        )
        print(
            "| %s | `%s` | same, with numpy temporaries | %s | %s | %.2f |"
            % (name, expr, _fmt_t(a), _fmt_t(b), a / b)
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = p.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    rng = np.random.default_rng(0)
    print(
        "numpy %s, numba %s, nbgrad %s, %s, %d repeats interleaved, medians of %s time\n"
        % (
            np.__version__,
            __import__("numba").__version__,
            nbgrad.__version__,
            args.dtype,
            args.repeat,
            "thread CPU" if args.clock == "cpu" else "wall",
        )
    )
    print("Forward: numpy ufunc vs generated Numba ufunc (ratio = Numba / numpy)\n")
    forward_table(args.dtype, args.repeat, rng)
    print("\nFused backward (create_graph=False), 4M elements (ratio = fused Numba / numpy)\n")
    backward_table(args.dtype, args.repeat, rng)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
