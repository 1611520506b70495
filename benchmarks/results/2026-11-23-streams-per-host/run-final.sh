#!/usr/bin/env bash
# Engine GPU tests touched by the lane changes, NVDEC's aggregate ceiling, and the NVDEC ramp near it.
set -uo pipefail
d=gpu-carry; out=/tmp/final; mkdir -p $out
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 timeout -k 10 150 $d/tests/it gpu::gpu_parity_with_cpu_on_random_planes gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool gpu::large_planes --test-threads=1 > $out/gpu-tests.log 2>&1
echo "gpu tests exit $?"; grep -E "^test |test result|differ|cases" $out/gpu-tests.log | head -12
tmp=/tmp/agg; mkdir -p $tmp
$d/ffmpeg -v error -y -stream_loop 3 -i $d/clip1080.mp4 -c copy $tmp/c.mp4
for n in 1 4 8 16; do
  s=$(date +%s.%N)
  for i in $(seq $n); do timeout -k 5 120 $d/ffmpeg -v error -c:v h264_cuvid -i $tmp/c.mp4 -map 0:v -f null - & done
  sleep 2; nvidia-smi --query-gpu=utilization.decoder,utilization.gpu --format=csv,noheader > $tmp/util-$n.txt
  wait; e=$(date +%s.%N)
  awk -v n=$n -v s=$s -v e=$e -v u="$(cat $tmp/util-$n.txt)" 'BEGIN{printf "NVDEC aggregate, %d ffmpeg h264_cuvid decodes of 1000 1080p frames: %.0f frames/s in all (%.0f each); nvidia-smi decoder,gpu: %s\n", n, n*1000/(e-s), 1000/(e-s), u}'
done
SCALE_SECONDS=6 bash $d/run-scale.sh nvdec 40,48,56 200 2>&1 | grep -E "^\| nvdec|scale nvdec"
