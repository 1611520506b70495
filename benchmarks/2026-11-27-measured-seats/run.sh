#!/usr/bin/env bash
# On the GPU host: the engines' GPU tests (parity, exact ties), Python's GPU tests, and NVDEC
# seats measured by bench --gpus all and then applied by serve through nvdec_seats_file.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p "$R"
start=$SECONDS
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
stamp() { echo "[$((SECONDS - start)) s] $*" >> "$R/steps.txt"; }
nvidia-smi -L > "$R/gpus.txt" 2>&1
py=/opt/torch/.venv/bin/python
stamp engines
chmod +x gpu-carry/engines
CONVSTREAM_TEST_GPU=1 timeout -k 5 150 gpu-carry/engines --include-ignored --test-threads 1 > "$R/engines.txt" 2>&1; echo "rc=$?" >> "$R/engines.txt"
xz -dc gpu-carry/convstream.xz > /tmp/convstream && chmod +x /tmp/convstream
/tmp/convstream doctor > "$R/doctor.txt" 2>&1
stamp bench
clip="$PWD/gpu-carry/clip1080.mp4"
timeout -k 5 100 /tmp/convstream bench --suite scale --decoder nvdec --gpus all --pipelines 8,16 --scale-seconds 2 \
    --input "$clip" --out "$R/bench" > "$R/bench.txt" 2>&1; echo "rc=$?" >> "$R/bench.txt"
stamp serve
mkdir -p /tmp/serve && cp "$R/bench/nvdec-seats.toml" /tmp/serve/ 2>/dev/null \
    || { stamp "no nvdec-seats.toml from bench: one written by hand"; printf '[seats_per_gpu]\n"%s" = 16\n' "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" > /tmp/serve/nvdec-seats.toml; }
{
    printf '[server]\nlisten = "127.0.0.1:8686"\nnvdec_seats_file = "nvdec-seats.toml"\n'
    for i in $(seq 0 19); do
        printf '[[pipeline]]\nname = "nv%s"\nsource = { url = "%s", decoder = "nvdec", realtime = true, loop = true, drop = "oldest" }\nfilter = { mask = "gaussian:size=13", device = "cuda" }\nsink = { url = "null" }\n' "$i" "$clip"
    done
} > /tmp/serve/config.toml
/tmp/convstream serve --config /tmp/serve/config.toml > "$R/serve.log" 2>&1 &
pid=$!
sleep 25
$py - > "$R/serve-state.txt" 2>&1 <<'PY'
import json, urllib.request, urllib.error
def get(path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:8686" + path, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
status, body = get("/pipelines")
views = json.loads(body)["pipelines"]
waiting = [v["name"] for v in views if "NVDEC seat" in (v.get("waiting_for") or "")]
running = [v["name"] for v in views if v.get("state") == "running"]
print("pipelines", len(views), "running", len(running), "waiting for a seat", len(waiting))
print("a waiting one says:", next((v.get("waiting_for") for v in views if v["name"] in waiting), None))
print("readyz", *get("/readyz"))
metrics = get("/metrics")[1]
print("\n".join(l for l in metrics.splitlines() if l.startswith("convstream_nvdec")))
PY
kill -TERM $pid; wait $pid; echo "serve exit $?" >> "$R/serve-state.txt"
stamp python
uv pip install --python $py --target /tmp/site --no-index --find-links gpu-carry/pywheels pytest > "$R/pip.txt" 2>&1
PYTHONPATH=/tmp/site PYTHON=$py OUT="$R/python" ENGINES=/nonexistent CONVSTREAM_BIN=/tmp/convstream \
    timeout -k 5 200 scripts/python-gpu-check.sh gpu-carry/convstream-*.whl > "$R/python.txt" 2>&1; echo "rc=$?" >> "$R/python.txt"
if (( SECONDS - start < 330 )); then
    # Does a loop's restart (decoder drained, flushed and made again) cost NVDEC pipelines their
    # rate? 24 loop a 4 s clip, 24 read the same clip 12 times over through a concat list.
    stamp loop-experiment
    mkdir -p /tmp/loopx && cp "$clip" /tmp/loopx/clip.mp4
    { echo "ffconcat version 1.0"; for i in $(seq 12); do echo "file 'clip.mp4'"; done; } > /tmp/loopx/long.ffconcat
    {
        printf '[server]\nlisten = "127.0.0.1:8687"\nnvdec_seats_per_gpu = 64\n'
        for i in $(seq 0 23); do
            printf '[[pipeline]]\nname = "loop%s"\nsource = { url = "clip.mp4", decoder = "nvdec", realtime = true, loop = true, drop = "oldest" }\nfilter = { mask = "gaussian:size=13", device = "cuda" }\nsink = { url = "null" }\n' "$i"
            printf '[[pipeline]]\nname = "long%s"\nsource = { url = "long.ffconcat", format = "concat", decoder = "nvdec", realtime = true, drop = "oldest" }\nfilter = { mask = "gaussian:size=13", device = "cuda" }\nsink = { url = "null" }\n' "$i"
        done
    } > /tmp/loopx/config.toml
    (cd /tmp/loopx && exec /tmp/convstream serve --config config.toml) > "$R/loopx.log" 2>&1 &
    pid=$!
    sleep 18
    $py - > "$R/loopx.txt" 2>&1 <<'PY'
import json, time, urllib.request
def views():
    with urllib.request.urlopen("http://127.0.0.1:8687/pipelines", timeout=5) as r:
        return {v["name"]: v for v in json.loads(r.read())["pipelines"]}
a = views(); t0 = time.time(); time.sleep(15); b = views(); dt = time.time() - t0
for group in ("loop", "long"):
    names = [n for n in b if n.startswith(group)]
    fps = sorted((b[n]["counters"]["frames_written"] - a[n]["counters"]["frames_written"]) / dt for n in names)
    drops = sum(b[n]["counters"]["frames_dropped"] - a[n]["counters"]["frames_dropped"] for n in names)
    states = sorted({b[n]["state"] for n in names})
    print(f"{group}: {len(names)} pipelines, fps min {fps[0]:.1f} median {fps[len(fps)//2]:.1f}, dropped {drops} in {dt:.0f} s, states {states}")
PY
    kill -TERM $pid; wait $pid; echo "serve exit $?" >> "$R/loopx.txt"
fi
stamp done
