#!/usr/bin/env bash
# Two builds of the Python package side by side on this machine, in turns: PKG_A and PKG_B are
# folders each holding a `convstream` package (an installed wheel's, its _convstream*.so
# swapped for the build under test); each round runs ab.py once per build, in a fresh process,
# A then B, so a busy moment of the machine falls on both. The table takes each row's median
# over the rounds; cv2's time is the median over every round of both.
#   PKG_A=/tmp/pkgA PKG_B=/tmp/pkgB ROUNDS=6 bash run.sh PYTHON
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${1:-python3}"
mkdir -p raw
for i in $(seq 1 "${ROUNDS:-6}"); do
    for v in A B; do
        pkg="PKG_$v"
        OPENBLAS_NUM_THREADS=1 "$python" "$here/ab.py" "${!pkg}" >"raw/ab6-$v-$i.json"
    done
done
