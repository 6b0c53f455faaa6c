"""Gymnasium faces of the tail-risk simulator: a ``gym.Env`` and a native ``VectorEnv``.

Both delegate every bit of dynamics to :class:`~ordergrad_rl.envs.tailrisk.TailRiskSimulator`.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from ordergrad_rl.envs.native_vector import BatchStep, NativeVectorEnv
from ordergrad_rl.envs.rendering import check_render_mode
from ordergrad_rl.envs.tailrisk import TailRiskSimulator, as_logits


def tailrisk_spaces(simulator: TailRiskSimulator) -> tuple[spaces.Box, spaces.Box]:
    """Single-env ``(observation_space, action_space)`` of a simulator.

    The observation bounds are the exact ranges of the features given the return clip and the
    cost (a daily portfolio return lies in ``[clip_low - 2 * cost, clip_high]``).
    """
    low, high = simulator.return_clip
    year = simulator.trading_days_per_year
    scale = simulator.return_obs_scale
    ret_low, ret_high = scale * (low - 2.0 * simulator.cost), scale * high
    obs_low = np.array([year * low] * 3 + [0.0] * 3 + [0.0] * 4 + [ret_low, ret_low, -1.0, 0.0])
    obs_high = np.array(
        [year * high] * 3 + [np.sqrt(year) * (high - low)] * 3 + [1.0] * 4 + [ret_high, ret_high, 0.0, 1.0]
    )
    bound = simulator.logit_bound
    return (
        spaces.Box(obs_low.astype(np.float32), obs_high.astype(np.float32), dtype=np.float32),
        spaces.Box(-bound, bound, shape=(4,), dtype=np.float32),
    )


class SyntheticTailRiskEnv(gym.Env[np.ndarray, np.ndarray]):
    """The paper's high-yield tail-risk portfolio problem (appendix "Illustrative Experiment on
    Portfolio Management using CVaR").

    ## Description

    A long-only, fully invested portfolio over three risky assets and cash, rebalanced every
    ``rebalance_every`` traded days. Daily simple returns of the risky assets
    (``high_yield_tailrisk``, ``defensive_hedge``, ``balanced``) follow a one-factor model

        r_{t,a} = mu_a / 252 + b_a f_t + sigma_a / sqrt(252) eps_{t,a},
        f_t ~ N(0, 0.004^2),  eps_{t,a} ~ N(0, 1),

    with mu = (0.70, 0.030, 0.095), sigma = (0.11, 0.065, 0.075), b = (0.80, -0.10, 0.25). Cash
    returns 0. With probability ``p`` per episode an unobserved disaster hits on a day drawn
    uniformly from ``event_window``: the high-yield asset loses J ~ U(0.50, 0.70), the hedge gains
    H ~ U(0.12, 0.26) and the balanced asset loses B ~ U(0.015, 0.050). On the two following days
    (aftershocks c = 0.28, 0.14) the high-yield asset loses c J, the hedge gains 0.30 c J and the
    balanced asset loses 0.07 c J. Every simple return is clipped to [-0.82, 0.35].

    The simulated tensor has ``T = lookback + traded_days`` days; the first ``lookback`` days only
    fill the first observation window. With the defaults (``T = 100``) the disaster day is one of
    days 20-97; for ``SyntheticTailRiskDeploy-v0`` (``T = 180``) one of days 36-177, as in the paper.

    ## Action Space

    ``Box(-10, 10, (4,), float32)``: portfolio logits ``z`` for (high_yield_tailrisk,
    defensive_hedge, balanced, cash). Out-of-range logits are clipped to the box (as SB3 does);
    NaN/inf or a wrong shape raises ``ValueError``. Weights: with ``s = softmax(z)``,
    ``w_cash = cash_cap * s_cash`` and ``w_a = (1 - w_cash) s_a / sum_risky s`` for the risky
    assets, so equal logits give 0.325/0.325/0.325/0.025.

    ## Observation Space

    ``Box((14,), float32)`` of causal features at the decision date (the disaster is not observed):

    | Index | Feature                                                               |
    |-------|-----------------------------------------------------------------------|
    | 0-2   | trailing ``lookback``-day mean of each risky asset's daily return x 252 |
    | 3-5   | trailing ``lookback``-day std (ddof=1) of the same x sqrt(252)          |
    | 6-9   | previous weights (the ones applied in the last block)                 |
    | 10    | last daily portfolio return x 25                                      |
    | 11    | EMA of the daily portfolio return x 25 (rate ``ema_rate`` per day)      |
    | 12    | current drawdown ``W / max W - 1`` (<= 0)                             |
    | 13    | normalized time: decisions taken / number of decisions                |

    The window ends at the last observed day (at the first decision it is the lookback period).
    Portfolio returns are net of costs. At reset the previous weights are the equal-logit
    allocation (0.325/0.325/0.325/0.025), so a zero-initialized policy pays no first cost, and the
    last/EMA returns and the drawdown are 0.

    ## Rewards

    Decision ``j`` holds its weights ``w`` for the block's ``rebalance_every`` days; the first day
    pays the cost: ``W_{t+1} = W_t (1 + w^T r_{t+1} - cost * ||w - w_prev||_1)``, later days
    ``W_{t+1} = W_t (1 + w^T r_{t+1})``. The reward is the block's log growth
    ``log(W_end / W_start)``, so the undiscounted return of an episode is exactly ``log W_T``
    (``W_0 = 1``), the paper's episode score.

    ## Starting State

    ``W_0 = 1``, the whole episode (returns, disaster) is drawn at reset from the env's generator.

    ## Episode End

    The episode terminates (``terminated=True``) after ``traded_days / rebalance_every``
    decisions (16 for ``SyntheticTailRisk-v0``, 32 for ``SyntheticTailRiskDeploy-v0``). The
    horizon is part of the task (normalized time is observed), so it is never a truncation.

    ## Information

    ``step`` returns ``weights`` (applied, shape (4,)), ``wealth``, ``drawdown`` (current),
    ``max_drawdown`` (daily, so far, <= 0), ``disaster`` (whether this episode's disaster has
    happened yet) and ``daily_returns`` (net daily portfolio returns of the block, shape
    (rebalance_every,)). ``reset`` returns an empty info.

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl  # registers the envs

    env = gym.make("SyntheticTailRisk-v0")          # p=0.10, 80 traded days
    env = gym.make("SyntheticTailRiskDeploy-v0")    # p=0.35, 160 traded days
    env = gym.make("SyntheticTailRisk-v0", p=0.5)   # stress grid
    envs = gym.make_vec("SyntheticTailRisk-v0", num_envs=256)  # native batch
    ```

    ``render_mode`` may only be ``None`` (the env does not render; any other mode raises ``ValueError`` naming it).
    The other keyword arguments are forwarded to :class:`~ordergrad_rl.envs.tailrisk.TailRiskSimulator`:

    * ``p=0.10``: disaster probability per episode, in [0, 1].
    * ``traded_days=80``: traded days per episode, a multiple of ``rebalance_every``.
    * ``rebalance_every=5``: traded days per decision.
    * ``cost=0.001``: proportional transaction cost lambda, in [0, 0.09).
    * ``cash_cap=0.10``: maximum cash weight, in [0, 1].
    * ``lookback=20``: length of the initial lookback period and of the trailing window.
    * ``event_window=None``: inclusive ``(first, last)`` eligible disaster days of the tensor;
      ``None`` means ``first = max(lookback, T // 5)``, ``last = max(T - 3, first)``.
    * ``ema_rate=0.1``: per-day rate of the portfolio-return EMA (not specified by the paper).

    ## Seeding

    Each episode consumes, from the env's generator, 5 uniforms (disaster coin ``u < p``, event
    day, J, H, B) then a ``(T, 4)`` array of standard normals (factor, three shocks), whatever
    ``p``: a seeded reset replays the episode exactly, and changing ``p`` under a fixed seed only
    switches disasters on or off. Env ``i`` of ``gym.make_vec(..., num_envs=n)`` reset with seed
    ``s`` replays this env reset with seed ``s + i``, episode after episode.

    ## Version History

    * v0: Initial version, the paper's environment.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, render_mode: str | None = None, **simulator_kwargs: Any) -> None:
        check_render_mode(render_mode, self.metadata)  # the env does not render
        # One source of truth for the arguments and their defaults: TailRiskSimulator.
        self.simulator = TailRiskSimulator(1, **simulator_kwargs)
        self.observation_space, self.action_space = tailrisk_spaces(self.simulator)

    @property
    def info_names(self) -> dict[str, tuple[str, ...]]:
        """Component names of the vector ``info`` entries (``weights``: ``weight_<asset>``)."""
        return self.simulator.info_names

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        # The simulator draws from the env's own generator, so gym's seeding conventions hold.
        self.simulator.rngs[0] = self.np_random
        return self.simulator.reset()[0], {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        logits = as_logits(action, (4,), self.simulator.logit_bound)
        obs, reward, done, info = self.simulator.step(logits[None])
        # Python scalars (not NumPy ones) so that SyncVectorEnv batches them with the right dtype.
        return (
            obs[0],
            float(reward[0]),
            bool(done[0]),
            False,
            {key: value[0] if value.ndim > 1 else value[0].item() for key, value in info.items()},
        )


class SyntheticTailRiskVectorEnv(NativeVectorEnv):
    """``num_envs`` SyntheticTailRisk episodes stepped as one NumPy batch.

    The ``vector_entry_point`` of the SyntheticTailRisk ids: ``gym.make_vec(id, num_envs=n)``
    builds it, and ``gym.make_vec(id, num_envs=n, autoreset_mode="SameStep")`` selects another
    autoreset mode (see :class:`~ordergrad_rl.envs.native_vector.NativeVectorEnv`). The dynamics,
    spaces and info keys are those of :class:`SyntheticTailRiskEnv`, batched: rewards ``[n]``
    float64, observations ``[n, 14]`` float32, info arrays with their Gymnasium ``_key`` masks.
    Env ``i`` reset with seed ``s`` (an int) is seeded ``s + i``; a list of seeds gives one per
    env. Results equal ``SyncVectorEnv`` over single envs, bit for bit.

    Every episode has the same length, so envs reset together stay in lockstep.

    :param num_envs: number of parallel episodes.
    :param autoreset_mode: an ``AutoresetMode`` or its string value.
    :param render_mode: only ``None`` (the batch does not render).
    :param max_episode_steps: only ``None`` (the batch has no ``TimeLimit``).
    :param simulator_kwargs: the arguments of :class:`SyntheticTailRiskEnv`.
    """

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **simulator_kwargs: Any,
    ) -> None:
        self.simulator = TailRiskSimulator(num_envs, **simulator_kwargs)
        self.single_observation_space, self.single_action_space = tailrisk_spaces(self.simulator)
        self._init_vector(self.simulator.num_envs, autoreset_mode, render_mode, max_episode_steps)

    @property
    def env_rngs(self) -> list[np.random.Generator | None]:
        # The simulator's own list (every entry a generator), typed as the base class's: callers assign entries back.
        return cast("list[np.random.Generator | None]", self.simulator.rngs)

    def _reset_envs(
        self, seed: int | list[int | None] | None, env_ids: np.ndarray | None, options: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return self.simulator.reset(seed=seed, env_ids=env_ids), {}

    def _step_envs(self, actions: Any, env_ids: np.ndarray | None) -> BatchStep:
        obs, reward, done, info = self.simulator.step(actions, env_ids=env_ids)
        return obs, reward, done, np.zeros(self.num_envs, dtype=bool), info
