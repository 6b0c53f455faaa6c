"""Multi-channel objectives: one order-statistic objective per reward channel, advantages summed with weights.

The paper's multi-reward LLM experiment ranks correctness with Top-2@4 and the answer length with Bottom-2@4 (weight
0.4 on the reward ``L / L_max``) and adds the two advantages. A *channel* is the env reward (``"reward"``, the episode
return) or the episode sum of a per-step ``info[name]`` entry (``info["length"]``, ``info["cost"]``: undiscounted).
Each channel keeps its own ``k`` and is ranked on its own (one sort per channel); the policy-gradient weight of
episode ``i`` is ``sum_c w_c k_c a_ic``, the unbiased likelihood-ratio weight of ``sum_c w_c v_c`` (each ``k_c a_ic``
is channel ``c``'s weight, paper eq. og-batch-estimator).

Normalization (the agents' ``normalize_advantage``): ``"group"`` divides the *summed* weights by each group's std,
so in a group where one channel is constant (no correct answer) the other channel is scaled up to full strength;
``"channel"`` divides each channel's ``k_c a_c`` by its own group std before the weight, so every channel's part has
group std ``|w_c|`` (or 0) and the weights are relative strengths, free of the channels' units. The paper normalizes
"the advantage" by the group std and does not say which; ``"group"`` is the default.

Spec: a dict ``{"reward": "top2@4", "length": ("bot2@4", 0.4)}`` (a value is a spec, an
:class:`~ordergrad_rl.core.Objective` or ``(spec, weight)``), or the equivalent string, whose canonical form
``str()`` prints and :meth:`ChannelObjective.parse` reads back::

    "reward=top2@4 + 0.4*length=bot2@4"

Terms are ``[weight*]channel=objective`` joined by ``+`` (weight 1 is omitted; ``-0.2*cost=mean`` is a negative
weight). A spec with the reward channel alone at weight 1 is that channel's plain :class:`Objective`.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ordergrad_rl.core._xp import host, host_float64
from ordergrad_rl.core.batch import lstat_advantage, lstat_value
from ordergrad_rl.core.gcvar import gcvar_level
from ordergrad_rl.core.objectives import Objective, ObjectiveLike

#: The channel of the env reward (the episode return ``sum_t gamma^t r_t``).
REWARD = "reward"

_NAME_RE = re.compile(r"^[A-Za-z_][\w.\-]*$")
_WEIGHT = r"[-+]?[\d.]+(?:e[-+]?\d+)?"
_TERM_RE = re.compile(rf"^\s*(?:(?P<weight>{_WEIGHT})\s*\*\s*)?(?P<name>[^=*+]+?)\s*=(?P<spec>.+)$", re.I)
# A "+" that starts a new term: followed by [weight *] name =  (so "+" inside an objective spec is left alone).
_SPLIT_RE = re.compile(rf"\+(?=\s*(?:{_WEIGHT}\s*\*\s*)?[A-Za-z_][\w.\-]*\s*=)", re.I)


@dataclass(frozen=True)
class Channel:
    """One channel of a :class:`ChannelObjective`.

    :param name: ``"reward"`` or the ``info`` key summed over an episode.
    :param objective: its order-statistic objective (bound once the agent knows its group size).
    :param weight: weight of its advantages in the sum.
    """

    name: str
    objective: Objective
    weight: float = 1.0

    def __str__(self) -> str:
        weight = "" if self.weight == 1.0 else f"{_format_weight(self.weight)}*"
        return f"{weight}{self.name}={self.objective}"


def _format_weight(weight: float) -> str:
    return str(int(weight)) if float(weight).is_integer() else repr(float(weight))


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"channel names are 'reward' or an info key made of letters, digits, '_', '.', '-'; got {name!r}"
        )
    return name


def _check_weight(name: str, weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not math.isfinite(weight):
        raise ValueError(f"the weight of channel {name!r} must be a finite real number, got {weight!r}")
    return float(weight)


@dataclass(frozen=True)
class ChannelObjective:
    """Objectives on several reward channels; see the module docstring.

    :param channels: the channels, in the order given (the canonical string keeps it).
    """

    channels: tuple[Channel, ...]

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, spec: Any, k: int | None = None) -> Objective | ChannelObjective:
        """A dict or a channel string as a :class:`ChannelObjective` (a plain :class:`Objective` when it is the
        reward channel alone at weight 1); any other spec goes to :meth:`Objective.parse`.

        :param spec: a mapping of channel name to objective (a spec or an :class:`Objective`) or ``(objective, weight)``
            (``{"reward": "top2@4", "length": ("bot2@4", 0.4)}``), its string
            (``"reward=top2@4 + 0.4*length=bot2@4"``), a :class:`ChannelObjective`, or any spec of
            :meth:`Objective.parse`.
        :param k: order-statistic size of the channels whose objective has no ``@K`` (a default: channels that fix
            their ``k`` keep it).
        :raises ValueError: no channel, a malformed term, a repeated or badly named channel, a non-finite weight, or an
            invalid objective (the message names the channel).
        :raises TypeError: a spec of another kind.
        """
        if isinstance(spec, ChannelObjective):
            return spec if k is None else spec.bind_default(k)
        if isinstance(spec, str) and "=" in spec:
            terms = _SPLIT_RE.split(spec)
            items: list[tuple[str, Any, float]] = []
            for term in terms:
                match = _TERM_RE.match(term)
                # A second "=" in a term: terms not joined by "+" ("- 0.4*length=", ", length=", "0.4 length=").
                if match is None or "=" in match["spec"]:
                    raise ValueError(
                        f"malformed channel term {term.strip()!r} in {spec!r}: expected [weight*]channel=objective "
                        "terms joined by '+', e.g. 'reward=top2@4 + 0.4*length=bot2@4' (a negative weight is "
                        "'+ -0.4*length=bot2@4')"
                    )
                weight = 1.0 if match["weight"] is None else float(match["weight"])
                items.append((match["name"].strip(), match["spec"].strip(), weight))
        elif isinstance(spec, Mapping):
            items = []
            for name, value in spec.items():
                if isinstance(value, tuple) and len(value) != 2:  # unpacking named neither the channel nor the form
                    raise ValueError(
                        f"channel {name!r}: expected an objective or an (objective, weight) pair, got {value}"
                    )
                objective, weight = value if isinstance(value, tuple) else (value, 1.0)
                items.append((name, objective, weight))
        else:
            return Objective.parse(spec, k)
        if not items:
            raise ValueError("a channel objective needs at least one channel, e.g. {'reward': 'top2@4'}")
        channels = []
        for name, objective, weight in items:
            name = _check_name(name)
            try:
                parsed = Objective.parse(objective)
                parsed = parsed if parsed.is_bound or k is None else parsed.bind(k)
            except (TypeError, ValueError) as err:
                raise type(err)(f"channel {name!r}: {err}") from err
            channels.append(Channel(name, parsed, _check_weight(name, weight)))
        names = [c.name for c in channels]
        if len(set(names)) != len(names):
            raise ValueError(f"channel names must be distinct, got {names}")
        if len(channels) == 1 and channels[0].name == REWARD and channels[0].weight == 1.0:
            return channels[0].objective
        return cls(tuple(channels))

    def bind_default(self, k: int) -> ChannelObjective:
        """Bind every channel whose objective has no ``k`` yet to ``k`` (the others keep theirs)."""
        return ChannelObjective(
            tuple(c if c.objective.is_bound else Channel(c.name, c.objective.bind(k), c.weight) for c in self.channels)
        )

    # ------------------------------------------------------------------ accessors
    @property
    def is_bound(self) -> bool:
        return all(c.objective.is_bound for c in self.channels)

    @property
    def k(self) -> int | None:
        """The largest channel ``k`` (what ``k < group size`` is checked against); ``None`` while unbound."""
        return max(c.objective.k for c in self.channels) if self.is_bound else None  # type: ignore[type-var]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.channels)

    @property
    def info_channels(self) -> tuple[str, ...]:
        """The channels read from ``info`` (every one but ``"reward"``)."""
        return tuple(name for name in self.names if name != REWARD)

    def __str__(self) -> str:
        return " + ".join(str(c) for c in self.channels)

    # ------------------------------------------------------------------ estimator
    def _channel_values(self, returns: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Each channel's values in ``returns`` as float64 arrays of one shape, or a ``ValueError`` naming the
        channels that are missing or the shape of each."""
        missing = [name for name in self.names if name not in returns]
        if missing:
            raise ValueError(f"no episode values for the channels {missing} of {self}: got {sorted(returns)}")
        values = {
            name: host_float64(returns[name], f"returns[{name!r}]", f"the channel objective {self}")
            for name in self.names
        }
        shapes = {name: value.shape for name, value in values.items()}
        if len(set(shapes.values())) > 1:
            raise ValueError(f"the channels of {self} need episode values of one shape [..., N], got {shapes}")
        return values

    @host
    def channel_weights(
        self, returns: Mapping[str, np.ndarray], normalize: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> dict[str, np.ndarray]:
        """Each channel's part of the weights, ``{name: w_c k_c a_c}`` (``[..., N]`` each; weight-0 channels left out).

        :param returns: channel name -> ``[..., N]`` episode values (groups on the leading axes).
        :param normalize: applied to each channel's ``k_c a_c`` before the weight ``w_c`` (per-channel normalization,
            e.g. :func:`~ordergrad_rl.agents.common.groups.group_normalize`: ``w_c k_c a_c / std_g(k_c a_c)``); ``None``
            keeps the unbiased weights.
        :raises ValueError: a channel missing from ``returns``, or channels of different shapes.
        """
        values = self._channel_values(returns)
        parts = {}
        for c in self.channels:
            if c.weight == 0.0:
                continue  # a channel with weight 0 changes nothing (not even its sort is needed)
            part = c.objective.k * lstat_advantage(values[c.name], c.objective)
            parts[c.name] = c.weight * (part if normalize is None else normalize(part))
        return parts

    @host
    def advantage_weights(
        self, returns: Mapping[str, np.ndarray], normalize: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> np.ndarray:
        """``sum_c w_c k_c a_c``: the per-episode policy-gradient weights, shape ``[..., N]`` (the sum of
        :meth:`channel_weights`; ``normalize`` as there).

        :param returns: channel name -> ``[..., N]`` episode values (groups on the leading axes).
        :param normalize: applied to each channel's ``k_c a_c`` before its weight, as in :meth:`channel_weights`;
            ``None``: none.
        """
        parts = self.channel_weights(returns, normalize)
        if not parts:
            return np.zeros(np.shape(returns[self.channels[0].name]), dtype=np.float64)
        return np.sum(list(parts.values()), axis=0)

    @host
    def values(self, returns: Mapping[str, np.ndarray]) -> dict[str, float]:
        """Each channel's batch value ``v^alpha`` (pooled over the episodes).

        :raises ValueError: as :meth:`channel_weights`.
        """
        values = self._channel_values(returns)
        return {c.name: float(lstat_value(values[c.name], c.objective)) for c in self.channels}


#: What the agents accept as ``objective``.
AnyObjective = ObjectiveLike | ChannelObjective | Mapping[str, Any]


def parse_objective(spec: AnyObjective, k: int | None = None) -> Objective | ChannelObjective:
    """:meth:`ChannelObjective.parse`: an :class:`Objective`, or a :class:`ChannelObjective` for several channels."""
    return ChannelObjective.parse(spec, k)


def parse_agent_objective(
    spec: AnyObjective, k: int | None = None
) -> tuple[Objective | ChannelObjective, float | None]:
    """What an episodic agent's ``objective`` argument targets, parsed once: ``(objective, gcvar_level)``.

    ``"gcvar<a>"`` (:mod:`ordergrad_rl.core.gcvar`) selects Tamar et al.'s GCVaR weights for ``CVaR_a``: it gives
    ``(cvar<a>, a)``, the OrderGrad objective at the same level (what is logged and checked) and GCVaR's level. Any
    other spec gives ``(parse_objective(spec, k), None)``. The only place a ``gcvar`` spec is recognized.

    :raises ValueError: an invalid objective or GCVaR level.
    """
    level = gcvar_level(spec)
    return parse_objective(spec if level is None else f"cvar{level}", k), level
