"""The package's safety promises, each in a fresh interpreter: Ctrl-C ends a blocking call
(``read`` of a silent input, ``run``) with ``KeyboardInterrupt`` within seconds; a huge array
costs memory in proportion to its size and, where it cannot fit, raises ``MemoryError``
instead of aborting the interpreter; the native host call takes arrays, not addresses;
arguments of the wrong type or value are refused by name."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import convstream

from conftest import write_y4m

# Seconds a child gets to report; a hang fails the test instead of blocking the run.
DEADLINE = 30


def child(script: str) -> subprocess.Popen:
    """A fresh interpreter running `script`, importing this convstream, its output piped."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def interrupted_within(call: str, seconds: float = 5.0) -> str:
    """Runs `call` in a child, sends it SIGINT once it is inside the call, and returns what it
    printed; fails unless `KeyboardInterrupt` came out of the call within `seconds`."""
    # Ctrl-C as a terminal's Python has it: a child of a shell's background job inherits
    # SIGINT ignored, and Python then keeps it ignored.
    process = child(
        f"""
        import signal, sys, convstream
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print("calling", flush=True)
        try:
            {call}
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(0)
        except Exception as error:
            print("raised", type(error).__name__, error, flush=True)
            sys.exit(3)
        print("returned", flush=True)
        """
    )
    try:
        assert process.stdout.readline().strip() == "calling"
        # The call has started by now: a signal sent earlier would be raised before it.
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        output, _ = process.communicate(timeout=DEADLINE)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "KeyboardInterrupt" in output, output
    assert took < seconds, f"KeyboardInterrupt came {took:.1f} s after SIGINT"
    assert process.returncode == 0, output
    return output


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ctrl_c_ends_read_of_a_fifo_without_writer(tmp_path: Path):
    fifo = tmp_path / "in.y4m"
    os.mkfifo(fifo)
    interrupted_within(f"next(iter(convstream.read({str(fifo)!r}, mask='box')))")


def test_ctrl_c_ends_read_of_a_silent_udp_input():
    port = free_port(socket.SOCK_DGRAM)
    interrupted_within(f"next(iter(convstream.read('udp://127.0.0.1:{port}', mask='box', input_format='mpegts')))")


def test_ctrl_c_ends_run_of_a_fifo_without_writer(tmp_path: Path):
    fifo = tmp_path / "in.y4m"
    os.mkfifo(fifo)
    out = tmp_path / "out.y4m"
    interrupted_within(f"convstream.run({str(fifo)!r}, {str(out)!r}, mask='box')")


def test_ctrl_c_ends_a_long_run_and_finishes_its_output(tmp_path: Path):
    # A run with frames flowing for as long as it reads (a writer that never ends), so it is
    # busy filtering when Ctrl-C comes, however fast the host.
    source = tmp_path / "endless.y4m"
    os.mkfifo(source)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import os, time
                frame = b"FRAME\\n" + os.urandom(64 * 64)
                with open({str(source)!r}, "wb") as out:
                    out.write(b"YUV4MPEG2 W64 H64 F25:1 Ip A1:1 Cmono\\n")
                    while True:
                        out.write(frame * 25)
                        out.flush()
                        time.sleep(0.01)
                """
            ),
        ],
        stderr=subprocess.DEVNULL,
    )
    out = tmp_path / "out.y4m"
    try:
        # The pipeline winds down as `convstream run` does on SIGINT, its I/O given a 5 s grace.
        interrupted_within(f"convstream.run({str(source)!r}, {str(out)!r}, mask='edge:size=63', device='cpu')", 9.0)
    finally:
        writer.kill()
        writer.wait()
    # The output was finished as Ctrl-C finishes it for the command line: a readable file.
    assert out.read_bytes().startswith(b"YUV4MPEG2 ")


def test_ctrl_c_ends_read_of_a_refused_http_input():
    # The source retries a refused connection: Ctrl-C ends the retries.
    port = free_port(socket.SOCK_STREAM)
    interrupted_within(f"next(iter(convstream.read('http://127.0.0.1:{port}/video.ts', mask='box')))")


# What a huge array may take under RLIMIT_AS: the 128 MB arrays below, their results, the
# interpreter, NumPy and the module's libraries fit many times over; before column tiles a
# 1 x 2**27 plane needed 7.9 GB and aborted the interpreter under this limit.
ADDRESS_SPACE = 6 << 30


def run_child(script: str) -> str:
    """Runs `script` in a child (see `child`) and returns what it printed; fails unless it
    exited normally, within the deadline."""
    process = child(script)
    try:
        output, _ = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, f"exit {process.returncode}: {output}"
    return output


@pytest.mark.parametrize(
    "shape, dtype",
    [((1, 1 << 27), "uint8"), ((1 << 27, 1), "uint8"), ((1, 1 << 26), "uint16"), ((1, 1 << 25), "float32")],
    ids=["wide-uint8", "tall-uint8", "wide-uint16", "wide-float32"],
)
def test_a_huge_array_takes_memory_in_proportion_to_it(shape, dtype):
    # A 128 MB array under a 6 GB address-space limit: filtered, and the process's peak
    # resident memory (the interpreter and its libraries included) under three times the
    # array; the samples across the engine's column tiles are those of a small array.
    output = run_child(
        f"""
        import resource, numpy as np, convstream
        resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))
        shape, dtype = {shape!r}, np.{dtype}
        array = np.arange(shape[0] * shape[1], dtype=dtype).reshape(shape)
        box = convstream.Filter("box:size=3", device="cpu")
        out = box(array)
        # VmHWM, this image's own peak: ru_maxrss starts from the parent's resident size at
        # the fork (a pytest that imported torch holds some 500 MB).
        status = open("/proc/self/status").read().split("VmHWM:")[1].split()
        peak = int(status[0]) * 1024
        print("peak", peak, "array", array.nbytes, flush=True)
        rows = out if shape[0] == 1 else out.T
        source = array if shape[0] == 1 else array.T
        for start in (0, (1 << 16) - 500, (1 << 20) - 500):
            window = np.ascontiguousarray(source[:, start:start + 1000])
            alone = box(window if shape[0] == 1 else np.ascontiguousarray(window.T))
            alone = alone if shape[0] == 1 else alone.T
            same = np.array_equal(alone[:, 1:-1], rows[:, start + 1:start + 999])
            print("window", start, "same" if same else "differs", flush=True)
        """
    )
    words = output.split()
    peak, size = int(words[words.index("peak") + 1]), int(words[words.index("array") + 1])
    assert peak < 3 * size, f"peak resident memory {peak >> 20} MB for a {size >> 20} MB array"
    assert output.count("same") == 3 and "differs" not in output, output


def test_a_channel_of_a_huge_image_is_filtered_where_it_is():
    # One channel of a 1 GiB H x W x C array under a limit of 256 MiB beyond what the process
    # holds: read in place and written straight into the output, no copy of the channel (one
    # would need 512 MiB and raise MemoryError).
    output = run_child(
        """
        import resource, numpy as np, convstream
        array = np.zeros((1, 1 << 29, 2), np.uint8)
        array[0, 1000:1003, 0] = 90
        out = np.zeros_like(array)
        box = convstream.Filter("box", planes=[0], device="cpu")
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
        limit = size + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            box(array, out=out)
            print("filtered", out[0, 999:1004, 0].tolist(), flush=True)
        except MemoryError as error:
            print("MemoryError", error, flush=True)
        """
    )
    assert "filtered [30, 60, 90, 60, 30]" in output, output


def test_the_native_host_call_takes_arrays_not_addresses():
    # The private native call once took raw addresses and trusted them: the first call below
    # crashed the interpreter. Now it takes the arrays and refuses anything else by name.
    output = run_child(
        """
        import numpy as np, convstream
        native = convstream.Filter("box", device="cpu")._native
        plane = np.zeros((4, 8), np.uint8)
        class Sub(np.ndarray):
            pass
        read_only = np.zeros((4, 8), np.uint8)
        read_only.flags.writeable = False
        calls = [
            lambda: native.filter_host([(8, 8)], 1, 1, 1, 8, 1, 1),
            lambda: native.filter_host(8, 8, [0]),
            lambda: native.filter_host(plane, plane.view(Sub), [0]),
            lambda: native.filter_host(plane, read_only, [0]),
            lambda: native.filter_host(plane, plane, [0]),
            lambda: native.filter_host(plane, np.zeros((4, 9), np.uint8), [0]),
            lambda: native.filter_host(plane, np.zeros((4, 8), np.uint16), [0]),
            lambda: native.filter_host(plane, np.zeros((4, 16), np.uint8)[:, ::2], [0]),
            lambda: native.filter_host(plane, plane.copy(), [1]),
            lambda: native.filter_host(np.zeros((4, 8), np.int8), np.zeros((4, 8), np.int8), [0]),
        ]
        for call in calls:
            try:
                call()
                print("accepted", flush=True)
            except (TypeError, ValueError) as error:
                print("refused", type(error).__name__, error, flush=True)
        """
    )
    assert output.count("refused") == 10 and "accepted" not in output, output


@pytest.mark.parametrize(
    "arguments, name",
    [({"planes": [0.9]}, "planes"), ({"planes": [True]}, "planes"), ({"bit_depth": 10.7}, "bit_depth")],
)
def test_arguments_that_are_not_whole_numbers_are_refused_by_name(arguments, name):
    with pytest.raises(TypeError, match=name):
        convstream.Filter("box", device="cpu", **arguments)


def test_a_call_bit_depth_that_is_not_a_whole_number_is_refused():
    with pytest.raises(TypeError, match="bit_depth"):
        convstream.Filter("box", device="cpu")(np.zeros((4, 4), np.uint16), bit_depth=10.7)


def test_a_single_row_with_a_negative_stride_is_filtered():
    row = np.arange(64, dtype=np.uint8).reshape(1, 64)
    flipped = row[::-1]
    assert flipped.flags.c_contiguous and flipped.strides[0] < 0
    box = convstream.Filter("box", device="cpu")
    np.testing.assert_array_equal(box(flipped), box(row.copy()))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: convstream.read("in.y4m", frames=-1), "frames"),
        (lambda: convstream.read("in.y4m", depth=-8), "depth"),
        (lambda: convstream.read("in.y4m", frames=1 << 64), "frames"),
        (lambda: convstream.run("in.y4m", "out.y4m", frames=-1), "frames"),
        (lambda: convstream.run("in.y4m", "out.y4m", streams=-2), "streams"),
        (lambda: convstream.Filter("box", device="cpu", frames_per_stream=-1), "frames_per_stream"),
    ],
    ids=["read-frames", "read-depth", "read-frames-too-many", "run-frames", "run-streams", "filter-frames-per-stream"],
)
def test_counts_out_of_range_are_value_errors_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_an_input_with_an_unknown_protocol_names_it():
    # FFmpeg takes `lavfi:` as a protocol's name (lavfi is a demuxer): the message says which.
    with pytest.raises(ValueError, match="no `lavfi` protocol"):
        convstream.read("lavfi:testsrc")


@pytest.mark.parametrize(
    "mask",
    [
        np.array([[0, 1j, 0], [1, 4, 1], [0, 1, 0]]),
        np.array([["1", "2", "1"], ["2", "4", "2"], ["1", "2", "1"]]),
        [["1", "2", "1"], ["2", "4", "2"], ["1", "2", "1"]],
        [[1, 2, 1], [2, 4 + 0j, 2], [1, 2, 1]],
    ],
    ids=["complex-array", "string-array", "string-lists", "complex-lists"],
)
def test_array_masks_of_complex_numbers_or_strings_are_refused(mask):
    with pytest.raises(TypeError, match="mask: the coefficients must be real numbers"):
        convstream.Filter(mask, device="cpu")
