#!/usr/bin/env bash
# The software decode gap, narrowed: FFmpeg's CLI decode-only against convstream's filtered
# run with the default 13x13 on every plane, with 1x1 identity on luma only (the least GPU
# and copy work), and with 13x13 and 14 decoder threads (two cores left to the pipeline's
# own threads). Three rounds, alternating.
set -uo pipefail
d=gpu-carry; tmp=/tmp/fid; mkdir -p $tmp
[ -f $tmp/c1080.mp4 ] || $d/ffmpeg -v error -y -stream_loop 9 -i $d/clip1080.mp4 -c copy $tmp/c1080.mp4
cat > $tmp/t14.toml <<TOML
[[pipeline]]
name = "t14"
source = { url = "$tmp/c1080.mp4", threads = 14 }
filter = { mask = "gaussian:size=13,sigma=3", device = "cuda" }
sink = { url = "null" }
TOML
fps() { python3 -c "import json;p=json.load(open('$1'))['pipelines'][0];print('fps=%.0f src=%.2f' % (p['fps'], p['source_seconds']))"; }
for round in 1 2 3; do
  timeout -k 5 120 $d/ffmpeg -hide_banner -benchmark -i $tmp/c1080.mp4 -map 0:v -f null - > $tmp/ff.log 2>&1
  rt=$(grep -o 'rtime=[0-9.]*' $tmp/ff.log | tail -1 | cut -d= -f2); echo "r$round ffmpeg-decode steady=$(awk -v rt=${rt:-0} 'BEGIN{printf "%.0f", (rt>0? 2500/rt : 0)}')"
  timeout -k 5 120 $d/convstream run --no-progress --stats-json $tmp/a.json -i $tmp/c1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda > /dev/null 2>&1; echo "r$round cs-13x13-all $(fps $tmp/a.json)"
  timeout -k 5 120 $d/convstream run --no-progress --stats-json $tmp/b.json -i $tmp/c1080.mp4 -o null --mask identity --planes luma --device cuda > /dev/null 2>&1; echo "r$round cs-identity-luma $(fps $tmp/b.json)"
  timeout -k 5 120 $d/convstream run --no-progress --stats-json $tmp/c.json --config $tmp/t14.toml > /dev/null 2>&1; echo "r$round cs-13x13-threads14 $(fps $tmp/c.json)"
done
