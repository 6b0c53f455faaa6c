"""Envs that expose their noise: named Bernoulli events whose probabilities a sampler may change.

A risk-averse agent learns about a rare costly event only from the batches that contain it. An env that names its
random events lets the agent draw them more often and weight each episode by its likelihood ratio (CeSoR's
cross-entropy sampler, :mod:`ordergrad_rl.agents.common.noise_sampler`). The contract, kept by
:class:`BernoulliNoiseMixin`:

* ``noise_probs``: ``{name: nominal probability}`` of the env's Bernoulli events (the env's own distribution);
* ``set_noise_probs(probs)``: the probabilities the following steps draw with (``None``: the nominal ones);
* each step that draws an event reports it in ``info["noise"]``: ``{name: (draws, events)}``, the number of
  draws of that event on the step and how many happened. Events are drawn in ``step``, not ``reset``: an agent
  reads only step infos, and SB3's VecEnvs reset an env before the agent sets its next episode's probabilities.

The episode's likelihood under any probabilities ``q`` is then ``prod_name q^events (1 - q)^(draws - events)``.

An agent checks ``noise_probs`` and ``set_noise_probs`` once, where it sets its sampler up
(:func:`check_nominal_noise_probs`), and each report it reads (:func:`check_noise_report`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ordergrad_rl.common.arguments import check_float

#: The step-info key of the noise report.
NOISE_INFO_KEY = "noise"


def check_noise_probs(probs: Mapping[str, float] | None, nominal: Mapping[str, float]) -> dict[str, float]:
    """``probs`` completed with the ``nominal`` ones (``None``: the nominal ones).

    :raises ValueError: a name that is not an event of the env, or a probability outside ``[0, 1]``.
    """
    out = dict(nominal)
    for name, prob in (probs or {}).items():
        if name not in nominal:
            raise ValueError(f"unknown noise event {name!r}; this env's events: {sorted(nominal)}")
        out[name] = check_float(f"noise probability of {name!r}", prob, 0, 1)
    return out


def check_nominal_noise_probs(nominal: Any) -> dict[str, float]:
    """An env's ``noise_probs`` as ``{name: float}``, checked once (where a sampler is set up) so that no invalid
    event is dropped or fails later in a rollout.

    :raises ValueError: not a mapping of event names (strings) to probabilities in ``[0, 1]``.
    """
    if not isinstance(nominal, Mapping):
        raise ValueError(
            "the env's noise_probs must be a dict {event name: nominal probability in [0, 1]} (see "
            f"ordergrad_rl.envs.noise), got a {type(nominal).__name__}: {nominal!r}"
        )
    out = {}
    for name, prob in nominal.items():
        if not isinstance(name, str):
            raise ValueError(f"the env's noise_probs must be keyed by event names (strings), got {name!r}")
        out[name] = check_float(f"the env's noise_probs[{name!r}]", prob, 0, 1)
    return out


def check_noise_report(report: Any, names: Collection[str] | None = None) -> Mapping[str, Any]:
    """A step's ``info["noise"]`` (``{name: (draws, events)}``), checked: it is read at every step of a rollout,
    so this costs a few comparisons per event reported.

    :param report: the step's ``info["noise"]``.
    :param names: the env's event names (its ``noise_probs``), or ``None`` to take any.
    :raises ValueError: not a mapping, an entry that is not a pair of counts ``0 <= events <= draws``, or an event
        that is not one of ``names``.
    """
    if not isinstance(report, Mapping):
        raise ValueError(
            f"info[{NOISE_INFO_KEY!r}] must be a dict {{event name: (draws, events)}} (see ordergrad_rl.envs.noise), "
            f"got a {type(report).__name__}: {report!r}"
        )
    for name, counts in report.items():
        try:
            draws, events = counts
            # False for NaN; TypeError for a string; a probability reported as events, or inf draws, not counts
            valid = 0 <= events <= draws and float(draws).is_integer() and float(events).is_integer()
        except (TypeError, ValueError):  # not a pair of numbers
            valid = False
        if not valid:
            raise ValueError(
                f"info[{NOISE_INFO_KEY!r}][{name!r}] must be a pair (draws, events) of counts with "
                f"0 <= events <= draws (see ordergrad_rl.envs.noise), got {counts!r}"
            )
        if names is not None and name not in names:  # its draws would go uncounted, and the weights wrong
            raise ValueError(
                f"info[{NOISE_INFO_KEY!r}] reports event {name!r}, which is not one of the env's noise_probs "
                f"{sorted(names)}: report each event under its name in noise_probs (see ordergrad_rl.envs.noise)"
            )
    return report


class BernoulliNoiseMixin:
    """The noise contract (module docstring) for an env whose random events are Bernoulli draws.

    The subclass implements :attr:`noise_probs` and draws each event with :meth:`noise_prob`; :meth:`_noise_changed`
    is called when the sampling probabilities change (an env that tabulates its outcomes rebuilds them there).
    """

    _sampling_probs: dict[str, float] | None = None

    @property
    def noise_probs(self) -> dict[str, float]:
        """``{name: nominal probability}`` of the env's events."""
        raise NotImplementedError

    def set_noise_probs(self, probs: Mapping[str, float] | None) -> None:
        """Draw the events with ``probs`` (missing names, or ``None``: the nominal probabilities) from the next step.

        :raises ValueError: see :func:`check_noise_probs`.
        """
        checked = check_noise_probs(probs, self.noise_probs)
        sampling = None if checked == self.noise_probs else checked
        if sampling != self._sampling_probs:  # a sampler sets them at every episode's end, mostly to the same
            self._sampling_probs = sampling
            self._noise_changed()

    def noise_prob(self, name: str) -> float:
        """The probability the env draws event ``name`` with now."""
        probs = self._sampling_probs if self._sampling_probs is not None else self.noise_probs
        return probs[name]

    def _noise_changed(self) -> None:
        """Hook: the sampling probabilities changed."""

    @staticmethod
    def noise_info(name: str, happened: bool) -> dict[str, Any]:
        """The step-info entry of one draw of event ``name``."""
        return {NOISE_INFO_KEY: {name: (1, int(happened))}}
