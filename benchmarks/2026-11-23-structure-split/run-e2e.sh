#!/usr/bin/env bash
# End-to-end and NVDEC checks, tuning through config and flags, on the carried portable build.
set -uo pipefail
d=gpu-carry; out="${OUT:-gpu-results}"; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
NVDEC_MEDIA=$d/nvdec-media timeout -k 10 300 scripts/gpu-check.sh "$d" --end-to-end > "$out/e2e.log" 2>&1
echo "gpu-check e2e exit $?"
grep -E '^(ok|FAILED|failures)' "$out/e2e.log" | sort | uniq -c | sort -rn | head -60
# Tuning through the config: spin 0 and explicit tilings, output identical to the CPU.
tmp=$(mktemp -d)
$d/convstream demo --dir $tmp --device cpu > /dev/null 2>&1
cat > $tmp/tuned.toml <<TOML
[[pipeline]]
name = "tuned"
[pipeline.source]
url = "$tmp/sample.mp4"
[pipeline.filter]
device = "cuda"
mask = "gaussian:size=13,sigma=3"
[pipeline.filter.gpu]
spin_us = 0
dense_tiling = "32x8x8x4"
separable_tiling = "32x16x4x2"
[pipeline.sink]
url = "$tmp/tuned.y4m"
TOML
timeout -k 5 60 $d/convstream run --config $tmp/tuned.toml --no-progress 2>&1 | tail -2
timeout -k 5 60 $d/convstream run -i $tmp/sample.mp4 --mask gaussian:size=13,sigma=3 --device cpu -o $tmp/cpu.y4m --no-progress 2>&1 | tail -1
cmp $tmp/cpu.y4m $tmp/tuned.y4m && echo "ok: tuned config output identical to the CPU"
# Bench: default spin vs spin 0, overlap suite (quick), and a tiling given by flag.
for spin in 300 0; do
  timeout -k 5 120 $d/convstream bench --suite overlap --device cuda --quick --spin-us $spin --out $out/bench-spin$spin > $out/bench-spin$spin.log 2>&1; echo "bench spin $spin exit $?"
  grep -o '"tuning":{[^}]*}' $out/bench-spin$spin/results.json | head -1
done
timeout -k 5 120 $d/convstream bench --suite kernel --device cuda --quick --dense-tiling 32x8x8x4 --separable-tiling 32x16x4x2 --out $out/bench-tiling > $out/bench-tiling.log 2>&1; echo "bench tiling exit $?"
python3 - "$out" <<'PY'
import json,sys
o=sys.argv[1]
for name in ["bench-spin300","bench-spin0","bench-tiling"]:
    r=json.load(open(f"{o}/{name}/results.json"))
    print(name, "tuning:", r.get("run",{}).get("tuning"))
    ov=r.get("overlap")
    if ov:
        rows=ov if isinstance(ov,list) else ov.get("rows",ov)
        print("  overlap fps:", [round(x.get("fps",0)) for x in (rows if isinstance(rows,list) else [])][:12])
PY
