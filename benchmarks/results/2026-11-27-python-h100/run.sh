#!/usr/bin/env bash
# On an H100 (the GPU the Python targets name): the Python package's GPU tests and the
# stream-ordered benchmark (scripts/gpu-check.sh python), then the CPU engine from Python against
# OpenCV on this host's 16 cores (benchmarks/results/2026-11-27-cpu-small-masks/compare_python.py).
#   OUT=... benchmarks/results/2026-11-27-python-h100/run.sh   (gpu-carry/ holds the wheel, pywheels/, convstream.xz)
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r
mkdir -p "$R"
py=/opt/torch/.venv/bin/python
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|^CPU\(s\)"; } >"$R/host.txt" 2>&1
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
uv pip install --python $py --target /tmp/site --no-index --find-links gpu-carry/pywheels pytest >"$R/pip.txt" 2>&1
PYTHONPATH=/tmp/site PYTHON=$py OUT="$R/python" ENGINES=/nonexistent CONVSTREAM_BIN=/tmp/convstream \
    timeout -k 5 300 scripts/gpu-check.sh python gpu-carry/convstream-*.whl >"$R/python.txt" 2>&1
echo "rc=$?" >>"$R/python.txt"
site=$(mktemp -d) && $py -m zipfile -e gpu-carry/convstream-*.whl "$site"
PYTHONPATH="$site" timeout -k 5 120 $py benchmarks/results/2026-11-27-cpu-small-masks/compare_python.py >"$R/cpu-vs-cv2.txt" 2>&1
echo "rc=$?" >>"$R/cpu-vs-cv2.txt"
tar czf "$OUT/results.tgz" -C "$R" .
