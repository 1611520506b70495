#!/usr/bin/env bash
# graph-serve: one `filter.graph` in `serve`, NVDEC and software decoding, switched live, against the CPU engine
#
# `filter.graph` in `convstream serve` on a GPU host, from the portable build: the same graph
# (FFmpeg's `scale=1280:-2` before the engine, a 13x13 gaussian on it, `format=gray` after)
# in four pipelines: the CUDA engine with NVDEC and with software decoding, the CPU engine
# with both. Every output is compared frame by frame with a CPU reference run of the same
# config (`run`, CPU engine) with the same decoder; the two CUDA pipelines are paced and switched
# live to `sharpen` mid-stream: frames before the frame the API names must be the gaussian's,
# frames from it on the sharpen's (the graph's scale and format stay).
#
# The clip is H.264, whose decoding is bit-exact by the standard, so the NVDEC references must
# also equal the software ones. MPEG-4 Part 2 (the demo's own clip) is not: its IDCT is only
# bounded, and NVDEC's differs from FFmpeg's; the script prints by how much, as information.
#
#   scripts/gpu-check.sh graph-serve [DIST]   (DIST: dist/portable; results go to $OUT or ./graph-results)
set -uo pipefail

dist="${1:-dist/portable}"
out="${OUT:-graph-results}"
bin="$(cd "$(dirname "$dist/convstream")" && pwd)/convstream"
work="$(mktemp -d)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/graph-serve-check.log"
export CONVSTREAM_KERNEL_CACHE="${CONVSTREAM_KERNEL_CACHE:-/tmp/convstream-kernels}"
# DEVICE=cpu DECODER=software run the same scenario without a GPU (to check the script).
device="${DEVICE:-cuda}"
nvdec="${DECODER:-nvdec}"
port=18687
graph='scale=1280:-2,null@mask,format=gray'
gauss='gaussian:size=13,sigma=3'
failures=0

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
record() { # record DESCRIPTION STATUS
    if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi
}
check() { local what="$1"; shift; "$@" >>"$log" 2>&1; record "$what" $?; }
api() { python3 - "$port" "$@" <<'EOF'
import sys, urllib.request
port, method, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=30) as response:
        print(response.read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode()); sys.exit(1)
EOF
}
# compare OUTPUT REFERENCE [SWITCH.json AFTER-REFERENCE]: frame by frame, y4m (gray or 4:2:0).
compare() { python3 - "$@" <<'EOF'
import json, sys
def frames(path):
    data = open(path, 'rb').read()
    at = data.index(b'\n')
    fields = {f[:1]: f[1:] for f in data[:at].split(b' ')[1:]}
    w, h, c = int(fields[b'W']), int(fields[b'H']), fields.get(b'C', b'420')
    size = w * h if c.startswith(b'mono') else w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    out, at = [], at + 1
    while at < len(data):
        at = data.index(b'\n', at) + 1
        out.append(data[at:at + size]); at += size
    return out
got, ref = frames(sys.argv[1]), frames(sys.argv[2])
switch, after = (json.load(open(sys.argv[3]))['applies_from_frame'], frames(sys.argv[4])) if len(sys.argv) > 4 else (len(got), ref)
bad = [i for i, f in enumerate(got) if i >= len(ref) or f != (ref[i] if i < switch else after[i])]
print(f'{sys.argv[1]}: {len(got)} frames (reference {len(ref)}), switch at {switch}; frames that differ: {bad[:20]}{"..." if len(bad) > 20 else ""}')
assert len(got) == len(ref) and not bad and (len(sys.argv) < 5 or 0 < switch < len(got)), 'not switched mid-stream'
EOF
}
pipeline() { # pipeline NAME DECODER DEVICE PACED
    cat <<EOF

[[pipeline]]
name = "$1"
source = { url = "$clip", decoder = "$2", realtime = $4 }
filter = { graph = "$graph", mask = "$gauss", device = "$3" }
sink = { url = "$1.y4m" }
EOF
}

cd "$work" || exit 1
step "host"
{ nvidia-smi -L; "$bin" --version; } 2>&1 | tee -a "$log"

step "media and CPU references (run --config, CPU engine)"
clip=media/sample-h264.mp4
check "generate the sample clip" "$bin" demo --dir media --device cpu
check "re-encode it as H.264" "$bin" run -i media/sample.mp4 -c:v libx264 -o "$clip" --no-progress
reference() { # reference NAME DECODER MASK
    printf '[[pipeline]]\nname = "%s"\nsource = { url = "%s", decoder = "%s" }\nfilter = { graph = "%s", mask = "%s", device = "cpu" }\nsink = { url = "%s.y4m" }\n' \
        "$1" "$clip" "$2" "$graph" "$3" "$1" > "$1.toml"
    check "CPU reference $1: $graph with $3, $2 decoding" "$bin" run --config "$1.toml" --no-progress
}
for decoder in $(printf "%s\n" software "$nvdec" | sort -u); do
    reference "ref-gauss-$decoder" "$decoder" "$gauss"
    reference "ref-sharpen-$decoder" "$decoder" sharpen
done
check "H.264 through NVDEC gives the software decoder's frames" \
    compare "ref-gauss-$nvdec.y4m" ref-gauss-software.y4m
# Information only: MPEG-4 Part 2 through each decoder, unfiltered.
for decoder in $(printf "%s\n" software "$nvdec" | sort -u); do
    "$bin" run -i media/sample.mp4 --decoder "$decoder" --mask identity --device cpu \
        -frames:v 20 -o "mpeg4-$decoder.y4m" --no-progress >>"$log" 2>&1
done
python3 - "mpeg4-software.y4m" "mpeg4-$nvdec.y4m" <<'EOF' 2>&1 | tee -a "$log"
import sys
a, b = (open(p, 'rb').read() for p in sys.argv[1:3])
diff = [abs(x - y) for x, y in zip(a, b) if x != y] if len(a) == len(b) else None
print('MPEG-4 Part 2, NVDEC against software decoding:',
      'sizes differ' if diff is None else f'{len(diff)} of {len(a)} bytes differ, by at most {max(diff, default=0)}')
EOF

{
    printf '[server]\nlisten = "127.0.0.1:%s"\nwatch = false\n' "$port"
    pipeline gpu-nvdec "$nvdec" "$device" true
    pipeline gpu-software software "$device" true
    pipeline cpu-nvdec "$nvdec" cpu false
    pipeline cpu-software software cpu false
} > serve.toml
cp serve.toml "$out/"
check "check: the config's graphs read" "$bin" check --config serve.toml

step "serve"
"$bin" serve --config serve.toml >"$out/serve.log" 2>&1 &
server=$!
ready=0
for _ in $(seq 1 300); do api GET /readyz >/dev/null 2>&1 && { ready=1; break; }; sleep 0.1; done
record "/readyz answers 200" $((1 - ready))
api GET /pipelines | python3 -m json.tool > "$out/pipelines-running.json"
written() { api GET "/pipelines/$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['counters']['frames_written'])" 2>/dev/null || echo 0; }
for name in gpu-nvdec gpu-software; do
    # Mid-stream: once a second of the paced input is written.
    for _ in $(seq 1 400); do [[ $(written "$name") -ge 30 ]] && break; sleep 0.05; done
    api PUT "/pipelines/$name/filter" '{"mask": "sharpen"}' > "$out/switch-$name.json"
    status=$?
    record "switch $name to sharpen mid-stream: $(cat "$out/switch-$name.json")" $status
done
for _ in $(seq 1 600); do
    api GET /pipelines | python3 -c "import json,sys; sys.exit(any(p['state'] != 'finished' for p in json.load(sys.stdin)['pipelines']))" && break
    sleep 0.2
done
api GET /pipelines | python3 -m json.tool > "$out/pipelines-end.json"
kill -TERM $server
wait $server
status=$?
record "SIGTERM: exit 0" $status
grep -E "placed on|switched|frames in|FFmpeg|NVDEC|nvdec|error" "$out/serve.log" | tee -a "$log"

step "outputs against the CPU references"
for kind in software nvdec; do
    decoder=$([[ $kind == nvdec ]] && echo "$nvdec" || echo software)
    check "cpu-$kind equals the CPU reference frame by frame" \
        compare "cpu-$kind.y4m" "ref-gauss-$decoder.y4m"
    check "gpu-$kind: the gaussian before the switch, sharpen from the frame the API named" \
        compare "gpu-$kind.y4m" "ref-gauss-$decoder.y4m" "$out/switch-gpu-$kind.json" "ref-sharpen-$decoder.y4m"
done

step "summary"
echo "failures: $failures" | tee -a "$log"
rm -rf "$work"
exit $((failures > 0))
