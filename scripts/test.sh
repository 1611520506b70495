#!/usr/bin/env bash
# Runs the test suite on a fresh machine: installs what is missing, then `cargo test --release
# --workspace` (convstream and its GStreamer element in gst/; the element's gst-launch test runs
# the convstream binary the same command builds), then the Python package's tests against its
# wheel installed in a fresh virtual environment (scripts/python-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"
nvrtc="$(scripts/install-deps.sh | tail -n 1)"
if [[ -n $nvrtc ]]; then
    export LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CONVSTREAM_TEST_NVRTC=1 # NVRTC is there: a kernel that does not compile fails the run
fi
# The binary and the plugin as the README's scripts build them (scripts/demo.sh builds the
# binary alone, scripts/install-gst-plugin.sh the plugin alone, each with only the features its
# own package asks for, which a workspace build does not share): the README's examples that the
# tests run find them built, and no example spends its time limit compiling.
cargo build --release --bin convstream
cargo build --release -p gst-plugin-convstream
cargo test --release --workspace "$@"
# What the FFmpeg command-line corpus compared, line by line (tests/it/ffmpeg_corpus.rs):
corpus="${CARGO_TARGET_DIR:-target}/tmp/ffmpeg-corpus.txt"
[[ -f $corpus ]] && echo "$(tail -n 1 "$corpus") (each line: $corpus)"
# The console's browser test keeps its screenshots (CI's artifacts) here:
shots="${CARGO_TARGET_DIR:-target}/tmp/console-screenshots"
[[ -d $shots ]] && echo "console screenshots: $shots ($(ls "$shots" | wc -l) files)"
scripts/python-check.sh
