#!/usr/bin/env bash
# The Python package's check, as a user gets it: builds the wheel (scripts/build-wheel.sh),
# installs it into a fresh virtual environment with pytest, NumPy, SciPy and OpenCV (the peers
# the tests compare with) from PyPI, and runs
# python/tests against it from outside the source tree (so the installed wheel is what is
# imported). The tests compare with the `convstream` binary ($CONVSTREAM_BIN, else the release
# build, built here when missing). GPU tests are skipped here; on a GPU host with CuPy or
# PyTorch run them with: python3 -m pytest python/tests -m gpu (see python/tests/test_gpu.py),
# or scripts/gpu-check.sh python (the device-call tests and their benchmark, pytest optional).
#
# Then the benchmark against OpenCV runs once on a small image (python/bench/vs_opencv.py
# --smoke: each row's result compared with cv2's, no timing).
#
# Usage: scripts/python-check.sh [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"
python="${PYTHON:-python3}"

# No kernel pack in the wheel checked here (nothing here has a GPU to load it; compiling it
# costs minutes of NVRTC): the engines' tests check the pack, scripts/build-wheel.sh makes it.
CONVSTREAM_KERNEL_ARCHS="${CONVSTREAM_KERNEL_ARCHS:-none}" scripts/build-wheel.sh
wheel="$(ls -t dist/wheels/convstream-*.whl | head -n 1)"

target="${CARGO_TARGET_DIR:-$repo/target}"
export CONVSTREAM_BIN="${CONVSTREAM_BIN:-$target/release/convstream}"
if [[ ! -x $CONVSTREAM_BIN ]]; then
    cargo build --release -p convstream --bin convstream
fi

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
"$python" -m venv "$workdir/venv"
"$workdir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" pytest numpy scipy opencv-python-headless
cd "$workdir"
"$workdir/venv/bin/python" -c 'import convstream, sys; print("convstream", convstream.__version__, "from", convstream.__file__, "on Python", sys.version.split()[0])'
"$workdir/venv/bin/python" -m pytest "$repo/python/tests" -v -p no:cacheprovider -rs "$@"
# The benchmark against OpenCV, once on a small image (its rows must agree with cv2's; no
# speed claim): python/bench/vs_opencv.py without --smoke gives the figures.
"$workdir/venv/bin/python" "$repo/python/bench/vs_opencv.py" --smoke
