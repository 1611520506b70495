#!/usr/bin/env bash
# Installs what building and testing convstream needs on Debian 12 / Ubuntu, skipping what is
# already there: FFmpeg's development libraries and command-line tools (the tests make their own
# video with them), GStreamer's development libraries and tools for the element in gst/, with
# GStreamer's own decoders and encoders (libav, -bad, -ugly) that the element is tested behind and
# in front of, what the README's examples use (an X display for autovideosink, gst-rtsp-server's
# Python bindings for examples/rtsp-serve.py, curl), valgrind for the element's memory check,
# clang for the FFmpeg bindings, Chromium with its WebDriver and selenium from PyPI for the console's
# browser test (tests/console/drive_console.py), NVRTC from PyPI so kernels can be compiled without a GPU,
# OpenCV from PyPI (opencv-python-headless), the peer the mask conventions are checked against,
# and python3-venv for the Python package's check (scripts/python-check.sh installs maturin,
# pytest, NumPy and SciPy from PyPI into a fresh virtual environment).
# Prints the LD_LIBRARY_PATH entry for NVRTC on its last line.
set -euo pipefail

packages=(pkg-config clang libclang-dev gcc libc6-dev ca-certificates
    libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
    libavfilter-dev libavdevice-dev ffmpeg
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
    gstreamer1.0-plugins-base gstreamer1.0-plugins-good
    gstreamer1.0-libav gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-x valgrind
    python3-gi gir1.2-gst-rtsp-server-1.0 xvfb curl python3-venv python3-pip
    chromium chromium-driver fonts-liberation)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=""
    [[ $(id -u) == 0 ]] || sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# NVRTC (libnvrtc.so.12) from the CUDA wheel on PyPI: kernels compile in tests without a GPU.
nvrtc_dir() { python3 -c 'import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null; }
if ! nvrtc_dir >/dev/null; then
    echo "installing nvidia-cuda-nvrtc-cu12 (NVRTC) from PyPI" >&2
    python3 -m pip install -q nvidia-cuda-nvrtc-cu12 >&2 || python3 -m pip install -q --break-system-packages nvidia-cuda-nvrtc-cu12 >&2 \
        || echo "warning: NVRTC could not be installed; kernel compilation tests will be skipped" >&2
fi
# OpenCV and NumPy for tests/peers/opencv_filter.py.
if ! python3 -c 'import cv2, numpy' 2>/dev/null; then
    echo "installing opencv-python-headless from PyPI" >&2
    python3 -m pip install -q opencv-python-headless numpy >&2 \
        || python3 -m pip install -q --break-system-packages opencv-python-headless numpy >&2
fi
# selenium for the console's browser test, which drives Debian's chromium through chromium-driver.
if ! python3 -c 'import selenium' 2>/dev/null; then
    echo "installing selenium from PyPI" >&2
    python3 -m pip install -q selenium >&2 || python3 -m pip install -q --break-system-packages selenium >&2
fi
nvrtc_dir || true
