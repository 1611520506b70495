#!/usr/bin/env bash
# python: the Python package's GPU tests and stream-ordered benchmark, from a wheel
#
# On a GPU host: the Python package's GPU tests (device calls queued on the caller's stream with
# a poisoned output, parity with the CPU engine at every depth, float tensors, batches, out= and
# strided tensors, DLPack from torch/CuPy/JAX, refusals) and the stream-ordered benchmark, then
# a summary. The wheel is unpacked beside the tests (no pip, no network needed); the
# interpreter brings torch and/or CuPy. Without pytest, the GPU tests of
# python/tests/test_device_calls.py run through a small runner of their own.
#
# Usage: PYTHON=/opt/torch/.venv/bin/python scripts/gpu-check.sh python [WHEEL] [--no-bench]
#   WHEEL  default: the newest of dist/portable/wheels/ and dist/wheels/
# Writes: $OUT (default ./python-gpu-check)/{engines.txt,tests.txt,bench.json,bench.md}
set -uo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
python="${PYTHON:-python3}"
bench=1
wheel=""
for arg in "$@"; do
    case "$arg" in
        --no-bench) bench=0 ;;
        *) wheel="$arg" ;;
    esac
done
if [[ -z $wheel ]]; then
    wheel="$(ls -t dist/portable/wheels/convstream-*.whl dist/wheels/convstream-*.whl 2>/dev/null | head -n 1)"
fi
if [[ -z $wheel || ! -f $wheel ]]; then
    echo "no wheel: build one with scripts/build-wheel.sh --portable, or pass its path" >&2
    exit 2
fi
out="${OUT:-$repo/python-gpu-check}"
mkdir -p "$out"
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
"$python" -m zipfile -e "$wheel" "$site"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
"$python" -c 'import convstream, sys; print("convstream", convstream.__version__, "from", convstream.__file__)'
# The tests that compare with the command line find the portable build's binary.
if [[ -z ${CONVSTREAM_BIN:-} && -x $repo/dist/portable/convstream ]]; then
    export CONVSTREAM_BIN="$repo/dist/portable/convstream"
fi

# The native half on its own: core's stream_call tests from the portable build, where present.
engines="${ENGINES:-dist/portable/tests/engines}"
if [[ -x $engines ]]; then
    CONVSTREAM_TEST_GPU=1 "$engines" stream_call:: --include-ignored --test-threads=1 2>&1 | tee "$out/engines.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || rust_failed=1
else
    echo "no $engines (scripts/build-portable.sh builds it): core's stream_call tests not run" | tee "$out/engines.txt"
fi

tests=(python/tests/test_device_calls.py python/tests/test_gpu.py python/tests/test_readme.py)
status=${rust_failed:-0}
if "$python" -c 'import pytest' 2>/dev/null; then
    (cd "$repo" && "$python" -m pytest "${tests[@]}" -m gpu -v -p no:cacheprovider -rs) 2>&1 | tee "$out/tests.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
else
    echo "pytest is not installed: running the gpu tests of test_device_calls.py without it" | tee "$out/tests.txt"
    "$python" "$repo/python/tests/run_gpu_tests.py" "$repo/python/tests/test_device_calls.py" 2>&1 | tee -a "$out/tests.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi

if [[ $bench == 1 ]]; then
    "$python" "$repo/python/bench/bench_stream.py" --out "$out/bench.json" | tee "$out/bench.md"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
echo
echo "== summary =="
grep -E "test result|FAILED|panicked" "$out/engines.txt" | tail -n 5
grep -E "passed|failed|skipped|error|PASS|FAIL" "$out/tests.txt" | tail -n 40
[[ $bench == 1 ]] && grep -A12 '"queued_return"' "$out/bench.md" | head -n 20
exit "$status"
