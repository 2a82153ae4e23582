"""The kernel builder and the CUDA half of the one-formula design: registry formulas -> kernels.

* ``test_cuda_kernels_match_cpu_in_simulator``: runs tests/cuda_sim_check.py in a subprocess with
  ``NUMBA_ENABLE_CUDASIM=1`` (the simulator must be chosen before numba is imported, so it cannot
  run in this process): forward and every fused backward kernel of exp, tanh, sigmoid, mul, div
  and where, float32 and float64, compared with the CPU ufuncs, plus launcher corner cases
  (scalar attributes, 0-d and empty inputs).  Needs numba-cuda.
* ``test_cuda_kernels_match_cpu_on_gpu``: the same check in-process on a real GPU.
* The rest need neither: generated CUDA source for every pointwise op, the kernel plans, the
  vocabulary bindings and the vocabulary hash in generated sources.
"""

import ast
import hashlib
import importlib.metadata
import os
import subprocess
import sys

import pytest

import nbgrad
from nbgrad.kernels import build
from nbgrad.kernels.cpu import scalar as cpu_scalar
from nbgrad.kernels.vocab import VOCAB
from nbgrad.ops.formula import kernel_plan, names_in, partials_of
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
    NUMBA_CUDA is None, reason="numba-cuda is not installed (pip install 'nbgrad[cuda]')"
)


@needs_numba_cuda
def test_cuda_kernels_match_cpu_in_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run(
        [sys.executable, os.path.join("tests", "cuda_sim_check.py"), "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, "cuda_sim_check.py failed:\n%s\n%s" % (
        proc.stdout,
        proc.stderr[-6000:],
    )
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


def test_kernel_plans_are_the_registry_formulas():
    """kernel_plan gives the CUDA launcher exactly what dispatch and pointwise_vjp compile."""
    for op in _pointwise_ops():
        ptypes = {n: "bool" for n in op.bool_args}
        assert kernel_plan(op.name, "fwd") == (op.name, op.args + op.attrs, op.formula, ptypes)
        for i, p in enumerate(op.partials):
            if p is None:
                with pytest.raises(ValueError):
                    kernel_plan(op, "vjp%d" % i)
                continue
            used = names_in(p)
            params = ("g",) + tuple(n for n in op.args + ("out",) + op.attrs if n in used)
            expr = p if "g" in used else "g * (%s)" % p  # a partial with g: the whole backward
            plan = ("%s_vjp%d" % (op.name, i), params, expr, ptypes)
            assert kernel_plan(op, "vjp%d" % i) == plan
            part = partials_of(op)[i]
            assert (part.tag, part.params, part.expr, part.param_types) == plan
    with pytest.raises(ValueError):
        kernel_plan("mul", "bwd")
    with pytest.raises(KeyError):
        kernel_plan("no_such_op", "fwd")


def test_cuda_source_generated_for_every_pointwise_op():
    """Every pointwise formula and fused backward expression yields valid CUDA kernel source
    whose free names are params or the vocabulary (no numba-cuda needed)."""
    allowed = set(VOCAB) | {"T", "cuda", "vectorize", "range"}
    n = 0
    for op in _pointwise_ops():
        roles = ["fwd"] + ["vjp%d" % i for i, p in enumerate(op.partials) if p is not None]
        for role in roles:
            tag, params, expr, ptypes = kernel_plan(op, role)
            for dtype in ("float32", "float64"):
                src = build.kernel_source(params, expr, dtype, ptypes, cuda=True)
                compile(src, "<%s cuda>" % tag, "exec")
                assert "@cuda.jit" in src and "cuda.gridsize(1)" in src
            free = build.names_in(build.typed_expr(expr)) - set(params)
            assert free <= allowed, (tag, expr, free - allowed)
            n += 1
    assert n > 50


def _module_names(*path):
    """Names a module assigns at top level, and the expression its ``__all__`` is built from
    (parsed, not imported: importing the CUDA binding needs numba.cuda)."""
    with open(os.path.join(KERNELS, *path)) as f:
        tree = ast.parse(f.read())
    names, all_expr = set(), None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if t.id == "__all__":
                        all_expr = ast.unparse(node.value)
    return names, all_expr


def test_cpu_and_cuda_bindings_export_exactly_the_vocabulary():
    assert cpu_scalar.__all__ == list(VOCAB)
    assert all(callable(getattr(cpu_scalar, n)) for n in VOCAB)
    for binding in (("cpu", "scalar.py"), ("cuda", "scalar.py")):
        names, all_expr = _module_names(*binding)
        assert all_expr == "list(vocab.VOCAB)", binding
        assert set(VOCAB) <= names, (binding, set(VOCAB) - names)


def test_vocabulary_hash_is_in_every_generated_source(monkeypatch):
    """Editing kernels/vocab.py or a binding must give new kernel modules, not cache hits."""

    def sha(*paths):
        h = hashlib.sha1()
        for p in paths:
            with open(os.path.join(KERNELS, *p), "rb") as f:
                h.update(f.read())
        return h.hexdigest()[:16]

    assert build.vocab_hash(False) == sha(
        ("vocab.py",), ("cpu", "scalar.py"), ("cpu", "vformula.py")
    )
    assert build.vocab_hash(True) == sha(("vocab.py",), ("cuda", "scalar.py"))
    for cuda in (False, True):
        src = build.kernel_source(("x",), "sigmoid(x)", "float32", {}, cuda=cuda)
        assert build.vocab_hash(cuda) in src.splitlines()[0]
        with monkeypatch.context() as m:
            m.setattr(build, "vocab_hash", lambda cuda=False: "0123456789abcdef")
            edited = build.kernel_source(("x",), "sigmoid(x)", "float32", {}, cuda=cuda)
        assert edited != src
        assert build.module_name("sigmoid", edited) != build.module_name("sigmoid", src)


def test_importing_nbgrad_does_not_import_numba_cuda():
    code = (
        "import sys, nbgrad, nbgrad.kernels.cuda.launch, nbgrad.ops.formula; "
        "sys.exit('numba.cuda' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0
