"""The provenance of a run: library versions and what sets the CPU's arithmetic (common.provenance)."""

import torch as th

from ordergrad_rl.common.provenance import _provenance, cpu_flags, run_provenance

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx2 avx512f
processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx2 avx512f
"""


def test_cpu_flags_name_the_model_and_digest_the_instruction_sets():
    model, digest = cpu_flags(CPUINFO)
    assert model == "Intel(R) Xeon(R) Processor"
    assert len(digest) == 12
    assert cpu_flags(CPUINFO.replace("fpu sse2 avx2 avx512f", "avx512f avx2 fpu sse2"))[1] == digest  # the order
    assert cpu_flags(CPUINFO.replace(" avx512f", ""))[1] != digest  # a CPU without AVX-512 differs
    assert cpu_flags("Processor\t: ARMv8\nFeatures\t: fp asimd\n")[1] != ""  # ARM's flags line
    assert cpu_flags("")[1] == ""  # no /proc/cpuinfo (macOS, Windows)


def test_run_provenance_holds_the_library_versions_and_the_dispatch(monkeypatch):
    _provenance.cache_clear()
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    provenance = run_provenance()
    run_provenance()["PyTorch"] = "edited"
    assert run_provenance()["PyTorch"] == th.__version__  # a copy per call
    _provenance.cache_clear()  # the variable set here stays out of later callers' provenance
    assert provenance["PyTorch"] == th.__version__
    assert provenance["cpu_capability"] == th.backends.cpu.get_cpu_capability()
    assert provenance["MKL_CBWR"] == "AVX2"
    assert all(isinstance(value, str) for value in provenance.values())
