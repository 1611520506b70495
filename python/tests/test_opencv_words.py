"""OpenCV's vocabulary, as its users write it: border constants and their names, against
cv2 itself; ``normalize=``; cropped and strided views; a GPU asked for by name that the host
lacks, refused when the filter is made."""

from __future__ import annotations

import numpy as np
import pytest

import convstream

from conftest import gpu_usable

cv2 = pytest.importorskip("cv2")


@pytest.fixture
def image():
    return np.random.default_rng(63).integers(0, 256, size=(37, 53), dtype=np.uint8)


@pytest.mark.parametrize(
    "border",
    [
        cv2.BORDER_CONSTANT,
        cv2.BORDER_REPLICATE,
        cv2.BORDER_REFLECT,
        cv2.BORDER_REFLECT_101,
        cv2.BORDER_DEFAULT,
        cv2.BORDER_REFLECT_101 | cv2.BORDER_ISOLATED,
    ],
)
def test_cv2_border_constants_give_cv2s_edges(image, border):
    # A 3 x 3 mean: a sum over 9 is never an exact half, so rounding cannot differ.
    want = cv2.blur(image, (3, 3), borderType=border)
    got = convstream.Filter("box:size=3", border=border, device="cpu")(image)
    assert np.array_equal(got, want), border


@pytest.mark.parametrize(
    "name, mode",
    [
        ("BORDER_CONSTANT", "constant"),
        ("BORDER_REPLICATE", "nearest"),
        ("BORDER_REFLECT", "reflect"),
        ("BORDER_REFLECT_101", "mirror"),
        ("BORDER_DEFAULT", "mirror"),
        ("BORDER_WRAP", "wrap"),
        ("cv2.BORDER_REFLECT_101", "mirror"),
        ("border_replicate", "nearest"),
    ],
)
def test_cv2_border_names_are_the_modes_of_the_same_edges(name, mode):
    assert convstream.Filter("box", border=name, device="cpu").border == mode


def test_border_values_cv2_has_no_mode_for_are_refused_by_name():
    with pytest.raises(ValueError, match="border: 5 is cv2.BORDER_TRANSPARENT"):
        convstream.Filter("box", border=cv2.BORDER_TRANSPARENT)
    with pytest.raises(ValueError, match="border: 9 is not a cv2.BORDER_"):
        convstream.Filter("box", border=9)
    with pytest.raises(TypeError, match="border"):
        convstream.Filter("box", border=True)
    with pytest.raises(TypeError, match="border"):
        convstream.Filter("box", border=2.0)


@pytest.mark.parametrize("width, height", [(3, 3), (5, 5), (7, 3), (3, 7), (15, 15), (31, 31), (1, 9)])
def test_box_is_cv2_blur_byte_for_byte_and_the_exact_mean(width, height):
    rng = np.random.default_rng(width * 100 + height)
    colour = rng.integers(0, 256, size=(61, 77, 3), dtype=np.uint8)
    box = convstream.Filter(f"box:width={width},height={height}", border="reflect_101", device="cpu")
    assert np.array_equal(box(colour), cv2.blur(colour, (width, height)))
    # 16-bit samples: each window's exact sum over w x h, rounded, wherever f32 holds every sum
    # exactly (up to 2^24: 256 samples a window). cv2's own 16-bit blur is a level off at some
    # pixels of a 15 x 15 window.
    if width * height * 65535 > 2**24:
        return
    deep = rng.integers(0, 65536, size=(29, 41), dtype=np.uint16)
    padded = np.pad(deep.astype(np.int64), ((height // 2,) * 2, (width // 2,) * 2), mode="reflect")
    sums = sum(padded[i : i + 29, j : j + 41] for i in range(height) for j in range(width))
    area = width * height
    assert np.array_equal(box(deep), (2 * sums + area) // (2 * area))


def test_normalize_divides_by_the_sum_as_cv2_does(image):
    kernel = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float64)
    by_divisor = convstream.Filter(kernel, divisor=16, device="cpu")(image)
    assert np.array_equal(convstream.Filter(kernel, normalize=True, device="cpu")(image), by_divisor)
    assert np.array_equal(
        convstream.Filter("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]", normalize=True, device="cpu")(image),
        by_divisor,
    )
    # A box of ones, normalised: cv2.blur's mean (never an exact half over 9).
    ones = convstream.Filter(np.ones((3, 3)), normalize=True, border="BORDER_REFLECT_101", device="cpu")
    assert np.array_equal(ones(image), cv2.blur(image, (3, 3)))
    with pytest.raises(ValueError, match="normalize: the coefficients sum to 0"):
        convstream.Filter(np.array([[-1, 0, 1]] * 3), normalize=True)
    with pytest.raises(ValueError, match="normalize and divisor"):
        convstream.Filter(kernel, normalize=True, divisor=16)
    with pytest.raises(TypeError, match="normalize"):
        convstream.Filter(kernel, normalize=1)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[10:50, 10:60],
        lambda a: a[::2, ::3],
        lambda a: a[::-1, ::-1],
        lambda a: a[5:40, 5:50, 1],
        lambda a: a[5:40, 5:50, :],
        lambda a: a[5:40, 5:50, ::-1],
    ],
    ids=["crop", "steps", "negative", "one-channel", "crop-hwc", "bgr-to-rgb"],
)
def test_views_are_filtered_as_the_arrays_they_show(view):
    colour = np.random.default_rng(1).integers(0, 256, size=(64, 80, 3), dtype=np.uint8)
    shown = view(colour)
    f = convstream.Filter("gaussian:size=5", device="cpu")
    want = f(np.ascontiguousarray(shown))
    got = f(shown)
    assert np.array_equal(got, want)
    out = np.zeros_like(want)
    assert f(shown, out=out) is out and np.array_equal(out, want)


@pytest.mark.skipif(gpu_usable(), reason="this host has a GPU")
def test_a_gpu_asked_for_by_name_is_refused_when_the_filter_is_made():
    for device in ("cuda", "cuda:0", "cuda:3"):  # no GPU at all: the driver's reason
        with pytest.raises(convstream.GpuUnavailableError, match="no usable GPU"):
            convstream.Filter("box", device=device)
    # auto falls back to the CPU, as it always has.
    assert convstream.Filter("box", device="auto").device == "auto"
