"""GuardedMaze: a small maze whose short path crosses a guarded cell (after CeSoR's Guarded Maze)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.common.arguments import check_float
from ordergrad_rl.envs.rendering import grid_frame
from ordergrad_rl.envs.tabular import Outcome, TabularMDP

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
#: Moves of the actions 0-3: up, right, down, left (row, column deltas).
MOVES: tuple[tuple[int, int], ...] = ((-1, 0), (0, 1), (1, 0), (0, -1))
#: The registered time limit.
MAX_EPISODE_STEPS = 40


class GuardedMazeEnv(gym.Env[np.integer, np.integer]):
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

    ## Version History

    * v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        slip: float = 0.1,
        guard_prob: float = 0.05,
        step_reward: float = -1.0,
        goal_reward: float = 16.0,
        guard_reward: float = -64.0,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.slip = check_float("slip", slip, 0.0, 1.0)
        self.guard_prob = check_float("guard_prob", guard_prob, 0.0, 1.0)
        step_reward = check_float("step_reward", step_reward)
        goal_reward = check_float("goal_reward", goal_reward)
        guard_reward = check_float("guard_reward", guard_reward)
        for name, bonus in (("goal_reward", goal_reward), ("guard_reward", guard_reward)):
            if not np.isfinite(step_reward + bonus):
                raise ValueError(f"step_reward + {name} overflows: {step_reward!r} + {bonus!r}")
        self.cells = "".join(LAYOUT)
        self.n_rows, self.n_cols = len(LAYOUT), len(LAYOUT[0])
        self.start_state = self.cells.index("S")
        self.observation_space = spaces.Discrete(len(self.cells))
        self.action_space = spaces.Discrete(len(MOVES))
        self.P: dict[int, dict[int, list[Outcome]]] = {}
        for state, cell in enumerate(self.cells):
            self.P[state] = {}
            for action in range(len(MOVES)):
                if cell in "#G":  # walls are never entered, the goal is absorbing (as in FrozenLake)
                    self.P[state][action] = [(1.0, state, 0.0, True)]
                    continue
                probs: dict[int, float] = {}
                for move in range(len(MOVES)):
                    target = self._move(state, move)
                    chance = self.slip / len(MOVES) + (1.0 - self.slip) * (move == action)
                    probs[target] = probs.get(target, 0.0) + chance
                outcomes: list[Outcome] = []
                for nxt, prob in probs.items():
                    reward = step_reward + (goal_reward if self.cells[nxt] == "G" else 0.0)
                    if self.cells[nxt] == "X" and nxt != state and self.guard_prob > 0:
                        outcomes.append((prob * self.guard_prob, nxt, reward + guard_reward, False))
                        prob *= 1.0 - self.guard_prob
                    if prob > 0:
                        outcomes.append((prob, nxt, reward, self.cells[nxt] == "G"))
                self.P[state][action] = outcomes
        self._state = self.start_state
        self._done = True

    def _move(self, state: int, move: int) -> int:
        row, col = divmod(state, self.n_cols)
        target = (row + MOVES[move][0]) * self.n_cols + col + MOVES[move][1]
        return state if self.cells[target] == "#" else target

    def tabular(self, horizon: int = MAX_EPISODE_STEPS) -> TabularMDP:
        """The env as a :class:`~ordergrad_rl.envs.tabular.TabularMDP` with time limit ``horizon``."""
        return TabularMDP.from_outcomes(self.P, self.start_state, horizon)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._state = self.start_state
        self._done = False
        return self._state, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"action must be a move in {{0, 1, 2, 3}}, got {action!r}")
        if self._done:
            raise RuntimeError("step() called on a finished episode: reset the env first")
        outcomes = self.P[self._state][int(action)]
        cumulative = np.cumsum([outcome[0] for outcome in outcomes])
        pick = min(int(np.searchsorted(cumulative, self.np_random.random(), side="right")), len(outcomes) - 1)
        _, self._state, reward, self._done = outcomes[pick]
        return self._state, reward, self._done, False, {}

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the layout with the agent's cell shown as ``A``; ``"rgb_array"``: 16-pixel cells (floor
        grey, wall dark, guard red, goal green, start light blue, agent dark blue), ``uint8 [128, 128, 3]``."""
        if self.render_mode == "rgb_array":
            return grid_frame(self.cells, self.n_cols, self._state)
        if self.render_mode != "ansi":
            return None
        cells = list(self.cells)
        cells[self._state] = "A"
        return "\n".join("".join(cells[row * self.n_cols : (row + 1) * self.n_cols]) for row in range(self.n_rows))
