#!/usr/bin/env bash
# Two builds of the Python package side by side on this machine, in turns: each round runs
# floats.py once with each build (PYTHON_BASE, then PYTHON_NEW), each in a fresh process. The
# table gives each row's median over the rounds and its minimum (this VM's neighbours slow
# whole rounds down at times: the minimum is the least disturbed), the new build's median over
# the base's, cv2's median and minimum over every round, and the new build's median over cv2's.
#   ROUNDS=30 bash ab.sh PYTHON_BASE PYTHON_NEW > table.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/ab"
for i in $(seq 1 "${ROUNDS:-8}"); do
    for v in base new; do
        case $v in base) python=$1 ;; new) python=$2 ;; esac
        OPENBLAS_NUM_THREADS=1 "$python" "$here/floats.py" >"$here/ab/f-$v-$i.json"
    done
done
python3 - "$here/ab" <<'PY'
import glob, json, statistics, sys
print("| row | base median | new median | new / base | base min | new min | cv2 median | cv2 min | new median / cv2 median |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/f-{v}-*.json"))] for v in ("base", "new")}
for row in runs["base"][0]:
    med = {v: statistics.median(r[row][0] for r in runs[v]) for v in runs}
    low = {v: min(r[row][0] for r in runs[v]) for v in runs}
    cv2 = [r[row][1] for v in runs for r in runs[v]]
    cv2_med = statistics.median(cv2)
    print(f"| {row} | {med['base']:.3f} | {med['new']:.3f} | {med['new'] / med['base']:.2f} | {low['base']:.3f} | "
          f"{low['new']:.3f} | {cv2_med:.3f} | {min(cv2):.3f} | {med['new'] / cv2_med:.2f} |")
PY
