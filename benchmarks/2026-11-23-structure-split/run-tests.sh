#!/usr/bin/env bash
# GPU tests and a quick memcheck, on the carried portable build.
set -uo pipefail
d=gpu-carry; out="${OUT:-gpu-results}"; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
nvidia-smi -L | tee "$out/host.txt"
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TRACE_OUT="$out/lanes-trace.json" timeout -k 10 400 "$d/tests/it" gpu:: --test-threads=1 --nocapture > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?" | tee -a "$out/host.txt"
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 timeout -k 10 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$d/tests/it" gpu::gpu_parity_with_cpu_on_random_planes --test-threads=1 > "$out/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$out/host.txt"
tail -n 5 "$out/gpu-tests.log"; grep -E '^test |test result' "$out/gpu-tests.log"; tail -n 4 "$out/memcheck.log"
