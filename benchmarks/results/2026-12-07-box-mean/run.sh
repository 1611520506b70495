#!/usr/bin/env bash
# Two builds of the Python package side by side on this machine, in turns: each round runs
# box.py once with PYTHON_A's package, then once with PYTHON_B's, each in a fresh process, so a
# busy moment of the machine falls on both. The table takes each row's median over the rounds;
# cv2's time is the median over every round of both.
#   ROUNDS=6 bash run.sh PYTHON_A PYTHON_B > table.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p raw
for i in $(seq 1 "${ROUNDS:-6}"); do
    OPENBLAS_NUM_THREADS=1 "$1" "$here/box.py" >"raw/box-A-$i.json"
    OPENBLAS_NUM_THREADS=1 "$2" "$here/box.py" >"raw/box-B-$i.json"
done
python3 - raw <<'PY'
import glob, json, statistics, sys
runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/box-{v}-*.json"))] for v in "AB"}
print("| row | A ms | B ms | B / A | cv2 ms | B / cv2 |")
print("|---|---:|---:|---:|---:|---:|")
for row in runs["A"][0]:
    a = statistics.median(r[row][0] for r in runs["A"])
    b = statistics.median(r[row][0] for r in runs["B"])
    cv = statistics.median(r[row][1] for r in runs["A"] + runs["B"])
    print(f"| {row} | {a:.3f} | {b:.3f} | {b / a:.2f} | {cv:.3f} | {b / cv:.2f} |")
PY
