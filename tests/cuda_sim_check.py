"""Run registry pointwise kernels through numba.cuda and compare them with the CPU ufuncs.

Run by tests/test_cuda_sim.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (it must be set
before numba is imported, NUMBA-NOTES section 6.2); on a machine with a GPU it can also be run
directly (``python tests/cuda_sim_check.py --gpu``).  For each op and dtype: the forward formula
and every fused backward expression ``g * (partial)`` -- the kernel plans of
``ops.formula.kernel_plan``, which the CPU side compiles too -- are built by
``build.cuda_kernel``, launched by ``kernels.cuda.launch.run_formula`` on broadcast inputs, and
compared with ``build.cpu_kernel`` on the same inputs.  The simulator costs ~0.2 ms per element,
so inputs are a few hundred elements.  Then launcher corner cases (``check_launcher_edges``).
Prints one line per kernel and ``OK <n> kernels, <m> launcher cases (...)`` at the end.
"""

import argparse
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

OPS = ("exp", "tanh", "sigmoid", "mul", "div", "where")
DTYPES = ("float32", "float64")
RTOL = {"float32": 1e-6, "float64": 1e-12}
# Backward kernels also get an absolute slack of ATOL_ULPS * eps * |g| per element: a partial like
# tanh's ``1 - out * out`` cancels, so whether ``out * out`` is rounded before the subtraction
# (simulator, plain Python float32 maths) or fused into an FMA (CPU ``contract`` fastmath flag,
# and nvcc by default) changes the result by ~1 ulp of the O(1) terms, not of the result.
ATOL_ULPS = 2


def make_inputs(op, dtype, rng):
    """name -> host array for every name a kernel of ``op`` can use (inputs, ``g``, ``out``)."""
    # broadcasting in every binary kernel: (4, 1, 12) against (5, 12) -> 240 elements
    shapes = {0: (4, 1, 12), 1: (5, 12), 2: (4, 5, 12)}
    lo, hi = op.hints.get("domain", (-3.0, 3.0))
    vals = {}
    for j, name in enumerate(op.args):
        shape = shapes[j] if len(op.args) > 1 else (4, 5, 12)
        if name in op.bool_args:
            vals[name] = rng.random(shape) < 0.5
            continue
        a, b = op.hints.get("domain_y", (lo, hi)) if j == 1 else (lo, hi)
        vals[name] = rng.uniform(a, b, shape).astype(dtype)
    return vals


def assert_close(got, expected, rtol, slack, msg):
    """``|got - expected| <= rtol * |expected| + slack`` elementwise (``slack`` may be an array)."""
    import numpy as np

    err = np.abs(got.astype(np.float64) - expected)
    ok = err <= rtol * np.abs(expected.astype(np.float64)) + slack
    if not ok.all():
        i = tuple(int(j) for j in np.unravel_index(np.argmax(np.where(ok, 0, err)), err.shape))
        raise AssertionError(
            "%s\n%d / %d elements differ; worst at %s: got %r expected %r "
            "(rtol %g, slack %r)"
            % (
                msg,
                (~ok).sum(),
                ok.size,
                i,
                float(got[i]),
                float(expected[i]),
                rtol,
                float(np.broadcast_to(slack, err.shape)[i]),
            )
        )


def check(op_names=OPS, dtypes=DTYPES, seed=0, verbose=True):
    import numpy as np
    from numba import cuda
    from numba.core.errors import NumbaPerformanceWarning

    from nbgrad.kernels.build import cpu_kernel
    from nbgrad.kernels.cuda import scalar
    from nbgrad.kernels.cuda.launch import run_formula
    from nbgrad.kernels.vocab import VOCAB
    from nbgrad.ops.formula import kernel_plan
    from nbgrad.ops.registry import REGISTRY

    warnings.simplefilter("ignore", NumbaPerformanceWarning)  # tiny grids, by design
    if not cuda.is_available():
        raise SystemExit("numba.cuda is not available (no GPU and NUMBA_ENABLE_CUDASIM unset)")
    assert scalar.__all__ == list(VOCAB) and all(callable(getattr(scalar, n)) for n in VOCAB)
    rng = np.random.default_rng(seed)
    n_kernels = 0
    for name in op_names:
        op = REGISTRY[name]
        roles = ["fwd"] + ["vjp%d" % i for i, p in enumerate(op.partials) if p is not None]
        for dtype in dtypes:
            vals = make_inputs(op, dtype, rng)
            for role in roles:
                plan = tag, params, expr, ptypes = kernel_plan(op, role)
                cpu = cpu_kernel(tag, params, expr, dtype, ptypes)
                if role == "fwd":
                    with np.errstate(all="ignore"):
                        expected = np.asarray(cpu(*[vals[p] for p in params]))
                    vals["out"] = expected  # the saved output the backward kernels read
                    vals["g"] = rng.standard_normal(expected.shape).astype(dtype)
                else:
                    with np.errstate(all="ignore"):
                        expected = np.asarray(cpu(*[vals[p] for p in params]))
                t0 = time.perf_counter()
                got = run_formula(plan, vals, dtype)
                dt = time.perf_counter() - t0
                assert got.shape == expected.shape, (tag, got.shape, expected.shape)
                assert got.dtype == np.dtype(dtype), (tag, got.dtype, dtype)
                assert np.isfinite(expected).all(), tag
                slack = 0 if role == "fwd" else ATOL_ULPS * np.finfo(dtype).eps * np.abs(vals["g"])
                assert_close(
                    got, expected, RTOL[dtype], slack, "%s %s %s: %s" % (tag, dtype, params, expr)
                )
                n_kernels += 1
                if verbose:
                    print(
                        "%-14s %-8s %-22s %-34s %5d elems %6.0f ms"
                        % (tag, dtype, ",".join(params), expr, got.size, dt * 1e3)
                    )
    return n_kernels


def check_launcher_edges(verbose=True):
    """Launcher corner cases: scalar attributes (lerp's ``w``, masked_fill's ``v``) broadcast to
    buffers, 0-d inputs, a zero-size input (no launch), more than one block's worth of work."""
    import numpy as np

    from nbgrad.kernels.build import cpu_kernel
    from nbgrad.kernels.cuda.launch import run_formula
    from nbgrad.ops.formula import kernel_plan

    rng = np.random.default_rng(1)
    f32 = np.float32
    x, y = rng.standard_normal((3, 4)).astype(f32), rng.standard_normal(4).astype(f32)
    cases = [
        ("lerp", "fwd", {"x": x, "y": y, "w": 0.25}),
        ("lerp", "vjp0", {"g": x, "w": 0.25}),  # ``g * (1 - w)``: g and a scalar attribute
        ("masked_fill", "fwd", {"x": x, "m": x > 0, "v": -7.5}),
        ("mul", "fwd", {"x": f32(1.5), "y": np.array(-2.0, f32)}),  # 0-d result
        ("mul", "fwd", {"x": np.ones((0, 4), f32), "y": y}),  # empty: no launch
        ("exp", "fwd", {"x": np.linspace(-2, 2, 200, dtype=f32)}),  # > 1 block of 64
    ]
    for name, role, vals in cases:
        plan = tag, params, expr, ptypes = kernel_plan(name, role)
        expected = np.asarray(
            cpu_kernel(tag, params, expr, "float32", ptypes)(*[vals[p] for p in params])
        )
        got = run_formula(plan, vals, "float32")
        assert got.shape == expected.shape and got.dtype == expected.dtype, (tag, got, expected)
        assert_close(got, expected, RTOL["float32"], 0, "%s %s: %s" % (tag, params, expr))
        if verbose:
            print("edge %-12s %-5s %-16s shape %s" % (name, role, ",".join(params), got.shape))
    return len(cases)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--gpu", action="store_true", help="allow running without the simulator (on a real GPU)"
    )
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.gpu and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise SystemExit("set NUMBA_ENABLE_CUDASIM=1 before running (or pass --gpu)")
    t0 = time.perf_counter()
    n = check(tuple(args.ops.split(",")), verbose=not args.quiet)
    n_edges = check_launcher_edges(verbose=not args.quiet)
    from numba import config

    print(
        "OK %d kernels, %d launcher cases (%s) in %.1f s"
        % (n, n_edges, "simulator" if config.ENABLE_CUDASIM else "GPU", time.perf_counter() - t0)
    )


if __name__ == "__main__":
    main()
