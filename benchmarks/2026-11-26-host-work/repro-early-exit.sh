#!/usr/bin/env bash
# Exit codes of short runs that end before the GPU is ready (and of streams=8 runs).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
export RUST_BACKTRACE=1
cs=$d/${NEW:-convstream-new}; mask=gaussian:size=13,sigma=3
cp $d/clips/bbb1080.mp4 /tmp/bbb.mp4
$cs run --no-progress -i /tmp/bbb.mp4 --frames 10 -o null --mask $mask --device cuda > /dev/null 2>&1
for i in $(seq 1 12); do
  for args in "--frames 3" "--frames 3 --streams 8" "--frames 30" "--streams 8" "--frames 3 -y -o /tmp/x.y4m"; do
    o="-o null"; [[ "$args" == *x.y4m* ]] && o=""
    s=$(date +%s.%N)
    timeout -k 5 30 $cs run --no-progress -i /tmp/bbb.mp4 $o $args --mask $mask --device cuda > /tmp/r.out 2> /tmp/r.err; rc=$?
    echo "$i [$args] wall=$(python3 -c "print(round($(date +%s.%N)-$s,3))") rc=$rc" >> "$out/rcs.txt"
    if [ $rc != 0 ]; then echo "=== $i [$args] rc=$rc" >> "$out/fail.txt"; tail -30 /tmp/r.err >> "$out/fail.txt"; fi
  done
done
grep -o "rc=[-0-9]*" "$out/rcs.txt" | sort | uniq -c
python3 - "$out/rcs.txt" <<'PY'
import re, sys, statistics as st
walls = {}
for line in open(sys.argv[1]):
    m = re.match(r"\d+ \[(.*)\] wall=([\d.]+) rc=", line)
    if m: walls.setdefault(m.group(1), []).append(float(m.group(2)))
for args, w in walls.items(): print(f"[{args}] wall median {st.median(w):.3f} s over {len(w)}")
PY
grep -c "rc=0" "$out/rcs.txt"; grep -v "rc=0" "$out/rcs.txt" | head; head -60 "$out/fail.txt" 2>/dev/null
