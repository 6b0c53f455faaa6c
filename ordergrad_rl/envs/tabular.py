"""Exact risk analysis of finite MDPs: return distributions, mean- and CVaR-optimal values.

The library layer under the known-answer benchmark envs (no RL, NumPy only). A tabular env describes itself as a
:class:`TabularMDP` (``env.unwrapped.tabular()``); the functions below then give, exactly:

* :func:`return_distribution`: the law of the episode return of a policy (stationary ``[S, A]`` / ``[S]``, or
  one of the augmented policies returned here) by forward propagation of (state, accumulated return) pairs;
* :func:`mean_optimum`: the mean-optimal value and a Markov policy of (time, state) (finite-horizon value iteration);
* :func:`cvar_optimum`: the CVaR-optimal value over all history-dependent policies, by dynamic programming over the
  state augmented with the time and the accumulated return (Bauerle and Ott, 2011)::

      CVaR_a(G) = max_b { b - E[(b - G)^+] / a },

  where for each candidate ``b`` among the finitely many attainable returns ``min_pi E[(b - G)^+]`` is a backward
  recursion over (time, state, accumulated return); the optimal ``b`` is an attainable return (the optimal policy's
  ``a``-quantile), so the maximum over the candidates is exact;
* :meth:`ReturnDistribution.cvar_slope`: how CVaR changes as a policy starts to mix in another, so whether a
  better policy is within a gradient's reach or behind a valley (CVaR is convex in the mixture share);
* :func:`best_stationary_cvar`: the best stationary deterministic policy of the state alone (what an agent that
  observes only the state can represent), by branch and bound: a node fixes the actions of some states, its bound is
  :func:`cvar_optimum` with the other states left free (history-dependent), which can only be larger;
* :func:`one_state_switches`: the changes of one state's action that raise a stationary policy's CVaR (is a trained
  greedy policy stuck at one state, or on another route?).

Returns are sums of float rewards; accumulated returns are merged when equal after rounding to ``DECIMALS`` decimals,
so with the usual integer or short-decimal rewards every value is exact (no binning).

CVaR convention: ``cvar(alpha)`` is the mean of the worst ``alpha`` probability mass, an atom at the quantile split
fractionally (the lower-tail mean that the ``cvar<a>`` objective estimates).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
from scipy import sparse

from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.common.warning_util import user_stacklevel

#: Accumulated returns equal after rounding to this many decimals are one value.
DECIMALS = 9
#: How far a probability vector's sum (an MDP's outcomes, its start, a policy's row) may be from 1: NumPy's
#: ``allclose`` tolerance at 1, which the MDP's check has always used; a float32 softmax sums to 1 within about 1e-7.
PROB_ATOL = 1e-5
#: How far a :class:`ReturnDistribution`'s total mass may be from 1: the laws propagated here multiply a policy's rows
#: (each within :data:`PROB_ATOL`) along every step of an episode, so their mass drifts further; a float32 policy's
#: rows drift it by about 1e-6 over 40 steps. Far below it still: counts or a share of the mass given for the law.
MASS_ATOL = 1e-3
#: :func:`cvar_optimum` warns when a solve of its DP takes more table entries than this (candidate returns times
#: augmented (node, action) rows): about half a minute here (Gymnasium's Taxi-v4 over 30 steps: 2.3e8, 30 s).
#: Continuous rewards multiply the distinct returns at each step.
DP_WARN_ENTRIES = 2 * 10**8

#: ``(probability, next_state, reward, terminated)``, as in Gymnasium's FrozenLake ``env.P[s][a]``.
Outcome = tuple[float, int, float, bool]
#: A policy as a function of (time, state, accumulated return) -> action probabilities ``[A]``.
PolicyFn = Callable[[int, int, float], np.ndarray]


def _key(value: float) -> float:
    return round(float(value), DECIMALS) + 0.0  # + 0.0: -0.0 and 0.0 are one key


def _first(mask: np.ndarray) -> tuple[int, ...]:
    """The index of the first ``True`` of ``mask`` (for an error message)."""
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _check_probability_rows(name: str, table: np.ndarray) -> None:
    """``ValueError`` naming ``name`` and the first bad entry or row unless every last-axis row of ``table`` is a
    probability vector: entries in ``[0, 1]`` (NaN refused) summing to 1 within :data:`PROB_ATOL`."""
    outside = ~((table >= 0.0) & (table <= 1.0))
    if outside.any():
        index = _first(outside)
        raise ValueError(f"{name}{list(index)} must be a probability in [0, 1], got {table[index].item()!r}")
    sums = table.sum(axis=-1)
    off = np.abs(sums - 1.0) > PROB_ATOL
    if off.any():
        index = _first(off)
        row = list(index) if index else ""  # a single vector (start) has no row index
        raise ValueError(f"{name}{row} must sum to 1 (within {PROB_ATOL:g}), got a sum of {sums[index].item():.6g}")


# eq=False on the frozen classes below: their fields are arrays, whose == is elementwise, so a generated __eq__
# raised NumPy's "truth value of an array is ambiguous" and hash() failed; they compare (and hash) by identity.
@dataclass(frozen=True, eq=False)
class TabularMDP:
    """A finite episodic MDP with a time limit, rewards on transitions (possibly random given the next state).

    Each (state, action) pair has ``K`` outcomes (padded with probability 0):

    The tables are arrays or anything :func:`numpy.asarray` takes (nested lists).

    :param prob: ``[S, A, K]`` outcome probabilities, each ``[s, a]`` row sums to 1.
    :param next_state: ``[S, A, K]`` int, the state after the outcome.
    :param reward: ``[S, A, K]`` the reward of the transition.
    :param terminated: ``[S, A, K]`` bool, whether the outcome ends the episode.
    :param start: ``[S]`` start distribution.
    :param horizon: the time limit, an integer >= 1: the episode is truncated after ``horizon`` steps.
    :raises ValueError: at construction, naming the first bad entry: a probability outside ``[0, 1]`` or a
        ``prob``/``start`` row that does not sum to 1 (within :data:`PROB_ATOL`), a ``next_state`` that is not a
        state, a ``terminated`` entry that is not a bool (or 0/1), a reward that is not finite, or a horizon that is
        not an integer >= 1.
    """

    prob: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    start: np.ndarray
    horizon: int

    def __post_init__(self) -> None:
        for name in ("prob", "next_state", "reward", "terminated", "start"):  # nested lists too, as NumPy takes them
            object.__setattr__(self, name, np.asarray(getattr(self, name)))
        shape = self.prob.shape
        if len(shape) != 3 or any(a.shape != shape for a in (self.next_state, self.reward, self.terminated)):
            raise ValueError("prob, next_state, reward and terminated must share one shape [S, A, K]")
        if self.start.shape != (shape[0],):
            raise ValueError(f"start must have shape [S] = [{shape[0]}], got {self.start.shape}")
        # Checked once here: the solvers' inner loops index states and accumulate rewards without checks, so a bad
        # entry would fail there as a bare IndexError or KeyError, or give a law that is not a distribution.
        _check_probability_rows("prob", self.prob)
        _check_probability_rows("start", self.start)
        if not np.issubdtype(self.next_state.dtype, np.integer):
            raise ValueError(f"next_state must be an integer array, got dtype {self.next_state.dtype}")
        outside = (self.next_state < 0) | (self.next_state >= shape[0])
        if outside.any():
            index = _first(outside)
            raise ValueError(
                f"next_state{list(index)} must be a state in [0, {shape[0]}), got {self.next_state[index].item()!r}"
            )
        not_bool = ~np.isin(self.terminated, (0, 1))  # not a termination probability: an outcome ends or it does not
        if not_bool.any():
            index = _first(not_bool)
            raise ValueError(f"terminated{list(index)} must be a bool (or 0/1), got {self.terminated[index].item()!r}")
        infinite = ~np.isfinite(self.reward)
        if infinite.any():
            index = _first(infinite)
            raise ValueError(f"reward{list(index)} must be a finite number, got {self.reward[index].item()!r}")
        object.__setattr__(self, "horizon", check_int("horizon", self.horizon, 1))  # 2.5 is not cut to 2

    @property
    def n_states(self) -> int:
        return self.prob.shape[0]

    @property
    def n_actions(self) -> int:
        return self.prob.shape[1]

    @classmethod
    def from_outcomes(
        cls, outcomes: Mapping[int, Mapping[int, Sequence[Outcome]]], start: np.ndarray | int, horizon: int
    ) -> TabularMDP:
        """From a FrozenLake-style table ``outcomes[s][a] = [(probability, next_state, reward, terminated), ...]``.

        :param outcomes: ``outcomes[s][a]``: the list of ``(probability, next_state, reward, terminated)`` of taking
            action ``a`` in state ``s`` (Gymnasium's toy-text ``env.unwrapped.P``).
        :param start: a start state or a start distribution ``[S]``.
        :param horizon: the time limit in steps (the env's ``TimeLimit``).
        :raises ValueError: see :class:`TabularMDP`; also a next state that is not an integer, a start state that is
            not a state, or a state with another number of actions than state 0.
        """
        n_states, n_actions = len(outcomes), len(outcomes[0])
        for s in range(n_states):
            if len(outcomes[s]) != n_actions:
                raise ValueError(f"outcomes[{s}] has {len(outcomes[s])} actions, outcomes[0] has {n_actions}")
        width = max(len(outcomes[s][a]) for s in range(n_states) for a in range(n_actions))
        prob = np.zeros((n_states, n_actions, width))
        next_state = np.zeros((n_states, n_actions, width), dtype=np.int64)
        reward = np.zeros((n_states, n_actions, width))
        terminated = np.zeros((n_states, n_actions, width), dtype=bool)
        for s in range(n_states):
            for a in range(n_actions):
                for k, (p, s2, r, term) in enumerate(outcomes[s][a]):
                    if isinstance(s2, bool) or not isinstance(s2, Integral):  # the int array would truncate it
                        raise ValueError(f"outcomes[{s}][{a}][{k}]: the next state must be an integer, got {s2!r}")
                    prob[s, a, k], next_state[s, a, k], reward[s, a, k], terminated[s, a, k] = p, s2, r, term
                next_state[s, a, len(outcomes[s][a]) :] = s  # padding: probability 0
        if np.ndim(start) == 0:
            if isinstance(start, bool) or not isinstance(start, Integral) or not 0 <= start < n_states:
                raise ValueError(f"start must be a state in [0, {n_states}) or a distribution [S], got {start!r}")
            start = np.eye(n_states)[int(start)]
        return cls(prob, next_state, reward, terminated, np.asarray(start, dtype=float), horizon)


@dataclass(frozen=True, eq=False)
class ReturnDistribution:
    """A finite distribution of the episode return: sorted distinct ``values`` ``[n]`` and their ``probs`` ``[n]``.

    :raises ValueError: no values, ``values`` not finite and strictly increasing, or ``probs`` of another shape or
        not probabilities summing to 1 (each and the sum within :data:`MASS_ATOL`): :meth:`cvar` reads the lower tail
        off the order given, so unsorted values or missing mass gave another number without a word.
    """

    values: np.ndarray
    probs: np.ndarray

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        probs = np.asarray(self.probs, dtype=np.float64)
        if values.ndim != 1 or values.size == 0 or probs.shape != values.shape:
            raise ValueError(
                f"values and probs must be 1-D arrays of one length, at least 1, got shapes {values.shape} and "
                f"{probs.shape}"
            )
        if not (np.isfinite(values).all() and (np.diff(values) > 0).all()):
            raise ValueError(f"values must be finite, sorted and distinct (from_dict sorts them), got {values}")
        if not ((probs >= -MASS_ATOL) & (probs <= 1.0 + MASS_ATOL)).all() or abs(probs.sum() - 1.0) > MASS_ATOL:
            raise ValueError(f"probs must be probabilities summing to 1 (within {MASS_ATOL:g}), got {probs}")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "probs", probs)

    @classmethod
    def from_dict(cls, masses: Mapping[float, float]) -> ReturnDistribution:
        """The distribution with ``masses[value]`` on each value (in any order).

        :raises ValueError: see :class:`ReturnDistribution`.
        """
        items = sorted(masses.items())
        return cls(np.array([v for v, _ in items], dtype=float), np.array([p for _, p in items], dtype=float))

    def mean(self) -> float:
        return float(self.values @ self.probs)

    def cvar(self, alpha: float) -> float:
        """Mean of the worst ``alpha`` probability mass (the atom at the ``alpha``-quantile split fractionally).

        :raises ValueError: unless ``0 < alpha <= 1``.
        """
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        taken = np.clip(alpha - (np.cumsum(self.probs) - self.probs), 0.0, self.probs)
        return float(taken @ self.values / alpha)

    def prob(self, condition: Callable[[np.ndarray], np.ndarray]) -> float:
        """Probability that ``condition(return)`` holds (``condition`` is vectorized over values)."""
        return float(self.probs[condition(self.values)].sum())

    def mix(self, other: ReturnDistribution, weight: float) -> ReturnDistribution:
        """The return of a policy that draws once, before the episode, to play ``other`` with probability ``weight``
        and this one otherwise.

        :raises ValueError: unless ``0 <= weight <= 1``.
        """
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be in [0, 1], got {weight!r}")
        masses: dict[float, float] = {}
        for law, share in ((self, 1.0 - weight), (other, weight)):
            for value, prob in zip(law.values, law.probs, strict=True):
                masses[_key(value)] = masses.get(_key(value), 0.0) + share * prob
        return ReturnDistribution.from_dict({v: p for v, p in masses.items() if p > 0.0})

    def cvar_slope(self, other: ReturnDistribution, alpha: float) -> float:
        """The right derivative of ``self.mix(other, w).cvar(alpha)`` at ``w = 0``: how the CVaR changes as the policy
        starts to play ``other`` now and then, the direction a policy gradient can take between two policies.

        By Danskin's theorem on ``CVaR_a(G) = max_b {b - E[(b - G)^+] / a}`` it is the largest
        ``(E_self[(b - G)^+] - E_other[(b - G)^+]) / a`` over this law's maximizing ``b``: its ``alpha``-quantile,
        or the interval between two values where the CDF equals ``alpha`` exactly. The expression is piecewise
        linear in ``b`` with kinks at ``other``'s values, so the interval's ends and those values are enough. A
        slope <= 0 toward a better law (``other.cvar(alpha) > self.cvar(alpha)``) makes this one a local maximum
        along the mixture: CVaR is convex in the mixture weight, so the better law is across a valley.

        :raises ValueError: unless ``0 < alpha <= 1``.
        """
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        cdf = np.cumsum(self.probs)
        k = min(int(np.searchsorted(cdf, alpha - 1e-12)), len(self.values) - 1)
        low = high = self.values[k]
        if abs(cdf[k] - alpha) <= 1e-12:  # the CDF is flat at alpha up to the next value: every b in between is optimal
            high = self.values[k + 1] if k + 1 < len(self.values) else max(low, other.values[-1])
        inside = other.values[(other.values > low) & (other.values < high)]
        candidates = np.concatenate([[low, high], inside])
        shortfall = [np.maximum(candidates[:, None] - law.values, 0.0) @ law.probs for law in (self, other)]
        return float(np.max(shortfall[0] - shortfall[1]) / alpha)


@dataclass(frozen=True, eq=False)
class AugmentedPolicy:
    """A deterministic policy of (time, state, accumulated return): ``actions[(t, s, c)]``, ``c`` rounded by
    ``_key``. States it never reaches under itself are absent; there it acts by ``default`` (action 0)."""

    actions: dict[tuple[int, int, float], int]
    n_actions: int
    default: int = 0

    def __call__(self, t: int, state: int, ret: float) -> np.ndarray:
        return np.eye(self.n_actions)[self.actions.get((t, state, _key(ret)), self.default)]


@dataclass(frozen=True, eq=False)
class CVaRSolution:
    """The result of :func:`cvar_optimum`: the optimal ``value``, the optimal threshold ``b`` (an ``alpha``-quantile
    of the optimal return) and an optimal deterministic augmented ``policy``."""

    value: float
    threshold: float
    policy: AugmentedPolicy


@dataclass(frozen=True, eq=False)
class StationarySolution:
    """The result of :func:`best_stationary_cvar`: the best stationary deterministic ``policy`` ``[S]`` found, its
    exact CVaR ``value``, and ``upper``, a proven upper bound on every stationary deterministic policy's CVaR
    (``upper == value`` when the search finished: then ``value`` is the exact optimum)."""

    value: float
    policy: np.ndarray
    upper: float
    nodes: int = field(default=0)

    @property
    def exact(self) -> bool:
        return self.upper <= self.value + 1e-9


def _check_actions(mdp: TabularMDP, policy: np.ndarray) -> np.ndarray:
    """A stationary deterministic ``policy`` (``[S]`` actions) as int64.

    :raises ValueError: not ``[S]`` integers in ``[0, A)`` (``0.5`` is refused, not cut to action 0).
    """
    if policy.shape != (mdp.n_states,):
        raise ValueError(f"policy must be [S] = [{mdp.n_states}] actions, got shape {policy.shape}")
    bad = ~np.isin(policy, np.arange(mdp.n_actions))
    if bad.any():
        index = _first(bad)
        raise ValueError(f"policy{list(index)} must be an action in [0, {mdp.n_actions}), got {policy[index].item()!r}")
    return policy.astype(np.int64)


def _as_policy(mdp: TabularMDP, policy: np.ndarray | PolicyFn) -> PolicyFn:
    """A stationary ``[S]`` (actions) or ``[S, A]`` (probabilities) array, or a callable, as a callable.

    An array is checked here, once, not in the propagation's loops: a row that is not a probability vector would
    give a "return distribution" whose mass is not 1. A callable's probabilities are trusted, their shape checked.

    :raises ValueError: an array of another shape, actions outside ``[0, A)``, or a row of probabilities that is
        not non-negative summing to 1 (within :data:`PROB_ATOL`); a callable that returns other than ``[A]``.
    """
    if callable(policy):
        function = policy

        def act(t: int, state: int, ret: float) -> np.ndarray:
            probs = np.asarray(function(t, state, ret))
            if probs.shape != (mdp.n_actions,):
                raise ValueError(
                    f"policy(t, state, return) must return [A] = [{mdp.n_actions}] action probabilities, "
                    f"got shape {probs.shape} at (t, state, return) = ({t}, {state}, {ret})"
                )
            return probs

        return act
    table = np.asarray(policy)
    if table.shape == (mdp.n_states,):
        table = np.eye(mdp.n_actions)[_check_actions(mdp, table)]
    if table.shape != (mdp.n_states, mdp.n_actions):
        raise ValueError(f"policy must have shape [S] or [S, A] = [{mdp.n_states}, {mdp.n_actions}], got {table.shape}")
    _check_probability_rows("policy", table)
    return lambda t, state, ret: table[state]


def propagate(mdp: TabularMDP, policy: np.ndarray | PolicyFn) -> tuple[ReturnDistribution, np.ndarray]:
    """Forward propagation of (state, accumulated return) under ``policy`` within the time limit.

    :param mdp: the finite MDP (:class:`TabularMDP`).
    :param policy: ``[S]`` actions, ``[S, A]`` action probabilities, or a callable ``(t, s, return) -> [A]``.
    :return: the return distribution and the expected number of visits of each state ``[S]`` (decisions taken there).
    """
    act = _as_policy(mdp, policy)
    live: dict[tuple[int, float], float] = {(int(s), 0.0): float(p) for s, p in enumerate(mdp.start) if p > 0}
    final: dict[float, float] = {}
    visits = np.zeros(mdp.n_states)
    for t in range(mdp.horizon):
        nxt: dict[tuple[int, float], float] = {}
        for (s, ret), p in live.items():
            visits[s] += p
            probs = act(t, s, ret)
            for a in np.flatnonzero(probs):
                for q, s2, r, term in zip(
                    mdp.prob[s, a], mdp.next_state[s, a], mdp.reward[s, a], mdp.terminated[s, a], strict=True
                ):
                    if q == 0:
                        continue
                    mass, ret2 = p * probs[a] * q, _key(ret + r)
                    if term:
                        final[ret2] = final.get(ret2, 0.0) + mass
                    else:
                        nxt[(int(s2), ret2)] = nxt.get((int(s2), ret2), 0.0) + mass
        live = nxt
    for (_, ret), p in live.items():  # truncated by the time limit
        final[ret] = final.get(ret, 0.0) + p
    return ReturnDistribution.from_dict(final), visits


def return_distribution(mdp: TabularMDP, policy: np.ndarray | PolicyFn) -> ReturnDistribution:
    """The exact distribution of the episode return of ``policy`` (see :func:`propagate`)."""
    return propagate(mdp, policy)[0]


def mean_optimum(mdp: TabularMDP) -> tuple[float, np.ndarray]:
    """Finite-horizon value iteration: the mean-optimal value and a Markov policy ``[horizon, S]`` of (time, state)
    (ties broken towards the lowest action index). History adds nothing to the mean, so this is the optimum over
    all policies.

    :return: ``(value, policy)``; ``policy[t, s]`` is the action at time ``t`` (a callable form:
        ``lambda t, s, c: np.eye(A)[policy[t, s]]``).
    """
    value = np.zeros(mdp.n_states)
    policy = np.zeros((mdp.horizon, mdp.n_states), dtype=np.int64)
    for t in reversed(range(mdp.horizon)):
        q = (mdp.prob * (mdp.reward + np.where(mdp.terminated, 0.0, value[mdp.next_state]))).sum(axis=-1)
        policy[t] = q.argmax(axis=1)
        value = q.max(axis=1)
    return float(mdp.start @ value), policy


def markov_policy(table: np.ndarray, n_actions: int) -> PolicyFn:
    """A ``[horizon, S]`` table of actions (as from :func:`mean_optimum`) as a policy callable."""
    eye = np.eye(n_actions)
    return lambda t, state, ret: eye[table[t, state]]


@dataclass
class _Layer:
    """Augmented nodes (state, accumulated return) alive at one time step, and their one-step outcomes."""

    nodes: list[tuple[int, float]]
    to_next: sparse.csr_array  # [n_nodes * A, n_next]: probability of reaching each node of the next layer
    to_final: sparse.csr_array  # [n_nodes * A, n_values]: probability of ending with each candidate return


def _csr(entries: dict[tuple[int, int], float], shape: tuple[int, int]) -> sparse.csr_array:
    """The sparse matrix of ``shape`` with the nonzero ``entries`` ``{(row, column): value}``."""
    rows, columns = np.array(list(entries), dtype=np.int64).reshape(-1, 2).T
    return sparse.csr_array((np.fromiter(entries.values(), float, len(entries)), (rows, columns)), shape=shape)


def _layers(mdp: TabularMDP) -> tuple[list[_Layer], np.ndarray]:
    """The augmented nodes reachable under any action, per time step, and the attainable returns."""
    frontier = {(int(s), 0.0) for s in np.flatnonzero(mdp.start)}
    # Edges (row, probability, target, terminated): the target is a return if terminated, else a node (state, return).
    raw: list[tuple[list[tuple[int, float]], list[tuple[int, float, Any, bool]]]] = []
    values: set[float] = set()
    for _ in range(mdp.horizon):
        nodes = sorted(frontier)
        edges: list[tuple[int, float, Any, bool]] = []
        frontier = set()
        for i, (s, ret) in enumerate(nodes):
            for a in range(mdp.n_actions):
                for q, s2, r, term in zip(
                    mdp.prob[s, a], mdp.next_state[s, a], mdp.reward[s, a], mdp.terminated[s, a], strict=True
                ):
                    if q == 0:
                        continue
                    ret2 = _key(ret + r)
                    if term:
                        values.add(ret2)
                        edges.append((i * mdp.n_actions + a, q, ret2, True))
                    else:
                        frontier.add((int(s2), ret2))
                        edges.append((i * mdp.n_actions + a, q, (int(s2), ret2), False))
        raw.append((nodes, edges))
    values.update(ret for _, ret in frontier)  # truncated at the time limit
    candidates = np.array(sorted(values))
    value_index = {v: j for j, v in enumerate(candidates)}
    layers = []
    for t, (nodes, edges) in enumerate(raw):
        next_nodes = raw[t + 1][0] if t + 1 < mdp.horizon else sorted(frontier)
        next_index = {node: j for j, node in enumerate(next_nodes)}
        # Summed per entry in edge order from 0.0 (as a dense table would), then made sparse: a dense
        # [n_nodes * A, n_next] table takes n_nodes^2 memory (gigabytes for a 100-state MDP over 30 steps).
        to_next: dict[tuple[int, int], float] = {}
        to_final: dict[tuple[int, int], float] = {}
        for row, q, target, term in edges:
            table, column = (to_final, value_index[target]) if term else (to_next, next_index[target])
            table[row, column] = table.get((row, column), 0.0) + q
        n_rows = len(nodes) * mdp.n_actions
        layers.append(
            _Layer(nodes, _csr(to_next, (n_rows, len(next_nodes))), _csr(to_final, (n_rows, len(candidates))))
        )
    layers.append(_Layer(sorted(frontier), sparse.csr_array((0, 0)), sparse.csr_array((0, 0))))
    return layers, candidates


class _AugmentedDP:
    """The augmented nodes of an MDP (reachable under any action) and the backward recursion over them, built once
    and solved for any action mask (a mask only removes options, so the nodes reachable under it are a subset)."""

    def __init__(self, mdp: TabularMDP) -> None:
        self.mdp = mdp
        self.layers, self.b = _layers(mdp)
        nodes = [len(layer.nodes) for layer in self.layers[:-1]]
        entries = len(self.b) * sum(nodes) * mdp.n_actions
        if entries > DP_WARN_ENTRIES:
            warnings.warn(
                f"the CVaR DP over (time, state, accumulated return) has {sum(nodes)} nodes and {len(self.b)} "
                f"attainable returns: {entries:.1e} table entries a solve (tens of seconds or more, "
                f"{len(self.b) * max(nodes) * mdp.n_actions * 8 / 2**30:.1f} GiB at its largest layer); fewer distinct "
                "returns (rewards rounded to a grid) or a shorter horizon make it smaller",
                stacklevel=user_stacklevel(),
            )
        self.shortfall = np.maximum(self.b[:, None] - self.b[None, :], 0.0)  # [n_b, n_values]: (b - return)^+
        self.states = [np.array([s for s, _ in layer.nodes], dtype=np.int64) for layer in self.layers]
        self.first = {node: i for i, node in enumerate(self.layers[0].nodes)}

    def solve(self, alpha: float, allowed: np.ndarray, floor: float = -np.inf) -> tuple[CVaRSolution, np.ndarray]:
        """The optimum under the mask ``allowed`` ``[S, A]`` and the state visits ``[S]`` of its optimal policy.

        :param floor: only thresholds ``b > floor`` are tried (``b - E[(b - G)^+] / a <= b``, so a search that only
            needs values above ``floor`` loses nothing); the lowest candidate is always kept.
        """
        mdp = self.mdp
        keep = self.b > floor
        keep[-1] = True
        b, shortfall = self.b[keep], self.shortfall[keep]
        last = self.layers[-1].nodes
        w = shortfall[:, [int(np.searchsorted(self.b, ret)) for _, ret in last]]
        # [n_b, n_nodes] per layer, kept until the best b is known: the smallest integer type holds them (int64
        # took 8 bytes a node and candidate, 5 GB on slippery CliffWalking over 100 steps).
        action_type = np.min_scalar_type(mdp.n_actions - 1)
        choices = []
        for layer, states in zip(reversed(self.layers[:-1]), reversed(self.states[:-1]), strict=True):
            q = (layer.to_next @ w.T + layer.to_final @ shortfall.T).T.reshape(len(b), len(states), mdp.n_actions)
            q = np.where(allowed[states][None], q, np.inf)
            choices.append(q.argmin(axis=-1).astype(action_type))
            w = q.min(axis=-1)
        choices.reverse()
        expected = sum(p * w[:, self.first[(int(s), 0.0)]] for s, p in enumerate(mdp.start) if p > 0)
        objective = b - expected / alpha
        best = int(objective.argmax())
        # Visits of the optimal policy, layer by layer: the chosen rows of the one-step matrices.
        visits = np.zeros(mdp.n_states)
        occupancy = np.array([mdp.start[s] for s, _ in self.layers[0].nodes])
        actions = {}
        for t, (layer, states) in enumerate(zip(self.layers[:-1], self.states[:-1], strict=True)):
            chosen = choices[t][best]
            np.add.at(visits, states, occupancy)
            actions.update({(t, int(s), ret): int(a) for (s, ret), a in zip(layer.nodes, chosen, strict=True)})
            occupancy = layer.to_next[np.arange(len(states)) * mdp.n_actions + chosen].T @ occupancy
        solution = CVaRSolution(float(objective[best]), float(b[best]), AugmentedPolicy(actions, mdp.n_actions))
        return solution, visits


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")


def cvar_optimum(mdp: TabularMDP, alpha: float, allowed: np.ndarray | None = None) -> CVaRSolution:
    """The CVaR_alpha-optimal value over all history-dependent (randomized) policies and an optimal deterministic
    policy of (time, state, accumulated return) (Bauerle and Ott, 2011; see the module docstring).

    :param mdp: the finite MDP (:class:`TabularMDP`).
    :param alpha: the CVaR level in (0, 1].
    :param allowed: optional ``[S, A]`` bool mask of the actions the policy may take in each state (default all).
    """
    _check_alpha(alpha)
    allowed = np.ones((mdp.n_states, mdp.n_actions), dtype=bool) if allowed is None else np.asarray(allowed, bool)
    if allowed.shape != (mdp.n_states, mdp.n_actions) or not allowed.any(axis=1).all():
        raise ValueError("allowed must be an [S, A] bool mask with at least one action per state")
    return _AugmentedDP(mdp).solve(alpha, allowed)[0]


def best_stationary_cvar(
    mdp: TabularMDP, alpha: float, initial: Sequence[np.ndarray] = (), max_nodes: int = 20_000
) -> StationarySolution:
    """The best CVaR_alpha over stationary deterministic policies of the state, by branch and bound.

    A node of the search fixes the actions of some states; its bound is :func:`cvar_optimum` with the remaining
    states free (history-dependent there), an upper bound on every completion. The branching state is the free state
    the relaxed optimum visits most; when the relaxed optimum visits no free state, it is itself a stationary policy
    and the node is solved. Nodes whose bound does not exceed the incumbent (by more than 1e-9) are pruned.

    :param mdp: the finite MDP (:class:`TabularMDP`).
    :param alpha: the CVaR level in (0, 1].
    :param initial: candidate policies ``[S]`` (actions) whose best is the first incumbent (e.g. a known safe path).
    :param max_nodes: the search stops after this many bound evaluations; the result then carries the largest
        open bound as ``upper`` (``exact`` is False).
    """
    _check_alpha(alpha)
    n_states, n_actions = mdp.n_states, mdp.n_actions
    best_value, best_policy = -np.inf, np.zeros(n_states, dtype=np.int64)
    for policy in initial:
        policy = _check_actions(mdp, np.asarray(policy))
        value = return_distribution(mdp, policy).cvar(alpha)
        if value > best_value:
            best_value, best_policy = value, policy

    dp = _AugmentedDP(mdp)

    def bound(fixed: np.ndarray) -> tuple[float, CVaRSolution, np.ndarray]:
        allowed = np.ones((n_states, n_actions), dtype=bool)
        allowed[fixed >= 0] = False
        allowed[fixed >= 0, fixed[fixed >= 0]] = True
        solution, visits = dp.solve(alpha, allowed, floor=best_value)
        return solution.value, solution, visits

    root = np.full(n_states, -1, dtype=np.int64)
    stack = [(*bound(root), root)]
    nodes, open_bounds = 1, []
    while stack:
        upper, solution, visits, fixed = stack.pop()
        if upper <= best_value + 1e-9:
            continue
        if nodes >= max_nodes:
            open_bounds.append(upper)
            continue
        free_visits = np.where(fixed < 0, visits, 0.0)
        if free_visits.max() <= 0:  # the relaxed optimum is stationary on every state it visits
            policy = np.where(fixed >= 0, fixed, 0)
            for (_, s, _), a in solution.policy.actions.items():
                if fixed[s] < 0:
                    policy[s] = a
            value = return_distribution(mdp, policy).cvar(alpha)
            if value > best_value:
                best_value, best_policy = value, policy
            continue
        state = int(free_visits.argmax())
        # The relaxed optimum's most used actions at that state first: good completions come early.
        usage = np.zeros(n_actions)
        for (_, s, _), a in solution.policy.actions.items():
            usage[a] += s == state
        children = []
        for a in np.argsort(-usage, kind="stable"):
            child = fixed.copy()
            child[state] = a
            children.append((*bound(child), child))
            nodes += 1
        children.sort(key=lambda item: item[0])  # the stack pops the best bound first
        stack.extend(children)
    upper = max([best_value, *open_bounds])
    return StationarySolution(float(best_value), best_policy, float(upper), nodes)


def one_state_switches(mdp: TabularMDP, policy: np.ndarray, alpha: float) -> list[tuple[int, int, float]]:
    """The changes of one state's action that raise the CVaR_alpha of a stationary deterministic ``policy``.

    A policy with none is a local optimum among stationary deterministic policies, one state at a time. A trained
    greedy policy below the optimum that has one is stuck at that state rather than on another route: typically a
    state that only rare episodes reach (a slip), where the softmax saturated on a bad action early and the
    gradient, proportional to ``1 - pi``, no longer moves it. States the policy never visits are skipped: their
    action does not change the return distribution.

    :param mdp: the finite MDP (:class:`TabularMDP`).
    :param policy: ``[S]`` actions.
    :param alpha: the CVaR level in (0, 1].
    :return: ``(state, action, CVaR_alpha after the change)`` for every change that raises it by more than 1e-9,
        best first.
    """
    _check_alpha(alpha)
    policy = _check_actions(mdp, np.asarray(policy))
    law, visits = propagate(mdp, policy)
    base, switches = law.cvar(alpha), []
    for state in np.flatnonzero(visits > 0):
        for action in range(mdp.n_actions):
            if action == policy[state]:
                continue
            changed = policy.copy()
            changed[state] = action
            value = return_distribution(mdp, changed).cvar(alpha)
            if value > base + 1e-9:
                switches.append((int(state), action, float(value)))
    return sorted(switches, key=lambda switch: -switch[2])
