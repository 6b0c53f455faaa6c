"""GridEnv: a gridworld given by its layout and its outcome table, the base of RiskyLavaGrid and GuardedMaze."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.envs.rendering import check_render_mode, grid_frame
from ordergrad_rl.envs.tabular import Outcome, TabularMDP

#: Moves of the actions 0-3: up, right, down, left (row, column deltas).
MOVES: tuple[tuple[int, int], ...] = ((-1, 0), (0, 1), (1, 0), (0, -1))


class GridEnv(gym.Env[int, np.integer]):
    """A gridworld of one-character cells whose dynamics are a table of outcomes, Gymnasium's FrozenLake
    convention: ``P[state][action]`` lists the ``(probability, next_state, reward, terminated)`` outcomes.

    The subclass calls :meth:`_init_grid` with its layout (rows of equal length, one ``S`` start cell), then fills
    :attr:`P`. This class steps, resets and renders from them, and gives the exact model (:meth:`tabular`) that
    the known-answer benchmarks propagate policies through. The state is the cell, ``row * n_cols + column``; the
    actions are the four :data:`MOVES`. Each step draws one uniform from ``np_random``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: The registered time limit, the default horizon of :meth:`tabular`.
    max_episode_steps: ClassVar[int]

    P: dict[int, dict[int, list[Outcome]]]

    def _init_grid(self, layout: tuple[str, ...], render_mode: str | None) -> None:
        """Set the cells, the spaces and the start state of ``layout``.

        :raises ValueError: a ``render_mode`` other than ``None``, ``"ansi"`` and ``"rgb_array"``.
        """
        check_render_mode(render_mode, self.metadata)
        self.render_mode = render_mode
        self.cells = "".join(layout)
        self.n_rows, self.n_cols = len(layout), len(layout[0])
        self.start_state = self.cells.index("S")
        # Gymnasium types Discrete's elements np.int64; the state is an int, as in its own FrozenLake and CliffWalking.
        self.observation_space = spaces.Discrete(len(self.cells))  # type: ignore[assignment]
        self.action_space = spaces.Discrete(len(MOVES))
        self.P = {}
        self._state = self.start_state
        self._done = True

    def tabular(self, horizon: int | None = None) -> TabularMDP:
        """The env as a :class:`~ordergrad_rl.envs.tabular.TabularMDP` with time limit ``horizon`` (default: the
        registered one)."""
        horizon = self.max_episode_steps if horizon is None else horizon
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
        outcomes = self._outcomes(self._state, int(action))
        cumulative = np.cumsum([outcome[0] for outcome in outcomes])
        pick = min(int(np.searchsorted(cumulative, self.np_random.random(), side="right")), len(outcomes) - 1)
        info = self._step_info(self._state, int(action), pick)
        _, self._state, reward, self._done = outcomes[pick]
        return self._state, reward, self._done, False, info

    def _move(self, state: int, move: int) -> int:
        """The cell that ``move`` (an index of :data:`MOVES`) leads to from ``state``; a move off the grid stays."""
        row, col = divmod(state, self.n_cols)
        d_row, d_col = MOVES[move]
        row = min(max(row + d_row, 0), self.n_rows - 1)
        col = min(max(col + d_col, 0), self.n_cols - 1)
        return row * self.n_cols + col

    def _outcomes(self, state: int, action: int) -> list[Outcome]:
        """The outcomes a step draws from (hook: :attr:`P`'s, or those of changed noise probabilities)."""
        return self.P[state][action]

    def _step_info(self, state: int, action: int, pick: int) -> dict[str, Any]:
        """The ``info`` of a step from ``state`` whose outcome was ``_outcomes(state, action)[pick]`` (hook)."""
        return {}

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the layout with the agent's cell shown as ``A``; ``"rgb_array"``: 16-pixel cells
        (:func:`~ordergrad_rl.envs.rendering.grid_frame`: the agent dark blue), ``uint8 [rows*16, cols*16, 3]``."""
        if self.render_mode == "rgb_array":
            return grid_frame(self.cells, self.n_cols, self._state)
        if self.render_mode != "ansi":
            return None
        cells = list(self.cells)
        cells[self._state] = "A"
        return "\n".join("".join(cells[row * self.n_cols : (row + 1) * self.n_cols]) for row in range(self.n_rows))
