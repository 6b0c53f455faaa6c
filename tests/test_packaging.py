"""The package as users install it: the sdist and the wheel built from it, as ``python -m build`` makes them, and
its public API as their type checkers read it.

The dists are built once per module with the installed setuptools (no isolated environment, no network), from a
copy of the source tree, so that nothing is written into the checkout.
"""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Not part of a build: hidden entries (version control, the environment, tool caches), outputs, and the docs'
#: figures (the sdist leaves them out).
NOT_SOURCE = (".*", "build", "dist", "*.egg-info", "runs", "results", "__pycache__", "docs")


@dataclass
class Dists:
    sdist: list[str]  # the sdist's paths, below its top directory
    wheel: list[str]
    log: str  # what the builds printed


def build(hook: str, source: Path, out: Path) -> tuple[Path, str]:
    """``setuptools.build_meta.<hook>(out)`` run in ``source``: the file it wrote, and what the build printed."""
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(out)!r}))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=source, capture_output=True, text=True, check=True, timeout=120
    )
    return out / result.stdout.strip().splitlines()[-1], result.stdout + result.stderr


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist of a copy of the tree, and the wheel built from that sdist."""
    tmp = tmp_path_factory.mktemp("packaging")
    shutil.copytree(ROOT, tmp / "tree", ignore=shutil.ignore_patterns(*NOT_SOURCE))
    sdist, sdist_log = build("build_sdist", tmp / "tree", tmp / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp / "unpacked", filter="data")
        sdist_names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    wheel, wheel_log = build("build_wheel", tmp / "unpacked" / sdist.name.removesuffix(".tar.gz"), tmp / "dist")
    with zipfile.ZipFile(wheel) as archive:
        return Dists(sdist_names, archive.namelist(), sdist_log + wheel_log)


def test_wheel_holds_the_package_data(dists):
    """PEP 561: without ``py.typed`` users' mypy and pyright ignore the package's annotations; the per-env
    hyperparameter files are read by ``ordergrad-rl train`` at run time."""
    assert "ordergrad_rl/py.typed" in dists.wheel
    shipped = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "ordergrad_rl").rglob("*.yml"))
    assert shipped and set(shipped) <= set(dists.wheel)


def test_both_dists_carry_the_license_and_build_without_deprecations(dists):
    """The MIT license asks that its text go with every copy: the metadata said MIT and no file held it. The
    license was a TOML table, which setuptools deprecates (builds fail from 2027-02-18 on): now an SPDX string."""
    assert "LICENSE" in dists.sdist
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in dists.wheel)
    assert "deprecated" not in dists.log.lower()


def test_sdist_holds_the_package_and_no_partial_test_suite(dists):
    """setuptools added tests/test*.py to the sdist without conftest.py, the fixtures and the scripts they load, so
    pytest in an unpacked sdist failed; the sdist is the package and its metadata, as SB3's is."""
    top = {name.split("/")[0] for name in dists.sdist}
    assert top == {
        "LICENSE",
        "MANIFEST.in",
        "PKG-INFO",
        "README.md",
        "ordergrad_rl",
        "ordergrad_rl.egg-info",
        "pyproject.toml",
        "setup.cfg",
    }


#: ``(the newest release without it, what the package imports from it)`` of the dependencies whose oldest admitted
#: release matters: the usage line, the README's snippets and the sb3-contrib tests pass with gymnasium 1.1.0 and
#: stable-baselines3 2.7.0 (and sb3-contrib 2.3.0).
NEWER_THAN = {
    "gymnasium": ("1.0.0", "gymnasium.vector.AutoresetMode"),
    "stable-baselines3": ("2.6.0", "stable_baselines3.common.utils.LinearSchedule"),
}


def test_the_dependencies_admit_no_release_without_what_the_package_imports():
    """pyproject.toml said gymnasium>=1.0 and stable-baselines3>=2.3: where one of those was installed, pip was
    satisfied and ``from ordergrad_rl import OrderGradPPO`` failed with ``ImportError: cannot import name
    'AutoresetMode' from 'gymnasium.vector'`` (``'LinearSchedule'`` with SB3 2.6)."""
    import importlib

    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    requirements = [
        Requirement(text) for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ]
    specifiers = {requirement.name: requirement.specifier for requirement in requirements}
    for name, (without, needed) in NEWER_THAN.items():
        module, _, attribute = needed.rpartition(".")
        assert hasattr(importlib.import_module(module), attribute)  # what the package imports, in this install
        assert not specifiers[name].contains(without), f"{name} {without} has no {needed}"


# ---------------------------------------------------------------------------------------- as type checkers read it
def unannotated(function: Callable[..., Any]) -> list[str]:
    """The parameters of ``function`` (``"return"`` for its result) that carry no annotation."""
    signature = inspect.signature(function)
    missing = [name for name, p in signature.parameters.items() if name != "self" and p.annotation is p.empty]
    return missing + (
        ["return"] if signature.return_annotation is signature.empty and function.__name__ != "__init__" else []
    )


def test_the_core_api_is_annotated_for_strict_type_checkers():
    """``mypy --strict`` refuses calls to functions without annotations (``Call to untyped function "value" in typed
    context``): the README's ``t.value(returns)`` and ``t.orderstats(returns)`` failed a strict user's check."""
    import ordergrad_rl.core as core

    functions = [getattr(core, name) for name in core.__all__ if inspect.isfunction(getattr(core, name))]
    methods = [m for name, m in vars(core.OrderStatTransform).items() if inspect.isfunction(m) and name[0] != "_"]
    missing = {f.__qualname__: unannotated(f) for f in functions + methods if unannotated(f)}
    assert not missing


# ------------------------------------------------------------------------------------- a user's script under mypy
#: The libraries whose modules mypy need not read for these checks (their types become ``Any``), so that a check
#: takes seconds; SB3 and sb3-contrib are read: the agents' bases are theirs. Gymnasium's optional modules pull in
#: JAX (and it filelock, absl, ml_dtypes) and pygame, matplotlib's stubs Pillow: some 550 modules that took ~40% of
#: the run, none of which the package types against. (Errors that need the types of these libraries, e.g. torch's,
#: show only in a full ``mypy ordergrad_rl``, which finds none either.)
UNREAD = (
    *("torch", "scipy", "transformers", "trl", "array_api_compat", "tensorboard", "pandas", "ray"),
    *("jax", "jaxlib", "pygame", "PIL", "filelock", "absl", "ml_dtypes"),
)
#: The per-module flags of ``mypy --strict``, off in the package's own check (``no_implicit_reexport`` stays on:
#: users import from its packages).
STRICT_FLAGS = (
    "disallow_any_generics",
    "disallow_subclassing_any",
    "disallow_untyped_calls",
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "check_untyped_defs",
    "disallow_untyped_decorators",
    "warn_unused_ignores",
    "warn_return_any",
    "strict_equality",
    "extra_checks",
)


#: User scripts that type-check against the public API (``mypy --strict``), each with the bug it guards against. One
#: mypy run reads them all: reading SB3 and the package takes most of its time, which separate tests paid once per
#: pytest-xdist worker.
USER_SCRIPTS: dict[str, str] = {
    # OrderGradPPO.load was typed OrderGradPPO | OrderGradQCriticPPO (a Q-critic save loads as that class), so
    # `model: OrderGradPPO = OrderGradPPO.load(path)` and `.n_episodes` on it failed mypy and pyright; it is typed as
    # the class it is called on, as the constructor and SB3's PPO.load are.
    "load_types_as_its_class": """
        from ordergrad_rl import OrderGradPPO, OrderGradREINFORCE

        model: OrderGradPPO = OrderGradPPO.load("cvar_agent")
        print(model.n_episodes, OrderGradPPO.load("cvar_agent", env="CartPole-v1").novelty_phase)
        reinforce: OrderGradREINFORCE = OrderGradREINFORCE.load("agent")
        """,
    # OrderGradRecurrentPPO and OrderGradMaskablePPO train on a channel objective (a dict or a ChannelObjective), but
    # their objective was typed as a single objective's spec, so the README's channel objective failed on them.
    "contrib_agents_take_channel_objectives": """
        from ordergrad_rl import ChannelObjective, OrderGradMaskablePPO, OrderGradRecurrentPPO

        channels = {"reward": "top2@4", "length": ("bot2@4", 0.4)}
        OrderGradRecurrentPPO("MlpLstmPolicy", "TargetSum-v0", objective=channels, group_size=8)
        OrderGradMaskablePPO("MlpPolicy", "TargetSum-v0", objective=ChannelObjective.parse(channels), group_size=8)
        """,
    # PassAtKEvalCallback(ks=...) and PassAtK.curve(ks) take any integers np.asarray reads, and their default is an
    # array, but were typed Sequence[int]: ks=2 ** np.arange(4) failed mypy.
    "pass_at_k_ks_take_an_array": """
        import numpy as np

        from ordergrad_rl import PassAtKEvalCallback

        callback = PassAtKEvalCallback("TargetSum-v0", n_samples=8, ks=2 ** np.arange(4))
        if callback.last_result is not None:
            print(callback.last_result.curve(np.array([1, 8])))
        """,
    # The agents (constructor, load(path, env=...), set_env) and the evaluation callbacks take a native batch's
    # gym.make_vec (the README), but their env was typed SB3's GymEnv | str, which a Gymnasium vector env is not.
    "agents_take_gym_make_vec": """
        import gymnasium as gym

        from ordergrad_rl import OrderGradPPO, OrderGradREINFORCE, RiskEvalCallback

        model = OrderGradPPO("MlpPolicy", gym.make_vec("SyntheticTailRisk-v0", num_envs=8), objective="cvar0.2")
        model.set_env(gym.make_vec("SyntheticTailRisk-v0", num_envs=8))
        OrderGradREINFORCE.load("agent", env=gym.make_vec("SyntheticTailRisk-v0", num_envs=8))
        RiskEvalCallback(gym.make_vec("SyntheticTailRiskDeploy-v0", num_envs=16))
        """,
    # SB3's load(path, env, device, custom_objects, print_system_info, force_reset): the agents' load named only
    # (path, env, device), so SB3's positional call failed mypy ("Too many arguments") and at run time.
    "load_takes_sb3s_options_by_position": """
        from ordergrad_rl import OrderGradPPO, OrderGradRecurrentPPO

        model = OrderGradPPO.load("agent", None, "cpu", {"learning_rate": 0.0}, False, True)
        print(model.gamma, OrderGradRecurrentPPO.load("agent", None, "cpu", None, True).gamma)
        """,
    # group_advantages takes the rewards as NumPy, a torch tensor or a nested list (its docstring), but they were typed
    # np.ndarray: a user's call with a list or a tensor failed mypy.
    "group_advantages_take_a_list_or_a_tensor": """
        from ordergrad_rl.integrations.advantages import group_advantages, parse_group_objective

        objective = parse_group_objective("top2@4", 8)
        print(group_advantages(objective, [[1.0], [0.0]] * 4, 8, ["correct"]))
        """,
}


def test_users_scripts_type_check_against_the_public_api(tmp_path: Path) -> None:
    """``mypy --strict`` on each of :data:`USER_SCRIPTS`, the package read from this checkout, and in the same run
    mypy's default check of the whole package and of ``scripts/``, as ``mypy ordergrad_rl scripts`` checks them: one
    error there fails the test."""
    pytest.importorskip("mypy.api")
    from mypy import api

    config = tmp_path / "mypy.ini"
    unread = ",".join(f"{name}.*" for name in UNREAD)
    scripts = ",".join(path.stem for path in (ROOT / "scripts").glob("*.py"))
    not_strict = "".join(f"{flag} = False\n" for flag in STRICT_FLAGS)
    config.write_text(
        f"[mypy]\nstrict = True\nignore_missing_imports = True\nmypy_path = {ROOT}\n"
        f"[mypy-ordergrad_rl.*,{scripts}]\n{not_strict}"
        f"[mypy-{unread}]\nfollow_imports = skip\n"
    )
    paths = [ROOT / "ordergrad_rl", *sorted((ROOT / "scripts").glob("*.py"))]
    for name, script in USER_SCRIPTS.items():
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(inspect.cleandoc(script) + "\n")
    out, err, _ = api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), *map(str, paths)])
    assert not err, err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert not errors, "\n".join(errors)
