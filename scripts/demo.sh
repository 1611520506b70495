#!/usr/bin/env bash
# The main job on the built-in default: generates a sample clip and filters it through
# config/default.toml (on the GPU when there is one, else the CPU). Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"
scripts/install-deps.sh >/dev/null
cargo run --release --quiet -- demo "$@"
