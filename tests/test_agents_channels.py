"""Multi-channel objectives: the grammar, the weighted sum of per-channel advantages, collection, logs, save/load."""

from __future__ import annotations

import io
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.logger import HumanOutputFormat, KVWriter, Logger

from ordergrad_rl.agents import ChannelObjective, OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.channels import InfoChannelError, InfoChannels
from ordergrad_rl.core import Objective, lstat_advantage
from ordergrad_rl.core.channels import parse_objective

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAPER = {"reward": "top2@4", "length": ("bot2@4", 0.4)}


@pytest.mark.parametrize(
    "spec",
    [
        PAPER,
        "reward=top2@4 + 0.4*length=bot2@4",
        "  reward = TopM:2@4 +0.4 * length=BotM:2@4 ",
        "reward=cvar0.2@8 + -0.2*cost=mean",
        "reward=alpha[0.5,0,0.5] + 1e-3*x.y=max@4",
        {"length": ("mean", -1.0)},
    ],
)
def test_canonical_string_parses_back(spec: Any) -> None:
    parsed = parse_objective(spec)
    assert isinstance(parsed, ChannelObjective)
    assert parse_objective(str(parsed)) == parsed
    assert str(parse_objective(str(parsed))) == str(parsed)


def test_grammar() -> None:
    assert str(parse_objective(PAPER)) == "reward=top2@4 + 0.4*length=bot2@4"
    assert parse_objective(PAPER) == parse_objective("reward=top2@4 + 0.4*length=bot2@4")
    # The reward alone at weight 1 is a plain objective.
    assert parse_objective({"reward": "top2@4"}) == Objective.parse("top2@4")
    assert parse_objective("reward=cvar0.2", k=10) == Objective.parse("cvar0.2@10")
    # k is a default: a channel that fixes its own keeps it.
    assert str(parse_objective("reward=max + length=bot2@4", k=8)) == "reward=max@8 + length=bot2@4"
    assert parse_objective(PAPER).info_channels == ("length",)
    assert parse_objective(PAPER).k == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "at least one channel"),
        ("reward=top2@4 + length", r"channel 'reward': malformed objective spec 'top2@4 \+ length'"),
        ("reward=top2@4 + 0.4*=bot2@4", "malformed channel term 'reward=top2@4 \\+ 0.4\\*=bot2@4'"),
        # A penalty written with "-" (or terms joined by ","): was "channel 'reward': malformed objective spec".
        ("reward=top2@4 - 0.4*length=bot2@4", r"joined by '\+'.*a negative weight is '\+ -0.4\*length=bot2@4'"),
        ("reward=top2@4, length=bot2@4", "malformed channel term 'reward=top2@4, length=bot2@4'"),
        ("=top2@4", "malformed channel term"),
        ({"reward": "top2@4", "len gth": "mean"}, "channel names are"),
        ({"reward": ("top2@4", float("nan"))}, "must be a finite real number"),
        ({"reward": ("top2@4", "0.4")}, "must be a finite real number"),
        ({"reward": ("top2@4", 0.4, 1)}, r"channel 'reward': expected an objective or an \(objective, weight\) pair"),
        ({"reward": ()}, r"channel 'reward': expected an objective or an \(objective, weight\) pair"),
        ({"reward": "top2@4", "length": "tpo2@4"}, "channel 'length'"),
        ("reward=top2@4 + reward=mean", "distinct"),
    ],
)
def test_bad_specs(spec: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_objective(spec)


def test_advantage_is_the_weighted_sum_of_channel_advantages() -> None:
    rng = np.random.default_rng(0)
    returns, length = rng.normal(size=24), rng.integers(3, 17, size=24).astype(float)
    common = dict(n_episodes=24, group_size=8, normalize_advantage=False, seed=0)
    model = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", objective=PAPER, **common)
    by_hand = np.concatenate(
        [
            4 * lstat_advantage(returns[g : g + 8], "top2@4") + 0.4 * 4 * lstat_advantage(length[g : g + 8], "bot2@4")
            for g in range(0, 24, 8)
        ]
    )
    np.testing.assert_allclose(model.episode_weights(returns, {"length": length}), by_hand, atol=1e-12)
    # A channel with weight 0 changes nothing.
    silent = OrderGradREINFORCE(
        "MlpPolicy", "TargetSum-v0", objective={"reward": "top2@4", "length": ("bot2@4", 0.0)}, **common
    )
    plain = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", objective="top2@4", **common)
    np.testing.assert_array_equal(silent.episode_weights(returns, {"length": length}), plain.episode_weights(returns))
    with pytest.raises(ValueError, match="channels \\['length'\\] are needed"):
        model.episode_weights(returns)
    # Episode counts that do not fit were NumPy's "cannot reshape array of size 23 into shape (8)".
    with pytest.raises(ValueError, match="one value per episode, got .*'reward': 24, 'length': 23"):
        model.episode_weights(returns, {"length": length[:-1]})
    with pytest.raises(ValueError, match="20 episodes do not make groups of group_size=8"):
        model.episode_weights(returns[:20], {"length": length[:20]})


def test_channel_values_that_do_not_fit_are_named() -> None:
    # A missing channel was a bare KeyError; channels of other shapes failed in NumPy ("inhomogeneous shape") or,
    # where they broadcast ([1, G] against [n_groups, G]), could not be told from the user's mistake.
    objective = parse_objective(PAPER)
    returns = np.arange(12.0).reshape(3, 4)
    missing = r"no episode values for the channels \['length'\] of .*: got \['reward'\]"
    for method in (objective.channel_weights, objective.advantage_weights, objective.values):
        with pytest.raises(ValueError, match=missing):
            method({"reward": returns})
        for length in (returns[:1], returns[0], returns.ravel()):
            with pytest.raises(
                ValueError, match=re.escape(f"[..., N], got {{'reward': (3, 4), 'length': {length.shape}}}")
            ):
                method({"reward": returns, "length": length})


def test_per_channel_normalization_by_hand() -> None:
    # The mean objective's leave-one-out advantage is N/(N-1) (R_i - group mean): divided by its group std, it is
    # the z-score (R_i - mean) / std (ddof 0), or 0 for a constant group. Computed here without the library.
    correct = np.array([0, 0, 0, 0, 1, 0, 0, 1], dtype=float)
    length = np.array([2, 4, 6, 8, 3, 3, 9, 5], dtype=float)

    def z(x: np.ndarray) -> np.ndarray:
        x = x.reshape(2, 4)
        std = x.std(axis=1, keepdims=True)
        return np.divide(x - x.mean(axis=1, keepdims=True), std, out=np.zeros_like(x), where=std > 0).reshape(-1)

    common = dict(objective={"reward": "mean", "length": ("mean", -0.5)}, n_episodes=8, group_size=4, seed=0)
    channel = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", normalize_advantage="channel", **common)
    summed = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", normalize_advantage="group", **common)
    np.testing.assert_allclose(
        channel.episode_weights(correct, {"length": length}), z(correct) - 0.5 * z(length), atol=1e-6
    )
    # "group" normalizes the sum: in the first group (no correct answer) the length term is at full strength,
    # [-3, -1, 1, 3] / sqrt(5), where per channel it keeps its weight 0.5.
    np.testing.assert_allclose(
        summed.episode_weights(correct, {"length": length}), z(correct - 0.5 * length), atol=1e-6
    )
    np.testing.assert_allclose(
        summed.episode_weights(correct, {"length": length})[:4], -np.array([-3, -1, 1, 3]) / np.sqrt(5), atol=1e-6
    )
    # A ranked channel: per-channel normalization of Bottom-2@4 of the length scales the group-normalized
    # advantage by the weight (rescaling a channel's reward changes nothing once it is normalized).
    ranked = OrderGradREINFORCE(
        "MlpPolicy", "TargetSum-v0", objective={"reward": "top2@3", "length": ("top2@3", -0.4)}, n_episodes=8,
        group_size=4, normalize_advantage="channel",
    )  # fmt: skip
    a_len = 3 * lstat_advantage(length.reshape(2, 4), "top2@3")
    a_cor = 3 * lstat_advantage(correct.reshape(2, 4), "top2@3")
    by_hand = [
        (a_cor[g] / (a_cor[g].std() + 1e-8) - 0.4 * a_len[g] / (a_len[g].std() + 1e-8)) for g in range(2)
    ]  # fmt: skip
    np.testing.assert_allclose(ranked.episode_weights(correct, {"length": length}), np.concatenate(by_hand), atol=1e-9)
    np.testing.assert_allclose(
        ranked.episode_weights(correct, {"length": 1000.0 * length}),
        ranked.episode_weights(correct, {"length": length}),
        atol=1e-6,
    )
    # One-channel objectives: "channel" is "group".
    plain = dict(objective="top2@3", n_episodes=8, group_size=4, seed=0)
    np.testing.assert_array_equal(
        OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", normalize_advantage="channel", **plain).episode_weights(length),
        OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", normalize_advantage="group", **plain).episode_weights(length),
    )


class Capture(KVWriter):
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.rows.append(dict(key_values))


def test_info_channel_is_collected_logged_and_saved(tmp_path) -> None:
    model = OrderGradPPO("MlpPolicy", "TargetSum-v0", objective=PAPER, n_episodes=32, group_size=8, n_envs=8, seed=1)
    capture = Capture()
    model.set_logger(Logger(folder=None, output_formats=[capture]))
    model.learn(1)
    buffer = model.rollout_buffer
    # TargetSum reports info["length"] = 1 per generated token: the channel is the episode length.
    np.testing.assert_array_equal(buffer.episode_channels["length"], buffer.episode_lengths)
    logged = capture.rows[-1]
    assert logged["risk/length/mean"] == pytest.approx(buffer.episode_lengths.mean())
    assert {"risk/length/cvar_0.1", "risk/reward/objective", "risk/length/objective", "risk/mean"} <= logged.keys()
    total = logged["risk/reward/objective"] + 0.4 * logged["risk/length/objective"]
    assert logged["risk/objective"] == pytest.approx(total)
    assert str(model.objective) == "reward=top2@4 + 0.4*length=bot2@4"
    model.save(tmp_path / "m.zip")
    loaded = OrderGradPPO.load(tmp_path / "m.zip", env=model.env)
    assert loaded.objective == model.objective and loaded.k == 4
    loaded.learn(1)


class ViolationInfo(gym.Wrapper):
    """Reports ``info["constraint_violation"] = 1`` every step."""

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, "constraint_violation": 1.0}


def test_a_long_channel_name_does_not_break_sb3s_stdout_table() -> None:
    # The stdout/log table cuts keys to 36 characters and raised "Key '   constraint_violation/quantile_0.25'
    # truncated to ... that already exists" at the first dump of a verbose model: the cut keys now skip that table.
    objective = {"reward": "cvar0.5", "constraint_violation": ("mean", -0.1)}
    model = OrderGradREINFORCE("MlpPolicy", ViolationInfo(gym.make("RiskyBandit-v0")), objective, n_episodes=8, seed=0)
    stdout, capture = io.StringIO(), Capture()
    model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stdout), capture]))
    model.learn(1)
    for key in ("quantile_0.05", "quantile_0.25", "cvar_0.05", "objective", "mean"):
        assert capture.rows[-1][f"risk/constraint_violation/{key}"] is not None  # every other output has them all
    table = stdout.getvalue()
    assert "constraint_violation/mean " in table and "constraint_violation/quantile_0.5 " in table  # they fit
    assert "constraint_violation/quantile_0.25" not in table and "..." not in table
    assert "quantile_0.25" in table  # the reward's own risk/quantile_0.25


def test_unknown_channel_names_the_keys_present() -> None:
    model = OrderGradREINFORCE(
        "MlpPolicy", "TargetSum-v0", objective={"reward": "top2@4", "lenght": "bot2@4"}, n_episodes=16, seed=0
    )
    # InfoChannelError: a ValueError of its own type, which the commands report as the user's error
    with pytest.raises(InfoChannelError, match=r"\['lenght'\] never appeared.*'is_success', 'length'"):
        model.learn(1)


@pytest.mark.parametrize("value", [np.array([1.0]), np.array([1.0, 2.0]), [0.5]])
def test_info_channel_that_is_not_a_scalar_is_named(value: Any) -> None:
    # An array of one element became an [n_envs, 1] column, which failed in the buffer's episode sums with numpy's
    # "object too deep for desired array".
    channels = InfoChannels(("cost",))
    message = r"channel 'cost': info\['cost'\] must be a real scalar, got .* from env 1"
    with pytest.raises(InfoChannelError, match=message):
        channels.step([{"cost": 0.5}, {"cost": value}])
    assert channels.step([{"cost": np.float32(0.5)}, {"cost": np.array(2.0)}, {}])["cost"].tolist() == [0.5, 2.0, 0.0]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None])
def test_info_channel_that_is_not_finite_is_named(value: Any) -> None:
    # It failed when the rollout was ranked, as "rewards contain NaN or inf ... (check the environment's rewards)",
    # naming neither the channel nor info (None became NaN).
    channels = InfoChannels(("reward_x", "cost"))
    message = rf"channel 'cost': env 1 reported info\['cost'\] = {value!r}; a channel's values must be finite"
    with pytest.raises(InfoChannelError, match=message):
        channels.step([{"cost": 0.5, "reward_x": 1.0}, {"cost": value, "reward_x": 1.0}])


def test_channels_refuse_reward_to_go() -> None:
    with pytest.raises(ValueError, match="reward_to_go needs the mean objective"):
        OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", objective={"reward": "mean", "x": "mean"}, reward_to_go=True)
    model = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", objective={"reward": "mean", "length": ("mean", -0.1)})
    assert not model.reward_to_go
