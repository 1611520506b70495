"""convstream.Filter on CUDA arrays (CuPy, PyTorch) and the CUDA engine from Python: results
identical to the CPU engine, on the array's own device, with nothing crossing PCIe.

Marked ``gpu``: skipped unless asked for, on a GPU host with CuPy and/or PyTorch::

    python3 -m pytest python/tests -m gpu -v

How "no host copy" is checked, three ways:

1. The CUDA engine counts every byte its copies move between host and GPU
   (``Filter.pcie_bytes()``, the engine's own ``PcieBytes``); device arrays never reach it
   (they are launched on the caller's stream), so it reports none.
2. The result is allocated by the caller's library on the input's device
   (``out.device == in.device``, ``out.__cuda_array_interface__`` a device pointer).
3. The process's resident memory does not grow by the batch's size while a large batch is
   filtered (a host staging copy of it would): measured with ``ru_maxrss`` after a warm-up.
"""

from __future__ import annotations

import resource

import numpy as np
import pytest

import convstream
from conftest import gpu_usable, has_module

pytestmark = pytest.mark.gpu

BORDERS = ["constant", "nearest", "reflect", "mirror", "wrap"]
MASKS = ["gaussian:size=13,sigma=3", "box:size=3", "sharpen", "sobel", "motion-blur:size=7,angle=30",
         "custom:matrix=[[1,2,0],[0,1,-1],[3,0,1]],normalize=true,mode=correlate"]


@pytest.fixture(scope="module", autouse=True)
def gpu():
    if not gpu_usable():
        pytest.skip("no usable GPU")


def cpu_reference(spec, border, planes: np.ndarray, bits: int) -> np.ndarray:
    f = convstream.Filter(spec, border=border, device="cpu", bit_depth=bits if bits > 8 else None)
    flat = planes.reshape(-1, planes.shape[-2], planes.shape[-1])
    return np.stack([f(np.ascontiguousarray(p)) for p in flat]).reshape(planes.shape)


def random_batch(shape, bits, seed=7):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << bits, size=shape, dtype=np.uint8 if bits == 8 else np.uint16)


def test_numpy_on_the_cuda_engine_equals_the_cpu_engine():
    for bits in (8, 10, 16):
        batch = random_batch((67, 129), bits)
        for border in BORDERS:
            for spec in MASKS:
                f = convstream.Filter(spec, border=border, device="cuda", bit_depth=bits if bits > 8 else None)
                assert np.array_equal(f(batch), cpu_reference(spec, border, batch, bits)), (spec, border, bits)
                assert f.engine.startswith("cuda")


def test_numpy_images_and_views_on_the_cuda_engine_equal_the_cpu_engine():
    # Interleaved channels, a flipped view and BGRA seen as BGR, through the CUDA engine one
    # channel at a time: the CPU engine's samples.
    image = random_batch((45, 77, 4), 8)
    for view in (image, image[::-1, ::-1], image[..., :3], image[5:40, 3:70, 1]):
        for spec in ("gaussian:size=7", "sobel"):
            want = convstream.Filter(spec, device="cpu")(view)
            f = convstream.Filter(spec, device="cuda")
            assert np.array_equal(f(view), want), (spec, view.shape, view.strides)
            assert f.engine.startswith("cuda")


@pytest.mark.skipif(not has_module("cupy"), reason="cupy is not installed")
@pytest.mark.parametrize("bits", [8, 10, 12, 16])
def test_cupy_arrays_stay_on_the_gpu_and_match_the_cpu_engine(bits):
    import cupy

    host = random_batch((3, 2, 90, 161), bits)
    for border in BORDERS:
        for spec in MASKS:
            f = convstream.Filter(spec, border=border, device="cuda", bit_depth=bits if bits > 8 else None)
            array = cupy.asarray(host)
            out = f(array)
            assert isinstance(out, cupy.ndarray) and out.dtype == array.dtype and out.shape == array.shape
            assert out.device.id == array.device.id
            assert np.array_equal(cupy.asnumpy(out), cpu_reference(spec, border, host, bits)), (spec, border)
            assert f.pcie_bytes() is None, f.pcie_bytes()


@pytest.mark.skipif(not has_module("torch"), reason="torch is not installed")
def test_torch_batches_stay_on_the_gpu_and_match_the_cpu_engine():
    import torch

    host = random_batch((4, 3, 72, 128), 8)
    tensor = torch.from_numpy(host).cuda()
    for border in BORDERS:
        f = convstream.Filter("gaussian:size=7", border=border, device="cuda")
        out = f(tensor)
        assert isinstance(out, torch.Tensor) and out.is_cuda and out.device == tensor.device
        assert out.dtype == torch.uint8 and out.shape == tensor.shape
        assert np.array_equal(out.cpu().numpy(), cpu_reference("gaussian:size=7", border, host, 8))
        assert f.pcie_bytes() is None
    if hasattr(torch, "uint16"):
        host16 = random_batch((2, 50, 70), 12)
        deep = torch.from_numpy(host16).cuda()
        out = convstream.Filter("box:size=5", device="cuda", bit_depth=12)(deep)
        assert out.dtype == torch.uint16
        assert np.array_equal(out.cpu().numpy(), cpu_reference("box:size=5", "reflect", host16, 12))
    with pytest.raises(TypeError, match="uint8, uint16"):
        convstream.Filter("box", device="cuda")(tensor.int())
    # A transposed view is read where it is: the samples of its packed copy.
    f = convstream.Filter("gaussian:size=7", device="cuda")
    transposed = tensor.transpose(2, 3)
    assert torch.equal(f(transposed), f(transposed.contiguous()))


@pytest.mark.skipif(not has_module("torch"), reason="torch is not installed")
def test_the_callers_stream_orders_the_filter():
    """Input written by a kernel still queued on a side stream when the filter is called: the
    filter is queued behind it on that (current) stream, so it reads the finished input, and
    a read queued on the same stream sees the finished result."""
    import torch

    f = convstream.Filter("box:size=3", device="cuda")
    side = torch.cuda.Stream()
    expected = cpu_reference("box:size=3", "reflect", np.full((1024, 1024), 77, np.uint8), 8)
    with torch.cuda.stream(side):
        big = torch.zeros((1024, 1024), dtype=torch.uint8, device="cuda")
        torch.cuda._sleep(50_000_000)  # keeps the stream busy before the fill runs
        big.fill_(77)
        out = f(big)
        result = out.cpu().numpy()
    assert np.array_equal(result, expected)


@pytest.mark.skipif(not has_module("cupy"), reason="cupy is not installed")
def test_no_host_memory_grows_with_the_batch():
    import cupy

    f = convstream.Filter("gaussian:size=13,sigma=3", device="cuda")
    # The engine's one-time allocations for this plane size (kernels, lanes) come first.
    f(cupy.zeros((2, 2160, 3840), dtype=cupy.uint8))
    batch = cupy.asarray(random_batch((16, 2160, 3840), 8))  # 126 MiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = f(batch)
    cupy.cuda.Device().synchronize()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < batch.nbytes // 4, f"resident memory grew by {grown} bytes for a {batch.nbytes}-byte batch"
    assert f.pcie_bytes() is None
    assert out.data.ptr != batch.data.ptr


@pytest.mark.skipif(not has_module("cupy"), reason="cupy is not installed")
def test_device_arrays_are_refused_where_they_cannot_go():
    import cupy

    array = cupy.zeros((16, 16), dtype=cupy.uint8)
    with pytest.raises(ValueError, match="runs on the CPU"):
        convstream.Filter("box", device="cpu")(array)
    with pytest.raises(ValueError, match="cuda:7"):
        convstream.Filter("box", device="cuda:7")(array)
    # Every other column is read where it is; a flipped view is refused with what to do.
    columns = cupy.arange(16 * 32, dtype=cupy.uint8).reshape(16, 32)[:, ::2]
    f = convstream.Filter("sobel", device="cuda")
    assert cupy.array_equal(f(columns), f(cupy.ascontiguousarray(columns)))
    with pytest.raises(ValueError, match="positive strides"):
        f(columns[:, ::-1])
    with pytest.raises(TypeError, match="uint8, uint16"):
        convstream.Filter("box", device="cuda")(cupy.zeros((16, 16), dtype=cupy.int32))
    with pytest.raises(ValueError, match="planes"):
        convstream.Filter("box", device="cuda", planes=[0])(array)


def yuv420_clip(path, frames, width=320, height=240):
    """A moving 4:2:0 test picture as a YUV4MPEG2 file (no FFmpeg CLI needed: a GPU host may
    have none)."""
    y, x = np.mgrid[0:height, 0:width]
    with open(path, "wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
        for i in range(frames):
            luma = ((x * 3 + y * 2 + i * 7) % 256).astype(np.uint8)
            u = ((x[::2, ::2] + i * 5) % 256).astype(np.uint8)
            v = ((y[::2, ::2] * 2 + i * 3) % 256).astype(np.uint8)
            out.write(b"FRAME\n" + luma.tobytes() + u.tobytes() + v.tobytes())
    return path


@pytest.mark.skipif(not has_module("torch"), reason="torch is not installed")
def test_read_as_torch_gives_cuda_tensors(tmp_path):
    clip = yuv420_clip(tmp_path / "in.y4m", 5)
    numpy_frames = list(convstream.read(str(clip), mask="box", device="cpu"))
    torch_frames = list(convstream.read(str(clip), mask="box", device="cuda", as_="torch"))
    assert len(torch_frames) == 5
    for a, b in zip(numpy_frames, torch_frames):
        assert b.planes[0].is_cuda
        assert np.array_equal(a.planes[0], b.planes[0].cpu().numpy())
        assert a.pts == b.pts


def h264_clip(path, convstream_bin, frames=8):
    """A short H.264 clip, encoded by convstream's own default encoder (x264 or OpenH264);
    None where the build has neither."""
    import subprocess

    source = yuv420_clip(path.with_suffix(".y4m"), frames)
    done = subprocess.run(
        [str(convstream_bin), "run", "--no-progress", "-y", "-i", str(source), "-o", str(path),
         "--mask", "identity", "--device", "cpu"],
        capture_output=True,
    )
    return path if done.returncode == 0 else None


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_nvdec_pictures_become_tensors_without_leaving_the_gpu(tmp_path, library, convstream_bin):
    """NVDEC leaves pictures on the GPU and the engine filters them into the caller's tensors
    there: NV12's planes (Y, then UV interleaved) equal the software decoder's filtered Y, U
    and V (H.264 decodes bit-exactly). The clip is longer than the engine's frames in flight,
    so frames are filtered into their tensors while earlier ones are still held."""
    if not has_module(library):
        pytest.skip(f"{library} is not installed")
    clip = h264_clip(tmp_path / "in.mp4", convstream_bin, frames=40)
    if clip is None:
        pytest.skip("no H.264 encoder in this build")
    spec = "gaussian:size=5"
    software = list(convstream.read(str(clip), mask=spec, device="cpu", decoder="software"))
    reader = convstream.read(str(clip), mask=spec, device="cuda", decoder="nvdec", as_=library)
    frames = list(reader)
    assert reader.format == "nv12", reader.format
    assert len(frames) == len(software) == 40
    for ours, theirs in zip(frames, software):
        y, uv = ours.planes
        if library == "torch":
            assert y.is_cuda
            y, uv = y.cpu().numpy(), uv.cpu().numpy()
        else:
            import cupy

            assert isinstance(y, cupy.ndarray)
            y, uv = cupy.asnumpy(y), cupy.asnumpy(uv)
        assert np.array_equal(y, theirs.planes[0])
        assert np.array_equal(uv[..., 0], theirs.planes[1]) and np.array_equal(uv[..., 1], theirs.planes[2])
        assert ours.pts == theirs.pts
