"""RiskyBandit and RiskyLavaGrid: the documented numbers, recomputed exactly."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from scipy import integrate, optimize, stats

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.envs import make_sb3_vec_env
from ordergrad_rl.envs.bandit import ARMS, RiskyBanditEnv, sample_rewards
from ordergrad_rl.envs.lava_grid import SAFE_POLICY, SHORTCUT_POLICY, RiskyLavaGridEnv

HORIZON = 30


def docstring_table(cls: type, first_column: str) -> dict[str, list[float]]:
    """Numeric columns of the markdown table rows of a class docstring, keyed by ``first_column``."""
    rows = {}
    for line in cls.__doc__.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) > 2 and re.fullmatch(first_column, cells[0]):
            rows[cells[0]] = [float(cell) for cell in cells if re.fullmatch(r"-?\d+\.\d+", cell)]
    return rows


def lower_tail_mean(values: np.ndarray, probs: np.ndarray, alpha: float) -> float:
    """CVaR_alpha of a discrete distribution: mean of its worst alpha mass (atoms split)."""
    order = np.argsort(values)
    values, probs = values[order], probs[order]
    taken = np.clip(alpha - (np.cumsum(probs) - probs), 0.0, probs)
    return float(taken @ values / alpha)


# ---------------------------------------------------------------------------- bandit
def exact_arm_statistics(components: tuple[tuple[float, float, float], ...]) -> list[float]:
    """Mean, CVaR_0.1 (closed form for a Gaussian mixture) and E[max of 8] (quadrature)."""
    w, m, s = (np.array(column) for column in zip(*components, strict=True))
    cdf = lambda x: float(w @ stats.norm.cdf(x, m, s))  # noqa: E731
    pdf = lambda x: float(w @ stats.norm.pdf(x, m, s))  # noqa: E731
    q = optimize.brentq(lambda x: cdf(x) - 0.1, -50, 50, xtol=1e-13)
    cvar = float(w @ (m * stats.norm.cdf((q - m) / s) - s * stats.norm.pdf((q - m) / s))) / 0.1
    max8 = integrate.quad(
        lambda x: x * 8 * cdf(x) ** 7 * pdf(x), m.min() - 2, m.max() + 2, points=sorted(m), limit=200
    )[0]
    return [float(w @ m), cvar, max8]


def test_bandit_docstring_statistics_are_exact() -> None:
    table = docstring_table(RiskyBanditEnv, r"[0-2]")
    assert sorted(table) == ["0", "1", "2"]
    for action, arm in enumerate(ARMS.values()):
        np.testing.assert_allclose(table[str(action)], exact_arm_statistics(arm), atol=6e-4)
    mean, cvar, max8 = np.array([table[str(a)] for a in range(3)]).T
    assert (mean.argmax(), cvar.argmax(), max8.argmax()) == (1, 0, 2)


@pytest.mark.parametrize("action", [0, 1, 2])
def test_bandit_samples_match_exact_statistics(action: int) -> None:
    n = 400_000
    rewards = sample_rewards(action, n, np.random.default_rng(action))
    mean, cvar, max8 = exact_arm_statistics(list(ARMS.values())[action])
    assert abs(rewards.mean() - mean) < 5 * rewards.std() / np.sqrt(n)
    worst = np.sort(rewards)[: n // 10]
    # Asymptotic standard error of the empirical CVaR: sd((q - X)^+) / (alpha sqrt(n)).
    cvar_se = np.maximum(np.quantile(rewards, 0.1) - rewards, 0).std() / (0.1 * np.sqrt(n))
    assert abs(worst.mean() - cvar) < 5 * cvar_se
    best = rewards.reshape(-1, 8).max(axis=1)
    assert abs(best.mean() - max8) < 5 * best.std() / np.sqrt(best.size)


def test_bandit_env_steps() -> None:
    env = gym.make("RiskyBandit-v0")
    env.reset(seed=0)
    rewards = []
    for _ in range(2000):
        obs, reward, terminated, truncated, info = env.step(1)
        assert terminated and not truncated and obs.tolist() == [0.0] and info == {"arm": "risky"}
        rewards.append(reward)
        env.reset()
    assert abs(np.mean(rewards) - 1.3) < 5 * 2.1 / np.sqrt(2000)
    for bad in (3, -1, 0.5, np.array([0, 1])):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


# ---------------------------------------------------------------------------- lava grid
def policy_return_distribution(env: RiskyLavaGridEnv, policy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of the return within the time limit, by propagating (state, return)."""
    live = {(env.start_state, 0.0): 1.0}
    final: dict[float, float] = {}
    for _ in range(HORIZON):
        nxt: dict[tuple[int, float], float] = {}
        for (state, ret), p in live.items():
            for prob, state2, reward, terminated in env.P[state][int(policy[state])]:
                key = round(ret + reward, 9)
                target, index = (final, key) if terminated else (nxt, (state2, key))
                target[index] = target.get(index, 0.0) + p * prob
        live = nxt
    for (_, ret), p in live.items():  # truncated by the time limit
        final[ret] = final.get(ret, 0.0) + p
    values = np.array(list(final))
    return values, np.array([final[v] for v in values])


def test_lava_grid_transition_table() -> None:
    env = RiskyLavaGridEnv()
    for state in env.P:
        for action in env.P[state]:
            assert sum(prob for prob, *_ in env.P[state][action]) == pytest.approx(1.0, abs=1e-12)
    # From the start, moving right: up/down/left slips each have probability slip/4.
    outcomes = {nxt: prob for prob, nxt, *_ in env.P[5][1]}
    assert outcomes == pytest.approx({6: 0.925, 0: 0.025, 10: 0.025, 5: 0.025})


def test_lava_grid_documented_numbers_and_optima() -> None:
    env = RiskyLavaGridEnv()
    table = docstring_table(RiskyLavaGridEnv, r"shortcut|safe")
    exact = {}
    for name, policy in (("shortcut", SHORTCUT_POLICY), ("safe", SAFE_POLICY)):
        values, probs = policy_return_distribution(env, policy)
        assert probs.sum() == pytest.approx(1.0, abs=1e-12)
        exact[name] = [
            float(values @ probs),
            lower_tail_mean(values, probs, 0.1),
            lower_tail_mean(values, probs, 0.2),
            float(probs[values < -10].sum()),  # lava returns are <= -16, goal returns >= -20 + 10
        ]
        np.testing.assert_allclose(table[name], exact[name], atol=6e-4)
    assert exact["shortcut"][0] > exact["safe"][0] + 0.5  # the mean prefers the shortcut
    assert exact["shortcut"][1] < exact["safe"][1] - 10  # CVaR_0.1 prefers the safe path
    assert exact["shortcut"][2] < exact["safe"][2] - 5  # and so does CVaR_0.2

    # Finite-horizon value iteration: the greedy mean-optimal policy is the shortcut.
    n_states, n_actions = env.observation_space.n, env.action_space.n
    value = np.zeros(n_states)
    for _ in range(HORIZON):
        q = np.array(
            [
                [
                    sum(p * (r + (0.0 if term else value[s2])) for p, s2, r, term in env.P[s][a])
                    for a in range(n_actions)
                ]
                for s in range(n_states)
            ]
        )
        value = q.max(axis=1)
    interior = [s for s, cell in enumerate(env.cells) if cell not in "GL"]
    np.testing.assert_array_equal(q.argmax(axis=1)[interior], SHORTCUT_POLICY[interior])


@pytest.mark.parametrize(("name", "policy"), [("shortcut", SHORTCUT_POLICY), ("safe", SAFE_POLICY)])
def test_lava_grid_rollouts_match_exact_distribution(name: str, policy: np.ndarray) -> None:
    env = gym.make("RiskyLavaGrid-v0")
    values, probs = policy_return_distribution(env.unwrapped, policy)
    mean, sd = values @ probs, np.sqrt(((values - values @ probs) ** 2) @ probs)
    returns = []
    state, _ = env.reset(seed=0)
    for _ in range(3000):
        total, done = 0.0, False
        while not done:
            state, reward, terminated, truncated, _ = env.step(int(policy[state]))
            total, done = total + reward, terminated or truncated
        returns.append(total)
        state, _ = env.reset()
    assert abs(np.mean(returns) - mean) < 4 * sd / np.sqrt(len(returns))
    lava = float(probs[values < -10].sum())
    assert abs(np.mean(np.array(returns) < -10) - lava) < 4 * np.sqrt(lava * (1 - lava) / len(returns)) + 1e-3


def test_lava_grid_bad_input() -> None:
    with pytest.raises(ValueError, match="slip"):
        RiskyLavaGridEnv(slip=1.5)
    env = RiskyLavaGridEnv()
    env.reset(seed=0)
    for bad in (4, -1, 1.5):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


@pytest.mark.parametrize("env_id", ["RiskyBandit-v0", "RiskyLavaGrid-v0", "SyntheticTailRisk-v0"])
def test_sb3_factory_builds_without_warnings(env_id, recwarn):
    venv = make_sb3_vec_env(env_id, 2, seed=0)
    venv.reset()
    assert not [w for w in recwarn if "render" in str(w.message)]


def test_renders():
    env = gym.make("RiskyLavaGrid-v0", render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == ".....\nA...G\n.LLL."
    grid = gym.make("RiskyLavaGrid-v0", render_mode="rgb_array")
    grid.reset(seed=0)
    frame = grid.render()
    assert frame.shape == (48, 80, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame[24, 8], (30, 60, 160))  # the agent on the start cell
    bandit = gym.make("RiskyBandit-v0", render_mode="rgb_array")
    bandit.reset(seed=0)
    bandit.step(2)
    frame = bandit.render()
    assert frame.shape == (32, 96, 3)
    np.testing.assert_array_equal(frame[16, 80], (30, 90, 200))  # the lottery arm was pulled
    with pytest.raises(ValueError, match="render_mode"):
        RiskyBanditEnv(render_mode="human")
