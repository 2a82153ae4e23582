"""Timing for ``nbgrad-bench`` and asv's ``track_*`` benchmarks.

Method, per workload: set every library's parts up once; warm each part up and calibrate its
inner loop (``timeit``-style doubling until one measurement takes at least ``target`` seconds:
the first calls compile or load kernels and fault in memory, so they never land in a
measurement); then ``repeat`` rounds, each measuring every library's parts once, the library
order alternating between rounds (nbgrad, torch, numpy / numpy, torch, nbgrad, ...).  A
round's value for a library is the workload's combination of its parts' per-call times; the
reported value is the median over rounds, and a ratio to another library is the median of the
per-round ratios (min and max kept as the spread).  ``gc.collect()`` runs before each
library's turn in a round and the collector stays on during the measurements, as in user
code.

Standard library only (asv loads this file from the checkout; see ``workloads.py``).
"""

import gc
import math
import statistics
import time

__all__ = ["CLOCKS", "calibrate", "measure", "run_workload", "summary"]

CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}


def measure(fn, number, clock=time.perf_counter):
    """Seconds per call of ``fn`` over ``number`` back-to-back calls."""
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number


def calibrate(fn, target, clock=time.perf_counter, max_number=1_000_000):
    """Warm ``fn`` up and return the number of calls that makes one measurement last at least
    ``target`` seconds."""
    fn()  # first call: kernels compile or load, buffers are allocated
    number = 1
    while True:
        t = measure(fn, number, clock) * number
        if t >= target or number >= max_number:
            return number
        # aim a little past the target, at most 10x more calls per step
        grow = 10 if t <= 0 else min(10.0, max(2.0, 1.2 * target / t))
        number = min(max_number, int(math.ceil(number * grow)))


def summary(values):
    """``{"median", "min", "max", "values"}`` of a list of floats."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "values": list(values),
    }


def run_workload(
    workload,
    libs,
    quick=False,
    repeat=7,
    target=0.02,
    clock="wall",
    on_round=None,
):
    """Measure ``workload`` for each of ``libs`` (``{name: module}``, ``None`` for numpy), which
    must all be able to run it.

    Returns ``{"results": {lib: summary + "number": {part: calls per measurement}},
    "ratios": {other: summary of per-round nbgrad/other}}`` with values in seconds.
    ``on_round(i)`` is called after each round.
    """
    clk = CLOCKS[clock] if isinstance(clock, str) else clock
    fns = {}
    try:
        for name, T in libs.items():
            fns[name] = workload.setup(T, quick)
        numbers = {}
        for name, parts in fns.items():
            if workload.self_timed:
                numbers[name] = {p: 1 for p in parts}
                for fn in parts.values():
                    getattr(fn, "warm_up", fn)()  # untimed: file-system caches, byte-code
            else:
                numbers[name] = {p: calibrate(fn, target, clk) for p, fn in parts.items()}
        per_round = {name: [] for name in fns}
        order = list(fns)
        for r in range(repeat):
            for name in order if r % 2 == 0 else order[::-1]:
                gc.collect()  # the previous library's garbage is not collected on this one's time
                secs = {}
                for p, fn in fns[name].items():
                    if workload.self_timed:
                        secs[p] = fn()
                    else:
                        secs[p] = measure(fn, numbers[name][p], clk)
                per_round[name].append(workload.value(secs))
            if on_round is not None:
                on_round(r)
    finally:
        for parts in fns.values():
            for fn in parts.values():
                close = getattr(fn, "close", None)
                if close is not None:
                    close()
    results = {name: dict(summary(v), number=numbers[name]) for name, v in per_round.items()}
    ratios = {}
    if "nbgrad" in per_round:
        for name, v in per_round.items():
            if name != "nbgrad":
                rs = [a / b for a, b in zip(per_round["nbgrad"], v) if b]
                if rs:
                    ratios[name] = summary(rs)
    return {"results": results, "ratios": ratios}
