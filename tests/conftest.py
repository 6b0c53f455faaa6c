"""Shared fixtures and helpers."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs one worker per core), one torch thread per worker.

    Torch's default of one thread per core would have the workers' threads busy-wait on each other; the tests'
    networks are small, so one thread loses nothing. Subprocesses (the CLI and Ray tests) inherit the variable.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
        import torch as th

        os.environ["OMP_NUM_THREADS"] = "1"
        th.set_num_threads(1)


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


def save_from_before(path: Path, old_path: Path, *keys: str) -> Path:
    """A copy of the SB3 save ``path`` at ``old_path`` whose data lacks ``keys``: a save made before those arguments
    existed."""
    import json
    import zipfile

    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old_path, "w") as old:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                for key in keys:
                    del data[key]
                content = json.dumps(data).encode()
            old.writestr(item, content)
    return old_path
