#!/usr/bin/env bash
# The lanes' throughput with pooled and heap frames (`bench --suite overlap`), before and after
# heap frames took their results in page-locked planes, alternating binaries, two rounds.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
for r in 1 2; do for b in ${BASE:-convstream-base} ${NEW:-convstream-final}; do
  timeout -k 5 200 $d/$b bench --device cuda --suite overlap --out /tmp/ov-$b-$r > /tmp/ov-$b-$r.log 2>&1
  echo "== $b round $r (rc $?)" >> "$out/overlap.txt"
  grep -E "^\| [0-9]+x[0-9]+" /tmp/ov-$b-$r/results.md | grep -E "heap|\| 4 \| 2 \|" >> "$out/overlap.txt"
done; done
cat "$out/overlap.txt"
