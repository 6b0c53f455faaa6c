"""Bad command-line input ends in ``ordergrad-rl <command>: error: ...`` (exit status 2) *before* any work, never in
a traceback after it (issue 9, defect 10)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import ordergrad_rl.agents
from ordergrad_rl.cli import REPRODUCTIONS, compare, evaluate, main, train
from ordergrad_rl.experiments import robust_regression, tailrisk
from ordergrad_rl.zoo import compare as zoo_compare
from ordergrad_rl.zoo.algorithms import algorithm_class

BANDIT = ["--env", "RiskyBandit-v0", "--quiet"]
TRAIN = ["train", "--algo", "reinforce", "--objective", "mean", "--timesteps", "10", *BANDIT]


def _no_work(*args, **kwargs):
    raise AssertionError("the command started its work despite a bad argument")


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("")
    return path


def _output_cases(a_file: Path, a_dir: Path) -> list[tuple[list[str], str]]:
    """(argv, option named in the error): a directory under a file, or a directory where a file is needed."""
    under_file = str(a_file / "sub")
    cases = [
        ([*TRAIN, "--save", under_file], "--save"),
        ([*TRAIN, "--save", str(a_dir)], "--save"),  # SB3 would write <dir>.zip beside it
        ([*TRAIN, "--save", str(a_dir / "model")], None),
        ([*TRAIN, "--tensorboard", str(a_file)], "--tensorboard"),
        (["evaluate", "m.zip", *BANDIT, "--json", str(a_dir)], "--json"),
        (["compare", "m.zip", *BANDIT, "--out", under_file], "--out"),
        (["compare", "m.zip", *BANDIT, "--json", str(a_dir)], "--json"),
        (["compare", "m.zip", *BANDIT, "--figure", str(a_dir)], "--figure"),
        (["compare", "m.zip", *BANDIT, "--figure", str(a_dir / "out.xyz")], "--figure"),
        (["compare", "m.zip", *BANDIT, "--figure", str(a_dir / "noext")], None),
    ]
    for name in REPRODUCTIONS:
        cases.append((["reproduce", name, "--json", str(a_dir)], "--json"))
        cases.append((["reproduce", name, "--out", under_file], "--out"))
    cases += [(["reproduce", name, "--tensorboard", under_file], "--tensorboard") for name in ("tailrisk", "minatar")]
    return cases


def _modules() -> list:
    import importlib

    return [train, evaluate, compare, *(importlib.import_module(c.module) for c in REPRODUCTIONS.values())]


def test_output_options_are_checked_before_the_work(tmp_path, a_file, monkeypatch, capsys):
    for module in _modules():
        monkeypatch.setattr(module, "run", _no_work)
    a_dir = tmp_path / "a_dir"
    a_dir.mkdir()
    for argv, option in _output_cases(a_file, a_dir):
        if option is None:
            with pytest.raises(AssertionError, match="started its work"):  # the check passed: run was reached
                main(argv)
            continue
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        command = " ".join(argv[:2]) if argv[0] == "reproduce" else argv[0]
        assert err.startswith(f"ordergrad-rl {command}: error: {option} "), (argv, err)
        assert "Traceback" not in err


def test_file_option_errors_say_what_to_give(tmp_path, monkeypatch, capsys):
    for module in (train, compare):
        monkeypatch.setattr(module, "run", _no_work)
    argv = ["compare", "m.zip", *BANDIT]
    assert main([*argv, "--figure", str(tmp_path)]) == 2
    assert f"is a directory; give a file path such as {tmp_path / 'figure.png'}" in capsys.readouterr().err
    assert main([*argv, "--figure", str(tmp_path / "out.xyz")]) == 2
    err = capsys.readouterr().err
    assert "--figure" in err and "matplotlib cannot write .xyz figures; use one of" in err and ".pdf" in err
    assert main([*TRAIN, "--save", str(tmp_path)]) == 2
    assert f"is a directory; give a file path such as {tmp_path / 'model.zip'}" in capsys.readouterr().err
    # a directory not made yet, named by a trailing separator (Path("newdir/") is the file newdir: newdir.zip)
    with pytest.raises(SystemExit):
        main([*TRAIN, "--save", f"{tmp_path / 'newdir'}/"])
    assert "ends in a separator, so it names a directory" in capsys.readouterr().err


def test_save_takes_the_name_of_a_model_saved_with_its_folder_beside_it(tmp_path, monkeypatch, capsys):
    """``train --save models/cart`` of a run with ``normalize`` writes ``models/cart.zip`` beside the folder
    ``models/cart/`` (rl-zoo3's layout, the VecNormalize statistics in it): running the same command again was
    refused ("--save models/cart is a directory"). A directory without ``<name>.zip`` beside it still is."""
    monkeypatch.setattr(train, "run", lambda args: 0)
    save = tmp_path / "models" / "cart"
    save.mkdir(parents=True)
    assert main([*TRAIN, "--save", str(save)]) == 2
    assert "is a directory; give a file path such as" in capsys.readouterr().err
    (tmp_path / "models" / "cart.zip").write_bytes(b"")
    assert main([*TRAIN, "--save", str(save)]) == 0, capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to read-only directories")
def test_unwritable_directory_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(train, "run", _no_work)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main([*TRAIN, "--tensorboard", str(locked / "tb")]) == 2
        assert f"{locked} is not writable" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--env", "RiskyLavaGrid-v0", "--policy", "CnnPolicy"], "--policy CnnPolicy needs image observations"),
        (["--env", "CartPole-v1", "--policy", "MultiInputPolicy"], "--policy MultiInputPolicy needs Dict observations"),
    ],
)
def test_a_policy_that_cannot_read_the_observations_is_named_before_training(options, message, monkeypatch, capsys):
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradPPO, "learn", _no_work)
    assert main(["train", "--algo", "ppo", "--objective", "mean", "--timesteps", "10", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ordergrad-rl train: error: {message}") and "observes" in err and "use MlpPolicy" in err


class DictObservationEnv(gym.Env):
    """One step, observing a Dict."""

    observation_space = spaces.Dict({"pos": spaces.Box(-1.0, 1.0, (2,), np.float32), "flag": spaces.Discrete(2)})
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), float(action), True, False, {}


@pytest.mark.parametrize(
    ("algo", "options", "message"),
    [
        (
            "ppo",
            [],
            "OrdergradDictObs-v0 observes a Dict, Dict('flag': Discrete(2), 'pos': Box(-1.0, 1.0, (2,), float32)), "
            "which MlpPolicy (the default policy) does not read: give --policy MultiInputPolicy",
        ),
        (
            "recurrent_ppo",
            [],
            "which MlpLstmPolicy (the default policy) does not read: give --policy MultiInputLstmPolicy",
        ),
        (
            "reinforce",
            ["--policy", "MlpPolicy"],
            "--policy MlpPolicy does not read Dict observations; OrdergradDictObs-v0 observes Dict(",
        ),
    ],
)
def test_a_dict_observation_space_names_the_policy_option_that_reads_it(algo, options, message, monkeypatch, capsys):
    """train --env <an env observing a Dict> without --policy got SB3's "You must use `MultiInputPolicy` when working
    with dict observation space, not MlpPolicy", with nothing on how to ask for it: MlpPolicy is the command's
    default policy, and the way is --policy MultiInputPolicy."""
    gym.register("OrdergradDictObs-v0", entry_point=DictObservationEnv, max_episode_steps=1)
    monkeypatch.setattr(algorithm_class(algo), "learn", _no_work)
    try:
        argv = ["train", "--algo", algo, "--env", "OrdergradDictObs-v0", "--objective", "mean", "--timesteps", "10"]
        assert main([*argv, *options, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("ordergrad-rl train: error: ") and message in err, err
        assert err.rstrip().endswith("MultiInputPolicy" if algo != "recurrent_ppo" else "MultiInputLstmPolicy"), err
    finally:
        del gym.registry["OrdergradDictObs-v0"]


@pytest.mark.parametrize("algo", ["ppo", "reinforce", "recurrent_ppo"])
def test_an_observation_space_sb3_has_no_policy_for_is_a_usage_error(algo, monkeypatch, capsys):
    """Blackjack-v1 observes a Tuple, which SB3 refuses at construction with a ``NotImplementedError``: the command
    printed a 25-line traceback through SB3's rollout buffer instead of the error."""
    monkeypatch.setattr(algorithm_class(algo), "learn", _no_work)
    argv = ["train", "--algo", algo, "--env", "Blackjack-v1", "--objective", "cvar0.2", "--timesteps", "10", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl train: error: ") and "Blackjack-v1" in err
    assert "Tuple(Discrete(32), Discrete(11), Discrete(2)) observation space is not supported" in err
    assert "train makes the env in the wrappers of the env_wrapper of its --conf-file entry" in err  # the way to


def test_an_action_space_the_algorithm_does_not_take_is_a_usage_error(capsys):
    """train --algo maskable_ppo --env Hopper-v5 (Box actions, as every continuous-control env) ended in a traceback of
    SB3's AssertionError that the algorithm takes only Discrete, MultiDiscrete and MultiBinary actions; then in SB3's
    bare message; the agent's own refusal now, naming the space, MaskablePPO's and the agents that act in it."""
    argv = ["train", "--algo", "maskable_ppo", "--env", "Pendulum-v1", "--objective", "cvar0.2", "--timesteps", "10"]
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "ordergrad-rl train: error: OrderGradMaskablePPO: the env's action space Box(-2.0, 2.0, (1,), float32) is a "
        "Box, which OrderGradMaskablePPO does not act in: it acts in Discrete, MultiDiscrete or MultiBinary action "
        "spaces only. OrderGradPPO, OrderGradREINFORCE and OrderGradRecurrentPPO act in Box"
    )


def test_an_env_whose_package_is_missing_is_named_before_the_work(tmp_path, monkeypatch, capsys):
    """A registered Gymnasium id whose env module needs a package that is not installed (MuJoCo's
    InvertedPendulum-v5, flax's phys2d/CartPole-v1) ended train and evaluate in a raw traceback of the import."""
    import gymnasium as gym

    model = str(tmp_path / "model.zip")
    ordergrad_rl.agents.OrderGradREINFORCE("MlpPolicy", "CartPole-v1").save(model)
    gym.register("OrdergradMissingPackage-v0", entry_point="ordergrad_no_such_package.envs:Env")
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "learn", _no_work)
    try:
        for argv in (
            ["train", "--algo", "reinforce", "--objective", "mean", "--timesteps", "10", "--quiet"],
            ["evaluate", model, "--quiet"],
        ):
            assert main([*argv, "--env", "OrdergradMissingPackage-v0"]) == 2
            err = capsys.readouterr().err
            assert "error: OrdergradMissingPackage-v0 needs a package that is not installed: " in err
            assert "ordergrad_no_such_package" in err
    finally:
        del gym.registry["OrdergradMissingPackage-v0"]


def test_an_unregistered_id_says_how_to_register_it(tmp_path, capsys):
    """An id of the user's own got no word about the module that registers it; a module:EnvId-v0 whose module does
    not import read "unknown env id ...: env id ...", twice. (MinAtar's ids: tests/test_qcritic_minatar.py.)"""
    train = ["train", "--algo", "reinforce", "--objective", "mean", "--timesteps", "10", "--quiet"]
    assert main([*train, "--env", "MyOwnRisk-v0"]) == 2
    assert "An env of your own: give its id as MODULE:MyOwnRisk-v0" in capsys.readouterr().err
    assert main([*train, "--env", "CartPol-v1"]) == 2  # a typo: Gymnasium's suggestion only
    assert capsys.readouterr().err.strip().endswith("Did you mean: `CartPole`?")
    assert main([*train, "--env", "ordergrad_no_such_module:X-v0"]) == 2
    assert capsys.readouterr().err.startswith(
        "ordergrad-rl train: error: env id 'ordergrad_no_such_module:X-v0': cannot import 'ordergrad_no_such_module'"
    )


@pytest.mark.usefixtures("minatar_registry")
def test_a_minatar_id_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    """``train --env MinAtar/Breakout-v1`` (also --eval-env, evaluate, compare) refused the id, saying that MinAtar
    registers it only when asked; the commands now register MinAtar's ids as ordergrad-rl's MinAtar envs, and without
    MinAtar installed they name the extra that brings it."""
    model = str(tmp_path / "model.zip")
    ordergrad_rl.agents.OrderGradREINFORCE("MlpPolicy", "CartPole-v1").save(model)
    monkeypatch.setitem(sys.modules, "minatar", None)  # import minatar fails, as without the extra
    train = ["train", "--algo", "reinforce", "--objective", "mean", "--timesteps", "10", "--quiet"]
    minatar = "MinAtar/Breakout-v1"
    commands = (
        [*train, "--env", minatar],
        [*TRAIN, "--eval-env", minatar],
        ["evaluate", model, "--quiet", "--env", minatar],
        ["compare", model, "--quiet", "--out", str(tmp_path), "--env", minatar],
    )
    for argv in commands:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "needs the [minatar] extra" in err and 'pip install "ordergrad-rl[minatar]"' in err, err


def test_a_box2d_env_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    """``train --env LunarLander-v3`` without Box2D printed Gymnasium's advice (``pip install swig``, then
    ``gymnasium[box2d]``, which builds Box2D from source) where the commands name the project's extra."""
    model = str(tmp_path / "model.zip")
    ordergrad_rl.agents.OrderGradREINFORCE("MlpPolicy", "CartPole-v1").save(model)
    monkeypatch.setitem(sys.modules, "Box2D", None)  # import fails as if the package were not installed
    for name in [name for name in sys.modules if name.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "learn", _no_work)
    for argv in (
        ["train", "--algo", "reinforce", "--objective", "mean", "--timesteps", "10", "--quiet"],
        ["evaluate", model, "--quiet"],
    ):
        assert main([*argv, "--env", "LunarLander-v3"]) == 2
        err = capsys.readouterr().err
        assert ": error: LunarLander-v3 needs the [box2d] extra (Box2D does not import" in err
        assert err.rstrip().endswith('install it with: pip install "ordergrad-rl[box2d]"')


def test_evaluate_names_an_episode_that_never_ends(tmp_path, monkeypatch, capsys):
    """CliffWalking-v1 has no time limit: a deterministic policy that never reaches the goal (an untrained one)
    made ``evaluate`` run forever, silently with --quiet."""
    import ordergrad_rl.agents.common.buffers

    model = str(tmp_path / "model.zip")
    ordergrad_rl.agents.OrderGradREINFORCE("MlpPolicy", "CliffWalking-v1").save(model)
    monkeypatch.setattr(ordergrad_rl.agents.common.buffers, "MAX_EPISODE_STEPS", 500)
    argv = ["evaluate", model, "--env", "CliffWalking-v1", "--episodes", "2", "--deterministic", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: an episode on CliffWalking-v1 has not ended after 500 steps" in err
    assert "--env-kwargs max_episode_steps=" in err


@pytest.mark.parametrize(
    "objective, message",
    [
        ("mean", "--k 5 does not apply to objective mean"),
        ("gcvar0.2", "--k 5 does not apply to gcvar0.2: GCVaR has no order-statistic size"),
    ],
)
def test_k_for_an_objective_without_one_is_refused(objective, message, monkeypatch, capsys):
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "learn", _no_work)
    assert main([*TRAIN[:4], objective, *TRAIN[5:], "--k", "5"]) == 2
    assert message in capsys.readouterr().err


def test_tailrisk_evaluation_options_need_tensorboard(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tailrisk, "run_experiment", _no_work)
    for option in ("--eval-every", "--eval-episodes"):
        assert main(["reproduce", "tailrisk", option, "5", "--quiet", "--out", str(tmp_path)]) == 2
        assert f"{option} set the TensorBoard evaluations: give --tensorboard DIR too" in capsys.readouterr().err


def test_train_help_says_n_envs_need_not_divide_n_episodes(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "any number: N episodes are collected across them" in " ".join(capsys.readouterr().out.split())


def test_tailrisk_k_is_checked_before_the_workers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tailrisk, "run_experiment", _no_work)
    assert main(["reproduce", "tailrisk", "--k", "300", "--quiet", "--out", str(tmp_path)]) == 2
    assert "--k (300) must be < --n-episodes (256)" in capsys.readouterr().err
    assert main(["reproduce", "tailrisk", "--k", "8", "--n-episodes", "8", "--out", str(tmp_path)]) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--trim-k", "8"], "--trim-k, k = 8: objective trim4@8 needs 2m < k"),
        (["--median-k", "300"], "--median-k: k = 300 must be <= --batch-size (256)"),
        (["--batch-size", "300", "--n-train", "200"], "--batch-size (300) must be <= --n-train (200)"),
        (["--sweep", "--batch-size", "40"], "--sweep (its grid of --median-k): k = 63 must be <= --batch-size (40)"),
    ],
)
def test_robust_regression_settings_are_checked_first(options, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(robust_regression, "run_experiment", _no_work)
    assert main(["reproduce", "robust-regression", *options, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [*TRAIN, "--seed", "-1"],
        ["evaluate", "m.zip", *BANDIT, "--seed", "-1"],
        ["compare", "m.zip", *BANDIT, "--seed", "-1"],
        ["reproduce", "diagnostics", "--seed", "-1"],
        ["reproduce", "diagnostics", "--quick", "--reps", "1"],  # no standard error (crashed plotting the work)
        ["reproduce", "robust-regression", "--lr", "nan"],
        ["reproduce", "robust-regression", "--lr", "-0.1"],
        # named "resources: gpu must be a number >= 0", not the option given:
        ["sweep", "--grid", "env=RiskyBandit-v0", "--gpus-per-trial", "-1"],
    ],
)
def test_numbers_argparse_can_check_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"error: argument {argv[-2]}: expected" in capsys.readouterr().err


def test_compare_checks_every_model_before_evaluating_any(tmp_path, monkeypatch, capsys):
    from ordergrad_rl.agents import OrderGradREINFORCE

    OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4).save(tmp_path / "bandit")
    monkeypatch.setattr(zoo_compare, "evaluate_model", _no_work)
    model, out = str(tmp_path / "bandit.zip"), ["--out", str(tmp_path)]
    assert main(["compare", model, "missing.zip", "--env", "RiskyBandit-v0", *out]) == 2
    assert "error: no saved model at missing.zip" in capsys.readouterr().err
    assert main(["compare", model, "--env", "CartPole-v1", *out]) == 2
    assert f"error: the model does not fit CartPole-v1 ({model}): Observation spaces" in capsys.readouterr().err


def test_a_directory_given_as_a_model_names_the_models_in_it(tmp_path, capsys):
    """rl-zoo3's enjoy finds a run folder's model (-f logs --exp-id 1); evaluate logs/ppo/CartPole-v1_1 said only "no
    saved model at ...": the folder's models are named."""
    from ordergrad_rl.agents import OrderGradREINFORCE

    run = tmp_path / "logs" / "ppo" / "RiskyBandit-v0_1"
    run.mkdir(parents=True)
    assert main(["evaluate", str(run), "--quiet"]) == 2
    assert f"error: no saved model at {run}: a directory; it holds no model (.zip)" in capsys.readouterr().err
    OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4).save(run / "best_model")
    assert main(["evaluate", str(run), "--quiet"]) == 2
    assert f"error: no saved model at {run}: a directory; give one of its models: best_model.zip" in (
        capsys.readouterr().err
    )


def test_bad_device_is_named(monkeypatch, capsys):
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "__init__", _no_work)
    assert main([*TRAIN, "--device", "bogus"]) == 2
    assert "--device 'bogus' is not a torch device" in capsys.readouterr().err


def test_a_device_torch_cannot_use_here_is_named(monkeypatch, capsys):
    """--device mps on a machine without it ended train with torch's traceback ("PyTorch is not linked with support
    for mps devices"), a CUDA index past the machine's devices failed inside the model's constructor ("invalid
    device ordinal"), and --device cuda on a machine without CUDA trained on the CPU without a word (SB3's fallback):
    refused naming --device, or warned. A sweep's driver checks the string only (a trial may run on another node)."""
    import torch as th

    from ordergrad_rl.common.errors import CommandError
    from ordergrad_rl.common.options import check_device

    monkeypatch.setattr(th, "empty", lambda *args, device=None: (_ for _ in ()).throw(RuntimeError("no mps. more")))
    with pytest.raises(CommandError, match=r"--device mps: torch cannot use it here \(no mps\); give cpu, cuda"):
        check_device("mps")
    assert check_device("mps", here=False) == "mps"
    monkeypatch.setattr(th.cuda, "is_available", lambda: True)
    monkeypatch.setattr(th.cuda, "device_count", lambda: 2)
    with pytest.raises(CommandError, match=r"--device cuda:2: this machine has 2 CUDA device\(s\), cuda:0 .. cuda:1"):
        check_device("cuda:2")
    assert check_device("cuda:1") == "cuda:1"
    monkeypatch.setattr(th.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="--device cuda: torch finds no CUDA device here, so SB3 trains on the CPU"):
        check_device("cuda")
    monkeypatch.undo()
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "__init__", _no_work)
    if not th.backends.mps.is_available():
        assert main([*TRAIN, "--device", "mps"]) == 2
        assert "error: --device mps: torch cannot use it here (" in capsys.readouterr().err


def test_eval_env_with_other_spaces_fails_before_training(monkeypatch, capsys):
    monkeypatch.setattr(ordergrad_rl.agents.OrderGradREINFORCE, "learn", _no_work)
    assert main([*TRAIN, "--eval-env", "CartPole-v1"]) == 2
    err = capsys.readouterr().err
    assert "error: the model does not fit --eval-env CartPole-v1: Observation spaces do not match" in err


@pytest.mark.parametrize("module", ["minatar", "rliable.library"])
def test_minatar_without_the_extra_names_it_before_training(module, tmp_path, monkeypatch, capsys):
    """Issue 9, defect 8: a missing MinAtar or rliable ended in a raw ModuleNotFoundError (rliable: after training)."""
    from ordergrad_rl.experiments import minatar

    monkeypatch.setitem(sys.modules, module, None)  # import fails as if the package were not installed
    monkeypatch.setattr(minatar, "run_experiment", _no_work)
    assert main(["reproduce", "minatar", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"ordergrad-rl reproduce minatar: error: reproduce minatar needs the [minatar] extra ({module}"
    )
    assert err.rstrip().endswith('install it with: pip install "ordergrad-rl[minatar]"')


def test_diagnostics_refuses_seeds_and_says_why(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "diagnostics", "--seeds", "2"])
    assert exc.value.code == 2
    assert (
        "--seeds does not apply here: diagnostics is one Monte-Carlo run: its seed is --seed" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "note"),
    [
        ([*TRAIN, "--objectve", "cvar0.2"], "--objectve (did you mean --objective?)"),
        ([*TRAIN, "-f", "logs/"], "-f: rl-zoo3's log folder: train --save PATH saves the model"),
        (["evaluate", "m.zip", "--load-best"], "--load-best: give evaluate the model's file"),
        (["reproduce", "weights", "--outt", "x"], "--outt (did you mean --out?)"),
        # rl-zoo3's options got the closest of ours, which meant something else (--track: --threads?):
        ([*TRAIN, "--track"], "--track: Weights & Biases is not built in: train --tensorboard DIR logs the run"),
        ([*TRAIN, "--n-eval-envs", "2"], "--n-eval-envs: train evaluates its --eval-env on up to 8 envs, as evaluate"),
        ([*TRAIN, "--n-trials", "9"], "--n-trials: ordergrad-rl sweep runs a grid of trials"),
        (["evaluate", "m.zip", "-n", "9"], "-n: evaluate and compare run --episodes E episodes"),
        (["evaluate", "m.zip", "--no-render"], "--no-render: evaluate does not render"),
    ],
)
def test_an_unknown_option_is_named_by_its_command_with_what_to_give_instead(argv, note, capsys):
    """argparse's top parser reported it: "ordergrad-rl: error: unrecognized arguments: --objectve cvar0.2" under
    the usage of ordergrad-rl itself, not the command's, and without the option meant (rl-zoo3's -f logs/ alike).
    The command reports it now, with its usage, and names the option meant or rl-zoo3's equivalent."""
    command = " ".join(argv[:2] if argv[0] == "reproduce" else argv[:1])
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: ordergrad-rl {command} ")
    assert f"ordergrad-rl {command}: error: unrecognized arguments: " in err and note in err


def test_rl_zoos_algo_name_of_recurrent_ppo_trains_it(capsys):
    """rl-zoo3's --algo ppo_lstm (sb3-contrib's RecurrentPPO) was an invalid choice; it is recurrent_ppo."""
    argv = ["train", "--algo", "ppo_lstm", "--env", "RiskyBandit-v0", "--objective", "mean", "--timesteps", "8"]
    assert main([*argv, "--n-episodes", "4", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("OrderGradRecurrentPPO on RiskyBandit-v0: ")


def test_rl_zoos_minus_one_frequencies_are_none(capsys):
    """rl-zoo3's --eval-freq -1 (no evaluation) and --save-freq -1 (no checkpoints) were refused ("expected an integer
    >= 1"), so an rl-zoo3 command line with them did not run as pasted; -1 is none now, and with an --eval-env to
    evaluate on a contradiction."""
    assert main([*TRAIN, "--eval-freq", "-1", "--save-freq", "-1", "--quiet"]) == 0
    assert "last evaluation" not in capsys.readouterr().out
    assert main([*TRAIN, "--eval-freq", "-1", "--eval-env", "RiskyBandit-v0"]) == 2
    assert "--eval-freq -1 (rl-zoo3's: no evaluation) and --eval-env RiskyBandit-v0: give one" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main([*TRAIN, "--eval-freq", "0"])
    assert "argument --eval-freq: expected an integer >= 1 (or rl-zoo3's -1: none), got 0" in capsys.readouterr().err


def test_a_warning_of_a_command_is_printed_as_its_errors_are(monkeypatch, capsys):
    """Python printed ``/usr/bin/ordergrad-rl:8: UserWarning: <message>`` and then the console script's line
    ``sys.exit(main())``, which said nothing to a command's user; a command's warning reads as its errors do now, and
    Python's format is back once the command ends (main may run inside a user's program)."""
    import warnings

    def run(args):
        warnings.warn("fewer than 5 updates", UserWarning, stacklevel=2)
        warnings.warn("an old option", DeprecationWarning, stacklevel=2)

    monkeypatch.setattr(evaluate, "run", run)

    def show(message, category, filename, lineno, file=None, line=None):  # as Python's, which pytest replaces
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    formatwarning = warnings.formatwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        assert main(["evaluate", "m.zip"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "ordergrad-rl evaluate: warning: fewer than 5 updates\n"
        "ordergrad-rl evaluate: warning (DeprecationWarning): an old option\n"
    )
    assert warnings.formatwarning is formatwarning


def test_rl_zoos_num_threads_is_threads(monkeypatch):
    """rl-zoo3's --num-threads N (-1: torch's default) was an unrecognized argument; it is --threads's spelling."""
    from ordergrad_rl import cli

    args, _ = cli.build_parser().parse_known_args(["evaluate", "m.zip", "--num-threads", "-1"])
    assert args.threads == -1
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cli.set_threads(args.threads)  # torch's default: nothing set
    assert "OMP_NUM_THREADS" not in os.environ
    with pytest.raises(cli.CommandError, match="--threads must be >= 0"):
        cli.set_threads(-2)


def test_reasoning_quick_refuses_sizes_it_would_drop(tmp_path, capsys):
    assert main(["reproduce", "reasoning", "--quick", "--updates", "180", "--out", str(tmp_path)]) == 2
    assert "--quick sets its own sizes" in capsys.readouterr().err
