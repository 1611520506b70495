"""The package's safety promises, each in a fresh interpreter: Ctrl-C ends a blocking call
(``read`` of a silent input, ``run``) with ``KeyboardInterrupt`` within seconds; a huge array
costs memory in proportion to its size and, where it cannot fit, raises ``MemoryError``
instead of aborting the interpreter; arguments of the wrong type or value are refused by name."""

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
    process = child(
        f"""
        import sys, convstream
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


def test_a_plane_that_cannot_fit_raises_memory_error():
    # 1 x (2**31 + 8) bytes under a 6 GB address-space limit: MemoryError, the interpreter alive.
    process = child(
        """
        import resource, numpy as np, convstream
        limit = 6 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        array = np.zeros((1, (1 << 31) + 8), np.uint8)
        try:
            convstream.Filter("box", device="cpu")(array)
        except MemoryError as error:
            print("MemoryError", error, flush=True)
        """
    )
    output, _ = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, f"exit {process.returncode}: {output}"
    assert "MemoryError" in output, output


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
