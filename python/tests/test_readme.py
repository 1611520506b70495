"""The Python examples of the README and of the guide (docs/python.md), run as written: the
guide's install commands are the ones scripts/python-check.sh runs (the wheel these tests import
was installed by them), and every ```python block runs in a folder holding the `in.mp4` it names;
so does every ```python block of python/README.md. Blocks that use torch run with -m gpu on a GPU
host with PyTorch."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import REPO, gpu_usable, has_module


def python_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Python\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def guide() -> str:
    return (REPO / "docs" / "python.md").read_text()


def blocks(language: str, text: str):
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_the_install_commands_are_what_ci_runs():
    (install,) = blocks("bash", guide())
    assert install.splitlines() == [
        "scripts/build-wheel.sh",
        "python3 -m pip install dist/wheels/convstream-*.whl",
    ]
    check = (REPO / "scripts" / "python-check.sh").read_text()
    assert "scripts/build-wheel.sh\n" in check
    assert 'wheel="$(ls -t dist/wheels/convstream-*.whl' in check and "pip install" in check


README_CODE = blocks("python", python_section())
CODE = README_CODE + blocks("python", guide())


def needs(code: str):
    marks = []
    if "import torch" in code:
        marks.append(pytest.mark.gpu)
        marks.append(pytest.mark.skipif(not has_module("torch"), reason="torch is not installed"))
    return marks


PACKAGE_CODE = re.findall(r"```python\n(.*?)```", (REPO / "python" / "README.md").read_text(), flags=re.S)


@pytest.mark.parametrize(
    "code", [pytest.param(code, marks=needs(code), id=f"package{i + 1}") for i, code in enumerate(PACKAGE_CODE)]
)
def test_package_readme_examples_run(code):
    assert len(PACKAGE_CODE) == 1, "a torch batch on the caller's stream"
    if not gpu_usable():
        pytest.skip("no usable GPU")
    exec(compile(code, "python/README.md", "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize(
    "code", [pytest.param(code, marks=needs(code), id=f"example{i + 1}") for i, code in enumerate(CODE)]
)
def test_python_examples_run(code, tmp_path, ffmpeg_tools):
    assert len(README_CODE) == 1 and len(CODE) == 4, "the README's NumPy image; the guide's NumPy image, torch batch, video"
    if "cuda" in code and "torch" in code and not gpu_usable():
        pytest.skip("no usable GPU")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "10",
         "-pix_fmt", "yuv420p", "-c:v", "mpeg4", str(tmp_path / "in.mp4")],
        check=True,
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "README.md or docs/python.md", "exec"), {"__name__": "__readme__"})
    finally:
        os.chdir(cwd)
