"""RiskyLavaGrid: a slippery gridworld where the short path runs along lava."""

from __future__ import annotations

import numpy as np

from ordergrad_rl.common.arguments import check_float
from ordergrad_rl.envs.grid import MOVES, GridEnv

#: Rows of the grid: S start, G goal, L lava, . floor.
LAYOUT: tuple[str, ...] = (
    ".....",
    "S...G",
    ".LLL.",
)
UP, RIGHT, DOWN, LEFT = range(4)
#: The mean-optimal policy: along row 1, right over the lava (state = row * 5 + column).
SHORTCUT_POLICY = np.array([RIGHT] * 4 + [DOWN] + [RIGHT] * 5 + [UP] * 5)
#: The safe policy: up to row 0, along it, then down to the goal.
SAFE_POLICY = np.array([RIGHT] * 4 + [DOWN] + [UP] * 5 + [UP] * 5)
#: The best stationary policy for CVaR_0.2 (exact, ``tabular.best_stationary_cvar``): the safe path, except that
#: from row 1, columns 2 and 3, it goes right.
CVAR_POLICY = np.array([RIGHT] * 4 + [DOWN] + [UP, UP, RIGHT, RIGHT, UP] + [UP] * 5)
#: The registered time limit.
MAX_EPISODE_STEPS = 30


class RiskyLavaGridEnv(GridEnv):
    """A 3x5 slippery gridworld: the short path to the goal runs along lava.

    ## Description

    The classic demonstration that the risk-neutral and the CVaR-optimal policies differ (Chow et
    al., 2015)::

        row 0   .  .  .  .  .
        row 1   S  .  .  .  G
        row 2   .  L  L  L  .

    The agent starts at S. Reaching G or stepping into lava L ends the episode. Each move slips
    with probability ``slip``: the intended move is replaced by one of the four moves drawn
    uniformly (possibly the intended one). Moves into the border leave the agent in place.

    Two stationary policies (``SHORTCUT_POLICY``, ``SAFE_POLICY`` in this module) go right along
    row 0 and down to G from row 0; from row 1 the shortcut goes right (4 moves, 3 of them next
    to the lava) while the safe path goes up first (6 moves, lava only after two slips). Exact
    return distributions with the defaults and the 30-step time limit:

    | Policy   | Mean   | CVaR_0.1 | CVaR_0.2 | P(lava) |
    |----------|--------|----------|----------|---------|
    | shortcut | 3.793  | -12.800  | -4.446   | 0.0732  |
    | safe     | 3.207  | -0.098   | 0.951    | 0.0037  |

    The shortcut is the mean-optimal policy (value iteration), the safe path has the far better
    lower tail: ``mean`` training should take the shortcut, ``cvar0.1``/``cvar0.2`` the safe path.

    The exact optima (``ordergrad_rl.envs.tabular``: value iteration; the CVaR optimum over all
    history-dependent policies by dynamic programming over (time, state, accumulated return); the best
    stationary policy of the cell by branch and bound), CVaR at level 0.2:

    | Optimum                                  | Mean   | CVaR_0.2 |
    |------------------------------------------|--------|----------|
    | mean-optimal                             | 3.793  | -4.446   |
    | CVaR-optimal, history-dependent          | 3.334  | 1.187    |
    | CVaR-optimal, stationary                 | 3.305  | 1.124    |

    The stationary optimum (``CVAR_POLICY``) is the safe path except that, having slipped back to row 1 at
    column 2 or 3, it goes on right along the lava instead of climbing back: it beats the safe path (0.951).

    From the mean-optimal policy towards the stationary optimum, CVaR_0.2 rises at once: slope +4.965 per unit
    share of episodes moved (``ReturnDistribution.cvar_slope``), so an agent that first learns the shortcut (a
    risk schedule that starts at the mean) still has a gradient to the safe path.

    ## Action Space

    ``Discrete(4)``: 0 up, 1 right, 2 down, 3 left. Anything else raises ``ValueError``.

    ## Observation Space

    ``Discrete(15)``: the cell, ``row * 5 + column``.

    ## Rewards

    ``step_reward`` (-1) per move, plus ``goal_reward`` (+10) on reaching G, plus
    ``lava_reward`` (-15) on entering lava. The fastest shortcut scores 6, the safe path 4.

    ## Starting State

    Cell S (state 5).

    ## Episode End

    Terminated on reaching G or lava; truncated after 30 steps by the registered ``TimeLimit``.

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl

    env = gym.make("RiskyLavaGrid-v0", slip=0.1)
    ```

    ``slip=0.1`` (a probability in [0, 1]), ``step_reward=-1.0``, ``goal_reward=10.0``, ``lava_reward=-15.0``
    (finite numbers; anything else raises ``ValueError`` naming the argument).
    ``env.unwrapped.P[s][a]`` lists the ``(probability, next_state, reward, terminated)``
    outcomes (as in Gymnasium's FrozenLake), ``env.unwrapped.tabular()`` the
    :class:`~ordergrad_rl.envs.tabular.TabularMDP`. Each step draws one uniform.

    ## Version History

    * v0: Initial version.
    """

    max_episode_steps = MAX_EPISODE_STEPS

    def __init__(
        self,
        slip: float = 0.1,
        step_reward: float = -1.0,
        goal_reward: float = 10.0,
        lava_reward: float = -15.0,
        render_mode: str | None = None,
    ) -> None:
        self._init_grid(LAYOUT, render_mode)
        self.slip = check_float("slip", slip, 0.0, 1.0)
        step_reward = check_float("step_reward", step_reward)
        goal_reward = check_float("goal_reward", goal_reward)
        lava_reward = check_float("lava_reward", lava_reward)
        for name, bonus_reward in (("goal_reward", goal_reward), ("lava_reward", lava_reward)):
            if not np.isfinite(step_reward + bonus_reward):  # the reward of the last step
                raise ValueError(f"step_reward + {name} overflows: {step_reward!r} + {bonus_reward!r}")
        bonus = {"G": goal_reward, "L": lava_reward}
        for state, cell in enumerate(self.cells):
            self.P[state] = {}
            for action in range(len(MOVES)):
                if cell in bonus:  # absorbing, as in FrozenLake
                    self.P[state][action] = [(1.0, state, 0.0, True)]
                    continue
                probs: dict[int, float] = {}
                for move in range(len(MOVES)):
                    target = self._move(state, move)
                    probs[target] = (
                        probs.get(target, 0.0) + self.slip / len(MOVES) + (1.0 - self.slip) * (move == action)
                    )
                self.P[state][action] = [
                    (prob, nxt, step_reward + bonus.get(self.cells[nxt], 0.0), self.cells[nxt] in bonus)
                    for nxt, prob in probs.items()
                ]
