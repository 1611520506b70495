# syntax=docker/dockerfile:1
#
# convstream serve on GPU hosts (deploy/README.md says how to build, run and check it).
#
# Build stage: the portable binary, linked against a minimal static FFmpeg made from Debian's
# source package (scripts/build-portable.sh). Its steps live in scripts/docker-build-stage.sh, which
# CI lints and which runs the same way outside Docker.
#
# Runtime stage: NVIDIA's CUDA runtime image, which brings libnvrtc (kernels the image's kernel
# pack lacks are compiled for the GPU on first use). libcuda and the NVDEC/NVENC libraries come from the host's driver through the
# NVIDIA Container Toolkit, as NVIDIA_DRIVER_CAPABILITIES asks.
#
# Build arguments (deploy/README.md has examples):
#   BUILD_IMAGE    the build stage's base: a Debian bookworm image with a Rust toolchain.
#   RUNTIME_IMAGE  the runtime stage's base. The image needs libnvrtc from it on a GPU host; any
#                  Debian or Ubuntu image with apt runs it on the CPU (scripts/image-check.sh
#                  builds it on a local Debian base, where the upstream images cannot be pulled).
#   CONVSTREAM_PORTABLE_GPL  1 (default): FFmpeg with libx264, so the image's binary is under the
#                  GPL, version 2 or later; 0: without x264, an LGPL-2.1-or-later FFmpeg (the
#                  default .mp4 encoder is then OpenH264). Pass IMAGE_LICENSES to match.
#   IMAGE_LICENSES the image's licence label: GPL-2.0-or-later (default), or
#                  "MIT AND LGPL-2.1-or-later" for CONVSTREAM_PORTABLE_GPL=0.
#   BINARY         where the binary comes from: "build" (default) compiles it in the build stage;
#                  "portable" copies dist/portable/convstream, made beforehand on a Debian 12 host
#                  by scripts/build-portable.sh (the same build the build stage runs), for hosts
#                  whose builds cannot get a Rust toolchain. The build stage is then skipped, and
#                  the runtime stage is the same either way.
#
# Licences: /usr/share/licenses/convstream/ holds the texts of what the binary links (FFmpeg,
# x264, libvpx, dav1d, OpenH264, zlib) and a README saying which terms the binary is under.
ARG BUILD_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04
ARG BINARY=build

FROM ${BUILD_IMAGE} AS build
ARG CONVSTREAM_PORTABLE_GPL=1
WORKDIR /src
COPY scripts/docker-build-stage.sh scripts/
RUN scripts/docker-build-stage.sh deps
# FFmpeg in its own layer: it changes far less often than the code.
COPY scripts/build-portable.sh scripts/
RUN scripts/docker-build-stage.sh ffmpeg
COPY . .
# Cache mounts keep the crates and the compiled dependencies between image builds.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    scripts/docker-build-stage.sh binary

# The binary made beforehand by scripts/build-portable.sh (BINARY=portable).
FROM scratch AS portable
COPY dist/portable/convstream /usr/local/bin/convstream
COPY dist/portable/convstream-kernels.pack /usr/local/share/convstream/convstream-kernels.pack
COPY dist/portable/licenses /usr/share/licenses/convstream

# The stage the runtime stage takes the binary from, as BINARY chooses.
FROM ${BINARY} AS binary

FROM ${RUNTIME_IMAGE} AS runtime
# The build context has no .git, so the binary reports its commit as "unknown": pass it here
# (docker build --build-arg VCS_REF="$(git rev-parse --short=12 HEAD)" .) to label the image.
ARG VCS_REF=unknown
ARG IMAGE_LICENSES=GPL-2.0-or-later
LABEL org.opencontainers.image.title="convstream" \
      org.opencontainers.image.description="Real-time 2D convolution filtering of video on NVIDIA GPUs (serve mode)" \
      org.opencontainers.image.licenses="${IMAGE_LICENSES}" \
      org.opencontainers.image.revision="${VCS_REF}"
# curl only serves the HEALTHCHECK below (convstream has no health-check subcommand).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 convstream \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/convstream --no-create-home \
       --shell /usr/sbin/nologin convstream \
    && mkdir -p /etc/convstream /data/out /var/cache/convstream/kernels \
    && chown -R 10001:10001 /data /var/cache/convstream
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility,video \
    CONVSTREAM_KERNEL_CACHE=/var/cache/convstream/kernels
COPY --from=binary /usr/local/bin/convstream /usr/local/bin/convstream
# The kernels compiled ahead of time (scripts/kernel-pack.sh): a fresh container compiles none.
COPY --from=binary /usr/local/share/convstream /usr/local/share/convstream
COPY --from=binary /usr/share/licenses/convstream /usr/share/licenses/convstream
COPY deploy/config.toml /etc/convstream/config.toml
# Numeric, so that Kubernetes' runAsNonRoot can check it without a passwd lookup.
USER 10001:10001
WORKDIR /data
# Configuration, outputs, and compiled kernels (a kept cache saves the compile at start-up).
VOLUME ["/etc/convstream", "/data/out", "/var/cache/convstream"]
EXPOSE 8686
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8686/healthz"]
# SIGTERM (docker stop) drains the pipelines and finalises their outputs within
# server.shutdown_timeout (10 s): give `docker stop` / stop_grace_period more than that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["convstream"]
CMD ["serve", "--config", "/etc/convstream/config.toml"]
