#!/usr/bin/env bash
# paced NAME THREADS [--trace]: one 600-frame 1080p run paced at 30 fps (software decode,
# 13x13 gaussian, 4 streams x 2, null sink) with stats JSON and per-thread scheduling counts.
name="$1" threads="$2"; shift 2
cat > "$R/$name.toml" <<TOML
[[pipeline]]
name = "paced"
[pipeline.source]
url = "media/h264-1080p-600.mp4"
decoder = "software"
threads = $threads
realtime = true
[pipeline.filter]
mask = "gaussian:size=13,sigma=3"
device = "${DEVICE:-cuda}"
streams = 4
[pipeline.sink]
url = "null"
TOML
trace=()
[[ "${1:-}" == --trace ]] && trace=(--trace "$R/$name-trace.json")
./convstream run --config "$R/$name.toml" --no-progress --stats-json "$R/$name.json" "${trace[@]}" > "$R/$name.log" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null; do
    snapshot=$(for t in /proc/$pid/task/*; do printf '%s %s %s\n' "$(cat $t/comm 2>/dev/null)" \
        "$(grep -h voluntary_ctxt_switches $t/status 2>/dev/null | tr '\n' ' ')" "$(awk '{print "cpu="$39}' $t/stat 2>/dev/null)"; done)
    [[ -n "$snapshot" ]] && echo "$snapshot" > "$R/$name-threads.txt"
    sleep 0.5
done
wait $pid; echo "exit $?" >> "$R/$name.log"
python3 - "$R/$name.json" <<'PY' | tee -a "$R/summary.txt"
import json, sys
p = json.load(open(sys.argv[1]))['pipelines'][0]
name = sys.argv[1].rsplit('/', 1)[-1][:-5]
print(f"{name}: p50 {p['latency_p50_ms']:.3f} p99 {p['latency_p99_ms']:.3f} frames {p['frames_out']}")
for f in p['latency_slowest']:
    parts = ' '.join(f"{k[:-3]}={f[k]:.3f}" for k in ('waited_ms','submit_ms','engine_ms','gpu_ms','handoff_ms') if f.get(k) is not None)
    print(f"   #{f['frame']} {f['ms']:.3f}: {parts}")
PY
