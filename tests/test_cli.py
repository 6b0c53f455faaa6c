"""The ``ordergrad-rl`` command: help everywhere, group behaviour, registry, lazy imports."""

import os
import subprocess
import sys

import pytest

from ordergrad_rl import cli


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_commands(capsys):
    out = _help([], capsys)
    assert "ordergrad-rl" in out
    for name in cli.COMMANDS:
        assert name in out


def test_reproduce_help_lists_every_reproduction(capsys):
    out = _help(["reproduce"], capsys)
    for name in cli.REPRODUCTIONS:
        assert name in out


@pytest.mark.parametrize("name", list(cli.REPRODUCTIONS))
def test_each_reproduction_has_help_with_standard_options(name, capsys):
    out = _help(["reproduce", name], capsys)
    assert "--out" in out and "--json" in out
    assert out.count("\n") > 10  # the module docstring is the description


def test_group_without_subcommand_prints_help_and_returns_2(capsys):
    assert cli.main([]) == 2
    assert "reproduce" in capsys.readouterr().err
    assert cli.main(["reproduce"]) == 2
    err = capsys.readouterr().err
    assert all(name in err for name in cli.REPRODUCTIONS)


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "no-such-experiment"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "note"),
    [
        ("enjoy", ". enjoy: rl-zoo3's enjoy runs a saved model's episodes: ordergrad-rl evaluate MODEL"),
        ("evalute", " (did you mean evaluate?)"),
    ],
)
def test_an_unknown_command_names_the_one_meant(command, note, capsys):
    """rl-zoo3's users type enjoy, which argparse refused without a word of evaluate; a typo got no suggestion."""
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "model.zip"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument <command>: invalid choice: {command!r} (choose from train, evaluate, " in err
    assert note in err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert "ordergrad-rl" in capsys.readouterr().out


def test_registered_modules_implement_the_command_protocol():
    import importlib

    commands = [c for c in cli.COMMANDS.values() if isinstance(c, cli.Command)]
    commands += [c for g in cli.COMMANDS.values() if isinstance(g, cli.Group) for c in g.commands.values()]
    for command in commands:
        module = importlib.import_module(command.module)
        assert callable(module.add_arguments) and callable(module.run) and module.__doc__


def test_command_modules_load_lazily_and_help_needs_no_torch():
    # In a fresh interpreter: building the parser imports no command module, and every command's --help
    # imports neither torch nor matplotlib.
    code = """
import contextlib, io, sys
from ordergrad_rl import cli
cli.build_parser()
print(any(c.module in sys.modules for c in cli.REPRODUCTIONS.values()))
for name in cli.REPRODUCTIONS:
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        cli.main(["reproduce", name, "--help"])
loaded = all(c.module in sys.modules for c in cli.REPRODUCTIONS.values())
print(loaded, "torch" in sys.modules, "matplotlib" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "False", "False"]
    run = subprocess.run([sys.executable, "-m", "ordergrad_rl.cli", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "reproduce" in run.stdout


def test_every_command_takes_threads_and_sets_torch_threads(monkeypatch):
    import torch

    from ordergrad_rl.cli import DEFAULT_THREADS, REPRODUCTIONS, build_parser, set_threads

    parser = build_parser()
    for command in (["evaluate", "m.zip", "--env", "RiskyBandit-v0"], *(["reproduce", name] for name in REPRODUCTIONS)):
        assert parser.parse_args(command).threads == DEFAULT_THREADS == 1
        assert parser.parse_args([*command, "--threads", "3"]).threads == 3
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        set_threads(1)
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        (["reproduce", "minatar"], "--workers N trains N at once"),
        (["reproduce", "tailrisk"], "--workers N trains N at once"),
        (["reproduce", "benchmarks"], "--workers N trains N at once"),
        (["reproduce", "peers"], "--workers N trains N at once"),
        (["reproduce", "reasoning-lm"], "--workers N trains N at once"),
        (["reproduce", "reasoning"], "one after another"),
        (["sweep", "grid.yaml"], "--cpus-per-trial C"),
    ],
)
def test_threads_is_refused_where_runs_use_one_thread_whatever_it_says(command, hint, capsys, monkeypatch):
    """``reproduce minatar --threads 4`` was accepted and trained every run with one torch thread anyway (each run
    is a job that sets one thread; ``reproduce reasoning``'s runs set it too, after its base model was built with
    the 4): these commands now say so instead, before any work, and keep taking the default ``--threads 1``."""
    import importlib

    from ordergrad_rl.cli import COMMANDS, REPRODUCTIONS, build_parser, main

    entry = REPRODUCTIONS[command[1]] if command[0] == "reproduce" else COMMANDS[command[0]]
    monkeypatch.setattr(importlib.import_module(entry.module), "run", lambda args: pytest.fail("the command ran"))
    assert main([*command, "--threads", "4"]) == 2
    err = capsys.readouterr().err
    assert "--threads 4 would change nothing: " in err and hint in err
    assert main([*command, "--threads", "0"]) == 2
    assert build_parser().parse_args([*command, "--threads", "1"]).threads == 1
    text = " ".join(_help(command, capsys).split())
    assert hint in text.partition("--threads N, --num-threads N only 1: ")[2]  # rl-zoo3's spelling beside it


def test_ctrl_c_returns_130_without_a_traceback(capsys, monkeypatch):
    from ordergrad_rl.experiments import weight_profiles

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(weight_profiles, "run", interrupted)
    assert cli.main(["reproduce", "weights"]) == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_help_names_every_algorithm_a_saved_model_may_come_from(command, capsys):
    """``evaluate --help`` and ``compare --help`` named only OrderGradPPO, OrderGradREINFORCE and SB3's PPO / A2C,
    while both load the saves of every algorithm in ``zoo.models.ALGORITHMS`` (a DQN save evaluates)."""
    from ordergrad_rl.zoo.models import ALGORITHMS

    out = " ".join(_help([command], capsys).split())
    assert "every ordergrad-rl agent" in out
    for algorithm in ALGORITHMS:
        if algorithm.module != "ordergrad_rl.agents":
            assert algorithm.name in out, algorithm.name
