#!/usr/bin/env bash
# The Python package on the GPU host (CuPy and torch arrays, NVDEC pictures as tensors, the
# benchmark against CuPy, cuDNN, kornia and OpenCV) and `bench --suite e2e` with FFmpeg's CLI
# column on the H.264 clips run-gpu.sh made (made again when missing). Carried in gpu-carry/:
# the portable wheel and pytest's wheels under wheels/, besides run-gpu.sh's binaries.
set -uo pipefail
d=$PWD/gpu-carry; here="$(cd "$(dirname "$0")" && pwd)"; out=${OUT:-/tmp/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$d CONVSTREAM_KERNEL_CACHE=/tmp/ck
t() { timeout -k 5 "$@"; }
[ -x $d/convstream-new ] || python3 - <<'PY'
import lzma, shutil, os, glob
for f in glob.glob('gpu-carry/*.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
    os.chmod(f[:-3], 0o755)
PY
if [ ! -f /tmp/c1080.mp4 ]; then
  t 120 python3 "$here/make_y4m.py" /tmp/c1080.y4m 1920 1080 250 && t 120 $d/ffmpeg -v error -y -i /tmp/c1080.y4m -c:v libopenh264 -b:v 8M /tmp/c1080.mp4; rm -f /tmp/c1080.y4m
fi
rm -rf /tmp/py && mkdir -p /tmp/py
python3 -m pip install --no-deps --no-index --target /tmp/py $d/wheels/*.whl > "$out/pip.txt" 2>&1
export PYTHONPATH=/tmp/py
python3 -c "import convstream, torch, cupy, numpy; print(convstream.__file__, torch.__version__, cupy.__version__, numpy.__version__)" > "$out/python.txt" 2>&1
python3 -c "import kornia; print('kornia', kornia.__version__)" >> "$out/python.txt" 2>&1
CONVSTREAM_BIN=$d/convstream-new t 300 python3 -m pytest python/tests -m gpu -v -p no:cacheprovider > "$out/pytest-gpu.txt" 2>&1
echo "pytest exit $?" >> "$out/pytest-gpu.txt"
t 300 python3 "$here/../2026-11-25-python/bench_python.py" --out "$out/python-bench.json" > "$out/python-bench.md" 2>&1
echo "bench_python exit $?" >> "$out/python-bench.md"
t 200 $d/convstream-new bench --suite e2e --device cuda --rounds 2 --input /tmp/c1080.mp4 --ffmpeg $d/ffmpeg --out /tmp/e2e-1080 > "$out/e2e-1080.log" 2>&1
echo "e2e exit $?" >> "$out/e2e-1080.log"; cp /tmp/e2e-1080/results.md "$out/e2e-1080.md" 2>/dev/null; cp /tmp/e2e-1080/results.json "$out/e2e-1080.json" 2>/dev/null
tail -30 "$out/pytest-gpu.txt"; cat "$out/python-bench.md" | tail -40; grep -A30 -i "whole commands" "$out/e2e-1080.md" | head -30
