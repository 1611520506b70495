#!/usr/bin/env bash
# host-fill: a full host in one `serve`: readiness, drops, memory, seats, and a soak with SOAK seconds
#
# A full host in one `serve`, as an operator runs it: NVDEC pipelines and software-decoded
# pipelines looping a 1080p25 H.264 clip (scripts/gpu-check.sh nvdec-oversubscribe --make-clip
# FILE 100) in real time, a 13x13 Gaussian on every plane on the GPU, drop = "oldest", null
# sinks. Reports:
# - how long /readyz took to turn 200, and what it said until then;
# - frames dropped over the WINDOW seconds after ready (0 is the target), and the fps;
# - the process's RSS (also by kind of mapping, from /proc/PID/smaps) and page-locked memory,
#   per pipeline; GPU memory (nvidia-smi);
# - NVDEC seats per GPU (/metrics) and where the pipelines run;
# - with SOAK seconds: RSS and GPU memory sampled every 10 s over that time, and their change from
#   minute 5 to the end (the soak target: within 1%, 0 drops) as medians of its first and last two
#   minutes and as a fitted line; and once a second the pipelines' counts by kind, the host's CPU
#   and the GPUs' use (per-second.txt, vmstat.txt, gpu-per-second.csv);
#   scripts/gpu-check/stall-probe.py beside it, in a process of its own (probes.txt: did the
#   host or a GPU stand still?); scripts/gpu-check/thread-sampler.py (threads.txt: where serve's
#   threads wait, twice a second); at the end every pipeline's view (at-end-pipelines.json:
#   slowest frames, frames held up) and the log's warnings (warnings.log: held-up frames, the
#   process standing still).
# Its results (summary.log) grow as it runs, so a soak longer than one device call (10 min) runs
# under setsid with OUT on the machine's own disk, e.g.
#   OUT=/var/tmp/soak setsid nohup scripts/gpu-check.sh host-fill BIN CLIP 24 80 30 1800 >/dev/null 2>&1 </dev/null &
# and later calls, each made within the machine's idle window of the last, read
# /var/tmp/soak/*/summary.log and copy the folder to $OUT once "SIGTERM:" is in it
# (scripts/gpu-check.sh host-soak does all of this).
# Then SIGTERM (exit 0 expected). SERVER='nvdec_seats_per_gpu = 49' adds [server] settings,
# FILTER='streams = 2' settings to every pipeline's [pipeline.filter];
# DEVICE=cpu MASK=identity check the script itself on any host.
#
#   scripts/gpu-check.sh host-fill BINARY CLIP NVDEC SOFTWARE [WINDOW] [SOAK]
#       results in $OUT/host-fill-NVDEC-SOFTWARE-<binary name>/ (or ./host-fill-results)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
clip="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
nvdec="$3" software="$4" window="${5:-20}" soak="${6:-0}"
out="${OUT:-./host-fill-results}/host-fill-$nvdec-$software-$(basename "$bin")"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
log="$out/summary.log"
work="$(mktemp -d)" && cd "$work" || exit 1
port=18690
say() { echo "$*" | tee -a "$log"; }

pipeline() { # NAME DECODER
    printf '[[pipeline]]\nname = "%s"\n[pipeline.source]\nurl = "%s"\ndecoder = "%s"\n' "$1" "$clip" "$2"
    printf 'loop = true\nrealtime = true\ndrop = "oldest"\n'
    printf '[pipeline.filter]\nmask = "%s"\ndevice = "%s"\n%b\n[pipeline.sink]\nurl = "null"\n' "${MASK:-gaussian:size=13,sigma=3}" "${DEVICE:-cuda}" "${FILTER:-}"
}
{
    printf '[server]\nlisten = "127.0.0.1:%s"\nshutdown_timeout = 30.0\nwatch = false\n%b\n' "$port" "${SERVER:-}"
    for i in $(seq 1 "$nvdec"); do pipeline "nv$i" nvdec; done
    for i in $(seq 1 "$software"); do pipeline "sw$i" software; done
} >serve.toml

say "== $(basename "$bin"): $nvdec NVDEC + $software software pipelines, $(nproc) cores${SERVER:+; [server] $SERVER}${FILTER:+; [pipeline.filter] $FILTER}"
nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader 2>&1 | tee -a "$log"
gpu_memory() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | awk "{s += \$1} END {print s + 0}"; }
idle_gpu=$(gpu_memory)
"$bin" serve --config serve.toml >serve.log 2>&1 &
pid=$!
started=$SECONDS ready="" noted=-1
# Until ready: once a second, how many pipelines wait for what (readyz-timeline.txt).
tally() {
    python3 -c 'import collections, json, re, sys
body = json.load(open("readyz.json"))
kinds = collections.Counter(re.sub(r"[0-9.]+", "N", re.split(r"[;(]", why)[0]).strip()
                            for why in body.get("not_ready", {}).values())
print(sys.argv[1], dict(kinds))' "$1" 2>/dev/null
}
for _ in $(seq 1800); do
    sleep 0.1
    kill -0 "$pid" 2>/dev/null || { say "serve ended before it was ready: $(tail -n 3 serve.log)"; exit 1; }
    code=$(curl -s -m 2 -o readyz.json -w '%{http_code}' "http://127.0.0.1:$port/readyz") || continue
    [[ $code == 200 ]] && { ready=$((SECONDS - started)); break; }
    ((SECONDS != noted)) && { noted=$SECONDS; tally $((SECONDS - started)) >>"$out/readyz-timeline.txt"; }
    ((SECONDS - started >= 120)) && break
done
if [[ -n $ready ]]; then
    say "/readyz: 200 after $ready s"
else
    say "/readyz: not 200 within 120 s; body: $(cut -c1-800 readyz.json)"
fi

snapshot() { # FILE [light]: counters, memory and seats now; light skips /proc/PID/smaps
    python3 - "$port" "$pid" "${2:-}" "${1%.json}-pipelines.json" >"$1" <<'EOF'
import collections, json, os, re, sys, time, urllib.request
port, pid, light = sys.argv[1], sys.argv[2], sys.argv[3] == "light"
get = lambda path: urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=20).read().decode()
metrics = get("/metrics")
pipelines = json.loads(get("/pipelines"))["pipelines"]
rss_kb = int(next(l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:")))
# Where the RSS lives: the heap and other anonymous memory, the GPU driver's mappings (page-locked
# blocks among them), files (the binary, libraries), thread stacks. Reading smaps walks every
# page of the process with its memory map locked, which stalls the process's own mapping and
# unmapping meanwhile: the soak's samples (light) leave it out.
rss_by_kind, rss_by_file, kind = collections.Counter(), collections.Counter(), None
for line in [] if light else open(f"/proc/{pid}/smaps"):
    head = line.split()
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
        name = " ".join(head[5:])
        kind = ("gpu driver" if name.startswith("/dev/nvidia") else "stack" if name.startswith("[stack")
                else "heap" if name == "[heap]" else "anonymous" if not name else "other" if name.startswith("[")
                else "file")
    elif head and head[0] == "Rss:":
        rss_by_kind[kind] += int(head[1]) / 1024
        if kind == "file":
            rss_by_file[name] += int(head[1]) / 1024
if not light:  # every pipeline's own view (stages' busy time, queues), for a closer look
    json.dump(pipelines, open(sys.argv[4], "w"))
threads = len(os.listdir(f"/proc/{pid}/task"))
counted = [p["counters"] for p in pipelines]
print(json.dumps({
    "time": time.monotonic(),
    "rss_mb": rss_kb / 1024,
    "rss_mb_by_kind": {k: round(v) for k, v in rss_by_kind.most_common()},
    "rss_mb_by_file": {k: round(v) for k, v in rss_by_file.most_common(4)},
    # Drops by pipeline, to tell NVDEC pipelines (nvN) from software ones (swN).
    "dropped_by_pipeline": {p["name"]: p["counters"]["frames_dropped"] for p in pipelines},
    "threads": threads,
    "dropped": sum(c["frames_dropped"] for c in counted),
    "written": sum(c["frames_written"] for c in counted),
    "pinned_mb": sum(c["pinned_bytes"] for c in counted) / 2**20,
    "lane_gpu_mb": sum(c.get("gpu_memory_bytes", 0) for c in counted) / 2**20,
    "ordinary_pool_mb": sum(c.get("ordinary_pool_bytes", 0) for c in counted) / 2**20,
    # The frame pools' blocks allocated and given back, and planes that went to ordinary memory.
    "pool": [sum(c.get(k, 0) for c in counted) for k in ("pool_allocations", "pool_releases", "pool_fallbacks")],
    "fps_mean": sum(p["fps"] for p in pipelines) / max(1, len(pipelines)),
    "states": collections.Counter(p["state"] for p in pipelines),
    "devices": collections.Counter(str(p.get("device")) for p in pipelines),
    "waiting_for": collections.Counter(p["waiting_for"] for p in pipelines if p.get("waiting_for")),
    "seats": [l for l in metrics.splitlines() if l.startswith("convstream_nvdec_seats")],
    "pinned_budget": [l for l in metrics.splitlines() if l.startswith("convstream_pinned_memory")],
}))
EOF
}
count=$((nvdec + software))
if snapshot at-ready.json; then
    sleep "$window"
    snapshot after-window.json
    python3 - "$count" "${ready:+after ready}" "$(gpu_memory)" "$idle_gpu" <<'EOF' | tee -a "$log"
import json, sys
count, when, gpu, idle = int(sys.argv[1]), sys.argv[2] or "never ready; after 120 s", float(sys.argv[3]), float(sys.argv[4])
a, b = json.load(open("at-ready.json")), json.load(open("after-window.json"))
elapsed = b["time"] - a["time"]
print(f"{when}, {elapsed:.1f} s: {b['dropped'] - a['dropped']} frames dropped, "
      f"{(b['written'] - a['written']) / elapsed / count:.1f} fps per pipeline (mean of the API's: {b['fps_mean']:.1f})")
print(f"RSS {b['rss_mb']:.0f} MB = {b['rss_mb'] / count:.1f} MB per pipeline; page-locked "
      f"{b['pinned_mb']:.0f} MB = {b['pinned_mb'] / count:.1f} MB per pipeline; lanes' GPU memory "
      f"{b['lane_gpu_mb']:.0f} MB; GPU memory used {gpu - idle:.0f} MiB over idle")
print(f"RSS by kind (MB): {b['rss_mb_by_kind']}; {b['threads']} threads; biggest files (MB): {b['rss_mb_by_file']}")
print(f"frame pools' ordinary memory: {a.get('ordinary_pool_mb', 0):.0f} MB at ready, {b.get('ordinary_pool_mb', 0):.0f} MB after")
dropped = {name: n - a["dropped_by_pipeline"].get(name, 0) for name, n in b["dropped_by_pipeline"].items()}
by_kind = {}
for name, n in dropped.items():
    kind = name.rstrip("0123456789")
    total, pipelines = by_kind.get(kind, (0, 0))
    by_kind[kind] = (total + n, pipelines + (n > 0))
print("dropped in that time by kind: " + ", ".join(f"{k}: {t} ({p} pipelines)" for k, (t, p) in sorted(by_kind.items())))
print(f"states {b['states']}, devices {b['devices']}, waiting {b['waiting_for']}")
for line in b["seats"] + b["pinned_budget"]:
    print("  " + line)
EOF
fi
# Once a second through the soak, into $out: what every kind of pipeline decoded, was late with
# and dropped, the frame pools' counts and page-locked memory, and the RSS (per-second.txt); the
# host's CPU, steal included (vmstat.txt); each GPU's use, clocks and PCIe traffic
# (gpu-per-second.csv). An event that lasts seconds shows which came first.
watch_each_second() { # SECONDS
    timeout "$1" vmstat -t 1 >"$out/vmstat.txt" 2>&1 &
    timeout -k 5 $(($1 + 30)) python3 "$here/stall-probe.py" "$1" >"$out/probes.txt" 2>&1 &
    timeout -k 5 "$1" python3 "$here/thread-sampler.py" "$pid" "$1" >"$out/threads.txt" 2>&1 &
    timeout "$1" nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.decoder,clocks.sm,pcie.link.gen.current \
        --format=csv,noheader -lms 1000 >"$out/gpu-per-second.csv" 2>&1 &
    timeout "$1" python3 - "$port" "$pid" >"$out/per-second.txt" 2>&1 <<'EOF' &
import collections, json, sys, time, urllib.request
port, pid = sys.argv[1], sys.argv[2]
keys = ("frames_decoded", "frames_late", "frames_dropped", "pool_allocations", "pool_releases", "pool_fallbacks")
print("s kind " + " ".join(keys) + " pinned_mb rss_mb", flush=True)
began = time.monotonic()
while True:
    time.sleep(1 - (time.monotonic() - began) % 1)
    try:
        pipelines = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/pipelines", timeout=2).read())["pipelines"]
        rss = int(next(l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))) // 1024
    except Exception:
        continue
    by = collections.defaultdict(lambda: [0] * (len(keys) + 1))
    for p in pipelines:
        row = by[p["name"].rstrip("0123456789")]
        for i, k in enumerate(keys):
            row[i] += p["counters"].get(k, 0)
        row[-1] += p["counters"].get("pinned_bytes", 0) >> 20
    for kind, row in sorted(by.items()):
        print(f"{time.monotonic() - began:.0f} {kind} " + " ".join(map(str, row)) + f" {rss}", flush=True)
EOF
}
if ((soak > 0)); then
    say "soak: $soak s, sampled every 10 s (s, RSS MB, GPU MiB, dropped since the window, page-locked MB, pool blocks allocated, given back, planes in ordinary memory, dropped by kind since the start)"
    first_drop=$(python3 -c "import json; print(json.load(open('after-window.json'))['dropped'])" 2>/dev/null || echo 0)
    : >soak-samples.txt
    watch_each_second "$soak"
    soak_start=$SECONDS
    for ((n = 0; n * 10 <= soak; n++)); do
        # Each sample at its own 10 s mark of the soak, however long the one before took.
        while ((SECONDS - soak_start < n * 10)); do sleep 1; done
        t=$((SECONDS - soak_start))
        if snapshot soak.json light; then
            # t, RSS, GPU memory, drops since the window, page-locked, the pools' counts; then drops
            # so far by kind of pipeline
            sample="$t $(python3 -c "import collections, json; s=json.load(open('soak.json')); k=collections.Counter()
for name, n in s['dropped_by_pipeline'].items(): k[name.rstrip('0123456789')] += n
print(round(s['rss_mb']), '$(gpu_memory)', s['dropped'] - $first_drop, round(s['pinned_mb']), *s['pool'], dict(k))")"
            echo "$sample" >>soak-samples.txt
            # The log keeps one sample in three (every 30 s); soak-samples.txt has them all.
            ((n % 3 == 0)) && say "  $sample"
        fi
    done
    python3 - soak-samples.txt <<'EOF' | tee -a "$log"
import statistics, sys
# RSS moves with the frames in flight (pools grow and give memory back), so one sample against
# another says little: compare the medians of the first and last two minutes from minute 5 on,
# and fit a line through every sample from minute 5 (growth per hour).
rows = [tuple(float(v) for v in line.split()[:4]) for line in open(sys.argv[1]) if line.strip()]
kept = [r for r in rows if r[0] >= 300] or rows
if len(kept) < 2:
    sys.exit(0)
t0, t1 = kept[0][0], kept[-1][0]
def window(col, lo, hi):
    return statistics.median(r[col] for r in kept if lo <= r[0] <= hi)
def growth_per_hour(col):
    mt, mv = statistics.mean(r[0] for r in kept), statistics.mean(r[col] for r in kept)
    slope = sum((r[0] - mt) * (r[col] - mv) for r in kept) / sum((r[0] - mt) ** 2 for r in kept)
    return slope * 3600, 100 * slope * 3600 / mv if mv else 0.0
for name, col, unit in (("RSS", 1, "MB"), ("GPU memory", 2, "MiB")):
    first, last = window(col, t0, t0 + 120), window(col, t1 - 120, t1)
    per_hour, pct = growth_per_hour(col)
    low, high = min(r[col] for r in kept), max(r[col] for r in kept)
    print(f"soak {name}, {t0:.0f} s to {t1:.0f} s: samples {kept[0][col]:.0f} -> {kept[-1][col]:.0f} {unit}; "
          f"medians of the first and last 2 minutes {first:.0f} -> {last:.0f} {unit} ({100 * (last - first) / (first or 1):+.1f}%); "
          f"fitted line {per_hour:+.0f} {unit}/h ({pct:+.1f}%/h); range {low:.0f}-{high:.0f}")
print(f"soak from {t0:.0f} s to {t1:.0f} s: {kept[-1][3] - kept[0][3]:.0f} dropped ({rows[-1][3]:.0f} since the window)")
EOF
    snapshot at-end.json
fi
kill -TERM "$pid"
stop=$SECONDS
wait "$pid"
say "SIGTERM: exit $? after $((SECONDS - stop)) s"
grep -ciE "panic|SIGSEGV" serve.log | sed 's/^/panics in the log: /' | tee -a "$log"
grep -E " (WARN|ERROR) " serve.log | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -5 | tee -a "$log"
grep -E " (WARN|ERROR) " serve.log >"$out/warnings.log"
say "warnings: $(grep -c "held up" "$out/warnings.log") of frames held up, $(grep -c "stood still" "$out/warnings.log") of the process standing still"
grep -m 3 -E "held up|stood still" "$out/warnings.log" | cut -c1-400 | tee -a "$log"
[[ -s $out/probes.txt ]] && say "probes: $(grep -vc "longest this minute" "$out/probes.txt") lines besides the minutes' longest" && grep -v "longest this minute" "$out/probes.txt" | head -20 | tee -a "$log"
cp serve.toml readyz.json ./*.json soak-samples.txt "$out/" 2>/dev/null
tail -n 200 serve.log >"$out/serve-tail.log"
