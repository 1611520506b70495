#!/usr/bin/env bash
# rows.py with two builds in turns, ROUNDS rounds, one thread (RAYON_NUM_THREADS=1) and then
# the default pool; each row's median over the rounds.
#   ROUNDS=5 bash run.sh PYTHON_A PYTHON_B > table.md
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/raw"
for i in $(seq 1 "${ROUNDS:-5}"); do
    for threads in 1 2; do
        RAYON_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1 "$1" "$here/rows.py" >"$here/raw/rows-A-$threads-$i.json"
        RAYON_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1 "$2" "$here/rows.py" >"$here/raw/rows-B-$threads-$i.json"
    done
done
python3 - "$here/raw" <<'PY'
import glob, json, statistics, sys
print("| row (720p) | threads | A ms | B ms | B / A |")
print("|---|---:|---:|---:|---:|")
for threads in (1, 2):
    runs = {v: [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/rows-{v}-{threads}-*.json"))] for v in "AB"}
    for row in runs["A"][0]:
        a = statistics.median(r[row] for r in runs["A"])
        b = statistics.median(r[row] for r in runs["B"])
        print(f"| {row} | {threads} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
PY
