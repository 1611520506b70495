#!/usr/bin/env bash
# Start-up and whole-command speed of convstream before (old: 0014915), with the first
# start-up changes (mid: 337b14c: warm-up thread, shared context, pool grown in the
# background, NVDEC opened once) and with all of them (new: decoding before the engine is
# made, the first frames on the CPU until the GPU is ready), against FFmpeg's CLI, on one GPU
# host; then the GPU checks of what changed.
# Carried in gpu-carry/ (xz-compressed, unpacked here): convstream-{old,mid,new}, the
# integration tests (it), FFmpeg's CLI from the portable build and libopenh264.so.7.
#   1. clips: a moving textured 1080p25 H.264 clip (250 frames) and 2160p (100 frames) made
#      with make_y4m.py and OpenH264 at 8/20 Mb/s, plus a 25-frame cut of the 1080p one;
#   2. wall clock of whole commands, three rounds alternating: FFmpeg decode-only (software,
#      h264_cuvid) against convstream old/new with 13x13 Gaussian on every plane to null,
#      software and NVDEC; each convstream run's --stats-json (time_to_first_frame, startup);
#   3. checks: CUDA output identical to the CPU engine's (software and NVDEC decode), the
#      pooled-frame GPU tests, and 64/96 live NVDEC pipelines (bench --suite scale).
set -uo pipefail
d=$PWD/gpu-carry; here="$(cd "$(dirname "$0")" && pwd)"; out=${OUT:-/tmp/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$d CONVSTREAM_KERNEL_CACHE=/tmp/ck
t() { timeout -k 5 "$@"; }
python3 - <<'PY'
import lzma, shutil, os, glob
for f in glob.glob('gpu-carry/*.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
    os.chmod(f[:-3], 0o755)
PY
{ nvidia-smi -L; nproc; $d/ffmpeg -hide_banner -version | head -1; } > "$out/host.txt" 2>&1
for i in 1 2 3; do t 60 python3 "$here/cuda_costs.py" /usr/local/cuda/lib64/libnvrtc.so.13 >> "$out/cuda-costs.txt" 2>&1; echo --- >> "$out/cuda-costs.txt"; done
t 120 python3 "$here/make_y4m.py" /tmp/c1080.y4m 1920 1080 250 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c1080.y4m -c:v libopenh264 -b:v 8M /tmp/c1080.mp4 2>> "$out/err.txt"; rm -f /tmp/c1080.y4m
t 120 python3 "$here/make_y4m.py" /tmp/c2160.y4m 3840 2160 100 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c2160.y4m -c:v libopenh264 -b:v 20M /tmp/c2160.mp4 2>> "$out/err.txt"; rm -f /tmp/c2160.y4m
t 60 $d/ffmpeg -v error -y -i /tmp/c1080.mp4 -frames:v 25 -c copy /tmp/c1080-25.mp4 2>> "$out/err.txt"
ls -la /tmp/*.mp4 >> "$out/host.txt"
now() { date +%s.%N; }
w() { # label command...: one line of wall-clock seconds
  local l=$1; shift; local s=$(now); t 120 "$@" > /tmp/last.log 2>&1; local rc=$?; local e=$(now)
  echo "$l rc=$rc wall=$(python3 -c "print(round($e-$s,3))")" >> "$out/walls.txt"
  [ $rc = 0 ] || tail -3 /tmp/last.log >> "$out/err.txt"
}
mask=gaussian:size=13,sigma=3
for b in old mid new; do $d/convstream-$b run --no-progress -i /tmp/c1080-25.mp4 -o null --mask $mask --device cuda >/dev/null 2>&1; done
for r in 1 2 3; do
  for clip in c1080-25 c1080 c2160; do
    w "r$r $clip sw ffmpeg" $d/ffmpeg -hide_banner -nostdin -i /tmp/$clip.mp4 -map 0:v -f null -
    for b in old mid new; do w "r$r $clip sw $b" $d/convstream-$b run --no-progress --stats-json "$out/s-$r-$clip-sw-$b.json" -i /tmp/$clip.mp4 -o null --mask $mask --device cuda; done
    w "r$r $clip nvdec ffmpeg" $d/ffmpeg -hide_banner -nostdin -c:v h264_cuvid -i /tmp/$clip.mp4 -map 0:v -f null -
    for b in old mid new; do w "r$r $clip nvdec $b" $d/convstream-$b run --no-progress --stats-json "$out/s-$r-$clip-nv-$b.json" -i /tmp/$clip.mp4 -o null --mask $mask --device cuda --decoder nvdec; done
  done
done
pack() { python3 "$here/summarise.py" "$out" > "$out/summary.txt" 2>&1; tar czf /tmp/all.tgz -C "$out" --exclude=all.tgz . && mv /tmp/all.tgz "$out/all.tgz"; }
pack
# CUDA identical to the CPU engine, software and NVDEC decode (the first 60 frames).
for dec in software nvdec; do
  for dev in cpu cuda auto; do
    t 120 $d/convstream-new run --no-progress -y -i /tmp/c1080.mp4 --frames 60 -o /tmp/p-$dec-$dev.y4m --mask $mask --decoder $dec --device $dev > /dev/null 2>> "$out/err.txt"
  done
  echo "$dec: $(md5sum /tmp/p-$dec-cpu.y4m | cut -c1-12) cpu, $(md5sum /tmp/p-$dec-cuda.y4m | cut -c1-12) cuda, $(md5sum /tmp/p-$dec-auto.y4m | cut -c1-12) auto" >> "$out/parity.txt"
done
cmp /tmp/p-software-cuda.y4m /tmp/p-nvdec-cuda.y4m >> "$out/parity.txt" 2>&1 && echo "software and NVDEC decode: identical output" >> "$out/parity.txt"
RUST_LOG=debug t 60 $d/convstream-new run --no-progress -i /tmp/c1080-25.mp4 -o null --mask $mask --device cuda --decoder nvdec > "$out/log-new-nvdec.txt" 2>&1
RUST_LOG=debug t 60 $d/convstream-new run --no-progress -i /tmp/c1080-25.mp4 -o null --mask $mask --device cuda > "$out/log-new-sw.txt" 2>&1
# A whole clip through the new binary: frames filtered on the CPU first, then the GPU, all
# identical to the CPU engine's.
t 120 $d/convstream-new run --no-progress -y -i /tmp/c1080.mp4 -o /tmp/w-cuda.y4m --mask $mask --device cuda --stats-json "$out/whole-cuda.json" > "$out/whole-cuda.log" 2>&1
t 120 $d/convstream-new run --no-progress -y -i /tmp/c1080.mp4 -o /tmp/w-cpu.y4m --mask $mask --device cpu > /dev/null 2>&1
cmp /tmp/w-cpu.y4m /tmp/w-cuda.y4m > "$out/whole-parity.txt" 2>&1 && echo "250 frames, CPU then GPU: identical to the CPU engine" >> "$out/whole-parity.txt"
t 300 $d/it gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool gpu::missing_gpu gpu::pictures_with_an_output_on_the_gpu_stay_there gpu::gpu_parity_at_high_bit_depths --include-ignored > "$out/gpu-tests.txt" 2>&1
echo "gpu tests exit $?" >> "$out/gpu-tests.txt"
ulimit -n 65536 2>/dev/null
t 200 $d/convstream-new bench --suite scale --device cuda --decoder nvdec --input /tmp/c1080.mp4 --pipelines 48,56 --scale-seconds 6 --out /tmp/scale > "$out/scale-nvdec.log" 2>&1
echo "scale exit $?" >> "$out/scale-nvdec.log"; cp /tmp/scale/results.md "$out/scale-nvdec.md" 2>/dev/null
pack
cat "$out/summary.txt"
