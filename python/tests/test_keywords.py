"""One list of keyword arguments, checked everywhere it is written: ``convstream.read`` and
``convstream.run`` (``__init__.py``), the native functions they call (their PyO3 signatures),
the stub ``_convstream.pyi``, and ``convstream run``'s own flags. A keyword added in one place
and forgotten in another fails here."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
from pathlib import Path
from typing import Dict, List

import convstream
from convstream import _convstream

STUB = Path(convstream.__file__).with_name("_convstream.pyi")

# How frames are handed to Python: no flag of `convstream run` says it.
PYTHON_ONLY = {"as_", "tensor_device"}

# Keywords whose flag is not the keyword with dashes.
FLAG_OF: Dict[str, str] = {
    "path": "--input",
    # FFmpeg's spelling, which `run` takes as it is (its help names it beside --ffmpeg-before).
    "vf": "-vf",
    "start": "--ss",
    "plane_masks": "--plane-mask",
    "encoder_options": "--encoder-opt",
    "output_format": "--format",
}


def flag_of(keyword: str) -> str:
    return FLAG_OF.get(keyword, "--" + keyword.replace("_", "-"))


def stub_parameters(function: str, owner: str = "") -> List[str]:
    """The parameters of ``function`` (a method of class ``owner`` if given) in the stub."""
    tree = ast.parse(STUB.read_text())
    body = tree.body
    if owner:
        body = next(node.body for node in tree.body if isinstance(node, ast.ClassDef) and node.name == owner)
    found = next(node for node in body if isinstance(node, ast.FunctionDef) and node.name == function)
    names = [arg.arg for arg in found.args.args + found.args.kwonlyargs]
    return [name for name in names if name != "self"]


def native_parameters(callable_) -> List[str]:
    """The parameters of a native function or class, from the signature PyO3 gives it."""
    return list(inspect.signature(callable_).parameters)


def public_parameters(function) -> List[str]:
    return list(inspect.signature(function).parameters)


def test_run_takes_the_same_keywords_in_python_the_stub_and_the_native_module():
    public = public_parameters(convstream.run)
    assert public == native_parameters(_convstream.run)
    assert public == stub_parameters("run")


def test_read_takes_the_same_keywords_in_python_the_stub_and_the_native_reader():
    # `read(path, ...)` hands `path` to the reader as its `input`; the rest are the reader's.
    public = ["input" if name == "path" else name for name in public_parameters(convstream.read)]
    public = [name for name in public if name not in PYTHON_ONLY]
    assert public == native_parameters(_convstream.NativeReader)
    assert public == stub_parameters("__init__", owner="NativeReader")


def test_every_keyword_is_a_flag_of_convstream_run(convstream_bin):
    help_text = subprocess.run(
        [str(convstream_bin), "run", "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    flags = set(re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", help_text))
    assert "--input" in flags and "--overwrite" in flags, help_text
    keywords = set(public_parameters(convstream.run)) | set(public_parameters(convstream.read))
    missing = sorted(f"{keyword} ({flag_of(keyword)})" for keyword in keywords - PYTHON_ONLY if flag_of(keyword) not in flags)
    assert not missing, f"keywords with no flag of `convstream run`: {missing}"
