"""Runs tests/cuda -- nbgrad on ``device='cuda'`` -- in a subprocess under numba's CUDA
simulator.  ``NUMBA_ENABLE_CUDASIM`` must be set before numba is imported, so the folder cannot
run in this process; the subprocess shares the kernel cache folder of this run.  On a machine
with a GPU the same folder runs for real in the main run (scripts/gpu_check.sh).

The simulator runs kernels in Python, one thread per CUDA thread: the folder takes minutes on
one core.  So the subprocess starts as soon as collection has selected this test (conftest.py
``pytest_collection_finish`` calls ``launch``) and runs beside the rest of the suite, on the
second core CI has; the test only waits for it.  (The kernel cache is safe to share: every
file is written whole and renamed into place, kernels/build.py.)
"""

import os
import subprocess
import sys
import tempfile

import pytest
from test_cuda_sim import NUMBA_CUDA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 1500
_RUN = {}  # "proc", "out": the running subprocess and its output file


def _die_with_parent():
    """In the child, before exec (Linux): SIGTERM when the test process dies, so a killed or
    timed-out run (a CI job cancelled) leaves no simulator run behind."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def launch():
    """Start the simulator run (once); conftest.py calls this when the test is selected."""
    if NUMBA_CUDA is None or "proc" in _RUN:
        return
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: nothing waits on a reader
    _RUN["out"] = out
    _RUN["proc"] = subprocess.Popen(
        # (setup.cfg's addopts already has -q: one more would drop the summary line)
        [sys.executable, "-m", "pytest", "tests/cuda", "-p", "no:warnings", "-x"],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


def stop():
    """Kill a simulator run still going when the session ends (``-x`` stopped it early)."""
    proc = _RUN.pop("proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    out = _RUN.pop("out", None)
    if out is not None:
        out.close()


def _output():
    out = _RUN["out"]
    out.seek(0)
    return out.read()


@pytest.mark.skipif(
    NUMBA_CUDA is None, reason="numba-cuda is not installed (pip install 'nbgrad[cuda]')"
)
def test_cuda_folder_passes_under_the_simulator():
    launch()  # (already running unless collection was bypassed)
    proc = _RUN["proc"]
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("tests/cuda under the simulator ran past %d s:\n%s"
                    % (TIMEOUT, _output()[-11000:]))  # fmt: skip
    text = _output()
    tail = text[-11000:]
    assert proc.returncode == 0, "tests/cuda failed under the simulator:\n" + tail
    summary = text.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, tail
    print(summary)
