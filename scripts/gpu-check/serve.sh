#!/usr/bin/env bash
# serve: `serve` with CUDA pipelines over every GPU, a live switch and a live input, against the CPU engine
#
# `convstream serve` on a GPU host, from the portable build: two file pipelines with
# device = "cuda" (placed on the least loaded GPUs: on a two-GPU host they land on
# cuda:0 and cuda:1) and one live UDP MPEG-TS pipeline fed by a second convstream process.
# Checks readiness, the API and metrics, a live mask switch on the GPU (frame-exact against
# the CPU engine), reconnection of the live input, and a SIGTERM that finalises every output.
# Every GPU output is compared with the CPU engine's output for the same input.
#
#   scripts/gpu-check.sh serve [DIST]      (DIST defaults to dist/portable; results go to $OUT or ./serve-results)
set -uo pipefail

dist="${1:-dist/portable}"
out="${OUT:-serve-results}"
bin="$(cd "$(dirname "$dist/convstream")" && pwd)/convstream"
work="$(mktemp -d)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/serve-gpu-check.log"
export CONVSTREAM_KERNEL_CACHE="${CONVSTREAM_KERNEL_CACHE:-/tmp/convstream-kernels}"
# DEVICE=cpu runs the same scenario without a GPU (to check the script itself).
device="${DEVICE:-cuda}"
failures=0
port=18686
udp=15000

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
check() { # check DESCRIPTION COMMAND...: runs the command, records ok/FAILED
    local what="$1"; shift
    if "$@" >>"$log" 2>&1; then record "$what" 0; else record "$what" 1; fi
}
record() { # record DESCRIPTION STATUS
    if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi
}
api() { python3 - "$@" <<'EOF'
import json, sys, urllib.request
method, path = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
request = urllib.request.Request(f"http://127.0.0.1:18686{path}", data=body, method=method)
try:
    with urllib.request.urlopen(request, timeout=30) as response:
        print(response.read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode()); sys.exit(1)
EOF
}

cd "$work" || exit 1
step "host"
{ nvidia-smi -L; "$bin" --version; } 2>&1 | tee -a "$log"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

step "media and CPU references"
check "generate the sample clip" "$bin" demo --dir media --device cpu
check "CPU reference, 13x13 gaussian" "$bin" run -i media/sample.mp4 -o cpu-gauss.y4m --mask gaussian:size=13,sigma=3 --device cpu --no-progress
check "CPU reference, sharpen" "$bin" run -i media/sample.mp4 -o cpu-sharpen.y4m --mask sharpen --device cpu --no-progress
check "CPU reference, 9x9 edge on luma" "$bin" run -i media/sample.mp4 -o cpu-edge.y4m --mask edge:size=9,sigma=1.4 --planes luma --device cpu --no-progress

cat > serve.toml <<EOF
[server]
listen = "127.0.0.1:$port"
watch = false

[[pipeline]]
name = "paced"
source = { url = "media/sample.mp4", realtime = true }
filter = { mask = "gaussian:size=13,sigma=3", device = "$device" }
sink = { url = "paced.y4m" }

[[pipeline]]
name = "fast"
source = { url = "media/sample.mp4" }
filter = { mask = "edge:size=9,sigma=1.4", planes = "luma", device = "$device" }
sink = { url = "fast.y4m" }

[[pipeline]]
name = "live"
source = { url = "udp://127.0.0.1:$udp", format = "mpegts", idle_timeout = 1.5, reconnect = { initial = 0.2, max = 1.0 } }
filter = { mask = "box:size=5", device = "$device" }
sink = { url = "live.mkv" }
EOF
cat > sender.toml <<EOF
[[pipeline]]
name = "sender"
source = { url = "media/sample.mp4", realtime = true }
filter = { mask = "identity", device = "cpu" }
sink = { url = "udp://127.0.0.1:$udp?pkt_size=1316", format = "mpegts" }
EOF

step "serve"
"$bin" serve --config serve.toml >"$out/serve.log" 2>&1 &
server=$!
"$bin" run --config sender.toml --no-progress >"$out/sender-1.log" 2>&1 &
sender=$!
ready=0
for _ in $(seq 1 200); do api GET /readyz >/dev/null 2>&1 && { ready=1; break; }; sleep 0.1; done
check "/readyz answers 200 (engines built, kernels compiled)" test $ready = 1
api GET /pipelines | python3 -m json.tool > "$out/pipelines-running.json"
check "three pipelines, the file ones on $device" python3 -c "
import json; p = {x['name']: x for x in json.load(open('$out/pipelines-running.json'))['pipelines']}
print({n: (x['state'], x['device'], x['engine']) for n, x in p.items()})
assert p['paced']['device'].startswith('$device') and p['fast']['device'].startswith('$device')"
if [[ $gpus -ge 2 && $device == cuda ]]; then
    check "with $gpus GPUs, the two file pipelines landed on different GPUs" python3 -c "
import json; p = {x['name']: x for x in json.load(open('$out/pipelines-running.json'))['pipelines']}
assert p['paced']['device'] != p['fast']['device'], (p['paced']['device'], p['fast']['device'])"
fi
sleep 2
api PUT /pipelines/paced/filter '{"mask": "sharpen"}' > "$out/switch.json"
record "switch the paced pipeline to sharpen mid-stream: $(cat "$out/switch.json")" $?
api GET /metrics > "$out/metrics-1.txt"
wait $sender
sleep 3   # the live input goes quiet: lost after idle_timeout, then reconnects when data returns
"$bin" run --config sender.toml --no-progress >"$out/sender-2.log" 2>&1 &
sender=$!
for _ in $(seq 1 300); do
    api GET /pipelines/paced | grep -q '"state":"finished"' && api GET /pipelines/fast | grep -q '"state":"finished"' && break
    sleep 0.1
done
wait $sender
sleep 1
api GET /metrics > "$out/metrics-2.txt"
api GET /pipelines | python3 -m json.tool > "$out/pipelines-end.json"
check "the live pipeline reconnected and went on" python3 -c "
import json; p = {x['name']: x for x in json.load(open('$out/pipelines-end.json'))['pipelines']}['live']
print(p['counters']); assert p['counters']['reconnects'] >= 1 and p['counters']['frames_written'] > 0"
stage=$([[ $device == cpu ]] && echo cpu_filter || echo gpu)
check "metrics: the $stage stage histogram was observed" grep -qE "convstream_stage_seconds_count\{pipeline=\"fast\",device=\"$device[:0-9]*\",stage=\"$stage\"\} [1-9]" "$out/metrics-2.txt"
kill -TERM $server
wait $server
code=$?
check "SIGTERM: exit 0" test $code = 0
grep -E "switched|placed on|frames in|stopped" "$out/serve.log" | tee -a "$log"

step "outputs against the CPU engine"
check "fast (edge on luma, $device) is identical to the CPU engine's output" cmp fast.y4m cpu-edge.y4m
check "paced: every frame before the reported frame is gaussian, every frame from it sharpen (frame-exact)" python3 - <<EOF
import json
def frames(path):
    data = open(path, 'rb').read()
    at = data.index(b'\n')
    fields = {f[:1]: f[1:] for f in data[:at].split(b' ')[1:]}
    assert fields.get(b'C', b'420').startswith(b'420'), fields
    w, h = int(fields[b'W']), int(fields[b'H'])
    size = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    out, at = [], at + 1
    while at < len(data):
        at = data.index(b'\n', at) + 1   # FRAME line
        out.append(data[at:at + size]); at += size
    return out
at = json.load(open('$out/switch.json'))['applies_from_frame']
paced, gauss, sharpen = frames('paced.y4m'), frames('cpu-gauss.y4m'), frames('cpu-sharpen.y4m')
assert len(paced) == len(gauss) == len(sharpen), (len(paced), len(gauss))
bad = [i for i, f in enumerate(paced) if f != (gauss[i] if i < at else sharpen[i])]
print(f'switch at frame {at} of {len(paced)}; frames not matching the CPU engine: {bad}')
assert 0 < at < len(paced) and not bad
EOF
check "live.mkv was finalised and decodes" "$bin" run -i live.mkv -o null --device cpu --no-progress

step "summary"
echo "failures: $failures" | tee -a "$log"
rm -rf "$work"
exit $((failures > 0))
