"""``ordergrad-rl reproduce reasoning``: the method definitions, the bootstrap, and the --quick run end to end."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.cli import main
from ordergrad_rl.experiments import reasoning
from ordergrad_rl.experiments.reasoning import (
    DEFAULT_METHODS,
    L_MAX,
    METHODS,
    Config,
    bootstrap_curves,
    quick_config,
    run_experiment,
    weight_diagnostics,
    weight_parts,
)
from ordergrad_rl.passk import pass_at_k

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_scalarized_length_grpo_is_grpo_on_the_scalarized_reward() -> None:
    rng = np.random.default_rng(0)
    correct, length = rng.integers(0, 2, size=32).astype(float), rng.integers(3, 17, size=32).astype(float)
    common = dict(n_episodes=32, group_size=8, normalize_advantage="group", seed=0)
    channels = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective=METHODS["grpo_length"][1], **common)
    grpo = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective="mean", **common)
    np.testing.assert_allclose(
        channels.episode_weights(correct, {"length": length}),
        grpo.episode_weights(correct - 0.2 * length / L_MAX),
        atol=1e-9,
    )
    # The length term of the OrderGrad method penalizes the two longest answers of each 4-subset (Bottom-2@4 of -L).
    weights = OrderGradPPO(
        "MlpPolicy", "TargetSum-v0", objective={"length": ("top2@4", -0.4 / L_MAX)}, n_episodes=8, group_size=8,
        normalize_advantage=False,
    ).episode_weights(np.zeros(8), {"length": np.arange(3.0, 11.0)})  # fmt: skip
    assert np.all(np.diff(weights) <= 0) and weights[-1] < weights[0]  # longer answers get lower weights


@pytest.mark.parametrize("spec", ["max@2", "max@4", "max@6", "top2@4", "top2@6", "top3@6"])
def test_group_normalized_binary_rewards_make_top_m_at_k_a_thresholded_grpo(spec: str) -> None:
    # The documented property: GRPO's weights on the groups with more than K - M wrong answers, zero on the others.
    model = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective=spec, n_episodes=56, group_size=8,
                         normalize_advantage="group")  # fmt: skip
    grpo = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective="mean", n_episodes=56, group_size=8,
                        normalize_advantage="group")  # fmt: skip
    correct = np.concatenate([np.r_[np.ones(c), np.zeros(8 - c)] for c in range(1, 8)])
    weights, reference = model.episode_weights(correct).reshape(7, 8), grpo.episode_weights(correct).reshape(7, 8)
    k, m = model.k, int(spec[3]) if spec.startswith("top") else 1
    for c in range(1, 8):
        expected = reference[c - 1] if 8 - c > k - m else np.zeros(8)
        np.testing.assert_allclose(weights[c - 1], expected, atol=1e-6)


def test_bootstrap_interval() -> None:
    n_correct = np.array([[0, 5, 32, 10], [1, 6, 30, 12]])
    ks = np.array([1, 2, 4])
    mean, low, high = bootstrap_curves(n_correct, 32, ks, np.random.default_rng(0), reps=300)
    np.testing.assert_allclose(mean, pass_at_k(n_correct[..., None], 32, ks).mean(axis=(0, 1)))
    assert np.all(low <= mean) and np.all(mean <= high) and np.all(high - low > 0)


def test_paired_bootstrap_difference() -> None:
    first, second = np.array([[3, 10, 32], [4, 12, 30]]), np.array([[1, 10, 20], [2, 8, 31]])
    ks = np.array([1, 4])
    mean, low, high = bootstrap_curves(np.stack([first, second]), 32, ks, np.random.default_rng(0), reps=300)
    by_hand = (pass_at_k(first[..., None], 32, ks) - pass_at_k(second[..., None], 32, ks)).mean(axis=(0, 1))
    np.testing.assert_allclose(mean, by_hand)
    assert np.all(low <= mean) and np.all(mean <= high)
    # Paired: a method against itself has a zero-width interval at 0.
    _, low, high = bootstrap_curves(np.stack([first, first]), 32, ks, np.random.default_rng(0), reps=50)
    assert np.all(low == 0) and np.all(high == 0)


@pytest.mark.parametrize("normalize", [True, False, "group", "channel"])
def test_weight_diagnostics_split_the_weights_by_channel(normalize) -> None:
    rng = np.random.default_rng(1)
    correct = np.zeros(32)
    correct[8:32] = rng.random(24) < 0.4  # the first group has no correct answer
    correct[8] = 1.0
    length = rng.integers(2, 17, size=32).astype(float)
    model = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective=METHODS["top2_bot2_length"][1], n_episodes=32,
                         group_size=8, n_envs=8, normalize_advantage=normalize)  # fmt: skip
    model.rollout_buffer = SimpleNamespace(
        episode_returns=correct, episode_channels={"length": length}, episode_lengths=length
    )
    parts = weight_parts(model)
    np.testing.assert_allclose(
        (parts["reward"] + parts["length"]).reshape(-1), model.episode_weights(correct, {"length": length}), atol=1e-12
    )
    stats = weight_diagnostics(model)
    zero = ~correct.reshape(4, 8).any(axis=1)
    assert stats["success"] == correct.mean() and stats["length"] == length.mean()
    assert stats["zero_correct_groups"] == zero.mean() > 0
    # The collapse mechanism: summed channels normalized per group give a group without a correct answer the
    # length term at full strength (RMS 1); per channel it keeps its weight 0.4 / L_max.
    expected = {"group": 1.0, "channel": 0.4 / L_MAX}.get(normalize)
    if expected is not None:
        assert stats["rms_weight_zero_groups"] == pytest.approx(expected, rel=1e-6)
    assert 0 < stats["length_share"] < 1


def test_variant_options_are_checked(capsys) -> None:
    assert Config().methods == DEFAULT_METHODS and "top2_bot2_length_w04" not in DEFAULT_METHODS
    with pytest.raises(ValueError, match="methods must be a non-empty subset"):
        Config(methods=("grpo", "ppo"))
    with pytest.raises(ValueError, match="normalize must be one of"):
        Config(normalize="std")
    for bad, message in [
        (["--methods", "ppo"], "argument --methods: invalid choice: 'ppo'"),
        (["--normalize", "std"], "argument --normalize: invalid choice: 'std'"),
        (["--methods"], "argument --methods: expected at least one argument"),
        (["--updates", "0"], "argument --updates: expected an integer >= 1"),
    ]:
        with pytest.raises(SystemExit):
            main(["reproduce", "reasoning", *bad])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "reasoning", "--help"])
    help_text = capsys.readouterr().out
    assert "--methods" in help_text and "--normalize" in help_text and "channel" in help_text


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"seeds": 0}, "seeds must be an integer >= 1, got 0"),  # ran nothing and returned an empty summary
        ({"n_groups": 0}, "n_groups must be an integer >= 1, got 0"),
        ({"samples": -1}, "samples must be an integer >= 1, got -1"),
        ({"group_size": 8.0}, r"group_size must be an integer >= 1, got 8\.0"),
        ({"methods": "grpo"}, "methods must be a non-empty subset of .*, got 'grpo'"),  # was "got ['g', 'r', ...]"
    ],
)
def test_the_python_api_refuses_what_the_command_line_refuses(sizes, message) -> None:
    with pytest.raises(ValueError, match=message):
        Config(**sizes)


def test_more_test_problems_than_the_split_are_refused_before_the_base_model_is_built(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="test_problems=101, but the test split has 100 problems"):
        run_experiment(dataclasses.replace(quick_config(), test_problems=101), quiet=True)
    assert not any(tmp_path.iterdir())  # it failed in the sampler, after the build, printing every problem index


@pytest.mark.slow
def test_quick_run_with_variant_options(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path / "cache"))
    methods = ["top2at4", "grpo_length", "top2_bot2_length_w04"]
    argv = ["reproduce", "reasoning", "--quick", "--quiet", "--out", str(tmp_path / "out"), "--normalize", "channel"]
    assert main([*argv, "--methods", *methods, "--json", str(tmp_path / "r.json")]) == 0
    payload = json.loads((tmp_path / "r.json").read_text())
    assert list(payload["methods"]) == methods
    assert payload["config"]["methods"] == methods and payload["config"]["normalize"] == "channel"
    assert payload["normalize_advantage"] == "channel"
    for method in methods:
        (run,) = payload["methods"][method]["runs"]
        assert len(run["train_curve"]) == payload["config"]["updates"]
        assert ("length_share" in run["train_curve"][0]) == ("length" in method)
    assert set(payload["differences"]) == {"top2_bot2_length_w04 - top2at4"}
    out = capsys.readouterr().out
    assert "normalize channel" in out and "paired differences" in out
    # Only the figures whose methods ran.
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == [
        "reasoning_effect_of_k.png", "reasoning_length.png", "reasoning_length_passk.png", "reasoning_passk.png",
        "reasoning_training.png",
    ]  # fmt: skip


@pytest.mark.slow
def test_quick_run_writes_every_method(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path / "cache"))
    argv = ["reproduce", "reasoning", "--quick", "--quiet", "--out", str(tmp_path / "out")]
    assert main([*argv, "--json", str(tmp_path / "r.json")]) == 0
    payload = json.loads((tmp_path / "r.json").read_text())
    assert set(payload["methods"]) == set(DEFAULT_METHODS)
    assert payload["ks"] == [1, 2, 4, 8, 16, 32]
    for entry in [payload["base"], *payload["methods"].values()]:
        curve = entry["pass_at_k"]
        values = list(curve.values()) if isinstance(curve, dict) else curve
        assert len(values) == 6 and np.all(np.diff(values) >= -1e-12)
    for entry in payload["methods"].values():
        assert np.all(np.array(entry["ci_low"]) <= np.array(entry["pass_at_k"]) + 1e-12)
        assert len(entry["runs"]) == 1
    out = capsys.readouterr().out
    assert "total time:" in out and "Top-2@4 + Bottom-2@4 length" in out
    figures = [path.name for path in (tmp_path / "out").glob("*.png")]
    assert len(figures) == 6
    assert [name for name in figures if f"``{name}``" not in reasoning.__doc__] == []  # --help names every figure


def test_every_method_trains_with_the_measured_bonus_and_no_novelty(tmp_path, monkeypatch) -> None:
    # The README table was measured with no entropy bonus and no novelty for every method; the ranked objectives'
    # agent defaults have moved since (the mean's have not), so train_run pins them, the same for every method.
    from dataclasses import replace

    from ordergrad_rl.experiments.reasoning import quick_config, train_run
    from ordergrad_rl.reasoning import build_base_model

    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path / "cache"))
    config = replace(quick_config(), updates=0)
    base = build_base_model(config.base_config(), seed=0)
    for method in METHODS:
        model, _ = train_run(method, 0, config, base)
        assert model.ent_coef == 0.0 and model.novelty_when_blind is False, method


def test_a_run_of_single_updates_does_not_tell_the_user_to_raise_total_timesteps(tmp_path, monkeypatch) -> None:
    # train_run trains by learn(1), one rollout and one update each, by design: the agent's few-updates warning at the
    # first call told every method of `reproduce reasoning` (9 times with --quick) to raise a total_timesteps that no
    # option of the command sets.
    import warnings
    from dataclasses import replace

    from ordergrad_rl.experiments.reasoning import quick_config, train_run
    from ordergrad_rl.reasoning import build_base_model

    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path / "cache"))
    config = replace(quick_config(), updates=2)
    base = build_base_model(config.base_config(), seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, curve = train_run("grpo", 0, config, base)
    assert len(curve) == 2
    assert [str(w.message) for w in caught if "total_timesteps" in str(w.message)] == []
