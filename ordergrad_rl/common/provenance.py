"""Where a run was computed: what its floating-point results depend on besides its code and its seed.

Training is chaotic in the last bits of its arithmetic: the same code and seed on a machine whose math library takes
another code path diverges within a few updates and ends elsewhere. The usage line's Acrobot-v1 seed 0 at 100k steps
ends at a greedy / sampled worst 20% of -100.6 / -124.8 on the project's machine since 2026-12-05 11:00, at
-127.1 / -159.8 on the same machine with MKL's code path pinned to AVX2 (``MKL_CBWR=AVX2``, beside torch's own
kernels on AVX2, which alone change nothing), and at -116.8 / -147.0 in the run stored from the machine before, with
the same code (docs/benchmarks.md, "Stored runs and the machine they ran on"). SB3 2.8.0 or 2.9.0 for 2.9.2,
Gymnasium 1.3.0 for 1.4.0 and NumPy 2.3.5 for 2.4.6 changed nothing there, but library versions can. So a stored run
reproduces bit for bit only where its provenance matches, and runs whose provenance differs compare as independent
draws, not as the same seed twice.

:func:`run_provenance` records it with each run: SB3's own ``get_system_info`` (library versions), plus the three
things that set the CPU's arithmetic: the instruction sets the CPU reports, torch's SIMD dispatch, and the
environment variables that override MKL's or torch's dispatch.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from pathlib import Path

#: Environment variables that change which kernels torch and MKL run (and so the last bits of a run's arithmetic).
DISPATCH_VARIABLES = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS")


def cpu_flags(cpuinfo: str | None = None) -> tuple[str, str]:
    """The CPU's model name and a short digest of the instruction sets it reports.

    :param cpuinfo: the text of ``/proc/cpuinfo`` (read from the machine when ``None``; where there is none, as on
        macOS or Windows, the model is :func:`platform.processor` and the digest empty).
    :return: ``(model, digest)``; the digest is the first 12 hex digits of the SHA-1 of the sorted flags.
    """
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    model, flags = platform.processor(), ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            model = value.strip()
        elif key.strip() in ("flags", "Features") and not flags:  # x86, ARM
            flags = " ".join(sorted(value.split()))
    digest = hashlib.sha1(flags.encode()).hexdigest()[:12] if flags else ""
    return model, digest


def run_provenance() -> dict[str, str]:
    """Library versions (SB3's ``get_system_info``: OS, Python, SB3, PyTorch, NumPy, Gymnasium ...), the CPU
    (``cpu``: its model; ``cpu_flags``: a digest of its instruction sets), torch's SIMD dispatch (``cpu_capability``)
    and any of :data:`DISPATCH_VARIABLES` set. Computed once per process; each call returns its own copy (a run
    record that edits its copy leaves the next run's alone)."""
    return dict(_provenance())


@functools.cache
def _provenance() -> dict[str, str]:
    import torch as th
    from stable_baselines3.common.utils import get_system_info

    info, _ = get_system_info(print_info=False)
    model, digest = cpu_flags()
    info.update(cpu=model, cpu_flags=digest, cpu_capability=str(th.backends.cpu.get_cpu_capability()))
    info.update({name: os.environ[name] for name in DISPATCH_VARIABLES if name in os.environ})
    return {key: str(value) for key, value in info.items()}
