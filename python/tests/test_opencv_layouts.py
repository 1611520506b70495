"""The arrays OpenCV users hold, filtered where they are: interleaved H x W x C images (each
channel exactly as the channel alone), views at any strides NumPy gives (read in place, the
same samples as the packed copy), float32 images against a float64 reference and cv2's own
float filter2D, and ``layout=`` for batches laid out channels last."""

from __future__ import annotations

import numpy as np
import pytest

import convstream

MASKS = ["gaussian:size=13,sigma=3", "box:size=7", "sharpen", "sobel", "emboss", "custom:matrix=[[1,2,0],[0,-1,3],[1,0,1]]"]
BORDERS = ["reflect", "mirror", "nearest", "constant", "wrap"]


@pytest.fixture
def rng():
    return np.random.default_rng(6363)


def each_channel_alone(f, image):
    """What the filter gives each channel of an H x W x C image filtered as a plane of its own."""
    return np.stack([f(np.ascontiguousarray(image[..., c])) for c in range(image.shape[-1])], axis=-1)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("dtype, bits", [(np.uint8, None), (np.uint16, 10), (np.uint16, 16)])
def test_interleaved_channels_are_each_channel_filtered_alone(rng, mask, channels, dtype, bits):
    top = (1 << (bits or 8)) - 1
    image = rng.integers(0, top + 1, size=(37, 61, channels), dtype=dtype)
    for border in BORDERS:
        f = convstream.Filter(mask, border=border, device="cpu", bit_depth=bits)
        got = f(image)
        assert got.dtype == image.dtype and got.shape == image.shape
        assert np.array_equal(got, each_channel_alone(f, image)), (mask, border)


def test_some_channels_filtered_the_rest_copied(rng):
    image = rng.integers(0, 256, size=(29, 31, 4), dtype=np.uint8)
    f = convstream.Filter("gaussian:size=5", planes=[0, 2], device="cpu")
    got = f(image)
    alone = each_channel_alone(convstream.Filter("gaussian:size=5", device="cpu"), image)
    for c in range(4):
        want = alone[..., c] if c in (0, 2) else image[..., c]
        assert np.array_equal(got[..., c], want), c


VIEWS = {
    "crop": lambda a: a[10:50, 7:60],
    "steps": lambda a: a[::2, ::3],
    "flipped": lambda a: a[::-1, ::-1],
    "one-channel": lambda a: a[5:40, 5:50, 1],
    "bgr-to-rgb": lambda a: a[..., ::-1],
    "bgra-as-bgr": lambda a: a[..., :3],
    "transposed": lambda a: a.transpose(1, 0, 2),
    "every-other-channel": lambda a: a[..., ::2],
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_views_read_in_place_give_the_packed_copys_values(rng, view, dtype):
    if dtype == np.float32:
        image = rng.normal(0, 100, size=(64, 80, 4)).astype(np.float32)
    else:
        image = rng.integers(0, np.iinfo(dtype).max + 1, size=(64, 80, 4), dtype=dtype)
    shown = view(image)
    assert not shown.flags.c_contiguous
    for mask in ["gaussian:size=5", "sobel", "custom:matrix=[[1,2,0],[0,-1,3],[1,0,1]]"]:
        f = convstream.Filter(mask, device="cpu")
        want = f(np.ascontiguousarray(shown))
        got = f(shown)
        assert got.flags.c_contiguous
        assert np.array_equal(got, want, equal_nan=dtype == np.float32), mask


def test_a_strided_out_takes_the_result(rng):
    image = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    f = convstream.Filter("box:size=3", device="cpu")
    big = np.full((40, 60, 3), 7, dtype=np.uint8)
    window = big[5:35, 10:50]
    assert f(image, out=window) is window
    assert np.array_equal(window, f(image))
    assert (big[:5] == 7).all() and (big[:, :10] == 7).all(), "outside the window is untouched"


def test_layouts_name_batches_channels_last_or_as_planes(rng):
    nhwc = rng.integers(0, 256, size=(3, 20, 24, 3), dtype=np.uint8)
    f = convstream.Filter("gaussian:size=5", device="cpu")
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    want = f(nchw).transpose(0, 2, 3, 1)
    assert np.array_equal(f(nhwc, layout="NHWC"), want)
    # A 3-D array read as C x H x W planes rather than OpenCV's H x W x C.
    chw = nchw[0]
    assert np.array_equal(f(chw, layout="CHW"), f(chw[None])[0])
    assert np.array_equal(f(nhwc[0], layout="hwc"), f(nhwc[0]))
    with pytest.raises(ValueError, match="layout: NHWC is 4-D but the array has 3"):
        f(nhwc[0], layout="NHWC")
    with pytest.raises(ValueError, match="layout: 'HWCN' is not one of"):
        f(nhwc, layout="HWCN")


def correlate64(image: np.ndarray, taps: np.ndarray, border: str) -> np.ndarray:
    """The correlation in float64 with the border by NumPy's pad: the exact sums."""
    mode = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}[border]
    kh, kw = taps.shape
    padded = np.pad(image.astype(np.float64), ((kh // 2, kh // 2), (kw // 2, kw // 2)), mode=mode)
    out = np.zeros(image.shape, dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            out += taps[i, j] * padded[i : i + image.shape[0], j : j + image.shape[1]]
    return out


@pytest.mark.parametrize("mask", ["gaussian:size=13,sigma=3", "box:size=7", "sharpen", "custom:matrix=[[0.5,1.25,-0.75],[2,0.1,-3],[1,1,1]]"])
@pytest.mark.parametrize("border", BORDERS)
def test_float_images_match_a_float64_reference(rng, mask, border):
    image = rng.normal(0.0, 50.0, size=(45, 67)).astype(np.float32)
    info = convstream.mask_info(mask)
    # mask_info's coefficients are in convolution orientation: flipped, they are the taps.
    taps = info["coefficients"].astype(np.float64)[::-1, ::-1]
    want = correlate64(image, taps, border) + info["bias"]
    got = convstream.Filter(mask, border=border, device="cpu")(image)
    assert got.dtype == np.float32
    scale = np.abs(taps).sum() * np.abs(image).max()
    assert np.max(np.abs(got - want)) <= 1e-5 * scale, mask


def test_float_images_equal_cv2s_float_filter2d_closely(rng):
    cv2 = pytest.importorskip("cv2")
    image = rng.normal(0.0, 50.0, size=(120, 160)).astype(np.float32)
    kernel = np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], dtype=np.float32)
    want = cv2.filter2D(image, cv2.CV_32F, kernel, borderType=cv2.BORDER_REFLECT_101)
    got = convstream.Filter(kernel, mode="correlate", border=cv2.BORDER_REFLECT_101, device="cpu")(image)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-3)
    # A BGR float image: each channel as cv2 filters it.
    colour = rng.normal(0.0, 1.0, size=(60, 70, 3)).astype(np.float32)
    want = cv2.GaussianBlur(colour, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
    gauss = cv2.getGaussianKernel(5, 0)
    got = convstream.Filter(gauss @ gauss.T, border="mirror", device="cpu")(colour)
    assert np.allclose(got, want, atol=1e-5)


def test_float_values_keep_infinities_and_nans_where_they_reach(rng):
    image = rng.normal(0.0, 1.0, size=(20, 20)).astype(np.float32)
    image[10, 10] = np.inf
    got = convstream.Filter("box:size=3", device="cpu")(image)
    assert np.isinf(got[9:12, 9:12]).all()
    assert np.isfinite(got[:8]).all()
