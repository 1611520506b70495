"""Runs the ``gpu`` tests of one test file where pytest is not installed (a GPU host whose
interpreter has torch and CuPy but no pytest, and no network to fetch it): a small stand-in
for the parts of pytest these files use (marks, parametrize, fixtures by name, ``raises``,
``skip``, ``importorskip``), then every test marked ``gpu``, each case reported PASS, SKIP
or FAIL, and a non-zero exit status if any failed.

    python3 python/tests/run_gpu_tests.py python/tests/test_device_calls.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
import re
import sys
import tempfile
import traceback
import types
from pathlib import Path


class Skipped(Exception):
    pass


class Mark:
    def __init__(self, name, args=(), kwargs=None):
        self.name, self.args, self.kwargs = name, args, kwargs or {}

    def __call__(self, *args, **kwargs):
        # A mark with its arguments (or a bare one) applied to a test function marks it;
        # otherwise the call gives the mark its arguments.
        configured = bool(self.args or self.kwargs)
        if len(args) == 1 and callable(args[0]) and not kwargs and (configured or inspect.isfunction(args[0])):
            function = args[0]
            function.marks = getattr(function, "marks", []) + [self]
            return function
        return Mark(self.name, args, kwargs)


class MarkFactory:
    def __getattr__(self, name):
        return Mark(name)


@contextlib.contextmanager
def raises(expected, match=None):
    try:
        yield
    except expected as error:
        if match is not None and not re.search(match, str(error)):
            raise AssertionError(f"{type(error).__name__}({error!r}) does not match {match!r}") from error
        return
    raise AssertionError(f"{expected.__name__} was not raised")


def importorskip(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise Skipped(f"{name} is not installed") from None


def skip(reason=""):
    raise Skipped(reason)


def fail(reason=""):
    raise AssertionError(reason)


FIXTURES = {}


def fixture(*args, **kwargs):
    if len(args) == 1 and callable(args[0]):
        FIXTURES[args[0].__name__] = args[0]
        return args[0]
    return fixture


def install_stand_in():
    stand_in = types.ModuleType("pytest")
    stand_in.mark = MarkFactory()
    stand_in.raises, stand_in.importorskip = raises, importorskip
    stand_in.skip, stand_in.fail, stand_in.fixture = skip, fail, fixture
    stand_in.param = lambda *values, **_: values[0] if len(values) == 1 else values
    sys.modules["pytest"] = stand_in


def cases(function):
    """Every parameter combination of a test's parametrize marks, as keyword arguments."""
    grids = []
    for mark in getattr(function, "marks", []):
        if mark.name == "parametrize":
            names = [n.strip() for n in mark.args[0].split(",")]
            grids.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in mark.args[1]])
    for combination in itertools.product(*grids):
        merged = {}
        for part in combination:
            merged.update(part)
        yield merged


def run(path: Path) -> int:
    sys.path.insert(0, str(path.parent))
    install_stand_in()
    import conftest  # noqa: F401 - registers its fixtures

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    module_marks = getattr(module, "pytestmark", [])
    module_marks = module_marks if isinstance(module_marks, list) else [module_marks]
    failed = passed = skipped = 0
    for name, function in vars(module).items():
        if not name.startswith("test_") or not callable(function):
            continue
        marks = getattr(function, "marks", []) + module_marks
        if not any(m.name == "gpu" for m in marks):
            continue
        for params in cases(function):
            label = f"{name}[{','.join(str(v) for v in params.values())}]" if params else name
            try:
                for mark in marks:
                    if mark.name == "skipif" and mark.args and mark.args[0]:
                        raise Skipped(mark.kwargs.get("reason", ""))
                arguments = dict(params)
                with tempfile.TemporaryDirectory() as tmp:
                    for parameter in inspect.signature(function).parameters:
                        if parameter in arguments:
                            continue
                        if parameter == "tmp_path":
                            arguments[parameter] = Path(tmp)
                        else:
                            arguments[parameter] = FIXTURES[parameter]()
                    function(**arguments)
                passed += 1
                print(f"PASS {label}")
            except Skipped as why:
                skipped += 1
                print(f"SKIP {label}: {why}")
            except Exception:  # noqa: BLE001 - every failure is reported, and the run goes on
                failed += 1
                print(f"FAIL {label}\n{traceback.format_exc()}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]).resolve()))
