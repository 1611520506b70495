#!/usr/bin/env bash
# Two builds of the Python package side by side on this machine: each round runs
# python/bench/vs_opencv.py once with PYTHON_A's package, then once with PYTHON_B's, each in a
# fresh process. The table gives each row's median over the rounds for both builds, their
# ratio, cv2's median over every run, and B's ratio to it.
#   ROUNDS=4 bash ab.sh PYTHON_A PYTHON_B > table.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mkdir -p "$here/raw"
for i in $(seq 1 "${ROUNDS:-4}"); do
    OPENBLAS_NUM_THREADS=1 "$1" "$repo/python/bench/vs_opencv.py" --repeat 21 --json "$here/raw/A-$i.json" >/dev/null
    OPENBLAS_NUM_THREADS=1 "$2" "$repo/python/bench/vs_opencv.py" --repeat 21 --json "$here/raw/B-$i.json" >/dev/null
done
python3 - "$here/raw" <<'PY'
import glob, json, statistics, sys
runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/{v}-*.json"))] for v in "AB"}
first = runs["A"][0]
print(f"{first['cpu']}, {first['cores']} cores, OpenCV {first['opencv']}; medians of {len(runs['A'])} rounds")
print()
print("| case | size | A ms | B ms | B / A | cv2 ms | B / cv2 |")
print("|---|---|---:|---:|---:|---:|---:|")
for i, row in enumerate(first["rows"]):
    a = statistics.median(r["rows"][i]["convstream_ms"] for r in runs["A"])
    b = statistics.median(r["rows"][i]["convstream_ms"] for r in runs["B"])
    cv2 = statistics.median(r["rows"][i]["cv2_ms"] for v in "AB" for r in runs[v])
    ratio = b / cv2
    mark = "**" if ratio > 1.2 else ""
    print(f"| {row['case']} | {row['size']} | {a:.2f} | {b:.2f} | {b / a:.2f} | {cv2:.2f} | {mark}{ratio:.2f}{mark} |")
PY
