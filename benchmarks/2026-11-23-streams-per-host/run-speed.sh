#!/usr/bin/env bash
# FFmpeg's CLI (same source, same flags) against convstream (before and after): decode-only
# against 13x13 on all planes to null, software and NVDEC, 1080p and 2160p, and a transcode
# to mpeg4. Three rounds, alternating. Wall-clock rates include each program's start-up;
# "steady" rates exclude it (FFmpeg: -benchmark's rtime; convstream: its stats' fps).
set -uo pipefail
d=gpu-carry; out=/tmp/speed-out; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
{ nvidia-smi -L; nproc; $d/ffmpeg -hide_banner -version | head -1; } > "$out/host.txt" 2>&1
tmp=/tmp/speed; mkdir -p $tmp
$d/ffmpeg -v error -y -stream_loop 9 -i $d/clip1080.mp4 -c copy $tmp/c1080.mp4
$d/ffmpeg -v error -y -stream_loop 3 -i $d/clip2160.mp4 -c copy $tmp/c2160.mp4
now() { date +%s.%N; }
ff() { # label frames args...
  local label=$1 n=$2; shift 2
  local s=$(now); timeout -k 5 120 $d/ffmpeg -hide_banner -benchmark "$@" > $tmp/ff.log 2>&1; local rc=$?; local e=$(now)
  local rt=$(grep -o 'rtime=[0-9.]*' $tmp/ff.log | tail -1 | cut -d= -f2)
  awk -v l="$label" -v rc=$rc -v n=$n -v s=$s -v e=$e -v rt=${rt:-0} 'BEGIN{printf "%s rc=%d wall=%.0f steady=%.0f\n", l, rc, n/(e-s), (rt>0? n/rt : 0)}'
}
cs() { # label frames binary args...
  local label=$1 n=$2 b=$3; shift 3
  local s=$(now); timeout -k 5 120 $d/convstream-$b run --no-progress --stats-json $tmp/cs.json "$@" > $tmp/cs.log 2>&1; local rc=$?; local e=$(now)
  local fps=$(python3 -c "import json;print(json.load(open('$tmp/cs.json'))['pipelines'][0]['fps'])" 2>/dev/null)
  awk -v l="$label" -v rc=$rc -v n=$n -v s=$s -v e=$e -v f=${fps:-0} 'BEGIN{printf "%s rc=%d wall=%.0f steady=%.0f\n", l, rc, n/(e-s), f}'
}
mask=gaussian:size=13,sigma=3
$d/convstream run -i $d/clip1080.mp4 -o null --mask $mask --device cuda --no-progress >/dev/null 2>&1 # warm the kernel cache
for res in 1080 2160; do
  n=$([ $res = 1080 ] && echo 2500 || echo 800)
  c=$tmp/c$res.mp4
  for round in 1 2 3; do
    ff "r$round $res sw ffmpeg-decode" $n -i $c -map 0:v -f null -
    for b in old new; do cs "r$round $res sw cs-$b-13x13" $n $b -i $c -o null --mask $mask --device cuda; done
    ff "r$round $res nvdec ffmpeg-decode" $n -c:v h264_cuvid -i $c -map 0:v -f null -
    for b in old new; do cs "r$round $res nvdec cs-$b-13x13" $n $b -i $c -o null --mask $mask --device cuda --decoder nvdec; done
  done
done
for round in 1 2 3; do
  ff "r$round 1080 tx ffmpeg-mpeg4" 2500 -y -i $tmp/c1080.mp4 -map 0:v -c:v mpeg4 $tmp/ff.mkv
  for b in old new; do cs "r$round 1080 tx cs-$b-13x13-mpeg4" 2500 $b -y -i $tmp/c1080.mp4 -o $tmp/cs.mkv --mask $mask --device cuda; done
done
