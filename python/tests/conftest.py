"""What the Python tests share: the convstream binary to compare with, YUV4MPEG2 files
written and read here, random planes, and the GPU gate (tests marked ``gpu`` run only
with ``-m gpu`` on a host with an NVIDIA GPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import numpy as np
import pytest

import convstream

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(config, items):
    # GPU tests are asked for with -m gpu; without it they are reported as skipped, not passed.
    if "gpu" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="needs a GPU: run with -m gpu on a GPU host")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def find_binary() -> Optional[Path]:
    """The `convstream` binary: $CONVSTREAM_BIN, the build tree's, or one on PATH."""
    candidates = []
    if os.environ.get("CONVSTREAM_BIN"):
        candidates.append(Path(os.environ["CONVSTREAM_BIN"]))
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "convstream")
    candidates.append(REPO / "target" / "release" / "convstream")
    found = shutil.which("convstream")
    if found:
        candidates.append(Path(found))
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="session")
def convstream_bin() -> Path:
    binary = find_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("no convstream binary: scripts/python-check.sh sets CONVSTREAM_BIN (cargo build --release)")
        pytest.skip("no convstream binary (set CONVSTREAM_BIN or run cargo build --release)")
    return binary


@pytest.fixture(scope="session")
def ffmpeg_tools() -> None:
    for tool in ("ffmpeg", "ffprobe"):
        if shutil.which(tool) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{tool} is missing (scripts/install-deps.sh installs it)")
            pytest.skip(f"{tool} is not installed")


MONO_TAGS = {8: "mono", 9: "mono9", 10: "mono10", 12: "mono12", 16: "mono16"}


def write_y4m(path: Path, frames: List[np.ndarray], bits: int) -> None:
    """Grey frames (2-D uint8, or uint16 holding `bits` bits) as a YUV4MPEG2 file."""
    height, width = frames[0].shape
    with open(path, "wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C{MONO_TAGS[bits]}\n".encode())
        for frame in frames:
            out.write(b"FRAME\n")
            out.write(frame.astype("<u2" if bits > 8 else np.uint8).tobytes())


def read_y4m(path: Path) -> List[np.ndarray]:
    """The frames of a grey YUV4MPEG2 file, as 2-D arrays."""
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    fields = {f[:1]: f[1:] for f in header.split()[1:]}
    width, height = int(fields[b"W"]), int(fields[b"H"])
    colour = fields.get(b"C", b"mono").decode()
    bits = next((b for b, tag in MONO_TAGS.items() if tag == colour), None)
    assert bits is not None, f"not a grey y4m: C{colour}"
    dtype = np.dtype("<u2") if bits > 8 else np.dtype(np.uint8)
    size = width * height * dtype.itemsize
    frames = []
    while rest:
        assert rest.startswith(b"FRAME"), rest[:16]
        _, _, rest = rest.partition(b"\n")
        frames.append(np.frombuffer(rest[:size], dtype=dtype).reshape(height, width).astype(dtype.newbyteorder("=")))
        rest = rest[size:]
    return frames


def random_plane(rng: np.random.Generator, height: int, width: int, bits: int) -> np.ndarray:
    dtype = np.uint8 if bits == 8 else np.uint16
    return rng.integers(0, 1 << bits, size=(height, width), dtype=dtype)


def run_cli(binary: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261125)


def has_module(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def gpu_usable() -> bool:
    try:
        convstream.Filter("identity", device="cuda")(np.zeros((2, 2), np.uint8))
        return True
    except convstream.GpuUnavailableError:
        return False
