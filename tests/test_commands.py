"""``ordergrad-rl train / evaluate / compare``: model detection, --hparams, TensorBoard reading, a round trip."""

import argparse
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ordergrad_rl.cli import COMMANDS, Command, compare, main
from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.risk import risk_profile
from ordergrad_rl.zoo import compare as zoo_compare
from ordergrad_rl.zoo import models as zoo_models
from ordergrad_rl.zoo.algorithms import parse_hparams

OWN_COMMANDS = ["train", "evaluate", "compare"]


@pytest.mark.parametrize("name", OWN_COMMANDS)
def test_help(name, capsys):
    assert isinstance(COMMANDS[name], Command)
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--env" in out and "ordergrad-rl" in out  # options and the module docstring's examples


def test_help_imports_no_torch():
    code = """
import contextlib, io, sys
from ordergrad_rl import cli
for name in ("train", "evaluate", "compare"):
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        cli.main([name, "--help"])
print("torch" in sys.modules, "matplotlib" in sys.modules, "stable_baselines3" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(tmp_path):
    # `ordergrad-rl compare ... | head` ended in a BrokenPipeError traceback: now no traceback, and the status a shell
    # gives a command that SIGPIPE ended (141), as `ls | head`'s ls under `set -o pipefail`.
    command = [sys.executable, "-m", "ordergrad_rl", "reproduce", "weights", "--out", str(tmp_path)]
    writer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer.stdout.close()  # a reader that closes before the command prints (its table, its figures' paths)
    assert writer.wait(timeout=120) == 141
    assert writer.stderr.read() == ""


# ---------------------------------------------------------------------------------------------------- --hparams
def test_parse_hparams_literals_and_strings():
    from ordergrad_rl.agents import OrderGradPPO

    items = ["learning_rate=0.003", "policy_kwargs={'net_arch': [8]}", "normalize_advantage=False", "gamma=1"]
    parsed = parse_hparams([*items, "advantage=q_critic", "target_kl=None"], OrderGradPPO)
    assert parsed == {
        "learning_rate": 0.003,
        "policy_kwargs": {"net_arch": [8]},
        "normalize_advantage": False,
        "gamma": 1,
        "advantage": "q_critic",  # not a literal: kept as a string, which advantage accepts
        "target_kl": None,
    }


def test_parse_hparams_reads_rl_zoos_linear_schedules():
    """``lin_<x>`` (rl-zoo3's notation) is a schedule from x to 0 for any argument that takes one."""
    from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE

    parsed = parse_hparams(["learning_rate=lin_3e-4", "ent_coef=lin_0.01", "clip_range=lin_0.2"], OrderGradPPO)
    values = [(parsed[key](1.0), parsed[key](0.5), parsed[key](0.0)) for key in parsed]
    assert values == [pytest.approx(ends) for ends in [(3e-4, 1.5e-4, 0.0), (0.01, 0.005, 0.0), (0.2, 0.1, 0.0)]]
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", n_episodes=4, **parse_hparams(["ent_coef=lin_0.3"], OrderGradREINFORCE)
    )
    model.learn(8)
    assert model.logger.name_to_value["train/ent_coef"] == pytest.approx(0.0)  # the value at the end of training
    with pytest.raises(
        CommandError, match=re.escape("--hparams learning_rate=lin_x: 'lin_x' is not a linear schedule")
    ):
        parse_hparams(["learning_rate=lin_x"], OrderGradPPO)
    with pytest.raises(CommandError, match="lin_nan' is not a linear schedule"):
        parse_hparams(["learning_rate=lin_nan"], OrderGradPPO)
    with pytest.raises(CommandError, match="n_epochs expects an integer, got text"):  # takes no schedule
        parse_hparams(["n_epochs=lin_3"], OrderGradPPO)


@pytest.mark.parametrize(
    "item, message",
    [
        ("clip_range=lin_-0.2", "clip_range must start at a finite number >= 1e-12, got a schedule starting at -0.2"),
        ("clip_range=lin_0", "clip_range must start at a finite number >= 1e-12, got a schedule starting at 0.0"),
        ("learning_rate=lin_-1", "learning_rate must start at a finite number >= 0.0, got a schedule starting at -1.0"),
    ],
)
def test_train_checks_a_linear_schedules_start_like_the_number(item, message, capsys):
    """``lin_<x>`` is refused where the plain ``x`` is (it trained silently, or failed inside torch's Adam)."""
    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--timesteps", "8", "--quiet"]
    assert main([*argv, "--hparams", item]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl train: error: OrderGradPPO: ") and message in err


#: What OrderGradPPO's normalize_advantage annotation accepts.
NORMALIZE_TYPES = "True or False or one of 'group', 'channel', 'running' or None"


@pytest.mark.parametrize("algo", ["reinforce", "recurrent_ppo", "maskable_ppo"])
def test_parse_hparams_lists_the_keys_the_algorithm_takes(algo):
    # OrderGradREINFORCE's "valid keys" listed A2C's gae_lambda, vf_coef, use_rms_prop, rms_prop_eps and SB3's
    # n_steps, which its constructor refuses; given anyway, they reach that refusal, which says what to set instead.
    from ordergrad_rl.zoo.algorithms import algorithm_class

    cls = algorithm_class(algo)
    with pytest.raises(CommandError, match="valid keys: ") as err:
        parse_hparams(["n_episode=8"], cls)
    listed = str(err.value).split("valid keys: ")[1].split(", ")
    assert "learning_rate" in listed and not {"n_steps", "gae_lambda", "vf_coef"} & set(listed)
    assert not {"use_rms_prop", "rms_prop_eps", "clip_range_vf"} & set(listed)
    assert parse_hparams(["gae_lambda=0.9"], cls) == {"gae_lambda": 0.9}  # the constructor's refusal names it
    # OrderGradPPO's critic on rollouts tied at the best return, OrderGradMaskablePPO's too
    assert ("critic_when_tied" in listed) is (algo == "maskable_ppo")
    if algo == "maskable_ppo":
        assert parse_hparams(["critic_when_tied=False"], cls) == {"critic_when_tied": False}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("lr=3", "no hyperparameter 'lr'; valid keys: "),
        ("k=3", "set k with --k"),
        ("tensorboard_log=x", "set tensorboard_log with --tensorboard"),
        ("n_epochs", "expects key=value"),
    ],
)
def test_parse_hparams_errors(item, message):
    from ordergrad_rl.agents import OrderGradREINFORCE

    with pytest.raises(CommandError, match=message) as err:
        parse_hparams([item], OrderGradREINFORCE)
    if item.startswith("lr"):
        assert "learning_rate" in str(err.value) and "n_epochs" not in str(err.value)  # REINFORCE has no epochs


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("learning_rate=1e-2x", "learning_rate expects a number, got text that is not a Python literal"),
        ("learning_rate='0.1'", "learning_rate expects a number, got str '0.1'"),
        ("n_epochs=2.5", "n_epochs expects an integer, got float 2.5"),
        ("batch_size=64.5", "batch_size expects an integer or None, got float 64.5"),
        ("normalize_advantage=yes", f"normalize_advantage expects {NORMALIZE_TYPES}, got text"),
        ("normalize_advantage=1", f"normalize_advantage expects {NORMALIZE_TYPES}, got int 1"),
        ("policy_kwargs=5", "policy_kwargs expects a dict such as {'key': 1} or None, got int 5"),
        ("policy_kwargs=[('net_arch', [8])]", "policy_kwargs expects a dict"),
        ("policy_kwargs={'net_arch': [8]", "policy_kwargs expects a dict such as {'key': 1} or None, got text"),
        ("rollout_buffer_class=EpisodicRolloutBuffer", "rollout_buffer_class expects None, got text"),
    ],
)
def test_parse_hparams_refuses_values_of_the_wrong_type(item, message):
    """Issue 9, defect 1: such values reached the constructor and failed with raw AssertionError/AttributeError.

    The expected type is read from the constructor's annotations (or defaults), not from a list of names."""
    from ordergrad_rl.agents import OrderGradPPO

    with pytest.raises(CommandError, match=re.escape(f"--hparams {item}: OrderGradPPO's {message}")):
        parse_hparams([item], OrderGradPPO)


def test_parse_hparams_reads_types_from_any_constructor():
    class Algo:
        def __init__(self, policy, env, rate: float = 0.1, depth=3, name: str = "a", extra=None) -> None:
            pass

    assert parse_hparams(["rate=1", "depth=4", "name=b", "extra=x"], Algo) == {
        "rate": 1,
        "depth": 4,
        "name": "b",
        "extra": "x",  # no annotation, default None: anything goes
    }
    with pytest.raises(CommandError, match="depth expects an integer"):  # from the default 3
        parse_hparams(["depth=deep"], Algo)


TAILRISK_PPO = ["train", "--algo", "ppo", "--env", "SyntheticTailRisk-v0", "--objective", "cvar0.2", "--quiet"]


def test_train_ppo_without_n_episodes_uses_the_algorithms_default(capsys):
    """Issue 9, defect 1: crashed with "int() argument must be ... not 'NoneType'" unless --n-episodes was given."""
    assert main([*TAILRISK_PPO, "--timesteps", "1", "--hparams", "n_epochs=1"]) == 0  # one rollout, one epoch
    assert "objective cvar0.2@128, 256 episodes per update" in capsys.readouterr().out


def test_train_default_n_envs_is_the_native_batch_on_tailrisk(capsys):
    assert main([*TAILRISK_PPO, "--timesteps", "1", "--hparams", "n_epochs=1"]) == 0
    assert "256 episodes per update on 256 envs" in capsys.readouterr().out


def test_train_constructor_errors_are_usage_errors(capsys):
    assert main([*TAILRISK_PPO, "--timesteps", "1", "--hparams", "advantage=q_critic"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl train: error: OrderGradPPO: ") and "Discrete" in err  # q_critic on a Box
    bandit = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--timesteps", "1"]
    for policy_kwargs in ("{'bogus': 1}", "{'net_arch': 'x'}"):  # well-typed at the top, refused by the policy
        assert main([*bandit, "--quiet", "--hparams", f"policy_kwargs={policy_kwargs}"]) == 2
        assert capsys.readouterr().err.startswith("ordergrad-rl train: error: OrderGradPPO: ")


def test_train_reports_bad_arguments_as_usage_errors(capsys):
    base = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--timesteps", "10", "--quiet"]
    assert main([*base, "--objective", "cvarx"]) == 2
    assert "unknown objective 'cvarx'" in capsys.readouterr().err
    assert main([*base, "--objective", "cvar0.2", "--n-episodes", "8", "--k", "8"]) == 2
    assert "k < n_episodes" in capsys.readouterr().err
    assert main([*base, "--objective", "mean", "--hparams", "clip_range=0.1"]) == 2
    assert "no hyperparameter 'clip_range'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- saved models
@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    """One tiny saved model per supported algorithm, and one of an algorithm of the user's own (``Custom``)."""
    from sb3_contrib import ARS, QRDQN, TQC, TRPO, CrossQ, MaskablePPO, RecurrentPPO
    from stable_baselines3 import A2C, DDPG, DQN, PPO, SAC, TD3
    from stable_baselines3.common.save_util import save_to_zip_file

    from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE

    root = tmp_path_factory.mktemp("models")
    models = {
        "OrderGradPPO": OrderGradPPO("MlpPolicy", "RiskyBandit-v0", n_episodes=4, device="cpu"),
        "OrderGradREINFORCE": OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4, device="cpu"),
        "PPO": PPO("MlpPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, device="cpu"),
        "A2C": A2C("MlpPolicy", "RiskyBandit-v0", device="cpu"),
        "DQN": DQN("MlpPolicy", "RiskyBandit-v0", buffer_size=10, device="cpu"),
        "QRDQN": QRDQN("MlpPolicy", "RiskyBandit-v0", buffer_size=10, device="cpu"),
        "RecurrentPPO": RecurrentPPO("MlpLstmPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, device="cpu"),
        "MaskablePPO": MaskablePPO("MlpPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, device="cpu"),
        "TRPO": TRPO("MlpPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, device="cpu"),
        "ARS": ARS("LinearPolicy", "RiskyBandit-v0", device="cpu"),
        "SAC": SAC("MlpPolicy", "RiskyShortcutNav-v2", buffer_size=10, device="cpu"),
        "TD3": TD3("MlpPolicy", "RiskyShortcutNav-v2", buffer_size=10, device="cpu"),
        "DDPG": DDPG("MlpPolicy", "RiskyShortcutNav-v2", buffer_size=10, device="cpu"),
        "TQC": TQC("MlpPolicy", "RiskyShortcutNav-v2", buffer_size=10, device="cpu"),
        "CrossQ": CrossQ("MlpPolicy", "RiskyShortcutNav-v2", buffer_size=10, device="cpu"),
    }
    for name, model in models.items():
        model.save(root / name)
    save_to_zip_file(
        root / "Custom.zip", data={"learning_rate": 0.1, "my_lab_steps": 3}
    )  # an algorithm of the user's own
    return root


@pytest.mark.parametrize(
    "name",
    ["OrderGradPPO", "OrderGradREINFORCE", "PPO", "A2C", "DQN", "QRDQN", "RecurrentPPO", "MaskablePPO", "TRPO", "ARS",
     "SAC", "TD3", "TQC", "CrossQ"],
)  # fmt: skip
def test_detect_and_load(saved_models, name):
    """SB3's and sb3-contrib's algorithms load: the baselines a user compares against (DQN and others were refused)."""
    assert zoo_models.detect_algorithm(saved_models / f"{name}.zip").name == name
    model, algorithm = zoo_models.load_model(saved_models / name)  # the path without .zip works too
    assert type(model).__name__ == name == algorithm.name


def test_a_ddpg_save_loads_as_td3(saved_models):
    """DDPG is TD3 with one critic and no delay, saved with TD3's policies: TD3's ``load`` acts with it."""
    model, algorithm = zoo_models.load_model(saved_models / "DDPG")
    assert algorithm.name == "TD3" and model.policy_delay == 1


def test_detect_rejects_other_files(saved_models, tmp_path):
    with pytest.raises(CommandError, match="cannot tell which algorithm saved .*Custom.zip; supported: Order"):
        zoo_models.detect_algorithm(saved_models / "Custom.zip")
    (tmp_path / "junk.zip").write_text("not a zip")
    with pytest.raises(CommandError, match="not a model saved by Stable-Baselines3"):
        zoo_models.detect_algorithm(tmp_path / "junk.zip")
    with pytest.raises(CommandError, match="no saved model at"):
        zoo_models.detect_algorithm(tmp_path / "missing")


def test_evaluate_rejects_a_model_of_another_env(saved_models, capsys):
    argv = ["evaluate", str(saved_models / "PPO.zip"), "--env", "SyntheticTailRisk-v0", "--quiet"]
    assert main(argv) == 2
    assert "does not fit SyntheticTailRisk-v0: Observation spaces do not match" in capsys.readouterr().err


def test_evaluate_a_baseline_of_sb3_or_sb3_contrib(saved_models, capsys):
    """A risk profile of a DQN (refused before), and a MaskablePPO on an env without masks is a usage error, not
    sb3-contrib's traceback from inside its evaluation."""
    assert (
        main(["evaluate", str(saved_models / "DQN.zip"), "--env", "RiskyBandit-v0", "--episodes", "4", "--quiet"]) == 0
    )
    assert "cvar_0.2" in capsys.readouterr().out
    assert main(["evaluate", str(saved_models / "MaskablePPO.zip"), "--env", "RiskyBandit-v0", "--quiet"]) == 2
    assert "MaskablePPO acts with the env's action_masks()" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- TensorBoard
def test_read_run_recovers_the_logged_profile_and_histogram(tmp_path):
    from stable_baselines3.common.logger import configure

    from ordergrad_rl.agents import record_risk_profile

    rng = np.random.default_rng(0)
    logger = configure(str(tmp_path / "run"), ["tensorboard"])
    for step, scale in ((1, 5.0), (2, 1.0)):  # the reader must take the last step
        returns = rng.normal(3.0, scale, 500)
        record_risk_profile(logger, "risk", returns)
        logger.dump(step)
    logger.close()
    entry = zoo_compare.read_run(tmp_path / "run")
    assert entry.source == "TensorBoard risk/* at step 2"
    for key, value in risk_profile(returns).items():
        assert entry.profile[key] == pytest.approx(value, rel=1e-6)
    assert entry.counts.sum() == 500 and entry.edges[0] == pytest.approx(returns.min())
    assert entry.edges[-1] == pytest.approx(returns.max())
    levels, quantiles = entry.quantile_function()
    # TensorBoard's buckets are 10% wide: the interpolated quantiles are close, not exact.
    for level in (0.1, 0.5, 0.9):
        assert np.interp(level, levels, quantiles) == pytest.approx(np.quantile(returns, level), abs=0.3)
    # The histogram's CDF re-binned on the figure's shared grid agrees with the exact returns' CDF.
    exact = zoo_compare.Entry(tmp_path, "exact", "", risk_profile(returns), returns=returns)
    grid = np.linspace(returns.min() - 1, returns.max() + 1, 21)
    assert entry.cdf(grid)[[0, -1]].tolist() == [0.0, 1.0]
    np.testing.assert_allclose(entry.cdf(grid), exact.cdf(grid), atol=0.03)


def test_read_run_takes_every_statistic_of_one_step_when_the_last_was_cut_short(tmp_path):
    """A run that crashed while writing a profile has its last step for some keys only: compare printed their values
    beside the step before's (a CVaR_0.05 above the CVaR_0.1) under that earlier step."""
    from stable_baselines3.common.logger import configure
    from torch.utils.tensorboard import SummaryWriter

    from ordergrad_rl.agents import record_risk_profile

    rng = np.random.default_rng(0)
    logger = configure(str(tmp_path / "run"), ["tensorboard"])
    returns = rng.normal(3.0, 1.0, 50)
    record_risk_profile(logger, "eval_risk", returns)
    logger.dump(1)
    logger.close()
    with SummaryWriter(str(tmp_path / "run")) as writer:  # what the crash left of step 2
        writer.add_scalar("eval_risk/cvar_0.05", 99.0, 2)
        writer.add_histogram("eval_risk/episode_returns", np.full(5, 99.0), 2)
    entry = zoo_compare.read_run(tmp_path / "run")
    assert entry.source == "TensorBoard eval_risk/* at step 1"
    assert entry.profile == pytest.approx(risk_profile(returns), rel=1e-6)
    assert entry.counts.sum() == 50 and entry.edges[-1] == pytest.approx(returns.max())


def test_figure_is_named_after_the_inputs():
    """Issue 9, defect 9: both README compare examples wrote results/compare/compare.png."""
    models = [Path("results/tailrisk/models/reinforce_seed0.zip"), Path("results/tailrisk/models/ordergrad_cvar_seed0")]
    assert zoo_compare.figure_name(models) == "compare_reinforce_seed0_vs_ordergrad_cvar_seed0.png"
    assert zoo_compare.figure_name([Path("runs/tailrisk/")]) == "compare_tailrisk.png"
    same_name = [Path("a/PPO_1"), Path("b/PPO_1"), Path("my runs/x.zip")]
    assert zoo_compare.figure_name(same_name) == "compare_a-PPO_1_vs_b-PPO_1_vs_x.png"
    deeper = [Path("exp1/runs/PPO_1"), Path("exp2/runs/PPO_1")]  # was compare_runs-PPO_1_vs_runs-PPO_1.png
    assert zoo_compare.figure_name(deeper) == "compare_exp1-runs-PPO_1_vs_exp2-runs-PPO_1.png"
    many = [Path(f"model_{i}.zip") for i in range(40)]
    long, other = zoo_compare.figure_name(many), zoo_compare.figure_name(many[:-1] + [Path("other.zip")])
    assert len(long) == zoo_compare.MAX_FIGURE_NAME + len(".png") and long != other  # cut, then told apart by a hash
    out = Path("results/compare")
    chosen = argparse.Namespace(entries=models, out=out, figure=Path("figs/mine.png"))
    assert compare.figure_path(chosen) == Path("figs/mine.png")
    default = argparse.Namespace(entries=models, out=out, figure=None)
    assert compare.figure_path(default) == out / "compare_reinforce_seed0_vs_ordergrad_cvar_seed0.png"


@pytest.mark.parametrize(
    "path, method",
    [
        ("models/ordergrad_cvar_seed3.zip", "ordergrad_cvar"),
        ("runs/OrderGradPPO_cvar0.2@128_2", "OrderGradPPO_cvar0.2@128"),
        ("runs/OrderGradPPO_cvar0.2@128/seed0_1", "OrderGradPPO_cvar0.2@128"),
        ("runs/breakout_top9@10_s1_1", "breakout_top9@10"),
        ("runs/tailrisk/reinforce_seed0_1", "reinforce"),
        ("a/PPO_1", "PPO"),
        ("models/cvar.zip", "cvar"),
    ],
)
def test_method_of_drops_seed_and_run_counter(path, method):
    assert zoo_compare.method_of(Path(path)) == method


def test_plot_colours_by_method_with_seeds_as_thin_lines(tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(zoo_compare, "save_figure", lambda fig, path: figures.append(fig) or path)
    rng = np.random.default_rng(0)
    paths = ["tb/cvar/seed0_1", "tb/cvar/seed1_1", "tb/cvar/seed2_1", "tb/mean/seed0_1", "tb/mean/seed1_1", "m/top.zip"]
    entries = [zoo_compare.Entry(Path(p), p, "", {}, returns=rng.normal(i, 1.0, 50)) for i, p in enumerate(paths)]
    zoo_compare.plot(entries, tmp_path / "x.png")
    ax_q, ax_h = figures[0].axes
    lines = [line for line in ax_q.get_lines() if len(line.get_xdata()) == 50]
    colours = [line.get_color() for line in lines]
    assert colours[:3] == ["C0"] * 3 and colours[3:5] == ["C1"] * 2 and colours[5] == "C2"
    assert [line.get_linewidth() for line in lines] == [0.9] * 5 + [1.6]  # seeds thin, a single run not
    legend = [text.get_text() for text in ax_q.get_legend().get_texts()]
    assert legend[:3] == ["cvar (3 runs)", "mean (2 runs)", "m/top.zip"]
    assert legend[3].startswith("u = 0.05 and 0.2: CVaR")  # the dotted reference lines are explained
    assert [text.get_text() for text in ax_h.get_legend().get_texts()] == legend[:3]


def test_expand_log_dir_and_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match="without TensorBoard runs"):
        zoo_compare.expand([tmp_path / "empty"])
    for run in ("b_1", "a_1"):
        (tmp_path / "log" / run).mkdir(parents=True)
        (tmp_path / "log" / run / "events.out.tfevents.1.host").write_bytes(b"")
    assert [p.name for p in zoo_compare.expand([tmp_path / "log"])] == ["a_1", "b_1"]
    (tmp_path / "log" / "method" / "seed0_1").mkdir(parents=True)  # runs of one method under a common parent
    (tmp_path / "log" / "method" / "seed0_1" / "events.out.tfevents.1.host").write_bytes(b"")
    assert [str(p.relative_to(tmp_path / "log")) for p in zoo_compare.expand([tmp_path / "log"])] == [
        "a_1",
        "b_1",
        "method/seed0_1",
    ]


def test_runs_below_a_log_dir_are_named_and_grouped_by_their_path_below_it(tmp_path):
    """compare runs/: rows named as TensorBoard lists the runs (env1/cvar/seed1_1, not a bare seed1_1 when no other
    run shares its name), and the methods of nested log dirs kept apart (env1/cvar and env2/cvar were one "cvar
    (4 runs)" colour), as ``ordergrad-rl dashboard`` groups them."""
    from torch.utils.tensorboard import SummaryWriter

    names = ["env1/cvar/seed0_1", "env1/cvar/seed1_1", "env2/cvar/seed0_1", "env2/mean/seed0_1"]
    for name in names:
        writer = SummaryWriter(str(tmp_path / "runs" / name))
        writer.add_scalar("eval_risk/mean", 1.0, 8)
        writer.close()
    entries = zoo_compare.load_entries([tmp_path / "runs"], None, 1)
    assert [entry.label for entry in entries] == names
    assert [entry.group for entry in entries] == ["env1/cvar", "env1/cvar", "env2/cvar", "env2/mean"]
    # A run given itself keeps its name; two of one name are told apart by the log dir above them.
    (run,) = zoo_compare.load_entries([tmp_path / "runs" / "env1" / "cvar" / "seed1_1"], None, 1)
    assert (run.label, run.group) == ("seed1_1", "cvar")
    seeds = zoo_compare.load_entries([tmp_path / "runs" / "env1" / "cvar"], None, 1)  # the log dir of one method
    assert [(entry.label, entry.group) for entry in seeds] == [("seed0_1", "cvar"), ("seed1_1", "cvar")]
    twice = zoo_compare.load_entries([tmp_path / "runs" / "env1", tmp_path / "runs" / "env2"], None, 1)
    labels = ["env1/cvar/seed0_1", "cvar/seed1_1", "env2/cvar/seed0_1", "mean/seed0_1"]
    assert [entry.label for entry in twice] == labels
    # Runs of one name in log dirs of one name (exp1/runs/PPO_1, exp2/runs/PPO_1) were two rows runs/PPO_1.
    for name in ("exp1/runs/PPO_1", "exp2/runs/PPO_1"):
        shutil.copytree(tmp_path / "runs" / "env1" / "cvar" / "seed0_1", tmp_path / name)
    same = zoo_compare.load_entries([tmp_path / "exp1" / "runs" / "PPO_1", tmp_path / "exp2" / "runs"], None, 1)
    assert [entry.label for entry in same] == ["exp1/runs/PPO_1", "exp2/runs/PPO_1"]


def test_compare_names_the_log_dir_dot_after_the_directory(tmp_path, monkeypatch):
    """cd runs/cvar && ordergrad-rl compare .: the figure was compare_.png and every seed a method of its own."""
    from torch.utils.tensorboard import SummaryWriter

    for seed in (0, 1):
        with SummaryWriter(str(tmp_path / "cvar" / f"seed{seed}_1")) as writer:
            writer.add_scalar("eval_risk/mean", 1.0, 8)
    monkeypatch.chdir(tmp_path / "cvar")
    assert [entry.group for entry in zoo_compare.load_entries([Path(".")], None, 1)] == ["cvar", "cvar"]
    assert zoo_compare.figure_name([Path(".")]) == "compare_cvar.png"
    monkeypatch.chdir(tmp_path / "cvar" / "seed0_1")
    assert zoo_compare.figure_name([Path(".."), Path("../../other.zip")]) == "compare_cvar_vs_other.png"


def test_train_prints_a_tensorboard_command_that_runs_as_pasted(tmp_path, capsys):
    # A log dir with a space: `tensorboard --logdir my runs` gave TensorBoard two arguments (as `dashboard` did).
    argv = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes", "4",
            "--timesteps", "4", "--tensorboard", str(tmp_path / "my runs"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert f"TensorBoard: tensorboard --logdir '{tmp_path / 'my runs'}'\n" in capsys.readouterr().out


def test_train_run_name(tmp_path, capsys):
    argv = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "cvar0.25", "--n-episodes", "8",
            "--timesteps", "8", "--tensorboard", str(tmp_path), "--quiet"]  # fmt: skip
    assert main(argv) == 0 and main([*argv, "--run-name", "cvar/seed0", "--save", str(tmp_path / "model")]) == 0
    out = capsys.readouterr().out
    assert f"TensorBoard run: {tmp_path / 'cvar' / 'seed0_1'}" in out
    assert f"model: {tmp_path / 'model.zip'}\n" in out and (tmp_path / "model.zip").is_file()  # the file written
    runs = sorted(str(p.parent.relative_to(tmp_path)) for p in tmp_path.rglob("events.out.tfevents.*"))
    assert runs == ["OrderGradREINFORCE_cvar0.25@4_1", "cvar/seed0_1"]
    for bad in ("", "/abs", "a/../b", "a//b"):
        with pytest.raises(SystemExit):
            main([*argv, "--run-name", bad])
        assert "--run-name: expected a name or group/name" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- round trip
def test_train_evaluate_compare_round_trip(tmp_path, capsys):
    model, tb = tmp_path / "cvar.zip", tmp_path / "tb"
    argv = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "cvar0.1", "--n-episodes", "16",
            "--k", "8", "--timesteps", "96", "--tensorboard", str(tb), "--save", str(model), "--eval-env",
            "RiskyBandit-v0", "--eval-freq", "32", "--eval-episodes", "20", "--quiet", "--hparams",
            "learning_rate=0.05", "policy_kwargs={'net_arch': []}"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "objective cvar0.1@8, 16 episodes per update on 1 env" in out
    assert "last evaluation (RiskyBandit-v0)" in out and "cvar_0.1" in out
    from ordergrad_rl.agents import OrderGradREINFORCE

    loaded = OrderGradREINFORCE.load(model)
    assert loaded.learning_rate == 0.05 and loaded.k == 8
    assert len(loaded.policy.mlp_extractor.policy_net) == 0  # policy_kwargs reached the policy
    (run,) = tb.iterdir()

    assert main(["evaluate", str(model), "--env", "RiskyBandit-v0", "--episodes", "30", "--json",
                 str(tmp_path / "eval.json"), "--quiet"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.startswith(f"OrderGradREINFORCE model {model} on RiskyBandit-v0: 30 episodes, stochastic policy")
    evaluation = json.loads((tmp_path / "eval.json").read_text())
    assert len(evaluation["returns"]) == 30 and evaluation["algorithm"] == "OrderGradREINFORCE"
    assert evaluation["profile"] == pytest.approx(risk_profile(evaluation["returns"]))

    (tmp_path / "cvar" / "args.yml").unlink()  # as SB3's model.save leaves a model: no env recorded beside it
    assert main(["compare", str(model)]) == 2
    assert "give --env" in capsys.readouterr().err
    argv = ["compare", str(model), str(tb), "--env", "RiskyBandit-v0", "--episodes", "40", "--out",
            str(tmp_path / "cmp"), "--json", str(tmp_path / "cmp.json"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 2 and "cvar_0.2" in rows[0]  # header, rule, the model, the log dir's run
    assert f"{run.name}: TensorBoard eval_risk/* at step 96" in out
    assert (tmp_path / "cmp" / "compare_cvar_vs_tb.png").stat().st_size > 20_000  # named after the inputs
    entries = json.loads((tmp_path / "cmp.json").read_text())["entries"]
    assert [e["label"] for e in entries] == ["cvar", run.name]
    assert len(entries[0]["returns"]) == 40 and "returns" not in entries[1]


def test_compare_labels_training_returns_beside_evaluations(tmp_path, capsys):
    base = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes", "4",
            "--timesteps", "8", "--quiet", "--tensorboard", str(tmp_path / "runs")]  # fmt: skip
    assert main([*base, "--run-name", "evaluated", "--eval-env", "RiskyBandit-v0", "--eval-episodes", "5"]) == 0
    assert main([*base, "--run-name", "trained"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "runs" / "evaluated_1"), str(tmp_path / "runs" / "trained_1"),
                 "--out", str(tmp_path)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "trained_1 (training)" in out and "evaluated_1 (training)" not in out
    assert "note: 1 of 2 entries have no evaluation returns" in out
    assert main(["compare", str(tmp_path / "runs"), "--figure", str(tmp_path / "noext")]) == 0
    assert f"figure: {tmp_path / 'noext.png'}\n" in capsys.readouterr().out  # the file matplotlib wrote
    assert (tmp_path / "noext.png").is_file()


def test_compare_skips_runs_of_other_agents_below_a_log_dir(tmp_path, capsys):
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "mixed"
    assert main(["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes",
                 "4", "--timesteps", "8", "--quiet", "--tensorboard", str(logdir / "og")]) == 0  # fmt: skip
    with SummaryWriter(str(logdir / "sb3" / "PPO_2")) as writer:  # an SB3 run: no risk/* scalars
        writer.add_scalar("rollout/ep_rew_mean", 1.0, 1)
    capsys.readouterr()
    assert main(["compare", str(logdir), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert f"note: skipping {logdir / 'sb3' / 'PPO_2'} has no eval_risk/* or risk/* scalars" in out
    assert "OrderGradREINFORCE_mean_1 (training)" in out
    assert main(["compare", str(logdir / "sb3" / "PPO_2"), "--out", str(tmp_path / "cmp")]) == 2  # named: an error
    assert main(["compare", str(logdir / "sb3"), "--out", str(tmp_path / "cmp")]) == 2
    assert "nothing to compare: no run below the arguments" in capsys.readouterr().err


def test_train_reports_an_objective_channel_the_env_lacks_as_a_usage_error(capsys):
    """The rollout finds it (the env's info keys are known only then): an error naming the objective, no traceback."""
    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "reward=top2@4 + 0.4*length=bot2@4",
            "--n-episodes", "8", "--timesteps", "8", "--quiet"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl train: error: --objective reward=top2@4 + 0.4*length=bot2@4: ")
    assert "objective channels ['length'] never appeared in the env's step info" in err


def test_train_q_critic_reports_its_training_episodes_and_saves(tmp_path, capsys):
    """``--hparams advantage=q_critic`` trained, then crashed with "'RolloutBuffer' object has no attribute
    'episode_returns'" before saving (and announced "None episodes per update"): SB3's buffer keeps steps."""
    from ordergrad_rl.agents import OrderGradQCriticPPO

    argv = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "max", "--k", "4", "--timesteps", "64",
            "--hparams", "advantage=q_critic", "n_steps=64", "batch_size=64", "n_epochs=1",
            "--save", str(tmp_path / "qc"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "objective max@4, 64 steps per env per update on 1 env" in out
    assert "training episodes |" in out and "cvar_0.2" in out
    assert isinstance(OrderGradQCriticPPO.load(tmp_path / "qc.zip"), OrderGradQCriticPPO)


def test_train_announces_the_rollout_a_small_budget_trains_with(tmp_path, capsys):
    """``train`` printed the constructor's default size (lava: "objective cvar0.2@128, 256 episodes per update") and
    then trained at the size its first ``learn`` call took for the small budget (16 episodes, cvar0.2@8)."""
    from ordergrad_rl.agents import OrderGradPPO

    argv = ["train", "--algo", "ppo", "--env", "RiskyLavaGrid-v0", "--objective", "cvar0.2", "--timesteps", "1",
            "--hparams", "n_epochs=1", "--save", str(tmp_path / "lava"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert "objective cvar0.2@8, 16 episodes per update on 1 env" in capsys.readouterr().out
    model = OrderGradPPO.load(tmp_path / "lava.zip")
    assert (model.n_episodes, model.k) == (16, 8)


# ---------------------------------------------------------------------------------------------------- env kwargs
LAVA = ["train", "--algo", "ppo", "--env", "RiskyLavaGrid-v0", "--objective", "cvar0.25", "--n-episodes", "8",
        "--hparams", "n_epochs=1", "--quiet"]  # fmt: skip


def test_train_env_kwargs_make_the_training_and_evaluation_envs_and_reach_hparams(tmp_path, capsys):
    """``train`` had no --env-kwargs (``evaluate`` had): an env could not be given arguments or a time limit.
    max_episode_steps is gym.make's, taken by both commands alike."""
    from ordergrad_rl.agents.common.env_util import episode_limit
    from ordergrad_rl.zoo.dashboards import read_run_data
    from ordergrad_rl.zoo.training import TrainSettings, build_model, eval_callback

    argv = [*LAVA, "--timesteps", "40", "--env-kwargs", "max_episode_steps=5", "--eval-env", "RiskyLavaGrid-v0",
            "--eval-freq", "40", "--eval-episodes", "4", "--tensorboard", str(tmp_path),
            "--save", str(tmp_path / "m")]  # fmt: skip
    assert main(argv) == 0
    assert "OrderGradPPO on RiskyLavaGrid-v0 (max_episode_steps=5): " in capsys.readouterr().out
    (run,) = [p.parent for p in tmp_path.rglob("events.out.tfevents.*")]
    hparams = read_run_data(run, tmp_path).hparams
    assert hparams["env"] == "RiskyLavaGrid-v0" and hparams["env_kwargs"] == "max_episode_steps=5"
    assert main(["evaluate", str(tmp_path / "m.zip"), "--env", "RiskyLavaGrid-v0", "--episodes", "6", "--env-kwargs",
                 "max_episode_steps=5", "--json", str(tmp_path / "e.json"), "--quiet"]) == 0  # fmt: skip
    evaluation = json.loads((tmp_path / "e.json").read_text())
    assert evaluation["env_kwargs"] == {"max_episode_steps": 5} and max(evaluation["lengths"]) <= 5

    settings = TrainSettings("ppo", "RiskyLavaGrid-v0", "mean", n_episodes=4, eval_env="RiskyLavaGrid-v0",
                             env_kwargs={"max_episode_steps": 5})  # fmt: skip
    model = build_model(settings)
    assert episode_limit(model.env) == 5 and episode_limit(eval_callback(settings, model).eval_env) == 5
    settings.eval_env_kwargs = {}  # --eval-env-kwargs with nothing after it: the evaluation env as registered
    assert episode_limit(eval_callback(settings, model).eval_env) == 30
    settings.eval_env_kwargs = {"max_episode_steps": 7}
    assert episode_limit(eval_callback(settings, model).eval_env) == 7
    # An evaluation env of another id (a deployment variant) keeps its registered arguments.
    from ordergrad_rl.agents.common.env_util import env_arguments

    settings = TrainSettings("ppo", "SyntheticTailRisk-v0", "mean", n_episodes=4, eval_env="SyntheticTailRiskDeploy-v0",
                             eval_episodes=4, env_kwargs={"p": 0.5})  # fmt: skip
    model = build_model(settings)
    assert env_arguments(model.env) == {"p": 0.5} and env_arguments(eval_callback(settings, model).eval_env) == {}
    settings.eval_env_kwargs = {"p": 0.5}
    assert env_arguments(eval_callback(settings, model).eval_env) == {"p": 0.5}
    # Without --env-kwargs the algorithm gets the id, as before, and HParams no env_kwargs column.
    assert "env_kwargs" not in build_model(TrainSettings("ppo", "RiskyLavaGrid-v0", "mean", n_episodes=4)).hparams()


def test_train_env_kwargs_on_a_native_batch_and_as_registered_train_as_the_id(tmp_path):
    import torch as th

    from ordergrad_rl.agents import OrderGradPPO

    def trained(name: str, *extra: str) -> OrderGradPPO:
        argv = ["train", "--algo", "ppo", "--env", "SyntheticTailRisk-v0", "--objective", "cvar0.25", "--n-episodes",
                "8", "--timesteps", "1", "--hparams", "n_epochs=1", "--quiet",
                "--save", str(tmp_path / name), *extra]  # fmt: skip
        assert main(argv) == 0
        return OrderGradPPO.load(tmp_path / f"{name}.zip")

    plain, registered = trained("plain"), trained("registered", "--env-kwargs", "p=0.1")  # p=0.1 is registered
    assert plain.n_envs == registered.n_envs == 8  # still the native batch of n_episodes envs
    for p, q in zip(plain.policy.parameters(), registered.policy.parameters(), strict=True):
        assert th.equal(p, q)
    from ordergrad_rl.zoo.training import TrainSettings, build_model

    model = build_model(TrainSettings("ppo", "SyntheticTailRisk-v0", "cvar0.25", n_episodes=8, env_kwargs={"p": 0.5}))
    assert model.n_envs == 8 and model.hparams()["env_kwargs"] == "p=0.5"
    limited = build_model(
        TrainSettings("ppo", "SyntheticTailRisk-v0", "cvar0.25", n_episodes=8, env_kwargs={"max_episode_steps": 5})
    )
    assert limited.learn(1).rollout_buffer.episode_lengths.max() == 5  # a TimeLimit the batch does not have


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_env_kwargs_the_env_does_not_take_are_named(command, saved_models, capsys):
    given = {"train": [*LAVA, "--timesteps", "1"], "evaluate": ["evaluate", str(saved_models / "OrderGradPPO.zip"),
             "--env", "RiskyBandit-v0", "--quiet"]}[command]  # fmt: skip
    env = "RiskyLavaGrid-v0" if command == "train" else "RiskyBandit-v0"
    assert main([*given, "--env-kwargs", "max_episode_step=5"]) == 2
    err = capsys.readouterr().err
    assert f"--env-kwargs: {env} takes no argument 'max_episode_step' (did you mean max_episode_steps?)" in err
    assert main([*given, "--env-kwargs", "max_episode_steps=0"]) == 2  # gym.make's own check
    assert "--env-kwargs: cannot make" in capsys.readouterr().err
    assert main([*given, "--env-kwargs", "max_episode_steps=5", "max_episode_steps=6"]) == 2
    assert "--env-kwargs: max_episode_steps is given twice" in capsys.readouterr().err


def test_an_env_argument_value_the_env_looks_up_in_vain_is_a_usage_error(capsys):
    """FrozenLake-v1 looks its map_name up in its maps: --env-kwargs map_name=7x7 ended train (evaluate, compare) with
    the KeyError's traceback; it is named as the other refusals of an argument are. Without arguments, an env's own
    KeyError keeps its traceback."""
    import gymnasium as gym

    argv = ["train", "--algo", "ppo", "--env", "FrozenLake-v1", "--objective", "mean", "--timesteps", "8", "--quiet"]
    assert main([*argv, "--env-kwargs", "map_name=7x7"]) == 2
    err = capsys.readouterr().err
    assert "--env-kwargs: cannot make FrozenLake-v1 with env arguments {'map_name': '7x7'}: KeyError '7x7'" in err

    class Broken(gym.Env):
        def __init__(self) -> None:
            raise KeyError("a bug of the env's")

    from ordergrad_rl.zoo.models import make_env

    spec = gym.envs.registration.EnvSpec("BrokenKeys-v0", entry_point=Broken)
    gym.registry["BrokenKeys-v0"] = spec
    try:
        with pytest.raises(KeyError, match="a bug of the env's"):
            make_env("BrokenKeys-v0", 1, 0, None)
    finally:
        del gym.registry["BrokenKeys-v0"]


def test_env_kwargs_an_env_with_kwargs_refuses_are_named_with_the_closest(monkeypatch, capsys):
    """MuJoCo's envs take **kwargs, which they pass to MujocoEnv: --env-kwargs healthy_rewad=1 on Hopper-v5 (or
    gym.make's max_episode_step=5) got only Gymnasium's "MujocoEnv.__init__() got an unexpected keyword argument",
    where every other env's typo is named with the argument meant. The bases' arguments give the hint; the env still
    refuses."""
    import gymnasium as gym
    from gymnasium import spaces

    class Base(gym.Env):  # as MujocoEnv: the arguments its subclasses pass on
        observation_space, action_space = spaces.Box(-1.0, 1.0, (1,)), spaces.Discrete(2)

        def __init__(self, frame_skip: int = 4) -> None:
            self.frame_skip = frame_skip

    class Hopping(Base):  # as HopperEnv
        def __init__(self, healthy_reward: float = 1.0, **kwargs) -> None:
            super().__init__(**kwargs)

    monkeypatch.setitem(gym.registry, "Hopping-v0", gym.envs.registration.EnvSpec("Hopping-v0", entry_point=Hopping))
    argv = ["train", "--algo", "ppo", "--env", "Hopping-v0", "--objective", "mean", "--timesteps", "1", "--quiet"]
    for key, meant in [("healthy_rewad", "healthy_reward"), ("frame_skp", "frame_skip"),
                       ("max_episode_step", "max_episode_steps")]:  # fmt: skip
        assert main([*argv, "--env-kwargs", f"{key}=5"]) == 2
        err = capsys.readouterr().err
        assert f"--env-kwargs: cannot make Hopping-v0 with env arguments {{'{key}': 5}}: " in err
        assert err.rstrip().endswith(f"(did you mean {meant}?)"), err
    assert main([*argv, "--env-kwargs", "zzz=5"]) == 2
    err = capsys.readouterr().err
    assert "unexpected keyword argument 'zzz'" in err and "did you mean" not in err


def test_train_checks_its_new_options_before_training(tmp_path, capsys):
    bandit = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--timesteps", "8", "--quiet"]
    for extra, message in [
        ([], "give --objective"),
        (["--objective", "mean", "--eval-env-kwargs", "p=0.2"], "--eval-env-kwargs is for --eval-env"),
        (["--objective", "mean", "--save-freq", "4"], "--save-freq saves checkpoints beside --save PATH"),
        (["--objective", "mean", "--eval-env", "RiskyBandit-v0", "--eval-env-kwargs", "q=1"],
         "--eval-env-kwargs: RiskyBandit-v0 takes no argument 'q'"),
    ]:  # fmt: skip
        assert main([*bandit, *extra]) == 2
        assert message in capsys.readouterr().err


def test_a_policy_name_the_algorithm_lacks_is_named_with_its_policies(tmp_path, capsys):
    """--policy MlpPolcy (or an entry's policy: MlpLstmPolicy for ppo) got SB3's "OrderGradPPO: Policy MlpPolcy
    unknown": the option or the entry is named, with the policy meant and the algorithm's policies."""
    argv = ["train", "--env", "CartPole-v1", "--objective", "mean", "--timesteps", "8", "--quiet"]
    assert main([*argv, "--algo", "ppo", "--policy", "MlpPolcy"]) == 2
    assert (
        "--policy: OrderGradPPO has no policy 'MlpPolcy' (did you mean MlpPolicy?); its policies: MlpPolicy, "
        "CnnPolicy, MultiInputPolicy"
    ) in capsys.readouterr().err
    assert main([*argv, "--algo", "recurrent_ppo", "--policy", "MlpPolicy"]) == 2
    assert "OrderGradRecurrentPPO has no policy 'MlpPolicy' (did you mean MlpLstmPolicy?)" in capsys.readouterr().err
    (tmp_path / "conf.yml").write_text("CartPole-v1:\n  policy: MlpLstmPolicy\n")
    assert main([*argv, "--algo", "ppo", "--conf-file", str(tmp_path / "conf.yml")]) == 2
    assert f"{tmp_path / 'conf.yml'}: CartPole-v1: policy: OrderGradPPO has no policy 'MlpLstmPolicy'" in (
        capsys.readouterr().err
    )


# ---------------------------------------------------------------------------------------------------- going on
def test_train_goes_on_from_a_trained_agent_in_its_tensorboard_run(tmp_path, capsys):
    """rl-zoo3's -i/--trained-agent: the saved model trains --timesteps more steps, keeping its objective,
    hyperparameters and num_timesteps, logging into the same TensorBoard run, that of its --run-name too (it logged
    into a new OrderGradPPO_cvar0.25@4_0 beside lava/seed0_1); --hparams change hyperparameters."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ordergrad_rl.agents import OrderGradPPO

    base = ["train", "--algo", "ppo", "--env", "RiskyLavaGrid-v0", "--tensorboard", str(tmp_path), "--quiet",
            "--env-kwargs", "max_episode_steps=10"]  # fmt: skip
    assert main([*base, "--objective", "cvar0.25", "--n-episodes", "8", "--timesteps", "80", "--run-name",
                 "lava/seed0", "--hparams", "n_epochs=1", "--save", str(tmp_path / "first")]) == 0  # fmt: skip
    first = OrderGradPPO.load(tmp_path / "first.zip")
    # rl-zoo3's -i needs --algo and --env again; the save has them (--algo and --env given are checked against it).
    argv = ["train", "--tensorboard", str(tmp_path), "--quiet", "-i", str(tmp_path / "first.zip"), "--timesteps",
            "80", "--hparams", "learning_rate=0.01", "--save", str(tmp_path / "more"), "--save-freq", "40"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"going on from {tmp_path / 'first.zip'} at {first.num_timesteps} timesteps" in out
    more = OrderGradPPO.load(tmp_path / "more.zip")
    assert more.num_timesteps >= first.num_timesteps + 80 and more.objective_spec == first.objective_spec
    assert (more.n_episodes, more.n_epochs, more.learning_rate) == (8, 1, 0.01)
    (run,) = {p.parent for p in tmp_path.rglob("events.out.tfevents.*")}  # one run, logged by both commands
    assert run == tmp_path / "lava" / "seed0_1"
    accumulator = EventAccumulator(str(run))
    accumulator.Reload()
    steps = [event.step for event in accumulator.Scalars("risk/mean")]
    assert min(steps) <= first.num_timesteps < max(steps) == more.num_timesteps
    checkpoints = sorted(tmp_path.glob("more_*_steps.zip"))
    assert checkpoints and all(first.num_timesteps < int(p.stem.split("_")[1]) for p in checkpoints)


def test_train_trained_agent_says_in_its_words_that_its_schedules_start_again(tmp_path, capsys):
    """Every -i of a run that ran to its end printed the agents' warning about learn(reset_num_timesteps=False), whose
    advice (one learn call, a callback) is for a Python program: the command says it in its own words, once."""
    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "cvar0.25", "--n-episodes", "8",
            "--timesteps", "16", "--quiet", "--hparams", "learning_rate=lin_0.001"]  # fmt: skip
    assert main([*argv, "--save", str(tmp_path / "first")]) == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["train", "-i", str(tmp_path / "first.zip"), "--timesteps", "16", "--quiet"]) == 0
    texts = [str(warning.message) for warning in caught]
    (said,) = [text for text in texts if text.startswith("--trained-agent: ")]
    assert said.startswith("--trained-agent: its run took its schedules (learning_rate, ")
    assert "over these 16 timesteps they go from progress_remaining 0.5 to 0 again" in said
    assert not [text for text in texts if "after a learn call that ran to its end" in text]


def test_train_save_into_a_new_folder_says_nothing_of_it(tmp_path):
    """--save models/new/bandit printed SB3's "warning: Path 'models/new' does not exist. Will create it." on every
    first save into a folder: the command creates it (its check of --save said it can)."""
    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes", "4",
            "--timesteps", "8", "--quiet", "--save", str(tmp_path / "models" / "new" / "bandit")]  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0
    assert not [warning for warning in caught if "does not exist" in str(warning.message)]
    assert (tmp_path / "models" / "new" / "bandit.zip").is_file()


def test_train_trained_agent_errors_are_usage_errors(tmp_path, saved_models, capsys):
    model = str(saved_models / "OrderGradPPO.zip")
    bandit = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--quiet", "-i", model]
    for extra, message in [
        ([], "give --timesteps with --trained-agent"),
        (["--timesteps", "8", "--objective", "mean", "--k", "2"], "--objective, --k cannot change a --trained-agent"),
        (["--timesteps", "8", "--hparams", "n_epochs=-1"], "n_epochs must be an integer >= 1, got -1"),
        (["--timesteps", "8", "--algo", "reinforce"], "was saved by OrderGradPPO, not OrderGradREINFORCE"),
        (["--timesteps", "8", "--env", "CartPole-v1"], "Observation spaces do not match"),
    ]:
        assert main([*bandit, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("ordergrad-rl train: error: ") and message in err
    assert main([*bandit[:-1], str(tmp_path / "none.zip"), "--timesteps", "8"]) == 2
    assert "no saved model at" in capsys.readouterr().err
    # Without -i, --algo and --env are required (argparse required them even with -i, whose save has them).
    assert main(["train", "--algo", "ppo", "--objective", "mean", "--timesteps", "8"]) == 2
    assert "give --env (without --trained-agent, whose save has them)" in capsys.readouterr().err
    for name, message in [
        ("PPO", "was saved by PPO, which train does not train: it trains OrderGradPPO, "),
        ("OrderGradPPO", "give --env: no args.yml beside --trained-agent"),  # SB3's model.save: no env recorded
    ]:
        assert main(["train", "-i", str(saved_models / f"{name}.zip"), "--timesteps", "8", "--quiet"]) == 2
        assert message in capsys.readouterr().err


def test_train_save_freq_saves_checkpoints_beside_the_model(tmp_path, capsys):
    """rl-zoo3's --save-freq (SB3's CheckpointCallback), counted in env steps as --eval-freq is, on 2 envs too."""
    from ordergrad_rl.agents import OrderGradPPO

    argv = [*LAVA, "--timesteps", "100", "--n-envs", "2", "--save", str(tmp_path / "lava"), "--save-freq", "40"]
    assert main(argv) == 0
    steps = sorted(int(p.stem.split("_")[1]) for p in tmp_path.glob("lava_*_steps.zip"))
    final = OrderGradPPO.load(tmp_path / "lava.zip")
    assert steps == [40 * i for i in range(1, len(steps) + 1)] and steps[-1] <= final.num_timesteps < steps[-1] + 40
    assert OrderGradPPO.load(tmp_path / f"lava_{steps[0]}_steps.zip").num_timesteps == steps[0]


def test_train_vec_env_subproc_trains_as_dummy_does(tmp_path, capsys):
    """rl-zoo3's --vec-env subproc: SB3's SubprocVecEnv for the training env (and a --trained-agent's), the same
    numbers as the default for the same seed on float32 rewards (CartPole); this package's ids reach the forkserver
    workers, which have not imported ordergrad_rl (pytest is the main module here); a native batch is refused."""
    import torch
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from ordergrad_rl.agents import OrderGradPPO
    from ordergrad_rl.zoo.training import TrainSettings, load_trained_agent

    base = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "cvar0.5", "--n-episodes", "4",
            "--n-envs", "2", "--timesteps", "300", "--hparams", "n_epochs=1", "--quiet"]  # fmt: skip
    for vec_env in ("dummy", "subproc"):
        assert main([*base, "--vec-env", vec_env, "--save", str(tmp_path / vec_env)]) == 0
    dummy, subproc = (OrderGradPPO.load(tmp_path / f"{name}.zip").policy.state_dict() for name in ("dummy", "subproc"))
    assert all(torch.equal(dummy[key], subproc[key]) for key in dummy)
    settings = TrainSettings("ppo", "RiskyBandit-v0", "mean", vec_env="subproc")
    bandit = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-envs", "2",
              "--timesteps", "40", "--vec-env", "subproc", "--quiet"]  # fmt: skip
    assert main([*bandit, "--save", str(tmp_path / "bandit")]) == 0
    model = load_trained_agent(settings, tmp_path / "bandit.zip")
    assert isinstance(model.get_env(), SubprocVecEnv) and model.n_envs == 2
    model.learn(8, reset_num_timesteps=False)
    model.get_env().close()
    capsys.readouterr()
    assert main(["train", "--algo", "ppo", "--env", "SyntheticTailRisk-v0", "--objective", "mean", "--timesteps", "8",
                 "--vec-env", "subproc", "--quiet"]) == 2  # fmt: skip
    assert "--vec-env subproc: SyntheticTailRisk-v0 runs all its envs as one NumPy batch" in capsys.readouterr().err


def test_train_trained_agent_keeps_its_runs_seed(tmp_path, capsys):
    """-i reseeded every continued run with --seed's default 0: runs of seeds 1, 2, 3 went on drawing the same env
    streams. It keeps the seed of its run's args.yml now, unless --seed is given."""
    import yaml

    first = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--timesteps", "16"]
    assert main([*first, "--seed", "3", "--quiet", "--save", str(tmp_path / "first")]) == 0
    capsys.readouterr()
    more = ["train", "-i", str(tmp_path / "first.zip"), "--timesteps", "16", "--quiet"]
    assert main([*more, "--save", str(tmp_path / "more")]) == 0
    assert "with its run's --seed 3\n" in capsys.readouterr().out
    assert yaml.safe_load((tmp_path / "more" / "args.yml").read_text())["seed"] == 3
    assert main([*more, "--seed", "5", "--save", str(tmp_path / "given")]) == 0
    assert "with its run's" not in capsys.readouterr().out
    assert yaml.safe_load((tmp_path / "given" / "args.yml").read_text())["seed"] == 5
    assert main([*first, "--quiet", "--save", str(tmp_path / "default")]) == 0  # a new run: seed 0
    assert yaml.safe_load((tmp_path / "default" / "args.yml").read_text())["seed"] == 0


def test_train_trained_agent_keeps_its_runs_eval_env_and_vec_env(tmp_path, capsys):
    """-i kept the saved run's --algo, --env, --env-kwargs and --run-name, but went on without its --eval-env and in
    DummyVecEnv, whatever the run had. args.yml records them now (rl-zoo3's keys, and eval_env), and -i goes on with
    them unless they are given; --eval-env none turns the evaluation off."""
    import yaml

    first = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-envs", "2",
             "--timesteps", "16", "--vec-env", "subproc", "--eval-env", "RiskyBandit-v0", "--eval-env-kwargs",
             "max_episode_steps=5", "--eval-freq", "8", "--eval-episodes", "3", "--quiet"]  # fmt: skip
    assert main([*first, "--save", str(tmp_path / "first")]) == 0
    kept = {"eval_env": "RiskyBandit-v0", "eval_env_kwargs": {"max_episode_steps": 5}, "eval_episodes": 3,
            "eval_freq": 8, "vec_env": "subproc"}  # fmt: skip
    assert yaml.safe_load((tmp_path / "first" / "args.yml").read_text()).items() >= kept.items()
    capsys.readouterr()
    more = ["train", "-i", str(tmp_path / "first.zip"), "--timesteps", "16", "--quiet"]
    assert main([*more, "--save", str(tmp_path / "more")]) == 0
    out = capsys.readouterr().out
    assert (
        "at 16 timesteps, with its run's --vec-env subproc --eval-env RiskyBandit-v0 --eval-freq 8 --eval-episodes 3 "
        "--eval-env-kwargs max_episode_steps=5\n"
    ) in out
    assert "last evaluation (RiskyBandit-v0)" in out
    assert yaml.safe_load((tmp_path / "more" / "args.yml").read_text()).items() >= kept.items()
    # Its --eval-env given again keeps its arguments; the command line wins: another VecEnv, eval env arguments, or
    # no evaluation.
    assert main([*more, "--eval-env", "RiskyBandit-v0", "--vec-env", "dummy"]) == 0
    assert "--eval-episodes 3 --eval-env-kwargs max_episode_steps=5\n" in capsys.readouterr().out
    given = ["--vec-env", "dummy", "--eval-env-kwargs", "max_episode_steps=2", "--eval-episodes", "4"]
    assert main([*more, *given, "--save", str(tmp_path / "given")]) == 0
    changed = {**kept, "vec_env": "dummy", "eval_env_kwargs": {"max_episode_steps": 2}, "eval_episodes": 4}
    assert yaml.safe_load((tmp_path / "given" / "args.yml").read_text()).items() >= changed.items()
    capsys.readouterr()
    assert main([*more, "--eval-env", "none", "--vec-env", "dummy", "--save", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "last evaluation" not in out and "with its run's" not in out
    assert yaml.safe_load((tmp_path / "none" / "args.yml").read_text())["eval_env"] is None
    assert main([*more, "--eval-freq", "-1", "--vec-env", "dummy"]) == 0  # rl-zoo3's "no evaluation" alike
    assert "last evaluation" not in capsys.readouterr().out
    assert main(["train", "-i", str(tmp_path / "none.zip"), "--timesteps", "16", "--quiet"]) == 0
    assert "with its run's" not in capsys.readouterr().out  # its defaults (dummy) change nothing: not listed
    # What the file gives that cannot be used is named with the file, not as an option the user did not give.
    arguments = tmp_path / "first" / "args.yml"
    text = arguments.read_text()
    arguments.write_text(text.replace("max_episode_steps: 5", "max_episode_step: 5"))
    assert main(more) == 2
    assert f"{arguments}: eval_env_kwargs: RiskyBandit-v0 takes no argument 'max_episode_step'" in (
        capsys.readouterr().err
    )
    arguments.write_text(text.replace("vec_env: subproc", "vec_env: forkserver"))
    assert main(more) == 2
    assert f"{arguments}: vec_env: expected one of dummy, subproc, got 'forkserver'" in capsys.readouterr().err


def test_train_evaluates_long_episodes_on_several_envs_as_often_as_they_cost():
    """--eval-env evaluated 100 episodes every 10,000 steps on one env, whatever the episodes' length: on
    MountainCarContinuous-v0's 999-step episodes 10 evaluation steps per training step, one policy call each (97 s of
    a 30,000-step run beside 16 s of training). It evaluates on evaluate's envs (up to 8) and, by default, every
    eval_episodes * the episode limit steps where that is more than 10,000; a frequency given is obeyed, and short
    episodes keep 10,000."""
    from ordergrad_rl.zoo.training import TrainSettings, build_model, eval_callback

    def evaluation(env: str, **given) -> tuple[int, int]:
        settings = TrainSettings("ppo", env, "cvar0.2", n_episodes=4, eval_env=env, **given)
        model = build_model(settings)
        callback = eval_callback(settings, model)
        return callback.eval_env.num_envs, callback.eval_freq * model.n_envs

    assert evaluation("MountainCarContinuous-v0") == (8, 99_900)
    assert evaluation("MountainCarContinuous-v0", eval_episodes=5) == (5, 10_000)
    assert evaluation("MountainCarContinuous-v0", eval_freq=10_000) == (8, 10_000)
    assert evaluation("RiskyLavaGrid-v0") == (8, 10_000)  # 30-step episodes
    assert evaluation("SyntheticTailRisk-v0") == (100, 10_000)  # a native batch: all at once, as before


def test_train_records_the_eval_freq_it_evaluated_at(tmp_path, capsys):
    """The default frequency depends on the eval env's episode limit: train says which it evaluates at, and
    args.yml records it, which -i goes on with."""
    import yaml

    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes", "2",
            "--timesteps", "2", "--eval-env", "RiskyBandit-v0", "--eval-env-kwargs", "max_episode_steps=300",
            "--eval-episodes", "50", "--quiet", "--save", str(tmp_path / "first")]  # fmt: skip
    assert main(argv) == 0
    assert "evaluating 50 episodes of RiskyBandit-v0 every 15000 steps and at the end, on 8 envs\n" in (
        capsys.readouterr().out
    )
    assert yaml.safe_load((tmp_path / "first" / "args.yml").read_text())["eval_freq"] == 15_000
    assert main(["train", "-i", str(tmp_path / "first.zip"), "--timesteps", "2", "--quiet"]) == 0
    assert "--eval-freq 15000" in capsys.readouterr().out


def test_train_trained_agent_of_a_run_without_evaluation_takes_the_default_eval_freq(tmp_path, capsys):
    """An args.yml written before the default frequency followed the episode limit records eval_freq: 10000 (then
    every run's default) also for a run without --eval-env; -i --eval-env of such a run evaluated every 10,000 steps
    as "its run's", not at the default of its eval env's episodes. A run that evaluated keeps its frequency."""
    import yaml

    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--n-episodes", "2",
            "--timesteps", "2", "--quiet", "--save", str(tmp_path / "first")]  # fmt: skip
    assert main(argv) == 0
    arguments = tmp_path / "first" / "args.yml"
    saved = yaml.safe_load(arguments.read_text())
    assert saved["eval_env"] is None
    arguments.write_text(yaml.safe_dump(saved | {"eval_freq": 10_000}))  # as written before 2026-12-07
    capsys.readouterr()
    more = ["train", "-i", str(tmp_path / "first.zip"), "--timesteps", "2", "--quiet", "--eval-env", "RiskyBandit-v0",
            "--eval-env-kwargs", "max_episode_steps=300", "--eval-episodes", "50"]  # fmt: skip
    assert main(more) == 0
    out = capsys.readouterr().out
    assert "every 15000 steps" in out and "--eval-freq" not in out
    arguments.write_text(yaml.safe_dump(saved | {"eval_env": "RiskyBandit-v0", "eval_freq": 10_000}))
    assert main(more) == 0
    assert "with its run's --eval-freq 10000" in capsys.readouterr().out


def test_train_closes_its_envs_as_rl_zoo3_does(monkeypatch):
    """--vec-env subproc's workers (and the eval env) are closed when the run ends, as rl-zoo3 closes them: a
    notebook calling main() again and again kept every run's worker processes until it exited."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    made = []
    for cls in (SubprocVecEnv, DummyVecEnv):
        monkeypatch.setattr(cls, "close", lambda self, close=cls.close: (made.append(self), close(self))[1])
    assert main(["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--n-episodes", "2",
                 "--n-envs", "2", "--timesteps", "40", "--vec-env", "subproc", "--eval-env", "CartPole-v1",
                 "--eval-freq", "1000", "--quiet"]) == 0  # fmt: skip
    assert {type(env) for env in made} == {SubprocVecEnv, DummyVecEnv}
    assert next(env for env in made if isinstance(env, SubprocVecEnv)).closed


def test_train_saves_the_model_trained_so_far_on_ctrl_c(tmp_path, capsys, monkeypatch):
    """As rl-zoo3 does: Ctrl-C returned 130 and lost the training done; the model is saved to --save (and can go
    on with --trained-agent)."""
    from stable_baselines3.common.callbacks import BaseCallback

    from ordergrad_rl.agents import OrderGradPPO
    from ordergrad_rl.cli import train

    class CtrlC(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            raise KeyboardInterrupt

    def interrupted(model, timesteps, callback=None, **kwargs):
        return model.learn(timesteps, callback=[*(callback or []), CtrlC()], **kwargs)

    monkeypatch.setattr(train, "learn", interrupted)
    assert main([*LAVA, "--timesteps", "1000", "--save", str(tmp_path / "lava")]) == 130
    saved = OrderGradPPO.load(tmp_path / "lava.zip")
    assert 0 < saved.num_timesteps < 1000
    out = capsys.readouterr().out
    assert f"interrupted at {saved.num_timesteps} timesteps; model: {tmp_path / 'lava.zip'}" in out


def test_compare_names_a_model_saved_without_zip_by_its_whole_name(saved_models, tmp_path, capsys):
    """SB3's save adds no .zip to a name with a dot: models cvar0.1 and cvar0.2 were both rows named cvar0."""
    for name in ("cvar0.1", "cvar0.2"):
        (tmp_path / name).write_bytes((saved_models / "OrderGradPPO.zip").read_bytes())
    argv = ["compare", str(tmp_path / "cvar0.1"), str(tmp_path / "cvar0.2"), "--env", "RiskyBandit-v0"]
    assert main([*argv, "--episodes", "2", "--quiet", "--out", str(tmp_path)]) == 0
    rows = [line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["cvar0.1", "cvar0.2"]


def test_compare_takes_a_model_without_zip_beside_its_statistics_as_evaluate(saved_models, tmp_path, capsys):
    """train --save models/cliff writes models/cliff.zip and models/cliff/vecnormalize.pkl; evaluate models/cliff
    reads the model, compare models/cliff said "models/cliff is a directory without TensorBoard runs"."""
    (tmp_path / "cliff").mkdir()
    (tmp_path / "cliff.zip").write_bytes((saved_models / "OrderGradPPO.zip").read_bytes())
    argv = [str(tmp_path / "cliff"), "--env", "RiskyBandit-v0", "--episodes", "2", "--quiet"]
    assert main(["evaluate", *argv]) == 0
    assert main(["compare", *argv, "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    assert "cliff: OrderGradPPO, 2 deterministic episodes on RiskyBandit-v0" in capsys.readouterr().out


def test_compare_takes_the_env_kwargs_evaluate_takes(saved_models, tmp_path, capsys):
    """compare had no --env-kwargs: a model trained with train --env-kwargs could not be compared on its env, and
    the endless-episode error told compare's user to give --env-kwargs max_episode_steps=..., which it refused."""
    model = str(saved_models / "OrderGradPPO.zip")
    argv = ["compare", model, "--env", "RiskyBandit-v0", "--episodes", "8", "--quiet", "--out", str(tmp_path)]
    assert main([*argv, "--env-kwargs", "max_episode_steps=3"]) == 0
    assert "8 deterministic episodes on RiskyBandit-v0 (max_episode_steps=3)" in capsys.readouterr().out
    assert main([*argv, "--env-kwargs", "max_episode_step=3"]) == 2
    assert "RiskyBandit-v0 takes no argument 'max_episode_step' (did you mean max_episode_steps?)" in (
        capsys.readouterr().err
    )


def test_compare_refuses_env_without_a_model_to_evaluate(tmp_path, capsys):
    """compare runs/ --env X --episodes 1000 printed the runs' logged numbers as if it had evaluated them on X (and
    --env-kwargs, which apply to the models' envs, without --env too)."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "runs" / "cvar_1")) as writer:
        writer.add_scalar("eval_risk/mean", 1.0, 8)
    assert main(["compare", str(tmp_path / "runs"), "--env", "RiskyBandit-v0", "--out", str(tmp_path)]) == 2
    assert "--env RiskyBandit-v0 is the env the saved models are evaluated on, and no argument is a model" in (
        capsys.readouterr().err
    )
    assert main(["compare", str(tmp_path / "runs"), "--env-kwargs", "max_episode_steps=3"]) == 2
    assert "--env-kwargs are the arguments of the env the saved models are evaluated on, and no argument" in (
        capsys.readouterr().err
    )


# ---------------------------------------------------------------------------------------------------- your own env
THIRD_PARTY_PACKAGE = """
import gymnasium as gym

gym.register("OrdergradThirdParty-v0", entry_point="ordergrad_rl.envs.bandit:RiskyBanditEnv")
"""


@pytest.fixture
def third_party_package(tmp_path, monkeypatch):
    """A package of the user's own, on the path, that registers ``OrdergradThirdParty-v0`` when imported (gone from
    the registry and the imported modules after the test)."""
    import gymnasium as gym

    package = tmp_path / "ordergrad_third_party"
    package.mkdir()
    (package / "__init__.py").write_text(THIRD_PARTY_PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package.name
    gym.registry.pop("OrdergradThirdParty-v0", None)
    sys.modules.pop(package.name, None)


def test_gym_packages_imports_the_modules_that_register_an_env_as_rl_zoo3_does(third_party_package, tmp_path, capsys):
    """rl-zoo3's --gym-packages was refused by train, evaluate and compare (unrecognized arguments)."""
    model = tmp_path / "own.zip"
    own = ["--env", "OrdergradThirdParty-v0", "--gym-packages", third_party_package]
    argv = ["train", "--algo", "reinforce", "--objective", "mean", "--n-episodes", "8", "--timesteps", "40",
            "--save", str(model), "--eval-env", "OrdergradThirdParty-v0", "--eval-episodes", "4", "--quiet",
            *own]  # fmt: skip
    assert main(argv) == 0
    assert "OrderGradREINFORCE on OrdergradThirdParty-v0" in capsys.readouterr().out
    assert main(["evaluate", str(model), "--episodes", "4", "--quiet", *own]) == 0
    assert f"model {model} on OrdergradThirdParty-v0: 4 episodes" in capsys.readouterr().out
    assert main(["compare", str(model), "--episodes", "4", "--out", str(tmp_path), "--quiet", *own]) == 0
    assert main([*argv[:-1], "ordergrad_no_such_gym_package"]) == 2
    assert "--gym-packages: cannot import 'ordergrad_no_such_gym_package': No module named" in capsys.readouterr().err


def test_vec_env_subproc_makes_an_env_its_workers_never_registered(third_party_package, capsys):
    """--vec-env subproc handed its workers the id qualified by its entry point's package (ordergrad_rl here), whose
    import does not register an id of the user's package: the forkserver workers died ('Connection reset by peer')."""
    argv = ["train", "--algo", "reinforce", "--objective", "mean", "--n-episodes", "4", "--n-envs", "2",
            "--timesteps", "20", "--vec-env", "subproc", "--quiet", "--env", "OrdergradThirdParty-v0",
            "--gym-packages", third_party_package]  # fmt: skip
    assert main(argv) == 0
    assert "OrderGradREINFORCE on OrdergradThirdParty-v0: objective mean, 4 episodes per update on 2 envs" in (
        capsys.readouterr().out
    )


@pytest.fixture
def image_env_id():
    """``OrdergradFakeImage-v0``: SB3's FakeImageEnv of 36x36x1 channel-last images (the smallest NatureCNN reads),
    discrete actions, 4-step episodes (gone from the registry after the test)."""
    import gymnasium as gym
    from stable_baselines3.common.envs import FakeImageEnv

    kwargs = dict(screen_height=36, screen_width=36, n_channels=1, discrete=True)
    gym.register("OrdergradFakeImage-v0", entry_point=FakeImageEnv, kwargs=kwargs, max_episode_steps=4)
    yield "OrdergradFakeImage-v0"
    gym.registry.pop("OrdergradFakeImage-v0", None)


def test_a_cnn_model_of_channel_last_images_is_evaluated_as_it_trained(image_env_id, tmp_path, capsys):
    """SB3's algorithms train a CnnPolicy on channel-last images through the VecTransposeImage they put around the
    env, so the model observes (1, 36, 36): evaluate, compare and train's --eval-env made the env without it and
    refused the model ("the model does not fit ...: Observation spaces do not match: Box(0, 255, (1, 36, 36), uint8)
    != Box(0, 255, (36, 36, 1), uint8)"). They wrap their envs as SB3 does (rl-zoo3's enjoy loads the model on its
    env, which SB3's load wraps)."""
    model = tmp_path / "cnn.zip"
    env = ["--env", image_env_id]
    argv = ["train", "--algo", "ppo", "--policy", "CnnPolicy", "--objective", "cvar0.5", "--n-episodes", "4",
            "--timesteps", "16", "--save", str(model), "--eval-env", image_env_id, "--eval-episodes", "2",
            "--eval-freq", "8", "--quiet", *env]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert main(["evaluate", str(model), "--episodes", "2", "--quiet", *env]) == 0, capsys.readouterr().err
    assert f"model {model} on {image_env_id}: 2 episodes" in capsys.readouterr().out
    assert main(["compare", str(model), "--episodes", "2", "--out", str(tmp_path), "--quiet", *env]) == 0, (
        capsys.readouterr().err
    )
    assert main(["evaluate", str(model), "--pass-at-k", "2", "--contexts", "2", "--quiet", *env]) == 2
    assert "is_success" in capsys.readouterr().err  # past the spaces: FakeImageEnv reports no success
