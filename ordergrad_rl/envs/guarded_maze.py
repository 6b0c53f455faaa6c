"""GuardedMaze: a small maze whose short path crosses a guarded cell (after CeSoR's Guarded Maze)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ordergrad_rl.common.arguments import check_float
from ordergrad_rl.envs.grid import MOVES, GridEnv
from ordergrad_rl.envs.noise import BernoulliNoiseMixin
from ordergrad_rl.envs.tabular import Outcome

#: Rows of the maze: # wall, S start, G goal, X guarded cell, . floor.
LAYOUT: tuple[str, ...] = (
    "########",
    "#S.....#",
    "#......#",
    "#....#.#",
    "#....#.#",
    "#X####.#",
    "#.G....#",
    "########",
)
#: The registered time limit.
MAX_EPISODE_STEPS = 40


class GuardedMazeEnv(BernoulliNoiseMixin, GridEnv):
    """An 8x8 maze: the short path to the goal passes a guard who sometimes charges a large bribe.

    ## Description

    After the Guarded Maze of CeSoR (Greenberg et al., 2022, "Efficient Risk-Averse Reinforcement Learning"): the
    agent must reach a target; the shortest path crosses a guarded zone where a guard may charge a random cost, and a
    longer path avoids it. Risk-averse policy gradients started from a random policy tend to learn to wander (their
    lower tail is made of long wanders, "blindness to success"); the CVaR-optimal policy takes the long path::

        # # # # # # # #
        # S . . . . . #      S start, G goal, X guard, # wall
        # . . . . . . #
        # . . . . # . #      short path: down column 1 through X (6 moves)
        # . . . . # . #      long path: right, down column 6, left along row 6 (14 moves)
        # X # # # # . #
        # . G . . . . #
        # # # # # # # #

    Each move slips with probability ``slip``: the intended move is replaced by one of the four drawn uniformly
    (possibly the intended one). Moves into walls leave the agent in place. Every entry into X draws the guard: with
    probability ``guard_prob`` the step also pays ``guard_reward``.

    Reconstructed from the paper's description (the layout of its 8x8 maze, goal reward L = 2 x size = 16, -1 per
    step, a guarded zone on the short path); guessed where the description does not fix it: the start cell, the
    guard's cost as a fixed -64 = -4L with probability 0.05 per entry (the paper draws a random cost), the discrete
    slip in place of its continuous action noise, and the 40-step limit.

    Exact values with the defaults (``ordergrad_rl.envs.tabular``: forward propagation of (state, return), the
    CVaR optimum by dynamic programming over (time, state, accumulated return), the best stationary policy by branch
    and bound), CVaR at level 0.2:

    | Policy                                   | Mean   | CVaR_0.2 |
    |------------------------------------------|--------|----------|
    | mean-optimal                             | 5.867  | -9.285   |
    | CVaR-optimal, history-dependent          | 0.572  | -2.012   |
    | CVaR-optimal, stationary                 | 0.568  | -2.017   |

    The mean-optimal policy takes the short path (its return is -54 or worse when the guard charges, 5% of
    crossings); the CVaR-optimal ones take the long path, whose tail is made of slips and time-outs. The time-aware
    (history-dependent) optimum gains only 0.005 over the best policy of the cell alone.

    The mean-optimal policy is a local maximum of CVaR_0.2. Moving a share ``w`` of episodes from it to the
    stationary optimum first trades successes above the value at risk for the long path's lower returns while the
    guard's charges stay in the tail: slope -19.874 (``ReturnDistribution.cvar_slope``), down to -11.796 at
    ``w = 0.153``, back to -9.285 only at ``w = 0.417``. An agent that first learns the short path (a risk schedule
    that starts at the mean) has no gradient to the long one; from the uniform policy CVaR_0.2 rises towards the
    stationary optimum (slope +6.161).

    ## Action Space

    ``Discrete(4)``: 0 up, 1 right, 2 down, 3 left. Anything else raises ``ValueError``.

    ## Observation Space

    ``Discrete(64)``: the cell, ``row * 8 + column`` (wall cells are never observed).

    ## Rewards

    ``step_reward`` (-1) per move, plus ``goal_reward`` (+16) on reaching G, plus ``guard_reward`` (-64) with
    probability ``guard_prob`` (0.05) on each entry into X.

    ## Starting State

    Cell S (state 9).

    ## Episode End

    Terminated on reaching G; truncated after 40 steps by the registered ``TimeLimit``.

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl

    env = gym.make("GuardedMaze-v0", slip=0.1, guard_prob=0.05)
    ```

    ``slip=0.1`` and ``guard_prob=0.05`` (probabilities in [0, 1]), ``step_reward=-1.0``, ``goal_reward=16.0``,
    ``guard_reward=-64.0`` (finite numbers); anything else raises ``ValueError`` naming the argument.
    ``env.unwrapped.P[s][a]`` lists the ``(probability, next_state, reward, terminated)`` outcomes and
    ``env.unwrapped.tabular()`` gives the :class:`~ordergrad_rl.envs.tabular.TabularMDP`. Each step draws one uniform.

    The guard is the env's noise event ``"guard"`` (:mod:`ordergrad_rl.envs.noise`): ``noise_probs`` is
    ``{"guard": guard_prob}``, ``set_noise_probs({"guard": q})`` makes the following entries into X charge with
    probability ``q`` (a sampler's; ``P`` and :meth:`tabular` keep ``guard_prob``), and a step that enters X reports
    ``info["noise"] = {"guard": (1, charged)}``.

    ## Version History

    * v0: Initial version.
    """

    max_episode_steps = MAX_EPISODE_STEPS

    def __init__(
        self,
        slip: float = 0.1,
        guard_prob: float = 0.05,
        step_reward: float = -1.0,
        goal_reward: float = 16.0,
        guard_reward: float = -64.0,
        render_mode: str | None = None,
    ) -> None:
        self._init_grid(LAYOUT, render_mode)
        self.slip = check_float("slip", slip, 0.0, 1.0)
        self.guard_prob = check_float("guard_prob", guard_prob, 0.0, 1.0)
        step_reward = check_float("step_reward", step_reward)
        goal_reward = check_float("goal_reward", goal_reward)
        guard_reward = check_float("guard_reward", guard_reward)
        for name, bonus in (("goal_reward", goal_reward), ("guard_reward", guard_reward)):
            if not np.isfinite(step_reward + bonus):
                raise ValueError(f"step_reward + {name} overflows: {step_reward!r} + {bonus!r}")
        self.step_reward, self.goal_reward, self.guard_reward = step_reward, goal_reward, guard_reward
        self.P, self._guarded = self._outcome_table(self.guard_prob)
        self._sampling_P, self._sampling_guarded = self.P, self._guarded  # the tables the steps draw from
        self._q_tables: tuple[float, dict, dict] | None = None  # the last sampler probability's tables

    def _outcome_table(
        self, guard_prob: float
    ) -> tuple[dict[int, dict[int, list[Outcome]]], dict[int, dict[int, list[bool | None]]]]:
        """The outcomes ``P[s][a]`` with the guard charging with ``guard_prob``, and for each outcome whether it
        draws the guard: ``None`` (no draw), ``True`` (charged) or ``False``."""
        table: dict[int, dict[int, list[Outcome]]] = {}
        guarded: dict[int, dict[int, list[bool | None]]] = {}
        for state, cell in enumerate(self.cells):
            table[state], guarded[state] = {}, {}
            for action in range(len(MOVES)):
                if cell in "#G":  # walls are never entered, the goal is absorbing (as in FrozenLake)
                    table[state][action], guarded[state][action] = [(1.0, state, 0.0, True)], [None]
                    continue
                probs: dict[int, float] = {}
                for move in range(len(MOVES)):
                    target = self._move(state, move)
                    chance = self.slip / len(MOVES) + (1.0 - self.slip) * (move == action)
                    probs[target] = probs.get(target, 0.0) + chance
                outcomes: list[Outcome] = []
                draws: list[bool | None] = []
                for nxt, prob in probs.items():
                    reward = self.step_reward + (self.goal_reward if self.cells[nxt] == "G" else 0.0)
                    guard = self.cells[nxt] == "X" and nxt != state
                    if guard and guard_prob > 0:
                        outcomes.append((prob * guard_prob, nxt, reward + self.guard_reward, False))
                        draws.append(True)
                        prob *= 1.0 - guard_prob
                    if prob > 0:
                        outcomes.append((prob, nxt, reward, self.cells[nxt] == "G"))
                        draws.append(False if guard else None)
                table[state][action], guarded[state][action] = outcomes, draws
        return table, guarded

    @property
    def noise_probs(self) -> dict[str, float]:
        """The guard's charge on an entry into X (``guard_prob``): the env's one noise event."""
        return {"guard": self.guard_prob}

    def _noise_changed(self) -> None:
        # A sampler alternates between the env's own guard_prob and its q: keep the last q's tables.
        prob = self.noise_prob("guard")
        if prob == self.guard_prob:
            self._sampling_P, self._sampling_guarded = self.P, self._guarded
            return
        if self._q_tables is None or self._q_tables[0] != prob:
            self._q_tables = (prob, *self._outcome_table(prob))
        _, self._sampling_P, self._sampling_guarded = self._q_tables

    def _outcomes(self, state: int, action: int) -> list[Outcome]:
        return self._sampling_P[state][action]

    def _step_info(self, state: int, action: int, pick: int) -> dict[str, Any]:
        guarded = self._sampling_guarded[state][action][pick]
        return {} if guarded is None else self.noise_info("guard", guarded)

    def _move(self, state: int, move: int) -> int:
        row, col = divmod(state, self.n_cols)
        target = (row + MOVES[move][0]) * self.n_cols + col + MOVES[move][1]
        return state if self.cells[target] == "#" else target
