#!/usr/bin/env bash
# nvdec-snapshot: `serve`'s input and output previews of NVDEC pictures kept on the GPU
#
# Input previews of a pipeline whose pictures NVDEC leaves on the GPU, on a GPU host from the
# portable build: `convstream serve` runs a looping NVDEC pipeline on the CUDA engine (its
# decoded pictures never reach host memory) beside a software-decoded one, and the input and
# output snapshots of each must come back as PNGs of the frame's size that are pictures (not one
# colour), the NVDEC input one copied back from the GPU for that one request.
#
#   scripts/gpu-check.sh nvdec-snapshot [DIST]   (DIST defaults to dist/portable; results go to $OUT or ./nvdec-snapshot-results)
#
# DEVICE=cpu DECODER=software runs the same checks without a GPU (to check the script itself).
set -uo pipefail

dist="${1:-dist/portable}"
out="${OUT:-nvdec-snapshot-results}"
bin="$(cd "$(dirname "$dist/convstream")" && pwd)/convstream"
work="$(mktemp -d)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/nvdec-snapshot-check.log"
export CONVSTREAM_KERNEL_CACHE="${CONVSTREAM_KERNEL_CACHE:-/tmp/convstream-kernels}"
device="${DEVICE:-cuda}"
decoder="${DECODER:-nvdec}"
port="${PORT:-18687}"
python="${PYTHON:-python3}"
failures=0

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
record() { # record DESCRIPTION STATUS
    if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi
}

cd "$work" || exit 1
step "host"
{ nvidia-smi -L 2>/dev/null; "$bin" --version; } 2>&1 | tee -a "$log"
"$bin" demo --dir media --device cpu >>"$log" 2>&1
record "generate the sample clip" $?

cat > serve.toml <<EOF
[server]
listen = "127.0.0.1:$port"
watch = false

[[pipeline]]
name = "nv"
source = { url = "media/sample.mp4", loop = true, realtime = true, decoder = "$decoder" }
filter = { mask = "sobel-x", plane_masks = { uv = "neutral" }, device = "$device" }
sink = { url = "null" }

[[pipeline]]
name = "sw"
source = { url = "media/sample.mp4", loop = true, realtime = true, decoder = "software" }
filter = { mask = "box", device = "$device" }
sink = { url = "null" }
EOF
"$bin" serve --config serve.toml >"$out/serve.log" 2>&1 &
server=$!

step "snapshots"
"$python" - "$port" "$out" <<'EOF' 2>&1 | tee -a "$log"
import json, struct, sys, time, urllib.error, urllib.request, zlib

port, out = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"


def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except OSError:
        return 0, {}, b""


def png_pixels(data):
    """Width, height and the RGB bytes of an 8-bit RGB PNG (every row filter undone)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunk = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert (depth, colour) == (8, 2), f"8-bit RGB, not depth {depth} colour {colour}"
        elif kind == b"IDAT":
            idat += chunk
        at += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * 3, [], bytearray(width * 3)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if kind == 1: line[i] = (line[i] + a) & 255
            elif kind == 2: line[i] = (line[i] + b) & 255
            elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, b"".join(rows)


deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    status, _, body = get("/pipelines")
    if status == 200:
        states = {p["name"]: p for p in json.loads(body)["pipelines"]}
        if all(p["state"] == "running" and p["counters"]["frames_written"] >= 10 for p in states.values()):
            break
    time.sleep(0.5)
else:
    print(f"FAILED: both pipelines running (last: {status} {body[:300]!r})")
    sys.exit(1)
for name, p in states.items():
    print(f"info: {name}: engine {p['engine']}, device {p['device']}")
width = height = None
status, _, body = get("/pipelines/sw/snapshot?stage=input&format=png&width=4096")
if status == 200:
    width, height, _ = png_pixels(body)
failed = 0
for name in ("nv", "sw"):
    for stage in ("input", "output"):
        status, headers, body = get(f"/pipelines/{name}/snapshot?stage={stage}&format=png&width=4096")
        what = f"{name} {stage} snapshot"
        if status != 200:
            print(f"FAILED: {what}: {status} {body[:300]!r}")
            failed += 1
            continue
        open(f"{out}/{name}-{stage}.png", "wb").write(body)
        w, h, pixels = png_pixels(body)
        mean = sum(pixels) / len(pixels)
        spread = (sum((v - mean) ** 2 for v in pixels[::7]) / len(pixels[::7])) ** 0.5
        frame = headers.get("X-Frame-Index") or headers.get("x-frame-index")
        ok = (w, h) == (width, height) and spread > 5
        print(f"{'ok' if ok else 'FAILED'}: {what}: {w}x{h} (the clip's {width}x{height}), frame {frame}, "
              f"mean {mean:.1f}, spread {spread:.1f} (not one colour)")
        failed += 0 if ok else 1
sys.exit(1 if failed else 0)
EOF
record "every snapshot a picture of the frame's size" "${PIPESTATUS[0]}"

kill -TERM "$server" 2>/dev/null
wait "$server"
record "serve ends on SIGTERM (exit 0)" $?
grep -E "WARN|ERROR" "$out/serve.log" | head -n 20 | tee -a "$log"

step "summary"
echo "failures: $failures" | tee -a "$log"
rm -rf "$work"
exit $((failures > 0))
