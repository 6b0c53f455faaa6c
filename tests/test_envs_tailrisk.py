"""SyntheticTailRisk dynamics against the paper (appendix, "High-yield tail-risk example").

Statistical checks use the batched simulator with fixed seeds and tolerances of 4-5 standard errors.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.seeding import np_random
from scipy import stats
from stable_baselines3.common.env_util import make_vec_env

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.envs.tailrisk import TailRiskSimulator, cash_capped_weights, default_event_window
from ordergrad_rl.envs.tailrisk_gym import SyntheticTailRiskEnv

MU = np.array([0.70, 0.030, 0.095])
SIGMA = np.array([0.11, 0.065, 0.075])
LOADING = np.array([0.80, -0.10, 0.25])
DAILY_COV = np.outer(LOADING, LOADING) * 0.004**2 + np.diag(SIGMA**2 / 252)
EQUAL_WEIGHTS = np.array([0.325, 0.325, 0.325, 0.025])
ALL_IN_TAIL = np.array([10.0, -10.0, -10.0, -10.0])


def run_episode(env: gym.Env, logits: np.ndarray, seed: int) -> tuple[list, list, list]:
    """Observations (incl. the first), rewards and infos of one episode with logits ``[steps, 4]``."""
    obs, _ = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], []
    for action in logits:
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
    assert terminated and not truncated
    return observations, rewards, infos


def batch_draws(n_batches: int, batch: int, seed: int, **kwargs) -> dict[str, np.ndarray]:
    """Event days, jumps and returns of ``n_batches * batch`` episodes, concatenated."""
    sim = TailRiskSimulator(batch, **kwargs)
    out: dict[str, list] = {"event_day": [], "jumps": [], "returns": []}
    for b in range(n_batches):
        sim.reset(seed=seed + b * batch)
        out["event_day"].append(sim.event_day)
        out["jumps"].append(sim.jump_sizes)
        out["returns"].append(sim.asset_returns)
    return {key: np.concatenate(value) for key, value in out.items()}


# ---------------------------------------------------------------------------- static pieces
def test_event_window_reproduces_paper() -> None:
    assert default_event_window(20, 80) == (20, 97)
    assert default_event_window(20, 160) == (36, 177)
    assert TailRiskSimulator(1).event_window == (20, 97)
    assert gym.make("SyntheticTailRiskDeploy-v0").unwrapped.simulator.event_window == (36, 177)


def test_registered_settings() -> None:
    train = gym.make("SyntheticTailRisk-v0").unwrapped.simulator
    deploy = gym.make("SyntheticTailRiskDeploy-v0").unwrapped.simulator
    assert (train.p, train.traded_days, train.num_days, train.num_decisions) == (0.10, 80, 100, 16)
    assert (deploy.p, deploy.traded_days, deploy.num_days, deploy.num_decisions) == (0.35, 160, 180, 32)
    for sim in (train, deploy):
        assert (sim.rebalance_every, sim.cost, sim.cash_cap, sim.lookback) == (5, 0.001, 0.10, 20)
    assert gym.make("SyntheticTailRisk-v0", p=0.65).unwrapped.simulator.p == 0.65


def test_cash_cap_weights() -> None:
    np.testing.assert_allclose(cash_capped_weights(np.zeros(4), 0.10), EQUAL_WEIGHTS, rtol=0, atol=1e-15)
    logits = np.random.default_rng(0).uniform(-10, 10, size=(10_000, 4))
    w = cash_capped_weights(logits, 0.10)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
    assert (w >= 0).all() and (w[:, 3] <= 0.10).all()
    np.testing.assert_allclose(w[:, 3], 0.10 * softmax[:, 3], rtol=1e-12)
    risky_share = softmax[:, :3] / softmax[:, :3].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(w[:, :3], (1 - w[:, 3:]) * risky_share, rtol=1e-12, atol=1e-300)
    # The cap binds: all-in cash logits still leave 90% in risky assets.
    assert cash_capped_weights(np.array([-10.0, -10.0, -10.0, 10.0]), 0.10)[3] == pytest.approx(0.1, abs=1e-9)


# ---------------------------------------------------------------------------- disaster process
@pytest.mark.parametrize(("env_id", "n_batches"), [("SyntheticTailRisk-v0", 8), ("SyntheticTailRiskDeploy-v0", 4)])
def test_disaster_frequency_and_event_window(env_id: str, n_batches: int) -> None:
    sim = gym.make(env_id).unwrapped.simulator
    draws = batch_draws(n_batches, 5000, seed=1, p=sim.p, traded_days=sim.traded_days)
    hit = draws["event_day"] >= 0
    n = hit.size
    assert abs(hit.mean() - sim.p) < 4 * np.sqrt(sim.p * (1 - sim.p) / n)
    first, last = sim.event_window
    days = draws["event_day"][hit]
    assert days.min() == first and days.max() == last
    counts = np.bincount(days - first, minlength=last - first + 1)
    assert stats.chisquare(counts).pvalue > 1e-4  # uniform over the eligible days


def test_same_seed_couples_disasters_across_p() -> None:
    low = batch_draws(1, 4000, seed=7, p=0.10)
    high = batch_draws(1, 4000, seed=7, p=0.35)
    hit_low, hit_high = low["event_day"] >= 0, high["event_day"] >= 0
    assert (hit_low <= hit_high).all() and hit_high.sum() > hit_low.sum()
    np.testing.assert_array_equal(low["event_day"][hit_low], high["event_day"][hit_low])
    np.testing.assert_array_equal(low["jumps"], high["jumps"])


def test_jumps_and_aftershocks() -> None:
    # Same seeds with p=1 and p=0: the returns differ exactly by the disaster shocks.
    shocked = batch_draws(1, 10_000, seed=3, p=1.0)
    calm = batch_draws(1, 10_000, seed=3, p=0.0)
    assert (calm["event_day"] == -1).all()
    day, jumps = shocked["event_day"], shocked["jumps"]
    J, H, B = jumps.T
    for (low, high), draws in zip([(0.50, 0.70), (0.12, 0.26), (0.015, 0.050)], jumps.T, strict=True):
        assert low <= draws.min() < low + 0.001 and high - 0.001 < draws.max() <= high
        assert abs(draws.mean() - (low + high) / 2) < 4 * (high - low) / np.sqrt(12 * draws.size)
    diff = shocked["returns"] - calm["returns"]
    rows = np.arange(day.size)
    expected = np.zeros_like(diff)
    expected[rows, day] = np.stack([-J, H, -B], axis=1)
    for offset, c in ((1, 0.28), (2, 0.14)):
        expected[rows, day + offset] = c * J[:, None] * np.array([-1.0, 0.30, -0.07])
    np.testing.assert_allclose(diff, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("offset", "n_aftershocks"), [(1, 0), (2, 1), (3, 2)])
def test_aftershocks_stay_inside_tensor(offset: int, n_aftershocks: int) -> None:
    day = 100 - offset
    shocked = batch_draws(1, 50, seed=5, p=1.0, event_window=(day, day))
    calm = batch_draws(1, 50, seed=5, p=0.0, event_window=(day, day))
    changed = np.abs(shocked["returns"] - calm["returns"]).max(axis=(0, 2)) > 0
    assert np.flatnonzero(changed).tolist() == list(range(day, day + 1 + n_aftershocks))


def test_clipping() -> None:
    returns = batch_draws(1, 5000, seed=11, p=1.0)["returns"]
    assert returns.min() >= -0.82 and returns.max() <= 0.35

    class Narrow(TailRiskSimulator):
        return_clip = (-0.45, 0.2)

    sim = Narrow(5000, p=1.0)
    sim.reset(seed=11)
    day, r = sim.event_day, sim.asset_returns
    rows = np.arange(day.size)
    assert r.min() == -0.45 and r.max() == 0.2
    np.testing.assert_array_equal(r[rows, day, 0], -0.45)  # J >= 0.5 dwarfs the daily noise
    np.testing.assert_array_equal(np.minimum(returns[rows, day, 1], 0.2), r[rows, day, 1])


def test_normal_period_return_model() -> None:
    r = batch_draws(1, 10_000, seed=13, p=0.0)["returns"].reshape(-1, 3)
    n = r.shape[0]
    assert (np.abs(r.mean(axis=0) - MU / 252) < 4 * np.sqrt(np.diag(DAILY_COV) / n)).all()
    cov = np.cov(r, rowvar=False)
    # Entrywise standard error of a Gaussian sample covariance: sqrt((S_ij^2 + S_ii S_jj) / n).
    se = np.sqrt((DAILY_COV**2 + np.outer(np.diag(DAILY_COV), np.diag(DAILY_COV))) / n)
    assert (np.abs(cov - DAILY_COV) < 5 * se).all()


# ---------------------------------------------------------------------------- wealth, rewards, observations
def replay(returns: np.ndarray, logits: np.ndarray, cost: float = 0.001, ema_rate: float = 0.1) -> dict:
    """The paper's wealth recursion and features, day by day, for one episode (reference)."""
    L, R = 20, 5
    w_prev, wealth, peak, max_dd, last, ema = EQUAL_WEIGHTS, 1.0, 1.0, 0.0, 0.0, 0.0
    out: dict[str, list] = {key: [] for key in ("daily", "wealth", "dd", "max_dd", "reward", "obs")}
    for j, z in enumerate(logits):
        s = np.exp(z) / np.exp(z).sum()
        w = np.empty(4)
        w[3] = 0.10 * s[3]
        w[:3] = (1 - w[3]) * s[:3] / s[:3].sum()
        start, daily = wealth, []
        for d in range(L + j * R, L + (j + 1) * R):
            ret = w[:3] @ returns[d] - (cost * np.abs(w - w_prev).sum() if d == L + j * R else 0.0)
            wealth *= 1 + ret
            peak = max(peak, wealth)
            max_dd = min(max_dd, wealth / peak - 1)
            last, ema = ret, (1 - ema_rate) * ema + ema_rate * ret
            daily.append(ret)
        window = returns[(j + 1) * R : (j + 1) * R + L]
        obs = np.concatenate(
            [
                window.mean(axis=0) * 252,
                window.std(axis=0, ddof=1) * np.sqrt(252),
                w,
                [25 * last, 25 * ema, wealth / peak - 1, (j + 1) / len(logits)],
            ]
        )
        w_prev = w
        for key, value in zip(
            out, (daily, wealth, wealth / peak - 1, max_dd, np.log(wealth / start), obs), strict=True
        ):
            out[key].append(value)
    return {key: np.array(value) for key, value in out.items()}


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_wealth_recursion_rewards_and_observations(p: float) -> None:
    env = SyntheticTailRiskEnv(p=p)
    rng = np.random.default_rng(0)
    for seed in range(5):
        logits = rng.normal(0, 2, size=(16, 4))
        observations, rewards, infos = run_episode(env, logits, seed)
        returns = env.simulator.asset_returns[0]
        ref = replay(returns, logits)
        np.testing.assert_allclose([i["daily_returns"] for i in infos], ref["daily"], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose([i["wealth"] for i in infos], ref["wealth"], rtol=1e-12)
        np.testing.assert_allclose([i["drawdown"] for i in infos], ref["dd"], atol=1e-12)
        np.testing.assert_allclose([i["max_drawdown"] for i in infos], ref["max_dd"], atol=1e-12)
        np.testing.assert_allclose(rewards, ref["reward"], atol=1e-12)
        np.testing.assert_allclose(observations[1:], ref["obs"], rtol=2e-6, atol=2e-6)
        first = returns[:20]
        np.testing.assert_allclose(
            observations[0],
            np.concatenate([first.mean(0) * 252, first.std(0, ddof=1) * np.sqrt(252), EQUAL_WEIGHTS, [0] * 4]),
            rtol=2e-6,
            atol=2e-6,
        )
        # The undiscounted return is log W_T.
        assert abs(sum(rewards) - np.log(infos[-1]["wealth"])) < 1e-9
        weights = np.array([i["weights"] for i in infos])
        assert weights[:, 3].max() <= 0.10 and np.allclose(weights.sum(axis=1), 1)
        assert all(i["max_drawdown"] <= min(0.0, i["drawdown"]) for i in infos)
        assert all(obs.dtype == np.float32 and obs.shape == (14,) for obs in observations)
        if p == 1.0:
            day = env.simulator.event_day[0]
            expected = [20 + 5 * (j + 1) - 1 >= day for j in range(16)]
            assert [i["disaster"] for i in infos] == expected
        else:
            assert not any(i["disaster"] for i in infos)


def test_costs_charged_on_block_first_day_only() -> None:
    free = SyntheticTailRiskEnv(cost=0.0)
    costly = SyntheticTailRiskEnv(cost=0.001)
    logits = np.random.default_rng(1).normal(0, 3, size=(16, 4))
    _, _, infos_free = run_episode(free, logits, seed=2)
    _, _, infos_costly = run_episode(costly, logits, seed=2)
    weights = np.array([i["weights"] for i in infos_free])
    turnover = np.abs(np.diff(np.vstack([EQUAL_WEIGHTS, weights]), axis=0)).sum(axis=1)
    gap = np.array([i["daily_returns"] for i in infos_free]) - np.array([i["daily_returns"] for i in infos_costly])
    np.testing.assert_allclose(gap[:, 0], 0.001 * turnover, rtol=1e-9)
    np.testing.assert_array_equal(gap[:, 1:], 0.0)
    # Equal logits keep the initial allocation: no cost at all.
    _, _, infos_zero = run_episode(costly, np.zeros((16, 4)), seed=2)
    _, _, infos_zero_free = run_episode(free, np.zeros((16, 4)), seed=2)
    assert infos_zero[-1]["wealth"] == infos_zero_free[-1]["wealth"]


def test_calm_growth_of_all_in_high_yield() -> None:
    """Mean log W_T of calm episodes fully in the high-yield asset ~ 80 (0.7/252 - var/2)."""
    n_batches, batch = 4, 5000
    totals = {}
    for cost in (0.0, 0.001):
        sim = TailRiskSimulator(batch, p=0.0, cost=cost)
        log_wealth = []
        for b in range(n_batches):
            sim.reset(seed=100 + b * batch)
            episode, first_day = np.zeros(batch), None
            for _ in range(sim.num_decisions):
                _, reward, _, info = sim.step(np.tile(ALL_IN_TAIL, (batch, 1)))
                episode += reward
                first_day = info["daily_returns"][:, 0] if first_day is None else first_day
            log_wealth.append(episode)
        totals[cost] = (np.concatenate(log_wealth), first_day)
    log_wt = totals[0.0][0]
    var = DAILY_COV[0, 0]
    se = log_wt.std() / np.sqrt(log_wt.size)
    assert abs(log_wt.mean() - 80 * (0.70 / 252 - var / 2)) < 4 * se
    # The cost is one first-day charge of 0.001 * ||w - w_init||_1 = 0.001 * 1.35.
    turnover = np.abs(cash_capped_weights(ALL_IN_TAIL, 0.1) - EQUAL_WEIGHTS).sum()
    assert turnover == pytest.approx(1.35, abs=1e-8)
    last_batch_gap = totals[0.001][0][-batch:] - log_wt[-batch:]
    first_free = totals[0.0][1]
    np.testing.assert_allclose(last_batch_gap, np.log1p(-0.001 * turnover / (1 + first_free)), rtol=1e-6)


def test_observations_stay_in_space() -> None:
    rng = np.random.default_rng(0)
    for p, cost in ((1.0, 0.001), (0.35, 0.05)):
        sim = TailRiskSimulator(2000, p=p, cost=cost)
        space = SyntheticTailRiskEnv(p=p, cost=cost).observation_space
        obs = sim.reset(seed=0)
        for _ in range(sim.num_decisions):
            obs, *_ = sim.step(rng.normal(0, 8, size=(2000, 4)))  # extreme, fast-changing weights
            assert obs.dtype == space.dtype and ((obs >= space.low) & (obs <= space.high)).all()


# ---------------------------------------------------------------------------- seeding and bad input
def test_seeded_reset_reproduces_episode() -> None:
    env = gym.make("SyntheticTailRisk-v0")
    logits = np.random.default_rng(3).normal(size=(16, 4))
    first = run_episode(env, logits, seed=42)
    again = run_episode(env, logits, seed=42)
    other = run_episode(env, logits, seed=43)
    np.testing.assert_array_equal(first[0], again[0])
    assert first[1] == again[1] and first[1] != other[1]
    # Unseeded resets continue the generator: the second episode differs from the first.
    env.reset(seed=42)
    obs_second, _ = env.reset()
    assert not np.array_equal(obs_second, first[0][0])


@pytest.mark.parametrize(
    "action",
    [
        np.array([np.nan, 0, 0, 0]),
        np.array([0, np.inf, 0, 0]),
        np.array([0, 0, -np.inf, 0]),
        np.zeros(3),
        np.zeros((1, 4)),
        np.zeros(5),
        "buy",
    ],
)
def test_bad_actions_raise(action: object) -> None:
    env = SyntheticTailRiskEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)


def test_out_of_range_actions_are_clipped() -> None:
    env = SyntheticTailRiskEnv()
    big = np.array([[1e6, -1e6, 50.0, -50.0]] * 16)
    clipped = np.clip(big, -10, 10)
    assert run_episode(env, big, seed=9)[1] == run_episode(env, clipped, seed=9)[1]


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        SyntheticTailRiskEnv().step(np.zeros(4))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": -0.1}, "p must"),
        ({"p": 1.5}, "p must"),
        ({"p": float("nan")}, "p must"),
        ({"traded_days": 82}, "multiple"),
        ({"traded_days": 0}, "traded_days"),
        ({"rebalance_every": 0}, "rebalance_every"),
        ({"cost": -0.001}, "cost"),
        ({"cost": 0.5}, "cost"),
        ({"cost": 0.09}, r"cost must be a number in \[0.0, 0.09\)"),  # the bound itself: wealth could reach 0
        ({"cash_cap": 1.2}, "cash_cap"),
        ({"lookback": 1}, "lookback"),
        ({"lookback": 2.5}, "lookback"),
        ({"event_window": (5, 50)}, "event_window"),
        ({"event_window": (50, 100)}, "event_window"),
        ({"event_window": (60, 50)}, "event_window"),
        ({"event_window": (20,)}, "event_window"),
        ({"event_window": 30}, "event_window"),
        ({"ema_rate": 1.5}, "ema_rate"),
    ],
)
def test_bad_kwargs_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        gym.make("SyntheticTailRisk-v0", **kwargs)


@pytest.mark.parametrize("mode", ["human", "rgb_array", "ansi"])
def test_render_modes_are_refused_by_name(mode: str) -> None:
    # The mode reached TailRiskSimulator, whose TypeError said it takes no argument 'render_mode'.
    with pytest.raises(ValueError, match=r"render_mode must be None \(the env does not render\), got"):
        gym.make("SyntheticTailRisk-v0", render_mode=mode)
    # Still a TypeError too: SB3's make_vec_env asks for "rgb_array" and builds the env without a mode on one.
    assert make_vec_env("SyntheticTailRisk-v0", n_envs=1).reset().shape == (1, 14)


def test_per_env_generators_follow_gymnasium_seeding() -> None:
    sim = TailRiskSimulator(3)
    sim.reset(seed=[5, None, 7])
    rng = np_random(7)[0]
    u = rng.random(5)
    z = rng.standard_normal((100, 4))
    assert u[0] >= 0.10 and sim.event_day[2] == -1  # seed 7 draws no disaster
    expected = 0.70 / 252 + 0.8 * 0.004 * z[:, 0] + 0.11 / np.sqrt(252) * z[:, 1]
    np.testing.assert_allclose(sim.asset_returns[2, :, 0], expected, rtol=1e-12)
