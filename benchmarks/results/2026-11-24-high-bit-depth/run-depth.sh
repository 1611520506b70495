#!/usr/bin/env bash
# High bit depth and HDR on the GPU: the gpu:: tests (16-bit parity included), compute-
# sanitizer on the quick high-depth parity and on a 10-bit NVDEC run, a real 10-bit PQ HEVC
# clip and a 12-bit one through the CUDA engine against the CPU engine, software and NVDEC
# (P010/P016 surfaces on the GPU), and the kernel suite at 8 and 16 bits. Results under $OUT.
# `run-depth.sh tests` runs step 1, `rest` steps 2 and 3, `kernel` step 4 (one call each).
set -uo pipefail
d=gpu-carry; out=${OUT:-/tmp/out}; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
{ nvidia-smi -L; nproc; } > "$out/host.txt" 2>&1
t() { timeout -k 5 "$@"; }
part=${1:-all}
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }
if runs tests; then
# 1. Every gpu:: test: parity on random planes at 8 to 16 bits, lanes, magnitudes, plane masks.
CONVSTREAM_TEST_GPU=1 t 420 $d/tests/it gpu:: --test-threads=1 --nocapture > "$out/gpu-tests.txt" 2>&1; echo "rc=$?" >> "$out/gpu-tests.txt"
fi
if runs rest; then
# 2. compute-sanitizer: the quick high-depth parity (every path, P010, 16-bit RGB), then a
#    10-bit NVDEC run (P010 surfaces read by the kernels).
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 t 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  $d/tests/it gpu::gpu_parity_at_high_bit_depths --test-threads=1 > "$out/sanitizer.txt" 2>&1; echo "rc=$?" >> "$out/sanitizer.txt"
t 120 compute-sanitizer --tool memcheck --error-exitcode 9 $d/convstream run -y --no-progress -i $d/hdr1080.mkv \
  --frames 4 --decoder nvdec --device cuda --mask gaussian:size=7 -o /tmp/san.y4m > "$out/sanitizer-nvdec.txt" 2>&1; echo "rc=$?" >> "$out/sanitizer-nvdec.txt"
# 3. Real clips: CUDA against CPU, software and NVDEC decoding; outputs keep the depth.
tmp=/tmp/depth; mkdir -p $tmp
{
for clip in hdr1080 hevc12; do
  for dec in software nvdec; do
    for dev in cuda cpu; do
      t 60 $d/convstream run -y --no-progress -i $d/$clip.mkv --frames 30 --decoder $dec --device $dev \
        --mask sharpen:amount=2 --plane-mask uv=gaussian:size=9 -o $tmp/$clip-$dec-$dev.y4m > $tmp/$clip-$dec-$dev.log 2>&1 \
        || echo "FAILED $clip $dec $dev: $(tail -3 $tmp/$clip-$dec-$dev.log)"
    done
    head -c 80 $tmp/$clip-$dec-cuda.y4m | head -1
    cmp $tmp/$clip-$dec-cuda.y4m $tmp/$clip-$dec-cpu.y4m && echo "$clip $dec: cuda == cpu ($(stat -c %s $tmp/$clip-$dec-cuda.y4m) bytes)"
    grep -h "PCIe per frame\|pictures are converted\|decoded format" $tmp/$clip-$dec-cuda.log | sed 's/^.*\(PCIe\|pictures\|decoded\)/  \1/'
  done
  cmp $tmp/$clip-software-cuda.y4m $tmp/$clip-nvdec-cuda.y4m && echo "$clip: NVDEC == software decoding, filtered"
done
# Sobel magnitude on luma, chroma at mid-grey, 10-bit, NVDEC pictures against the CPU engine.
for dev in cuda cpu; do
  t 60 $d/convstream run -y --no-progress -i $d/hdr1080.mkv --frames 30 --decoder nvdec --device $dev \
    --mask sobel:divisor=4 --plane-mask uv=neutral -o $tmp/sobel-$dev.y4m > /dev/null 2>&1
done
cmp $tmp/sobel-cuda.y4m $tmp/sobel-cpu.y4m && echo "sobel + neutral, 10-bit NVDEC: cuda == cpu"
} > "$out/real-clips.txt" 2>&1
fi
if runs kernel; then
tmp=/tmp/depth; mkdir -p $tmp
# 4. Kernel suite: 8- and 16-bit planes, 1080p and 2160p.
t 500 $d/convstream bench --suite kernel --device cuda --depths 8,16 --plane-sizes 1920x1080,3840x2160 \
  --mask-sizes 3,5,13,31 --out $tmp/kernel > $tmp/kernel.log 2>&1; echo "rc=$?" >> $tmp/kernel.log
cp $tmp/kernel/results.md "$out/kernel-results.md" 2>/dev/null; cp $tmp/kernel/results.json "$out/kernel-results.json" 2>/dev/null
tail -5 $tmp/kernel.log > "$out/kernel-log-tail.txt"
fi
