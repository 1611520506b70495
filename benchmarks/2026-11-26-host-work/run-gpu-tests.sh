#!/usr/bin/env bash
# The engine's GPU tests on the carried `it` binary: parity with the CPU engine (poisoned
# outputs), frame memory (pooled, staged, outputs on the GPU), a planes switch, a missing GPU.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
t 500 $d/it --include-ignored --test-threads 1 gpu::staged_frames_take_their_results_in_page_locked_planes \
  gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool \
  gpu::pictures_with_an_output_on_the_gpu_stay_there gpu::gpu_parity_at_high_bit_depths gpu::missing_gpu \
  gpu::gradient_magnitudes_match_the_cpu_engine 2>&1 | grep -E "^test |test result|panicked|seed" | tee "$out/gpu-tests.txt"
nvidia-smi --query-gpu=name --format=csv,noheader >> "$out/gpu-tests.txt"
