"""The op table (nbgrad/testing/op_db.py) on ``device='cuda'``, compared with the CPU.

For every registry op (its first and last samples; every sample with
``NBGRAD_CUDA_ALL_SAMPLES=1``, as scripts/gpu_check.sh runs it): the same inputs copied to the
device, the forward values, the first derivatives (backward of ``sum(out * w)`` for fixed random
``w``) and, where the CPU table checks second order, the gradient of ``sum(grad * v)`` built
with ``create_graph`` -- all equal to the CPU results (float64; float32 forward too).  Runs
under the simulator (``NUMBA_ENABLE_CUDASIM=1``, tests/test_cuda_suite.py) or on a GPU (the
main run, scripts/gpu_check.sh).

Completeness: ``test_every_registry_op_is_in_the_cuda_table`` fails for a registry op without
an op-table entry (hence without this CUDA check); ``PENDING_CASES`` / ``PENDING_F32`` list
case ids that may not run on CUDA yet (strict xfails: a case that starts working fails until it
leaves the list) and ``test_no_op_is_pending`` fails while any is listed.
"""

import os

import numpy as np
import pytest

import nbgrad
from nbgrad.ops.registry import REGISTRY
from nbgrad.testing import op_db
from nbgrad.testing.op_db import OP_DB, materialize

# case ids (op-entry-sample) that do not run on CUDA yet, per test
PENDING_CASES = set()
PENDING_F32 = set()
CUDA_PENDING = {c.rsplit("-", 2)[0] for c in PENDING_CASES | PENDING_F32}

HOST_RESULTS = {"equal", "allclose"}
# samples whose table function makes CPU tensors of its own (PyTorch would refuse the mix too)
CPU_ONLY = {"cumprod-202-0"}
CASES = [(info, i, s) for info in OP_DB for i, s in enumerate(info.samples)]
# a few samples per op keep the simulator run short: the first, the smallest, the last
_PICK = {}
for _c in CASES:
    _PICK.setdefault(_c[0].name, []).append(_c)
SELECTED = []
for _name, _cs in _PICK.items():
    chosen = {id(_cs[0]): _cs[0], id(_cs[-1]): _cs[-1]}
    SELECTED.extend(chosen.values())
if os.environ.get("NBGRAD_CUDA_ALL_SAMPLES") == "1":  # every sample (scripts/gpu_check.sh)
    SELECTED = CASES


def case_id(c):
    info, i, _ = c
    return "%s-%d-%d" % (info.name, OP_DB.index(info), i)


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _to_cuda(args):
    out = []
    for a in args:
        if isinstance(a, nbgrad.Tensor):
            out.append(a.detach().cuda().requires_grad_(a.requires_grad))
        elif isinstance(a, (list, tuple)) and any(isinstance(x, nbgrad.Tensor) for x in a):
            out.append(type(a)(_to_cuda(a)))
        else:
            out.append(a)
    return out


def _leaves(args):
    found = []
    for a in args:
        if isinstance(a, nbgrad.Tensor) and a.requires_grad:
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(_leaves(a))
    return found


def _host(t):
    return t.detach().cpu().numpy() if t.is_cuda else t.detach().numpy()


def _check_close(got, want, tol, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, err_msg=what, equal_nan=True, **tol)


def _mark(c, pending):
    if case_id(c) in pending:
        return pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="no CUDA path yet"))
    return c


@pytest.mark.parametrize(
    "case", [_mark(c, PENDING_CASES) for c in SELECTED], ids=[case_id(c) for c in SELECTED]
)
def test_op_on_cuda_matches_cpu(case):
    info, _, sample = case
    if case_id(case) in CPU_ONLY:
        pytest.skip("the sample's function builds CPU tensors")
    tol = dict(rtol=1e-9, atol=1e-11)
    # forward and first derivatives, float64
    _, args = materialize(nbgrad, sample, "float64", True)
    cargs = _to_cuda(args)
    ref = _outs(info.fn(nbgrad, *args))
    got = _outs(info.fn(nbgrad, *cargs))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        if isinstance(r, nbgrad.Tensor):
            # (equal / allclose return Python bools, which the table wraps in CPU tensors)
            assert g.is_cuda or info.name in HOST_RESULTS, "%s returned a CPU tensor" % info.name
            assert g.dtype is r.dtype
            _check_close(_host(g), _host(r), tol, "forward")
        else:
            assert g == r
    leaves, cleaves = _leaves(args), _leaves(cargs)
    pairs = [
        (r, g)
        for r, g in zip(ref, got)
        if isinstance(r, nbgrad.Tensor) and r.requires_grad and r.dtype.is_floating_point
    ]
    if not info.grad or not leaves or not pairs:
        return
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(tuple(r.shape)) for r, _ in pairs]
    loss_cpu = sum((r * nbgrad.tensor(w)).sum() for (r, _), w in zip(pairs, ws))
    loss_gpu = sum((g * nbgrad.tensor(w).cuda()).sum() for (_, g), w in zip(pairs, ws))
    second = info.gradgrad and info in _GRADGRAD
    gr = nbgrad.autograd.grad(loss_cpu, leaves, allow_unused=True, create_graph=second)
    gg = nbgrad.autograd.grad(loss_gpu, cleaves, allow_unused=True, create_graph=second)
    for a, b in zip(gg, gr):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.is_cuda
            _check_close(_host(a), _host(b), tol, "gradient")
    if not second:
        return
    used = [(a, b, lc, lg) for a, b, lc, lg in zip(gg, gr, leaves, cleaves) if b is not None]
    used = [u for u in used if u[1].requires_grad]
    if not used:
        return
    vs = [rng.standard_normal(tuple(b.shape)) for _, b, _, _ in used]
    s_cpu = sum((b * nbgrad.tensor(v)).sum() for (_, b, _, _), v in zip(used, vs))
    s_gpu = sum((a * nbgrad.tensor(v).cuda()).sum() for (a, _, _, _), v in zip(used, vs))
    hr = nbgrad.autograd.grad(s_cpu, leaves, allow_unused=True)
    hg = nbgrad.autograd.grad(s_gpu, cleaves, allow_unused=True)
    for a, b in zip(hg, hr):
        if b is None or a is None:
            continue  # (a zero second derivative may be None on one side, as PyTorch's)
        _check_close(_host(a), _host(b), tol, "second derivative")


# second order on the smallest sample of each op, as the CPU table does
_GRADGRAD = set()
for _name, _cs in _PICK.items():
    if _cs[0][0].gradgrad:
        _GRADGRAD.add(_cs[0][0])


@pytest.mark.parametrize("case", [_mark(c, PENDING_F32) for c in SELECTED], ids=case_id)
def test_op_on_cuda_float32_forward(case):
    info, _, sample = case
    if case_id(case) in CPU_ONLY:
        pytest.skip("the sample's function builds CPU tensors")
    if "float32" not in info.dtypes:
        pytest.skip("float64-only op")
    _, args = materialize(nbgrad, sample, "float32", False)
    ref = _outs(info.fn(nbgrad, *args))
    got = _outs(info.fn(nbgrad, *_to_cuda(args)))
    for g, r in zip(got, ref):
        if isinstance(r, nbgrad.Tensor):
            assert (g.is_cuda or info.name in HOST_RESULTS) and g.dtype is r.dtype
            _check_close(_host(g), _host(r), dict(rtol=2e-5, atol=2e-6), "forward float32")


def test_every_registry_op_is_in_the_cuda_table():
    builtin = {n for n in REGISTRY if not n.startswith("elementwise.")}
    missing = builtin - op_db.op_names()
    assert not missing, sorted(missing)
    assert CUDA_PENDING <= {info.name for info in OP_DB}, sorted(CUDA_PENDING)


def test_no_op_is_pending():
    assert not CUDA_PENDING, sorted(CUDA_PENDING)


def test_every_cpu_kernel_has_a_cuda_twin():
    """The kernels' contract (nbgrad/kernels/cuda/__init__.py ``twin``): each public kernel of
    kernels/cpu/X.py (``foo_cpu``, and optim's ``*_step``) has ``foo_cuda`` in kernels/cuda/X.py."""
    import importlib
    import pkgutil

    import nbgrad.kernels.cpu as cpu_pkg
    from nbgrad.kernels.cuda import twin

    missing, checked = [], 0
    for info in pkgutil.iter_modules(cpu_pkg.__path__):
        if info.name in ("scalar", "vformula", "vmath"):  # formula bindings, not kernels
            continue
        mod = importlib.import_module("nbgrad.kernels.cpu." + info.name)
        for name in dir(mod):
            k = getattr(mod, name)
            fn = getattr(k, "py_func", k)
            if not callable(k) or getattr(fn, "__module__", None) != mod.__name__:
                continue
            if name.endswith("_cpu") or (info.name == "optim" and name.endswith("_step")):
                checked += 1
                try:
                    twin(k)
                except (AttributeError, ImportError):
                    missing.append("%s.%s" % (info.name, name))
    assert not missing, missing
    assert checked > 80, checked  # (the scan itself found the kernels)
