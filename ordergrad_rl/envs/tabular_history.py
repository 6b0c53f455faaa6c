"""The return law of a deterministic policy with memory (a recurrent policy) on a finite MDP, with error bounds.

:func:`~ordergrad_rl.envs.tabular.return_distribution` propagates (state, accumulated return) pairs, which is
exact for a policy of (time, state, accumulated return). A policy with a memory of its own (an LSTM's hidden state)
acts on the whole history, so two histories that reach the same pair need not act alike and cannot be merged. Here
the histories are enumerated as a tree, one layer per time step, and the policy is asked once per layer for the
actions of every live history (one batched call: an LSTM's forward pass over the whole layer).

The tree grows with the env's noise (a slippery gridworld: up to four outcomes per step), so histories whose
probability falls below ``min_prob`` are cut. A cut history's return is bounded by its return so far plus the
lowest and highest return any continuation can add from its state and time (:func:`continuation_bounds`, a
min/max recursion over every action and outcome); the cut mass placed at those bounds gives two laws, one below
and one above the exact law in first-order stochastic dominance, so their CVaRs and means bracket the exact ones
(both are monotone in that order). With ``min_prob=0`` nothing is cut and the two laws are the exact law.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ordergrad_rl.envs.tabular import ReturnDistribution, TabularMDP, _key  # _key: tabular's rounding of returns

#: ``act(t, states [n], memory) -> (actions [n], memory)``: the actions of ``n`` live histories at time ``t`` in
#: ``states``, given the memory the policy returned for them at ``t - 1`` (``None`` at ``t = 0``).
HistoryAct = Callable[[int, np.ndarray, Any], tuple[np.ndarray, Any]]
#: ``take(memory, index [m]) -> memory``: the memory of the histories ``index`` (a child history inherits its
#: parent's memory; an LSTM's ``(h, c)`` indexed along its batch axis).
TakeMemory = Callable[[Any, np.ndarray], Any]


@dataclass(frozen=True)
class BoundedReturn:
    """The result of :func:`history_return_distribution`: ``lower`` and ``upper`` laws that bracket the exact return
    law (the cut histories' mass at their lowest and highest possible returns), the ``cut`` probability mass and the
    most histories alive at one step (``peak``)."""

    lower: ReturnDistribution
    upper: ReturnDistribution
    cut: float
    peak: int

    def cvar(self, alpha: float) -> tuple[float, float]:
        """``(low, high)``: the exact CVaR_alpha lies between them."""
        return self.lower.cvar(alpha), self.upper.cvar(alpha)

    def mean(self) -> tuple[float, float]:
        """``(low, high)``: the exact mean lies between them."""
        return self.lower.mean(), self.upper.mean()


def continuation_bounds(mdp: TabularMDP) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``, each ``[horizon + 1, S]``: the lowest and highest return that the steps from time ``t`` on can
    add in state ``s``, over every action and every outcome of positive probability (0 at the time limit)."""
    low = np.zeros((mdp.horizon + 1, mdp.n_states))
    high = np.zeros((mdp.horizon + 1, mdp.n_states))
    possible = mdp.prob > 0
    for t in reversed(range(mdp.horizon)):
        for bound, pick, fill in ((low, np.min, np.inf), (high, np.max, -np.inf)):
            after = mdp.reward + np.where(mdp.terminated, 0.0, bound[t + 1][mdp.next_state])
            bound[t] = pick(np.where(possible, after, fill), axis=(1, 2))
    return low, high


def _add(masses: dict[float, float], values: np.ndarray, probs: np.ndarray) -> None:
    """Add ``probs`` at ``values`` to ``masses`` (returns merged as :mod:`~ordergrad_rl.envs.tabular` merges them)."""
    for value, prob in zip(values.tolist(), probs.tolist(), strict=True):
        masses[_key(value)] = masses.get(_key(value), 0.0) + prob


def _law(masses: dict[float, float], *more: dict[float, float]) -> ReturnDistribution:
    """The law of the masses of ``masses`` and ``more`` together."""
    total = dict(masses)
    for extra in more:
        for value, prob in extra.items():
            total[value] = total.get(value, 0.0) + prob
    return ReturnDistribution.from_dict({v: p for v, p in total.items() if p > 0.0})


def history_return_distribution(
    mdp: TabularMDP, act: HistoryAct, take: TakeMemory, min_prob: float = 0.0, max_histories: int | None = None
) -> BoundedReturn:
    """The return law of the deterministic history-dependent policy ``act`` on ``mdp``, histories of probability
    below ``min_prob`` cut (see the module docstring).

    :param mdp: the finite MDP (:class:`~ordergrad_rl.envs.tabular.TabularMDP`).
    :param act: the policy, batched over live histories (:data:`HistoryAct`).
    :param take: selects the memory of some histories (:data:`TakeMemory`).
    :param min_prob: a history whose probability falls below this is cut, its mass bounded; 0 enumerates every
        history (the tree's size then grows with the noise's outcomes to the power of the horizon).
    :param max_histories: at most this many histories are kept alive at a step, the most probable ones (the others
        are cut as above): bounds the policy's batch and the memory, so a policy that wanders until the time limit
        costs ``horizon`` batches of this size, with wider bounds; ``None``: no bound.
    :raises ValueError: ``min_prob`` outside [0, 1), ``max_histories`` below 1, or ``act`` returning actions of the
        wrong shape or range.
    """
    if not 0.0 <= min_prob < 1.0:
        raise ValueError(f"min_prob must be in [0, 1), got {min_prob!r}")
    if max_histories is not None and max_histories < 1:
        raise ValueError(f"max_histories must be >= 1 (or None), got {max_histories!r}")
    low, high = continuation_bounds(mdp)
    states = np.flatnonzero(mdp.start)
    probs, returns, memory = mdp.start[states].astype(float), np.zeros(len(states)), None
    ended_mass: dict[float, float] = {}  # the histories enumerated to their end
    cut_low: dict[float, float] = {}  # the cut histories' mass at their lowest and highest reachable returns
    cut_high: dict[float, float] = {}
    cut, peak = 0.0, len(states)
    for t in range(mdp.horizon):
        actions, memory = act(t, states, memory)
        actions = np.asarray(actions).reshape(-1)
        if actions.shape != states.shape or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(
                f"act must return {len(states)} integer actions at t={t}, got {actions.dtype} {actions.shape}"
            )
        if len(actions) and (actions.min() < 0 or actions.max() >= mdp.n_actions):
            raise ValueError(f"act returned an action outside [0, {mdp.n_actions}) at t={t}")
        # [n, K]: each live history's outcomes under its action.
        child_prob = probs[:, None] * mdp.prob[states, actions]
        child_state = mdp.next_state[states, actions]
        child_return = returns[:, None] + mdp.reward[states, actions]
        possible = child_prob > 0
        ended = possible & mdp.terminated[states, actions]
        _add(ended_mass, child_return[ended], child_prob[ended])
        going = possible & ~ended
        dropped = going & (child_prob < min_prob)
        alive = np.flatnonzero(going & ~dropped)  # indices into the flattened [n, K] outcomes
        if max_histories is not None and len(alive) > max_histories:
            # The least probable are cut (among equally probable ones, which is NumPy's choice: the bounds hold).
            least = np.argpartition(child_prob.reshape(-1)[alive], len(alive) - max_histories)
            dropped.reshape(-1)[alive[least[: len(alive) - max_histories]]] = True
        if dropped.any():
            cut += float(child_prob[dropped].sum())
            where = child_state[dropped]
            _add(cut_low, child_return[dropped] + low[t + 1][where], child_prob[dropped])
            _add(cut_high, child_return[dropped] + high[t + 1][where], child_prob[dropped])
        kept = going & ~dropped
        parent = np.nonzero(kept)[0]
        states, probs, returns = child_state[kept], child_prob[kept], child_return[kept]
        memory = take(memory, parent)
        peak = max(peak, len(states))
        if not len(states):
            break
    _add(ended_mass, returns, probs)  # truncated by the time limit
    return BoundedReturn(_law(ended_mass, cut_low), _law(ended_mass, cut_high), cut, peak)
