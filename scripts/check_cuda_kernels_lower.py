"""Compile every CUDA kernel the tests launch for a real GPU target, without a GPU.

Step 1 (``--record FILE``, run by this script in a subprocess): ``pytest tests/cuda`` under the
simulator with every kernel launch recorded -- the kernel's module and name and the numba
types of its arguments (pickled).  Step 2 (this process, simulator off): each recorded
(kernel, signature) is typed and lowered to LLVM IR by numba-cuda's compiler for compute
capability 7.0 with a stand-in device (no driver, no NVVM), which catches what only the GPU
compiler rejects: device-side typing, functions without a CUDA implementation, non-constant
shared-memory shapes.  Kernels built inside factories (closures) cannot be found again by
name and are counted as skipped.  Usage: ``python scripts/check_cuda_kernels_lower.py
[pytest args]`` (default: all of tests/cuda, ~10 min); prints ``OK n FAILED m SKIPPED k``.
"""

import os
import pickle
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# -- step 1: the recording plugin (imported by pytest in the simulator subprocess) -------------
if os.environ.get("NBGRAD_RECORD_KERNELS"):
    import numba
    import numpy as np
    from numba.cuda.simulator import kernel as _sim

    _seen = set()
    _orig = _sim.FakeCUDAKernel.__call__

    def _typeof(a):
        ary = getattr(a, "_ary", None)
        if ary is not None:
            a = ary
        if isinstance(a, np.ndarray):
            return numba.typeof(a)
        return numba.typeof(a)

    def _record(self, *args):
        if not (self._device or _sim._kernel_context):
            fn = self.fn
            try:
                key = (fn.__module__, fn.__qualname__, tuple(_typeof(a) for a in args))
                if key not in _seen:
                    _seen.add(key)
                    with open(os.environ["NBGRAD_RECORD_KERNELS"], "ab") as f:
                        pickle.dump(key, f)
            except Exception:  # an argument numba cannot type: reported by step 2 as skipped
                pass
        return _orig(self, *args)

    _sim.FakeCUDAKernel.__call__ = _record


def _load(path):
    out = []
    with open(path, "rb") as f:
        while True:
            try:
                out.append(pickle.load(f))
            except EOFError:
                return out


def _module(name):
    """Import ``name``; a generated kernel module (``nbgrad_gen.*``) from the kernel cache."""
    import importlib
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    if not name.startswith("nbgrad_gen."):
        return importlib.import_module(name)
    import nbgrad

    path = os.path.join(nbgrad._config.CACHE_DIR, "nbgrad_gen", name.split(".", 1)[1] + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv):
    rec = tempfile.mktemp(suffix=".kernels")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NBGRAD_RECORD_KERNELS=rec)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "scripts"), env.get("PYTHONPATH", "")])
    args = argv or ["tests/cuda"]
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-p",
         "check_cuda_kernels_lower", *args],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    recorded = _load(rec) if os.path.exists(rec) else []
    os.unlink(rec) if os.path.exists(rec) else None

    # -- step 2: lower each for a real target ---------------------------------------------------
    import numba.cuda.dispatcher as D
    from numba import types

    class _Dev:
        compute_capability = (7, 0)

    D.get_current_device = lambda: _Dev()
    from numba.cuda.compiler import compile_cuda

    ok, failed, skipped = 0, [], 0
    for mod, qual, sig in recorded:
        if "<locals>" in qual:
            skipped += 1
            continue
        obj = _module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
        fn = getattr(obj, "py_func", None) or getattr(obj, "fn", None) or obj
        try:
            compile_cuda(fn, types.void, sig, cc=(7, 0))
            ok += 1
        except Exception as e:
            failed.append("%s.%s%s: %s" % (mod, qual, sig, str(e).splitlines()[0][:200]))
    print("OK %d FAILED %d SKIPPED %d (kernels built in factories)" % (ok, len(failed), skipped))
    for f in failed:
        print("  " + f)
    return 1 if failed else 0


if __name__ == "__main__" and not os.environ.get("NBGRAD_RECORD_KERNELS"):
    sys.exit(main(sys.argv[1:]))
