#!/usr/bin/env bash
# The end-to-end comparison repeated: 1080p H.264 clip, 13x13 on all planes, to null, old and new
# binaries alternating, 10 rounds after a warm-up of each.
set -uo pipefail
d=gpu-carry; out="${OUT:-gpu-results}"; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
for b in old new; do timeout -k 5 60 $d/convstream-$b run -i $d/clip1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda --no-progress > /dev/null 2>&1; done
for round in $(seq 1 10); do
  for b in old new; do
    timeout -k 5 60 $d/convstream-$b run -i $d/clip1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda --no-progress --stats-json /tmp/e2e-$b-$round.json > /dev/null 2>&1 || echo "e2e $b $round failed"
  done
done
python3 - > "$out/e2e-repeat.txt" <<'PY'
import json,statistics
for b in ["old","new"]:
    rs=[json.load(open(f"/tmp/e2e-{b}-{i}.json"))["pipelines"][0] for i in range(1,11)]
    fps=[r["fps"] for r in rs]
    print(b, "fps", [round(f) for f in fps], "median", round(statistics.median(fps)), "frames", rs[0]["frames_out"],
          "decode s median", round(statistics.median(r["source_seconds"] for r in rs),3),
          "filter s median", round(statistics.median(r["filter_seconds"] for r in rs),3))
PY
cat "$out/e2e-repeat.txt"
