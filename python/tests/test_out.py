"""``out=`` is honoured for every kind of input ``Filter`` takes, or refused by name: the
result lands in the caller's array and that array is what the call returns; an ``out`` the
result could not reach (a copy, a list, read-only or GPU memory for a host input, host
memory for a GPU input) raises ``TypeError`` or ``ValueError`` naming ``out``."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest

import convstream


class DLPackOnly:
    """Host memory that speaks DLPack and nothing else (as a library NumPy does not know)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


class InterfaceOnly:
    """Host memory described by ``__array_interface__`` alone."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array
        self.__array_interface__ = array.__array_interface__


class CopyOnly:
    """An object NumPy can only copy (``__array__``): a result written there would be lost."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._array.copy()


class FakeGpuArray:
    """An array that says it lives in GPU memory; no call may reach its address."""

    def __init__(self, shape: tuple) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "|u1", "data": (0, False), "version": 3}


def torch_tensor(array: np.ndarray) -> Any:
    torch = pytest.importorskip("torch")
    return torch.from_numpy(array)


WRAPPERS: Dict[str, Callable[[np.ndarray], Any]] = {
    "numpy": lambda array: array,
    "dlpack": DLPackOnly,
    "array_interface": InterfaceOnly,
    "torch": torch_tensor,
}


@pytest.mark.parametrize("out_kind", list(WRAPPERS))
@pytest.mark.parametrize("input_kind", list(WRAPPERS))
def test_out_is_filled_and_returned_for_every_kind_of_host_input(rng, input_kind, out_kind):
    image = rng.integers(0, 256, size=(19, 23), dtype=np.uint8)
    box = convstream.Filter("box:size=5", device="cpu")
    expected = box(image)
    target = np.zeros_like(image)
    out = WRAPPERS[out_kind](target)
    result = box(WRAPPERS[input_kind](image.copy()), out=out)
    assert result is out
    np.testing.assert_array_equal(target, expected)


def test_out_takes_every_dtype_and_layout_the_input_does(rng):
    box = convstream.Filter("gaussian:size=3", device="cpu")
    for image in (
        rng.integers(0, 1024, size=(9, 11), dtype=np.uint16),
        rng.random((2, 3, 8, 9)).astype(np.float32),
        rng.random((8, 9, 3)).astype(np.float16),
    ):
        target = np.zeros_like(image)
        box(DLPackOnly(image), out=DLPackOnly(target))
        np.testing.assert_array_equal(target, box(image))


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@pytest.mark.parametrize(
    "make_out, error",
    [
        (lambda shape: [[0] * shape[1]] * shape[0], TypeError),
        (lambda shape: CopyOnly(np.zeros(shape, np.uint8)), TypeError),
        (lambda shape: read_only(np.zeros(shape, np.uint8)), ValueError),
        (lambda shape: DLPackOnly(read_only(np.zeros(shape, np.uint8))), ValueError),
        (lambda shape: InterfaceOnly(read_only(np.zeros(shape, np.uint8))), ValueError),
        (lambda shape: np.zeros((shape[0], shape[1] + 1), np.uint8), ValueError),
        (lambda shape: DLPackOnly(np.zeros(shape, np.uint16)), ValueError),
        (lambda shape: FakeGpuArray(shape), ValueError),
    ],
    ids=["list", "copy-only", "read-only", "read-only-dlpack", "read-only-interface", "shape", "dtype", "gpu"],
)
@pytest.mark.parametrize("input_kind", ["numpy", "dlpack", "array_interface"])
def test_an_out_the_result_cannot_reach_is_refused_by_name(rng, input_kind, make_out, error):
    image = rng.integers(0, 256, size=(6, 7), dtype=np.uint8)
    with pytest.raises(error, match="out"):
        convstream.Filter("box", device="cpu")(WRAPPERS[input_kind](image), out=make_out(image.shape))


def test_a_gpu_input_refuses_a_host_out_before_any_gpu_work():
    with pytest.raises(ValueError, match="out"):
        # "auto": a filter made for "cuda" is refused at once on a host without a GPU.
        convstream.Filter("box", device="auto")(FakeGpuArray((4, 4)), out=np.zeros((4, 4), np.uint8))
