"""Batched NumPy simulator of the paper's high-yield tail-risk portfolio problem.

This module holds the *only* copy of the SyntheticTailRisk dynamics. The Gymnasium env, the
Gymnasium vector env (:mod:`ordergrad_rl.envs.tailrisk_gym`) and the Stable-Baselines3 ``VecEnv``
(:mod:`ordergrad_rl.envs.sb3_vec_env`) are thin faces over :class:`TailRiskSimulator`.

Everything random about an episode is drawn at reset (the whole tensor of asset returns) and the
trailing moments observed at every decision date are precomputed with cumulative sums, so a step
is a few vector operations over the batch. Only the random draws at reset loop over the envs, because
every env owns its own generator (env ``i`` of a batch seeded ``s`` replays a single env seeded
``s + i``, the convention of Gymnasium's ``SyncVectorEnv`` and SB3's ``DummyVecEnv``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.utils.seeding import np_random

from ordergrad_rl.common.arguments import check_float, check_int
from ordergrad_rl.envs.native_vector import reseed

#: Column order of the action logits, of the applied weights and of ``info["weights"]``.
ASSET_NAMES: tuple[str, ...] = ("high_yield_tailrisk", "defensive_hedge", "balanced", "cash")
#: Names of the 14 observation features, in order.
OBSERVATION_NAMES: tuple[str, ...] = (
    "mean_high_yield_tailrisk",
    "mean_defensive_hedge",
    "mean_balanced",
    "vol_high_yield_tailrisk",
    "vol_defensive_hedge",
    "vol_balanced",
    "prev_weight_high_yield_tailrisk",
    "prev_weight_defensive_hedge",
    "prev_weight_balanced",
    "prev_weight_cash",
    "last_return",
    "ema_return",
    "drawdown",
    "time",
)
#: Number of uniforms drawn per episode: disaster coin, event day, J, H, B (in this order).
_N_UNIFORMS = 5
#: Normals drawn per day: the common factor, then one idiosyncratic shock per risky asset.
_N_NORMALS = 4


def default_event_window(lookback: int, traded_days: int) -> tuple[int, int]:
    """Eligible disaster days (inclusive, indices into the whole simulated tensor).

    ``first = max(lookback, T // 5)`` and ``last = max(T - 3, first)`` with ``T = lookback +
    traded_days``. It reproduces both windows stated in the paper: days 20-97 of the 100-day
    training tensor and days 36-177 of the 180-day deployment tensor. ``last = T - 3`` keeps both
    aftershock days inside the tensor.
    """
    total = lookback + traded_days
    first = max(lookback, total // 5)
    return first, max(total - 3, first)


def cash_capped_weights(logits: np.ndarray, cash_cap: float) -> np.ndarray:
    """Map logits to long-only weights with the paper's cash cap.

    ``w_cash = cash_cap * softmax(z)_cash`` and the risky weights share ``1 - w_cash`` in proportion
    to their softmax weights. Equal logits give 0.325/0.325/0.325/0.025 for ``cash_cap = 0.1``.

    :param logits: shape ``[..., 4]`` (risky assets, then cash).
    :param cash_cap: upper bound of the cash weight, in [0, 1].
    :return: weights of shape ``[..., 4]``, nonnegative, summing to 1.
    """
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w = np.empty_like(e)
    w[..., 3] = cash_cap * e[..., 3] / e.sum(axis=-1)
    w[..., :3] = e[..., :3] * ((1.0 - w[..., 3]) / e[..., :3].sum(axis=-1))[..., None]
    return w


def as_logits(action: Any, shape: tuple[int, ...], bound: float) -> np.ndarray:
    """Validate an action of logits and clip it to ``[-bound, bound]`` (as SB3 clips to the Box).

    :raises ValueError: on a wrong shape, a non-numeric or complex value, NaN or inf.
    """
    if np.iscomplexobj(action):  # float64 conversion would drop the imaginary part with only a warning
        raise ValueError(f"action must be real logits of shape {shape}, got complex values {action!r}")
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"action must be numeric logits of shape {shape}, got {action!r}") from err
    if a.shape != shape:
        raise ValueError(f"action must have shape {shape} (portfolio logits), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"action contains NaN or inf: {a}")
    return np.clip(a, -bound, bound)


class TailRiskSimulator:
    """``num_envs`` independent SyntheticTailRisk episodes stepped together.

    Days are indexed over the whole simulated tensor ``0 .. T-1`` with ``T = lookback +
    traded_days``; days ``0 .. lookback-1`` only fill the first observation window. Decision ``j``
    (0-based) is taken after day ``lookback - 1 + j * rebalance_every`` has been observed and its
    weights earn the returns of the next ``rebalance_every`` days. Envs may be at different decisions
    (partial resets); a step advances every stepped env by one decision.

    The market parameters are class attributes (the paper's values) so that a subclass can change
    them; the episode-shape parameters are constructor arguments, see
    :class:`ordergrad_rl.envs.tailrisk_gym.SyntheticTailRiskEnv` for their meaning.

    :param num_envs: batch size ``B``.
    :param p: probability that an episode contains the disaster.
    :param traded_days: traded days per episode (a multiple of ``rebalance_every``).
    :param rebalance_every: traded days per decision ``R``.
    :param cost: proportional transaction cost ``lambda``.
    :param cash_cap: maximum cash weight.
    :param lookback: days of the trailing-moment window (and of the initial lookback period).
    :param event_window: inclusive ``(first, last)`` eligible disaster days; ``None`` for
        :func:`default_event_window`.
    :param ema_rate: per-day rate ``a`` of the EMA of the portfolio return,
        ``ema <- (1 - a) * ema + a * r``.
    """

    asset_names = ASSET_NAMES
    #: Component names of the vector ``info`` entries (read by the evaluation logs: ``weight_cash``, not ``weights_3``).
    info_names: dict[str, tuple[str, ...]] = {"weights": tuple(f"weight_{name}" for name in ASSET_NAMES)}
    #: Annualized drift, volatility and factor loading of the risky assets.
    drift = np.array([0.70, 0.030, 0.095])
    volatility = np.array([0.11, 0.065, 0.075])
    factor_loading = np.array([0.80, -0.10, 0.25])
    #: Daily standard deviation of the common factor ``f_t``.
    factor_std = 0.004
    trading_days_per_year = 252
    #: Uniform ranges of the disaster jumps J (tail asset loses), H (hedge gains), B (balanced loses).
    jump_ranges = np.array([[0.50, 0.70], [0.12, 0.26], [0.015, 0.050]])
    #: Aftershock fractions ``c_l`` of J on the two days after the event.
    aftershock_fractions = (0.28, 0.14)
    #: Signed aftershock move per unit of ``c_l * J`` for (tail, hedge, balanced).
    aftershock_profile = np.array([-1.0, 0.30, -0.07])
    #: Every simple return is clipped to this interval.
    return_clip = (-0.82, 0.35)
    #: Scale of the last and EMA portfolio returns in the observation.
    return_obs_scale = 25.0
    #: Logits are clipped to ``[-logit_bound, logit_bound]`` (the action Box).
    logit_bound = 10.0

    def __init__(
        self,
        num_envs: int,
        *,
        p: float = 0.10,
        traded_days: int = 80,
        rebalance_every: int = 5,
        cost: float = 0.001,
        cash_cap: float = 0.10,
        lookback: int = 20,
        event_window: tuple[int, int] | None = None,
        ema_rate: float = 0.1,
    ) -> None:
        self.num_envs = check_int("num_envs", num_envs, 1)
        self.p = check_float("p", p, 0.0, 1.0)
        self.traded_days = check_int("traded_days", traded_days, 1)
        self.rebalance_every = check_int("rebalance_every", rebalance_every, 1)
        if self.traded_days % self.rebalance_every:
            raise ValueError(f"traded_days ({traded_days}) must be a multiple of rebalance_every ({rebalance_every})")
        # Wealth stays positive iff the worst daily portfolio return, clip_low - 2 * cost, exceeds -1.
        # Rounded: in floats the bound is 0.09000000000000002, and cost=0.09 passed a strict check of it.
        self.cost = check_float("cost", cost, 0.0, round((1.0 + self.return_clip[0]) / 2, 12), open_high=True)
        self.cash_cap = check_float("cash_cap", cash_cap, 0.0, 1.0)
        self.lookback = check_int("lookback", lookback, 2)
        self.ema_rate = check_float("ema_rate", ema_rate, 0.0, 1.0)
        self.num_days = self.lookback + self.traded_days
        self.num_decisions = self.traded_days // self.rebalance_every
        if event_window is None:
            event_window = default_event_window(self.lookback, self.traded_days)
        if not isinstance(event_window, (tuple, list, np.ndarray)) or len(event_window) != 2:
            raise ValueError(f"event_window must be a pair (first, last), got {event_window!r}")
        first, last = (check_int("event_window day", day, 0) for day in event_window)
        if not self.lookback <= first <= last < self.num_days:
            raise ValueError(
                f"event_window must satisfy lookback ({self.lookback}) <= first <= last < "
                f"{self.num_days} (the tensor length), got {tuple(event_window)}"
            )
        self.event_window = (first, last)

        B, T, R, L = self.num_envs, self.num_days, self.rebalance_every, self.lookback
        self._daily_drift = self.drift / self.trading_days_per_year
        self._factor_scale = self.factor_loading * self.factor_std
        self._idio_scale = self.volatility / np.sqrt(self.trading_days_per_year)
        # The policy starts from the equal-logit allocation, so a zero-initialized policy pays no
        # cost on its first decision.
        self.initial_weights = cash_capped_weights(np.zeros(4), self.cash_cap)
        # EMA over one block: ema' = decay**R * ema + sum_j ema_rate * decay**(R-1-j) * r_j.
        decay = 1.0 - self.ema_rate
        self._ema_block_decay = decay**R
        self._ema_block_weights = self.ema_rate * decay ** np.arange(R - 1, -1, -1)
        # Trailing window of decision j covers days [j*R, j*R + L); index into zero-prefixed cumsums.
        self._window_start = R * np.arange(self.num_decisions + 1)
        self._window_end = self._window_start + L

        self.rngs: list[np.random.Generator] = [np_random(None)[0] for _ in range(B)]
        self._uniforms = np.zeros((B, _N_UNIFORMS))
        self._normals = np.zeros((B, T, _N_NORMALS))
        # The episode tensor is the only array of asset returns; no attribute may hold a view of it
        # (copy.deepcopy and pickle turn a view into an independent array, so a clone would keep
        # stepping the episode the view saw when it was copied).
        self._returns = np.zeros((B, T, 3))
        self._moments = np.zeros((B, self.num_decisions + 1, 6))
        self._event_day = np.full(B, -1, dtype=np.int64)
        self._jumps = np.zeros((B, 3))
        self._rows = np.arange(B)
        # Per-env episode state; envs start "finished" until their first reset.
        self._decision = np.full(B, self.num_decisions, dtype=np.int64)
        self._prev_weights = np.tile(self.initial_weights, (B, 1))
        self._log_wealth = np.zeros(B)
        self._log_peak = np.zeros(B)
        self._max_drawdown = np.zeros(B)
        self._last_return = np.zeros(B)
        self._ema_return = np.zeros(B)
        self._obs = np.zeros((B, len(OBSERVATION_NAMES)), dtype=np.float32)

    # ------------------------------------------------------------------ public read-only state
    @property
    def asset_returns(self) -> np.ndarray:
        """Simple daily returns of the risky assets of the current episodes, ``[B, T, 3]`` (copy)."""
        return self._returns.copy()

    @property
    def event_day(self) -> np.ndarray:
        """Disaster day of each current episode (tensor index), -1 if it has none; ``[B]``."""
        return self._event_day.copy()

    @property
    def jump_sizes(self) -> np.ndarray:
        """Drawn (J, H, B) of each episode, ``[B, 3]``; applied only where ``event_day >= 0``."""
        return self._jumps.copy()

    @property
    def decision_index(self) -> np.ndarray:
        """Decisions already taken in each current episode, ``[B]``."""
        return self._decision.copy()

    @property
    def wealth(self) -> np.ndarray:
        """Current wealth ``W`` of each episode (``W_0 = 1``), ``[B]``."""
        return np.exp(self._log_wealth)

    # ------------------------------------------------------------------ reset
    def seed(self, seed: int | Sequence[int | None] | None, env_ids: np.ndarray | None = None) -> None:
        """Re-seed the generators of ``env_ids`` (all envs by default).

        :param seed: ``None`` keeps the generators; an int gives env ``i`` the seed ``seed + i``; a
            sequence of length ``B`` gives env ``i`` the seed ``seed[i]`` (``None`` entries keep it).
        :param env_ids: integer indices of the envs to re-seed (default: all); the others keep their generators
            (``i`` in ``seed + i`` and ``seed[i]`` still counts over all ``B`` envs).
        """
        reseed(self.rngs, seed, self._rows if env_ids is None else env_ids)

    def reset(self, seed: int | Sequence[int | None] | None = None, env_ids: np.ndarray | None = None) -> np.ndarray:
        """Start new episodes in ``env_ids`` (all envs by default).

        Each reset env draws, from its own generator and in this order, 5 uniforms (disaster coin,
        event day, J, H, B) and a ``[T, 4]`` block of standard normals (factor, then the three
        idiosyncratic shocks). The draws do not depend on ``p``: with a fixed seed the disaster
        happens at every ``p`` above the episode's coin, with the same day and jumps.

        :param seed: see :meth:`seed`.
        :param env_ids: integer indices of the envs to reset.
        :return: observations of all envs, ``[B, 14]`` float32 (a new array).
        """
        self.seed(seed, env_ids)
        sel: slice | np.ndarray = slice(None) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        for i in self._rows[sel]:
            rng = self.rngs[i]
            rng.random(out=self._uniforms[i])
            rng.standard_normal(out=self._normals[i])
        returns, event_day, jumps = self._simulate_returns(self._normals[sel], self._uniforms[sel])
        self._returns[sel] = returns
        self._event_day[sel] = event_day
        self._jumps[sel] = jumps
        self._moments[sel] = self._trailing_moments(returns)

        self._decision[sel] = 0
        self._prev_weights[sel] = self.initial_weights
        for state in (self._log_wealth, self._log_peak, self._max_drawdown, self._last_return):
            state[sel] = 0.0
        self._ema_return[sel] = 0.0
        obs = self._obs.copy()
        obs[sel] = self._observe(sel, self._prev_weights[sel], np.zeros_like(self._log_wealth[sel]))
        self._obs = obs
        return obs.copy()

    def _simulate_returns(self, normals: np.ndarray, uniforms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Returns tensor ``[n, T, 3]``, event day ``[n]`` (-1: none) and jumps ``[n, 3]``."""
        returns = self._daily_drift + normals[..., :1] * self._factor_scale + normals[..., 1:] * self._idio_scale
        first, last = self.event_window
        day = first + np.floor(uniforms[:, 1] * (last - first + 1)).astype(np.int64)
        np.minimum(day, last, out=day)  # guards u * n rounding up to n
        low, high = self.jump_ranges[:, 0], self.jump_ranges[:, 1]
        jumps = low + (high - low) * uniforms[:, 2:]
        hit = np.flatnonzero(uniforms[:, 0] < self.p)
        returns[hit, day[hit]] += jumps[hit] * np.array([-1.0, 1.0, -1.0])
        for offset, fraction in enumerate(self.aftershock_fractions, start=1):
            # Aftershocks only land inside the tensor (always true for the default window).
            inside = hit[day[hit] + offset < self.num_days]
            shock = fraction * jumps[inside, :1] * self.aftershock_profile
            returns[inside, day[inside] + offset] += shock
        np.clip(returns, *self.return_clip, out=returns)
        event_day = np.full(len(uniforms), -1, dtype=np.int64)
        event_day[hit] = day[hit]
        return returns, event_day, jumps

    def _trailing_moments(self, returns: np.ndarray) -> np.ndarray:
        """Annualized trailing mean and volatility at every decision date, ``[n, decisions+1, 6]``.

        Window ``lookback`` days ending at the last observed day; volatility with ``ddof=1``.
        """
        n, T, _ = returns.shape
        L = self.lookback
        sums = np.zeros((2, n, T + 1, 3))
        np.cumsum(returns, axis=1, out=sums[0, :, 1:])
        np.cumsum(returns * returns, axis=1, out=sums[1, :, 1:])
        window = sums[:, :, self._window_end] - sums[:, :, self._window_start]
        mean = window[0] / L
        var = np.maximum(window[1] - L * mean * mean, 0.0) / (L - 1)
        year = self.trading_days_per_year
        return np.concatenate([mean * year, np.sqrt(var * year)], axis=-1)

    def _observe(self, sel: slice | np.ndarray, weights: np.ndarray, drawdown: np.ndarray) -> np.ndarray:
        """Observation rows of ``sel`` from the (already advanced) episode state, ``[n, 14]``."""
        decision = self._decision[sel]
        obs = np.empty((len(decision), len(OBSERVATION_NAMES)), dtype=np.float32)
        obs[:, :6] = self._moments[self._rows[sel], decision]
        obs[:, 6:10] = weights
        obs[:, 10] = self.return_obs_scale * self._last_return[sel]
        obs[:, 11] = self.return_obs_scale * self._ema_return[sel]
        obs[:, 12] = drawdown
        obs[:, 13] = decision / self.num_decisions
        return obs

    # ------------------------------------------------------------------ step
    def step(
        self, logits: Any, env_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Take one rebalancing decision in ``env_ids`` (all envs by default).

        :param logits: ``[B, 4]`` portfolio logits (rows outside ``env_ids`` are ignored);
            clipped to ``[-10, 10]``.
        :param env_ids: integer indices of the envs to step; none of them may be finished.
        :return: ``obs [B, 14]`` float32, ``reward [B]`` (log growth of the block), ``done [B]``,
            and ``info`` arrays: ``weights [B, 4]``, ``wealth [B]``, ``drawdown [B]``,
            ``max_drawdown [B]``, ``disaster [B]`` (bool), ``daily_returns [B, R]``. Rows of envs
            that were not stepped are zero (and their ``obs`` unchanged).
        :raises ValueError: on a bad action (see :func:`as_logits`).
        :raises RuntimeError: if a stepped env has finished its episode and was not reset.
        """
        logits = as_logits(logits, (self.num_envs, 4), self.logit_bound)
        sel: slice | np.ndarray = slice(None) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        decision = self._decision[sel]
        if np.any(decision >= self.num_decisions):
            raise RuntimeError("step() called on a finished episode: reset the env first")
        weights = cash_capped_weights(logits[sel], self.cash_cap)

        # [B, decisions, R, 3] view of the traded days (one block per decision), taken afresh here.
        blocks = self._returns[:, self.lookback :].reshape(self.num_envs, self.num_decisions, self.rebalance_every, 3)
        block = blocks[self._rows[sel], decision]  # [n, R, 3]
        # Cash earns zero; elementwise products keep results identical for any batch size.
        daily = block[..., 0] * weights[:, :1] + block[..., 1] * weights[:, 1:2] + block[..., 2] * weights[:, 2:3]
        daily[:, 0] -= self.cost * np.abs(weights - self._prev_weights[sel]).sum(axis=1)
        growth = np.cumsum(np.log1p(daily), axis=1)
        reward = growth[:, -1]
        log_path = growth + self._log_wealth[sel, None]
        log_peak = np.maximum(np.maximum.accumulate(log_path, axis=1), self._log_peak[sel, None])
        drawdown_path = np.expm1(log_path - log_peak)
        log_wealth = self._log_wealth[sel] + reward  # the same additions as summing the rewards

        self._log_wealth[sel] = log_wealth
        self._log_peak[sel] = log_peak[:, -1]
        self._max_drawdown[sel] = max_drawdown = np.minimum(self._max_drawdown[sel], drawdown_path.min(axis=1))
        self._last_return[sel] = daily[:, -1]
        ema_input = (daily * self._ema_block_weights).sum(axis=1)
        self._ema_return[sel] = self._ema_block_decay * self._ema_return[sel] + ema_input
        self._prev_weights[sel] = weights
        self._decision[sel] = decision = decision + 1
        last_day = self.lookback - 1 + decision * self.rebalance_every
        event_day = self._event_day[sel]

        obs = self._obs.copy()
        obs[sel] = self._observe(sel, weights, drawdown_path[:, -1])
        self._obs = obs
        info = {
            "weights": weights,
            "wealth": np.exp(log_wealth),
            "drawdown": drawdown_path[:, -1],
            "max_drawdown": max_drawdown,
            "disaster": (event_day >= 0) & (event_day <= last_day),
            "daily_returns": daily,
        }
        done = decision == self.num_decisions
        if env_ids is not None:
            reward, done, info = self._scatter(sel, reward, done, info)
        return obs.copy(), reward, done, info

    def _scatter(
        self, sel: slice | np.ndarray, reward: np.ndarray, done: np.ndarray, info: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Expand per-stepped-env results to full ``[B, ...]`` arrays, zeros elsewhere."""

        def full(values: np.ndarray) -> np.ndarray:
            out = np.zeros((self.num_envs, *values.shape[1:]), dtype=values.dtype)
            out[sel] = values
            return out

        return full(reward), full(done), {key: full(value) for key, value in info.items()}
