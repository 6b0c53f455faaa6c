"""Per-env hyperparameter files (rl-zoo3's convention): shipped entries, loading, and ``ordergrad-rl train``."""

from __future__ import annotations

import math
import re

import pytest

from ordergrad_rl.cli import main, train
from ordergrad_rl.experiments import tailrisk
from ordergrad_rl.zoo.algorithms import algorithm_class
from ordergrad_rl.zoo.hyperparams import FILES, hyperparams_file, load_hyperparams, read_hyperparams_file
from ordergrad_rl.zoo.training import zoo_hyperparams

TAILRISK = ["train", "--env", "SyntheticTailRisk-v0", "--objective", "cvar0.2", "--quiet"]


@pytest.mark.parametrize("algo", sorted(FILES))
def test_shipped_entries_are_valid_constructor_arguments(algo):
    """Every key of every entry is a hyperparameter of the algorithm and its value fits the annotation (the checks
    ``train`` applies), and every entry can build its model."""
    cls = algorithm_class(algo)
    for env_id in read_hyperparams_file(hyperparams_file(algo)):
        entry = zoo_hyperparams(algo, env_id)
        assert entry is not None and entry.n_timesteps is not None and entry.n_timesteps > 0
        model = cls(entry.policy, env_id, objective="cvar0.2", **entry.kwargs)
        assert model.learning_rate == entry.kwargs.get("learning_rate", model.learning_rate)


@pytest.mark.parametrize("algo", sorted(FILES))
def test_every_value_has_its_reason(algo):
    """rl-zoo3 style, with a one-line reason beside every value (issue 9, goal 2)."""
    for line in hyperparams_file(algo).read_text().splitlines():
        code = line.split("#", 1)[0]
        if re.match(r"^\s+[\w]+:\s*\S", code):  # a key with a value (not an env id, not a nested mapping's head)
            assert "#" in line, f"{hyperparams_file(algo).name}: no reason for {line.strip()!r}"


def test_reinforce_entry_is_the_reproductions_protocol():
    """``train --algo reinforce --env SyntheticTailRisk-v0`` runs what ``reproduce tailrisk`` measures."""
    entry = load_hyperparams("reinforce", "SyntheticTailRisk-v0")
    config = tailrisk.Config()
    assert entry.n_timesteps == tailrisk.planned_steps("ordergrad_cvar", config)
    assert entry.kwargs["learning_rate"] == config.learning_rate
    assert entry.kwargs["n_episodes"] == config.n_episodes
    assert entry.kwargs["max_grad_norm"] == config.max_grad_norm
    assert entry.kwargs["normalize_advantage"] is True and entry.kwargs["reward_to_go"] is False
    expected, got = config.policy_kwargs(), entry.kwargs["policy_kwargs"]
    assert got.keys() == expected.keys()
    assert math.isclose(got.pop("log_std_init"), expected.pop("log_std_init"), rel_tol=1e-7)
    assert got == expected


def test_load_hyperparams_errors_and_missing_entries(tmp_path):
    assert load_hyperparams("ppo", "CartPole-v1") is None  # the defaults are meant to work there
    with pytest.raises(ValueError, match="unknown algo 'dqn'"):
        load_hyperparams("dqn", "CartPole-v1")
    # No file is shipped for these: no entry, as train has none (it said "unknown algo 'recurrent_ppo'").
    assert load_hyperparams("recurrent_ppo", "CartPole-v1") is load_hyperparams("maskable_ppo", "CartPole-v1") is None
    with pytest.raises(ValueError, match="no hyperparameter file is shipped for 'recurrent_ppo'"):
        hyperparams_file("recurrent_ppo")
    bad = tmp_path / "bad.yml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="mapping of env ids"):
        load_hyperparams("ppo", "CartPole-v1", bad)
    bad.write_text("CartPole-v1: {n_timesteps: 1.5}\n")
    with pytest.raises(ValueError, match="n_timesteps must be a positive integer"):
        load_hyperparams("ppo", "CartPole-v1", bad)
    bad.write_text("CartPole-v1: {n_timesteps: true}\n")  # was 1 timestep
    with pytest.raises(ValueError, match="n_timesteps must be a positive integer, got True"):
        load_hyperparams("ppo", "CartPole-v1", bad)
    bad.write_text("CartPole-v1: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_hyperparams("ppo", "CartPole-v1", bad)
    good = tmp_path / "good.yml"
    good.write_text("CartPole-v1:\n  n_timesteps: 1e5\n  policy: MlpPolicy\n  n_epochs: 4\n")
    entry = load_hyperparams("ppo", "CartPole-v1", good)
    assert (entry.n_timesteps, entry.policy, entry.kwargs) == (100_000, "MlpPolicy", {"n_epochs": 4})


def test_train_applies_the_entry_and_options_win(tmp_path, capsys, monkeypatch):
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  learning_rate: 0.01\n  n_epochs: 2\n")
    base = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--quiet", "--n-episodes", "4"]
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    assert main([*base, "--conf-file", str(conf)]) == 0
    out = capsys.readouterr().out
    assert "hyperparameters of RiskyBandit-v0 from" in out and "n_timesteps=8" in out and ", 8 timesteps" in out
    assert built[-1].learning_rate == 0.01 and built[-1].n_epochs == 2
    assert main([*base, "--conf-file", str(conf), "--timesteps", "4", "--hparams", "n_epochs=3"]) == 0
    assert built[-1].n_epochs == 3 and built[-1].learning_rate == 0.01  # --hparams win, the rest of the entry stays
    assert ", 4 timesteps" in capsys.readouterr().out
    assert main([*base, "--conf-file", "none", "--timesteps", "4"]) == 0
    assert built[-1].n_epochs == 10 and "hyperparameters of" not in capsys.readouterr().out  # the class defaults


def test_an_entry_may_set_n_episodes_and_the_option_wins(tmp_path, monkeypatch):
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  n_episodes: 6\n")
    base = [
        "train",
        "--algo",
        "reinforce",
        "--env",
        "RiskyBandit-v0",
        "--objective",
        "mean",
        "--quiet",
        "--conf-file",
        str(conf),
    ]
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    assert main(base) == 0 and built[-1].n_episodes == 6
    assert main([*base, "--n-episodes", "4"]) == 0 and built[-1].n_episodes == 4
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  n_episodes: many\n")
    assert main(base) == 2
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  seed: 3\n")  # other options stay options
    assert main(base) == 2


def test_an_entry_may_set_rl_zoos_n_envs_and_the_option_wins(tmp_path, monkeypatch):
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  n_episodes: 8\n  n_envs: 2\n")
    base = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--quiet",
            "--conf-file", str(conf)]  # fmt: skip
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    assert main(base) == 0 and built[-1].n_envs == 2
    assert main([*base, "--n-envs", "4"]) == 0 and built[-1].n_envs == 4


def test_an_entry_may_set_env_kwargs_and_the_option_wins(tmp_path, capsys, monkeypatch):
    """``env_kwargs`` of an entry are the env's arguments (gym.make's max_episode_steps too), as --env-kwargs
    gives them; a key of --env-kwargs wins over the file's. It was refused ("use --env-kwargs")."""
    conf = tmp_path / "conf.yml"
    conf.write_text(
        "CliffWalking-v1:\n  n_timesteps: 8\n  env_kwargs:\n    is_slippery: true\n    max_episode_steps: 6\n"
    )
    entry = load_hyperparams("ppo", "CliffWalking-v1", conf)
    assert entry.env_kwargs == {"is_slippery": True, "max_episode_steps": 6} and "env_kwargs" not in entry.kwargs
    base = ["train", "--algo", "ppo", "--env", "CliffWalking-v1", "--objective", "mean", "--quiet", "--n-episodes", "2",
            "--hparams", "n_epochs=1", "--conf-file", str(conf)]  # fmt: skip
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])

    def made_with() -> tuple[bool, int]:
        (spec,) = built[-1].get_env().get_attr("spec")
        return spec.kwargs["is_slippery"], spec.max_episode_steps

    assert main(base) == 0 and made_with() == (True, 6)
    out = capsys.readouterr().out
    assert "env_kwargs={'is_slippery': True, 'max_episode_steps': 6}" in out
    assert "CliffWalking-v1 (is_slippery=True max_episode_steps=6)" in out
    assert main([*base, "--env-kwargs", "max_episode_steps=4"]) == 0 and made_with() == (True, 4)
    conf.write_text("CliffWalking-v1:\n  n_timesteps: 8\n  env_kwargs:\n    is_slipery: true\n")
    assert main(base) == 2
    assert "conf.yml: CliffWalking-v1: env_kwargs: CliffWalking-v1 takes no argument 'is_slipery'" in (
        capsys.readouterr().err
    )
    conf.write_text("CliffWalking-v1:\n  n_timesteps: 8\n  env_kwargs: [1]\n")
    assert main(base) == 2
    assert "env_kwargs must map argument names to values" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line, message",
    [
        (
            "objective: cvar0.2",
            "conf.yml: RiskyBandit-v0: objective: set objective with --objective",
        ),
        ("learning_rte: 0.1", "conf.yml: RiskyBandit-v0: learning_rte: OrderGradREINFORCE has no hyperparameter"),
        (
            "frame_stack: 0",
            "conf.yml: RiskyBandit-v0: frame_stack: expected the number of frames VecFrameStack stacks",
        ),
        (
            "normalize: \"{'norm_obs': True, 'clip_ob': 5}\"",
            "conf.yml: RiskyBandit-v0: normalize: VecNormalize takes no argument 'clip_ob'",
        ),
        ("normalize: 1", "conf.yml: RiskyBandit-v0: normalize: expected true, false or a mapping"),
        (
            "env_wrapper: gymnasium.wrappers.FlattenObservations",
            "conf.yml: RiskyBandit-v0: env_wrapper: gymnasium.wrappers.FlattenObservations: gymnasium.wrappers has no "
            "wrapper 'FlattenObservations' (did you mean FlattenObservation?)",
        ),
        (
            "env_wrapper: gymnasium.wrapper.FlattenObservation",
            "conf.yml: RiskyBandit-v0: env_wrapper: gymnasium.wrapper.FlattenObservation: cannot import "
            "gymnasium.wrapper",
        ),
        ("env_wrapper: FlattenObservation", "conf.yml: RiskyBandit-v0: env_wrapper: expected the dotted path"),
        ("env_wrapper: [3]", "conf.yml: RiskyBandit-v0: env_wrapper: expected the dotted path of a wrapper"),
        (
            "env_wrapper: [{gymnasium.wrappers.TimeLimit: {max_episode_step: 20}}]",
            "conf.yml: RiskyBandit-v0: env_wrapper: gymnasium.wrappers.TimeLimit: got an unexpected keyword argument "
            "'max_episode_step'",
        ),
        (
            "env_wrapper: gymnasium.wrappers.TimeLimit",
            "conf.yml: RiskyBandit-v0: env_wrapper: gymnasium.wrappers.TimeLimit: missing a required argument: "
            "'max_episode_steps'",
        ),
        (
            "env_wrapper: [{gymnasium.wrappers.TimeLimit: {max_episode_steps: -3}}]",
            "conf.yml: RiskyBandit-v0: env_wrapper: gymnasium.wrappers.TimeLimit(max_episode_steps=-3) cannot wrap "
            "RiskyBandit-v0: Expect the `max_episode_steps` to be positive",
        ),
        (
            "normalize_kwargs: {norm_reward: false}",
            "normalize_kwargs: rl-zoo3's normalize_kwargs is not a hyperparameter; give VecNormalize's arguments as "
            "the normalize mapping",
        ),
    ],
)
def test_entry_errors_name_the_file_and_the_entry(line, message, tmp_path, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text(f"RiskyBandit-v0:\n  n_timesteps: 8\n  {line}\n")
    argv = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--conf-file", str(conf)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_hparams_errors_name_the_item(capsys):
    argv = ["train", "--algo", "reinforce", "--env", "RiskyBandit-v0", "--objective", "mean", "--timesteps", "8"]
    assert main([*argv, "--hparams", "n_envs=4"]) == 2
    assert "error: --hparams n_envs=4: set n_envs with --n-envs" in capsys.readouterr().err


def test_train_errors_of_the_conf_file(tmp_path, capsys):
    base = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--quiet"]
    assert main(base) == 2  # no entry for the bandit, no --timesteps (it blamed a --conf-file no one gave)
    assert "error: give --timesteps: RiskyBandit-v0 has no per-env hyperparameter entry\n" in capsys.readouterr().err
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_epochs: 1\n")
    assert main([*base, "--conf-file", str(conf)]) == 2
    assert f"give --timesteps: the RiskyBandit-v0 entry of {conf} has no n_timesteps" in capsys.readouterr().err
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  clip_rnage: 0.1\n")
    assert main([*base, "--conf-file", str(conf)]) == 2
    assert "no hyperparameter 'clip_rnage'" in capsys.readouterr().err
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  learning_rate: fast\n")
    assert main([*base, "--conf-file", str(conf)]) == 2
    assert "learning_rate expects" in capsys.readouterr().err
    assert main([*base, "--conf-file", str(tmp_path / "missing.yml")]) == 2
    assert "--conf-file" in capsys.readouterr().err


def test_conf_file_takes_rl_zoos_linear_schedules(tmp_path):
    """``learning_rate: lin_0.01`` in a per-env file is the schedule, as in rl-zoo3's files."""
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  learning_rate: lin_0.01\n  ent_coef: 0.0\n")
    entry = zoo_hyperparams("ppo", "RiskyBandit-v0", conf)
    schedule = entry.kwargs["learning_rate"]
    assert (schedule(1.0), schedule(0.25), schedule(0.0)) == pytest.approx((0.01, 0.0025, 0.0)) and entry.kwargs[
        "ent_coef"
    ] == 0.0


def test_load_hyperparams_gives_constructor_arguments_as_the_readme_uses_them(tmp_path):
    """``cls(hp.policy, env, **hp.kwargs)`` from Python: lin_<x> is the schedule there too, and rl-zoo3's wrapper
    keys are read apart when the file is read (they were passed on, and the constructor failed on them)."""
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  learning_rate: lin_0.01\n  n_episodes: 8\n")
    hp = load_hyperparams("ppo", "RiskyBandit-v0", conf)
    assert hp.kwargs["learning_rate"](0.5) == pytest.approx(0.005)
    algorithm_class("ppo")(hp.policy, "RiskyBandit-v0", objective="cvar0.25", **hp.kwargs).learn(16)
    conf.write_text("RiskyBandit-v0:\n  frame_stack: 4\n")
    hp = load_hyperparams("ppo", "RiskyBandit-v0", conf)
    assert hp.frame_stack == 4 and "frame_stack" not in hp.kwargs


def test_train_uses_the_shipped_entry_by_default(capsys):
    """Without --timesteps the shipped entry's n_timesteps is the budget; one rollout shows it is applied."""
    assert main([*TAILRISK, "--algo", "ppo", "--timesteps", "1", "--hparams", "n_epochs=1"]) == 0
    out = capsys.readouterr().out
    assert "hyperparameters of SyntheticTailRisk-v0 from" in out and "ordergrad_ppo.yml" in out
    assert "learn_log_std" in out


def test_train_evaluates_each_seed_on_its_own_env_seeds(monkeypatch):
    """The evaluation envs of seeds 0 and 1 are disjoint blocks: a batched evaluation env runs ``eval_episodes``
    envs at once, and envs seeded ``seed + 10**6 + i`` made adjacent seeds share all but one of them."""
    import ordergrad_rl.envs
    from ordergrad_rl.zoo.training import TrainSettings, build_model, eval_callback, eval_seed

    real, seen = ordergrad_rl.envs.make_sb3_vec_env, []

    def recording(env_id, n_envs, seed=None, **kwargs):
        seen.append(set(range(seed, seed + n_envs)))
        return real(env_id, n_envs, seed=seed, **kwargs)

    monkeypatch.setattr(ordergrad_rl.envs, "make_sb3_vec_env", recording)
    for seed in (0, 1):
        settings = TrainSettings(
            "ppo", "SyntheticTailRisk-v0", "cvar0.2", seed=seed, eval_env="SyntheticTailRiskDeploy-v0"
        )
        eval_callback(settings, build_model(settings))
    assert len(seen[0]) == len(seen[1]) == 100 and not seen[0] & seen[1]
    assert min(seen[0]) == eval_seed(0) == 1_000_000  # seed 0 keeps its envs
    assert min(seen[1]) == eval_seed(1)


# ---------------------------------------------------------------------------------------------------- normalize
@pytest.mark.parametrize(
    "value, expected",
    [
        ("true", {}),
        ("false", None),
        ("\"{'norm_obs': True, 'norm_reward': False}\"", {"norm_obs": True, "norm_reward": False}),
        ('"dict(norm_obs=False, clip_reward=5.0)"', {"norm_obs": False, "clip_reward": 5.0}),
        ("{norm_reward: true, gamma: 0.9}", {"norm_reward": True, "gamma": 0.9}),
    ],
)
def test_an_entry_reads_rl_zoos_normalize(value, expected, tmp_path):
    """rl-zoo3's ``normalize``: true, or VecNormalize's arguments as a mapping or its text (read as literals). It was
    refused ("not supported by ordergrad-rl")."""
    conf = tmp_path / "conf.yml"
    conf.write_text(f"CartPole-v1:\n  normalize: {value}\n")
    entry = load_hyperparams("ppo", "CartPole-v1", conf)
    assert entry.normalize == expected and "normalize" not in entry.kwargs


def test_train_normalizes_as_rl_zoo_and_evaluate_and_trained_agent_load_the_statistics(tmp_path, capsys, monkeypatch):
    """``normalize: true`` wraps the training env in VecNormalize (rl-zoo3's discount: the entry's gamma) and the
    eval env in one with its statistics, frozen, on raw rewards; ``--save`` writes ``<save>/vecnormalize.pkl``
    (``--save-freq``: SB3's checkpoint files beside), which ``evaluate``, ``compare`` and ``-i`` load. A ranked
    objective normalizes the observations only; the mean normalizes the rewards too, as rl-zoo3. The key was refused,
    and a model that trained on normalized observations was evaluated on raw ones."""
    from stable_baselines3.common.vec_env import VecNormalize

    from ordergrad_rl.zoo import models

    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 64\n  normalize: true\n  gamma: 0.9\n  n_epochs: 1\n")
    base = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--quiet", "--n-episodes", "4", "--conf-file", str(conf)]
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    save = tmp_path / "models" / "cartpole"
    argv = [*base, "--objective", "cvar0.25", "--save", str(save), "--save-freq", "32",
            "--eval-env", "CartPole-v1", "--eval-episodes", "2", "--eval-freq", "32"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    trained = built[-1].get_vec_normalize_env()
    assert (trained.norm_obs, trained.norm_reward, trained.gamma) == (True, False, 0.9)
    assert "CartPole-v1 in VecNormalize(norm_obs=True, norm_reward=False)" in out
    statistics = tmp_path / "models" / "cartpole" / "vecnormalize.pkl"
    assert f"VecNormalize statistics: {statistics}" in out
    assert VecNormalize.load(str(statistics), built[-1].get_env()).obs_rms.count == trained.obs_rms.count
    assert sorted(tmp_path.glob("models/cartpole_vecnormalize_*_steps.pkl"))  # beside each checkpoint

    assert main([*base, "--objective", "mean", "--timesteps", "32"]) == 0
    mean = built[-1].get_vec_normalize_env()
    assert (mean.norm_obs, mean.norm_reward, mean.gamma) == (True, True, 0.9)

    wrapped = []
    frozen = models.frozen_vec_normalize
    monkeypatch.setattr(models, "frozen_vec_normalize", lambda *a: wrapped.append(frozen(*a)) or wrapped[-1])
    checkpoint = sorted(tmp_path.glob("models/cartpole_*_steps.zip"))[0]
    for model in (str(save), str(checkpoint)):
        assert main(["evaluate", model, "--env", "CartPole-v1", "--episodes", "2", "--quiet"]) == 0
        assert not wrapped[-1].training and not wrapped[-1].norm_reward and wrapped[-1].obs_rms.count > 0
    assert wrapped[0].obs_rms.count == trained.obs_rms.count

    loaded, load = [], train.load_trained_agent
    monkeypatch.setattr(train, "load_trained_agent", lambda *a, **kw: loaded.append(load(*a, **kw)) or loaded[-1])
    more = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--quiet", "-i", f"{save}.zip", "--timesteps", "32"]
    assert main(more) == 0
    going_on = loaded[-1].get_vec_normalize_env()
    assert going_on.training and not going_on.norm_reward and going_on.obs_rms.count > trained.obs_rms.count
    capsys.readouterr()

    # A model without VecNormalize saved at the same path: its evaluation normalized with the statistics left there.
    again = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--timesteps", "8",
             "--n-episodes", "2", "--quiet", "--conf-file", "none", "--save", str(tmp_path / "plain")]  # fmt: skip
    assert main(again) == 0 and main([*base, "--objective", "mean", "--save", str(tmp_path / "plain")]) == 0
    assert (tmp_path / "plain" / "vecnormalize.pkl").is_file()
    assert main(again) == 0
    assert not (tmp_path / "plain" / "vecnormalize.pkl").exists()
    capsys.readouterr()

    statistics.unlink()  # the save records that its policy acts on normalized observations
    for command in (["evaluate", str(save), "--env", "CartPole-v1", "--quiet"], more):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "was trained in VecNormalize(norm_obs=True, norm_reward=False)" in err and str(statistics) in err


def test_models_of_an_rl_zoo_run_folder_load_the_statistics_rl_zoo_saves_there(tmp_path, capsys, monkeypatch):
    """rl-zoo3's run folder ``logs/ppo/CartPole-v1_1`` holds ``best_model.zip`` and checkpoints beside
    ``CartPole-v1/vecnormalize.pkl``, which its ``enjoy`` loads for all of them. ``compare`` and ``evaluate`` of
    ``best_model.zip`` looked for ``best_model/vecnormalize.pkl`` only: an SB3 model ran on raw observations (its
    rows differed from the same model's saved as ``CartPole-v1.zip``), an OrderGrad one was refused."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from ordergrad_rl.agents import OrderGradPPO
    from ordergrad_rl.zoo import models

    wrapped = []
    frozen = models.frozen_vec_normalize
    monkeypatch.setattr(models, "frozen_vec_normalize", lambda *a: wrapped.append(frozen(*a)) or wrapped[-1])
    for algo, cls, kwargs in [("ppo", PPO, {"n_steps": 8}), ("ordergrad_ppo", OrderGradPPO, {"n_episodes": 2})]:
        run = tmp_path / "logs" / algo / "CartPole-v1_1"
        (run / "CartPole-v1").mkdir(parents=True)
        venv = VecNormalize(make_vec_env("CartPole-v1", 1, seed=0), norm_reward=False)
        venv.reset()
        for _ in range(20):  # statistics far from the identity
            venv.step([0])
        model = cls("MlpPolicy", venv, seed=0, **kwargs)
        model.save(run / "best_model")
        venv.save(run / "CartPole-v1" / "vecnormalize.pkl")
        assert (
            models.saved_statistics(run / "best_model.zip", "CartPole-v1") == run / "CartPole-v1" / "vecnormalize.pkl"
        )
        wrapped.clear()
        argv = [str(run / "best_model.zip"), "--env", "CartPole-v1", "--episodes", "1", "--quiet"]
        assert main(["evaluate", *argv]) == 0, capsys.readouterr().err
        assert main(["compare", *argv, "--out", str(tmp_path / "compare")]) == 0, capsys.readouterr().err
        assert [normalize.obs_rms.count for normalize in wrapped] == [venv.obs_rms.count] * 2
    # Not in a run folder of rl-zoo3: models/other.zip is not models/CartPole-v1.zip's, whose statistics are there.
    (tmp_path / "models").mkdir()
    (tmp_path / "logs" / "ppo" / "CartPole-v1_1" / "CartPole-v1").rename(tmp_path / "models" / "CartPole-v1")
    (tmp_path / "logs" / "ppo" / "CartPole-v1_1" / "best_model.zip").rename(tmp_path / "models" / "other.zip")
    assert models.saved_statistics(tmp_path / "models" / "other.zip", "CartPole-v1") is None


def test_normalize_on_an_env_vecnormalize_cannot_normalize_names_the_entry(tmp_path, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text("CliffWalking-v1:\n  normalize: true\n")
    argv = ["train", "--algo", "ppo", "--env", "CliffWalking-v1", "--objective", "mean", "--timesteps", "8",
            "--conf-file", str(conf)]  # fmt: skip
    assert main(argv) == 2
    assert "conf.yml: CliffWalking-v1: normalize: VecNormalize only supports" in capsys.readouterr().err


def test_an_entry_without_a_policy_gets_the_algorithms_first(tmp_path, capsys):
    """An entry without ``policy`` gave "MlpPolicy" to every algorithm, and ``--algo recurrent_ppo`` with a
    --conf-file failed ("OrderGradRecurrentPPO: Policy MlpPolicy unknown"): it gets MlpLstmPolicy, as without one."""
    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 16\n")
    assert load_hyperparams("recurrent_ppo", "CartPole-v1", conf).policy == "MlpLstmPolicy"
    assert load_hyperparams("ppo", "CartPole-v1", conf).policy == "MlpPolicy"
    argv = ["train", "--algo", "recurrent_ppo", "--env", "CartPole-v1", "--objective", "cvar0.25", "--n-episodes", "4",
            "--hparams", "n_epochs=1", "--quiet", "--conf-file", str(conf)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err


def test_an_entry_takes_rl_zoos_policy_kwargs_text(tmp_path, capsys):
    """rl-zoo3's files write ``policy_kwargs`` as the text of a dict, with ``nn.ReLU`` for an activation; it was
    refused ("expects a dict ..., got str"). It is read (not run), in a file and in ``--hparams`` alike."""
    from torch import nn

    conf = tmp_path / "conf.yml"
    conf.write_text(
        'CartPole-v1:\n  policy_kwargs: "dict(ortho_init=False, activation_fn=nn.ReLU,\n'
        '                       net_arch=dict(pi=[8], vf=[8]))"\n'
    )
    hp = load_hyperparams("ppo", "CartPole-v1", conf)
    expected = {"ortho_init": False, "activation_fn": nn.ReLU, "net_arch": {"pi": [8], "vf": [8]}}
    assert hp.kwargs["policy_kwargs"] == expected
    model = algorithm_class("ppo")(hp.policy, "CartPole-v1", objective="cvar0.25", n_episodes=4, **hp.kwargs)
    assert isinstance(model.policy.mlp_extractor.policy_net[1], nn.ReLU)
    argv = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--timesteps", "8", "--quiet",
            "--conf-file", "none", "--n-episodes", "2", "--hparams", "n_epochs=1"]  # fmt: skip
    assert main([*argv, "policy_kwargs=dict(activation_fn=nn.Tanh, net_arch=[4])"]) == 0
    conf.write_text('CartPole-v1:\n  policy_kwargs: "dict(optimizer_class=RMSpropTFLike)"\n')
    with pytest.raises(ValueError, match="policy_kwargs expects a dict .* got 'RMSpropTFLike' in"):
        load_hyperparams("ppo", "CartPole-v1", conf)
    conf.write_text('CartPole-v1:\n  policy_kwargs: "{[8]: 1}"\n')  # an unhashable key: no TypeError traceback
    with pytest.raises(ValueError, match=r"got text that is not a Python value \(unhashable type: 'list'\)"):
        load_hyperparams("ppo", "CartPole-v1", conf)
    assert main([*argv, "policy_kwargs=dict(net_arch=[4]"]) == 2
    assert "policy_kwargs expects a dict such as {'key': 1} or None, got text that is not a Python value" in (
        capsys.readouterr().err
    )


def test_policy_kwargs_text_names_the_grid_trunk(tmp_path):
    """``--hparams "policy_kwargs=dict(features_extractor_class=GridCNN)"`` (and a file's) was refused ("'GridCNN'
    ... is not a Python literal"): train could not give MinAtar's grids the trunk reproduce minatar trains with."""
    from ordergrad_rl.agents import GridCNN
    from ordergrad_rl.zoo.algorithms import parse_hparams

    conf = tmp_path / "conf.yml"
    conf.write_text('CartPole-v1:\n  policy_kwargs: "dict(features_extractor_class=GridCNN, net_arch=[8])"\n')
    expected = {"features_extractor_class": GridCNN, "net_arch": [8]}
    assert load_hyperparams("ppo", "CartPole-v1", conf).kwargs["policy_kwargs"] == expected
    cls = algorithm_class("ppo")
    assert parse_hparams(["policy_kwargs=dict(features_extractor_class=GridCNN)"], cls) == {
        "policy_kwargs": {"features_extractor_class": GridCNN}
    }


def test_a_conf_file_without_an_entry_for_the_env_is_refused(tmp_path, capsys, monkeypatch):
    """A user's --conf-file was silently ignored when it had no entry for --env (a typo, another version of the id):
    the run trained with the class defaults. rl-zoo3 refuses it ("Hyperparameters not found"); so does train, naming
    the closest entry. The shipped file still falls back to the class defaults."""
    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1:\n  n_epochs: 1\n")
    base = ["train", "--algo", "ppo", "--objective", "mean", "--timesteps", "8", "--n-episodes", "2", "--quiet"]
    assert main([*base, "--env", "CartPole-v0", "--conf-file", str(conf)]) == 2
    assert (
        f"--conf-file {conf} has no entry for CartPole-v0 (did you mean CartPole-v1?); its entries: CartPole-v1. "
        "Add one, or give --conf-file none" in capsys.readouterr().err
    )
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    assert main([*base, "--env", "CartPole-v1", "--conf-file", str(conf)]) == 0 and built[-1].n_epochs == 1
    assert main([*base, "--env", "CartPole-v0"]) == 0 and built[-1].n_epochs == 10  # no shipped entry: the defaults


def test_train_prints_the_entrys_values_the_model_is_built_with(tmp_path, capsys):
    """The line listing the entry printed the file's values that --hparams and the options had replaced
    (``learning_rate=0.01`` while the model trained with 0.1); rl-zoo3 prints the values it builds with."""
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 8\n  learning_rate: 0.01\n  n_epochs: 2\n  n_episodes: 6\n")
    argv = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "mean", "--quiet", "--n-episodes", "4",
            "--conf-file", str(conf), "--hparams", "learning_rate=0.1"]  # fmt: skip
    assert main(argv) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("hyperparameters of")]
    assert line == (
        f"hyperparameters of RiskyBandit-v0 from {conf}: n_epochs=2, n_timesteps=8; instead of the file's, --hparams "
        "and the options give learning_rate=0.1, n_episodes=4"
    )


def test_an_entry_reads_numbers_that_yaml_reads_as_text(tmp_path):
    """``learning_rate: 3e-4`` (YAML 1.1 reads it as the string "3e-4") was refused ("expects a number, got str"),
    while ``n_timesteps: 1e5`` and a sweep's ``3e-4`` are numbers: an entry's values are read as a sweep's."""
    conf = tmp_path / "conf.yml"
    conf.write_text("RiskyBandit-v0:\n  n_timesteps: 1e5\n  learning_rate: 3e-4\n  ent_coef: 1e-2\n  n_epochs: 4\n")
    hp = load_hyperparams("ppo", "RiskyBandit-v0", conf)
    assert hp.kwargs == {"learning_rate": 3e-4, "ent_coef": 0.01, "n_epochs": 4} and hp.n_timesteps == 100_000
    conf.write_text("RiskyBandit-v0:\n  n_epochs: 4e0\n")  # a float is still no integer
    with pytest.raises(ValueError, match="n_epochs expects an integer, got float 4.0"):
        load_hyperparams("ppo", "RiskyBandit-v0", conf)


def test_a_module_qualified_env_id_gets_its_entry(capsys):
    """``--env ordergrad_rl:SyntheticTailRisk-v0`` (gym.make's "module:EnvId" form, the README's for SubprocVecEnv
    workers) is the same env, but the shipped entry was not applied: it trained with the class defaults, silently."""
    qualified = load_hyperparams("reinforce", "ordergrad_rl:SyntheticTailRisk-v0")
    plain = load_hyperparams("reinforce", "SyntheticTailRisk-v0")
    assert qualified is not None and qualified.kwargs == plain.kwargs and qualified.n_timesteps == plain.n_timesteps
    argv = ["train", "--algo", "reinforce", "--env", "ordergrad_rl:SyntheticTailRisk-v0", "--objective", "cvar0.2",
            "--timesteps", "1", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert "hyperparameters of ordergrad_rl:SyntheticTailRisk-v0 from" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------- env_wrapper
@pytest.mark.parametrize(
    "value, expected",
    [
        ("gymnasium.wrappers.FlattenObservation", (("gymnasium.wrappers.FlattenObservation", {}),)),
        ("null", ()),
        (
            "[gymnasium.wrappers.FlattenObservation, {gymnasium.wrappers.TimeLimit: {max_episode_steps: 20}}]",
            (
                ("gymnasium.wrappers.FlattenObservation", {}),
                ("gymnasium.wrappers.TimeLimit", {"max_episode_steps": 20}),
            ),
        ),
        ("[{gymnasium.wrappers.FlattenObservation: null}]", (("gymnasium.wrappers.FlattenObservation", {}),)),
    ],
)
def test_an_entry_reads_rl_zoos_env_wrapper(value, expected, tmp_path):
    """rl-zoo3's ``env_wrapper``: a dotted path, a list of them, a one-key mapping ``{path: kwargs}`` in place of one.
    It was refused ("rl-zoo3's env_wrapper is not supported by ordergrad-rl")."""
    conf = tmp_path / "conf.yml"
    conf.write_text(f"Blackjack-v1:\n  env_wrapper: {value}\n")
    entry = load_hyperparams("ppo", "Blackjack-v1", conf)
    assert entry.env_wrapper == expected and "env_wrapper" not in entry.kwargs


def test_train_in_an_env_wrapper_and_evaluate_compare_and_trained_agent_make_their_envs_in_it(
    tmp_path, capsys, monkeypatch
):
    """``train --env Blackjack-v1`` says to flatten its Tuple observations with FlattenObservation, but an entry's
    ``env_wrapper`` was refused, so the CLI could not train on it. The wrapper now makes every env of the run, the
    ``--eval-env`` too; ``--save`` writes it to ``<save>/env_wrapper.yml``, where ``evaluate``, ``compare`` and
    ``-i`` (of a checkpoint too) read it. A save without a wrapper at the same path removes the file."""
    from gymnasium.wrappers import FlattenObservation
    from stable_baselines3.common.monitor import Monitor

    conf = tmp_path / "conf.yml"
    conf.write_text("Blackjack-v1:\n  n_timesteps: 200\n  env_wrapper: gymnasium.wrappers.FlattenObservation\n")
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    save = tmp_path / "models" / "blackjack"
    argv = ["train", "--algo", "ppo", "--env", "Blackjack-v1", "--objective", "cvar0.25", "--n-episodes", "16",
            "--hparams", "n_epochs=1", "--quiet", "--conf-file", str(conf), "--save", str(save), "--save-freq", "100",
            "--eval-env", "Blackjack-v1", "--eval-freq", "100", "--eval-episodes", "4"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "env_wrapper=['gymnasium.wrappers.FlattenObservation']" in out
    assert "OrderGradPPO on Blackjack-v1 in FlattenObservation():" in out and "last evaluation" in out
    env = built[-1].get_env().envs[0]
    assert isinstance(env, FlattenObservation) and isinstance(env.env, Monitor)  # outside the Monitor, as rl-zoo3
    assert (tmp_path / "models" / "blackjack" / "env_wrapper.yml").is_file()

    checkpoint = sorted(tmp_path.glob("models/blackjack_*_steps.zip"))[0]
    for model in (str(save), str(checkpoint)):
        assert main(["evaluate", model, "--env", "Blackjack-v1", "--episodes", "4", "--quiet"]) == 0, (
            capsys.readouterr().err
        )
    compare = ["compare", str(save), str(checkpoint), "--env", "Blackjack-v1", "--episodes", "4", "--quiet",
               "--out", str(tmp_path / "compare")]  # fmt: skip
    assert main(compare) == 0, capsys.readouterr().err
    more = ["train", "--algo", "ppo", "--env", "Blackjack-v1", "--quiet", "-i", str(checkpoint), "--timesteps", "50",
            "--save", str(tmp_path / "more")]  # fmt: skip
    assert main(more) == 0, capsys.readouterr().err
    assert "OrderGradPPO on Blackjack-v1 in FlattenObservation():" in capsys.readouterr().out
    assert (tmp_path / "more" / "env_wrapper.yml").is_file()

    cartpole = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--timesteps", "8",
                "--n-episodes", "2", "--quiet", "--conf-file", "none", "--save", str(save)]  # fmt: skip
    assert main(cartpole) == 0
    assert not (tmp_path / "models" / "blackjack" / "env_wrapper.yml").exists()  # not CartPole's wrapper


def test_a_wrapper_that_refuses_the_env_is_a_usage_error_under_subproc_too(tmp_path, capsys):
    """``--vec-env subproc``: a wrapper's refusal was a traceback of every worker, then ``ConnectionResetError``."""
    conf = tmp_path / "conf.yml"
    conf.write_text("Blackjack-v1:\n  env_wrapper: [{gymnasium.wrappers.TimeLimit: {max_episode_steps: -3}}]\n")
    argv = ["train", "--algo", "ppo", "--env", "Blackjack-v1", "--objective", "cvar0.25", "--timesteps", "8",
            "--quiet", "--conf-file", str(conf), "--vec-env", "subproc", "--n-envs", "2"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl train: error: ") and "Traceback" not in err
    assert "conf.yml: Blackjack-v1: env_wrapper: gymnasium.wrappers.TimeLimit(max_episode_steps=-3) cannot wrap" in err


def test_an_entrys_env_wrappers_take_keyword_arguments_innermost_first(tmp_path, capsys, monkeypatch):
    """rl-zoo3's list form, ``{path: kwargs}`` in place of a path: the first wrapper is the innermost, all outside
    the Monitor (SB3's ``make_vec_env(wrapper_class=...)``), each with its keyword arguments; but a ``TimeLimit``,
    which is ``gym.make``'s, inside the Monitor (tests/test_zoo_compat.py)."""
    from gymnasium.wrappers import ClipReward, FlattenObservation, TimeLimit
    from stable_baselines3.common.monitor import Monitor

    conf = tmp_path / "conf.yml"
    conf.write_text(
        "Blackjack-v1:\n  env_wrapper:\n    - gymnasium.wrappers.FlattenObservation\n"
        "    - gymnasium.wrappers.TimeLimit:\n        max_episode_steps: 1\n"
        "    - gymnasium.wrappers.ClipReward: {min_reward: -1, max_reward: 1}\n"
    )
    built, build = [], train.build_model
    monkeypatch.setattr(train, "build_model", lambda *a, **kw: built.append(build(*a, **kw)) or built[-1])
    argv = [
        "train",
        "--algo",
        "ppo",
        "--env",
        "Blackjack-v1",
        "--objective",
        "cvar0.25",
        "--n-episodes",
        "16",
        "--hparams",
        "n_epochs=1",
        "--quiet",
        "--conf-file",
        str(conf),
        "--timesteps",
        "32",
        "--n-envs",
        "2",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "in FlattenObservation() in TimeLimit(max_episode_steps=1) in ClipReward(min_reward=-1, max_reward=1):" in (
        out
    )
    for env in built[-1].get_env().envs:
        assert isinstance(env, ClipReward) and (env.reward(-5.0), env.reward(5.0)) == (-1, 1)
        assert isinstance(env.env, FlattenObservation) and isinstance(env.env.env, Monitor)
        assert isinstance(env.env.env.env, TimeLimit) and env.env.env.env._max_episode_steps == 1
    assert set(built[-1].rollout_buffer.episode_lengths) == {1}  # hits ended by the limit, after one step
