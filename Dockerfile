# convstream on GPU hosts. The build stage makes the portable binary (static minimal FFmpeg,
# see scripts/build-portable.sh); the runtime stage is NVIDIA's CUDA runtime image, which brings
# libnvrtc (kernels are compiled at start-up) while libcuda comes from the host through the
# NVIDIA container toolkit.

FROM rust:1-bookworm AS build
WORKDIR /src
RUN apt-get update \
    && apt-get install -y --no-install-recommends clang libclang-dev pkg-config nasm jq \
       libffmpeg-nvenc-dev zlib1g-dev build-essential dpkg-dev \
    && rm -rf /var/lib/apt/lists/*
# FFmpeg first, in its own layer: it changes far less often than the code.
COPY scripts/build-portable.sh scripts/
RUN scripts/build-portable.sh ffmpeg
COPY . .
RUN scripts/build-portable.sh binary

FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility,video \
    CONVSTREAM_KERNEL_CACHE=/var/cache/convstream/kernels
RUN useradd --system --uid 10001 --home-dir /var/lib/convstream convstream \
    && mkdir -p /var/cache/convstream/kernels /etc/convstream /data \
    && chown -R convstream /var/cache/convstream /data
COPY --from=build /src/dist/portable/convstream /usr/local/bin/convstream
COPY config/default.toml /etc/convstream/config.toml
USER convstream
VOLUME ["/var/cache/convstream", "/data"]
WORKDIR /data
ENTRYPOINT ["convstream"]
CMD ["demo", "--dir", "/data/demo"]
