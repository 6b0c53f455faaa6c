"""The return law of a policy with memory on a finite MDP (envs.tabular_history), checked against forward
propagation of (state, accumulated return) pairs (envs.tabular), which is exact for policies of that pair."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import ordergrad_rl.envs  # noqa: F401  (registers the envs)
from ordergrad_rl.envs.lava_grid import CVAR_POLICY
from ordergrad_rl.envs.tabular import TabularMDP, return_distribution
from ordergrad_rl.envs.tabular_history import continuation_bounds, history_return_distribution


def random_mdp(seed: int, n_states: int = 4, n_actions: int = 2, outcomes: int = 3, horizon: int = 5) -> TabularMDP:
    """A small random MDP with integer rewards and some terminal outcomes."""
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.ones(outcomes), size=(n_states, n_actions))
    next_state = rng.integers(n_states, size=(n_states, n_actions, outcomes))
    reward = rng.integers(-3, 4, size=(n_states, n_actions, outcomes)).astype(float)
    terminated = rng.random((n_states, n_actions, outcomes)) < 0.2
    return TabularMDP(prob, next_state, reward, terminated, rng.dirichlet(np.ones(n_states)), horizon)


@pytest.mark.parametrize("seed", range(5))
def test_uncut_tree_is_forward_propagation_for_a_stationary_policy(seed):
    mdp = random_mdp(seed)
    policy = np.random.default_rng(seed + 100).integers(mdp.n_actions, size=mdp.n_states)
    tree = history_return_distribution(mdp, lambda t, s, m: (policy[s], None), lambda m, i: None)
    exact = return_distribution(mdp, policy)
    assert tree.cut == 0.0
    for law in (tree.lower, tree.upper):
        np.testing.assert_allclose(law.values, exact.values)
        np.testing.assert_allclose(law.probs, exact.probs, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_uncut_tree_follows_a_policy_that_acts_on_its_memory(seed):
    """A policy of (t, s, return so far) written as a policy with memory (its path of states, from which it reads
    the return): forward propagation of (state, return) pairs is its exact law."""
    mdp = random_mdp(seed)
    rng = np.random.default_rng(seed + 200)
    table = rng.integers(mdp.n_actions, size=(mdp.horizon + 1, mdp.n_states, 200))

    def action(t: int, state: int, ret: float) -> int:
        return int(table[t, state, int(round(ret)) + 100])

    # Memory: each history's path of states (the tree's `take` gives a child its parent's path); the policy acts on
    # the return along the path, looked up in `path_return`, filled below by walking the same policy.
    def act(t, states, memory):
        if memory is None:
            paths = [[int(s)] for s in states]
        else:
            paths = [path + [int(s)] for path, s in zip(memory, states, strict=True)]
        actions = []
        for path in paths:
            actions.append(action(t, path[-1], path_return[tuple(path)]))
        return np.array(actions, dtype=np.int64), paths

    # The return of a path of states is not a function of the states alone (two outcomes may join the same states
    # with different rewards), so this test uses an MDP whose reward depends on (state, action, next state) only.
    reward = np.zeros_like(mdp.reward)
    for s in range(mdp.n_states):
        for a in range(mdp.n_actions):
            reward[s, a] = (s - a + 2 * mdp.next_state[s, a]) % 5 - 2.0
    terminated = np.zeros_like(mdp.terminated)
    terminated[..., 0] = mdp.next_state[..., 0] == 0  # outcome 0 into state 0 ends the episode
    mdp = TabularMDP(mdp.prob, mdp.next_state, reward, terminated, mdp.start, mdp.horizon)
    path_return: dict[tuple[int, ...], float] = {}

    def fill(path: tuple[int, ...], ret: float, t: int) -> None:
        path_return[path] = ret
        if t == mdp.horizon:
            return
        s = path[-1]
        a = action(t, s, ret)
        for k in range(mdp.prob.shape[-1]):
            if mdp.prob[s, a, k] > 0 and not mdp.terminated[s, a, k]:
                fill((*path, int(mdp.next_state[s, a, k])), ret + mdp.reward[s, a, k], t + 1)

    for s in np.flatnonzero(mdp.start):
        fill((int(s),), 0.0, 0)
    tree = history_return_distribution(mdp, act, lambda memory, index: [memory[i] for i in index])
    exact = return_distribution(mdp, lambda t, s, ret: np.eye(mdp.n_actions)[action(t, s, ret)])
    np.testing.assert_allclose(tree.lower.values, exact.values)
    np.testing.assert_allclose(tree.lower.probs, exact.probs, atol=1e-12)


def test_cut_tree_brackets_the_exact_law_on_the_lava_grid():
    mdp = gym.make("RiskyLavaGrid-v0").unwrapped.tabular()
    exact = return_distribution(mdp, CVAR_POLICY)
    for min_prob in (1e-4, 1e-6, 1e-10):
        tree = history_return_distribution(mdp, lambda t, s, m: (CVAR_POLICY[s], None), lambda m, i: None, min_prob)
        low, high = tree.cvar(0.2)
        assert 0.0 < tree.cut < 0.05
        assert low - 1e-12 <= exact.cvar(0.2) <= high + 1e-12
        assert tree.mean()[0] - 1e-12 <= exact.mean() <= tree.mean()[1] + 1e-12
    assert high - low < 0.01  # at 1e-10 the cut histories move CVaR_0.2 by less than the suite's epsilon / 20
    # A bound on the histories alive gives valid bounds too, wider.
    tree = history_return_distribution(mdp, lambda t, s, m: (CVAR_POLICY[s], None), lambda m, i: None, 0.0, 1000)
    assert tree.peak == 1000
    assert tree.cvar(0.2)[0] - 1e-12 <= exact.cvar(0.2) <= tree.cvar(0.2)[1] + 1e-12


def test_continuation_bounds_hold_every_return():
    mdp = random_mdp(7)
    low, high = continuation_bounds(mdp)
    for seed in range(20):
        policy = np.random.default_rng(seed).integers(mdp.n_actions, size=mdp.n_states)
        law = return_distribution(mdp, policy)
        start = np.flatnonzero(mdp.start)
        assert law.values.min() >= low[0][start].min() - 1e-12
        assert law.values.max() <= high[0][start].max() + 1e-12


def test_bad_arguments_are_named():
    mdp = random_mdp(0)
    with pytest.raises(ValueError, match="min_prob"):
        history_return_distribution(mdp, lambda t, s, m: (s * 0, None), lambda m, i: None, min_prob=1.0)
    with pytest.raises(ValueError, match="max_histories"):
        history_return_distribution(mdp, lambda t, s, m: (s * 0, None), lambda m, i: None, max_histories=0)
    with pytest.raises(ValueError, match="integer actions"):
        history_return_distribution(mdp, lambda t, s, m: (np.zeros(len(s) + 1, dtype=int), None), lambda m, i: None)
    with pytest.raises(ValueError, match="outside"):
        history_return_distribution(mdp, lambda t, s, m: (s * 0 + 7, None), lambda m, i: None)
