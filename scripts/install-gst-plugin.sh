#!/usr/bin/env bash
# Builds the convstreamfilter GStreamer element (gst/) and installs libgstconvstream.so where
# GStreamer looks for plugins: the user's plugin folder by default
# ($XDG_DATA_HOME/gstreamer-1.0/plugins, ~/.local/share/...), or GStreamer's system plugin
# folder with --system. Installs GStreamer's development packages when they are missing.
#
# Usage: scripts/install-gst-plugin.sh [--system]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f $HOME/.cargo/env ]] && source "$HOME/.cargo/env"
scripts/install-deps.sh >/dev/null

case "${1:-}" in
    "") dest="${XDG_DATA_HOME:-$HOME/.local/share}/gstreamer-1.0/plugins" ;;
    --system) dest="$(pkg-config --variable=pluginsdir gstreamer-1.0)" ;;
    *) echo "usage: $0 [--system]" >&2; exit 2 ;;
esac

cargo build --release -p gst-plugin-convstream
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$dest"
# Stripped: the release profile keeps debug info, which would make the plugin 50 MB.
strip -o "$dest/libgstconvstream.so" "$target/release/libgstconvstream.so"
echo "installed $dest/libgstconvstream.so"
# A fresh registry scan: gst-inspect reports the element or why it could not load.
gst-inspect-1.0 convstreamfilter >/dev/null && echo "gst-inspect-1.0 convstreamfilter: found"
