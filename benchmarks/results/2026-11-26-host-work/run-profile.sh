#!/usr/bin/env bash
# Where a whole `convstream run` spends its time against FFmpeg's CLI decoding alone: wall and
# CPU time of each command (rounds alternating), a debug-log timeline, a CUDA process's exit
# cost, and a sampled profile when `perf` is there.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
{ nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; which perf strace gdb ltrace; } > "$out/host.txt" 2>&1
mask=gaussian:size=13,sigma=3
# The textured clip: the picture generator of scripts/gpu-check.sh startup --make-media, 250 frames.
sed -n '/^import sys$/,/^EOF$/{/^EOF$/!p}' scripts/gpu-check.sh startup | t 120 python3 - /tmp/c.y4m 1920 1080 250 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c.y4m -c:v libopenh264 -b:v 8M /tmp/c250.mp4 2>> "$out/err.txt"; rm -f /tmp/c.y4m
t 60 $d/ffmpeg -v error -y -stream_loop 3 -i /tmp/c250.mp4 -c copy /tmp/c1000.mp4 2>> "$out/err.txt"
cs=$d/convstream-base
$cs run --no-progress -i /tmp/c250.mp4 --frames 10 -o null --mask $mask --device cuda > /dev/null 2>&1   # kernel cache
for c in c250 c1000; do
t 900 python3 "$here/timeline.py" 3 >> "$out/walls.jsonl" 2>> "$out/err.txt" <<CMDS
$c ffmpeg=$d/ffmpeg -hide_banner -nostdin -i /tmp/$c.mp4 -map 0:v -f null -
$c version=$cs --version
$c cpu-identity=$cs run --no-progress -i /tmp/$c.mp4 -o null --mask identity --device cpu
$c cuda-identity=$cs run --no-progress -i /tmp/$c.mp4 -o null --mask identity --device cuda
$c cuda-13=$cs run --no-progress --stats-json /tmp/s-$c.json -i /tmp/$c.mp4 -o null --mask $mask --device cuda
CMDS
done
cp /tmp/s-c250.json /tmp/s-c1000.json "$out/" 2>/dev/null
# A timeline: debug log stamped to the millisecond, between two clock readings.
{ date +%H:%M:%S.%N; CONVSTREAM_LOG=debug t 60 $cs run --no-progress -i /tmp/c250.mp4 -o null --mask $mask --device cuda 2>&1; date +%H:%M:%S.%N; } > "$out/timeline.txt"
t 120 python3 "$here/exit_probe.py" > "$out/exit.txt" 2>&1
if command -v perf > /dev/null; then
  t 60 perf record -F 1999 -g -o /tmp/perf.data -- $cs run --no-progress -i /tmp/c1000.mp4 -o null --mask $mask --device cuda > /dev/null 2>&1
  perf report -i /tmp/perf.data --stdio --no-children --sort comm,dso,sym 2>/dev/null | grep -v "^$" | head -150 > "$out/perf-cs.txt"
  perf report -i /tmp/perf.data --stdio --no-children --sort comm 2>/dev/null | head -40 > "$out/perf-cs-threads.txt"
  t 60 perf record -F 1999 -g -o /tmp/perf2.data -- $d/ffmpeg -hide_banner -nostdin -i /tmp/c1000.mp4 -map 0:v -f null - > /dev/null 2>&1
  perf report -i /tmp/perf2.data --stdio --no-children --sort comm,dso,sym 2>/dev/null | grep -v "^$" | head -80 > "$out/perf-ff.txt"
fi
python3 - "$out/walls.jsonl" > "$out/summary.txt" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
labels = []
[labels.append(r["label"]) for r in rows if r["label"] not in labels]
for l in labels:
    rs = [r for r in rows if r["label"] == l]
    print(f"{l:24} wall med {st.median(r['wall'] for r in rs):.3f} [{min(r['wall'] for r in rs):.3f}-{max(r['wall'] for r in rs):.3f}]  cpu med {st.median(r['user']+r['sys'] for r in rs):.2f}  rc {set(r['rc'] for r in rs)}")
PY
cat "$out/summary.txt" "$out/exit.txt" "$out/host.txt"; tail -5 "$out/err.txt" 2>/dev/null
