"""GPU arrays for :class:`convstream.Filter`: what a PyTorch tensor, a CuPy array, anything
with ``__cuda_array_interface__`` or a DLPack capsule of CUDA memory is (address, shape,
byte strides, sample kind, GPU), the caller's current CUDA stream, an output allocated by
the array's own library, and the batches of planes one launch takes.

The planes are filtered where they are, on the caller's stream, with no host wait: see
``Filter.__call__``. Nothing here copies or synchronises.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np

#: DLPack's device types (dlpack.h): host memory, and CUDA device or managed memory.
DLPACK_CPU = 1
DLPACK_CUDA = (2, 13)

#: How samples are stored, by NumPy dtype: the native call's ``values`` and the bytes a sample takes.
SAMPLE_KINDS = {
    np.dtype(np.uint8): ("uint", 1),
    np.dtype(np.uint16): ("uint", 2),
    np.dtype(np.float32): ("float32", 4),
    np.dtype(np.float16): ("float16", 2),
}

DTYPE_ADVICE = (
    "uint8, uint16 (9- to 16-bit samples), float32 or float16 values; "
    "convert with .to(torch.uint8) / .astype(numpy.float32)"
)


class DeviceArray(NamedTuple):
    """A GPU array as the native call takes it."""

    array: Any
    library: str
    shape: Tuple[int, ...]
    #: Bytes between neighbours along each dimension.
    strides: Tuple[int, ...]
    address: int
    dtype: np.dtype
    ordinal: int


def library_of(array: Any) -> str:
    """``torch``, ``cupy``, ``numpy``, ``jax``... by the array's type."""
    return type(array).__module__.split(".")[0]


def is_cuda_dlpack(array: Any) -> bool:
    """Whether ``array`` speaks DLPack and lives in CUDA memory."""
    device = getattr(array, "__dlpack_device__", None)
    if device is None or not hasattr(array, "__dlpack__"):
        return False
    return int(device()[0]) in DLPACK_CUDA


def is_cpu_dlpack(array: Any) -> bool:
    """Whether ``array`` speaks DLPack and lives in host memory."""
    device = getattr(array, "__dlpack_device__", None)
    if device is None or not hasattr(array, "__dlpack__"):
        return False
    return int(device()[0]) == DLPACK_CPU


def _check_dtype(dtype: np.dtype, shape: Tuple[int, ...]) -> np.dtype:
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and not np.little_endian):
        raise TypeError(f"convstream.Filter takes little-endian samples, not {dtype.str}")
    native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
    if native not in SAMPLE_KINDS:
        raise TypeError(f"convstream.Filter takes {DTYPE_ADVICE}; not {dtype} (shape {shape})")
    return native


_TORCH_DTYPES: dict = {}


def _torch_dtype(tensor: Any) -> np.dtype:
    dtypes = _TORCH_DTYPES
    if not dtypes:
        import torch

        dtypes.update({
            torch.uint8: np.dtype(np.uint8),
            torch.float32: np.dtype(np.float32),
            torch.float16: np.dtype(np.float16),
        })
        if hasattr(torch, "uint16"):
            dtypes[torch.uint16] = np.dtype(np.uint16)
    if tensor.dtype not in dtypes:
        raise TypeError(f"convstream.Filter takes {DTYPE_ADVICE}; not {tensor.dtype} (shape {tuple(tensor.shape)})")
    return dtypes[tensor.dtype]


def describe(array: Any) -> DeviceArray:
    """The GPU array ``array`` (a torch CUDA tensor or anything with
    ``__cuda_array_interface__``) as the native call takes it."""
    library = library_of(array)
    if library == "torch":
        # Read from the tensor itself: torch's __cuda_array_interface__ lacks some dtypes.
        dtype = _torch_dtype(array)
        shape = tuple(array.shape)
        strides = tuple(s * array.element_size() for s in array.stride())
        ordinal = array.device.index
        if ordinal is None:
            import torch

            ordinal = torch.cuda.current_device()
        return DeviceArray(array, library, shape, strides, array.data_ptr(), dtype, ordinal)
    interface = array.__cuda_array_interface__
    shape = tuple(interface["shape"])
    dtype = _interface_dtype(interface["typestr"], shape)
    strides = interface.get("strides")
    strides = _packed_strides(shape, dtype.itemsize) if strides is None else tuple(strides)
    address = int(interface["data"][0] or 0)
    if library == "cupy":
        ordinal = array.device.id
    else:
        ordinal = _ordinal_of_address(address)
    return DeviceArray(array, library, shape, strides, address, dtype, ordinal)


_INTERFACE_DTYPES: dict = {}


def _interface_dtype(typestr: str, shape: Tuple[int, ...]) -> np.dtype:
    """The checked dtype of an interface's ``typestr``, kept per typestr (parsing one is most
    of what reading an array costs)."""
    dtype = _INTERFACE_DTYPES.get(typestr)
    if dtype is None:
        dtype = _check_dtype(np.dtype(typestr), shape)
        _INTERFACE_DTYPES[typestr] = dtype
    return dtype


@functools.lru_cache(maxsize=256)
def _packed_strides(shape: Tuple[int, ...], itemsize: int) -> Tuple[int, ...]:
    """The byte strides of a C-contiguous array."""
    return tuple(itemsize * math.prod(shape[i + 1 :]) for i in range(len(shape)))


def _ordinal_of_address(address: int) -> int:
    """The GPU of a device address from a library other than PyTorch and CuPy, asked of
    CuPy where it is installed; 0 otherwise (the native check then refuses memory of another GPU)."""
    cupy = _optional("cupy")
    if cupy is None:
        return 0
    try:
        ordinal = int(cupy.cuda.runtime.pointerGetAttributes(address).device)
    except Exception:  # noqa: BLE001 - an address CuPy cannot read: the native check says why
        return 0
    # Host memory reads as an invalid device (-2): the native check refuses it by name.
    return max(ordinal, 0)


_MISSING: set = set()


def _optional(name: str) -> Any:
    """Module ``name``, or None when it cannot be imported (tried once: a failed import costs
    a search of the path on every call)."""
    if name in _MISSING:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        _MISSING.add(name)
        return None


def from_dlpack(array: Any) -> Any:
    """A CUDA DLPack array as a torch tensor (or a CuPy array where PyTorch is missing),
    sharing its memory; the producer orders its pending writes before the consumer's stream."""
    try:
        import torch

        return torch.from_dlpack(array)
    except ImportError:
        pass
    try:
        import cupy

        return cupy.from_dlpack(array)
    except ImportError:
        raise TypeError(
            f"a {library_of(array)} array in CUDA memory is read through DLPack by PyTorch or CuPy; "
            "install one of them"
        ) from None


def to_library_of(original: Any, result: Any) -> Any:
    """``result`` (a torch tensor or CuPy array) as an array of ``original``'s library, through
    DLPack, when that library can take one (JAX, NumPy...); else ``result`` itself."""
    library = library_of(original)
    if library in ("torch", "cupy"):
        return result
    if library in ("jax", "jaxlib"):
        import jax.numpy as jnp

        return jnp.from_dlpack(result)
    import sys

    module = sys.modules.get(library)
    take = getattr(module, "from_dlpack", None)
    return take(result) if take is not None else result


def caller_stream(view: DeviceArray, stream: Any) -> int:
    """The CUDA stream to queue on, as a ``CUstream`` handle: ``stream`` when given (an int,
    a ``torch.cuda.Stream`` or a ``cupy.cuda.Stream``), else the current stream of the
    array's library on its GPU (the legacy default stream, 0, for other libraries)."""
    handle = stream_handle_of(stream)
    if handle is not None:
        return handle
    if view.library == "torch":
        import torch

        # The raw handle without making a Stream object (as Triton reads it), where torch has it.
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return int(raw(view.ordinal))
        return int(torch.cuda.current_stream(view.array.device).cuda_stream)
    if view.library == "cupy":
        import cupy

        with cupy.cuda.Device(view.ordinal):
            return int(cupy.cuda.get_current_stream().ptr)
    # The interface's producer stream (1: the legacy default stream, 2: the per-thread one):
    # queued there, the filter runs after the producer's writes.
    interface_stream = view.array.__cuda_array_interface__.get("stream")
    return int(interface_stream) if interface_stream is not None else 0


def new_like(view: DeviceArray, channels_last: bool = False) -> Any:
    """A C-contiguous array like ``view``'s, from its own library on its GPU (PyTorch's or
    CuPy's allocator, stream-ordered on their current stream: no synchronisation). With
    ``channels_last``, ``view`` is (..., C, H, W) with its channels side by side in memory
    (``torch.channels_last``): the result is laid out the same way, a contiguous
    (..., H, W, C) array seen as (..., C, H, W)."""
    shape = view.shape
    order = None
    if channels_last:
        dims = len(shape)
        shape = shape[:-3] + (shape[-2], shape[-1], shape[-3])
        order = (*range(dims - 3), dims - 1, dims - 3, dims - 2)
    if view.library == "torch":
        import torch

        if order is None:
            return torch.empty_like(view.array, memory_format=torch.contiguous_format)
        return torch.empty(shape, dtype=view.array.dtype, device=view.array.device).permute(*order)
    try:
        import cupy
    except ImportError:
        raise TypeError(
            f"the result of a {view.library} array is allocated by CuPy, which is not installed; "
            "pass out= (an array of the input's shape and dtype on its GPU)"
        ) from None
    with cupy.cuda.Device(view.ordinal):
        if order is not None:
            return cupy.empty(shape, dtype=view.dtype).transpose(order)
        if view.library == "cupy":
            return cupy.empty_like(view.array, order="C")
        return cupy.empty(view.shape, dtype=view.dtype)


def extent(view: DeviceArray) -> int:
    """Bytes from the first sample to just past the last."""
    return _extent(view.shape, view.strides, view.dtype.itemsize)


@functools.lru_cache(maxsize=256)
def _extent(shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int) -> int:
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def overlaps(a: DeviceArray, b: DeviceArray) -> bool:
    """Whether two arrays' byte ranges share any byte."""
    return a.address < b.address + extent(b) and b.address < a.address + extent(a)


def pixel_planes(view: DeviceArray, layout: Optional[str], name: str) -> Tuple[DeviceArray, int]:
    """``view`` as the kernels take it, and the channels a pixel holds: planes (..., H, W) as
    they are, with 1; an image laid out channels last, its C samples a pixel side by side,
    as planes (..., H, W * C) of C interleaved channels (each filtered as a plane of its own,
    in one launch). Channels last is asked for with ``layout="NHWC"``/``"HWC"`` (the last
    dimension is C, as CV-CUDA's tensors), or read from memory laid out that way: a torch
    tensor (N, C, H, W) in ``torch.channels_last`` (C samples a pixel side by side)."""
    shape, strides, itemsize = view.shape, view.strides, view.dtype.itemsize
    named = None if layout is None else str(layout).upper()
    if named is not None and named not in ("HW", "CHW", "NCHW", "HWC", "NHWC"):
        raise ValueError(f"layout: {layout!r} is not one of HW, HWC, NHWC, CHW, NCHW")
    if named is not None and len(named) != len(shape):
        raise ValueError(f"layout: {named} is {len(named)}-D but the {name} has {len(shape)} dimensions")
    if named in ("HWC", "NHWC"):
        axes = (len(shape) - 3, len(shape) - 2, len(shape) - 1)
    elif (
        named is None
        and len(shape) >= 3
        and 2 <= shape[-3] <= 4
        and shape[-1] > 1
        and strides[-3] == itemsize
        and strides[-1] == shape[-3] * itemsize
    ):
        axes = (len(shape) - 2, len(shape) - 1, len(shape) - 3)
    else:
        return view, 1
    rows, pixels, channels = axes
    count = shape[channels]
    if not 1 <= count <= 4:
        raise ValueError(f"the {name} laid out channels last has {count} channels; 1 to 4 are taken")
    if count > 1 and strides[channels] != itemsize or shape[pixels] > 1 and strides[pixels] != count * itemsize:
        raise ValueError(
            f"the {name}'s pixels are not {count} samples side by side (shape {shape}, strides {strides}): "
            "pass .contiguous() / cupy.ascontiguousarray"
        )
    leading = [d for d in range(len(shape)) if d not in axes]
    planes_shape = tuple(shape[d] for d in leading) + (shape[rows], shape[pixels] * count)
    planes_strides = tuple(strides[d] for d in leading) + (strides[rows], itemsize)
    return view._replace(shape=planes_shape, strides=planes_strides), count


def row_layout(view: DeviceArray, name: str) -> int:
    """The bytes between rows of ``view``'s planes, refused unless each row's samples are
    packed (the last dimension's stride is the sample size): what an output must be."""
    if len(view.shape) < 2:
        raise ValueError(f"a device array is (..., H, W); got shape {view.shape}")
    itemsize = view.dtype.itemsize
    height, width = view.shape[-2], view.shape[-1]
    row_stride, sample_stride = view.strides[-2], view.strides[-1]
    if width > 1 and sample_stride != itemsize:
        raise ValueError(
            f"the {name}'s samples are {sample_stride} bytes apart within a row (shape {view.shape}, "
            f"strides {view.strides}); rows must be packed: pass .contiguous() / cupy.ascontiguousarray"
        )
    if height > 1 and (row_stride < width * itemsize or row_stride % itemsize):
        raise ValueError(
            f"the {name}'s rows are {row_stride} bytes apart (shape {view.shape}, strides {view.strides}); "
            "rows must follow each other without overlapping: pass .contiguous()"
        )
    return row_stride if height > 1 else width * itemsize


def read_layout(view: DeviceArray, name: str) -> Tuple[int, int]:
    """The bytes between rows and between samples of ``view``'s planes, read where they are
    (a crop, every other column, a transposed view): any positive strides of whole samples.
    Negative strides (a flipped CuPy view) are refused with what to do."""
    if len(view.shape) < 2:
        raise ValueError(f"a device array is (..., H, W); got shape {view.shape}")
    itemsize = view.dtype.itemsize
    height, width = view.shape[-2], view.shape[-1]
    row_stride = view.strides[-2] if height > 1 else width * itemsize
    sample_stride = view.strides[-1] if width > 1 else itemsize
    for what, stride in (("rows", row_stride), ("samples", sample_stride)):
        if stride <= 0 or stride % itemsize:
            raise ValueError(
                f"the {name}'s {what} are {stride} bytes apart (shape {view.shape}, strides {view.strides}); "
                "GPU arrays are read at positive strides of whole samples: pass .contiguous() / cupy.ascontiguousarray"
            )
    return row_stride, sample_stride


def check_out(view: DeviceArray, out: DeviceArray) -> None:
    """Refuses an ``out=`` that does not match the input (shape, dtype, GPU) or shares memory with it."""
    if out.shape != view.shape or out.dtype != view.dtype:
        raise ValueError(
            f"out: shape {out.shape} and dtype {out.dtype} differ from the input's {view.shape} and {view.dtype}"
        )
    if out.ordinal != view.ordinal:
        raise ValueError(f"out is on cuda:{out.ordinal} but the input is on cuda:{view.ordinal}")
    if overlaps(view, out):
        raise ValueError("out shares memory with the input; a convolution cannot be written over its own input")


def launches(view: DeviceArray, out: DeviceArray) -> List[Tuple[int, ...]]:
    """The launches that filter ``view`` into ``out``: ``(source, output, planes, source row
    pitch, source plane stride, output row pitch, output plane stride, source sample pitch)``
    each. The innermost leading dimensions whose strides nest in both arrays (all of a
    contiguous (N, C, H, W) tensor, or of a slice of one) make one batch; each index of the
    outer ones that do not takes a launch of its own."""
    layout = _launch_layout(view.shape, view.strides, out.shape, out.strides, view.dtype.itemsize)
    return [(view.address + s, out.address + d, *rest) for s, d, *rest in layout]


@functools.lru_cache(maxsize=256)
def _launch_layout(
    shape: Tuple[int, ...], src_strides: Tuple[int, ...], out_shape: Tuple[int, ...], dst_strides: Tuple[int, ...],
    itemsize: int,
) -> List[Tuple[int, ...]]:
    """:func:`launches` with offsets in place of addresses, kept per layout: a loop calling
    on tensors of one layout computes it once."""
    dtype = np.dtype(f"u{itemsize}") if itemsize in (1, 2) else np.dtype(np.float32)
    view = DeviceArray(None, "", shape, src_strides, 0, np.dtype(dtype), 0)
    out = DeviceArray(None, "", out_shape, dst_strides, 0, np.dtype(dtype), 0)
    src_pitch, src_sample = read_layout(view, "input")
    dst_pitch = row_layout(out, "output")
    dims = [d for d in range(len(shape) - 2) if shape[d] != 1]
    count, src_stride, dst_stride = 1, 0, 0
    k = len(dims)
    while k > 0:
        d = dims[k - 1]
        if count == 1:
            if view.strides[d] <= 0 or out.strides[d] <= 0:
                break
            src_stride, dst_stride = view.strides[d], out.strides[d]
        elif view.strides[d] != src_stride * count or out.strides[d] != dst_stride * count:
            break
        count *= shape[d]
        k -= 1
    outer = dims[:k]
    result = []
    for index in itertools.product(*(range(shape[d]) for d in outer)):
        src_offset = sum(i * view.strides[d] for i, d in zip(index, outer))
        dst_offset = sum(i * out.strides[d] for i, d in zip(index, outer))
        result.append((src_offset, dst_offset, count, src_pitch, src_stride, dst_pitch, dst_stride, src_sample))
    return result


def stream_handle_of(stream: Optional[Any]) -> Optional[int]:
    """``stream`` checked early (before any work), for a clear error."""
    if stream is None:
        return None
    for name in ("cuda_stream", "ptr"):
        if hasattr(stream, name):
            return int(getattr(stream, name))
    if isinstance(stream, bool) or not hasattr(stream, "__index__"):
        raise TypeError(f"stream: a CUDA stream handle or a torch/CuPy stream, not {type(stream).__name__}")
    return stream.__index__()
