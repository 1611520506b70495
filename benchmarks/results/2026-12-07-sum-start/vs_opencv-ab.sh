#!/usr/bin/env bash
# python/bench/vs_opencv.py at 720p with two builds of the Python package in turns, ROUNDS
# rounds of a fresh process each, then each row's median ratio (convstream / cv2, each run's
# own) for each build.
#   ROUNDS=6 bash vs_opencv-ab.sh PYTHON_BASE PYTHON_NEW > vs_opencv-ab.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mkdir -p "$here/vs-ab"
for i in $(seq 1 "${ROUNDS:-6}"); do
    for v in base new; do
        case $v in base) python=$1 ;; new) python=$2 ;; esac
        OPENBLAS_NUM_THREADS=1 "$python" "$repo/python/bench/vs_opencv.py" --sizes 720p --repeat 21 \
            --json "$here/vs-ab/$v-$i.json" >"$here/vs-ab/$v-$i.txt"
    done
done
python3 - "$here/vs-ab" <<'PY'
import glob, json, statistics, sys
runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/{v}-*.json"))] for v in ("base", "new")}
print(f"{len(runs['base'])} rounds of each build; each run's convstream / cv2, median over the rounds (all rounds' ratios after)")
print()
print("| case, 720p | base | new | new's ratios |")
print("|---|---:|---:|---|")
for i, row in enumerate(runs["base"][0]["rows"]):
    med = {v: statistics.median(r["rows"][i]["ratio"] for r in runs[v]) for v in runs}
    all_new = ", ".join(f"{r['rows'][i]['ratio']:.2f}" for r in runs["new"])
    mark = lambda x: f"**{x:.2f}**" if x > 1.2 else f"{x:.2f}"
    print(f"| {row['case']} | {mark(med['base'])} | {mark(med['new'])} | {all_new} |")
PY
