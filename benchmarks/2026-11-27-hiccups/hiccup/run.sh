#!/usr/bin/env bash
# A full host's serve with the process stopped on purpose for 0.3 s, then 1 s: what a brief
# hiccup of the host costs (per-second.txt shows drops, pool fallbacks and growth around each).
set -u
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
mkdir -p "$OUT/r"
OUT="$OUT/r" timeout -k 5 170 scripts/host-fill-check.sh /tmp/convstream gpu-carry/clip1080.mp4 "${NV:-12}" "${SW:-36}" 10 55 >"$OUT/check.log" 2>&1 &
for _ in $(seq 120); do ls "$OUT"/r/*/per-second.txt >/dev/null 2>&1 && break; sleep 1; done
stop_for() {
    sleep "$2"
    pid=$(pgrep -f "convstream serve" | head -1)
    echo "$(date -u +%T.%N | cut -c1-12) stop $1 s" >>"$OUT/stops.txt"
    kill -STOP "$pid"; sleep "$1"; kill -CONT "$pid"
}
stop_for 0.3 12
stop_for 1.0 20
wait
tar czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$OUT/r"
