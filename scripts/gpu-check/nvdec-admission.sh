#!/usr/bin/env bash
# nvdec-admission: NVDEC admission with no seats setting (32 NVDEC + 32 software, then 56 NVDEC pipelines)
#
# NVDEC admission with no seats setting, on one GPU host: one `serve` per config, each from a
# fresh process, pipelines looping a 1080p25 H.264 clip in real time into null sinks.
#   a) 32 NVDEC + 32 software pipelines      b) 56 NVDEC pipelines
# Per config: seconds to /readyz 200 (limit 75 s) or its body when it never was, the body
# once ready, frames dropped in the 15 s after ready, RSS then, the seats (/metrics), states
# and waits (/pipelines), and what admission logged (seats held back or learned). Each
# config takes under two minutes.
#
#   scripts/gpu-check.sh nvdec-admission DIST CLIP        results in $OUT (or ./nvdec-admission-results)
# DIST holds the stripped portable `convstream`; CLIP is a 1080p25 H.264 file
# (scripts/gpu-check.sh nvdec-oversubscribe --make-clip makes one).
set -uo pipefail
dist="$(cd "$1" && pwd)" clip="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
bin="$dist/convstream"
out="$(mkdir -p "${OUT:-./nvdec-admission-results}" && cd "${OUT:-./nvdec-admission-results}" && pwd)"
log="$out/summary.log"
port=18690
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee -a "$log"
"$bin" doctor 2>&1 | grep -i nvdec | tee -a "$log"

pipelines() { # NAME_PREFIX COUNT DECODER
    for i in $(seq "$2"); do
        printf '[[pipeline]]\nname = "%s%s"\n[pipeline.source]\nurl = "%s"\ndecoder = "%s"\nloop = true\nrealtime = true\ndrop = "oldest"\n' "$1" "$i" "$clip" "$3"
        printf '[pipeline.filter]\nmask = "gaussian:size=13,sigma=3"\ndevice = "cuda"\n[pipeline.sink]\nurl = "null"\n'
    done
}

report() { # FILE: seats, drops, states, waits and the process's RSS now
    python3 - "$port" "$pid" >"$1" 2>>"$log" <<'EOF'
import collections, json, sys, urllib.request
port, pid = sys.argv[1], sys.argv[2]
get = lambda path: urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read().decode()
metrics = get("/metrics")
seats = [l for l in metrics.splitlines() if l.startswith("convstream_nvdec_")]
dropped = sum(float(l.split()[-1]) for l in metrics.splitlines() if l.startswith("convstream_frames_dropped"))
listed = json.loads(get("/pipelines"))
listed = listed.get("pipelines", []) if isinstance(listed, dict) else listed
rss_kb = next((int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")), 0)
print(json.dumps({
    "seats": seats, "dropped_total": dropped, "rss_mb": round(rss_kb / 1024, 1),
    "rss_mb_per_pipeline": round(rss_kb / 1024 / max(1, len(listed)), 1),
    "states": collections.Counter(p.get("state") for p in listed),
    "devices": collections.Counter(str(p.get("device")) for p in listed),
    "waiting_for": collections.Counter(p.get("waiting_for") for p in listed if p.get("waiting_for")),
    "fps_min": min((p.get("fps") or 0 for p in listed), default=0),
}, indent=1))
EOF
}

check() { # LABEL NVDEC SOFTWARE
    local label=$1 dir="$out/$1"
    mkdir -p "$dir" && cd "$dir" || return
    {
        printf '[server]\nlisten = "127.0.0.1:%s"\nshutdown_timeout = 20.0\nwatch = false\nmax_pipelines = 128\n' "$port"
        pipelines nv "$2" nvdec
        pipelines sw "$3" software
    } >serve.toml
    "$bin" serve --config serve.toml >serve.log 2>&1 &
    pid=$!
    local started=$SECONDS ready="" code
    while ((SECONDS - started < 75)); do
        sleep 0.2
        code=$(curl -s -o readyz.json -w '%{http_code}' "http://127.0.0.1:$port/readyz") || continue
        [[ $code == 200 ]] && { ready=$((SECONDS - started)); break; }
    done
    echo "== $label ($2 NVDEC + $3 software): /readyz ${ready:+200 after ${ready} s}${ready:-not 200 within 75 s}" | tee -a "$log"
    echo "readyz body: $(cut -c1-1500 readyz.json)" | tee -a "$log"
    report before.json
    [[ -n $ready ]] && sleep 15
    report after.json
    python3 - <<'EOF' | tee -a "$log"
import json
a, b = json.load(open("before.json")), json.load(open("after.json"))
print("frames dropped in the 15 s after ready:", b["dropped_total"] - a["dropped_total"])
print(json.dumps({k: b[k] for k in ("rss_mb", "rss_mb_per_pipeline", "states", "waiting_for", "fps_min", "seats")}))
EOF
    kill -TERM "$pid"
    local stop=$SECONDS
    wait "$pid"
    echo "SIGTERM: exit $? after $((SECONDS - stop)) s" | tee -a "$log"
    grep -iE "panic|SIGSEGV" serve.log | head -3 | tee -a "$log"
    grep -iE "NVDEC (seat|pipelines fell)|seats learned|holds while" serve.log | head -5 | tee -a "$log"
    cd "$out" || return
}

check a-32nvdec-32software 32 32
check b-56nvdec 56 0
