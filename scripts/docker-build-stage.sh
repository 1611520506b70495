#!/usr/bin/env bash
# The steps of the Dockerfile's build stage, kept here so that they can be read, linted and run
# outside Docker too (on a Debian 12 machine as root, or with sudo).
#
# Usage: scripts/docker-build-stage.sh deps|ffmpeg|binary
#
#   deps    Install the build packages: clang for the FFmpeg bindings, and what
#           scripts/build-portable.sh needs (it would install most of them itself; installing
#           them here keeps them in one cached image layer).
#   ffmpeg  Build the minimal static FFmpeg (scripts/build-portable.sh ffmpeg).
#   binary  Build the portable binary (scripts/build-portable.sh binary) and put it at
#           $CONVSTREAM_BINARY_OUT (default /usr/local/bin/convstream), its kernel pack in
#           /usr/local/share/convstream/, and the licence texts it carries in
#           /usr/share/licenses/convstream, where the runtime stage copies them.
#
# The image build runs one step per RUN instruction, so that the FFmpeg layer is reused while
# only the Rust code changes.

set -euo pipefail

step="${1:-}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary_out="${CONVSTREAM_BINARY_OUT:-/usr/local/bin/convstream}"

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_build_packages() {
    local packages=(
        build-essential dpkg-dev pkg-config nasm zlib1g-dev libffmpeg-nvenc-dev  # FFmpeg
        clang libclang-dev                                                        # bindgen
        jq ca-certificates                                                        # build-portable.sh
        python3-pip                                                               # NVRTC (kernel-pack.sh)
    )
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${packages[@]}"
    as_root rm -rf /var/lib/apt/lists/*
}

build_binary() {
    "$repo_root/scripts/build-portable.sh" binary
    local built="$repo_root/dist/portable/convstream"
    [[ -x $built ]] || { echo "error: $built was not built" >&2; exit 1; }
    as_root install -D -m 0755 "$built" "$binary_out"
    as_root rm -rf /usr/share/licenses/convstream
    as_root mkdir -p /usr/share/licenses
    as_root cp -r "$repo_root/dist/portable/licenses" /usr/share/licenses/convstream
    # The kernel pack, where the binary looks from /usr/local/bin (../share/convstream/).
    local pack="$repo_root/dist/portable/convstream-kernels.pack"
    if [[ -s $pack ]]; then
        as_root install -D -m 0644 "$pack" "$(dirname "$binary_out")/../share/convstream/convstream-kernels.pack"
    fi
    "$binary_out" --version
    "$binary_out" kernels show
}

case "$step" in
    deps) install_build_packages ;;
    ffmpeg) "$repo_root/scripts/build-portable.sh" ffmpeg ;;
    binary) build_binary ;;
    -h|--help) sed -n '2,17p' "$0" ;;
    *) echo "usage: $0 deps|ffmpeg|binary" >&2; exit 2 ;;
esac
