#!/usr/bin/env bash
# python/bench/vs_opencv.py ROUNDS times in turn (each a fresh process, so a busy moment of
# this VM falls on one round, not on a row), then each row's median over the rounds of
# cv2's time, convstream's and their ratio.
#   ROUNDS=5 PYTHON=python3 bash run.sh > table.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mkdir -p "$here/raw"
for i in $(seq 1 "${ROUNDS:-5}"); do
    OPENBLAS_NUM_THREADS=1 "${PYTHON:-python3}" "$repo/python/bench/vs_opencv.py" --repeat 21 \
        --json "$here/raw/round-$i.json" >"$here/raw/round-$i.txt"
done
python3 - "$here/raw" <<'PY'
import glob, json, statistics, sys
rounds = [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/round-*.json"))]
print(f"{rounds[0]['cpu']}, {rounds[0]['cores']} cores, OpenCV {rounds[0]['opencv']}; medians of {len(rounds)} rounds")
print()
print("| case | size | cv2 ms | convstream ms | convstream / cv2 |")
print("|---|---|---:|---:|---:|")
for i, row in enumerate(rounds[0]["rows"]):
    cv2 = statistics.median(r["rows"][i]["cv2_ms"] for r in rounds)
    ours = statistics.median(r["rows"][i]["convstream_ms"] for r in rounds)
    ratio = statistics.median(r["rows"][i]["ratio"] for r in rounds)
    mark = "**" if ratio > 1.2 else ""
    print(f"| {row['case']} | {row['size']} | {cv2:.2f} | {ours:.2f} | {mark}{ratio:.2f}{mark} |")
PY
