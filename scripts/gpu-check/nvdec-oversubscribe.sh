#!/usr/bin/env bash
# nvdec-oversubscribe: more NVDEC pipelines than decoder sessions in one `serve` (--make-clip makes the clip)
#
# More NVDEC pipelines than the GPU has decoder sessions for, in one `serve`, on a GPU host:
# the pipelines that cannot get a session (or GPU memory, or a context) must fail alone with
# the resource named in last_error, the others keep running, and a SIGTERM must stop the
# process cleanly (exit 0 within shutdown_timeout, never a crash).
#
#   scripts/gpu-check.sh nvdec-oversubscribe --make-clip FILE [FRAMES]   make a 1080p25 H.264 clip of FRAMES
#                                                                        (default 250; the host soaks loop one of 100,
#                                                                        4 s), needs an ffmpeg CLI with libx264 ($FFMPEG,
#                                                                        else ffmpeg): FFmpeg's testsrc2 pattern, or,
#                                                                        from a CLI without lavfi (the portable build),
#                                                                        moving stripes written by Python with NumPy
#   scripts/gpu-check.sh nvdec-oversubscribe DIST CLIP [COUNT]           run COUNT (default 96) paced NVDEC pipelines
#
# Results go to $OUT (or ./oversubscribe-results): oversubscribe.log and states.json.
set -uo pipefail

if [[ ${1:-} == --make-clip ]]; then
    clip="${2:?usage: $0 --make-clip FILE [FRAMES]}" frames="${3:-250}" ffmpeg="${FFMPEG:-ffmpeg}"
    encode=(-c:v libx264 -preset ultrafast -crf 30 -g 50 -pix_fmt yuv420p "$clip")
    if "$ffmpeg" -hide_banner -formats 2>/dev/null | grep -qw lavfi; then
        "$ffmpeg" -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=1920x1080:rate=25 -frames:v "$frames" \
            "${encode[@]}" || exit 1
    else
        # Diagonal gradients with stripes that move a frame at a time, as raw YUV4MPEG frames.
        python3 - "$frames" <<'EOF' | "$ffmpeg" -hide_banner -loglevel error -y -f yuv4mpegpipe -i - "${encode[@]}" || exit 1
import sys
import numpy as np
w, h, n = 1920, 1080, int(sys.argv[1])
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
out = sys.stdout.buffer
out.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420jpeg\n".encode())
for i in range(n):
    luma = ((x * 0.7 + y * 0.3 + i * 8) % 256).astype(np.uint8)
    luma[(y.astype(int) // 60 + i) % 2 == 0] ^= 0x3F
    out.write(b"FRAME\n" + luma.tobytes() + np.full(w * h // 2, 128 + i % 32, np.uint8).tobytes())
EOF
    fi
    ls -l "$clip"
    exit 0
fi

dist="${1:?usage: $0 DIST CLIP [COUNT]}"
clip="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
count="${3:-96}"
bin="$(cd "$dist" && pwd)/convstream"
out="${OUT:-oversubscribe-results}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/oversubscribe.log"
work="$(mktemp -d)"
cd "$work" || exit 1
port=18688
failures=0
record() { if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi; }

{
    printf '[server]\nlisten = "127.0.0.1:%s"\nshutdown_timeout = 20.0\nwatch = false\n' "$port"
    for i in $(seq "$count"); do
        printf '[[pipeline]]\nname = "cam%s"\n[pipeline.source]\nurl = "%s"\ndecoder = "nvdec"\nloop = true\nrealtime = true\ndrop = "oldest"\n' "$i" "$clip"
        printf '[pipeline.filter]\nmask = "gaussian:size=13,sigma=3"\ndevice = "cuda"\n[pipeline.sink]\nurl = "null"\n'
    done
} >serve.toml

"$bin" serve --config serve.toml >serve.log 2>&1 &
pid=$!
states() {
    python3 - "$port" <<'EOF'
import collections, json, re, sys, urllib.request
pipelines = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/pipelines", timeout=10))
if isinstance(pipelines, dict):
    pipelines = pipelines.get("pipelines", list(pipelines.values()))
counts = collections.Counter(p.get("state") for p in pipelines)
# Grouped by reason: the pipeline's own name is taken out.
errors = collections.Counter(re.sub(r'^pipeline "[^"]*": ', "", p.get("last_error") or "")[:200]
                             for p in pipelines if p.get("state") == "failed")
print(json.dumps({"states": counts, "errors": errors}, indent=1))
EOF
}
frames_written() {
    python3 - "$port" <<'EOF'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
print(sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("convstream_frames_written")))
EOF
}
# Wait until every pipeline has started or failed (at most 150 s), then 10 s more.
started_at=$SECONDS
for _ in $(seq 150); do
    sleep 1
    # An API that does not answer in time (a busy host) is not taken as "all started".
    now=$(states 2>/dev/null) || continue
    grep -q '"starting"' <<<"$now" || break
done
echo "all pipelines started or failed after $((SECONDS - started_at)) s" | tee -a "$log"
sleep 10
if kill -0 "$pid" 2>/dev/null; then
    states >"$out/states.json" 2>>"$log"
    cat "$out/states.json" | tee -a "$log"
    before=$(frames_written)
    sleep 10
    written=$(frames_written)
    echo "frames written in the last 10 s, all pipelines: $(python3 -c "print($written - $before)")" | tee -a "$log"
    record "serve still up with $count NVDEC pipelines" 0
else
    record "serve still up with $count NVDEC pipelines" 1
fi
kill -TERM "$pid" 2>/dev/null
started=$SECONDS
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    # Where the threads that outlived the stop wait: name, kernel wait channel and stack.
    for task in /proc/"$pid"/task/*; do
        printf '%s %s %s\n' "$(cat "$task/comm")" "$(cat "$task/wchan" 2>/dev/null)" \
            "$(tr '\n' ' ' <"$task/stack" 2>/dev/null | cut -c1-300)"
    done >"$out/threads-after-stop.txt"
    kill -KILL "$pid"
fi
wait "$pid"
code=$?
record "SIGTERM: exit $code after $((SECONDS - started)) s (0 expected, no crash)" $((code != 0))
grep -c "" serve.log | xargs echo "serve log lines:" | tee -a "$log"
grep -iE "panic|segmentation|SIGSEGV" serve.log | head -5 | tee -a "$log"
cp serve.log "$out/serve.log"
echo "failures: $failures" | tee -a "$log"
rm -rf "$work"
exit $((failures > 0))
