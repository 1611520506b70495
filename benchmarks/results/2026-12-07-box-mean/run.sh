#!/usr/bin/env bash
# ROUNDS fresh processes of box.py on this machine; the table takes each row's median over them.
#   ROUNDS=6 bash run.sh PYTHON
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${1:-python3}"
mkdir -p raw
for i in $(seq 1 "${ROUNDS:-6}"); do
    OPENBLAS_NUM_THREADS=1 "$python" "$here/box.py" >"raw/box-$i.json"
done
"$python" - raw/box-*.json <<'PY'
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[1:]]
print("| row | convstream ms | cv2 ms | convstream / cv2 |")
print("|---|---:|---:|---:|")
for row in runs[0]:
    ours = statistics.median(r[row][0] for r in runs)
    theirs = statistics.median(r[row][1] for r in runs)
    print(f"| {row} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f} |")
PY
