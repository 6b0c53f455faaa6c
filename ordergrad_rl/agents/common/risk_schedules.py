"""Soft risk schedules: the objective starts at (or near) the mean and moves to its target during training.

A CVaR policy gradient started from a near-uniform policy learns from the worst episodes only, and those are the
long wanders: it learns to end episodes early or to stop moving, and once the good first move is no longer
sampled no batch contains it ("blindness to success", Greenberg et al. 2022, *Efficient Risk-Averse Reinforcement
Learning*, CeSoR). CeSoR's soft risk moves the CVaR level from 1 (the mean) to its target over the first part of
training. Two schedules, for every objective an episodic agent takes:

* ``"level"``: the objective's own level moves from the mean's end to the target, CeSoR's soft risk:
  ``cvar<a>`` (and ``gcvar<a>``, ``uppertail<a>``) at level ``1 - s (1 - a)``; ``top<m>@k``/``bot<m>@k``
  (``max``, ``min``) with ``k - s (k - m)`` ranks; the quantile families from the median (``q = 0.5``) to
  their ``q``. Other families have no level: use ``"mixture"``.
* ``"mixture"``: the rank weights ``(1 - s) * mean + s * alpha``, an L-statistic for every objective (Top-M@K,
  trimmed means, gmd, numeric alpha, each channel of a multi-channel objective); the unbiased OrderGrad gradient
  of the mixture, by linearity of the advantage in ``alpha``.

``s`` (the *share* of the target's risk in force, 0: the mean, 1: the target) follows SB3's schedule
conventions: a fraction of training (``s = min(1, (1 - progress_remaining) / fraction)``, ``fraction=0``: the
target from the start), or a callable of ``progress_remaining`` (1 at the start of training, 0 at the end), e.g.
``RiskSchedule("mixture", schedule=lambda p: 1 - p)``. Levels and shares are rounded to :data:`RESOLUTION`, so an
objective in force is built (and its weights cached) at most ``1 / RESOLUTION`` times.

*Mean share.* ``RiskSchedule("mixture", mean_share=m)`` (``"mixture:<fraction>:<m>"``) keeps the share ``1 - m``
at the end, so the weights stay ``m * mean + (1 - m) * alpha``; with ``fraction=0`` (``"mixture:0:0.1"``) from the
start. Why: a lower tail ranks nothing above its value at risk, so when the batch's VaR is a return shared by many
episodes (the time-outs of a policy that rarely reaches the goal, below the few that do and above a costly event)
the CVaR weights give a success exactly the advantage of a time-out, and the policy gradient only learns to avoid
the costly event, not to reach the goal (CVaR_0.2@16 of 2 episodes at -100, 50 at -40 and 12 between -3.1 and -2:
every success and every time-out gets 0.476; with ``m = 0.1`` the successes get 0.630-0.637, the time-outs 0.396,
``tests/test_risk_schedules.py``). The objective trained is then that mixture, not the target: its optimum is the
target's wherever no policy gains more mean than ``(1 - m) / m`` times the CVaR it gives up (9 for ``m = 0.1``).

A tail of tied time-outs (:func:`untied`, the agents' ``untie_tail``) is the same blindness seen in one batch: when
episodes truncated by the time limit with the batch's lowest return (a constant step cost ties them bit for bit)
fill the lower tail, a CVaR_0.2 batch whose worst 20% all time out ranks nothing, and its gradient is (nearly or
exactly) zero whatever the other episodes did. The level in force for that rollout moves toward the mean just far
enough for the tail to hold as many other episodes as the level itself: ``l' = f + l`` for a share ``f >= l`` of
tied time-outs (the mean if ``l' >= 1``). Only time-outs count, unless the tie is the floor: a tie of terminated
episodes is an outcome the objective ranks correctly (a sure arm paying 1 is the heavy-tail bandit's CVaR optimum;
untying it was measured to pull the stochastic policy toward the riskier arm), but a tie at the lowest return seen
in training (the failures of a binary success, all 0) ranks nothing, as the time-outs do, and counts with them.
A few costly episodes below the tie (the guarded maze's guard, 2% of a uniform policy's episodes under 88% of
time-outs) hide it from that rule, while the tail still gives every
success a time-out's advantage and learns only to avoid the cost: when time-outs tied at the value at risk fill at
least the level's share of the batch and better episodes lie above them (:func:`tie_holds_var`), the rollout trains
the mean share's mixture ``0.1 * mean + 0.9 * target`` (:data:`UNTIE_MEAN_SHARE`) rather than moving the level to
the mean, which would drop the tail's ranking of the cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ordergrad_rl.core import Objective
from ordergrad_rl.core.channels import ChannelObjective

LEVEL = "level"
MIXTURE = "mixture"
KINDS = (LEVEL, MIXTURE)
#: ``risk_schedule="none"`` (or ``False``): no schedule, asked for explicitly; ``None`` leaves the choice to the
#: agent's default (:func:`default_risk_schedule`).
NONE = "none"
#: Fraction of training over which the share rises from 0 to 1: CeSoR's soft risk reaches its target level after
#: 60% of training (Greenberg et al. 2022); taken from CeSoR, not tuned here (the benchmark runs used only 0.6).
DEFAULT_FRACTION = 0.6
#: Step of the shares and levels in force.
RESOLUTION = 0.01

_TAIL_LEVELS = ("cvar", "uppertail")
_END_COUNTS = ("top", "bot")
_QUANTILES = ("quantile", "quantileweibull", "quantileblom", "topquantile", "topquantileweibull", "topquantileblom")
#: The families the level schedule moves.
LEVEL_FAMILIES = (*_TAIL_LEVELS, *_END_COUNTS, "max", "min", "median", *_QUANTILES)
#: The mean's share of the rank weights of a rollout whose value at risk is a tie of time-outs between worse and
#: better episodes (:func:`untied`): ``"mixture:0:0.1"``'s, measured on the guarded maze (see the agents'
#: ``untie_tail``).
UNTIE_MEAN_SHARE = 0.1
#: The ties :func:`untie_case` tells apart.
TIE_AT_MINIMUM, TIE_AT_VAR = "minimum", "var"
#: Lower-tail quantile families (below the median) that a tied tail moves.
_LOWER_QUANTILES = ("quantile", "quantileweibull", "quantileblom")


@dataclass(frozen=True)
class RiskSchedule:
    """How much of the target objective's risk is in force during training.

    :param kind: ``"level"`` or ``"mixture"`` (see the module docstring).
    :param fraction: fraction of training after which the target is in force (in ``[0, 1]``).
    :param schedule: the share as a function of ``progress_remaining`` (values in ``[0, 1]``); replaces
        ``fraction`` when given.
    :param mean_share: ``"mixture"`` only: the mean's share kept to the end, in ``[0, 1)`` (0, the default: the
        target alone). The share in force is ``(1 - mean_share)`` times the schedule's, so the rank weights end at
        ``mean_share * mean + (1 - mean_share) * alpha`` (see the module docstring's *Mean share*).
    """

    kind: str = LEVEL
    fraction: float = DEFAULT_FRACTION
    schedule: Callable[[float], float] | None = None
    mean_share: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"risk_schedule kind must be 'level' or 'mixture', got {self.kind!r}")
        fraction = self.fraction
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"risk_schedule fraction must be a number in [0, 1], got {fraction!r}")
        if self.schedule is not None and not callable(self.schedule):
            raise ValueError(f"risk_schedule schedule must be a callable of progress_remaining, got {self.schedule!r}")
        mean_share = self.mean_share
        if isinstance(mean_share, bool) or not isinstance(mean_share, int | float) or not 0.0 <= mean_share < 1.0:
            raise ValueError(f"risk_schedule mean_share must be a number in [0, 1), got {mean_share!r}")
        if mean_share > 0 and self.kind != MIXTURE:
            raise ValueError(
                f"risk_schedule mean_share={mean_share!r} mixes the mean's rank weights in: it needs kind 'mixture', "
                f"got {self.kind!r}"
            )

    def share(self, progress_remaining: float) -> float:
        """The share ``s`` in force at ``progress_remaining`` (1 at the start of training, 0 at the end), rounded
        to :data:`RESOLUTION`.

        :raises ValueError: a ``schedule`` that returns something outside ``[0, 1]``.
        """
        if self.schedule is not None:
            value = self.schedule(progress_remaining)
            if isinstance(value, bool) or not isinstance(value, int | float | np.floating) or not 0 <= value <= 1:
                raise ValueError(
                    f"risk_schedule's schedule({progress_remaining:.3f}) = {value!r}: a share must be in [0, 1]"
                )
        elif self.fraction == 0:
            value = 1.0
        else:
            value = min(1.0, max(0.0, (1.0 - progress_remaining) / self.fraction))
        # A schedule pickled before mean_share existed reads the class default, 0.
        value = (1.0 - self.mean_share) * float(value)
        return round(round(value / RESOLUTION) * RESOLUTION, 10)

    def __str__(self) -> str:
        text = f"{self.kind}:callable" if self.schedule is not None else f"{self.kind}:{self.fraction:g}"
        return f"{text}:{self.mean_share:g}" if self.mean_share else text


RiskScheduleLike = RiskSchedule | str | Mapping[str, Any] | Literal[False] | None


def parse_risk_schedule(value: RiskScheduleLike) -> RiskSchedule | None:
    """A :class:`RiskSchedule` from ``"level"``, ``"mixture"``, ``"<kind>:<fraction>"`` (``"level:0.5"``),
    ``"mixture:<fraction>:<mean_share>"`` (``"mixture:0:0.1"``),
    a mapping of the dataclass's fields (YAML files) or a :class:`RiskSchedule`; ``None`` from ``None``, ``"none"``
    and ``False`` (no schedule: an agent resolves its ``None`` default first, :func:`default_risk_schedule`).

    :raises ValueError: naming ``risk_schedule``: an unknown kind, a fraction outside ``[0, 1]``, a malformed string.
    """
    if value is None or isinstance(value, RiskSchedule):
        return value
    if value is False or (isinstance(value, str) and value.strip().lower() == NONE):
        return None
    if isinstance(value, str):
        # Case-insensitive, as objective specs are ("Level:0.5").
        kind, *numbers = (part.strip() for part in value.strip().lower().split(":"))
        malformed = ValueError(
            f"risk_schedule {value!r}: expected 'level', 'mixture', '<kind>:<fraction>' such as 'level:0.6' or "
            "'mixture:<fraction>:<mean_share>' such as 'mixture:0:0.1'"
        )
        if len(numbers) > 2:
            raise malformed
        try:
            fields = [float(number) for number in numbers]
        except ValueError:
            raise malformed from None
        given: dict[str, Any] = dict(zip(("fraction", "mean_share"), fields, strict=False))
        return RiskSchedule(kind, **given)
    if isinstance(value, Mapping):
        unknown = set(value) - {"kind", "fraction", "schedule", "mean_share"}
        if unknown:
            raise ValueError(
                f"risk_schedule has no field(s) {sorted(unknown)}; fields: kind, fraction, schedule, mean_share"
            )
        return RiskSchedule(**value)
    raise ValueError(
        f"risk_schedule must be None, 'none', 'level', 'mixture', '<kind>:<fraction>', "
        f"'mixture:<fraction>:<mean_share>', a dict or a RiskSchedule, got {value!r}"
    )


def default_risk_schedule(
    objective: Objective | ChannelObjective, gcvar_alpha: float | None, long: bool, timed_box: bool = False
) -> RiskSchedule | None:
    """The episodic agents' ``risk_schedule`` when it is ``None``: ``"level"`` (CeSoR's soft risk over the first
    :data:`DEFAULT_FRACTION` of training) for a lower-tail objective with a level (:func:`lower_level`: cvar, bot,
    min, a quantile below the median) on long episodes (``long``: OrderGradPPO's long-episode defaults,
    :func:`~ordergrad_rl.agents.common.arguments.long_episodes`) and on continuous actions with a time limit of any
    length (``timed_box``: a ``Box`` action space and a ``TimeLimit``, for every episodic agent); else no schedule.
    GCVaR, a peer method, runs with the schedule it is given; upper tails and the other families were not measured.

    Why (``reproduce benchmarks``, the usage line with it against without, the same seeds, the worst-20% mean of 100
    evaluation returns, greedy / sampled): at 300k steps CartPole-v1 498.1 / 496.2 -> 500 / 500 (10 seeds; SB3
    PPO's 500 / 500), Acrobot-v1 -135.6 / -140.6 -> -104.7 / -138.4 (10; PPO -110.8 / -108.9), LunarLander-v3
    16.4 / 8.3 -> 77.4 / -9.0 (5; PPO -97.6 / -71.8); at 100k CartPole 499.1 / 480.5 -> 496.7 / 476.2 and Acrobot
    -149.4 / -223.9 -> -152.0 / -219.9 (even, within the intervals), LunarLander -162.4 / -42.8 -> -125.4 / -35.4
    (10; PPO -128.4 / -73.6). Measured with ``entropy_by_untied_share`` (the long-episode entropy default): before
    that rule CartPole at 300k broke (481.0 / 394.9), a solved policy kept stochastic until a late chance failure's
    full-size update. Short episodes keep
    none on categorical actions: the mean phase commits the guarded maze and the heavy-tail bandit to their
    mean-optimal policies, local maxima of CVaR_0.2 (the exact slopes in docs/benchmarks.md), while without a schedule
    the usage line reaches their CVaR optima. Continuous actions with a time limit take it on short episodes too (since
    2026-12-02): from scratch a Gaussian policy's tail of time-outs learns to stop short of the hazard and never
    samples a success, where the mean phase reaches the goal. On the point navigation (50 steps, 300k steps, seeds
    0-9, greedy CVaR_0.2 exact, ``reproduce benchmarks``) the usage line went from the wall beside the risky gap in
    9 seeds (-40.3 [-43.5, -34.0], sampled -41.5; in a probe of seed 0 no episode of any rollout reached the goal) to
    the goal in 8: the mean-optimal shortcut (-4.62) in 6 and slow detours in 2 (-4.0 and -1.0), the wall in 2
    (-11.97 [-23.65, -3.77], sampled -13.9; with the noise sampler fitted to the target's tail rather than the level
    in force, 7 reach the goal, -15.6). The shortcut is a local maximum of CVaR_0.2, so the CVaR optimum (the
    detour, 7) stays out of reach, and SB3 PPO (-4.62, the shortcut in 10 of 10) was still ahead. With 32 episodes
    per update, the PPO family's rollout on continuous actions with a time limit since
    (:data:`~ordergrad_rl.agents.common.arguments.TIMED_BOX_ROLLOUT_STEPS`), the mean phase gets four times the
    updates and the goal is reached in 10 of 10 seeds: -4.75 [-6.68, -2.50], sampled -3.15. OrderGradREINFORCE
    (its own defaults otherwise) went from the wall in 10 of 10 seeds (-43.2) to the goal in 7 of 10 (-18.6).
    Measured on this one task: it is the suite's only short task with continuous actions and a time limit. The
    portfolio (continuous actions, no time limit; 96.7% to 93.6% profitable with it) keeps none.
    """
    if (long or timed_box) and gcvar_alpha is None and lower_level(objective) is not None:
        return RiskSchedule(LEVEL)
    return None


def _interpolate(start: float, target: float, share: float) -> float:
    return round(start + share * (target - start), 10)


def _tail_level(target: float, share: float) -> float:
    """A tail level ``share`` of the way from 1 (the mean) to ``target``, rounded up to :data:`RESOLUTION` (never
    below the target)."""
    return min(1.0, round(math.ceil(round(_interpolate(1.0, target, share) / RESOLUTION, 6)) * RESOLUTION, 10))


def _level_objective(objective: Objective, share: float) -> Objective:
    """``objective`` with its level moved ``share`` of the way from the mean's end (see the module docstring)."""
    name, k = objective.name, int(objective.k)  # type: ignore[arg-type]
    if name in _TAIL_LEVELS:
        level = _tail_level(objective.params[0], share)
        return Objective.parse(f"{name}{level:.2f}", k) if level < 1 else Objective.parse("mean")
    if name in _END_COUNTS or name in ("max", "min"):
        m = 1 if name in ("max", "min") else int(objective.params[0])
        family = "top" if name in ("top", "max") else "bot"
        count = math.ceil(round(_interpolate(k, m, share), 6))
        return Objective.parse(f"{family}{count}", k) if count < k else Objective.parse("mean")
    if name in _QUANTILES or name == "median":
        q = 0.5 if name == "median" else objective.params[0]
        prob = round(_interpolate(0.5, q, share) / RESOLUTION) * RESOLUTION
        return Objective.parse(f"{'quantile' if name == 'median' else name}{prob:.2f}", k)
    raise _no_level(objective)


def _no_level(objective: Objective) -> ValueError:
    return ValueError(
        f"risk_schedule='level' needs an objective with a level (cvar, gcvar, uppertail, top, bot, max, min, median, "
        f"the quantiles); {str(objective)!r} has none: use risk_schedule='mixture' (its rank weights mixed with the "
        "mean's)"
    )


def _mixture_objective(objective: Objective, share: float) -> Objective:
    """The rank weights ``(1 - share) * mean + share * alpha`` as a numeric objective at the same ``k``."""
    if share >= 1:
        return objective
    alpha = objective.weights
    mixed = (1.0 - share) * np.full(alpha.size, 1.0 / alpha.size) + share * alpha
    return Objective.from_weights(mixed)


def check_risk_schedule(
    schedule: RiskSchedule | None, objective: Objective | ChannelObjective, gcvar_alpha: float | None = None
) -> None:
    """Refuse a schedule that ``objective`` cannot follow, before the env is built.

    :raises ValueError: a schedule on the mean, ``"level"`` on a family without a level (or on a multi-channel
        objective), ``"mixture"`` on GCVaR (its weights are not an L-statistic).
    """
    if schedule is None:
        return
    channels = objective.channels if isinstance(objective, ChannelObjective) else ()
    if isinstance(objective, Objective) and objective.name == "mean":
        raise ValueError(
            "risk_schedule moves a ranked objective from the mean to its target: objective='mean' has no risk to move"
        )
    if schedule.kind == MIXTURE and gcvar_alpha is not None:
        raise ValueError("risk_schedule='mixture' mixes rank weights; GCVaR's are not rank weights: use 'level'")
    if schedule.kind == LEVEL and channels:
        raise ValueError("risk_schedule='level' on a multi-channel objective: use 'mixture' (applied to every channel)")
    if schedule.kind == LEVEL and isinstance(objective, Objective) and objective.name not in LEVEL_FAMILIES:
        raise _no_level(objective)


def objective_in_force(
    objective: Objective | ChannelObjective, schedule: RiskSchedule, share: float, gcvar_alpha: float | None = None
) -> tuple[Objective | ChannelObjective, float | None]:
    """``(objective, gcvar_alpha)`` in force at ``share`` of the target's risk (the target itself at ``share=1``).

    :param objective: the bound target objective.
    :param gcvar_alpha: GCVaR's target level, or ``None``.
    :return: the objective whose weights the update uses, and GCVaR's level in force (``None``: OrderGrad's weights;
        GCVaR at level 1 is the mean, so its weights become OrderGrad's mean weights).
    """
    if share >= 1:
        return objective, gcvar_alpha
    if gcvar_alpha is not None:
        level = _tail_level(gcvar_alpha, share)
        if level >= 1:
            return Objective.parse("mean"), None
        return objective, level
    if isinstance(objective, ChannelObjective):
        channels = tuple(replace(c, objective=_mixture_objective(c.objective, share)) for c in objective.channels)
        return ChannelObjective(channels), None
    move = _level_objective if schedule.kind == LEVEL else _mixture_objective
    return move(objective, share), None


def level_in_force(objective: Objective | ChannelObjective, gcvar_alpha: float | None) -> float | None:
    """The level (probability or share of ranks) of the objective in force, logged as ``risk/level``: a tail mean's
    level, a quantile's probability (0.5 for the median), ``m / k`` of ``top``/``bot`` (``1 / k`` of ``max``/``min``),
    1 for the mean; ``None`` for others."""
    if gcvar_alpha is not None:
        return gcvar_alpha
    if not isinstance(objective, Objective):
        return None
    if objective.name == "mean":
        return 1.0
    if objective.name == "median":
        return 0.5
    if objective.name in ("max", "min"):
        return 1 / int(objective.k)  # type: ignore[arg-type]
    if objective.name in _TAIL_LEVELS or objective.name in _QUANTILES:
        return float(objective.params[0])
    if objective.name in _END_COUNTS:
        return float(objective.params[0]) / int(objective.k)  # type: ignore[arg-type]
    return None


def tied_share(returns: np.ndarray, time_outs: np.ndarray, terminated: bool = False) -> float:
    """The share of episodes that timed out with the lowest return of the batch (with ``terminated``: of all the
    episodes with that return, the terminated ones too).

    :param returns: ``[N]`` episode returns (time-outs of a constant step cost tie bit for bit).
    :param time_outs: ``[N]`` bool, the episodes truncated (not terminated).
    :param terminated: count the terminated episodes tied at the lowest return as well (a floor: see
        :func:`untie_case`).
    """
    values = np.asarray(returns, dtype=np.float64).reshape(-1)
    tied = values == values.min()
    if not terminated:
        tied &= np.asarray(time_outs, dtype=bool).reshape(-1)
    return float(np.mean(tied))


def tie_holds_var(returns: np.ndarray, time_outs: np.ndarray, level: float) -> bool:
    """Whether time-outs tied at one return hold the batch's value at risk at ``level`` (the return of rank
    ``ceil(level N)``), fill at least a share ``level`` of the batch and have better episodes above them.

    Below such a tie lie a few worse episodes (a costly event), so it is not the lowest return (:func:`tied_share`
    does not see it), and a lower tail at ``level`` gives every episode above its VaR, the successes with the tied
    time-outs, one and the same advantage.

    :param returns: ``[N]`` episode returns.
    :param time_outs: ``[N]`` bool, the episodes truncated (not terminated).
    :param level: the lower tail's level, in ``(0, 1)``.
    """
    values = np.asarray(returns, dtype=np.float64).reshape(-1)
    rank = max(1, math.ceil(level * values.size - 1e-9))
    var = np.partition(values, rank - 1)[rank - 1]
    tied = float(np.mean((values == var) & np.asarray(time_outs, dtype=bool).reshape(-1)))
    return tied >= level and bool(np.any(values > var))


def tied_at_best(returns: np.ndarray, seen: tuple[float, float] | None) -> bool:
    """Whether a rollout's episode returns all tie at or above the best return of the earlier rollouts, some earlier
    episode having done worse (every episode at the time limit of a solved task): the agents' ``entropy_when_tied``.

    A tie at the bottom (every Acrobot episode at -500, nothing better seen yet) is not one: there the entropy bonus
    is all that explores.

    :param returns: ``[N]`` episode returns of the rollout.
    :param seen: ``(lowest, highest)`` episode return of the earlier rollouts; ``None`` before the first.
    """
    return share_tied_at_best(returns, seen) == 1.0


def share_tied_at_best(returns: np.ndarray, seen: tuple[float, float] | None) -> float:
    """The share of a rollout's episodes tied at its best return, where at least two tie there, at or above the best
    return of the earlier rollouts, some earlier episode having done worse (31 of 32 CartPole episodes at the
    500-step limit: 0.97); else 0. 1 is :func:`tied_at_best` (rollouts hold two episodes or more).

    :param returns: ``[N]`` episode returns of the rollout.
    :param seen: ``(lowest, highest)`` episode return of the earlier rollouts; ``None`` before the first.
    """
    values = np.asarray(returns, dtype=np.float64).reshape(-1)
    if seen is None:
        return 0.0
    top = values.max()
    tied = values == top
    if tied.sum() < 2 or not seen[0] < top >= seen[1]:
        return 0.0
    return float(tied.mean())


def _lower_level(objective: Objective | ChannelObjective, gcvar_alpha: float | None) -> tuple[float, float] | None:
    """``(level, end)`` of a lower-tail objective: its level and the level schedule's start (1, the mean; 0.5, the
    median, for quantiles); ``None`` for other objectives (upper tails, no level, several channels)."""
    if gcvar_alpha is not None:
        return gcvar_alpha, 1.0
    if not isinstance(objective, Objective):
        return None
    name = objective.name
    if name == "cvar":
        return float(objective.params[0]), 1.0
    if name in ("bot", "min"):
        m = 1 if name == "min" else int(objective.params[0])
        return m / int(objective.k), 1.0  # type: ignore[arg-type]
    if name in _LOWER_QUANTILES and objective.params[0] < 0.5:
        return float(objective.params[0]), 0.5
    return None


def lower_level(objective: Objective | ChannelObjective) -> float | None:
    """The level of a lower-tail objective (cvar, bot, min, a quantile below the median), ``None`` for others."""
    found = _lower_level(objective, None)
    return None if found is None else found[0]


def can_untie(objective: Objective | ChannelObjective, gcvar_alpha: float | None) -> bool:
    """Whether :func:`untied` can move ``objective``: a lower-tail objective with a level."""
    return _lower_level(objective, gcvar_alpha) is not None


def untied(
    objective: Objective | ChannelObjective,
    gcvar_alpha: float | None,
    returns: np.ndarray,
    time_outs: np.ndarray,
    at_var: bool = True,
    floor: bool = False,
) -> tuple[Objective | ChannelObjective, float | None]:
    """``(objective, gcvar_alpha)`` moved past a tail of tied time-outs of one rollout's ``returns`` (``[N]``).

    A lower-tail objective at level ``l`` (CVaR and GCVaR at ``l``, ``bot<m>@k`` at ``m / k``, ``min`` at ``1 / k``,
    a quantile below the median at its ``q``) whose batch has a share ``f >= l`` of time-outs tied at the minimum
    (:func:`tied_share`; ``time_outs`` ``[N]`` marks the truncated episodes) moves
    along the level schedule to ``l' = f + l`` (rounded up to :data:`RESOLUTION`; the mean, or the median for the
    quantiles, if ``l'`` reaches it): the tail then holds about as many untied episodes as the target's tail holds
    episodes. When the tie is not the minimum but holds the value at risk between a few worse episodes and better
    ones (:func:`tie_holds_var`: the time-outs of a policy that seldom reaches the goal, above a costly event), the
    rollout trains a mixture with :data:`UNTIE_MEAN_SHARE` of the mean's rank weights instead (GCVaR, whose weights
    do not mix, as given; ``at_var=False``, the rule of models saved before it, as given too). With ``floor`` (the
    batch's lowest return is the lowest seen in training), terminated episodes tied at it count as the time-outs do
    (:func:`untie_case`). Anything else (no tie filling the tail, upper tails, mixtures, several channels) is
    returned as given.
    """
    case = untie_case(objective, gcvar_alpha, returns, time_outs, at_var, floor)
    return untied_at(case, objective, gcvar_alpha, returns, time_outs, floor)


def untied_at(
    case: str | None,
    objective: Objective | ChannelObjective,
    gcvar_alpha: float | None,
    returns: np.ndarray,
    time_outs: np.ndarray,
    floor: bool = False,
) -> tuple[Objective | ChannelObjective, float | None]:
    """:func:`untied` for a rollout whose :func:`untie_case` is ``case`` (the agents find it once, to log it too)."""
    if case == TIE_AT_MINIMUM:
        level, end = _lower_level(objective, gcvar_alpha)  # type: ignore[misc]
        share = tied_share(returns, time_outs, floor)
        move = min(1.0, max(0.0, (end - (share + level)) / (end - level)))  # the level schedule's share at l'
        return objective_in_force(objective, RiskSchedule(LEVEL), move, gcvar_alpha)
    if case == TIE_AT_VAR:
        # Moving the level past this tie reaches the mean, whose gradient took the guarded maze to its mean-optimal
        # short path; a mean share keeps the tail's ranking and ranks the successes above the tie.
        return objective_in_force(objective, RiskSchedule(MIXTURE), 1.0 - UNTIE_MEAN_SHARE)
    return objective, gcvar_alpha


def untie_case(
    objective: Objective | ChannelObjective,
    gcvar_alpha: float | None,
    returns: np.ndarray,
    time_outs: np.ndarray,
    at_var: bool = True,
    floor: bool = False,
) -> str | None:
    """The tie :func:`untied` acts on in one rollout: :data:`TIE_AT_MINIMUM` (time-outs tied at the lowest return
    fill the tail), :data:`TIE_AT_VAR` (:func:`tie_holds_var`) or ``None``. Arguments as :func:`untied`'s.

    ``floor``: the batch's lowest return is the lowest seen in training, so nothing worse is known. Terminated
    episodes tied there then count as well: a lower tail made of them ranks nothing either (a binary success, as on
    a slippery FrozenLake, whose failures all return 0: CVaR_0.2 is 0 for every policy that fails more than 20% of
    the time, so its gradient is zero until the success rate passes 0.8). A tie of terminated episodes above a
    worse return seen before (the heavy-tail bandit's sure arm, above the -40 of its risky arm) is an outcome the
    objective ranks correctly, and does not count.
    """
    found = _lower_level(objective, gcvar_alpha)
    if found is None:
        return None
    level = found[0]
    if tied_share(returns, time_outs, floor) >= level:
        return TIE_AT_MINIMUM
    if at_var and gcvar_alpha is None and tie_holds_var(returns, time_outs, level):
        return TIE_AT_VAR
    return None
