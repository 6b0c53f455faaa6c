"""Every ``>>>`` example in the library's docstrings runs and prints what it shows (a README-like promise)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import ordergrad_rl

ROOT = Path(ordergrad_rl.__file__).parent
MODULES = sorted(
    ".".join(("ordergrad_rl", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
    for path in ROOT.rglob("*.py")
    if ">>>" in path.read_text(encoding="utf-8")
)


def test_the_library_has_examples():
    assert "ordergrad_rl.core.batch" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples in {name} failed"
