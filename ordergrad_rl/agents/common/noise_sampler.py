"""CeSoR's cross-entropy sampler for an env that exposes its noise (:mod:`ordergrad_rl.envs.noise`).

A rare costly event (a guard who charges on 5% of crossings) reaches a batch of 128 episodes only now and then, so
the tail's gradient swings between the rollouts that drew it and those that did not. The sampler (Greenberg et al.,
2022, "Efficient Risk-Averse Reinforcement Learning", the cross-entropy module of CeSoR) draws the env's events with
probabilities ``q`` of its own, fitted by the cross-entropy method to the return's lower tail, and every episode
carries its likelihood ratio to the env's own distribution ``p``. The ranked objective is then estimated on the
weighted batch (:func:`~ordergrad_rl.core.weighted.weighted_lstat_advantage`).

* Each counted episode draws with ``p`` (a share :data:`NOMINAL_SHARE` of them) or with ``q``. Its weight is the
  deterministic-mixture ratio ``rho = P / (nu P + (1 - nu) Q)`` (Owen and Zhou, 2000), with ``P`` and ``Q`` the
  episode's likelihoods under ``p`` and ``q``: unbiased for any split, and at most ``1 / nu`` however far ``q`` moves.
* After each rollout, the cross-entropy step: the tail is the episodes below the weighted ``level``-quantile of the
  returns (the objective's level, or the wider one a level schedule has in force; at it, if none is below);
  ``q_name`` moves a share :data:`SMOOTHING` towards the tail's weighted event rate ``sum rho events / sum rho
  draws`` (the maximum-likelihood fit of the Bernoulli to the tail), and stays where it is when the tail drew no such
  event. ``q`` never falls below the env's own ``p``: an
  event the tail does not need is sampled as the env draws it (a fit to a tail of tied returns above every event
  would otherwise drive ``q`` to 0, and the event would never be seen again), and it stays at or below
  :data:`PROB_CAP`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ordergrad_rl.envs.noise import check_nominal_noise_probs

#: Share of each rollout's episodes drawn from the env's own distribution; it bounds every weight by 1 / 0.2 = 5.
NOMINAL_SHARE = 0.2
#: Share of the way ``q`` moves to the cross-entropy fit per rollout (the usual 0.5-0.9 of CE smoothing, low end:
#: a rollout's tail holds only a handful of draws).
SMOOTHING = 0.5
#: ``q`` stays at or below this (or the env's own ``p``, if higher): past one half, the episodes without the event
#: would become the rare ones that the comparison lacks.
PROB_CAP = 0.5


def sampled_events(nominal: Mapping[str, float]) -> dict[str, float]:
    """The events of ``nominal`` (an env's checked ``noise_probs``) a sampler samples: those with a probability
    strictly inside ``(0, 1)``."""
    return {name: p for name, p in nominal.items() if 0.0 < p < 1.0}


class NoiseSampler:
    """The sampling probabilities of an env's Bernoulli events and the likelihood ratios of the episodes drawn.

    :param nominal: ``{name: p}`` the env's own probabilities (events with ``p`` of 0 or 1 are left alone).
    :param level: the lower-tail share the cross-entropy step fits ``q`` to, in ``(0, 1]``.
    :param seed: seed of the draw of each episode's distribution.
    :raises ValueError: a ``level`` outside ``(0, 1]``, a ``nominal`` that is not ``{name: probability in [0, 1]}``
        (:func:`~ordergrad_rl.envs.noise.check_nominal_noise_probs`), or an env with no event to sample.
    """

    def __init__(self, nominal: Mapping[str, float], level: float, seed: int | None = None) -> None:
        if not 0.0 < level <= 1.0:
            raise ValueError(f"the noise sampler's level must be in (0, 1], got {level!r}")
        checked = check_nominal_noise_probs(nominal)
        self.nominal = sampled_events(checked)
        if not self.nominal:
            raise ValueError(f"the env's noise events {dict(nominal)} have no probability strictly inside (0, 1)")
        self.names = tuple(sorted(self.nominal))
        self.events = frozenset(checked)  # every event of the env, those it leaves alone included
        self.level = float(level)
        self.probs = dict(self.nominal)
        self.rng = np.random.default_rng(seed)

    def episode_probs(self) -> dict[str, float] | None:
        """A new episode's probabilities: ``None`` (the env's own) for a share :data:`NOMINAL_SHARE`, else ``q``."""
        return None if self.rng.random() < NOMINAL_SHARE else dict(self.probs)

    def _log_likelihood(self, probs: Mapping[str, float], counts: np.ndarray) -> np.ndarray:
        """``[N]`` log-likelihood of the episodes' ``counts`` (``[N, n_names, 2]`` draws and events) under ``probs``."""
        p = np.array([probs[name] for name in self.names])
        draws, events = counts[..., 0], counts[..., 1]
        return events @ np.log(p) + (draws - events) @ np.log1p(-p)

    def weights(self, counts: np.ndarray) -> np.ndarray:
        """``[N]`` likelihood ratios ``rho = P / (nu P + (1 - nu) Q)`` of episodes drawn under the current ``q``.

        :param counts: ``[N, n_names, 2]`` each episode's draws and events of every event (in :attr:`names` order).
        """
        log_ratio = self._log_likelihood(self.probs, counts) - self._log_likelihood(self.nominal, counts)  # log Q/P
        return 1.0 / (NOMINAL_SHARE + (1.0 - NOMINAL_SHARE) * np.exp(np.minimum(log_ratio, 700.0)))

    def update(self, returns: np.ndarray, weights: np.ndarray, counts: np.ndarray, level: float | None = None) -> None:
        """The cross-entropy step of ``q`` on one rollout (module docstring).

        :param returns: ``[N]`` episode returns.
        :param weights: ``[N]`` their likelihood ratios (:meth:`weights`, before this update).
        :param counts: ``[N, n_names, 2]`` draws and events.
        :param level: the lower-tail share to fit this step, in ``[self.level, 1]`` (the level a soft risk schedule
            has in force); ``None``: the sampler's own ``level``.
        """
        level = self.level if level is None else level
        if not self.level <= level <= 1.0:
            raise ValueError(f"the fitted level must be in [{self.level}, 1], got {level!r}")
        order = np.argsort(returns, kind="stable")
        cumulative = np.cumsum(weights[order]) / weights.sum()
        var = returns[order][min(int(np.searchsorted(cumulative, level - 1e-12)), returns.size - 1)]
        # Strictly below the value at risk where possible: a tie at it (time-outs, the safe action's return) holds
        # episodes the events did not bring there, and would dilute the fit towards the env's own p.
        tail = returns < var
        if not tail.any():
            tail = returns <= var
        draws = weights[tail] @ counts[tail, :, 0]
        events = weights[tail] @ counts[tail, :, 1]
        for i, name in enumerate(self.names):
            if draws[i] > 0:
                fit = events[i] / draws[i]
                moved = (1.0 - SMOOTHING) * self.probs[name] + SMOOTHING * fit
                nominal = self.nominal[name]
                self.probs[name] = float(np.clip(moved, nominal, max(nominal, PROB_CAP)))
