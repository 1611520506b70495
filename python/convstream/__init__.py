"""convstream: 2D convolution masks on images and video, on NVIDIA GPUs (CUDA) or the CPU.

The same masks, borders and engines as the ``convstream`` command, byte for byte:

- :class:`Filter` filters NumPy arrays and PyTorch CPU tensors (``uint8``, ``uint16``
  holding 9- to 16-bit samples, ``float32``, ``float16``), and CuPy arrays, PyTorch tensors
  and DLPack arrays on the GPU where they are, queued on the caller's CUDA stream.
- :func:`read` decodes a video (FFmpeg) and yields its filtered frames with their timestamps.
- :func:`run` filters a video into another, as ``convstream run`` does.
- :func:`masks`, :func:`masks_text`, :func:`show_mask` and :func:`mask_info` list and show
  the masks as ``convstream masks`` and ``convstream masks show`` do.

Masks are written as on the command line: ``"gaussian:size=13,sigma=3"``, ``"sobel"``,
``"custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]"``. Borders take SciPy's names (``reflect``,
``mirror``, ``nearest``, ``constant``, ``wrap``), OpenCV's and NumPy's aliases
(``reflect_101``, ``replicate``, ``edge``, ``zero``...) and ``ffmpeg`` (FFmpeg's
``convolution`` filter's edges).

Errors: a bad mask, border, device or argument raises ``ValueError`` with the message
``convstream run`` prints for the same flag; an array of the wrong kind raises
``TypeError`` (dtype, type) or ``ValueError`` (shape, layout, device); a missing GPU raises
:class:`GpuUnavailableError` with the CLI's message.
"""

# One module at some length (about 1,000 lines, most of them docstrings): the public API is one
# namespace, and its array checks, NumPy/CuPy/torch handling and video iterator share helpers.

from __future__ import annotations

import atexit
import math
import numbers
from fractions import Fraction
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _device
from ._convstream import (
    CUDA_BUILT,
    GpuUnavailableError,
    NativeFilter,
    NativeReader,
    NativeStreamFilter,
    mask_coefficients as _mask_coefficients,
    masks_text as _masks_text,
    presets as _presets,
    run as _run,
    show_mask as _show_mask,
    wait_for_gpu_starts as _wait_for_gpu_starts,
)

# A GPU still being set up in the background when the interpreter exits (a clip that ended
# first) is let finish, as the command line does: exiting inside the driver's initialisation
# can abort the process.
atexit.register(_wait_for_gpu_starts)

__all__ = [
    "Filter",
    "GpuUnavailableError",
    "MaskPreset",
    "VideoFrame",
    "VideoReader",
    "CUDA_BUILT",
    "mask_coefficients",
    "mask_info",
    "masks",
    "masks_text",
    "read",
    "run",
    "show_mask",
]

__version__ = "0.1.0"

#: The most channels an H x W x C NumPy array may have.
MAX_CHANNELS = 4


class MaskPreset(NamedTuple):
    """A preset mask as ``convstream masks`` lists it."""

    name: str
    keys: Tuple[str, ...]
    summary: str


def masks() -> List[MaskPreset]:
    """The preset masks: name, the keys it takes (besides ``divisor``, ``normalize``,
    ``bias`` and ``mode``) and what it does."""
    return [MaskPreset(name, tuple(keys), summary) for name, keys, summary in _presets()]


def masks_text() -> str:
    """The text ``convstream masks`` prints."""
    return _masks_text()


def show_mask(spec: str) -> str:
    """The text ``convstream masks show SPEC`` prints: the matrix (convolution orientation),
    the taps as written for ``mode=correlate``, and any warnings. A bad SPEC raises
    ``ValueError`` with the CLI's message."""
    return _show_mask(spec)


def mask_coefficients(spec: str) -> Tuple[np.ndarray, float]:
    """The mask's coefficients as a float32 matrix in convolution orientation (what
    ``scipy.ndimage.convolve`` takes), after ``divisor``/``normalize``, and its bias in 8-bit
    units (scaled by ``2**(bits-8)`` at deeper samples)."""
    rows, bias, _, _ = _mask_coefficients(spec)
    return np.array(rows, dtype=np.float32), float(bias)


def mask_info(spec: str) -> dict:
    """What a mask SPEC makes: ``{"spec", "description", "width", "height", "coefficients"
    (float32, convolution orientation), "bias" (8-bit units), "separable", "text"}``, where
    ``text`` is what ``convstream masks show SPEC`` prints."""
    rows, bias, separable, description = _mask_coefficients(spec)
    coefficients = np.array(rows, dtype=np.float32)
    return {
        "spec": spec,
        "description": description,
        "width": coefficients.shape[1],
        "height": coefficients.shape[0],
        "coefficients": coefficients,
        "bias": float(bias),
        "separable": bool(separable),
        "text": _show_mask(spec),
    }


def _plane_masks(plane_masks: Optional[Union[dict, Sequence[Tuple[str, str]]]]) -> List[Tuple[str, str]]:
    if plane_masks is None:
        return []
    if isinstance(plane_masks, dict):
        return [(str(k), str(v)) for k, v in plane_masks.items()]
    return [(str(k), str(v)) for k, v in plane_masks]


def _library(array: Any) -> str:
    """``torch``, ``cupy``, ``numpy`` or another module's name, by the array's type."""
    return type(array).__module__.split(".")[0]


def _dtype_name(array: Any) -> str:
    return str(getattr(array, "dtype", type(array).__name__))


def _whole_number(name: str, value: Any) -> int:
    """`value` as an int, refused (naming the argument) when it is a bool or not a whole number:
    ``int()`` would quietly take ``True`` as 1 and ``10.7`` as 10."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name}: takes whole numbers, not {value!r} ({type(value).__name__})")
    return value.__index__()


def _base_array(array: np.ndarray) -> np.ndarray:
    """``array`` as a plain ``numpy.ndarray`` over the same memory: the native side takes no
    subclass, whose ``__array_interface__`` could say anything."""
    return array if type(array) is np.ndarray else array.view(np.ndarray)


def _on_gpu(array: Any) -> bool:
    """Whether ``array`` lives in GPU memory: a CUDA tensor, a CuPy array, anything with
    ``__cuda_array_interface__`` or a DLPack capsule of CUDA memory."""
    library = _library(array)
    if library == "torch":
        return bool(array.is_cuda)
    if library == "cupy" or hasattr(array, "__cuda_array_interface__"):
        return True
    return not isinstance(array, np.ndarray) and _device.is_cuda_dlpack(array)


def _gpu_out(out: Any) -> Any:
    """``out`` for an input in GPU memory, whose result is written on its GPU: refused unless
    it is a GPU array too (the shape, dtype and GPU are checked with the call)."""
    if out is not None and not _on_gpu(out):
        raise ValueError(
            f"out: the input is in GPU memory, where its result is written; out is a {type(out).__name__} "
            "in host memory: pass an array on the input's GPU (torch.empty_like(x), cupy.empty_like(x))"
        )
    return out


def _host_array(array: Any) -> np.ndarray:
    """A host input as a NumPy array over its memory: a CPU tensor's, a DLPack array's, an
    ``__array_interface__`` or ``__array__`` object's."""
    if isinstance(array, np.ndarray):
        return array
    if _library(array) == "torch":
        return array.detach().numpy()
    if _device.is_cpu_dlpack(array):
        return np.from_dlpack(array)
    if hasattr(array, "__array_interface__") or hasattr(array, "__array__"):
        return np.asarray(array)
    raise TypeError(
        "convstream.Filter takes a NumPy array, a CuPy array, a torch.Tensor or a DLPack array, "
        f"not {type(array).__name__}"
    )


def _host_out(out: Any) -> Optional[np.ndarray]:
    """``out`` for an input in host memory, as a NumPy array over ``out``'s own memory (a CPU
    tensor's, a DLPack array's, an ``__array_interface__`` object's), so the result reaches
    it; refused, naming the argument, where it would land in a copy or on a GPU."""
    if out is None or isinstance(out, np.ndarray):
        return out
    if _on_gpu(out):
        raise ValueError(
            f"out: a {type(out).__name__} in GPU memory, but the input is in host memory: "
            "pass a NumPy array or a CPU tensor (or filter a GPU input)"
        )
    if _library(out) == "torch":
        view = out.detach().numpy()
    elif _device.is_cpu_dlpack(out):
        view = np.from_dlpack(out)
    elif hasattr(out, "__array_interface__"):
        view = np.asarray(out)
        if view.__array_interface__["data"][0] != out.__array_interface__["data"][0]:
            raise TypeError(f"out: NumPy reads this {type(out).__name__} as a copy, which the result would not leave")
    else:
        raise TypeError(
            "out: takes an array the result is written into (a NumPy array, a CPU tensor, or host memory "
            f"through DLPack or __array_interface__), not {type(out).__name__}"
        )
    if not view.flags.writeable:
        raise ValueError(f"out: the {type(out).__name__} is read-only")
    return view


def _count(name: str, value: Any, bits: int = 64) -> Optional[int]:
    """``value`` (``None`` passes) as a whole number from 0 to ``2**bits - 1``, refused by name
    otherwise: the native call would raise ``OverflowError`` without naming the argument."""
    if value is None:
        return None
    number = _whole_number(name, value)
    if number < 0:
        raise ValueError(f"{name}: {number} is negative; give 0 or more, or leave it out")
    if number >= 1 << bits:
        raise ValueError(f"{name}: {number} is too large; at most {(1 << bits) - 1}")
    return number


def _channel(ndim: int, c: int, channels_last: bool) -> Any:
    """The index of channel ``c`` of a host array: the last axis of an array laid out
    channels last (H x W x C, N x H x W x C), the third from last of planes (C x H x W,
    N x C x H x W), the whole of a 2-D plane."""
    if ndim == 2:
        return ...
    if channels_last:
        return (..., c)
    return (..., c, slice(None), slice(None))


#: The layouts ``layout=`` names, and whether each is channels last.
_LAYOUTS = {"HW": False, "HWC": True, "NHWC": True, "CHW": False, "NCHW": False}


def _channels_last(ndim: int, layout: Optional[str]) -> bool:
    """Whether a host array of ``ndim`` dimensions is laid out channels last: as ``layout``
    says (``"HWC"``, ``"NHWC"``; ``"CHW"``, ``"NCHW"``, ``"HW"`` are planes), else by its
    dimensions: a 3-D array is H x W x C (OpenCV's images), a 4-D one (N, C, H, W)."""
    if layout is None:
        if not 2 <= ndim <= 4:
            raise ValueError(
                "convstream.Filter takes a 2-D plane, an H x W x C image or an (N, C, H, W) batch "
                f"(or layout='NHWC' / 'CHW'); got {ndim} dimensions"
            )
        return ndim == 3
    if not isinstance(layout, str) or layout.upper() not in _LAYOUTS:
        raise ValueError(f"layout: {layout!r} is not one of {', '.join(_LAYOUTS)}")
    name = layout.upper()
    if len(name) != ndim:
        raise ValueError(f"layout: {name} is {len(name)}-D but the array has {ndim} dimensions")
    return _LAYOUTS[name]


def _real_coefficients(mask: Any) -> np.ndarray:
    """An array mask's coefficients as float64, refused (naming ``mask``) unless they are
    real numbers: NumPy alone would keep the real part of complex ones and read numeric
    strings as numbers, without a word."""
    not_a_mask = TypeError(
        f"mask: a SPEC string such as 'gaussian:size=5' or a 2-D array of coefficients, not {type(mask).__name__}"
    )
    try:
        values = np.asarray(mask)
    except (TypeError, ValueError):
        raise not_a_mask from None
    kind = values.dtype.kind
    if kind in "cSU":
        what = "complex numbers" if kind == "c" else "strings"
        raise TypeError(f"mask: the coefficients must be real numbers, not {what} ({values.dtype})")
    if kind not in "biufO" or kind == "O" and not all(isinstance(v, numbers.Real) for v in values.flat):
        raise not_a_mask
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        raise not_a_mask from None


#: OpenCV's border constants (``cv2.BORDER_*``) and the mode of the same edges here.
_CV2_BORDERS = {0: "constant", 1: "nearest", 2: "reflect", 3: "wrap", 4: "mirror"}
#: OpenCV's names for them (``"BORDER_REFLECT_101"``), ``BORDER_DEFAULT`` included.
_CV2_BORDER_NAMES = {
    "BORDER_CONSTANT": "constant",
    "BORDER_REPLICATE": "nearest",
    "BORDER_REFLECT": "reflect",
    "BORDER_WRAP": "wrap",
    "BORDER_REFLECT_101": "mirror",
    "BORDER_REFLECT101": "mirror",
    "BORDER_DEFAULT": "mirror",
}
#: ``cv2.BORDER_ISOLATED``: look at nothing outside the ROI, which a whole array (or a view,
#: read alone) never does: the same edges as the mode it is combined with.
_CV2_BORDER_ISOLATED = 16


def _border_name(border: Any) -> str:
    """The border mode ``border`` names: a mode's name or alias (``reflect``, ``reflect_101``),
    OpenCV's constant (``cv2.BORDER_REFLECT_101``, the int 4, with ``cv2.BORDER_ISOLATED`` or
    not) or its name (``"BORDER_REFLECT_101"``)."""
    if isinstance(border, bool):
        raise TypeError(f"border: takes a mode's name or a cv2.BORDER_* constant, not {border!r}")
    if isinstance(border, (int, np.integer)):
        value = int(border) & ~_CV2_BORDER_ISOLATED
        if value in _CV2_BORDERS:
            return _CV2_BORDERS[value]
        known = ", ".join(f"{v} ({n.lower()})" for n, v in (("BORDER_CONSTANT", 0), ("BORDER_REPLICATE", 1), ("BORDER_REFLECT", 2), ("BORDER_WRAP", 3), ("BORDER_REFLECT_101", 4)))
        why = "cv2.BORDER_TRANSPARENT leaves the edges unwritten, which no filter here does" if value == 5 else "not a cv2.BORDER_* constant"
        raise ValueError(f"border: {int(border)} is {why}; the constants taken are {known}")
    if not isinstance(border, str):
        raise TypeError(f"border: takes a mode's name or a cv2.BORDER_* constant, not {type(border).__name__}")
    named = border.upper().removeprefix("CV2.")
    return _CV2_BORDER_NAMES.get(named, border)


def _mask_spec(
    mask: Any,
    mode: Optional[str],
    divisor: Optional[float],
    bias: Optional[float],
    normalize: Optional[bool] = None,
) -> Tuple[str, Optional[tuple]]:
    """The SPEC of ``mask`` (a SPEC string, or a 2-D array of coefficients: NumPy, a torch
    tensor, nested lists) with ``mode``, ``divisor`` and ``bias`` as SPEC keys; and, for an
    array, the ``(rows, mode, divisor, bias)`` the native filter takes it as (a matrix of any
    size up to 63 x 63, however long its SPEC would be)."""
    keys = []
    if mode is not None:
        keys.append(f"mode={mode}")
    for name, value in (("divisor", divisor), ("bias", bias)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"{name}: takes a number, not {value!r} ({type(value).__name__})")
            keys.append(f"{name}={float(value)!r}")
    if normalize is not None and isinstance(mask, str):
        keys.append(f"normalize={'true' if normalize else 'false'}")
    if isinstance(mask, str):
        if not keys:
            return mask, None
        return mask + ("," if ":" in mask else ":") + ",".join(keys), None
    if _library(mask) == "torch":
        mask = mask.detach().cpu().numpy()
    matrix = _real_coefficients(mask)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"mask: an array mask is 2-D (rows x columns); got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("mask: the coefficients must be finite numbers (no inf or nan)")
    if normalize:
        total = float(matrix.sum())
        if total == 0:
            raise ValueError(
                "normalize: the coefficients sum to 0 (an edge or Laplacian mask), which cannot be "
                "normalised; give divisor instead, or leave normalize out"
            )
        divisor = total
        keys.append(f"divisor={total!r}")
    rows = ",".join("[" + ",".join(repr(float(v)) for v in row) + "]" for row in matrix)
    spec = f"custom:matrix=[{rows}]" + "".join("," + key for key in keys)
    as_floats = lambda value: None if value is None else float(value)
    return spec, (matrix.tolist(), mode, as_floats(divisor), as_floats(bias))


class Filter:
    """A 2D convolution filter: a mask, a border mode and an engine.

    ``Filter(mask, border="reflect", planes="all", device="auto", bit_depth=None, *,
    mode=None, divisor=None, bias=None, normalize=None, sync=False)``

    Call it on an array to get the filtered array back, of the same type, dtype, shape and
    device::

        f = convstream.Filter("gaussian:size=13,sigma=3", border="reflect", device="cuda")
        out = f(image)            # NumPy in, NumPy out
        out = f(batch)            # torch.Tensor on cuda:N in, torch.Tensor on cuda:N out,
                                  # queued on torch's current stream
        f(batch, out=result)      # into a tensor the caller allocated

    On the CPU engine, a 3 x 3 box spreads one bright pixel over its neighbours, a ninth
    each (this example runs as a test, ``python/tests/test_docstrings.py``):

    >>> import numpy as np
    >>> image = np.zeros((4, 8), np.uint8)
    >>> image[1, 3] = 90
    >>> out = Filter("box:size=3", device="cpu")(image)
    >>> out[0:3, 2:5].tolist()
    [[10, 10, 10], [10, 10, 10], [10, 10, 10]]
    >>> out.dtype, out.shape
    (dtype('uint8'), (4, 8))

    Arguments:

    - ``mask``: a mask SPEC as ``convstream run --mask`` takes it (``convstream.masks()``
      lists the presets), the name of a ``[masks.NAME]`` table of ``config``, or the
      coefficients themselves as a 2-D array (NumPy, a torch tensor, nested lists; odd sizes
      up to 63 x 63), taken as ``custom:matrix=`` takes them (convolution orientation unless
      ``mode="correlate"``).
    - ``mode``, ``divisor``, ``bias``: the SPEC keys of the same names (``convolve`` or
      ``correlate``; coefficients divided by ``divisor``; ``bias`` added to every result, in
      8-bit units, scaled to deeper integer samples, added as written to float values).
    - ``normalize``: ``True`` divides the coefficients by their sum, as OpenCV's
      ``normalize=True`` does (not with ``divisor``; a mask whose sum is 0 is refused).
    - ``border``: how samples beyond the edges are taken: ``reflect`` (default), ``mirror``,
      ``nearest``, ``constant`` (zeros), ``wrap``, ``ffmpeg`` (FFmpeg's ``convolution``
      filter's edges), or an alias (``reflect_101``,
      ``replicate``, ``edge``, ``symmetric``, ``zero``, ``periodic``...), or OpenCV's
      constant or its name (``cv2.BORDER_REFLECT_101`` or ``"BORDER_REFLECT_101"`` is
      ``mirror``, ``cv2.BORDER_DEFAULT`` too; ``BORDER_REPLICATE`` is ``nearest``,
      ``BORDER_REFLECT`` ``reflect``, ``BORDER_CONSTANT`` ``constant``, ``BORDER_WRAP``
      ``wrap``).
    - ``planes``: which channels of an H x W x C array (or C of an (N, C, H, W) host
      batch) are filtered: ``"all"`` (default) or a list of channel indices; the others are
      copied. Device arrays take ``"all"``.
    - ``device``: ``"auto"`` (CUDA when a usable GPU is present, else the CPU), ``"cpu"``,
      ``"cuda"`` or ``"cuda:N"``. Device arrays are filtered on their own GPU. A GPU asked
      for by name is looked for when the filter is made: none usable raises
      ``GpuUnavailableError`` there, ``cuda:N`` past the host's GPUs ``ValueError``.
    - ``bit_depth``: bits per sample of ``uint16`` arrays, 9 to 16 (default 16): 10- and
      12-bit samples are clamped to ``2**bit_depth - 1`` and a ``bias`` is scaled to it.
      ``uint8`` arrays are always 8-bit.
    - ``sync``: device arrays only: ``True`` waits for the filtering to finish before the
      call returns (a host synchronisation of the stream); ``False`` (default) returns as
      soon as the work is queued.
    - ``config``, ``streams``, ``frames_per_stream``: as ``convstream run`` (``config``: a TOML
      file whose ``[masks.NAME]`` tables ``mask`` may name). For a mask per plane of a video,
      see :func:`read`'s ``plane_masks``; an array's planes all take ``mask``.

    Samples and values:

    - ``uint8`` and ``uint16`` samples: results rounded half away from zero and clamped to
      the samples' range, byte-identical to ``convstream run`` and between the CPU and CUDA
      engines.
    - ``float32`` and ``float16`` values: the float result itself, neither rounded nor
      clamped (what a model takes and gives): f32 sums of f32 products (float16 values read
      as f32, the result rounded once to float16), the same arithmetic on the CPU and the
      GPU.

    Arrays on the host:

    - NumPy: native byte order, 2-D (one plane), H x W x C with C <= 4 (each channel
      filtered as a plane of its own, as OpenCV's ``filter2D`` does) or (N, C, H, W) (N*C
      planes); the call's ``layout=`` names others (``"NHWC"``, ``"CHW"``). Any strides:
      a view (a crop, steps, negative strides, a transposed image, BGRA seen as BGR) is read
      where it is, an interleaved image's channels side by side in one pass. Other dtypes
      raise ``TypeError``; other shapes and samples above ``2**bit_depth - 1`` raise
      ``ValueError``.
    - PyTorch CPU tensors are filtered as NumPy arrays and come back as tensors; anything
      else that speaks DLPack from host memory (``__dlpack__``) is read through
      ``numpy.from_dlpack`` and given back in its own library where it takes DLPack.
    - ``out=``: the result is written into it and it is returned: a NumPy array, a CPU
      tensor, or host memory through DLPack or ``__array_interface__``, of the input's shape
      and dtype, writable and apart from the input (a strided one, such as a window of a
      larger image, takes the result through a packed array). An ``out`` the result
      could not reach (one NumPy would copy, a list, GPU memory) raises ``TypeError`` or
      ``ValueError`` naming ``out``.

    Arrays on a GPU (PyTorch CUDA tensors, CuPy arrays, anything with
    ``__cuda_array_interface__`` or a DLPack capsule of CUDA memory, such as JAX's):

    - Shape (..., H, W): every leading index is a plane, and planes whose strides nest (a
      (N, C, H, W) batch, or a slice of one) are filtered in ONE kernel launch. Read at any
      positive strides (a crop, every other column, a transposed view); a flipped (negative
      stride) view raises ``ValueError``. Channels last: ``layout="NHWC"``
      (or ``"HWC"``) takes (N, H, W, C) images as CV-CUDA holds them, and a torch tensor in
      ``torch.channels_last`` memory is read as it is laid out; C <= 4 samples a pixel side by
      side, each channel filtered as a plane, one launch a batch.
    - Read in place and written into a new array of the input's own library
      (``torch.empty_like`` / ``cupy.empty_like``, stream-ordered), or into ``out=`` (same
      shape, dtype and GPU; packed rows at any row pitch, such as a window of a larger
      tensor; not overlapping the input).
    - Stream-ordered: the kernel is queued on the caller's current CUDA stream
      (``torch.cuda.current_stream()``, CuPy's current stream, the interface's ``stream``,
      or ``stream=`` given to the call) and the call returns without waiting, as torch's own
      ops do. Anything queued later on that stream sees the result; another stream must wait
      for it (an event, ``torch.cuda.Stream.wait_stream``), or use ``sync=True``. DLPack arrays
      of other libraries (JAX) are read through PyTorch or CuPy and waited for: their own
      library knows nothing of the stream and may reuse their memory once the call returns.
    - No per-call allocation: the kernel for each (dtype, plane size) is prepared on its
      first call (compiled by NVRTC, cached on disk, the mask uploaded once) and reused.
    - Pointers are checked: memory of another GPU, host memory, a buffer smaller than its
      planes or a stream of another context raise ``ValueError``; a failing CUDA call raises
      ``RuntimeError``, never a crash.

    The GIL is released while planes are filtered; calls on one filter from several threads
    take turns.
    """

    def __init__(
        self,
        mask: Any,
        border: Union[str, int] = "reflect",
        planes: Union[str, Sequence[int]] = "all",
        device: str = "auto",
        bit_depth: Optional[int] = None,
        *,
        mode: Optional[str] = None,
        divisor: Optional[float] = None,
        bias: Optional[float] = None,
        normalize: Optional[bool] = None,
        sync: bool = False,
        config: Optional[str] = None,
        streams: Optional[int] = None,
        frames_per_stream: Optional[int] = None,
    ) -> None:
        if normalize is not None and not isinstance(normalize, bool):
            raise TypeError(f"normalize: takes True or False, not {normalize!r}")
        if normalize and divisor is not None:
            raise ValueError("normalize and divisor: give one (normalize=True divides by the coefficients' sum)")
        spec, array_mask = _mask_spec(mask, mode, divisor, bias, normalize)
        if isinstance(planes, str):
            if planes != "all":
                raise ValueError(
                    f"planes: invalid value {planes!r} for an array filter; use 'all' or a list of channel indices"
                )
            self._channels: Optional[Tuple[int, ...]] = None
        else:
            self._channels = tuple(_whole_number("planes", c) for c in planes)
        bit_depth = None if bit_depth is None else _whole_number("bit_depth", bit_depth)
        if bit_depth is not None and not (8 <= bit_depth <= 16):
            raise ValueError(f"bit_depth: {bit_depth} is out of range; allowed 8..=16")
        if not isinstance(sync, bool):
            raise TypeError(f"sync: takes True or False, not {sync!r}")
        self._bit_depth = bit_depth
        self._sync = sync
        self._native = NativeFilter(
            spec,
            border=_border_name(border),
            device=str(device),
            streams=_count("streams", streams),
            frames_per_stream=_count("frames_per_stream", frames_per_stream),
            config=config,
            matrix=array_mask,
        )
        self._device_asked = self._native.device
        self._stream_filter: Optional[NativeStreamFilter] = None
        self._last_device: Optional[int] = None
        self.mask = mask if isinstance(mask, str) else spec
        self.planes = planes

    @property
    def border(self) -> str:
        """The border mode's name (aliases resolved: ``reflect_101`` reads ``mirror``)."""
        return self._native.border

    @property
    def device(self) -> str:
        """The device asked for: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
        return self._native.device

    @property
    def mask_size(self) -> Tuple[int, int]:
        """The mask's (width, height)."""
        return self._native.mask_size

    @property
    def sync(self) -> bool:
        """Whether calls on device arrays wait for their results."""
        return self._sync

    @property
    def engine(self) -> Optional[str]:
        """Where the last call ran (``cpu``, ``cuda:0 (NVIDIA H100 ...)``); ``None`` before."""
        if self._last_device is not None and self._stream_filter is not None:
            return self._stream_filter.engine_name(self._last_device)
        return self._native.engine_name()

    def pcie_bytes(self) -> Optional[Tuple[int, int, int]]:
        """Bytes the CUDA engine moved over PCIe so far: ``(to_gpu, from_gpu, planes)``;
        ``None`` when no CUDA engine ran. Device arrays move none."""
        return self._native.pcie_bytes()

    def __repr__(self) -> str:
        return (
            f"convstream.Filter({self._native.description!r}, border={self.border!r}, "
            f"planes={self.planes!r}, device={self.device!r})"
        )

    def _depth(self, itemsize: int, bit_depth: Optional[int]) -> int:
        depth = _whole_number("bit_depth", bit_depth) if bit_depth is not None else self._bit_depth
        if itemsize == 1:
            if depth not in (None, 8):
                raise ValueError(f"bit_depth={depth} needs a uint16 array; uint8 samples have 8 bits")
            return 8
        depth = 16 if depth is None else int(depth)
        if not 9 <= depth <= 16:
            raise ValueError(f"bit_depth: {depth} is out of range for uint16 samples; allowed 9..=16")
        return depth

    def __call__(
        self,
        array: Any,
        *,
        bit_depth: Optional[int] = None,
        out: Any = None,
        stream: Any = None,
        layout: Optional[str] = None,
    ) -> Any:
        """Filters ``array`` and returns the result: a new array of the same type, dtype,
        shape and device, or ``out`` filled. Device arrays: queued on the caller's current
        CUDA stream (or ``stream``: a handle, a ``torch.cuda.Stream`` or a
        ``cupy.cuda.Stream``) without waiting unless the filter was made with ``sync=True``.
        ``layout``: ``"HWC"``/``"NHWC"`` (channels last, each channel filtered as a plane),
        ``"CHW"``/``"NCHW"``/``"HW"`` (planes); by default a 3-D host array is H x W x C, a
        4-D one (N, C, H, W), and a device array (..., H, W) planes (a torch tensor in
        ``torch.channels_last`` memory is read as it is laid out)."""
        library = _library(array)
        if library == "torch" and array.is_cuda or library == "cupy":
            return self._device_call(array, bit_depth, _gpu_out(out), stream, layout=layout)
        # Other libraries' CUDA arrays (JAX...) go through DLPack where they speak it: its
        # stream protocol orders their pending writes before the filter reads.
        if not isinstance(array, np.ndarray) and _device.is_cuda_dlpack(array):
            imported = _device.from_dlpack(array)
            imported_out = None if _gpu_out(out) is None else _device.from_dlpack(out)
            # Waited for: the array's own library knows nothing of the stream the filter is
            # queued on, and may free or reuse the memory as soon as the call returns.
            result = self._device_call(imported, bit_depth, imported_out, stream, wait=True, layout=layout)
            return out if out is not None else _device.to_library_of(array, result)
        if hasattr(array, "__cuda_array_interface__"):
            return self._device_call(array, bit_depth, _gpu_out(out), stream, layout=layout)
        result = self._host_call(_host_array(array), bit_depth, _host_out(out), layout)
        if out is not None:
            return out
        if library == "torch":
            import torch

            return torch.from_numpy(result)
        if not isinstance(array, np.ndarray) and _device.is_cpu_dlpack(array):
            return _device.to_library_of(array, result)
        return result

    def _host_call(
        self, array: np.ndarray, bit_depth: Optional[int], out: Optional[np.ndarray], layout: Optional[str]
    ) -> np.ndarray:
        dtype = array.dtype
        if dtype.byteorder == (">" if np.little_endian else "<"):
            raise TypeError(
                f"convstream.Filter takes native-endian samples, not {dtype.str}; use .astype({dtype.name})"
            )
        # The dtype itself first: building its name costs more than the rest of a small call.
        if dtype not in _device.SAMPLE_KINDS and np.dtype(dtype.name) not in _device.SAMPLE_KINDS:
            raise TypeError(f"convstream.Filter takes {_device.DTYPE_ADVICE}; not {dtype} (shape {array.shape})")
        channels_last = _channels_last(array.ndim, layout)
        if array.ndim == 2:
            channels = 1
        elif channels_last:
            channels = array.shape[-1]
            if not 1 <= channels <= MAX_CHANNELS:
                raise ValueError(
                    f"an image laid out channels last (H x W x C) has 1 to {MAX_CHANNELS} channels; got shape "
                    f"{array.shape} (for a stack of planes, pass an (N, C, H, W) array or layout='CHW')"
                )
        else:
            channels = array.shape[-3]
        if out is None:
            target = np.empty(array.shape, dtype=dtype)
        elif not isinstance(out, np.ndarray) or out.shape != array.shape or out.dtype != dtype:
            raise ValueError(f"out: an array of shape {array.shape} and dtype {dtype}")
        elif not out.flags.writeable or np.shares_memory(out, array):
            raise ValueError("out: must be writable and apart from the input")
        else:
            # A strided out (a crop of a larger image) takes the result through a packed
            # array of its own; the input, however strided, is read where it is.
            target = out if out.flags.c_contiguous else np.empty(array.shape, dtype=dtype)
        floating = dtype.kind == "f"
        depth = None if floating else self._depth(array.itemsize, bit_depth)
        if depth not in (None, 8, 16) and array.size and int(array.max()) > (1 << depth) - 1:
            raise ValueError(
                f"samples up to {int(array.max())} do not fit bit_depth={depth} (at most {(1 << depth) - 1})"
            )
        selected = range(channels) if self._channels is None else self._channels
        for c in selected:
            if not 0 <= c < channels:
                raise ValueError(f"planes: channel {c} is not in an array of {channels} channel(s)")
        if array.size:
            index = lambda c: _channel(array.ndim, c, channels_last)
            for c in range(channels):
                if c not in selected:
                    target[index(c)] = array[index(c)]
            if dtype == np.float16:
                # float16 values are filtered as float32 and rounded once to float16 at the
                # end, as the GPU kernel does.
                wide = np.empty(array.shape, dtype=np.float32)
                self._filter_host(array.astype(np.float32), wide, selected, depth, channels_last)
                for c in selected:
                    target[index(c)] = wide[index(c)].astype(np.float16)
            else:
                self._filter_host(array, target, selected, depth, channels_last)
        if out is not None and target is not out:
            np.copyto(out, target)
            return out
        return target

    def _filter_host(
        self, array: np.ndarray, out: np.ndarray, selected: Any, depth: Optional[int], channels_last: bool
    ) -> None:
        """Filters the ``selected`` channels of a host array into ``out`` (C-contiguous):
        integer samples by the engine, float32 values by the CPU's band loops. The arrays go
        to the native side as they are (base ``numpy.ndarray`` views of them, the input at
        any strides), which reads their layout from NumPy and checks it."""
        wanted = ([0] if selected else []) if array.ndim == 2 else sorted(set(selected))
        self._native.filter_host(_base_array(array), _base_array(out), wanted, depth, channels_last)
        self._last_device = None

    def _device_call(
        self,
        array: Any,
        bit_depth: Optional[int],
        out: Any,
        stream: Any,
        wait: bool = False,
        layout: Optional[str] = None,
    ) -> Any:
        view = _device.describe(array)
        if self._channels is not None:
            raise ValueError("planes: device arrays are filtered whole; use planes='all'")
        planes, channels = _device.pixel_planes(view, layout, "input")
        _device.read_layout(planes, "input")
        device = self._device_asked
        if device == "cpu":
            raise ValueError(
                f"the array is on cuda:{view.ordinal} but this filter runs on the CPU (device=\"cpu\"); "
                "make it with device=\"cuda\" (or \"auto\"), or pass a host array (.get() / .cpu().numpy())"
            )
        if device.startswith("cuda:") and int(device[5:]) != view.ordinal:
            raise ValueError(
                f"the array is on cuda:{view.ordinal} but this filter runs on {device}; "
                f"move the array there or make the filter with device=\"cuda:{view.ordinal}\""
            )
        values, itemsize = _device.SAMPLE_KINDS[view.dtype]
        depth = self._depth(itemsize, bit_depth) if values == "uint" else 8
        handle = _device.caller_stream(view, stream)
        # An input laid out channels last in memory (not by layout=) gets a result laid out so.
        result = out if out is not None else _device.new_like(view, channels_last=channels > 1 and layout is None)
        target = _device.describe(result)
        _device.check_out(view, target)
        target_planes, target_channels = _device.pixel_planes(target, layout, "output")
        if target_channels != channels:
            raise ValueError(
                f"out: laid out {'channels last' if target_channels > 1 else 'as planes'} but the input "
                f"{'channels last' if channels > 1 else 'as planes'}; make it like the input "
                "(torch.empty_like(x), cupy.empty_like(x))"
            )
        if self._stream_filter is None:
            self._stream_filter = NativeStreamFilter(self._native)
        height, width = planes.shape[-2], planes.shape[-1] // channels
        if height and width:
            for src, dst, count, src_pitch, src_plane, dst_pitch, dst_plane, src_sample in _device.launches(
                planes, target_planes
            ):
                if count == 0:
                    continue
                placement = ((src, dst), (height, width), (src_pitch, src_plane), (dst_pitch, dst_plane))
                # A pixel's samples are side by side: the pixels are `channels` samples apart
                # when packed, a strided view's sample stride when it has one channel.
                pixel = src_sample * channels
                self._stream_filter.launch(view.ordinal, placement, count, values, depth, handle, channels, pixel)
            if self._sync or wait:
                # Once, after every launch of the call.
                self._stream_filter.synchronize(view.ordinal, handle)
            self._last_device = view.ordinal
        return result


class VideoFrame(NamedTuple):
    """One decoded and filtered frame.

    ``planes``: the planes in the decoder's layout (Y, U, V for YUV; one H x W x 3 array for
    packed RGB), ``uint8`` or ``uint16`` (LSB-aligned samples); NumPy arrays, or tensors with
    ``as_="torch"``/``"cupy"``. ``pts``: the presentation timestamp in ``time_base`` units
    (the input's own timestamps: ``ffprobe -show_frames``'s ``pts``), ``time``: it in
    seconds (``pts_time``); ``index``: the position in decode order, from 0.
    """

    planes: List[Any]
    pts: Optional[int]
    time: Optional[float]
    time_base: Fraction
    index: int
    format: str

    @property
    def luma(self) -> Any:
        """The first plane (Y, or the packed RGB picture)."""
        return self.planes[0]


class VideoReader:
    """The iterator :func:`read` returns: yields :class:`VideoFrame` objects; also a context
    manager (``with convstream.read(...) as frames:``) that stops decoding on exit."""

    def __init__(self, native: NativeReader, as_: str, tensor_device: Optional[str]) -> None:
        self._native = native
        self._as = as_
        self._tensor_device = tensor_device
        width, height, pixel_format, time_base, frame_rate, bits, engine = native.info
        self.width: int = width
        self.height: int = height
        self.format: str = pixel_format
        self.time_base = Fraction(*time_base)
        self.frame_rate = Fraction(*frame_rate) if frame_rate[1] else Fraction(0)
        self.bits: int = bits
        self.engine: str = engine

    def __iter__(self) -> "VideoReader":
        return self

    def __next__(self) -> VideoFrame:
        if self._as == "numpy":
            item = self._native.next_frame()
            if item is None:
                raise StopIteration
            pts, index, raw_planes = item
            planes = [self._host_array(*raw) for raw in raw_planes]
        else:
            item = self._native.next_frame_on_device(self._allocate)
            if item is None:
                raise StopIteration
            pts, index, arrays, raw_planes = item
            planes = arrays if arrays is not None else [self._convert(self._host_array(*raw)) for raw in raw_planes]
        time = None if pts is None else float(pts * self.time_base)
        return VideoFrame(planes, pts, time, self.time_base, index, self.format)

    @staticmethod
    def _host_array(data: bytearray, height: int, width: int, channels: int, itemsize: int) -> np.ndarray:
        dtype = np.uint8 if itemsize == 1 else np.dtype("<u2")
        array = np.frombuffer(data, dtype=dtype)
        return array.reshape((height, width, channels) if channels > 1 else (height, width))

    def _allocate(self, shapes: List[Tuple[int, int, int, int]], ordinal: int) -> List[Tuple[Any, int]]:
        """Arrays of the caller's library on GPU ``ordinal`` for a frame the engine filters on
        the GPU (NVDEC's pictures), with their device addresses."""
        arrays = []
        for height, width, channels, itemsize in shapes:
            shape = (height, width, channels) if channels > 1 else (height, width)
            if self._as == "torch":
                import torch

                dtype = torch.uint8 if itemsize == 1 else getattr(torch, "uint16", torch.int16)
                array = torch.empty(shape, dtype=dtype, device=f"cuda:{ordinal}")
                address = array.data_ptr()
            else:
                import cupy

                with cupy.cuda.Device(ordinal):
                    array = cupy.empty(shape, dtype=cupy.uint8 if itemsize == 1 else cupy.uint16)
                address = array.data.ptr
            arrays.append((array, address))
        return arrays

    def _convert(self, array: np.ndarray) -> Any:
        if self._as == "numpy":
            return array
        if self._as == "torch":
            import torch

            try:
                tensor = torch.from_numpy(array)
            except TypeError:
                # A torch without uint16 tensors: int32 holds every 16-bit sample.
                tensor = torch.from_numpy(array.astype(np.int32))
            return tensor.to(self._tensor_device or ("cuda" if torch.cuda.is_available() else "cpu"))
        import cupy

        device = self._tensor_device or "cuda"
        ordinal = int(device.split(":")[1]) if ":" in device else cupy.cuda.runtime.getDevice()
        with cupy.cuda.Device(ordinal):
            return cupy.asarray(array)

    def close(self) -> None:
        """Stops decoding and lets the input go."""
        self._native.close()

    def __enter__(self) -> "VideoReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def read(
    path: str,
    mask: str = "identity",
    *,
    border: Union[str, int, None] = None,
    planes: Optional[str] = None,
    plane_masks: Optional[Union[dict, Sequence[Tuple[str, str]]]] = None,
    device: str = "auto",
    as_: str = "numpy",
    tensor_device: Optional[str] = None,
    decoder: Optional[str] = None,
    start: Optional[float] = None,
    duration: Optional[float] = None,
    frames: Optional[int] = None,
    depth: Optional[int] = None,
    input_format: Optional[str] = None,
    config: Optional[str] = None,
    copyts: bool = True,
    vf: Optional[str] = None,
) -> VideoReader:
    """Decodes ``path`` (a file or URL FFmpeg opens) and yields its frames filtered with
    ``mask``, in order, as :class:`VideoFrame` objects::

        for frame in convstream.read("in.mp4", mask="gaussian:size=5", device="cuda"):
            y = frame.planes[0]          # numpy.ndarray, H x W
            print(frame.pts, frame.time)

    The arguments are ``convstream run``'s flags: ``border``, ``planes`` (``all``,
    ``luma``, ``chroma``), ``plane_masks`` (``{"y": "edge", "uv": "neutral"}``), ``device``,
    ``decoder`` (``auto``, ``software``, ``nvdec`` or an FFmpeg decoder), ``start``,
    ``duration``, ``frames``, ``depth``, ``input_format``, ``config``. Timestamps are the
    input's own (``copyts=True``, as ``ffprobe`` shows them); ``copyts=False`` starts them at
    0 as ``convstream run`` writes them.

    ``vf``: an FFmpeg filter chain run on the frames, as ``convstream run -vf`` and a
    config's ``filter.graph`` run it (``"scale=1280:-2,convolution=...,format=gray"``):
    FFmpeg's own filters before and after its convolution filters, which run on the engine
    in place of ``mask``; or ``null@mask`` in the chain where ``mask`` runs
    (``vf="scale=640:-2,null@mask,format=gray", mask="gaussian:size=13"``). Frames that
    FFmpeg's filters take after the engine come through host memory.

    ``as_``: ``"numpy"`` (default), ``"torch"`` or ``"cupy"``: planes as tensors. With
    NVDEC (``decoder="nvdec"``, or ``auto`` where NVDEC takes the stream) and the CUDA engine,
    pictures never leave the GPU: the engine filters them into tensors on its GPU, device to
    device (NV12/P010/P016 planes: Y, then interleaved UV as H/2 x W/2 x 2; P010 keeps its
    samples in the high bits). Otherwise frames come from the engine in host memory and are
    copied to ``tensor_device`` (default: ``cuda`` when available) once.
    """
    if as_ not in ("numpy", "torch", "cupy"):
        raise ValueError(f"as_: invalid value {as_!r} [possible values: numpy, torch, cupy]")
    native = NativeReader(
        str(path),
        mask,
        border=None if border is None else _border_name(border),
        planes=planes,
        plane_masks=_plane_masks(plane_masks),
        device=device,
        decoder=decoder,
        start=start,
        duration=duration,
        frames=_count("frames", frames),
        depth=_count("depth", depth, bits=8),
        input_format=input_format,
        config=config,
        copyts=copyts,
        vf=vf,
    )
    return VideoReader(native, as_, tensor_device)


def run(
    input: str,
    output: str,
    mask: str = "identity",
    *,
    border: Union[str, int, None] = None,
    planes: Optional[str] = None,
    plane_masks: Optional[Union[dict, Sequence[Tuple[str, str]]]] = None,
    device: Optional[str] = None,
    config: Optional[str] = None,
    codec: Optional[str] = None,
    lossless: bool = False,
    overwrite: bool = False,
    encoder_options: Optional[Union[dict, Sequence[Tuple[str, str]]]] = None,
    no_audio: bool = False,
    start: Optional[float] = None,
    duration: Optional[float] = None,
    frames: Optional[int] = None,
    depth: Optional[int] = None,
    decoder: Optional[str] = None,
    input_format: Optional[str] = None,
    output_format: Optional[str] = None,
    streams: Optional[int] = None,
    frames_per_stream: Optional[int] = None,
    copyts: bool = False,
) -> dict:
    """Filters ``input`` into ``output`` as ``convstream run -i INPUT -o OUTPUT --mask MASK``
    does, with its flags as keyword arguments (``overwrite`` is ``-y``; ``encoder_options``
    are ``--encoder-opt KEY=VALUE``), and returns the run's report (the fields of
    ``--report`` JSON: frames in and out, engine, seconds...). The output is written whole
    when this returns; the GIL is released meanwhile."""
    return _run(
        str(input),
        str(output),
        mask,
        border=None if border is None else _border_name(border),
        planes=planes,
        plane_masks=_plane_masks(plane_masks),
        device=device,
        config=config,
        codec=codec,
        lossless=lossless,
        overwrite=overwrite,
        encoder_options=_plane_masks(encoder_options),
        no_audio=no_audio,
        start=start,
        duration=duration,
        frames=_count("frames", frames),
        depth=_count("depth", depth, bits=8),
        decoder=decoder,
        input_format=input_format,
        output_format=output_format,
        streams=_count("streams", streams),
        frames_per_stream=_count("frames_per_stream", frames_per_stream),
        copyts=copyts,
    )
