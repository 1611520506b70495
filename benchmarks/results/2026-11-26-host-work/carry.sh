# Sourced by the run-*.sh scripts here, from the repository root on the GPU host: the carried
# folder ($d: $CARRY, else gpu-carry2) with its xz-compressed executables unpacked, the output
# folder ($out: $OUT), the library path and kernel cache, and `t`, a command bounded in time.
d=$PWD/${CARRY:-gpu-carry2}; out=${OUT:-/tmp/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$d CONVSTREAM_KERNEL_CACHE=/tmp/ck
t() { timeout -k 5 "$@"; }
python3 - "$d" <<'PY'
import glob, lzma, os, shutil, sys
for packed in glob.glob(sys.argv[1] + "/*.xz"):
    with lzma.open(packed) as i, open(packed[:-3], "wb") as o:
        shutil.copyfileobj(i, o)
    os.chmod(packed[:-3], 0o755)
PY
