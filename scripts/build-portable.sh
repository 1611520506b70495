#!/usr/bin/env bash
# Build a self-contained convstream for hosts that have an NVIDIA driver but no FFmpeg, no Rust
# toolchain and no network (a bare GPU host).
#
# Usage: scripts/build-portable.sh [ffmpeg|binary|all|ffmpeg-cli|ffmpeg-shared|gst|wheel]  (default: all)
#
#   ffmpeg  Build a minimal static FFmpeg 5.1 from Debian bookworm's source package into a cached
#           prefix. Skipped when the prefix already holds a build made with the same configure line.
#   binary  Build the release binary and the test executables against that prefix, and gather
#           them in dist/portable/ (git-ignored), ready to copy to the GPU host.
#   all     Both, in that order.
#   ffmpeg-cli  Build FFmpeg's own `ffmpeg` program from the same source with the same
#           configure line (plus avfilter and the filters benchmarks compare with) into
#           dist/portable/ffmpeg, to measure convstream against FFmpeg side by side on a GPU host.
#   ffmpeg-shared  Build the same FFmpeg as shared libraries with Debian's sonames
#           (libavcodec.so.59...) into dist/ffmpeg-shared (which `binary` leaves alone): the
#           minimal FFmpeg that GStreamer's libav plugin (avdec_h264...) loads on a GPU host
#           instead of Debian's, whose codec libraries would weigh 200 MB.
#   gst     Build the GStreamer element and its tests against that prefix into dist/portable/gst/,
#           with the GStreamer libraries and plugins they need (for GPU hosts without GStreamer;
#           run after `binary`, whose convstream the element's tests compare with, and after
#           `ffmpeg-shared` for the libav plugin).
#   wheel   Build the Python wheel (python/, maturin) against that prefix into
#           dist/portable/wheels/: `pip install` it on a GPU host without FFmpeg's libraries
#           (scripts/build-wheel.sh --portable runs this; the static FFmpeg is built first if missing).
#
# Environment:
#   CONVSTREAM_FFMPEG_PREFIX  where the static FFmpeg is installed (default ~/.cache/convstream/ffmpeg-static)
#   CONVSTREAM_FFMPEG_WORK    where the FFmpeg source is fetched and built (default ~/.cache/convstream/ffmpeg-build)
#   JOBS                      parallel make jobs (default: nproc)
#   CONVSTREAM_PORTABLE_TESTS 0 leaves the test executables out (the image needs only the binary)
#   CONVSTREAM_PORTABLE_GPL   1 (default) adds libx264, which needs FFmpeg's --enable-gpl: the binary
#                             is then distributed under the GPL, version 2 or later (dist/licenses/
#                             has the texts). 0 leaves x264 out: an LGPL-2.1-or-later FFmpeg, and a
#                             binary under convstream's own MIT licence plus the LGPL's terms.
#
# Licences of what is linked in: FFmpeg (LGPL-2.1+, GPL-2.0+ with x264), x264 (GPL-2.0+), libvpx
# (BSD-3-Clause), dav1d and OpenH264 (BSD-2-Clause), zlib (Zlib). The build copies their licence
# texts into dist/portable/licenses/, which the image carries in /usr/share/licenses/convstream.
#
# The resulting binary links FFmpeg statically and needs only glibc (libc/libm/libgcc_s/ld-linux).
# CUDA (libcuda, libnvrtc) and NVDEC/NVENC (libnvcuvid, libnvidia-encode) are loaded at run time,
# so nothing NVIDIA-related is needed to build it.

set -euo pipefail

step="${1:-all}"
case "$step" in
    ffmpeg|binary|all|ffmpeg-cli|ffmpeg-shared|gst|wheel) ;;
    -h|--help) sed -n '2,43p' "$0"; exit 0 ;;
    *) echo "usage: $0 [ffmpeg|binary|all|ffmpeg-cli|ffmpeg-shared|gst|wheel]" >&2; exit 2 ;;
esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${CONVSTREAM_FFMPEG_PREFIX:-$HOME/.cache/convstream/ffmpeg-static}"
workdir="${CONVSTREAM_FFMPEG_WORK:-$HOME/.cache/convstream/ffmpeg-build}"
jobs="${JOBS:-$(nproc)}"
stamp="$prefix/.convstream-configure-line"

log() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run privileged commands directly as root, through sudo otherwise.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# ---------------------------------------------------------------------------------------------
# FFmpeg components. Only what convstream reads and writes: every extra component costs build
# time and binary size. All names were checked against FFmpeg 5.1's `configure --list-*`.
# cuvid decoders and nvenc encoders only need the ffnvcodec headers to build; the driver
# libraries they call are loaded at run time and may be absent (H100/H200 have no NVENC).
# ---------------------------------------------------------------------------------------------
# libdav1d: AV1 in software (FFmpeg's own av1 decoder decodes only on hardware); dav1d is
# BSD-2-Clause, built from Debian's source into the same prefix and linked statically.
decoders=(
    h264 hevc mpeg4 mpeg2video mpeg1video ffv1 rawvideo wrapped_avframe vp8 vp9 av1 libdav1d mjpeg png
    h264_cuvid hevc_cuvid vp9_cuvid av1_cuvid mpeg4_cuvid
    aac mp3 mp3float mp2 opus vorbis flac ac3 pcm_s16le pcm_s24le pcm_f32le
)
# libopenh264: H.264 in every build (Debian's libopenh264-dev, BSD-2-Clause, linked statically
# with the C++ runtime it needs), so outputs default to H.264 where libx264 is not allowed in.
# libvpx (VP8, VP9: what .webm outputs default to) and libx264 are built from Debian's source
# into the same prefix; libx264 only in the GPL build (CONVSTREAM_PORTABLE_GPL, above).
gpl="${CONVSTREAM_PORTABLE_GPL:-1}"
[[ $gpl == 0 || $gpl == 1 ]] || die "CONVSTREAM_PORTABLE_GPL must be 0 or 1, not '$gpl'"
encoders=(
    mpeg4 mpeg2video ffv1 rawvideo wrapped_avframe h264_nvenc hevc_nvenc libopenh264
    libvpx_vp8 libvpx_vp9
    aac flac pcm_s16le mjpeg png
)
((gpl)) && encoders+=(libx264)
demuxers=(
    mov matroska mpegts yuv4mpegpipe rawvideo flv h264 hevc avi rtsp sdp rtp wav aac mp3 ivf
    nut ogg m4v mjpeg image2 concat
)
muxers=(
    mp4 mov matroska webm mpegts yuv4mpegpipe rawvideo flv null avi rtsp rtp nut wav ogg h264 hevc
)
parsers=(
    h264 hevc mpeg4video mpegvideo aac aac_latm vp8 vp9 av1 mpegaudio opus vorbis flac ac3 mjpeg png
)
# dump_extradata is the configure name of the filter that FFmpeg calls "dump_extra" at run time.
bsfs=(
    h264_mp4toannexb hevc_mp4toannexb aac_adtstoasc extract_extradata vp9_superframe_split null
    dump_extradata
)
protocols=(
    file pipe udp tcp rtp http rtmp crypto hls data
)

# The filters convstream's own graphs can use: `-vf` text is read by libavfilter, the
# convolution family's options are taken from it, and the other filters run in-process.
graph_filters=(
    buffer buffersink null copy convolution sobel prewitt roberts gblur boxblur unsharp
    scale format fps crop pad setsar setdar transpose hflip vflip rotate setpts settb trim
)

# Start from nothing (--disable-everything, --disable-autodetect) so the result never picks up
# whatever happens to be installed on the build machine, then enable exactly what is needed.
configure_args=(
    --prefix="$prefix"
    --disable-everything --disable-programs --disable-doc --disable-autodetect
    --enable-ffnvcodec --enable-nvdec --enable-nvenc --enable-cuvid
    --enable-static --disable-shared --enable-pic
    --enable-zlib   # png and other zlib-based codecs; zlib is linked into the binary too
    --enable-libopenh264 --enable-libdav1d --enable-libvpx --pkg-config-flags=--static
    --enable-swscale --enable-swresample --enable-avformat --enable-avcodec
    --disable-avdevice --disable-postproc
    --enable-avfilter "--enable-filter=$(IFS=,; echo "${graph_filters[*]}")"
    --enable-network
    # FFmpeg compiles with -g by default: its DWARF would be ~30 MB of every linked executable.
    --disable-debug
)
((gpl)) && configure_args+=(--enable-gpl --enable-libx264)
for kind in decoder encoder demuxer muxer parser bsf protocol; do
    declare -n list="${kind}s"
    configure_args+=("--enable-$kind=$(IFS=,; echo "${list[*]}")")
    unset -n list
done

# Install Debian packages that are not installed yet (the script must work on a fresh machine).
ensure_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        as_root apt-get update
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    fi
}

# `apt-get source` needs a deb-src entry for bookworm main. Debian images ship binary entries
# only, so add one (deb822 format, like /etc/apt/sources.list.d/debian.sources) when missing.
# The security suite is included so that the source matches the patched binary packages.
ensure_deb_src() {
    if apt-get indextargets --format '$(IDENTIFIER) $(URI)' 2>/dev/null \
        | grep -Eq '^Sources .*/dists/bookworm/main/source/'; then
        return
    fi
    log "adding a deb-src entry for bookworm main"
    as_root tee /etc/apt/sources.list.d/convstream-src.sources >/dev/null <<'EOF'
# Source packages, used by convstream's scripts/build-portable.sh to build a static FFmpeg.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    as_root apt-get update
}

# configure only warns about component names it does not know, and the component is then silently
# missing. Fail instead, so a typo cannot ship a binary that lacks a codec.
check_component_names() {
    local kind unknown=() name
    for kind in decoder encoder demuxer muxer parser bsf protocol; do
        local known
        known=" $(./configure "--list-${kind}s" | tr -s ' \t' '\n\n' | tr '\n' ' ') "
        declare -n list="${kind}s"
        for name in "${list[@]}"; do
            [[ $known == *" $name "* ]] || unknown+=("$kind:$name")
        done
        unset -n list
    done
    ((${#unknown[@]} == 0)) || die "this FFmpeg does not know: ${unknown[*]}"
}

# dav1d from Debian's source package (1.0 on bookworm), as a static library in the FFmpeg
# prefix, where FFmpeg's configure finds it through pkg-config.
build_dav1d() {
    if [[ -f $prefix/lib/libdav1d.a && -f $prefix/lib/pkgconfig/dav1d.pc && -f $prefix/share/licenses/dav1d/COPYING ]]; then
        log "static dav1d already built in $prefix, skipping"
        return
    fi
    ensure_packages build-essential dpkg-dev nasm meson ninja-build
    ensure_deb_src
    local dir="$workdir-dav1d" started=$SECONDS
    log "fetching Debian's dav1d source into $dir"
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
    apt-get source --download-only dav1d
    dpkg-source --no-check -x "$(ls dav1d_*.dsc | sort -V | tail -n 1)" src >/dev/null
    cd src
    meson setup build --prefix="$prefix" --libdir=lib --buildtype=release --default-library=static \
        -Denable_tools=false -Denable_tests=false -Denable_examples=false
    ninja -C build -j"$jobs" install
    keep_licence dav1d COPYING
    log "dav1d built in $((SECONDS - started)) s, installed in $prefix"
    cd / && rm -rf "$dir"
}

# Copies licence files of the source tree in the current folder to $prefix/share/licenses/NAME/,
# from where build_binary gathers them next to the binary.
keep_licence() {
    local name="$1" file
    shift
    mkdir -p "$prefix/share/licenses/$name"
    for file in "$@"; do
        cp "$file" "$prefix/share/licenses/$name/"
    done
}

# Fetches Debian's source package NAME into a fresh DIR/src and enters it.
fetch_debian_source() {
    local name="$1" dir="$2"
    ensure_packages build-essential dpkg-dev nasm
    ensure_deb_src
    log "fetching Debian's $name source into $dir"
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
    apt-get source --download-only "$name"
    dpkg-source --no-check -x "$(ls "${name}"_*.dsc | sort -V | tail -n 1)" src >/dev/null
    cd src
}

# libvpx from Debian's source package (1.12 on bookworm): only the VP8 and VP9 encoders (FFmpeg
# decodes VP8/VP9 itself), static, in the FFmpeg prefix.
build_vpx() {
    if [[ -f $prefix/lib/libvpx.a && -f $prefix/lib/pkgconfig/vpx.pc && -f $prefix/share/licenses/libvpx/LICENSE ]]; then
        log "static libvpx already built in $prefix, skipping"
        return
    fi
    local dir="$workdir-vpx" started=$SECONDS
    fetch_debian_source libvpx "$dir"
    # High bit depth in VP9, as Debian builds it: outputs keep 10- and 12-bit inputs' depth.
    ./configure --prefix="$prefix" --libdir="$prefix/lib" --enable-static --disable-shared --enable-pic \
        --disable-examples --disable-tools --disable-docs --disable-unit-tests --disable-install-docs \
        --disable-install-bins --disable-decode-perf-tests --disable-encode-perf-tests --disable-webm-io \
        --disable-libyuv --disable-vp8-decoder --disable-vp9-decoder --enable-vp8-encoder --enable-vp9-encoder \
        --enable-vp9-highbitdepth
    make -j"$jobs"
    make install >/dev/null
    keep_licence libvpx LICENSE PATENTS
    log "libvpx built in $((SECONDS - started)) s, installed in $prefix"
    cd / && rm -rf "$dir"
}

# x264 from Debian's source package (0.164 on bookworm): the library only (no CLI), static, in
# the FFmpeg prefix, with every bit depth it has (8 and 10).
build_x264() {
    if [[ -f $prefix/lib/libx264.a && -f $prefix/lib/pkgconfig/x264.pc && -f $prefix/share/licenses/x264/COPYING ]]; then
        log "static x264 already built in $prefix, skipping"
        return
    fi
    local dir="$workdir-x264" started=$SECONDS
    fetch_debian_source x264 "$dir"
    ./configure --prefix="$prefix" --libdir="$prefix/lib" --enable-static --enable-pic --disable-cli \
        --disable-opencl --disable-avs --disable-swscale --disable-lavf --disable-ffms --disable-gpac \
        --disable-lsmash --disable-bashcompletion
    make -j"$jobs"
    make install-lib-static >/dev/null
    keep_licence x264 COPYING
    log "x264 built in $((SECONDS - started)) s, installed in $prefix"
    cd / && rm -rf "$dir"
}

# The libraries FFmpeg links from the prefix, each skipped when already there.
build_codec_libs() {
    build_dav1d
    build_vpx
    ((gpl)) && build_x264
    return 0
}

build_ffmpeg() {
    local wanted="${configure_args[*]}"
    if [[ -f $prefix/lib/libavcodec.a && -f $stamp && "$(cat "$stamp")" == "$wanted" ]]; then
        log "static FFmpeg already built in $prefix (same configure line), skipping"
        return
    fi
    build_codec_libs
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

    # nasm: FFmpeg's x86 assembly (without it the software decoders are several times slower).
    # libffmpeg-nvenc-dev: the ffnvcodec headers for cuvid/nvdec/nvenc. dpkg-dev: dpkg-source.
    ensure_packages build-essential dpkg-dev pkg-config nasm zlib1g-dev libffmpeg-nvenc-dev libopenh264-dev
    ensure_deb_src

    log "fetching Debian's FFmpeg source into $workdir"
    rm -rf "$workdir"
    mkdir -p "$workdir"
    cd "$workdir"
    apt-get source --download-only ffmpeg
    local dsc
    dsc="$(ls ffmpeg_*.dsc 2>/dev/null | sort -V | tail -n 1)"
    [[ -n $dsc ]] || die "apt-get source did not download ffmpeg"
    # dpkg-source applies Debian's patches (security fixes) on top of the upstream tarball.
    dpkg-source --no-check -x "$dsc" src >/dev/null
    cd src
    local version
    version="$(cat VERSION 2>/dev/null || head -n 1 RELEASE)"
    [[ $version == 5.1* ]] || die "expected FFmpeg 5.1, got $version"

    check_component_names

    local started=$SECONDS
    log "configuring FFmpeg $version for $prefix"
    ./configure "${configure_args[@]}"

    log "building FFmpeg with $jobs jobs"
    make -j"$jobs"
    # Replace, not merge: stale libraries or headers from another configuration must not survive.
    # Only FFmpeg's own files are removed, in case the prefix is shared (e.g. /usr/local).
    local lib
    for lib in avcodec avdevice avfilter avformat avutil postproc swresample swscale; do
        rm -rf "$prefix/lib/lib$lib".* "$prefix/lib/pkgconfig/lib$lib.pc" "$prefix/include/lib$lib"
    done
    rm -rf "$prefix/share/convstream" "$stamp"
    make install
    # Keep the generated configuration next to the libraries, to check later what was enabled.
    mkdir -p "$prefix/share/convstream"
    cp config.h config_components.h ffbuild/config.log "$prefix/share/convstream/" 2>/dev/null || true
    printf '%s\n' "$dsc" >"$prefix/share/convstream/source"
    rm -rf "$prefix/share/licenses/ffmpeg"
    keep_licence ffmpeg COPYING.LGPLv2.1 COPYING.GPLv2 LICENSE.md
    printf '%s' "$wanted" >"$stamp"
    log "FFmpeg $version built in $((SECONDS - started)) s, installed in $prefix"

    # The source tree is not needed any more: only the prefix is cached.
    cd /
    rm -rf "$workdir/src"
}

# FFmpeg's CLI, for side-by-side measurements: the same source and configure line as the
# libraries convstream links, with the `ffmpeg` program, libavfilter and the filters compared
# with (null sinks, format/scale, gblur, convolution) added. Built in its own folder, so the
# cached library prefix is untouched.
filters=(null nullsink anull anullsink format aformat scale gblur convolution copy setpts aresample split trim atrim)

# Fetches Debian's FFmpeg source (with its patches) into DIR/src, a fresh DIR, and enters it.
fetch_source_into() {
    local dir="$1"
    build_codec_libs
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    ensure_packages build-essential dpkg-dev pkg-config nasm zlib1g-dev libffmpeg-nvenc-dev libopenh264-dev
    ensure_deb_src
    log "fetching Debian's FFmpeg source into $dir"
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
    apt-get source --download-only ffmpeg
    dpkg-source --no-check -x "$(ls ffmpeg_*.dsc | sort -V | tail -n 1)" src >/dev/null
    cd src
}

build_ffmpeg_cli() {
    local dir="$workdir-cli" dist="$repo_root/dist/portable" arg args=()
    for arg in "${configure_args[@]}"; do
        case "$arg" in
            --prefix=*) args+=("--prefix=$dir/prefix") ;;
            --disable-programs) args+=(--disable-programs --enable-ffmpeg) ;;
            --enable-filter=*) args+=("--enable-filter=$(IFS=,; echo "${graph_filters[*]},${filters[*]}")") ;;
            *) args+=("$arg") ;;
        esac
    done
    fetch_source_into "$dir"
    local started=$SECONDS
    ./configure "${args[@]}"
    make -j"$jobs" ffmpeg
    mkdir -p "$dist"
    strip -o "$dist/ffmpeg" ffmpeg
    log "FFmpeg's CLI built in $((SECONDS - started)) s: $dist/ffmpeg"
    "$dist/ffmpeg" -hide_banner -version | head -n 1
    cd / && rm -rf "$dir"
}

# The static build's components as shared libraries with Debian's sonames, libavfilter with
# convstream's graph filters (gst-libav links it), for GStreamer's libav plugin on a GPU host.
build_ffmpeg_shared() {
    local dir="$workdir-shared" dist="$repo_root/dist/ffmpeg-shared" arg args=()
    for arg in "${configure_args[@]}"; do
        case "$arg" in
            --prefix=*) args+=("--prefix=$dir/prefix") ;;
            --enable-static) args+=(--disable-static) ;;
            --disable-shared) args+=(--enable-shared) ;;
            # GStreamer's libav plugin has its own AV1 decoders to choose from (av1dec, dav1ddec).
            --enable-libdav1d) ;;
            # Encoders: the plugin decodes only, and stays LGPL.
            --enable-gpl|--enable-libx264|--enable-libvpx) ;;
            --pkg-config-flags=--static) ;;
            *) args+=("$arg") ;;
        esac
    done
    fetch_source_into "$dir"
    local started=$SECONDS
    ./configure "${args[@]}"
    make -j"$jobs"
    make install >/dev/null
    rm -rf "$dist" && mkdir -p "$dist"
    local lib
    for lib in "$dir"/prefix/lib/lib*.so.*; do
        [[ -L $lib ]] && [[ $(basename "$lib") =~ \.so\.[0-9]+$ ]] || continue
        strip -o "$dist/$(basename "$lib")" "$(readlink -f "$lib")"
    done
    log "shared FFmpeg built in $((SECONDS - started)) s: $dist"
    ls -la "$dist"
    cd / && rm -rf "$dir"
}

# Libraries a portable binary may need on the target: glibc and the GCC unwinder only.
allowed_libs='^(linux-vdso\.so|libc\.so|libm\.so|libgcc_s\.so|ld-linux[-a-z0-9_]*\.so|libdl\.so|libpthread\.so|librt\.so)'

# Points cargo at the static FFmpeg in $prefix, with the link arguments and the target folder
# every portable build shares.
portable_env() {
    [[ -f $prefix/lib/libavcodec.a ]] || die "no static FFmpeg in $prefix: run '$0 ffmpeg' first"
    cd "$repo_root"

    # ffmpeg-sys-next links the static libraries found in FFMPEG_DIR; pkg-config is pointed at
    # the same prefix so that nothing can resolve to a system FFmpeg.
    export FFMPEG_DIR="$prefix"
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    export PKG_CONFIG_ALL_STATIC=1
    # With FFMPEG_DIR, ffmpeg-sys-next links only the av*/sw* archives of the enabled ffmpeg-next
    # features, not FFmpeg's own dependencies. libavcodec also needs libswresample (the opus
    # decoder resamples) and zlib (png, ...). Link them statically, after everything else:
    # -l:libz.a names the archive itself, so libz.so is never picked. libavutil is named again
    # because libswresample depends on it and GNU ld resolves archives in order.
    # (FFmpeg's .pc files also list -latomic, but no object here needs it on x86-64.)
    # OpenH264 is C++: its archive and the C++ runtime are linked statically too, so the binary
    # still needs nothing beyond glibc and libgcc_s. dav1d's archive is in the prefix itself.
    ensure_packages libopenh264-dev
    local link_args=(
        "-L$prefix/lib" -l:libswresample.a -l:libavutil.a -l:libz.a -l:libopenh264.a -l:libstdc++.a
        -l:libdav1d.a -l:libvpx.a
    )
    # The stamp (FFmpeg's configure line) says whether this prefix's FFmpeg was built with x264.
    grep -q -- '--enable-libx264' "$stamp" && link_args+=(-l:libx264.a)
    [[ $prefix != *[[:space:]]* ]] || die "RUSTFLAGS cannot carry a prefix with spaces: $prefix"
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$(printf -- '-C link-arg=%s ' "${link_args[@]}")"
    # A target folder of its own: other RUSTFLAGS and another FFmpeg would otherwise make every
    # ordinary build after this one (and this one after it) rebuild from scratch.
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo_root/target/portable}"
    local target="$CARGO_TARGET_DIR"

    # Cargo does not notice when the libraries in FFMPEG_DIR change, so a rebuilt prefix would
    # not be relinked: remember which build target/ was linked against and start over if needed.
    linked="$target/release/.convstream-ffmpeg-stamp"
    if ! cmp -s "$stamp" "$linked"; then
        cargo clean --release -p ffmpeg-sys-next
        mkdir -p "$target/release"
    fi
}

build_binary() {
    portable_env
    local target="$CARGO_TARGET_DIR"
    log "building the release binary"
    cargo build --release --features static-ffmpeg
    cp "$stamp" "$linked"

    local test_exes=()
    if [[ ${CONVSTREAM_PORTABLE_TESTS:-1} != 0 ]]; then
        log "building the test executables"
        # The JSON messages name each test executable; cargo itself prints only a summary.
        local tests_json
        # The binary's integration tests (tests/it/main.rs -> it) and core's own, the engines' and
        # GPU tests (crates/core/tests/engines/main.rs -> engines).
        tests_json="$(cargo test --release -p convstream -p convstream-core --features convstream/static-ffmpeg \
            --no-run --message-format=json)"
        # Keep the integration tests and the unit-test binaries of gpu*/engine* targets.
        ensure_packages jq
        mapfile -t test_exes < <(jq -r '
            select(.reason == "compiler-artifact" and .executable != null and .profile.test == true)
            | select((.target.kind | index("test")) or (.target.name | test("^(gpu|engine)")))
            | .executable' <<<"$tests_json" | sort -u)
        ((${#test_exes[@]})) || die "cargo named no test executables"
    fi

    local dist="$repo_root/dist/portable"
    log "gathering the binaries in $dist"
    rm -rf "$dist"
    mkdir -p "$dist/tests"
    cp "$target/release/convstream" "$dist/"
    local exe name
    for exe in "${test_exes[@]+"${test_exes[@]}"}"; do
        # cargo appends a hash to test executables (tests/it/main.rs -> it-0123abcd); drop it.
        name="$(basename "$exe")"
        cp "$exe" "$dist/tests/${name%-*}"
    done

    # The kernels compiled ahead of time for the GPUs the build targets, found beside the
    # binary: a fresh host then compiles nothing on first use.
    log "making the kernel pack"
    "$repo_root/scripts/kernel-pack.sh" "$dist/convstream" "$dist/convstream-kernels.pack"

    # The folder is copied to the GPU host by hand: keep it small. Debug info of the test
    # executables goes first if needed; the main binary keeps its line tables for backtraces.
    local budget=$((40 * 1024 * 1024)) total
    total=$(du -sb "$dist" | cut -f1)
    if ((total > budget)) && compgen -G "$dist/tests/*" >/dev/null; then
        log "$((total / 1048576)) MB is over 40 MB: stripping debug info from the test executables"
        strip --strip-debug "$dist"/tests/*
        total=$(du -sb "$dist" | cut -f1)
    fi
    ((total <= budget)) || echo "warning: dist/portable is $((total / 1048576)) MB, over 40 MB" >&2

    log "shared libraries needed by convstream"
    ldd "$dist/convstream"
    local unexpected
    unexpected="$(ldd "$dist/convstream" | awk '{sub(".*/", "", $1); print $1}' \
        | grep -Ev "$allowed_libs" || true)"
    [[ -z $unexpected ]] || die "the binary is not portable, it needs: $(echo $unexpected)"
    # The target must have at least this glibc.
    echo "newest glibc symbol version needed: $(objdump -T "$dist/convstream" \
        | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"

    gather_licences "$dist/licenses"
    check_portable_binary "$dist/convstream"

    log "portable build ready"
    ls -l "$dist" "$dist/tests"
    echo "total: $(du -sh "$dist" | cut -f1) in $dist"
}

# The licence texts of what the binary links, and a note of the terms it goes under as a
# whole: GPL-2.0-or-later where FFmpeg was built with x264 (the configure line says so).
gather_licences() {
    local to="$1"
    rm -rf "$to" && mkdir -p "$to"
    cp -r "$prefix/share/licenses/." "$to/"
    # The prefix keeps x264 for GPL builds; an LGPL build does not link it.
    grep -q -- '--enable-libx264' "$stamp" || rm -rf "$to/x264"
    mkdir -p "$to/openh264" "$to/zlib"
    cp /usr/share/doc/libopenh264-7/copyright "$to/openh264/copyright"
    cp /usr/share/doc/zlib1g/copyright "$to/zlib/copyright"
    local terms
    if grep -q -- '--enable-gpl' "$stamp"; then
        terms="the GNU General Public License, version 2 or later (ffmpeg/COPYING.GPLv2): it links
x264 (GPL-2.0-or-later) into an FFmpeg configured with --enable-gpl. Its source: convstream's
repository at the binary's commit (convstream --version) and the Debian source packages named
below, built by scripts/build-portable.sh."
    else
        terms="the MIT licence (convstream's own code) together with the GNU Lesser General Public
License, version 2.1 or later, of the FFmpeg libraries it links statically (ffmpeg/COPYING.LGPLv2.1):
scripts/build-portable.sh rebuilds it from convstream's repository and the Debian source packages
named below, which lets the FFmpeg part be replaced."
    fi
    cat >"$to/README" <<NOTE
This convstream binary is distributed under $terms

Linked statically: FFmpeg 5.1 ($(cat "$prefix/share/convstream/source" 2>/dev/null || echo "Debian's ffmpeg source package")),
and $(cd "$to" && ls -d -- */ | tr -d / | tr '\n' ' ')(a folder each, with its licence).
NOTE
}

# The binary must take every example config as it is and encode what they ask for: H.264
# with libx264 (where built in) into .mp4, VP9 (the default) into .webm.
check_portable_binary() {
    local binary="$1" config scratch
    log "checking every example config with the portable binary"
    local x264=0 said
    grep -q -- '--enable-libx264' "$stamp" && x264=1
    for config in "$repo_root"/config/examples/*.toml "$repo_root"/deploy/config.toml; do
        if ((!x264)) && grep -q '^codec = "libx264"' "$config"; then
            # An LGPL build has no x264: the config must be refused, naming what the build has.
            said="$("$binary" check --config "$config" 2>&1)" && die "$config names libx264, yet check passed"
            [[ $said == *'`libx264` is not a video encoder this convstream build has; for the'* ]] \
                || die "$config: check did not name the encoders this build has: $said"
            echo "ok: $config is refused (it names libx264, which CONVSTREAM_PORTABLE_GPL=0 leaves out)"
            continue
        fi
        (cd "$(dirname "$config")" && "$binary" check --config "$config" >/dev/null) \
            || die "$binary check --config $config failed (output above)"
        echo "ok: $config"
    done
    scratch="$(mktemp -d)"
    "$binary" demo --device cpu --dir "$scratch" >"$scratch/demo.log" 2>&1 \
        || { cat "$scratch/demo.log"; die "convstream demo failed"; }
    local runs=(libvpx-vp9:webm)
    ((x264)) && runs+=(libx264:mp4)
    local run codec container
    for run in "${runs[@]}"; do
        codec="${run%%:*}" container="${run##*:}"
        if ! "$binary" run --device cpu --no-progress -i "$scratch/sample.mp4" --frames 10 -c:v "$codec" \
            "$scratch/out.$container" >"$scratch/run.log" 2>&1 || [[ ! -s $scratch/out.$container ]]; then
            cat "$scratch/run.log"
            rm -rf "$scratch"
            die "a short run to .$container with $codec failed"
        fi
        echo "ok: a short run to .$container with $codec"
    done
    rm -rf "$scratch"
}

# The GStreamer element for a GPU host without GStreamer: the plugin (which links no FFmpeg) and
# its test executables, with this machine's GStreamer libraries, gst-launch-1.0 and
# the few plugins the tests and benchmarks use, in dist/portable/gst/ (source its env.sh there).
build_gst() {
    portable_env
    local target="$CARGO_TARGET_DIR" gst="$repo_root/dist/portable/gst"
    log "building the GStreamer element"
    ensure_packages jq
    cargo build --release -p gst-plugin-convstream
    local tests_json test_exe
    tests_json="$(cargo test --release -p gst-plugin-convstream --no-run --message-format=json)"
    test_exe="$(jq -r 'select(.reason == "compiler-artifact" and .executable != null and .target.name == "element") | .executable' <<<"$tests_json" | tail -n 1)"
    [[ -n $test_exe ]] || die "cargo named no element test executable"
    local decoders_exe
    decoders_exe="$(jq -r 'select(.reason == "compiler-artifact" and .executable != null and .target.name == "decoders") | .executable' <<<"$tests_json" | tail -n 1)"
    [[ -n $decoders_exe ]] || die "cargo named no decoders test executable"
    cp "$stamp" "$linked"

    # The test finds the plugin beside itself (as in target/release/deps) and convstream one
    # folder up; gst-launch is given the plugin in a folder of its own.
    rm -rf "$gst"
    mkdir -p "$gst/release/deps" "$gst/lib" "$gst/plugins" "$gst/bin"
    strip -o "$gst/release/deps/element" "$test_exe"
    strip -o "$gst/release/deps/decoders" "$decoders_exe"
    strip -o "$gst/release/deps/libgstconvstream.so" "$target/release/libgstconvstream.so"
    mkdir -p "$gst/plugin"
    cp "$gst/release/deps/libgstconvstream.so" "$gst/plugin/"
    [[ -f $repo_root/dist/portable/convstream ]] && strip -o "$gst/release/convstream" "$repo_root/dist/portable/convstream"
    local plugins_dir launch
    plugins_dir="$(pkg-config --variable=pluginsdir gstreamer-1.0)"
    launch="$(command -v gst-launch-1.0)" || die "gst-launch-1.0 not found (gstreamer1.0-tools)"
    cp "$launch" "$(command -v gst-inspect-1.0)" "$gst/bin/"
    local plugin
    # The element's own tests' elements, and the decoders and demuxers it is tested behind
    # (decoders.rs): FFmpeg's (libav), NVIDIA's (nvcodec), openh264, libvpx.
    for plugin in coreelements videotestsrc y4menc videoconvertscale videoconvert imagefreeze rawparse debugutilsbad \
        app isomp4 videoparsersbad matroska mpegtsdemux libav nvcodec openh264 vpx; do
        [[ -f $plugins_dir/libgst$plugin.so ]] && cp "$plugins_dir/libgst$plugin.so" "$gst/plugins/"
    done
    # The libav plugin loads the minimal shared FFmpeg (same sonames as Debian's), not
    # Debian's with its codec libraries.
    local shared="$repo_root/dist/ffmpeg-shared"
    [[ -d $shared ]] || die "no $shared: run '$0 ffmpeg-shared' first"
    cp "$shared"/lib*.so.* "$gst/lib/"
    # Every library these need beyond glibc, from this machine.
    local file lib
    for file in "$gst"/release/deps/element "$gst"/release/deps/decoders "$gst"/plugin/libgstconvstream.so "$gst"/bin/* "$gst"/plugins/*; do
        LD_LIBRARY_PATH="$shared" ldd "$file" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
            basename "$lib" | grep -Eq "$allowed_libs" || cp -n "$lib" "$gst/lib/"
        done
    done
    cat >"$gst/env.sh" <<'ENV'
# Source this on the GPU host: the carried GStreamer, scanned in-process (no plugin scanner).
# The element itself is not on the plugin path: its tests register it statically (a scanned
# copy would clash with that), and gst-launch is given GST_PLUGIN_PATH=$gst_root/plugin.
gst_root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LD_LIBRARY_PATH="$gst_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$gst_root/bin:$PATH"
export GST_PLUGIN_SYSTEM_PATH="$gst_root/plugins"
export GST_REGISTRY_FORK=no
export GST_REGISTRY="${TMPDIR:-/tmp}/convstream-gst-registry.bin"
ENV
    log "GStreamer element ready"
    du -sh "$gst"/*
}

build_wheel() {
    portable_env
    log "building the Python wheel"
    # scripts/build-wheel.sh --portable puts maturin (from its own virtual environment) on PATH.
    command -v maturin >/dev/null || die "maturin not found: run scripts/build-wheel.sh --portable"
    # The kernel pack goes into the package, beside the extension that looks for it there; it is
    # made with this tree's binary (the same kernel source as the extension).
    if [[ ${CONVSTREAM_KERNEL_ARCHS:-} != none ]]; then
        cargo build --release --features static-ffmpeg --bin convstream
        "$repo_root/scripts/kernel-pack.sh" "$CARGO_TARGET_DIR/release/convstream" python/convstream/convstream-kernels.pack
    fi
    maturin build --release --manifest-path python/Cargo.toml --features static-ffmpeg \
        --compatibility linux --interpreter "${PYTHON:-python3}" --out dist/portable/wheels
    rm -f python/convstream/convstream-kernels.pack
    cp "$stamp" "$linked"
    local wheel
    wheel="$(ls -t dist/portable/wheels/convstream-*.whl | head -n 1)"
    # The extension must need nothing beyond glibc (CUDA is loaded at run time).
    local unpacked
    unpacked="$(mktemp -d)"
    "${PYTHON:-python3}" -m zipfile -e "$wheel" "$unpacked"
    if ldd "$unpacked"/convstream/_convstream*.so | awk '{print $1}' | xargs -n 1 basename | grep -Ev "$allowed_libs"; then
        die "the wheel's extension links libraries beyond glibc (listed above)"
    fi
    if [[ ${CONVSTREAM_KERNEL_ARCHS:-} != none && ! -s $unpacked/convstream/convstream-kernels.pack ]]; then
        die "the wheel has no convstream/convstream-kernels.pack"
    fi
    rm -rf "$unpacked"
    log "wheel ready: $wheel"
}

case "$step" in
    ffmpeg) build_ffmpeg ;;
    wheel) [[ -f $prefix/lib/libavcodec.a ]] || build_ffmpeg; build_wheel ;;
    binary) build_binary ;;
    gst) build_gst ;;
    all) build_ffmpeg; build_binary ;;
    ffmpeg-cli) build_ffmpeg_cli ;;
    ffmpeg-shared) build_ffmpeg_shared ;;
esac
