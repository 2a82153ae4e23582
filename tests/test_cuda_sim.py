"""The CUDA half of the one-formula design: registry formulas -> numba.cuda kernels.

* ``test_cuda_kernels_match_cpu_in_simulator``: runs tests/cuda_sim_check.py in a subprocess with
  ``NUMBA_ENABLE_CUDASIM=1`` (the simulator must be chosen before numba is imported, so it cannot
  run in this process): forward and every fused backward kernel of exp, tanh, sigmoid, mul, div
  and where, float32 and float64, compared with the CPU ufuncs, plus launcher corner cases
  (scalar attributes, 0-d and empty inputs).  Needs numba-cuda.
* ``test_cuda_kernels_match_cpu_on_gpu``: the same check in-process on a real GPU.
* The rest need neither: generated CUDA source for every pointwise op, the launcher's plans, and
  the CUDA scalar vocabulary.
"""
import ast
import importlib.metadata
import os
import subprocess
import sys

import pytest

import nbgrad
from nbgrad.kernels import pointwise as pw
from nbgrad.kernels.cuda_launch import pointwise_plan
from nbgrad.ops.dispatch import _plan
from nbgrad.ops.registry import REGISTRY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "nbgrad", "kernels")


def _numba_cuda_version():
    # numba still ships a deprecated built-in numba.cuda, so find_spec('numba.cuda') proves
    # nothing: look for the numba-cuda distribution itself.
    for dist in ("numba-cuda", "numba_cuda"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return None


NUMBA_CUDA = _numba_cuda_version()
needs_numba_cuda = pytest.mark.skipif(
    NUMBA_CUDA is None, reason="numba-cuda is not installed (pip install 'nbgrad[cuda]')")


@needs_numba_cuda
def test_cuda_kernels_match_cpu_in_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, os.path.join("tests", "cuda_sim_check.py"), "-q"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, "cuda_sim_check.py failed:\n%s\n%s" % (proc.stdout,
                                                                        proc.stderr[-6000:])
    assert "OK 30 kernels, 6 launcher cases (simulator)" in proc.stdout, proc.stdout


@pytest.mark.skipif(not nbgrad.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_kernels_match_cpu_on_gpu():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        import cuda_sim_check
    finally:
        sys.path.pop(0)
    assert cuda_sim_check.check(verbose=False) == 30
    assert cuda_sim_check.check_launcher_edges(verbose=False) == 6


def _pointwise_ops():
    return [op for op in REGISTRY.values() if op.kind == "pointwise"]


def test_launcher_plans_match_cpu_backward():
    """pointwise_plan hands cuda_kernel exactly what pointwise_vjp hands cpu_kernel."""
    for op in _pointwise_ops():
        tag, params, expr, ptypes = pointwise_plan(op.name, "fwd")
        assert (tag, params, expr) == (op.name, op.args + op.attrs, op.formula)
        assert ptypes == {n: "bool" for n in op.bool_args}
        for i, item in enumerate(_plan(op)):
            if item is None:
                with pytest.raises(ValueError):
                    pointwise_plan(op, "vjp%d" % i)
                continue
            assert pointwise_plan(op, "vjp%d" % i)[:3] == ("%s_vjp%d" % (op.name, i),) + item[:2]
    with pytest.raises(ValueError):
        pointwise_plan("mul", "bwd")
    with pytest.raises(KeyError):
        pointwise_plan("no_such_op", "fwd")


def test_cuda_source_generated_for_every_pointwise_op():
    """Every pointwise formula and fused backward expression yields valid CUDA kernel source
    whose free names are params or the CUDA scalar vocabulary (no numba-cuda needed)."""
    vocab = set(_all_of("cuda_scalar.py")) | {"T", "cuda", "vectorize", "range"}
    n = 0
    for op in _pointwise_ops():
        roles = ["fwd"] + ["vjp%d" % i for i, p in enumerate(_plan(op)) if p is not None]
        for role in roles:
            tag, params, expr, ptypes = pointwise_plan(op, role)
            for dtype in ("float32", "float64"):
                src = pw.kernel_source(params, expr, dtype, ptypes, cuda=True)
                compile(src, "<%s cuda>" % tag, "exec")
                assert "@cuda.jit" in src and "cuda.gridsize(1)" in src
            free = pw.names_in(pw.typed_expr(expr)) - set(params)
            assert free <= vocab, (tag, expr, free - vocab)
            n += 1
    assert n > 50


def _all_of(filename):
    tree = ast.parse(open(os.path.join(KERNELS, filename)).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("no __all__ in %s" % filename)


def test_cuda_scalar_vocabulary_matches_cpu():
    # parsed, not imported: importing cuda_scalar needs numba.cuda
    assert sorted(_all_of("cuda_scalar.py")) == sorted(_all_of("scalar.py"))
