"""Shared fixtures and helpers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def one_torch_thread():
    """Tiny networks: one thread is faster, and immune to OpenMP spinning when other processes load the cores."""
    import torch as th

    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)
