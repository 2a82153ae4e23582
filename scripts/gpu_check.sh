#!/usr/bin/env bash
# Real-GPU check: installs nbgrad with its CUDA extra, runs tests/cuda on the GPU (the same tests
# CI runs under numba's simulator) and the CUDA benchmarks.  Usage: bash scripts/gpu_check.sh
# [--no-install].  Needs an NVIDIA GPU and driver; PyTorch (CUDA build) is optional, as a peer.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-install" ]; then
    python3 -m venv .gpu-venv
    . .gpu-venv/bin/activate
    python -m pip install -q --upgrade pip
    python -m pip install -q -e ".[test,cuda]"
    python -m pip install -q "torch==2.13.0" || echo "no PyTorch: the peer comparison is skipped"
fi
python - <<'PY'
import nbgrad
print("nbgrad.cuda.is_available():", nbgrad.cuda.is_available(), "devices:", nbgrad.cuda.device_count())
if not nbgrad.cuda.is_available():
    raise SystemExit("no CUDA device: nothing to check here (CI runs tests/cuda under the simulator)")
print("device:", nbgrad.cuda.get_device_name(0))
PY
NBGRAD_CUDA_ALL_SAMPLES=1 python -m pytest tests/cuda -q -p no:warnings
python scripts/bench_cuda.py
