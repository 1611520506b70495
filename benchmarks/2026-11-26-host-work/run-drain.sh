#!/usr/bin/env bash
# How fast the frames held for a starting GPU drain through the lanes, and what limits it:
# the generated textured 1080p clip (250 frames) -> 13x13 -> null with the default lanes, more
# streams or frames per stream, and no pinned frame pool (nothing pinned in the background).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/host.txt"
mask=gaussian:size=13,sigma=3; cs=$d/${NEW:-convstream-new}
t 120 python3 "$here/../2026-11-25-start-up/make_y4m.py" /tmp/c.y4m 1920 1080 250 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c.y4m -c:v libopenh264 -b:v 8M /tmp/tex1080.mp4 2>> "$out/err.txt"; rm -f /tmp/c.y4m
cat > /tmp/nopin.toml <<TOML
[[pipeline]]
name = "main"
source = { url = "/tmp/tex1080.mp4" }
filter = { mask = "$mask", device = "cuda", pinned_frames = 0 }
sink = { url = "null" }
TOML
$cs run --no-progress -i /tmp/tex1080.mp4 --frames 10 -o null --mask $mask --device cuda > /dev/null 2>&1
s="--no-progress -i /tmp/tex1080.mp4 -o null --mask $mask --device cuda"
t 600 python3 "$here/timeline.py" 5 > "$out/walls.jsonl" 2>> "$out/err.txt" <<CMDS
tex1080 sw ffmpeg=$d/ffmpeg -hide_banner -nostdin -i /tmp/tex1080.mp4 -map 0:v -f null -
tex1080 sw default=$cs run $s --stats-json /tmp/d-default-{r}.json
tex1080 sw streams8=$cs run $s --streams 8 --stats-json /tmp/d-streams8-{r}.json
tex1080 sw fps4=$cs run $s --frames-per-stream 4 --stats-json /tmp/d-fps4-{r}.json
tex1080 sw nopin=$cs run --no-progress --config /tmp/nopin.toml --stats-json /tmp/d-nopin-{r}.json
CMDS
python3 "$here/summarise.py" "$out/walls.jsonl" > "$out/summary.txt"
python3 - > "$out/drain.txt" <<'PY'
import json, glob, statistics as st
for variant in ["default", "streams8", "fps4", "nopin"]:
    rows = []
    for f in sorted(glob.glob(f"/tmp/d-{variant}-*.json")):
        p = json.load(open(f))["pipelines"][0]
        settled = p["startup"]["engine_settled"]
        rows.append((p["seconds"], settled, p["seconds"] - settled))
    if rows:
        print(f"{variant:9} pipeline s {st.median(r[0] for r in rows):.3f}  settled {st.median(r[1] for r in rows):.3f}  after settling {st.median(r[2] for r in rows):.3f}")
PY
tar czf "$out/stats.tgz" -C /tmp $(cd /tmp && ls d-*.json)
cat "$out/summary.txt" "$out/drain.txt" "$out/host.txt"; tail -3 "$out/err.txt" 2>/dev/null
