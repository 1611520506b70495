#!/usr/bin/env bash
# Per-plane masks and gradient magnitudes on the GPU (parity tests, compute-sanitizer, a real
# clip against the CPU engine, NVDEC pictures), doctor's NVDEC line, and where the software
# decode gap to FFmpeg's CLI lives (convstream's decode-only loop, the decoder writing into
# the pinned pool or not). Results under $OUT.
set -uo pipefail
d=gpu-carry; out=${OUT:-/tmp/out}; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
{ nvidia-smi -L; nproc; } > "$out/host.txt" 2>&1
t() { timeout -k 5 "$@"; }
# 1. doctor
t 60 $d/convstream doctor > "$out/doctor.txt" 2>&1
# 2. GPU tests: every gpu:: test (parity on random planes, per-plane masks, magnitudes, lanes).
CONVSTREAM_TEST_GPU=1 t 400 $d/tests/it gpu:: --test-threads=1 --nocapture > "$out/gpu-tests.txt" 2>&1; echo "rc=$?" >> "$out/gpu-tests.txt"
# 3. compute-sanitizer on the magnitude and per-plane tests.
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 t 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
  $d/tests/it gpu::gradient_magnitudes gpu::plane_masks --test-threads=1 > "$out/sanitizer.txt" 2>&1; echo "rc=$?" >> "$out/sanitizer.txt"
# 4. A real clip, GPU against CPU, software and NVDEC decoding (NV12 pictures on the GPU).
tmp=/tmp/fid; mkdir -p $tmp
{
for dec in software nvdec; do
  for dev in cuda cpu; do
    t 120 $d/convstream run -y --no-progress -i $d/clip1080.mp4 --frames 60 --decoder $dec --device $dev \
      --mask sobel:divisor=4 --plane-mask uv=neutral -o $tmp/$dec-$dev.y4m > $tmp/$dec-$dev.log 2>&1 || echo "FAILED $dec $dev: $(tail -3 $tmp/$dec-$dev.log)"
  done
  cmp $tmp/$dec-cuda.y4m $tmp/$dec-cpu.y4m && echo "sobel+neutral $dec: cuda == cpu ($(stat -c %s $tmp/$dec-cuda.y4m) bytes)"
  t 120 $d/convstream run -y --no-progress -i $d/clip1080.mp4 --frames 60 --decoder $dec --device cuda \
      --mask gaussian:size=7 --plane-mask y=prewitt --plane-mask u=edge:bias=128 --plane-mask v=box:size=9 -o $tmp/$dec-mix-cuda.y4m > /dev/null 2>&1
  t 120 $d/convstream run -y --no-progress -i $d/clip1080.mp4 --frames 60 --decoder $dec --device cpu \
      --mask gaussian:size=7 --plane-mask y=prewitt --plane-mask u=edge:bias=128 --plane-mask v=box:size=9 -o $tmp/$dec-mix-cpu.y4m > /dev/null 2>&1
  cmp $tmp/$dec-mix-cuda.y4m $tmp/$dec-mix-cpu.y4m && echo "per-plane mix $dec: cuda == cpu"
done
grep -h "output:\|PCIe\|turns green" $tmp/*.log | head -8
} > "$out/real-clip.txt" 2>&1
# 5. The software decode gap: FFmpeg's CLI decode-only, convstream's own decode-only loop
#    (bench e2e), and convstream 13x13 to null with and without the decoder writing into the
#    pinned pool (pinned_frames = 0 turns the pool off). Three rounds, alternating.
$d/ffmpeg -v error -y -stream_loop 9 -i $d/clip1080.mp4 -c copy $tmp/c1080.mp4
cat > $tmp/nopool.toml <<TOML
[[pipeline]]
name = "nopool"
source = { url = "$tmp/c1080.mp4" }
filter = { mask = "gaussian:size=13,sigma=3", device = "cuda", pinned_frames = 0 }
sink = { url = "null" }
TOML
now() { date +%s.%N; }
{
for round in 1 2 3; do
  s=$(now); t 120 $d/ffmpeg -hide_banner -benchmark -i $tmp/c1080.mp4 -map 0:v -f null - > $tmp/ff.log 2>&1
  rt=$(grep -o 'rtime=[0-9.]*' $tmp/ff.log | tail -1 | cut -d= -f2); echo "r$round ffmpeg-decode steady=$(awk -v rt=${rt:-0} 'BEGIN{print (rt>0? 2500/rt : 0)}')"
  t 120 $d/convstream run --no-progress --stats-json $tmp/a.json -i $tmp/c1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda > /dev/null 2>&1
  echo "r$round cs-13x13-pool $(python3 -c "import json;p=json.load(open('$tmp/a.json'))['pipelines'][0];print('fps=%.0f src=%.2f' % (p['fps'], p['source_seconds']))")"
  t 120 $d/convstream run --no-progress --stats-json $tmp/b.json --config $tmp/nopool.toml > /dev/null 2>&1
  echo "r$round cs-13x13-nopool $(python3 -c "import json;p=json.load(open('$tmp/b.json'))['pipelines'][0];print('fps=%.0f src=%.2f' % (p['fps'], p['source_seconds']))")"
done
t 200 $d/convstream bench --suite e2e --quick --device cuda --input $tmp/c1080.mp4 --out $tmp/e2e > $tmp/e2e.log 2>&1
grep -h "e2e .*decode-only" $tmp/e2e.log
} > "$out/decode-gap.txt" 2>&1
