"""Array masks, float values, (N, C, H, W) batches, DLPack and device calls queued on the
caller's CUDA stream.

Without a GPU (CI): masks given as arrays, float32/float16 values against a float64
reference, host batches, DLPack from host memory, CPU torch tensors (when torch is
installed), how device arrays are split into launches, and argument errors.

Marked ``gpu`` (run on a GPU host with ``python3 -m pytest python/tests -m gpu``, torch
and/or CuPy installed): parity with the CPU engine at every depth, float tensors, batches,
``out=`` and strided arrays, stream ordering checked with a poisoned output, DLPack from
torch/CuPy/JAX, and wrong-device and wrong-dtype errors.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import convstream
from convstream import _device
from conftest import gpu_usable, has_module

BORDERS = ["constant", "nearest", "reflect", "mirror", "wrap"]
# NumPy's pad modes for SciPy's border names (NumPy's "reflect" is SciPy's "mirror").
NUMPY_PAD = {"constant": "constant", "nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}
# Dense, separable, a bias, a correlate-mode asymmetric mask.
FLOAT_MASKS = ["sharpen", "gaussian:size=13,sigma=3", "box:size=5,bias=3",
               "custom:matrix=[[1,2,0],[0,1,-1],[3,0,1]],mode=correlate"]


def float_reference(spec: str, border: str, planes: np.ndarray) -> np.ndarray:
    """The float64 result of ``spec`` on each plane of a (..., H, W) array: SciPy's
    convolution with the mask's coefficients, plus its bias as written."""
    info = convstream.mask_info(spec)
    # Convolution is correlation with the mask turned half way; NumPy alone (no SciPy on a
    # GPU host) does it tap by tap over the padded planes.
    taps = info["coefficients"].astype(np.float64)[::-1, ::-1]
    rows, columns = taps.shape
    height, width = planes.shape[-2:]
    flat = planes.reshape(-1, height, width).astype(np.float64)
    pad = ((0, 0), (rows // 2, rows // 2), (columns // 2, columns // 2))
    padded = np.pad(flat, pad, mode=NUMPY_PAD[border])
    out = np.zeros_like(flat)
    for i in range(rows):
        for j in range(columns):
            out += taps[i, j] * padded[:, i : i + height, j : j + width]
    return (out + info["bias"]).reshape(planes.shape)


def float_tolerance(spec: str, planes: np.ndarray, dtype) -> float:
    """How far an f32 (or f16-rounded) result may be from the float64 one: a few f32 ulps
    of the largest partial sum, plus the rounding of a float16 result."""
    weights = convstream.mask_info(spec)["coefficients"].astype(np.float64)
    largest = float(np.abs(weights).sum() * np.abs(planes.astype(np.float64)).max()) + 1.0
    tolerance = 1e-5 * largest
    if np.dtype(dtype) == np.float16:
        tolerance += largest * 2.0**-10
    return tolerance


class HostDLPack:
    """A host array that speaks only DLPack (as a CPU JAX array does)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class FakeDeviceArray:
    """Something with a __cuda_array_interface__ at an address no GPU holds."""

    __module__ = "fakegpu.arrays"

    def __init__(self, shape, typestr="|u1", address=0xDEAD0000):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (address, False), "strides": None, "version": 3,
        }


# --- masks given as arrays -------------------------------------------------------------------


def test_array_masks_filter_as_their_spec(rng):
    plane = rng.integers(0, 256, size=(33, 47), dtype=np.uint8)
    matrix = [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]
    by_spec = convstream.Filter("custom:matrix=[[0,-1,0],[-1,5,-1],[0,-1,0]]", device="cpu")(plane)
    for mask in (np.array(matrix), matrix, np.array(matrix, dtype=np.float32)):
        assert np.array_equal(convstream.Filter(mask, device="cpu")(plane), by_spec)
    asymmetric = np.array([[1, 2, 0], [0, 1, -1], [3, 0, 1]])
    keyed = convstream.Filter(asymmetric, mode="correlate", divisor=7, bias=10, device="cpu")
    spec = "custom:matrix=[[1,2,0],[0,1,-1],[3,0,1]],mode=correlate,divisor=7,bias=10"
    assert np.array_equal(keyed(plane), convstream.Filter(spec, device="cpu")(plane))
    # Correlation is convolution with the mask turned half way.
    turned = convstream.Filter(asymmetric[::-1, ::-1].copy(), divisor=7, bias=10, device="cpu")
    assert np.array_equal(turned(plane), keyed(plane))
    # Keys join a SPEC string too.
    assert np.array_equal(convstream.Filter("box:size=3", bias=20, device="cpu")(plane),
                          convstream.Filter("box:size=3,bias=20", device="cpu")(plane))


def test_an_array_mask_of_any_size_up_to_63_is_taken(rng):
    """A 63 x 63 matrix's SPEC is some 8,000 characters, past what SPEC text may be: the array
    goes to the filter as a matrix, and filters as the box preset of that size does."""
    plane = rng.integers(0, 256, size=(70, 90), dtype=np.uint8)
    ones = np.ones((63, 63))
    ours = convstream.Filter(ones, divisor=63 * 63, border="nearest", device="cpu")(plane)
    box = convstream.Filter("box:size=63", border="nearest", device="cpu")(plane)
    assert np.abs(ours.astype(int) - box.astype(int)).max() <= 1
    weights = rng.integers(1, 9, size=(61, 63)).astype(np.float64)
    convstream.Filter(weights, divisor=float(weights.sum()), device="cpu")(plane)
    with pytest.raises(ValueError, match="mode"):
        convstream.Filter(ones, mode="sideways", device="cpu")


def test_array_masks_in_torch_tensors(rng):
    torch = pytest.importorskip("torch")
    plane = rng.integers(0, 256, size=(20, 30), dtype=np.uint8)
    weights = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]])
    ours = convstream.Filter(weights, divisor=16, device="cpu")(plane)
    assert np.array_equal(ours, convstream.Filter("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],divisor=16",
                                                  device="cpu")(plane))


def test_bad_array_masks_are_refused():
    with pytest.raises(ValueError, match="2-D"):
        convstream.Filter(np.ones((3, 3, 3)))
    with pytest.raises(ValueError, match="2-D"):
        convstream.Filter(np.float32(2.0))
    with pytest.raises(ValueError, match="finite"):
        convstream.Filter(np.array([[1.0, np.nan, 1.0]]))
    with pytest.raises(ValueError, match="even"):
        convstream.Filter(np.ones((4, 4)))
    with pytest.raises(TypeError, match="2-D array of coefficients"):
        convstream.Filter(object())
    with pytest.raises(TypeError, match="divisor"):
        convstream.Filter(np.ones((3, 3)), divisor="2")
    with pytest.raises(ValueError, match="mode"):
        convstream.Filter(np.ones((3, 3)), mode="sideways")


# --- float values ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("border", BORDERS)
def test_float_values_are_the_unrounded_float_result(rng, dtype, border):
    planes = (rng.random((2, 3, 29, 41)) * 255 - 40).astype(dtype)
    for spec in FLOAT_MASKS:
        out = convstream.Filter(spec, border=border, device="cpu")(planes)
        assert out.dtype == np.dtype(dtype) and out.shape == planes.shape
        reference = float_reference(spec, border, planes)
        error = float(np.abs(out.astype(np.float64) - reference).max())
        assert error <= float_tolerance(spec, planes, dtype), (spec, border, error)
    # Neither rounded to whole numbers nor clamped to a sample range.
    sharpened = convstream.Filter("sharpen", border=border, device="cpu")(planes)
    assert (sharpened < 0).any() and (sharpened > 255).any()
    assert (sharpened != np.round(sharpened)).any()


def test_float_planes_of_every_host_layout(rng):
    image = (rng.random((24, 31, 3)) * 4).astype(np.float32)
    f = convstream.Filter("gaussian:size=5", device="cpu")
    interleaved = f(image)
    for c in range(3):
        assert np.array_equal(interleaved[..., c], f(np.ascontiguousarray(image[..., c])))
    picked = convstream.Filter("gaussian:size=5", planes=[1], device="cpu")(image)
    assert np.array_equal(picked[..., 0], image[..., 0]) and np.array_equal(picked[..., 1], interleaved[..., 1])


# --- (N, C, H, W) host batches, DLPack, torch CPU tensors, out= ------------------------------------


@pytest.mark.parametrize("bits", [8, 10, 16])
def test_host_batches_are_planes(rng, bits):
    dtype = np.uint8 if bits == 8 else np.uint16
    batch = rng.integers(0, 1 << bits, size=(3, 2, 21, 34), dtype=dtype)
    f = convstream.Filter("gaussian:size=7", device="cpu", bit_depth=bits if bits > 8 else None)
    out = f(batch)
    for n in range(3):
        for c in range(2):
            assert np.array_equal(out[n, c], f(np.ascontiguousarray(batch[n, c]))), (n, c)
    picked = convstream.Filter("gaussian:size=7", planes=[1], device="cpu", bit_depth=bits if bits > 8 else None)(batch)
    assert np.array_equal(picked[:, 0], batch[:, 0]) and np.array_equal(picked[:, 1], out[:, 1])


def test_host_dlpack_arrays(rng):
    plane = rng.integers(0, 256, size=(18, 26), dtype=np.uint8)
    f = convstream.Filter("box:size=3", device="cpu")
    out = f(HostDLPack(plane))
    assert isinstance(out, np.ndarray) and np.array_equal(out, f(plane))
    values = rng.random((2, 1, 9, 12)).astype(np.float32)
    assert np.array_equal(f(HostDLPack(values)), f(values))


def test_torch_cpu_tensors_and_batches(rng):
    torch = pytest.importorskip("torch")
    batch = rng.random((2, 3, 16, 20)).astype(np.float32)
    f = convstream.Filter("sharpen", device="cpu")
    out = f(torch.from_numpy(batch))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert np.array_equal(out.numpy(), f(batch))
    half = f(torch.from_numpy(batch).half())
    assert half.dtype == torch.float16
    strided = torch.from_numpy(rng.integers(0, 256, size=(20, 40), dtype=np.uint8))[:, ::2]
    assert np.array_equal(f(strided).numpy(), f(np.ascontiguousarray(strided.numpy())))


def test_out_takes_host_results(rng):
    plane = rng.integers(0, 256, size=(12, 14), dtype=np.uint8)
    f = convstream.Filter("box", device="cpu")
    out = np.full_like(plane, 7)
    assert f(plane, out=out) is out and np.array_equal(out, f(plane))
    with pytest.raises(ValueError, match="out"):
        f(plane, out=np.empty((12, 15), np.uint8))
    with pytest.raises(ValueError, match="apart from the input"):
        f(plane, out=plane)


def test_argument_errors():
    with pytest.raises(TypeError, match="sync"):
        convstream.Filter("box", sync="yes")
    f = convstream.Filter("box", device="cpu")
    with pytest.raises(TypeError, match="uint8, uint16"):
        f(np.zeros((4, 4), dtype=np.float64))
    with pytest.raises(TypeError, match="stream"):
        _device.stream_handle_of("the default one")
    with pytest.raises(TypeError, match="uint8, uint16"):
        f(FakeDeviceArray((4, 4), "<i2"))


# --- device calls: how arrays become launches (no GPU needed) -------------------------------------


def view_of(shape, strides, itemsize=1, address=1 << 20):
    dtype = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.float32)}[itemsize]
    return _device.DeviceArray(None, "fake", tuple(shape), tuple(strides), address, dtype, 0)


def contiguous_strides(shape, itemsize=1):
    return tuple(itemsize * int(np.prod(shape[i + 1:])) for i in range(len(shape)))


def test_a_contiguous_batch_is_one_launch():
    shape = (8, 3, 1080, 1920)
    view = view_of(shape, contiguous_strides(shape))
    out = view_of(shape, contiguous_strides(shape), address=1 << 40)
    plane = 1080 * 1920
    assert _device.launches(view, out) == [(1 << 20, 1 << 40, 24, 1920, plane, 1920, plane, 1)]


def test_sliced_and_strided_batches_are_split_where_strides_do_not_nest():
    shape = (4, 3, 10, 16)
    full = contiguous_strides(shape, 4)
    # Channels 1..2 of every image: two planes a launch, one launch per image.
    crop = view_of((4, 2, 10, 16), full, itemsize=4, address=1000 + full[1])
    out = view_of((4, 2, 10, 16), contiguous_strides((4, 2, 10, 16), 4), itemsize=4, address=10**9)
    launches = _device.launches(crop, out)
    assert [launch[2] for launch in launches] == [2, 2, 2, 2]
    assert [launch[0] for launch in launches] == [1000 + full[1] + n * full[0] for n in range(4)]
    assert [launch[1] for launch in launches] == [10**9 + n * 2 * 640 for n in range(4)]
    # A crop of rows and columns keeps its row pitch.
    rows = view_of((3, 6, 8), (10 * 16, 16, 1), address=5000)
    dense = view_of((3, 6, 8), contiguous_strides((3, 6, 8)), address=9000)
    assert _device.launches(rows, dense) == [(5000, 9000, 3, 16, 160, 8, 48, 1)]
    # Every other column, or a transposed view: read where they are, samples apart.
    assert _device.launches(view_of((3, 6, 8), (200, 16, 2), address=5000), dense) == [(5000, 9000, 3, 16, 200, 8, 48, 2)]
    plane = view_of((6, 8), (8, 1), address=9000)
    assert _device.launches(view_of((6, 8), (1, 6)), plane) == [(1 << 20, 9000, 1, 1, 0, 8, 0, 6)]
    with pytest.raises(ValueError, match="positive strides"):
        _device.launches(view_of((6, 8), (16, -1)), plane)
    with pytest.raises(ValueError, match="rows must be packed"):
        _device.launches(dense, view_of((3, 6, 8), (96, 16, 2)))


def test_out_must_match_and_stay_apart_from_the_input():
    shape = (2, 8, 8)
    view = view_of(shape, contiguous_strides(shape), address=4096)
    with pytest.raises(ValueError, match="differ"):
        _device.check_out(view, view_of((2, 8, 9), contiguous_strides((2, 8, 9)), address=1 << 30))
    with pytest.raises(ValueError, match="shares memory"):
        _device.check_out(view, view_of(shape, contiguous_strides(shape), address=4096 + 64))


def test_a_device_array_without_a_gpu_is_a_clear_error():
    if gpu_usable():
        pytest.skip("a GPU is present: the GPU tests cover device arrays")
    array, out = FakeDeviceArray((2, 8, 8)), FakeDeviceArray((2, 8, 8), address=0xBEEF0000)
    with pytest.raises(convstream.GpuUnavailableError):
        convstream.Filter("box", device="cuda")(array, out=out)


# --- on a GPU ----------------------------------------------------------------------------------

gpu = pytest.mark.gpu
needs_torch = pytest.mark.skipif(not has_module("torch"), reason="torch is not installed")
needs_cupy = pytest.mark.skipif(not has_module("cupy"), reason="cupy is not installed")


@pytest.fixture
def cuda():
    if not gpu_usable():
        pytest.skip("no usable GPU")


def cpu_engine(spec, border, planes: np.ndarray, bits: int) -> np.ndarray:
    f = convstream.Filter(spec, border=border, device="cpu", bit_depth=bits if bits > 8 else None)
    flat = planes.reshape(-1, planes.shape[-2], planes.shape[-1])
    return np.stack([f(np.ascontiguousarray(p)) for p in flat]).reshape(planes.shape)


DEVICE_MASKS = ["gaussian:size=13,sigma=3", "box:size=3", "sharpen", "sobel", "box:size=31",
                "custom:matrix=[[1,2,0],[0,1,-1],[3,0,1]],normalize=true,mode=correlate"]


@gpu
@needs_torch
@pytest.mark.parametrize("bits", [8, 10, 12, 16])
def test_torch_batches_match_the_cpu_engine_at_every_depth(cuda, rng, bits):
    import torch

    if bits > 8 and not hasattr(torch, "uint16"):
        pytest.skip("this torch has no uint16 tensors")
    host = rng.integers(0, 1 << bits, size=(2, 3, 67, 129), dtype=np.uint8 if bits == 8 else np.uint16)
    tensor = torch.from_numpy(host).cuda()
    for border in BORDERS:
        for spec in DEVICE_MASKS:
            f = convstream.Filter(spec, border=border, device="cuda", bit_depth=bits if bits > 8 else None)
            out = f(tensor)
            assert out.dtype == tensor.dtype and out.device == tensor.device and out.shape == tensor.shape
            assert np.array_equal(out.cpu().numpy(), cpu_engine(spec, border, host, bits)), (spec, border, bits)


@gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_tensors_match_the_float64_reference_and_the_cpu(cuda, rng, dtype):
    import torch

    host = (rng.random((2, 2, 70, 131)) * 255 - 40).astype(dtype)
    tensor = torch.from_numpy(host).cuda()
    for border in BORDERS:
        for spec in FLOAT_MASKS + ["sobel"]:
            f = convstream.Filter(spec, border=border, device="cuda")
            out = f(tensor)
            assert out.dtype == tensor.dtype
            result = out.cpu().numpy()
            on_cpu = convstream.Filter(spec, border=border, device="cpu")(host)
            # The same f32 arithmetic on both devices: equal but for a last-bit difference (which
            # a float16 result may carry into its own last bit).
            rtol, atol = (1e-6, 1e-4) if dtype == "float32" else (2e-3, 1e-2)
            close = np.allclose(result.astype(np.float64), on_cpu.astype(np.float64), rtol=rtol, atol=atol)
            assert close, (spec, border)
            if spec != "sobel":
                error = float(np.abs(result.astype(np.float64) - float_reference(spec, border, host)).max())
                assert error <= float_tolerance(spec, host, dtype), (spec, border, error)


@gpu
@needs_torch
def test_out_and_strided_tensors(cuda, rng):
    import torch

    host = rng.integers(0, 256, size=(3, 4, 90, 160), dtype=np.uint8)
    tensor = torch.from_numpy(host).cuda()
    crop = tensor[:, 1:3, 7:80, 9:150]
    expected = cpu_engine("gaussian:size=7", "reflect", np.ascontiguousarray(host[:, 1:3, 7:80, 9:150]), 8)
    f = convstream.Filter("gaussian:size=7", device="cuda")
    assert np.array_equal(f(crop).cpu().numpy(), expected)
    # Into a slice of a larger tensor the caller allocated.
    canvas = torch.full((3, 2, 100, 200), 5, dtype=torch.uint8, device="cuda")
    window = canvas[:, :, 10:83, 20:161]
    assert f(crop, out=window) is window
    result = canvas.cpu().numpy()
    assert np.array_equal(result[:, :, 10:83, 20:161], expected)
    untouched = result.copy()
    untouched[:, :, 10:83, 20:161] = 5
    assert (untouched == 5).all(), "nothing outside out= is written"
    with pytest.raises(ValueError, match="shares memory"):
        f(tensor, out=tensor)
    with pytest.raises(ValueError, match="differ"):
        f(tensor, out=torch.empty_like(tensor, dtype=torch.float32))


SLEEP_CYCLES = 200_000_000  # about 0.1 s of a GPU clock: longer than any call's host work


@gpu
@needs_torch
def test_the_call_is_queued_on_the_callers_stream_without_waiting(cuda, rng):
    """The output is poisoned, the stream held busy by a long kernel, then the filter called:
    it returns at once (nothing waited for the stream), a read on ANOTHER stream before
    synchronising still sees the poison (what is not promised), and once the stream has run,
    every pixel equals the CPU engine's."""
    import torch

    host = rng.integers(0, 256, size=(4, 1080, 1920), dtype=np.uint8)
    expected = cpu_engine("gaussian:size=13,sigma=3", "reflect", host, 8)
    source = torch.from_numpy(host).cuda()
    f = convstream.Filter("gaussian:size=13,sigma=3", device="cuda")
    f(source)  # the plan for this size is made once, outside the timing
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    other = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = torch.full_like(source, 0xAB)  # poison: no 13x13 Gaussian gives 171 everywhere
    torch.cuda.synchronize()  # the poison is in place before anything else runs
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SLEEP_CYCLES)
        started = time.perf_counter()
        returned = f(source, out=out)
        elapsed = time.perf_counter() - started
    with torch.cuda.stream(other):
        early = out.clone()  # not ordered after the filter: reads before it ran
    assert returned is out
    assert elapsed < 0.02, f"the call took {elapsed * 1e3:.1f} ms: it waited for the stream"
    stream.synchronize()
    other.synchronize()
    assert np.array_equal(out.cpu().numpy(), expected)
    assert (early.cpu().numpy() == 0xAB).all(), "a read on another stream is not ordered after the filter"


@gpu
@needs_torch
def test_sync_true_waits_for_the_result(cuda, rng):
    import torch

    host = rng.integers(0, 256, size=(1080, 1920), dtype=np.uint8)
    source = torch.from_numpy(host).cuda()
    f = convstream.Filter("box:size=5", device="cuda", sync=True)
    f(source)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = torch.full_like(source, 0xAB)
        torch.cuda._sleep(SLEEP_CYCLES)
        started = time.perf_counter()
        f(source, out=out)
        waited = time.perf_counter() - started
    # The call waited for the sleep ahead of it: the stream is idle, and a read on any stream
    # sees the result.
    assert stream.query() and waited > 0.01, waited
    with torch.cuda.stream(torch.cuda.Stream()):
        seen = out.cpu().numpy()
    assert np.array_equal(seen, cpu_engine("box:size=5", "reflect", host, 8))


@gpu
@needs_cupy
def test_cupy_arrays_on_cupys_stream(cuda, rng):
    import cupy

    host = rng.integers(0, 1 << 10, size=(2, 3, 50, 77), dtype=np.uint16)
    f = convstream.Filter("gaussian:size=5", device="cuda", bit_depth=10)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        array = cupy.asarray(host)
        out = f(array)
        result = cupy.asnumpy(out, stream=stream)
        stream.synchronize()
    assert isinstance(out, cupy.ndarray) and out.dtype == cupy.uint16
    assert np.array_equal(result, cpu_engine("gaussian:size=5", "reflect", host, 10))
    values = cupy.asarray((rng.random((40, 60)) * 3).astype(np.float32))
    assert cupy.asnumpy(f(values)).dtype == np.float32


class CudaDLPack:
    """A CUDA array that speaks only DLPack (as JAX's does)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@gpu
@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_dlpack_from_torch_and_cupy(cuda, rng, library):
    if not has_module(library):
        pytest.skip(f"{library} is not installed")
    host = rng.integers(0, 256, size=(3, 40, 64), dtype=np.uint8)
    if library == "torch":
        import torch

        array = torch.from_numpy(host).cuda()
    else:
        import cupy

        array = cupy.asarray(host)
    out = convstream.Filter("sharpen", device="cuda", sync=True)(CudaDLPack(array))
    assert hasattr(out, "__dlpack__")
    result = np.from_dlpack(out.cpu()) if hasattr(out, "cpu") else out.get()
    assert np.array_equal(np.asarray(result), cpu_engine("sharpen", "reflect", host, 8))


@gpu
def test_dlpack_from_jax(cuda, rng):
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU here")
    import jax.numpy as jnp

    host = rng.integers(0, 256, size=(2, 40, 64), dtype=np.uint8)
    out = convstream.Filter("box:size=3", device="cuda", sync=True)(jnp.asarray(host))
    assert type(out).__module__.split(".")[0] in ("jax", "jaxlib")
    assert np.array_equal(np.asarray(out), cpu_engine("box:size=3", "reflect", host, 8))


@gpu
@needs_torch
def test_wrong_device_dtype_and_memory_are_refused(cuda, rng):
    import torch

    tensor = torch.zeros((16, 16), dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="runs on the CPU"):
        convstream.Filter("box", device="cpu")(tensor)
    with pytest.raises(ValueError, match="cuda:7"):
        convstream.Filter("box", device="cuda:7")(tensor)
    with pytest.raises(TypeError, match="uint8, uint16"):
        convstream.Filter("box", device="cuda")(tensor.int())
    with pytest.raises(TypeError, match="uint8, uint16"):
        convstream.Filter("box", device="cuda")(tensor.bfloat16())
    # Host memory (pinned, so it has a device address) passed as the output.
    pinned = torch.zeros((16, 16), dtype=torch.uint8).pin_memory()
    with pytest.raises(ValueError, match="host memory"):
        convstream.Filter("box", device="cuda")(tensor, out=pinned)
    # An address no GPU allocation holds.
    host = np.zeros((16, 16), np.uint8)
    fake = FakeDeviceArray((16, 16), address=host.__array_interface__["data"][0])
    with pytest.raises(ValueError, match="not CUDA memory|host memory"):
        convstream.Filter("box", device="cuda")(fake, out=torch.empty_like(tensor))
    if torch.cuda.device_count() > 1:
        elsewhere = torch.zeros((16, 16), dtype=torch.uint8, device="cuda:1")
        with pytest.raises(ValueError, match="cuda:1"):
            convstream.Filter("box", device="cuda")(tensor, out=elsewhere)


@gpu
@needs_torch
def test_a_batch_is_one_kernel_launch(cuda, rng):
    """An (N, C, H, W) tensor is one launch; a channel slice of one is one launch per image."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    batch = torch.from_numpy(rng.integers(0, 256, size=(8, 3, 270, 480), dtype=np.uint8)).cuda()
    f = convstream.Filter("gaussian:size=13,sigma=3", device="cuda")
    f(batch)
    f(batch[:, 1:])
    torch.cuda.synchronize()

    def launches(call) -> int:
        with profile(activities=[ProfilerActivity.CUDA]) as trace:
            call()
            torch.cuda.synchronize()
        return sum(e.count for e in trace.key_averages() if "convolve_" in e.key)

    whole = launches(lambda: f(batch))
    if whole == 0:
        pytest.skip("the profiler saw no kernels (CUPTI unavailable)")
    assert whole == 1
    assert launches(lambda: f(batch[:, 1:])) == 8


@gpu
@needs_torch
def test_calls_are_captured_in_cuda_graphs(cuda, rng):
    """A call queued on a capturing stream is captured (after a warm-up call has prepared the
    plan) and replayed with the graph."""
    import torch

    host = rng.integers(0, 256, size=(2, 3, 120, 200), dtype=np.uint8)
    x = torch.from_numpy(host).cuda()
    y = torch.empty_like(x)
    f = convstream.Filter("box:size=5", device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        f(x, out=y)  # the plan for this size is made outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        f(x, out=y)
    y.fill_(0)
    x.copy_(torch.from_numpy(host[::-1].copy()).cuda())
    graph.replay()
    torch.cuda.synchronize()
    assert np.array_equal(y.cpu().numpy(), cpu_engine("box:size=5", "reflect", host[::-1].copy(), 8))


@gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32", "float16"])
def test_channels_last_tensors_equal_their_planes_bit_for_bit(cuda, rng, dtype):
    """NHWC on the GPU, as CV-CUDA takes it: a (N, H, W, C) tensor with layout="NHWC", and a
    (N, C, H, W) tensor in torch.channels_last memory, give what the same planes give laid out
    as planes, bit for bit, in one launch a batch; outputs poisoned first."""
    import torch

    if dtype == "uint16" and not hasattr(torch, "uint16"):
        pytest.skip("this torch has no uint16 tensors")
    if dtype.startswith("float"):
        host = (rng.random((2, 45, 77, 3)) * 255 - 40).astype(dtype)
    else:
        host = rng.integers(0, 1 << (8 * np.dtype(dtype).itemsize), size=(2, 45, 77, 3)).astype(dtype)
    nhwc = torch.from_numpy(host).cuda()
    nchw = nhwc.permute(0, 3, 1, 2).contiguous()
    channels_last = nchw.contiguous(memory_format=torch.channels_last)
    assert channels_last.stride()[1] == 1
    for border in BORDERS:
        for spec in DEVICE_MASKS:
            f = convstream.Filter(spec, border=border, device="cuda")
            want = f(nchw)
            poisoned = torch.full_like(nhwc, 77)
            got = f(nhwc, layout="NHWC", out=poisoned)
            assert got is poisoned
            torch.cuda.synchronize()
            same = lambda a, b: torch.equal(a.view(torch.uint8) if a.dtype.is_floating_point else a, b.view(torch.uint8) if b.dtype.is_floating_point else b)
            assert same(got.permute(0, 3, 1, 2).contiguous(), want), (spec, border, dtype)
            memory = f(channels_last)
            assert memory.stride() == channels_last.stride(), "the result keeps channels_last"
            torch.cuda.synchronize()
            assert same(memory.contiguous(), want), (spec, border, dtype)


@gpu
@needs_torch
def test_channels_last_refusals_say_what_to_do(cuda, rng):
    import torch

    f = convstream.Filter("box:size=3", device="cuda")
    nhwc = torch.zeros((1, 8, 9, 3), dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="layout: NHWC is 4-D but the input has 3"):
        f(nhwc[0], layout="NHWC")
    with pytest.raises(ValueError, match="1 to 4 are taken"):
        f(torch.zeros((1, 8, 9, 5), dtype=torch.uint8, device="cuda"), layout="NHWC")
    with pytest.raises(ValueError, match="pixels are not 3 samples side by side"):
        f(torch.zeros((1, 8, 18, 3), dtype=torch.uint8, device="cuda")[:, :, ::2], layout="NHWC")
    nchw_out = torch.zeros((1, 3, 8, 9), dtype=torch.uint8, device="cuda").permute(0, 2, 3, 1)
    with pytest.raises(ValueError, match="out: laid out"):
        f(nhwc.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last), out=nchw_out.permute(0, 3, 1, 2).contiguous())


@gpu
@needs_cupy
def test_cupy_hwc_images_with_layout(cuda, rng):
    import cupy

    host = rng.integers(0, 256, size=(61, 83, 4), dtype=np.uint8)
    image = cupy.asarray(host)
    f = convstream.Filter("gaussian:size=7", border="mirror", device="cuda")
    got = f(image, layout="HWC")
    cupy.cuda.get_current_stream().synchronize()
    # The host path reads H x W x C the same way; each channel as the CPU engine gives it.
    assert np.array_equal(cupy.asnumpy(got), convstream.Filter("gaussian:size=7", border="mirror", device="cpu")(host))
