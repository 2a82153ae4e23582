"""Lower nbgrad's generated CUDA kernels to LLVM IR for a real GPU target (cc 7.0) without a GPU.

The simulator runs kernels as Python, so it cannot catch what only the CUDA compiler rejects
(device-side typing, unsupported functions such as ``np.exp`` in a kernel, non-constant shared
array shapes).  This compiles, for float32 and float64, every registry pointwise formula and
fused backward partial (both the flat and the strided variant), the comparison formulas, and
the copy / fill / triangle kernels through numba-cuda's front end and lowering (no NVVM, no
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
print("OK", ok, "FAILED", bad)
for f in fails[:30]:
    print(f)
raise SystemExit(1 if bad else 0)
