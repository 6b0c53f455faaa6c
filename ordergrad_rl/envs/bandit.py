"""RiskyBandit: a one-step, three-armed bandit whose best arm depends on the objective."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.envs.rendering import arms_frame, check_render_mode

#: Each arm is a Gaussian mixture: rows of (probability, mean, std) of its components.
ARMS: dict[str, tuple[tuple[float, float, float], ...]] = {
    "safe": ((1.0, 1.0, 0.1),),
    "risky": ((0.9, 2.0, 0.1), (0.1, -5.0, 0.1)),
    "lottery": ((0.05, 20.0, 0.1), (0.95, 0.0, 0.1)),
}


def sample_rewards(arm: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` rewards of ``arm``: ``size`` uniforms pick the components, then ``size`` normals.

    :return: shape ``[size]``.
    """
    probs, means, stds = (np.array(column) for column in zip(*ARMS[RiskyBanditEnv.arm_names[arm]], strict=True))
    component = np.minimum(np.searchsorted(np.cumsum(probs), rng.random(size), side="right"), len(probs) - 1)
    return means[component] + stds[component] * rng.standard_normal(size)


class RiskyBanditEnv(gym.Env[np.ndarray, np.integer]):
    """Three arms with the same flavour of reward but different tails.

    ## Description

    A diagnostic for risk-sensitive objectives: the mean, the lower tail and the best-of-K each
    prefer a different arm. Exact statistics of each arm's reward (CVaR_0.1 = mean of the worst
    10%, computed in closed form for the Gaussian mixture; E[max of 8] by quadrature):

    | Action | Arm     | Reward                                  | Mean  | CVaR_0.1 | E[max of 8] |
    |--------|---------|-----------------------------------------|-------|----------|-------------|
    | 0      | safe    | N(1, 0.1^2)                             | 1.000 | 0.825    | 1.142       |
    | 1      | risky   | 2 w.p. 0.9, -5 w.p. 0.1, + N(0, 0.1^2)  | 1.300 | -5.000   | 2.136       |
    | 2      | lottery | 20 w.p. 0.05, else 0, + N(0, 0.1^2)     | 1.000 | -0.173   | 6.829       |

    So ``mean`` prefers the risky arm, ``cvar0.1`` the safe arm and ``max@8`` the lottery.

    ## Action Space

    ``Discrete(3)``: the arm. Anything outside the space raises ``ValueError``.

    ## Observation Space

    ``Box(0, 1, (1,), float32)``, always ``[0.0]`` (there is nothing to observe).

    ## Rewards

    One draw from the chosen arm's distribution (table above).

    ## Starting State

    The constant observation.

    ## Episode End

    Every episode terminates after its single step.

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl

    env = gym.make("RiskyBandit-v0")
    ```

    ``render_mode``: ``None`` or ``"rgb_array"`` (the three arms, the one just pulled highlighted). Each step
    draws a uniform (the mixture component) then a standard normal.

    ## Version History

    * v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 4}
    arm_names: tuple[str, ...] = tuple(ARMS)

    def __init__(self, render_mode: str | None = None) -> None:
        check_render_mode(render_mode, self.metadata)
        self.render_mode = render_mode
        self._last_arm: int | None = None
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(len(ARMS))
        self._done = True

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
        reward = sample_rewards(int(action), 1, self.np_random)[0]
        self._done = True
        self._last_arm = int(action)
        return np.zeros(1, dtype=np.float32), float(reward), True, False, {"arm": self.arm_names[int(action)]}

    def render(self) -> np.ndarray | None:
        """``"rgb_array"``: one column per arm (safe, risky, lottery); the arm just pulled is highlighted."""
        if self.render_mode != "rgb_array":
            return None
        return arms_frame(len(ARMS), self._last_arm)
