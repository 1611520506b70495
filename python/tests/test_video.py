"""convstream.read and convstream.run on real files made with the ffmpeg CLI: the frames
`convstream run` writes, ffprobe's timestamps, the report, and the errors."""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import convstream
from conftest import has_module, run_cli

pytestmark = pytest.mark.usefixtures("ffmpeg_tools")


def make_clip(path: Path, *extra: str, frames: int = 12, size: str = "96x64", rate: int = 25) -> Path:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate}",
         "-frames:v", str(frames), "-pix_fmt", "yuv420p", *extra, str(path)],
        check=True,
    )
    return path


def ffprobe_frames(path: Path) -> list:
    done = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_frames", "-show_entries",
         "frame=pts,pts_time,best_effort_timestamp", "-of", "json", str(path)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(done.stdout)["frames"]


def read_y4m_420(path: Path) -> list:
    """The frames of an 8-bit 4:2:0 YUV4MPEG2 file as (Y, U, V) arrays."""
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    fields = {f[:1]: f[1:] for f in header.split()[1:]}
    width, height = int(fields[b"W"]), int(fields[b"H"])
    cw, ch = (width + 1) // 2, (height + 1) // 2
    frames = []
    while rest:
        _, _, rest = rest.partition(b"\n")
        y = np.frombuffer(rest[: width * height], np.uint8).reshape(height, width)
        u = np.frombuffer(rest[width * height : width * height + cw * ch], np.uint8).reshape(ch, cw)
        v = np.frombuffer(rest[width * height + cw * ch : width * height + 2 * cw * ch], np.uint8).reshape(ch, cw)
        frames.append((y, u, v))
        rest = rest[width * height + 2 * cw * ch :]
    return frames


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "in.mkv", "-c:v", "ffv1")


def test_frames_are_what_convstream_run_writes(convstream_bin, clip, tmp_path):
    spec = "gaussian:size=5"
    target = tmp_path / "cli.y4m"
    done = run_cli(convstream_bin, "run", "-i", str(clip), "-o", str(target), "--mask", spec,
                   "--planes", "luma", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    written = read_y4m_420(target)
    frames = list(convstream.read(str(clip), mask=spec, planes="luma", device="cpu"))
    assert len(frames) == len(written) == 12
    for frame, theirs in zip(frames, written):
        assert frame.format == "yuv420p"
        assert len(frame.planes) == 3
        for ours, plane in zip(frame.planes, theirs):
            assert ours.dtype == np.uint8
            assert np.array_equal(ours, plane)
    assert [f.index for f in frames] == list(range(12))


@pytest.mark.parametrize(
    "container, extra",
    [
        ("mkv", ["-c:v", "ffv1"]),
        ("mp4", ["-c:v", "mpeg4", "-bf", "2"]),
        ("ts", ["-c:v", "mpeg2video"]),
        ("mkv", ["-c:v", "ffv1", "-output_ts_offset", "1.5"]),
    ],
)
def test_timestamps_are_ffprobes(tmp_path, container, extra):
    clip = make_clip(tmp_path / f"in.{container}", *extra, frames=10, rate=30)
    probed = ffprobe_frames(clip)
    reader = convstream.read(str(clip), mask="identity", device="cpu")
    frames = list(reader)
    assert len(frames) == len(probed)
    for frame, probe in zip(frames, probed):
        pts = probe.get("pts", probe.get("best_effort_timestamp"))
        assert frame.pts == pts, (frame, probe)
        assert frame.time == pytest.approx(float(probe["pts_time"]), abs=1e-6)
        assert frame.time_base == reader.time_base
    assert reader.width == 96 and reader.height == 64
    assert reader.frame_rate == Fraction(30)


def test_reader_details_and_early_close(clip):
    with convstream.read(str(clip), mask="box", device="cpu") as frames:
        first = next(frames)
        assert first.luma.shape == (64, 96)
        assert frames.engine == "cpu"
        assert frames.format == "yuv420p" and frames.bits == 8
    assert list(frames) == [], "closed: no more frames"
    trimmed = list(convstream.read(str(clip), mask="box", device="cpu", frames=3))
    assert len(trimmed) == 3


def test_run_writes_what_the_cli_writes(convstream_bin, clip, tmp_path):
    ours, theirs = tmp_path / "ours.y4m", tmp_path / "theirs.y4m"
    report = convstream.run(str(clip), str(ours), mask="sharpen", border="mirror", device="cpu")
    done = run_cli(convstream_bin, "run", "-i", str(clip), "-o", str(theirs), "--mask", "sharpen",
                   "--border", "mirror", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert ours.read_bytes() == theirs.read_bytes()
    assert report["frames_in"] == 12 and report["frames_out"] == 12
    assert report["engine"] == "cpu"
    with pytest.raises(ValueError, match="exists; it is kept: pass overwrite=True"):
        convstream.run(str(clip), str(ours), mask="sharpen", device="cpu")
    convstream.run(str(clip), str(ours), mask="box", device="cpu", overwrite=True)
    # Nothing was set up on a GPU in the background: the wait registered for the
    # interpreter's exit returns at once, saying none is under way.
    assert convstream._wait_for_gpu_starts() is True


def test_errors_name_the_problem(convstream_bin, tmp_path):
    missing = tmp_path / "missing.mp4"
    with pytest.raises(RuntimeError) as raised:
        convstream.read(str(missing), mask="box", device="cpu")
    done = run_cli(convstream_bin, "run", "-i", str(missing), "-o", "null", "--mask", "box", "--device", "cpu")
    assert done.returncode != 0
    assert str(raised.value) in done.stderr, (str(raised.value), done.stderr)
    with pytest.raises(ValueError, match="mask: size: 4 is even"):
        convstream.read(str(missing), mask="box:size=4")
    with pytest.raises(ValueError, match="as_"):
        convstream.read(str(missing), mask="box", as_="jax")
    text = tmp_path / "notes.txt"
    text.write_text("not a video\n")
    with pytest.raises((RuntimeError, ValueError), match="cannot open input"):
        convstream.read(str(text), mask="box")


@pytest.mark.skipif(not has_module("torch"), reason="torch is not installed")
def test_frames_as_torch_tensors(clip):
    import torch

    frames = list(convstream.read(str(clip), mask="box", device="cpu", as_="torch", tensor_device="cpu", frames=2))
    assert all(isinstance(p, torch.Tensor) for p in frames[0].planes)
