"""convstream.Filter on NumPy arrays: SciPy's convolve/correlate at every depth and border,
byte-identical to `convstream run`, channels, the GIL, and every refusal with its message."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import convstream
from conftest import random_plane, read_y4m, run_cli, write_y4m

scipy_ndimage = pytest.importorskip("scipy.ndimage")

BORDERS = ["constant", "nearest", "reflect", "mirror", "wrap"]
DEPTHS = [8, 10, 12, 16]
# Dense and separable, positive and negative taps, a bias, both orientations.
MASKS = [
    "box:size=5",
    "gaussian:size=7,sigma=1.5",
    "sharpen",
    "laplacian:bias=128",
    "motion-blur:size=7,angle=30",
    "custom:matrix=[[1,2,0],[0,1,-1],[3,0,1]],normalize=true",
    "custom:matrix=[[0,1,0,0,2],[1,0,0,3,0],[0,0,1,0,0]],normalize=true,mode=correlate",
]
SHAPES = [(23, 37), (48, 64), (3, 5)]


def scipy_reference(plane: np.ndarray, spec: str, border: str, bits: int) -> np.ndarray:
    """SciPy's convolution of the float samples with the mask's coefficients (convolution
    orientation, so `convolve` for every mask), plus the bias at this depth, rounded half
    away from zero and clamped, as the engines promise."""
    weights, bias = convstream.mask_coefficients(spec)
    total = scipy_ndimage.convolve(plane.astype(np.float64), weights.astype(np.float64), mode=border, cval=0.0)
    total += bias * 2.0 ** (bits - 8)
    rounded = np.sign(total) * np.floor(np.abs(total) + 0.5)
    return np.clip(rounded, 0, (1 << bits) - 1).astype(plane.dtype)


@pytest.mark.parametrize("bits", DEPTHS)
@pytest.mark.parametrize("border", BORDERS)
def test_scipy_parity_at_every_depth_and_border(rng, bits, border):
    """The engines sum in float32 where SciPy sums in float64: the same to within one level,
    and the same sample for sample but for sums that fall within float32's error of .5."""
    for spec in MASKS:
        f = convstream.Filter(spec, border=border, device="cpu", bit_depth=bits if bits > 8 else None)
        for height, width in SHAPES:
            plane = random_plane(rng, height, width, bits)
            ours = f(plane)
            theirs = scipy_reference(plane, spec, border, bits)
            assert ours.dtype == plane.dtype and ours.shape == plane.shape
            difference = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
            what = f"{spec}, {border}, {bits} bits, {width}x{height}"
            assert difference.max() <= 1, what
            assert np.count_nonzero(difference) <= max(1, difference.size // 50), what


def test_correlate_mode_is_scipy_correlate(rng):
    """`mode=correlate` slides the matrix as written: scipy.ndimage.correlate of it."""
    matrix = [[0, 1, 0, 0, 2], [1, 0, 0, 3, 0], [0, 0, 1, 0, 0]]
    spec = "custom:matrix=[[0,1,0,0,2],[1,0,0,3,0],[0,0,1,0,0]],divisor=8,mode=correlate"
    plane = random_plane(rng, 40, 50, 8)
    expected = scipy_ndimage.correlate(plane.astype(np.float64), np.array(matrix, np.float64) / 8, mode="reflect")
    expected = np.clip(np.floor(expected + 0.5), 0, 255).astype(np.uint8)
    ours = convstream.Filter(spec, border="reflect", device="cpu")(plane)
    assert np.abs(ours.astype(int) - expected.astype(int)).max() <= 1


@pytest.mark.parametrize("bits", DEPTHS)
def test_identical_to_convstream_run(convstream_bin, tmp_path, rng, bits):
    """Frames of a grey y4m file through `convstream run --device cpu` and through Filter:
    the same bytes, at every border."""
    frames = [random_plane(rng, 36, 52, bits) for _ in range(2)]
    source = tmp_path / "in.y4m"
    write_y4m(source, frames, bits)
    for index, border in enumerate(BORDERS):
        spec = MASKS[(index + bits) % len(MASKS)]
        target = tmp_path / f"out-{border}.y4m"
        done = run_cli(convstream_bin, "run", "-i", str(source), "-o", str(target), "--mask", spec,
                       "--border", border, "--device", "cpu")
        assert done.returncode == 0, done.stderr
        written = read_y4m(target)
        f = convstream.Filter(spec, border=border, device="cpu", bit_depth=bits if bits > 8 else None)
        for frame, theirs in zip(frames, written):
            assert np.array_equal(f(frame), theirs), f"{spec}, {border}, {bits} bits"


def test_channels_are_planes_and_planes_picks_some(rng):
    image = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    f = convstream.Filter("gaussian:size=5", device="cpu")
    out = f(image)
    assert out.shape == image.shape and out.dtype == np.uint8
    for c in range(3):
        assert np.array_equal(out[..., c], f(np.ascontiguousarray(image[..., c])))
    some = convstream.Filter("gaussian:size=5", planes=[0, 2], device="cpu")(image)
    assert np.array_equal(some[..., 1], image[..., 1])
    assert np.array_equal(some[..., 0], out[..., 0]) and np.array_equal(some[..., 2], out[..., 2])


def test_border_aliases_and_the_issue_example(rng):
    plane = random_plane(rng, 20, 30, 8)
    mirror = convstream.Filter("box:size=7", border="mirror", device="cpu")(plane)
    assert np.array_equal(convstream.Filter("box:size=7", border="reflect_101", device="cpu")(plane), mirror)
    f = convstream.Filter("gaussian:size=13,sigma=3", border="reflect", planes="all", device="auto")
    assert f(plane).shape == plane.shape
    assert f.border == "reflect" and f.mask_size == (13, 13)
    assert "gaussian" in repr(f)


def test_bit_depth_clamps_to_its_maximum(rng):
    plane = np.full((8, 8), 1000, dtype=np.uint16)
    out = convstream.Filter("custom:matrix=[[2]]", device="cpu", bit_depth=10)(plane)
    assert int(out.max()) == 1023
    assert int(convstream.Filter("custom:matrix=[[2]]", device="cpu")(plane).max()) == 2000


def test_torch_cpu_tensors_come_back_as_tensors(rng):
    torch = pytest.importorskip("torch")
    plane = random_plane(rng, 16, 24, 8)
    out = convstream.Filter("box", device="cpu")(torch.from_numpy(plane))
    assert isinstance(out, torch.Tensor)
    assert np.array_equal(out.numpy(), convstream.Filter("box", device="cpu")(plane))


def test_the_gil_is_released_while_filtering(rng):
    plane = random_plane(rng, 1500, 1500, 8)
    f = convstream.Filter("custom:matrix=" + str([[1] * 31] * 31).replace(" ", "") + ",normalize=true", device="cpu")
    f(plane[:64, :64].copy())
    worker = threading.Thread(target=f, args=(plane,))
    started = time.perf_counter()
    worker.start()
    ticks = 0
    while worker.is_alive():
        ticks += 1
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    worker.join()
    # Held GIL: this thread would not run at all until the filter returned.
    assert elapsed < 0.05 or ticks >= 10, (ticks, elapsed)


# --- refusals -------------------------------------------------------------------------------


def cli_problem(binary, *flags):
    done = run_cli(binary, "run", "-i", "in.y4m", "-o", "null", *flags)
    assert done.returncode != 0
    return done.stderr


@pytest.mark.parametrize(
    "spec", ["gaussian:size=14", "gaussx", "box:size=3,colour=2", "custom:matrix=[[1,2],[3]]", ""]
)
def test_bad_masks_say_what_the_cli_says(convstream_bin, spec):
    with pytest.raises(ValueError) as raised:
        convstream.Filter(spec)
    message = str(raised.value)
    assert message.startswith("mask: "), message
    cli = cli_problem(convstream_bin, "--mask", spec)
    # The CLI names the flag (`--mask: ...`), Python the argument (`mask: ...`); the rest is one text.
    assert message[len("mask: "):] in cli, (message, cli)


def test_bad_border_and_device_are_value_errors():
    with pytest.raises(ValueError, match=r"border: invalid value 'sideways'.*reflect"):
        convstream.Filter("box", border="sideways")
    with pytest.raises(ValueError, match="device"):
        convstream.Filter("box", device="tpu")
    with pytest.raises(ValueError, match="planes"):
        convstream.Filter("box", planes="most")


def test_wrong_dtypes_are_type_errors():
    f = convstream.Filter("box", device="cpu")
    for dtype in (np.int16, np.int32, np.uint32, np.float64, bool):
        with pytest.raises(TypeError, match="uint8, uint16"):
            f(np.zeros((4, 4), dtype=dtype))
    with pytest.raises(TypeError, match="native-endian"):
        f(np.zeros((4, 4), dtype=">u2"))
    with pytest.raises(TypeError, match="NumPy array"):
        f("not an array")


def test_bad_layouts_are_value_errors():
    f = convstream.Filter("box", device="cpu")
    plane = np.zeros((10, 12), dtype=np.uint8)
    # Views and Fortran order are filtered as the arrays they show (test_opencv_words.py).
    assert np.array_equal(f(plane[:, ::2]), f(np.ascontiguousarray(plane[:, ::2])))
    assert np.array_equal(f(np.asfortranarray(plane)), f(plane))
    with pytest.raises(ValueError, match="1 to 4 channels"):
        f(np.zeros((10, 12, 5), dtype=np.uint8))
    with pytest.raises(ValueError, match="dimensions"):
        f(np.zeros((2, 2, 10, 12, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="dimensions"):
        f(np.zeros(10, dtype=np.uint8))
    with pytest.raises(ValueError, match="channel 3"):
        convstream.Filter("box", planes=[3], device="cpu")(np.zeros((4, 4, 3), np.uint8))


def test_samples_beyond_the_bit_depth_and_depths_beyond_the_dtype():
    f = convstream.Filter("box", device="cpu", bit_depth=10)
    with pytest.raises(ValueError, match="bit_depth=10"):
        f(np.full((4, 4), 1024, dtype=np.uint16))
    with pytest.raises(ValueError, match="uint16"):
        f(np.zeros((4, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="bit_depth"):
        convstream.Filter("box", bit_depth=20)


def test_no_gpu_says_what_the_cli_says(convstream_bin, tmp_path):
    try:
        # Refused when the filter is made, not at its first call.
        f = convstream.Filter("box", device="cuda")
        f(np.zeros((8, 8), dtype=np.uint8))
    except convstream.GpuUnavailableError as error:
        source = tmp_path / "in.y4m"
        write_y4m(source, [np.zeros((8, 8), np.uint8)], 8)
        done = run_cli(convstream_bin, "run", "-i", str(source), "-o", "null", "--mask", "box", "--device", "cuda")
        assert done.returncode != 0
        assert str(error) in done.stderr, (str(error), done.stderr)
        assert str(error).startswith("no usable GPU")
    else:
        assert f.engine is not None and f.engine.startswith("cuda")


def test_auto_falls_back_to_the_cpu_without_a_gpu(rng):
    plane = random_plane(rng, 10, 10, 8)
    f = convstream.Filter("box", device="auto")
    assert np.array_equal(f(plane), convstream.Filter("box", device="cpu")(plane))


# --- masks ----------------------------------------------------------------------------------


def test_masks_are_listed_and_shown_as_the_cli_does(convstream_bin):
    names = [m.name for m in convstream.masks()]
    assert "gaussian" in names and "custom" in names
    listed = run_cli(convstream_bin, "masks")
    assert listed.returncode == 0
    assert convstream.masks_text() == listed.stdout
    for spec in ("gaussian:size=5", "sobel", "custom:matrix=[[1,2,3]],mode=correlate", "edge"):
        shown = run_cli(convstream_bin, "masks", "show", spec)
        assert shown.returncode == 0, shown.stderr
        assert convstream.show_mask(spec) == shown.stdout, spec
    with pytest.raises(ValueError, match="size: 4 is even"):
        convstream.show_mask("box:size=4")


def test_mask_coefficients_are_convolution_oriented():
    weights, bias = convstream.mask_coefficients("custom:matrix=[[1,2,3]],mode=correlate")
    assert weights.tolist() == [[3.0, 2.0, 1.0]] and bias == 0.0
    weights, _ = convstream.mask_coefficients("box:size=3")
    assert weights.shape == (3, 3) and abs(float(weights.sum()) - 1) < 1e-6
    info = convstream.mask_info("gaussian:size=5")
    assert (info["width"], info["height"], info["separable"]) == (5, 5, True)
    assert info["text"] == convstream.show_mask("gaussian:size=5")
    assert not convstream.mask_info("sharpen")["separable"]
    assert convstream.mask_info("laplacian:bias=128")["bias"] == 128.0


class FakeDeviceArray:
    """Something with a __cuda_array_interface__ (as Numba's or PyCUDA's arrays have)."""

    __module__ = "fakegpu.arrays"

    def __init__(self, shape, typestr="|u1", strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0xDEAD0000, False), "strides": strides, "version": 3,
        }


def test_device_arrays_are_checked_before_any_gpu_work():
    f = convstream.Filter("box", device="cpu")
    with pytest.raises(TypeError, match="uint8, uint16"):
        f(FakeDeviceArray((4, 4), "<i4"))
    with pytest.raises(ValueError, match="positive strides"):
        f(FakeDeviceArray((4, 4), "|u1", strides=(4, -1)))
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W\)"):
        f(FakeDeviceArray((16,), "|u1"))
    with pytest.raises(ValueError, match="planes"):
        convstream.Filter("box", planes=[0], device="cpu")(FakeDeviceArray((2, 4, 4)))
    with pytest.raises(ValueError, match="runs on the CPU"):
        f(FakeDeviceArray((4, 4), "|u1"))


def test_a_named_mask_of_a_config_file(tmp_path, rng):
    config = tmp_path / "masks.toml"
    config.write_text('[masks.soft]\npreset = "gaussian"\nsize = 13\nsigma = 2.5\n\n'
                      "[masks.my_edge]\nmatrix = [[0, -1, 0], [-1, 4, -1], [0, -1, 0]]\nbias = 128\n")
    plane = random_plane(rng, 40, 30, 8)
    soft = convstream.Filter("soft", config=str(config), device="cpu")
    assert np.array_equal(soft(plane), convstream.Filter("gaussian:size=13,sigma=2.5", device="cpu")(plane))
    edge = convstream.Filter("my_edge", config=str(config), device="cpu")
    assert edge(plane).shape == plane.shape
    with pytest.raises(ValueError, match="mask"):
        convstream.Filter("hard", config=str(config))
