#!/usr/bin/env bash
# Makes the kernel pack a build ships: the GPU kernels compiled ahead of time for the
# architectures the build targets (`convstream kernels build`), which runs load instead of
# compiling them with NVRTC on first use. NVRTC is needed here; a GPU is not.
#
# Usage: scripts/kernel-pack.sh CONVSTREAM OUT
#
#   CONVSTREAM  the convstream binary whose kernels are packed (its kernel source and catalogue)
#   OUT         the pack to write (convstream-kernels.pack beside the binary, in the Python
#               package or in the image's /usr/local/share/convstream/)
#
# Environment:
#   CONVSTREAM_KERNEL_ARCHS  comma-separated architectures (default: the binary's own list,
#                            sm_80,sm_90,sm_100,sm_120); "none" makes no pack and exits 0
#   CONVSTREAM_NVRTC_DIR     a folder holding libnvrtc.so* (default: the system's, else the
#                            nvidia-cuda-nvrtc-cu12 wheel from PyPI, installed into
#                            ~/.cache/convstream/nvrtc when missing)
#   JOBS                     NVRTC compiles at once (default: nproc)
#
# Packs are kept in ~/.cache/convstream/kernel-packs/ by the hash of the binary's kernel
# source and catalogue (`convstream kernels show` of a pack says whether it matches), so an
# unchanged kernel source is not compiled again.
set -euo pipefail

binary="${1:-}" out="${2:-}"
[[ -n $binary && -n $out ]] || { echo "usage: $0 CONVSTREAM OUT" >&2; exit 2; }
[[ -x $binary ]] || { echo "error: $binary is not an executable" >&2; exit 1; }
archs="${CONVSTREAM_KERNEL_ARCHS:-}"
if [[ $archs == none ]]; then
    echo "kernel pack: none made (CONVSTREAM_KERNEL_ARCHS=none); kernels compile on first use" >&2
    exit 0
fi

# One copy of the binary for every step: a shared target folder's binary may be rebuilt meanwhile.
snapshot="$(mktemp -d)"
trap 'rm -rf "$snapshot"' EXIT
cp "$binary" "$snapshot/convstream"
binary="$snapshot/convstream"

# NVRTC: the folder given, the system's, or the PyPI wheel (as scripts/install-deps.sh uses in CI).
nvrtc_dir="${CONVSTREAM_NVRTC_DIR:-}"
if [[ -z $nvrtc_dir ]] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
    wheel_dir() { python3 -c 'import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null; }
    cached="$HOME/.cache/convstream/nvrtc"
    if nvrtc_dir="$(wheel_dir)"; then
        :
    elif [[ -d $cached/nvidia/cuda_nvrtc/lib ]]; then
        nvrtc_dir="$cached/nvidia/cuda_nvrtc/lib"
    else
        echo "kernel pack: installing NVRTC (nvidia-cuda-nvrtc-cu12 >= 12.8, for sm_120) from PyPI into $cached" >&2
        python3 -m pip install --quiet --disable-pip-version-check --target "$cached" 'nvidia-cuda-nvrtc-cu12>=12.8' \
            || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages --target "$cached" \
                'nvidia-cuda-nvrtc-cu12>=12.8'
        nvrtc_dir="$cached/nvidia/cuda_nvrtc/lib"
    fi
fi
[[ -n $nvrtc_dir ]] && export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The cache key: what the binary packs (its kernel source and catalogue, as `kernels show
# --catalogue` prints them) and the architectures asked for.
key="$({ "$binary" kernels show --catalogue; echo "$archs"; } | sha256sum | cut -c1-16)"
cache="$HOME/.cache/convstream/kernel-packs"
mkdir -p "$cache" "$(dirname "$out")"
if [[ -s $cache/$key.pack ]]; then
    echo "kernel pack: reusing $cache/$key.pack (same kernel source, catalogue and architectures)" >&2
else
    arch_flags=()
    [[ -n $archs ]] && arch_flags=(--arch "$archs")
    "$binary" kernels build "${arch_flags[@]+"${arch_flags[@]}"}" --jobs "${JOBS:-$(nproc)}" --out "$cache/$key.pack.tmp"
    mv "$cache/$key.pack.tmp" "$cache/$key.pack"
fi
cp "$cache/$key.pack" "$out"
CONVSTREAM_KERNEL_PACK="$out" "$binary" kernels show "$out"
