#!/usr/bin/env bash
# hiccup: a full `serve` stopped (SIGSTOP) for a moment: drops, memory and page-locked blocks after each stop
#
# What a brief hiccup of the host costs a full `serve`: scripts/gpu-check.sh host-fill runs NVDEC
# and software pipelines (looping CLIP in real time, 13x13 Gaussian on the GPU, drop =
# "oldest", null sinks) and, once the soak's per-second counts run, the process is stopped on
# purpose (SIGSTOP, then SIGCONT) for each of STOPS seconds, 20 s apart: what a paused virtual
# machine or a CPU-steal blip does to it. For each stop, over the 18 s after it: frames dropped
# and late by kind of pipeline, planes that went to ordinary memory, page-locked blocks
# allocated, the RSS's peak (hiccups.txt). A stop of 0.3 s puts a real-time pipeline 8 frames
# behind at 25 fps; more than that dropped means the catching up cost more than the stop.
#   scripts/gpu-check.sh hiccup BINARY CLIP NVDEC SOFTWARE [STOPS (0.3 1.0)]
#       results in $OUT/hiccup-<binary name>/ (or ./hiccup-results/...); BINARY may be .xz
set -u
bin="$1" clip="$2" nvdec="$3" software="$4"
shift 4
stops=("$@")
(($# == 0)) && stops=(0.3 1.0)
out="${OUT:-./hiccup-results}/hiccup-$(basename "${bin%.xz}")"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
if [[ $bin == *.xz ]]; then
    xz -dc "$bin" >"$out/convstream" && chmod +x "$out/convstream" && bin="$out/convstream"
fi
soak=$((20 * ${#stops[@]} + 15))
OUT="$out" timeout -k 5 $((soak + 150)) "$(dirname "$0")/host-fill.sh" "$bin" "$clip" "$nvdec" "$software" 10 "$soak" \
    >"$out/check.log" 2>&1 &
check=$!
seconds=""
for _ in $(seq 150); do
    seconds=$(ls "$out"/host-fill-*/per-second.txt 2>/dev/null) && break
    sleep 1
done
[[ -n $seconds ]] || { echo "the soak never began: $(tail -n 3 "$out/check.log")"; exit 1; }
began=$(date +%s.%N)
since() { awk -v now="$(date +%s.%N)" -v began="$began" 'BEGIN { printf "%.1f", now - began }'; }
: >"$out/stops.txt"
for stop in "${stops[@]}"; do
    sleep 5
    pid=$(pgrep -f "$bin serve" | head -1)
    at=$(since)
    kill -STOP "$pid" && sleep "$stop" && kill -CONT "$pid"
    echo "$at $stop" >>"$out/stops.txt"
    sleep 15
done
wait "$check"
rm -f "$out/convstream"
python3 - "$seconds" "$out/stops.txt" <<'PY' | tee "$out/hiccups.txt"
import collections, sys
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "s":
        continue
    # s kind decoded late dropped allocations releases fallbacks pinned_mb rss_mb
    rows[int(f[0])][f[1]] = [int(v) for v in f[2:]]
stops = [tuple(map(float, line.split())) for line in open(sys.argv[2])]
print("stop (s): over the 18 s after it, by kind: dropped, late, planes in ordinary memory, page-locked blocks allocated; peak RSS (MB) against the RSS before")
for at, length in stops:
    before = max(s for s in rows if s <= at)
    after = max(s for s in rows if s <= at + 18)
    parts = []
    for kind in sorted(rows[before]):
        a, b = rows[before][kind], rows[after].get(kind, rows[before][kind])
        parts.append(f"{kind}: {b[2] - a[2]} dropped, {b[1] - a[1]} late, {b[5] - a[5]} ordinary, {b[3] - a[3]} allocated")
    peak = max(next(iter(rows[s].values()))[-1] for s in rows if before <= s <= after)
    rss = next(iter(rows[before].values()))[-1]
    print(f"{length:.1f}: " + "; ".join(parts) + f"; RSS {rss} -> peak {peak}")
PY
