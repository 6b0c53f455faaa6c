"""The README's snippets run as pasted (issue 9, defects 8 and 9)."""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import pytest

from ordergrad_rl import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def code_blocks(language: str) -> list[tuple[str, str]]:
    """``(section heading, code)`` of every fenced ``language`` block of the README, in order."""
    blocks, heading = [], ""
    for match in re.finditer(r"^(#+ [^\n]*)$|^```(\w*)\n(.*?)^```", README.read_text(), flags=re.M | re.S):
        if match.group(1):
            heading = match.group(1).lstrip("# ").strip()
        elif match.group(2) == language:
            blocks.append((heading, match.group(3)))
    return blocks


def synopsis_lines() -> list[str]:
    """The ``ordergrad-rl reproduce ...`` synopsis lines of the README."""
    return [
        line.strip()
        for _, code in code_blocks("bash")
        for line in code.splitlines()
        if line.startswith("ordergrad-rl reproduce ") and "[" in line
    ]


def test_reproduce_synopsis_offers_only_options_the_commands_take(tmp_path):
    """Defect 8: the synopsis offered ``[--seeds S]`` to every reproduction, and ``weights`` refused it."""
    values = {"S": "2", "DIR": str(tmp_path / "out"), "PATH": str(tmp_path / "x.json"), "SEED": "1", "N": "2"}
    values |= {"M": "grpo", "MODE": "channel"}  # reasoning's --methods and --normalize
    values |= {"TASK": "lava", "METHOD": "og-cvar", "T": "1000", "F": "3"}  # benchmarks' options
    lines = synopsis_lines()
    covered = set()
    for line in lines:
        head, _, options = line.partition(" [")
        names = re.fullmatch(r"ordergrad-rl reproduce \{?([\w,-]+)\}?", head).group(1).split(",")
        argv = []
        for option in re.findall(r"\[([^\]]+)\]", "[" + options):
            flag, *placeholder = option.split()
            argv += [flag, *(values[p] for p in placeholder)]
        for name in names:
            args = cli.build_parser().parse_args(["reproduce", name, *argv])  # SystemExit(2) if an option is refused
            assert args._run is not None
            covered.add(name)
    assert covered == set(cli.REPRODUCTIONS), "every reproduction appears in the synopsis"


# ---------------------------------------------------------------------------------------------------- snippets
#: Training steps a command's ``learn`` really runs: one rollout, enough to show that the command runs.
SMOKE_TIMESTEPS = 1


@pytest.fixture
def smoke_learn(monkeypatch):
    """Cap every on-policy ``learn`` at one rollout (the examples ask for 20k-400k steps)."""
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

    learn = OnPolicyAlgorithm.learn

    def capped(self, total_timesteps, *args, **kwargs):
        return learn(self, min(total_timesteps, SMOKE_TIMESTEPS), *args, **kwargs)

    monkeypatch.setattr(OnPolicyAlgorithm, "learn", capped)


@pytest.fixture
def no_training(monkeypatch):
    """Every on-policy ``learn`` returns at once: a snippet's own code (imports, names, arguments, what it does
    with the model) runs, its hours of training do not (the agents' tests cover training)."""
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

    monkeypatch.setattr(OnPolicyAlgorithm, "learn", lambda self, *args, **kwargs: self)


PYTHON_BLOCKS = [pytest.param(code, id=f"{i}-{heading}") for i, (heading, code) in enumerate(code_blocks("python"))]


@pytest.mark.parametrize("code", PYTHON_BLOCKS)
def test_python_snippet_runs_as_pasted(code, tmp_path, monkeypatch, no_training):
    """Defect 9: the policy_kwargs snippet used ``math`` without importing it. Each block runs alone, in a fresh
    namespace, in an empty directory (files it saves land there). A block that imports ``onnxruntime`` (exporting
    models), which is no dependency, is skipped without it."""
    if "import onnxruntime" in code:
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def command_lines(heading: str) -> list[str]:
    """The runnable ``ordergrad-rl`` commands of the bash blocks under ``heading``: continuation lines joined,
    comments dropped, synopsis lines (``[...]``, ``{...}``) skipped."""
    lines = []
    for block_heading, code in code_blocks("bash"):
        if block_heading != heading:
            continue
        for line in code.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("ordergrad-rl ") and not re.search(r"[\[{]", line):
                lines.append(line)
    return lines


def make_demo_argv() -> list[str]:
    """The ``ordergrad-rl`` arguments of the Makefile's ``demo`` target."""
    makefile = (README.parent / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n\t(.*)$", makefile, flags=re.M).group(1)
    return shlex.split(recipe.split("ordergrad-rl", 1)[1])


@pytest.mark.slow
def test_command_snippets_run_as_pasted(tmp_path, monkeypatch, capsys, smoke_learn):
    """Defect 9: every ``ordergrad-rl`` example runs, the compare examples after ``make demo`` (here its command
    shrunk to one update of 8 episodes), and the two compare examples write two different figures."""
    monkeypatch.chdir(tmp_path)
    tiny = ["--seeds", "1", "--updates", "1", "--n-episodes", "8", "--k", "4", "--deploy-paths", "8"]
    tiny += ["--eval-every", "1", "--eval-episodes", "8", "--workers", "1", "--quiet"]
    assert cli.main([*make_demo_argv(), *tiny]) == 0
    commands = command_lines("The `ordergrad-rl` command")
    names = ["train", "evaluate", "train", "train", "evaluate", "compare", "compare", "dashboard"]
    assert [c.split()[1] for c in commands] == names
    for command in commands:
        assert cli.main(shlex.split(command)[1:]) == 0, command
    figures = sorted(p.name for p in (tmp_path / "results" / "compare").iterdir())
    assert figures == ["compare_reinforce_seed0_vs_ordergrad_cvar_seed0.png", "compare_tailrisk.png"]
    out = capsys.readouterr().out
    for figure in figures:
        assert f"figure: results/compare/{figure}" in out


@pytest.mark.slow
def test_target_sum_commands_run_as_pasted_without_warnings(tmp_path, monkeypatch, capsys):
    """The groups section's two commands, trained for their whole 20,000 steps (seconds): train warned "about 4.9
    updates (fewer than 5)" where its learn ran 5, which looks broken to a newcomer pasting it. They run without a
    warning now, and, as the text beside them says, a random policy's returns are all 0."""
    monkeypatch.chdir(tmp_path)
    heading = "Groups (GRPO, MaxPO, prompt-conditional OrderGrad), reward channels and pass@k"
    commands = command_lines(heading)
    assert [c.split()[1] for c in commands] == ["train", "evaluate"]
    outs = []
    for command in commands:
        with warnings.catch_warnings(record=True) as records:  # as the command prints them: `train: warning: ...`
            warnings.simplefilter("always")
            assert cli.main(shlex.split(command)[1:]) == 0, command
        assert not [str(r.message) for r in records if issubclass(r.category, UserWarning)], command
        outs.append(capsys.readouterr().out)
    assert "|              max |                   0 |" in outs[0]  # no episode of the last batch succeeded
    assert "|  1 |      0 |" in outs[1] and "| 64 |      0 |" in outs[1]


# ---------------------------------------------------------------------------------------------------- promises
def section(heading: str) -> str:
    """The text of the README section ``## heading`` (or deeper), up to the next heading of any level."""
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#+ )", README.read_text(), flags=re.M | re.S)
    assert match, heading
    return match.group(1)


def test_environments_table_lists_every_registered_env():
    """The Environments table lists the ids ``import ordergrad_rl`` registers: it had left out GuardedMaze-v0,
    HeavyTailBandit-v0 and RiskyShortcutNav-v0/1/2, three of the benchmark suite's four tasks."""
    import gymnasium as gym

    registered = {env_id for env_id, spec in gym.registry.items() if str(spec.entry_point).startswith("ordergrad_rl.")}
    table = "\n".join(line for line in section("Environments").splitlines() if line.startswith("| `"))
    listed = set(re.findall(r"`([\w-]+-v\d+)`", table))
    assert registered and registered <= listed, sorted(registered - listed)


def test_coming_from_sb3_defaults_are_the_constructors():
    """The "Defaults" bullet of "Coming from SB3" said 256 ranked episodes for "both agents", where
    OrderGradREINFORCE has sized its ranked rollouts by the TimeLimit since 2026-12-01 (32 on the guarded maze),
    and left out OrderGradREINFORCE's default objective and the continuous-action rollout."""
    import inspect

    from ordergrad_rl import OrderGradPPO, OrderGradREINFORCE
    from ordergrad_rl.agents.common import arguments

    bullet = re.search(r"^\* \*\*Defaults\*\*: (.*?)(?=^\* )", section("Coming from SB3"), flags=re.M | re.S).group(1)
    bullet = " ".join(bullet.split())
    objectives = re.search(r'`OrderGradPPO`\'s objective is `"(.+?)"` \(`OrderGradREINFORCE`\'s `"(.+?)"`\)', bullet)
    for cls, documented in zip((OrderGradPPO, OrderGradREINFORCE), objectives.groups(), strict=True):
        assert inspect.signature(cls).parameters["objective"].default == documented
    ppo = re.search(r"`OrderGradPPO` keeps a rollout within (\d+) steps, (\d+) on continuous actions", bullet)
    assert tuple(map(int, ppo.groups())) == (arguments.RANKED_ROLLOUT_STEPS, arguments.TIMED_BOX_ROLLOUT_STEPS)
    reinforce = re.search(r"`OrderGradREINFORCE` within (\d+) steps, (\d+) episodes above (\d+) steps", bullet)
    steps, n_episodes, limit = map(int, reinforce.groups())
    assert steps == arguments.REINFORCE_RANKED_ROLLOUT_STEPS
    assert arguments.ranked_n_episodes(limit + 1, steps) == n_episodes < arguments.ranked_n_episodes(limit, steps)
    assert OrderGradREINFORCE("MlpPolicy", "GuardedMaze-v0", objective="cvar0.2").n_episodes == n_episodes
    sizes = re.search(r"so (\d+) episodes above (\d+) steps, (\d+) above (\d+), and (\d+), .*?, above (\d+),", bullet)
    numbers = [int(number) for number in sizes.groups()]
    for n, limit in zip(numbers[::2], numbers[1::2], strict=True):
        assert arguments.ranked_n_episodes(limit + 1) == n < arguments.ranked_n_episodes(limit)


def test_coming_from_sb3_names_learns_log_interval():
    """SB3's A2C logs every 100 rollouts, OrderGradREINFORCE (its counterpart) every one: the default was in no
    docstring and in no README line, so an A2C user's script passing no log_interval logged 100 times as often."""
    import inspect

    from stable_baselines3 import A2C

    from ordergrad_rl import OrderGradREINFORCE

    default = inspect.signature(OrderGradREINFORCE.learn).parameters["log_interval"].default
    a2c = inspect.signature(A2C.learn).parameters["log_interval"].default
    bullet = re.search(r"^\* \*\*Defaults\*\*: (.*?)(?=^\* )", section("Coming from SB3"), flags=re.M | re.S)[1]
    assert f"`learn`'s `log_interval` is {default} (SB3's PPO: 1, A2C: {a2c})" in " ".join(bullet.split())
    docstring = " ".join(OrderGradREINFORCE.learn.__doc__.split())
    assert (
        f"Its default is {default}, as SB3's ``PPO`` has it; SB3's ``A2C``, whose rollouts are 5 steps, has {a2c}"
        in docstring
    )


def test_performance_quotes_the_accuracy_tables_worst_entry():
    """The Performance section quoted the accuracy as "<= 2.3e-13" where the accuracy table it points to has
    2.2e-13 as its worst entry (winsor10000): the two quote one measurement and must agree."""
    table = [line for line in section("How it is computed").splitlines() if line.startswith("| `")]
    worst = max(float(value) for line in table for value in re.findall(r"\d\.\de-\d+", line.split("|")[3]))
    quoted = re.search(r"worst advantage entry <= (\S+) of the largest", " ".join(section("Performance").split()))
    assert quoted and float(quoted.group(1)) == worst


def test_performance_gives_the_latest_usage_line_timing_the_other_sections_quote():
    """Performance ended on an earlier reading of the usage line at 0.94x SB3 PPO per env step on CartPole-v1 while
    the benchmark goals and the tied-critic bullet quoted that evening's 1.05-1.19x (docs/benchmarks.md, "A leaner
    episodic collection loop", the script timing its runs in turns): the section read as if the target were met."""
    text = " ".join(README.read_text().split())
    quoted = set(re.findall(r"(\d\.\d\d-\d\.\d\dx) SB3 PPO", text))
    assert len(quoted) == 1, quoted  # one figure wherever the README quotes it
    assert next(iter(quoted)) in " ".join(section("Performance").split())
