"""The examples in the package's docstrings (``>>>``) run as written: the entry points'
documentation cannot drift from what they do."""

from __future__ import annotations

import doctest

import convstream


def test_the_docstring_examples_run_as_written():
    results = doctest.testmod(convstream, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted > 0, "no docstring example found"
    assert results.failed == 0, f"{results.failed} of {results.attempted} docstring examples failed"
