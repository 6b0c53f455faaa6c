"""Stable-Baselines3's own test suite with PPO replaced by OrderGradPPO and A2C by OrderGradREINFORCE.

    python scripts/sb3_suite.py [--modes stock swapped] [--files test_run.py ...] [--json results.json]
                                [--reuse earlier.json]

Fetches the sdist of the installed SB3 version with ``pip download`` into a temporary directory (SB3's tests are
not shipped with the wheel, nor committed here) and runs its tests in two modes:

* ``stock``: SB3 as installed;
* ``swapped``: ``stable_baselines3.PPO`` / ``A2C`` replaced, before the test modules import them, by thin subclasses
  of :class:`~ordergrad_rl.agents.OrderGradPPO` / :class:`~ordergrad_rl.agents.OrderGradREINFORCE` named ``PPO`` /
  ``A2C``. The only translation is ``n_steps`` -> ``n_episodes`` (:func:`n_episodes_for`: the value the error
  for ``n_steps`` suggests to a user); every other argument is passed on as the test wrote it, and the assertions
  are untouched.

A test counts as a *PPO test* (*A2C test*) if it constructed or loaded the class during the run (recorded by the
plugin, in both modes). Tests parametrized by another algorithm class only (SAC, TD3, DQN, DDPG) are deselected.
The script prints, per class, the tests that pass in each mode and the swapped failures with their first error line.

The same module is the pytest plugin (``-p sb3_suite``): the hooks below read ``SB3_SUITE_MODE`` and write the
per-test outcomes to ``SB3_SUITE_OUT``.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
from typing import Any

#: The algorithms swapped, by SB3 name.
SWAPPED = ("PPO", "A2C")
#: Test files that use PPO or A2C (the others test SB3's off-policy algorithms and utilities).
DEFAULT_FILES = (
    "test_buffers.py",
    "test_callbacks.py",
    "test_cnn.py",
    "test_custom_policy.py",
    "test_deterministic.py",
    "test_dict_env.py",
    "test_distributions.py",
    "test_gae.py",
    "test_identity.py",
    "test_logger.py",
    "test_predict.py",
    "test_run.py",
    "test_save_load.py",
    "test_sde.py",
    "test_spaces.py",
    "test_tensorboard.py",
    "test_train_eval_mode.py",
    "test_utils.py",
    "test_vec_envs.py",
    "test_vec_extract_dict_obs.py",
    "test_vec_monitor.py",
)


# ---------------------------------------------------------------------------------------------- translation
def _num_envs(env: Any) -> int:
    return int(getattr(env, "num_envs", 1)) if not isinstance(env, str) else 1


def n_episodes_for(n_steps: int, env: Any) -> int:
    """The ``n_episodes`` given for SB3's ``n_steps`` (steps per env per rollout): about as many steps per rollout,
    measured from the env's first episodes (:func:`~ordergrad_rl.agents.common.sb3_compat.suggest_n_episodes`, what the
    error for ``n_steps`` tells a user); if the env cannot be copied to measure it, ``n_steps`` episodes. At least
    2."""
    from ordergrad_rl.agents.common.sb3_compat import suggest_n_episodes

    n_envs = _num_envs(env)
    suggestion = suggest_n_episodes(env, int(n_steps), n_envs)
    if suggestion is not None:
        return suggestion[0]
    return max(2, int(n_steps))


def _swapped_class(stock: type, ordergrad: type) -> type:
    """A subclass of ``ordergrad`` named like ``stock`` that takes ``stock``'s arguments (positional ones by
    ``stock``'s order) and translates ``n_steps`` to ``n_episodes``."""
    # ignore[misc] (here and below): the classes' own __init__ is what is read, wrapped and swapped, on purpose.
    signature = inspect.signature(stock.__init__)  # type: ignore[misc]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _record(stock.__name__)
        if args:
            kwargs = dict(signature.bind_partial(self, *args, **kwargs).arguments)
            kwargs.pop("self")
        if kwargs.get("n_steps") is not None:
            kwargs["n_episodes"] = n_episodes_for(kwargs.pop("n_steps"), kwargs.get("env"))
        ordergrad.__init__(self, **kwargs)  # type: ignore[misc]

    return type(stock.__name__, (ordergrad,), {"__init__": __init__, "__module__": "sb3_suite"})


# ---------------------------------------------------------------------------------------------- pytest plugin
_current: dict[str, Any] = {"nodeid": None}
_used: dict[str, set[str]] = {}
_reports: dict[str, dict[str, Any]] = {}


def _record(name: str) -> None:
    if _current["nodeid"] is not None:
        _used.setdefault(_current["nodeid"], set()).add(name)


def _recording_init(cls: type) -> None:
    """Record ``cls``'s constructions (``load`` constructs too) without changing the class."""
    original = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self).__name__ == cls.__name__:  # not a subclass's super() call
            _record(cls.__name__)
        original(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]


def pytest_configure(config: Any) -> None:
    mode = os.environ.get("SB3_SUITE_MODE")
    if mode is None:
        return
    import stable_baselines3

    if mode == "stock":
        for name in SWAPPED:
            _recording_init(getattr(stable_baselines3, name))
    elif mode == "swapped":
        import torch

        from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE

        torch.set_num_threads(1)
        stable_baselines3.PPO = _swapped_class(stable_baselines3.PPO, OrderGradPPO)  # type: ignore[misc,assignment]
        stable_baselines3.A2C = _swapped_class(stable_baselines3.A2C, OrderGradREINFORCE)  # type: ignore[misc,assignment]
    else:
        raise ValueError(f"SB3_SUITE_MODE must be 'stock' or 'swapped', got {mode!r}")
    if mode == "stock":
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Deselect tests parametrized by another algorithm only (they cannot use PPO or A2C)."""
    if os.environ.get("SB3_SUITE_MODE") is None:
        return
    from stable_baselines3.common.base_class import BaseAlgorithm

    kept: list[Any] = []
    dropped: list[Any] = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        classes = [v for v in params.values() if isinstance(v, type) and issubclass(v, BaseAlgorithm)]
        other = classes and all(cls.__name__ not in SWAPPED for cls in classes)
        (dropped if other else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_setup(item: Any) -> None:
    _current["nodeid"] = item.nodeid


def pytest_runtest_logreport(report: Any) -> None:
    if os.environ.get("SB3_SUITE_MODE") is None:
        return
    entry = _reports.setdefault(report.nodeid, {"outcome": "passed", "error": "", "duration": 0.0})
    entry["duration"] += report.duration
    if report.failed:
        entry["outcome"] = "failed"
        entry["error"] = entry["error"] or _first_error_line(report)
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def _first_error_line(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def pytest_sessionfinish(session: Any) -> None:
    out = os.environ.get("SB3_SUITE_OUT")
    if out is None:
        return
    for nodeid, entry in _reports.items():
        entry["uses"] = sorted(_used.get(nodeid, ()))
    pathlib.Path(out).write_text(json.dumps(_reports, indent=1))


# ---------------------------------------------------------------------------------------------- driver
def fetch_tests(workdir: pathlib.Path) -> pathlib.Path:
    """Download the sdist of the installed SB3 version and extract its ``tests`` and ``pyproject.toml`` (its
    pytest settings). Returns the directory holding them."""
    import stable_baselines3

    version = stable_baselines3.__version__
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"stable-baselines3=={version}", "--no-binary", ":all:"]
        + ["--no-deps", "--no-build-isolation", "-q", "-d", str(workdir)],
        check=True,
    )
    (archive,) = workdir.glob("stable_baselines3-*.tar.gz")
    root = workdir / "sb3"
    with tarfile.open(archive) as tar:
        prefix = f"stable_baselines3-{version}/"
        members = [
            m for m in tar.getmembers() if m.name.startswith(prefix + "tests/") or m.name == prefix + "pyproject.toml"
        ]
        for member in members:
            member.name = member.name[len(prefix) :]
        tar.extractall(root, members=members, filter="data")
    return root


def run_mode(root: pathlib.Path, mode: str, files: list[str], extra: list[str], code: str | None) -> dict:
    """Run the suite in ``mode`` and return ``{nodeid: {"outcome", "error", "uses", "duration"}}``."""
    out = root / f"results_{mode}.json"
    scripts = str(pathlib.Path(__file__).resolve().parent)
    env = {
        **os.environ,
        "SB3_SUITE_MODE": mode,
        "SB3_SUITE_OUT": str(out),
        "PYTHONPATH": os.pathsep.join(p for p in (code, scripts, os.environ.get("PYTHONPATH")) if p),
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, "-m", "pytest", "-p", "sb3_suite", "-q", "-p", "no:cacheprovider", "--tb=no"]
    # test_utils.py imports ale_py (Atari), an optional SB3 extra: without it that file is reported, not run.
    command.append("--continue-on-collection-errors")
    subprocess.run([*command, *extra, *(f"tests/{name}" for name in files)], cwd=root, env=env, check=False)
    return json.loads(out.read_text())


def table(results: dict[str, dict]) -> str:
    """Markdown table: per class, the tests that use it and how many of them pass in each mode."""
    modes = list(results)
    lines = ["| | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for name in SWAPPED:
        cells = []
        for mode in modes:
            tests = {n: e for n, e in results[mode].items() if name in e["uses"]}
            passed = sum(e["outcome"] == "passed" for e in tests.values())
            cells.append(f"{passed} / {len(tests)} pass")
        lines.append(f"| {name} tests | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", nargs="+", default=["stock", "swapped"], choices=["stock", "swapped"])
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES), help="SB3 test files to run")
    parser.add_argument("--json", help="write the per-test results of every mode here")
    parser.add_argument("--code", help="directory put first on PYTHONPATH (e.g. another checkout's code)")
    parser.add_argument("--reuse", help="a --json file of an earlier run: its modes are read, not run again")
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[], help="passed on to pytest")
    args = parser.parse_args()
    results = json.loads(pathlib.Path(args.reuse).read_text()) if args.reuse else {}
    with tempfile.TemporaryDirectory(prefix="sb3_suite_") as tmp:
        root = fetch_tests(pathlib.Path(tmp))
        for mode in args.modes:
            if mode not in results:  # one mode at a time: the suite is CPU heavy
                results[mode] = run_mode(root, mode, args.files, args.pytest_args, args.code)
    results = {mode: results[mode] for mode in ("stock", "swapped") if mode in results}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    print(table(results))
    if "swapped" in results:
        print("\nSwapped failures (test: first error line):")
        for nodeid, entry in sorted(results["swapped"].items()):
            if entry["uses"] and entry["outcome"] == "failed":
                print(f"- {nodeid}: {entry['error']}")


if __name__ == "__main__":
    main()
