"""HeavyTailBandit: a one-step bandit whose best-mean arm hides a rare large loss."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.envs.rendering import arms_frame, check_render_mode
from ordergrad_rl.envs.tabular import Outcome, TabularMDP

#: Each arm's reward atoms: rows of (probability, reward).
ARMS: dict[str, tuple[tuple[float, float], ...]] = {
    "safe": ((0.5, 1.0), (0.5, 3.0)),
    "moderate": ((0.9, 4.0), (0.1, -6.0)),
    "heavy": ((0.96, 6.0), (0.04, -40.0)),
}


class HeavyTailBanditEnv(gym.Env[np.ndarray, np.integer]):
    """Three arms with finitely many reward atoms: the higher the mean, the heavier the left tail.

    ## Description

    A one-step diagnostic with exact answers: the mean prefers the heavy-tailed arm, CVaR_0.2 (the mean of the worst
    20% of rewards) the safe arm, and the moderate arm lies between. A mixed (stochastic) policy never beats the
    best arm on either objective (for a fixed threshold ``b`` the CVaR objective ``b - E[(b - R)^+] / a`` is linear
    in the mixture), so the optima below are the optima over all policies. Exact statistics of each arm:

    | Action | Arm      | Reward                     | Mean  | CVaR_0.2 |
    |--------|----------|----------------------------|-------|----------|
    | 0      | safe     | 1 or 3, w.p. 1/2 each      | 2.000 | 1.000    |
    | 1      | moderate | 4 w.p. 0.9, -6 w.p. 0.1    | 3.000 | -1.000   |
    | 2      | heavy    | 6 w.p. 0.96, -40 w.p. 0.04 | 4.160 | -3.200   |

    So the mean-optimal policy (arm 2) has mean 4.16 and CVaR_0.2 -3.2, the CVaR_0.2-optimal one (arm 0) mean 2
    and CVaR_0.2 1. The loss of arm 2 comes once in 25 pulls: a batch of 256 episodes holds about 10.

    Arm 2 is a local maximum of CVaR_0.2: moving a share ``w`` of pulls from it to arm 0 puts arm 0's 1s and 3s in
    the tail below arm 2's 6 while its -40s stay, slope -10.800 (``ReturnDistribution.cvar_slope``), down to -5.000
    at ``w = 0.167``, back to -3.200 only at ``w = 0.488``. From the uniform policy CVaR_0.2 rises towards arm 0
    (slope +3.900) and falls towards arm 2 (-4.300), so an agent that starts near uniform is led to arm 0 and one
    that first learns arm 2 (a risk schedule that starts at the mean) stays there.

    ## Action Space

    ``Discrete(3)``: the arm. Anything outside the space raises ``ValueError``.

    ## Observation Space

    ``Box(0, 1, (1,), float32)``, always ``[0.0]``.

    ## Rewards

    One draw from the chosen arm's atoms (table above).

    ## Starting State

    The constant observation.

    ## Episode End

    Every episode terminates after its single step.

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl

    env = gym.make("HeavyTailBandit-v0")
    ```

    No arguments. The registered one-step ``TimeLimit`` (``max_episode_steps=1``, from which the agents size their
    rollouts) sits inside :class:`~ordergrad_rl.envs.own_horizon.OwnHorizon`, so the step is ``terminated=True,
    truncated=False``, as an episode that ends in the MDP is, not ``TimeLimit``'s ``truncated=True`` at its limit as
    well; a longer ``max_episode_steps`` raises ``ValueError`` (the episode ends after its one step).
    ``env.unwrapped.P[0][a]`` lists the ``(probability, next_state, reward, terminated)`` outcomes and
    ``env.unwrapped.tabular()`` gives the :class:`~ordergrad_rl.envs.tabular.TabularMDP`. Each step draws one uniform.

    ## Version History

    * v0: Initial version (its step was ``truncated=True`` as well before ``OwnHorizon``; the
      episodes, and SB3's ``TimeLimit.truncated``, which is ``truncated and not terminated``, are unchanged).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 4}
    arm_names: tuple[str, ...] = tuple(ARMS)

    def __init__(self, render_mode: str | None = None) -> None:
        check_render_mode(render_mode, self.metadata)
        self.render_mode = render_mode
        self._last_arm: int | None = None
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(len(ARMS))
        # State 0 is the decision; the episode then ends (state 0 again, as in FrozenLake's absorbing states).
        self.P: dict[int, dict[int, list[Outcome]]] = {
            0: {arm: [(p, 0, r, True) for p, r in ARMS[name]] for arm, name in enumerate(self.arm_names)}
        }
        self._done = True

    def tabular(self) -> TabularMDP:
        """The bandit as a one-step :class:`~ordergrad_rl.envs.tabular.TabularMDP`."""
        return TabularMDP.from_outcomes(self.P, 0, horizon=1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._done = False
        self._last_arm = None
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an arm in {{0, 1, 2}}, got {action!r}")
        if self._done:
            raise RuntimeError("step() called on a finished episode: reset the env first")
        outcomes = self.P[0][int(action)]
        cumulative = np.cumsum([p for p, *_ in outcomes])
        pick = min(int(np.searchsorted(cumulative, self.np_random.random(), side="right")), len(outcomes) - 1)
        self._done = True
        self._last_arm = int(action)
        info = {"arm": self.arm_names[int(action)]}
        return np.zeros(1, dtype=np.float32), float(outcomes[pick][2]), True, False, info

    def render(self) -> np.ndarray | None:
        """``"rgb_array"``: one square per arm, the arm just pulled highlighted."""
        if self.render_mode != "rgb_array":
            return None
        return arms_frame(len(ARMS), self._last_arm)
