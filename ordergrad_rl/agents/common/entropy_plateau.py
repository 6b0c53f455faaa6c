"""The entropy bonus decayed on plateaus: full while the episode returns improve, decayed while they do not.

A constant entropy bonus keeps a ranked objective's policy from collapsing early (the tail's gradient drives an
unrewarded move's probability to zero), but once the returns stop improving it holds the policy wider than the
objective wants: on Acrobot-v1 the usage line's returns plateau from about 120k steps, and under the constant bonus
its policy's entropy rose again from 0.45 to 0.82 nats while the rollouts' mean return fell from about -90 to -120
(``scripts/trace_policy_entropy.py``). A bonus decayed over training by the clock (SB3's ``LinearSchedule``) fixes
that task and loses those that still improve late (LunarLander-v3) or are not yet solved (every 100k-step cell): the
clock does not know where a run stands. The returns do.

After each rollout :class:`EntropyPlateau` compares the episode returns of the last ``window`` rollouts with those of
the ``window`` rollouts before them by a one-sided Mann-Whitney U test (scipy). Where it does not find the recent ones
higher at ``p_value`` the rollout is a plateau, and the bonus's scale falls by the rollout's env steps over
``decay_share`` of the training budget: the linear decay of ``ent_coef=lambda p: c * p``, run only on plateaus and
``1 / decay_share`` times as fast (a run whose returns never rise loses the bonus after ``decay_share`` of its
budget). At the default ``p_value=0.5`` a rollout is a plateau where the recent returns do not rank above the earlier
ones: on a true plateau about every other rollout, on a rise rarely. The scale never rises again, since a bonus that
came back would widen a policy the returns no longer ask to widen (ReduceLROnPlateau's rule, for the entropy bonus).
A rollout blind to success (every return tied at the bottom, nothing better seen) empties the window: there the
bonus is what explores, and the test starts over once the returns differ.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from ordergrad_rl.common.arguments import check_float, check_int

#: Rollouts on each side of the test: 96 episodes a side at the long-episode defaults' 32 per rollout.
PLATEAU_WINDOW = 3
#: The test's level: a rollout improves where its window's returns are higher than the window's before at this level.
#: 0.5: where the recent returns rank above the earlier ones at all. Measured against 0.1 (with ``decay_share`` 0.5,
#: the same seeds 0-9, worst-20% mean of 100 evaluation returns, greedy / sampled): 0.1 also decayed the bonus on
#: LunarLander-v3's noisy rises at 100k steps (-165.6 / -37.3 against the constant bonus's -127.7 / -28.2, 8 of 10
#: seeds decayed, two from the first 30% of training), 0.5 touched 4 of 10 seeds there, late (-133.7 / -29.4).
#: On Acrobot-v1 at 300k steps 0.1 kept more of the gain: -101.6 / -111.8 against 0.5's -104.9 / -119.2 (the constant
#: bonus -112.7 / -134.7). 0.5 is the default for LunarLander, whose tails 0.1 cost 37.9 / 9.2 at 100k.
PLATEAU_P_VALUE = 0.5
#: The share of the training budget over which the bonus decays to 0 on plateaus: with ``p_value=0.5`` about every
#: other rollout of a true plateau decays it, so a plateau takes the bonus in about a fifth of the budget. 0.1 since
#: 2026-12-06, measured against 0.25 (the default before; ``og-cvar-plateau-fast`` against the usage line, seeds 0-9,
#: paired, greedy / sampled worst-20% mean of 100 evaluation returns): Acrobot-v1 at 300k steps +1.8 / +13.6
#: [4.1, 22.3] (SB3 PPO's level: the quarter left the bonus in force over most of the plateau from 100k), at 100k
#: (seeds 0-19) -0.2 / -9.0 [-18.5, -0.5]; LunarLander-v3 at 100k (seeds 0-19) -7.2 / +5.0, at 300k -15.1 / +12.5;
#: CartPole-v1 at 100k (seeds 0-19) +4.0 / +1.6, at 300k 0.0 / 0.0 (every seed 500 both ways). The rest within the
#: intervals: the 300k gain is taken at a cost to Acrobot's 100k sampled tail, the one 100k cell of three on the
#: quarter's side, so the share is not tied to the budget (docs/benchmarks.md).
PLATEAU_DECAY_SHARE = 0.1


def returns_improving(recent: Sequence[np.ndarray], before: Sequence[np.ndarray], p_value: float) -> bool:
    """Whether the episode returns of the ``recent`` rollouts (each ``[N_i]``) are higher than those of the
    ``before`` ones, by a one-sided Mann-Whitney U test at ``p_value``. Every return tied: not improving (no spread
    to rank, the test's statistic undefined)."""
    from scipy.stats import mannwhitneyu  # here: scipy.stats takes a while to import, and only a run tests

    new, old = np.concatenate(list(recent)), np.concatenate(list(before))
    if np.all(new == new[0]) and np.all(old == new[0]):
        return False
    return bool(mannwhitneyu(new, old, alternative="greater").pvalue < p_value)


class EntropyPlateau:
    """The entropy bonus's scale in ``[0, 1]`` of a run, updated after each rollout (:meth:`update`).

    :param window: rollouts on each side of the test (>= 1).
    :param p_value: the test's level, in ``(0, 1)``.
    :param decay_share: the share of the training budget, in ``(0, 1]``, over which the scale falls from 1 to 0 on
        plateaus.
    :raises ValueError: naming the bad argument.
    """

    def __init__(
        self,
        window: int = PLATEAU_WINDOW,
        p_value: float = PLATEAU_P_VALUE,
        decay_share: float = PLATEAU_DECAY_SHARE,
    ) -> None:
        p_value = check_float("p_value", p_value, 0.0, 1.0, open_high=True)
        decay_share = check_float("decay_share", decay_share, 0.0, 1.0)
        for name, value in (("p_value", p_value), ("decay_share", decay_share)):
            if value == 0.0:  # a test that never finds a rise / a decay with no length
                raise ValueError(f"{name} must be above 0, got {value!r}")
        self.window = check_int("window", window, 1)
        self.p_value = p_value
        self.decay_share = decay_share
        #: The bonus's current scale.
        self.scale = 1.0
        self._returns: list[np.ndarray] = []
        self._steps = 0

    def update(self, returns: np.ndarray, blind: bool, num_timesteps: int, total_timesteps: int) -> float:
        """Take a rollout's ``[N]`` episode returns and return the scale its update's bonus takes.

        :param returns: the rollout's ``[N]`` episode returns.
        :param blind: the rollout is blind to success (every return tied, nothing else seen in training).
        :param num_timesteps: the run's env steps after the rollout (the rollout's own: the change since the last
            call).
        :param total_timesteps: the training budget the decay is a share of.
        """
        steps, self._steps = max(0, num_timesteps - self._steps), num_timesteps
        if blind:
            self._returns = []
            return self.scale
        self._returns = [*self._returns, np.asarray(returns, dtype=float)][-2 * self.window :]
        if len(self._returns) == 2 * self.window:
            recent, before = self._returns[self.window :], self._returns[: self.window]
            if not returns_improving(recent, before, self.p_value):
                self.scale = max(0.0, self.scale - steps / (max(1, total_timesteps) * self.decay_share))
        return self.scale

    def __repr__(self) -> str:
        return f"EntropyPlateau(window={self.window}, p_value={self.p_value}, decay_share={self.decay_share})"


def make_entropy_plateau(value: bool | EntropyPlateau | dict[str, Any] | None) -> EntropyPlateau | None:
    """The ``entropy_plateau`` argument as the run's rule: ``True`` the default settings, a dict of settings (the form
    a hyperparameter YAML file holds, e.g. ``{"p_value": 0.1}``) or an :class:`EntropyPlateau` (copied: its state is
    the run's own) those settings, ``False`` or ``None`` none.

    :raises ValueError: any other value, or a bad setting (named).
    """
    if value is True:
        return EntropyPlateau()
    if isinstance(value, EntropyPlateau):
        return copy.deepcopy(value)
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"window", "p_value", "decay_share"})
        if unknown:
            raise ValueError(f"entropy_plateau: unknown settings {unknown}; settings: window, p_value, decay_share")
        try:
            return EntropyPlateau(**value)
        except ValueError as err:
            raise ValueError(f"entropy_plateau: {err}") from None
    if value is False or value is None:
        return None
    raise ValueError(
        f"entropy_plateau must be True, False, None, a dict of settings or an EntropyPlateau, got {value!r}"
    )
