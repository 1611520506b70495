#!/usr/bin/env bash
# On the final binary (convstream-new): its GPU checks again (CPU -> GPU switch and engines
# byte-identical, the pooled-frame tests), whole commands on a 1,000-frame clip (start-up
# amortised), the transcode target (mpeg4 at q=2, FFmpeg's CLI without a filter), and the time
# to first frame of a pipeline added to a running `serve` (its GPU context made already).
set -uo pipefail
d=$PWD/gpu-carry; here="$(cd "$(dirname "$0")" && pwd)"; out=${OUT:-/tmp/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$d CONVSTREAM_KERNEL_CACHE=/tmp/ck
t() { timeout -k 5 "$@"; }
python3 - <<'PY'
import lzma, shutil, os, glob
for f in glob.glob('gpu-carry/*.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
    os.chmod(f[:-3], 0o755)
PY
cs=$d/convstream-new; mask=gaussian:size=13,sigma=3
# The textured clip: the picture generator of scripts/gpu-check.sh startup --make-media, 250 frames.
sed -n '/^import sys$/,/^EOF$/{/^EOF$/!p}' scripts/gpu-check.sh startup | t 120 python3 - /tmp/c.y4m 1920 1080 250 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c.y4m -c:v libopenh264 -b:v 8M /tmp/c1080.mp4 2>> "$out/err.txt"; rm -f /tmp/c.y4m
t 60 $d/ffmpeg -v error -y -stream_loop 3 -i /tmp/c1080.mp4 -c copy /tmp/c1000.mp4 2>> "$out/err.txt"
$cs run --no-progress -i /tmp/c1080.mp4 --frames 10 -o null --mask $mask --device cuda > /dev/null 2>&1   # warm the kernel cache
# Checks.
for dev in cpu cuda; do t 120 $cs run --no-progress -y -i /tmp/c1080.mp4 -o /tmp/w-$dev.y4m --mask $mask --device $dev > /dev/null 2>> "$out/err.txt"; done
cmp /tmp/w-cpu.y4m /tmp/w-cuda.y4m > "$out/checks.txt" 2>&1 && echo "250 frames, CPU then GPU (software decode): identical to --device cpu" >> "$out/checks.txt"
t 120 $cs run --no-progress -y -i /tmp/c1080.mp4 -o /tmp/w-nv.y4m --mask $mask --device cuda --decoder nvdec > /dev/null 2>> "$out/err.txt"
cmp /tmp/w-cpu.y4m /tmp/w-nv.y4m >> "$out/checks.txt" 2>&1 && echo "250 frames, NVDEC + CUDA: identical to --device cpu" >> "$out/checks.txt"
t 300 $d/it gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool gpu::pictures_with_an_output_on_the_gpu_stay_there gpu::missing_gpu --include-ignored 2>&1 | grep -E "^test |test result" >> "$out/checks.txt"
now() { date +%s.%N; }
w() { local l=$1; shift; local s=$(now); t 120 "$@" > /tmp/last.log 2>&1; local rc=$?; local e=$(now)
  echo "$l rc=$rc wall=$(python3 -c "print(round($e-$s,3))")" >> "$out/walls.txt"; [ $rc = 0 ] || tail -3 /tmp/last.log >> "$out/err.txt"; }
for r in 1 2 3; do
  w "r$r c1000 sw ffmpeg" $d/ffmpeg -hide_banner -nostdin -i /tmp/c1000.mp4 -map 0:v -f null -
  w "r$r c1000 sw new" $cs run --no-progress --stats-json "$out/s-$r-sw.json" -i /tmp/c1000.mp4 -o null --mask $mask --device cuda
  w "r$r c1000 nvdec ffmpeg" $d/ffmpeg -hide_banner -nostdin -c:v h264_cuvid -i /tmp/c1000.mp4 -map 0:v -f null -
  w "r$r c1000 nvdec new" $cs run --no-progress --stats-json "$out/s-$r-nv.json" -i /tmp/c1000.mp4 -o null --mask $mask --device cuda --decoder nvdec
  w "r$r c1000 transcode ffmpeg-mpeg4-q2" $d/ffmpeg -hide_banner -nostdin -y -i /tmp/c1000.mp4 -map 0:v -c:v mpeg4 -q:v 2 /tmp/ff.mkv
  w "r$r c1000 transcode new-13x13-mpeg4" $cs run --no-progress -y --stats-json "$out/s-$r-tx.json" -i /tmp/c1000.mp4 -o /tmp/cs.mkv --codec mpeg4 --mask $mask --device cuda
done
grep -h "output:" /tmp/last.log >> "$out/checks.txt"
# serve: a pipeline added once the process's GPU context exists.
cat > /tmp/serve.toml <<TOML
[server]
listen = "127.0.0.1:18686"
allow_paths = ["/tmp"]
[[pipeline]]
name = "first"
source = { url = "/tmp/c1080.mp4", realtime = true, loop = true }
filter = { mask = "$mask", device = "cuda" }
sink = { url = "null" }
TOML
$cs serve --config /tmp/serve.toml > "$out/serve.log" 2>&1 & pid=$!
sleep 3
python3 - > "$out/serve-ttff.txt" 2>&1 <<PY
import json, time, urllib.request
def call(method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:18686" + path, method=method,
        data=None if body is None else json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r: return json.load(r)
print("first:", call("GET", "/pipelines/first").get("startup"))
for i in range(3):
    name = f"added{i}"
    call("POST", "/pipelines", {"name": name, "source": {"url": "/tmp/c1080.mp4", "realtime": True, "loop": True},
        "filter": {"mask": "$mask", "device": "cuda"}, "sink": {"url": "null"}})
    time.sleep(2)
    print(name + ":", call("GET", "/pipelines/" + name).get("startup"))
PY
kill -TERM $pid; wait $pid
cat "$out/checks.txt" "$out/walls.txt" "$out/serve-ttff.txt"; tail -5 "$out/err.txt" 2>/dev/null
