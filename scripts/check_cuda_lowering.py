"""Lower nbgrad's generated CUDA kernels to LLVM IR for a real GPU target (cc 7.0) without a GPU.

The simulator runs kernels as Python, so it cannot catch what only the CUDA compiler rejects
(device-side typing, unsupported functions such as ``np.exp`` in a kernel, non-constant shared
array shapes).  This compiles, for float32 and float64, every registry pointwise formula and
fused backward partial (both the flat and the strided variant), the comparison formulas, and
the copy / fill / triangle kernels, and the kernels of a few regions ``nbgrad.compile`` fuses
(NOTE [fused regions on CUDA]), through numba-cuda's front end and lowering (no NVVM, no
driver).  Run: ``python scripts/check_cuda_lowering.py`` (prints ``OK <n> FAILED 0``).  The
hand-written twins were checked the same way when they were written (docs/gpu.md).
"""

import numba.cuda.dispatcher as D
from numba import types


class _Dev:
    compute_capability = (7, 0)


D.get_current_device = lambda: _Dev()
from numba.cuda.compiler import compile_cuda  # noqa: E402

from nbgrad.kernels.cuda import elementwise as E  # noqa: E402
from nbgrad.ops.cuda import shape as S  # noqa: E402
from nbgrad.ops.cuda.pointwise import _ISCLOSE, COMPARE_FORMULAS  # noqa: E402
from nbgrad.ops.formula import partials_of  # noqa: E402
from nbgrad.ops.registry import REGISTRY  # noqa: E402

i64 = types.int64
tup = types.UniTuple(i64, 8)


def arr(dt):
    return types.Array(dt, 1, "C")


ok = bad = 0
fails = []


def tryc(name, fn, sig):
    global ok, bad
    try:
        compile_cuda(fn, types.void, sig, cc=(7, 0))
        ok += 1
    except Exception as e:
        bad += 1
        fails.append((name, type(e).__name__, str(e).replace("\n", " ")[:300]))


def gen(tag, params, expr, dtype, ptypes, kinds, out_dt=None):
    m = E._module(tag, tuple(params), tuple(kinds), expr, dtype, ptypes)
    dt = getattr(types, dtype)
    odt = getattr(types, out_dt) if out_dt else dt
    kf_sig = [i64, arr(odt), i64]
    k_sig = [i64, tup, arr(odt), i64, tup]
    for p, kd in zip(params, kinds):
        pt = types.boolean if ptypes.get(p) == "bool" else dt
        if kd == "a":
            kf_sig += [arr(pt), i64, i64]
            k_sig += [arr(pt), i64, tup]
        else:
            kf_sig.append(types.float64)
            k_sig.append(types.float64)
    tryc(tag + "/kf/" + dtype, m.kf.py_func, tuple(kf_sig))
    tryc(tag + "/k/" + dtype, m.k.py_func, tuple(k_sig))


for dtype in ("float32", "float64"):
    for name, op in REGISTRY.items():
        if op.kind != "pointwise" or name.startswith("elementwise."):
            continue
        ptypes = {n: "bool" for n in op.bool_args}
        params = op.args + op.attrs
        kinds = ["a"] * len(op.args) + ["s"] * len(op.attrs)
        gen(name, params, op.formula, dtype, ptypes, kinds)
        for part in partials_of(op):
            if part is None or part.const is not None:
                continue
            pk = ["a" if (n in op.args or n in ("g", "out")) else "s" for n in part.params]
            gen(part.tag, part.params, part.expr, dtype, part.param_types, pk)
    for name, f in COMPARE_FORMULAS.items():
        params = ("x", "y")[: 1 if name in ("logical_not", "isnan", "isinf", "isfinite") else 2]
        gen(
            name,
            params,
            f,
            dtype,
            {},
            ["a"] * len(params),
            "boolean" if name != "floor_divide" else None,
        )
    gen(
        "isclose",
        ("x", "y", "rtol", "atol", "en"),
        _ISCLOSE,
        dtype,
        {},
        ["a", "a", "s", "s", "s"],
        "boolean",
    )
    dt = getattr(types, dtype)
    tryc(
        "copy/" + dtype,
        E._kcopy.py_func,
        (i64, tup, arr(dt), i64, tup, arr(types.float32), i64, tup),
    )
    tryc("fill/" + dtype, E._kfill.py_func, (i64, tup, arr(dt), i64, tup, dt))
    tryc(
        "tri/" + dtype,
        S._tri_kernel.py_func,
        (arr(dt), arr(dt), i64, i64, i64, types.boolean, dt),
    )


def _fused_regions():
    """The regions nbgrad.compile fuses in a few steps (captured on the CPU: a region's
    statements do not depend on the device), for the CUDA kernels of NOTE [fused regions on
    CUDA]: forward and per-input backward statements."""
    import math

    import numpy as np

    import nbgrad as T

    rng = np.random.default_rng(0)
    # (more than 1,024 elements: a smaller elementwise step lowers to a scalar tape instead)
    x = T.tensor(rng.standard_normal(2048), requires_grad=True)
    h = T.tensor(rng.standard_normal((2, 2048)), requires_grad=True)
    c = math.sqrt(2 / math.pi)
    steps = [
        lambda: (0.5 * x * (1 + T.tanh(c * (x + 0.044715 * x * x * x)))).sum().backward(),
        lambda: ((h + x).relu() * 0.5 + h.sigmoid()).exp().sum().backward(),
        lambda: ((x * x + 1).log() - x.abs().sqrt() / 3).clamp(-1, 1).sum().backward(),
        lambda: T.where(h > 0, h.sin(), h.cos() * 2).pow(2).sum().backward(),
    ]
    regions = []
    for step in steps:
        cf = T.compile(step)
        cf()
        regions += [reg for recs in cf._records.values() for r in recs for reg in r.regions]
    assert len(regions) >= len(steps) and all(hasattr(reg, "fwd_stmts") for reg in regions)
    return regions


for dtype in ("float32", "float64"):
    for n, reg in enumerate(_fused_regions()):
        gen("fused%d" % n, reg.params, tuple(reg.fwd_stmts), dtype, {}, ["a"] * len(reg.params))
        for k, stmts in enumerate(reg.bwd_stmts):
            if stmts is not None:
                params = ["g"] + reg.params
                gen("fused%d_bwd%d" % (n, k), params, tuple(stmts), dtype, {}, ["a"] * len(params))
print("OK", ok, "FAILED", bad)
for f in fails[:30]:
    print(f)
raise SystemExit(1 if bad else 0)
