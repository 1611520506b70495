#!/usr/bin/env bash
# Before/after the structure split, in one run: the overlap suite and an end-to-end run of a
# 1080p H.264 clip (13x13 on all planes, to null), alternating the old and the new binary.
set -uo pipefail
d=gpu-carry; out="${OUT:-gpu-results}"; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
nvidia-smi -L > "$out/host.txt"
for b in old new; do $d/convstream-$b --version >> "$out/host.txt"; done
for round in 1 2; do
  for b in old new; do
    timeout -k 5 150 $d/convstream-$b bench --device cuda --suite overlap --out $out/overlap-$b-$round > $out/overlap-$b-$round.log 2>&1
    echo "overlap $b round $round exit $?"
  done
done
# Warm the kernel cache for each binary, then time.
for b in old new; do timeout -k 5 60 $d/convstream-$b run -i $d/clip1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda --no-progress > /dev/null 2>&1; done
for round in 1 2 3; do
  for b in old new; do
    timeout -k 5 60 $d/convstream-$b run -i $d/clip1080.mp4 -o null --mask gaussian:size=13,sigma=3 --device cuda --no-progress --stats-json $out/e2e-$b-$round.json > /dev/null 2>&1
    echo "e2e $b round $round exit $?"
  done
done
python3 - "$out" <<'PY'
import json,sys,glob
o=sys.argv[1]
def rows(path):
    r=json.load(open(path))
    ov=r["overlap"]; ov=ov.get("rows",ov) if isinstance(ov,dict) else ov
    return {(x.get("frame") or x.get("size") or x.get("height"), x.get("frames_in") or x.get("memory") or x.get("source"), x.get("streams"), x.get("frames_per_stream")): x.get("fps") for x in ov}
for b in ["old","new"]:
    for rd in [1,2]:
        try:
            rr=rows(f"{o}/overlap-{b}-{rd}/results.json")
            print(b, rd, {str(k): round(v) for k,v in rr.items()})
        except Exception as e:
            print(b, rd, "error", e)
for b in ["old","new"]:
    fps=[json.load(open(f"{o}/e2e-{b}-{rd}.json"))["pipelines"][0]["fps"] for rd in [1,2,3]]
    print("e2e", b, [round(f) for f in fps])
PY
