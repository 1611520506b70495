"""convstream.read(..., vf=...): an FFmpeg filter chain run on the frames it returns, split
as `convstream run -vf` and a config's `filter.graph` split it (FFmpeg's filters before and
after the convolution stage, the convolution filters on the engine). Compared with the
frames the command line writes for the same words."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import convstream
from conftest import run_cli

pytestmark = pytest.mark.usefixtures("ffmpeg_tools")


def read_y4m(path: Path) -> list:
    """The planes of every frame of an 8-bit YUV4MPEG2 file, gray (`Cmono`) or 4:2:0."""
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    fields = {f[:1]: f[1:] for f in header.split()[1:]}
    width, height = int(fields[b"W"]), int(fields[b"H"])
    cw, ch = (width + 1) // 2, (height + 1) // 2
    shapes = [(height, width)]
    if not fields.get(b"C", b"420").startswith(b"mono"):
        shapes += [(ch, cw), (ch, cw)]
    frames = []
    while rest:
        _, _, rest = rest.partition(b"\n")
        planes = []
        for h, w in shapes:
            planes.append(np.frombuffer(rest[: h * w], np.uint8).reshape(h, w))
            rest = rest[h * w :]
        frames.append(planes)
    return frames


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("clip") / "in.mkv"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=97x61:rate=25",
         "-frames:v", "12", "-pix_fmt", "yuv420p", "-c:v", "ffv1", str(path)],
        check=True,
    )
    return path


@pytest.mark.parametrize(
    "vf",
    [
        "scale=64:-2,sobel,format=gray",
        "crop=40:30:5:3,convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3",
        # FFmpeg's filters after the engine may drop frames and hold the last ones.
        "sobel,fps=10",
    ],
)
def test_vf_gives_the_frames_of_the_command_lines_vf(convstream_bin, clip, tmp_path, vf):
    target = tmp_path / "cli.y4m"
    done = run_cli(convstream_bin, "run", "-i", str(clip), "-vf", vf, "--device", "cpu", str(target))
    assert done.returncode == 0, done.stderr
    written = read_y4m(target)
    reader = convstream.read(str(clip), vf=vf, device="cpu")
    frames = list(reader)
    assert len(frames) == len(written) > 0
    assert (reader.width, reader.height) == (written[0][0].shape[1], written[0][0].shape[0])
    for frame, theirs in zip(frames, written):
        assert len(frame.planes) == len(theirs)
        for ours, plane in zip(frame.planes, theirs):
            assert np.array_equal(ours, plane)


def test_vf_places_the_mask_at_null_at_mask(convstream_bin, clip, tmp_path):
    target = tmp_path / "cli.y4m"
    done = run_cli(convstream_bin, "run", "-i", str(clip), "--ffmpeg-before", "scale=48:-2",
                   "--mask", "gaussian:size=13", "--ffmpeg-after", "format=gray", "--device", "cpu", str(target))
    assert done.returncode == 0, done.stderr
    written = read_y4m(target)
    frames = list(convstream.read(str(clip), mask="gaussian:size=13", vf="scale=48:-2,null@mask,format=gray",
                                  device="cpu"))
    assert len(frames) == len(written) == 12
    for frame, theirs in zip(frames, written):
        assert frame.format == "gray"
        assert np.array_equal(frame.planes[0], theirs[0])


def test_vf_problems_are_ffmpegs_words(clip):
    with pytest.raises(ValueError, match="No such filter: 'nosuchfilter'"):
        convstream.read(str(clip), vf="nosuchfilter,sobel", device="cpu")
    with pytest.raises(ValueError, match="say the masks"):
        convstream.read(str(clip), mask="sharpen", vf="sobel", device="cpu")
