"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_torch_thread():
    """Tiny networks: one thread is faster, and immune to OpenMP spinning when other processes load the cores."""
    import torch as th

    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)
