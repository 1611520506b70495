#!/usr/bin/env bash
# The main job on the built-in default: generates a sample clip and filters it through
# config/default.toml (on the GPU when there is one, else the CPU). Installs what is missing first.
# Every step says what it does: the first build takes minutes, and cargo's own progress
# (a line per crate compiled, or its bar on a terminal) shows it moving.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"
echo "demo: checking the build dependencies (FFmpeg and GStreamer development packages, NVRTC)" >&2
nvrtc="$(scripts/install-deps.sh | tail -n 1)"
# NVRTC from PyPI compiles the GPU kernels; without it a GPU host falls back to the CPU.
[[ -n $nvrtc ]] && export LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "demo: building convstream (release; the first build takes a few minutes)" >&2
cargo build --release --bin convstream
echo "demo: running convstream demo (a progress bar on a terminal, then a summary)" >&2
exec cargo run --release --quiet --bin convstream -- demo "$@"
