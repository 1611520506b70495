#!/usr/bin/env bash
# nvdec-seats: NVDEC seats over every GPU of a host, COUNT NVDEC pipelines in one `serve`
#
# NVDEC seats over every GPU of a host, in one `serve`: COUNT paced NVDEC pipelines looping a
# 1080p H.264 clip (made with scripts/gpu-check.sh nvdec-oversubscribe --make-clip) into null sinks.
# Reports how long /readyz took to turn 200 (or its body when it did not, within 90 s), the
# seats each GPU took and carries (/metrics), the GPU each pipeline runs on, how many wait and
# why, and the frames dropped in the 10 s after ready; then SIGTERM (exit 0 expected).
#
#   scripts/gpu-check.sh nvdec-seats DIST CLIP COUNT      results in $OUT (or ./nvdec-seats-results)
set -uo pipefail
dist="$(cd "$1" && pwd)" clip="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" count="$3"
bin="$dist/convstream"
out="$(mkdir -p "${OUT:-./nvdec-seats-results}" && cd "${OUT:-./nvdec-seats-results}" && pwd)"
log="$out/nvdec-seats.log"
work="$(mktemp -d)" && cd "$work" || exit 1
port=18689
{
    printf '[server]\nlisten = "127.0.0.1:%s"\nshutdown_timeout = 20.0\nwatch = false\n' "$port"
    for i in $(seq "$count"); do
        printf '[[pipeline]]\nname = "cam%s"\n[pipeline.source]\nurl = "%s"\ndecoder = "nvdec"\nloop = true\nrealtime = true\ndrop = "oldest"\n' "$i" "$clip"
        printf '[pipeline.filter]\nmask = "gaussian:size=13,sigma=3"\ndevice = "cuda"\n[pipeline.sink]\nurl = "null"\n'
    done
} >serve.toml
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee -a "$log"
"$bin" doctor 2>&1 | grep -i nvdec | tee -a "$log"
"$bin" serve --config serve.toml >serve.log 2>&1 &
pid=$!
started=$SECONDS ready=""
for _ in $(seq 900); do
    sleep 0.1
    code=$(curl -s -o readyz.json -w '%{http_code}' "http://127.0.0.1:$port/readyz") || continue
    [[ $code == 200 ]] && { ready=$((SECONDS - started)); break; }
    ((SECONDS - started >= 90)) && break
done
echo "count $count: /readyz ${ready:+200 after ${ready} s}${ready:-not 200 within 90 s}" | tee -a "$log"
echo "readyz body: $(cut -c1-600 readyz.json)" | tee -a "$log"
report() {
    python3 - "$port" <<'EOF'
import collections, json, sys, urllib.request
port = sys.argv[1]
metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
seats = [l for l in metrics.splitlines() if l.startswith("convstream_nvdec_")]
dropped = sum(float(l.split()[-1]) for l in metrics.splitlines() if l.startswith("convstream_frames_dropped"))
pipelines = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/pipelines", timeout=10))
if isinstance(pipelines, dict):
    pipelines = pipelines.get("pipelines", list(pipelines.values()))
devices = collections.Counter(str(p.get("device")) for p in pipelines)
states = collections.Counter(p.get("state") for p in pipelines)
waiting = collections.Counter(p.get("waiting_for") for p in pipelines if p.get("waiting_for"))
print(json.dumps({"seats": seats, "dropped_total": dropped, "devices": devices, "states": states,
                  "waiting_for": waiting}, indent=1))
EOF
}
report >before.json 2>>"$log"; sleep 10; report >after.json 2>>"$log"
cat after.json | tee -a "$log"
python3 -c "import json; a=json.load(open('before.json')); b=json.load(open('after.json')); print('frames dropped in the 10 s after:', b['dropped_total']-a['dropped_total'])" | tee -a "$log"
kill -TERM "$pid"; stop=$SECONDS
wait "$pid"; code=$?
echo "SIGTERM: exit $code after $((SECONDS - stop)) s" | tee -a "$log"
grep -iE "panic|SIGSEGV" serve.log | head -3 | tee -a "$log"
grep -i "nvdec" serve.log | grep -iE "warn|wait" | head -3 | tee -a "$log"
cp serve.log "$out/serve.log"
rm -rf "$work"
