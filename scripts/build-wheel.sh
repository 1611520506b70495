#!/usr/bin/env bash
# Builds the Python wheel (python/: PyO3 + maturin, abi3 for CPython >= 3.9) into dist/wheels/.
#
# Usage: scripts/build-wheel.sh [--portable]
#
#   (no flag)   links Debian's FFmpeg libraries (libavcodec59...): for this machine, CI and any
#               host that has them (scripts/install-deps.sh installs them).
#   --portable  links the static FFmpeg of scripts/build-portable.sh (~/.cache/convstream/
#               ffmpeg-static, built first when missing) with the `static-ffmpeg` feature, into
#               dist/portable/wheels/: the wheel then needs only glibc, for a GPU host without
#               FFmpeg's libraries.
#
# The wheel carries the kernel pack (convstream/convstream-kernels.pack, scripts/kernel-pack.sh):
# GPU kernels compiled ahead of time, so a first run compiles nothing.
#
# Install it with: python3 -m pip install dist/wheels/convstream-*.whl
# maturin comes from PyPI into a virtual environment of its own (~/.cache/convstream/maturin),
# so a system Python that refuses pip installs (PEP 668) is left alone; $PYTHON (default
# python3) is the interpreter the wheel is tagged for (any CPython >= 3.9: the wheel is abi3).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"

python="$(command -v "${PYTHON:-python3}")"
tools="${CONVSTREAM_MATURIN_VENV:-$HOME/.cache/convstream/maturin}"
if [[ ! -x $tools/bin/maturin ]]; then
    "$python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check 'maturin>=1.7,<2'
fi
export PATH="$tools/bin:$PATH"

case "${1:-}" in
    --portable)
        exec scripts/build-portable.sh wheel
        ;;
    "")
        # The kernel pack goes into the package, beside the extension that looks for it there
        # (scripts/kernel-pack.sh; CONVSTREAM_KERNEL_ARCHS=none leaves it out).
        if [[ ${CONVSTREAM_KERNEL_ARCHS:-} != none ]]; then
            cargo build --release --bin convstream
            scripts/kernel-pack.sh "${CARGO_TARGET_DIR:-target}/release/convstream" python/convstream/convstream-kernels.pack
        fi
        # The platform tag says linux, not manylinux: the extension links the host's FFmpeg.
        maturin build --release --manifest-path python/Cargo.toml --compatibility linux \
            --interpreter "$python" --out dist/wheels
        rm -f python/convstream/convstream-kernels.pack
        ;;
    *)
        echo "usage: $0 [--portable]" >&2
        exit 2
        ;;
esac
