"""Type stubs of the native module (``convstream._convstream``). The public API is
``convstream`` itself (python/convstream/__init__.py); these are its building blocks."""

from typing import Any, Callable, List, Optional, Sequence, Tuple

CUDA_BUILT: bool

class GpuUnavailableError(RuntimeError):
    """No usable GPU, or CUDA support not built in (the CLI's message)."""

def presets() -> List[Tuple[str, List[str], str]]: ...
def masks_text() -> str: ...
def show_mask(spec: str) -> str: ...
def mask_coefficients(spec: str) -> Tuple[List[List[float]], float, bool, str]: ...
def wait_for_gpu_starts() -> bool: ...

class NativeFilter:
    def __init__(
        self,
        mask: str,
        border: Optional[str] = None,
        plane_masks: Sequence[Tuple[str, str]] = ...,
        device: Optional[str] = None,
        streams: Optional[int] = None,
        frames_per_stream: Optional[int] = None,
        config: Optional[str] = None,
    ) -> None: ...
    @property
    def description(self) -> str: ...
    @property
    def border(self) -> str: ...
    @property
    def mask_size(self) -> Tuple[int, int]: ...
    @property
    def device(self) -> str: ...
    def engine_name(self) -> Optional[str]: ...
    def pcie_bytes(self) -> Optional[Tuple[int, int, int]]: ...
    def filter_host(
        self,
        source: Any,
        out: Any,
        channels: Sequence[int],
        bit_depth: Optional[int] = None,
        channels_last: bool = False,
    ) -> None: ...

class NativeStreamFilter:
    def __init__(self, filter: NativeFilter) -> None: ...
    def launch(
        self,
        ordinal: int,
        placement: Tuple[Tuple[int, int], Tuple[int, int], Tuple[int, int], Tuple[int, int]],
        planes: int,
        values: str,
        bit_depth: int,
        stream: int,
        channels: int = 1,
        pixel: int = 0,
    ) -> None: ...
    def synchronize(self, ordinal: int, stream: int) -> None: ...
    def engine_name(self, ordinal: int) -> Optional[str]: ...

class NativeReader:
    def __init__(
        self,
        input: str,
        mask: str,
        border: Optional[str] = None,
        planes: Optional[str] = None,
        plane_masks: Sequence[Tuple[str, str]] = ...,
        device: Optional[str] = None,
        decoder: Optional[str] = None,
        start: Optional[float] = None,
        duration: Optional[float] = None,
        frames: Optional[int] = None,
        depth: Optional[int] = None,
        input_format: Optional[str] = None,
        config: Optional[str] = None,
        copyts: bool = True,
        vf: Optional[str] = None,
    ) -> None: ...
    @property
    def info(self) -> Tuple[int, int, str, Tuple[int, int], Tuple[int, int], int, str]: ...
    def next_frame(
        self,
    ) -> Optional[Tuple[Optional[int], int, List[Tuple[bytearray, int, int, int, int]]]]: ...
    def next_frame_on_device(
        self, allocate: Callable[[List[Tuple[int, int, int, int]], int], List[Tuple[Any, int]]]
    ) -> Optional[
        Tuple[Optional[int], int, Optional[List[Any]], Optional[List[Tuple[bytearray, int, int, int, int]]]]
    ]: ...
    def close(self) -> None: ...

def run(
    input: str,
    output: str,
    mask: str,
    border: Optional[str] = None,
    planes: Optional[str] = None,
    plane_masks: Sequence[Tuple[str, str]] = ...,
    device: Optional[str] = None,
    config: Optional[str] = None,
    codec: Optional[str] = None,
    lossless: bool = False,
    overwrite: bool = False,
    encoder_options: Sequence[Tuple[str, str]] = ...,
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
) -> dict: ...
