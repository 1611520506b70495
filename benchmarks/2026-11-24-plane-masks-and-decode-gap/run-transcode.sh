#!/usr/bin/env bash
# Transcode with the filter against FFmpeg's CLI with the same encoder and settings (mpeg4,
# fixed quantiser 2, FFmpeg without a filter), convstream before (prev: the encoder given a
# copy of each frame) and after (the frame's own planes); three rounds, alternating. Then
# per-plane chroma masks on NVDEC's NV12 pictures (converted to yuv420p), GPU against CPU.
set -uo pipefail
d=gpu-carry; out=${OUT:-/tmp/out}; mkdir -p "$out"; tmp=/tmp/tx; mkdir -p $tmp
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
$d/ffmpeg -v error -y -stream_loop 9 -i $d/clip1080.mp4 -c copy $tmp/c1080.mp4
mask=gaussian:size=13,sigma=3
$d/convstream run -y --no-progress -i $d/clip1080.mp4 --frames 50 -o null --mask $mask --device cuda > /dev/null 2>&1
now() { date +%s.%N; }
{
for round in 1 2 3; do
  timeout -k 5 120 $d/ffmpeg -hide_banner -benchmark -y -i $tmp/c1080.mp4 -map 0:v -c:v mpeg4 -q:v 2 $tmp/ff.mkv > $tmp/ff.log 2>&1
  rt=$(grep -o 'rtime=[0-9.]*' $tmp/ff.log | tail -1 | cut -d= -f2); echo "r$round ffmpeg-mpeg4-q2 steady=$(awk -v rt=${rt:-0} 'BEGIN{printf "%.0f", (rt>0? 2500/rt : 0)}')"
  for b in prev new; do
    timeout -k 5 120 $d/convstream-$b run -y --no-progress --stats-json $tmp/$b.json -i $tmp/c1080.mp4 -o $tmp/cs.mkv --codec mpeg4 --mask $mask --device cuda > $tmp/$b.log 2>&1
    echo "r$round cs-$b-13x13-mpeg4 $(python3 -c "import json;p=json.load(open('$tmp/$b.json'))['pipelines'][0];print('fps=%.0f encode=%.2f' % (p['fps'], p['sink_seconds']))")"
  done
done
grep -h "output:" $tmp/new.log | tail -1
} > "$out/transcode.txt" 2>&1
{
for dec in nvdec software; do
  for dev in cuda cpu; do
    timeout -k 5 120 $d/convstream run -y --no-progress -i $d/clip1080.mp4 --frames 60 --decoder $dec --device $dev \
      --mask gaussian:size=7 --plane-mask y=prewitt --plane-mask u=edge:bias=128 --plane-mask v=box:size=9 -o $tmp/$dec-mix-$dev.y4m > $tmp/$dec-$dev.log 2>&1 || echo "FAILED $dec $dev: $(tail -3 $tmp/$dec-$dev.log)"
  done
  cmp $tmp/$dec-mix-cuda.y4m $tmp/$dec-mix-cpu.y4m && echo "per-plane mix $dec: cuda == cpu ($(stat -c %s $tmp/$dec-mix-cuda.y4m) bytes)"
  grep -h "converted\|PCIe" $tmp/$dec-cuda.log
done
} > "$out/nv12-planar.txt" 2>&1
