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
# The binaries and the plugin as `cargo build` makes them (without dev-dependencies' features):
# the README's examples that the tests run (scripts/install-gst-plugin.sh) find them built.
cargo build --release --workspace
cargo test --release --workspace "$@"
# What the FFmpeg command-line corpus compared, line by line (tests/it/ffmpeg_corpus.rs):
corpus="${CARGO_TARGET_DIR:-target}/tmp/ffmpeg-corpus.txt"
[[ -f $corpus ]] && echo "$(tail -n 1 "$corpus") (each line: $corpus)"
# The console's browser test keeps its screenshots (CI's artifacts) here:
shots="${CARGO_TARGET_DIR:-target}/tmp/console-screenshots"
[[ -d $shots ]] && echo "console screenshots: $shots ($(ls "$shots" | wc -l) files)"
scripts/python-check.sh
