#!/usr/bin/env bash
# Builds of the Python package side by side on this machine, in turns: each round runs
# floats.py once with each build (PYTHON_BASE, PYTHON_NEW,
# PYTHON_NEW2), each in a fresh process. The table gives each row's median over the rounds and
# its minimum (this VM's neighbours slow whole rounds down at times: the minimum is the least
# disturbed), cv2's minimum over every round, and the last build's minimum over cv2's.
#   ROUNDS=8 bash ab.sh PYTHON_BASE PYTHON_NEW PYTHON_NEW2 > table-ab.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/ab"
for i in $(seq 1 "${ROUNDS:-8}"); do
    for v in base new new2; do
        case $v in base) python=$1 ;; new) python=$2 ;; new2) python=$3 ;; esac
        OPENBLAS_NUM_THREADS=1 "$python" "$here/floats.py" >"$here/ab/f-$v-$i.json"
    done
done
python3 - "$here/ab" <<'PY'
import glob, json, statistics, sys
print("| row | base median | new median | new2 median | base min | new min | new2 min | cv2 min | new2 min / cv2 min |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for kind in "f":
    runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/{kind}-{v}-*.json"))] for v in ("base", "new", "new2")}
    for row in runs["base"][0]:
        med = {v: statistics.median(r[row][0] for r in runs[v]) for v in runs}
        low = {v: min(r[row][0] for r in runs[v]) for v in runs}
        cv2 = min(r[row][1] for v in runs for r in runs[v])
        print(f"| {row} | {med['base']:.3f} | {med['new']:.3f} | {med['new2']:.3f} | {low['base']:.3f} | "
              f"{low['new']:.3f} | {low['new2']:.3f} | {cv2:.3f} | {low['new2'] / cv2:.2f} |")
PY
