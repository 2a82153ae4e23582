"""Runs tests/cuda -- nbgrad on ``device='cuda'`` -- in a subprocess under numba's CUDA
simulator.  ``NUMBA_ENABLE_CUDASIM`` must be set before numba is imported, so the folder cannot
run in this process; the subprocess shares the kernel cache folder of this run.  On a machine
with a GPU the same folder runs for real in the main run (scripts/gpu_check.sh).
"""

import os
import subprocess
import sys

import pytest
from test_cuda_sim import NUMBA_CUDA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(
    NUMBA_CUDA is None, reason="numba-cuda is not installed (pip install 'nbgrad[cuda]')"
)
def test_cuda_folder_passes_under_the_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run(
        # (setup.cfg's addopts already has -q: one more would drop the summary line)
        [sys.executable, "-m", "pytest", "tests/cuda", "-p", "no:warnings", "-x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    tail = proc.stdout[-8000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, "tests/cuda failed under the simulator:\n" + tail
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, tail
    print(summary)
