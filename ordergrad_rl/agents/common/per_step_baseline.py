"""Per-step credit for the episodic algorithms: the episode weights over a baseline (``value_baseline``).

An episodic algorithm gives every step of episode ``i`` the episode's weight ``w_i``. With a per-step baseline
``b_t`` each step gets ``w_i - b_t`` instead (or, at ``baseline_lambda < 1``, the lambda-returns of the weight over
the baseline, :func:`~ordergrad_rl.agents.common.advantages.lambda_advantages`): the value head's ``V(s_t)``
(``value_baseline=True``; the weights become its regression targets, which the algorithm's update must train) or
the history baseline ``b(s_t, t, G_<t)`` (``"history"``,
:class:`~ordergrad_rl.agents.common.history_baseline.HistoryBaseline`, its own network, fitted here after each
rollout's advantages are computed). Both are functions of what is known
before ``a_t`` is drawn, so the estimator stays unbiased at ``baseline_lambda=1``. OrderGradPPO, OrderGradREINFORCE
and the sb3-contrib variants mix this in front of :class:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin`.
"""

from __future__ import annotations

import io
import pathlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.utils import explained_variance

from ordergrad_rl.agents.common.advantages import discounted_rewards, lambda_advantages, returns_before
from ordergrad_rl.agents.common.arguments import default_value_baseline, resolve_baseline_lambda
from ordergrad_rl.agents.common.episodic import EpisodicAlgorithmMixin
from ordergrad_rl.agents.common.history_baseline import HISTORY, HistoryBaseline
from ordergrad_rl.agents.common.policies import predict_values
from ordergrad_rl.agents.common.utils import lent_attributes

#: ``get_parameters``' entries of the history baseline (its network with the statistics, its optimizer), beside SB3's
#: ``"policy"`` and ``"policy.optimizer"``.
HISTORY_PARAMETERS = ("history_baseline", "history_baseline.optimizer")


def check_value_baseline(value_baseline: Any, algorithm: str | None = None) -> None:
    """``ValueError`` naming the values ``value_baseline`` takes (``True``, ``False``, ``"history"``, ``None``); with
    the name of an ``algorithm`` that fits no critic to the episode weights (OrderGradREINFORCE and the sb3-contrib
    variants), also for ``True``, which regresses the value head."""
    if value_baseline is not None and not isinstance(value_baseline, bool) and value_baseline != HISTORY:
        raise ValueError(f"value_baseline must be True, False, 'history' or None, got {value_baseline!r}")
    if algorithm is not None and value_baseline is True:
        raise ValueError(
            f"value_baseline=True regresses the policy's value head, which {algorithm} does not fit to the episode "
            "weights: use value_baseline='history', a baseline network of its own"
        )


def check_value_head(value_baseline: Any, policy_kwargs: dict[str, Any] | None) -> None:
    """``ValueError`` for ``value_baseline=True`` (``V(s)``) on a policy built without its value head
    (``policy_kwargs["critic"] == "none"``)."""
    if value_baseline is True and (policy_kwargs or {}).get("critic") == "none":
        raise ValueError("value_baseline=True needs the value head: drop policy_kwargs['critic']='none'")


class PerStepBaselineMixin(EpisodicAlgorithmMixin):
    """``value_baseline`` and ``baseline_lambda`` of an episodic algorithm (module docstring): set by
    :meth:`_init_value_baseline` after :meth:`_init_episodic_algorithm`; the history baseline is built with the model,
    saved in the save's data (so that SB3's loaders of the file, which have no such module, still load it) and fitted
    in :meth:`_compute_advantages`."""

    # A save without baseline_lambda trained on w - b_t, one without value_baseline with no baseline at all (the
    # constructor that SB3's load runs would give the default of the env at hand).
    saved_before = {**EpisodicAlgorithmMixin.saved_before, "baseline_lambda": 1.0, "value_baseline": False}
    #: Whether the algorithm's update regresses the policy's value head (``value_baseline=True``'s ``V(s)``):
    #: OrderGradPPO's does; OrderGradREINFORCE and the sb3-contrib variants do not (OrderGradMaskablePPO fits the value
    #: head only as ``critic_when_tied``'s discounted critic), and refuse ``True``
    #: (:meth:`_check_value_baseline`).
    trains_critic: bool = True

    @classmethod
    def baseline_rule_policy_kwargs(cls, policy_kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
        """The ``policy_kwargs`` that OrderGradPPO's rule (:func:`default_value_baseline`) sees for this class: the
        user's, or without a critic (``critic="none"``) where the class trains none, so that the rule's ``V(s)``
        case (continuous actions without a time limit) keeps whole-episode weights there."""
        return policy_kwargs if cls.trains_critic else {**(policy_kwargs or {}), "critic": "none"}

    @classmethod
    def _check_value_baseline(cls, value_baseline: Any) -> None:
        """:func:`check_value_baseline` for this class: ``True`` is refused where it trains no critic."""
        check_value_baseline(value_baseline, None if cls.trains_critic else cls.__name__)

    @classmethod
    def argument_checks(cls) -> dict[str, Callable[[Any], object]]:
        return {**super().argument_checks(), "value_baseline": cls._check_value_baseline}

    def _default_at_load(self, replaced: Mapping[str, Any]) -> None:
        """... and ``baseline_lambda`` against ``value_baseline``: 1.0 with no per-step baseline, forced where the save
        had none and ruled out where the new value has none, so it then takes the default for the new value
        (:func:`~ordergrad_rl.agents.common.arguments.resolve_baseline_lambda`); between two baselines it is kept."""
        super()._default_at_load(replaced)
        if "value_baseline" in replaced and "baseline_lambda" not in replaced:
            if not (replaced["value_baseline"] and self.value_baseline):
                self.baseline_lambda = resolve_baseline_lambda(None, self.value_baseline)

    def _check_loaded_arguments(self, names: Collection[str]) -> None:
        super()._check_loaded_arguments(names)
        if "value_baseline" in names:
            check_value_head(self.value_baseline, self.policy_kwargs)
        if "baseline_lambda" in names:  # with the model's value_baseline, as the constructor resolves it
            self.baseline_lambda = resolve_baseline_lambda(self.baseline_lambda, self.value_baseline)

    def _init_value_baseline(
        self, value_baseline: bool | str | None, baseline_lambda: float | None, default: bool | str
    ) -> None:
        """Set ``value_baseline`` (``default`` where it is ``None``) and ``baseline_lambda``
        (:func:`~ordergrad_rl.agents.common.arguments.resolve_baseline_lambda`)."""
        self.value_baseline = default if value_baseline is None else value_baseline
        self.baseline_lambda = resolve_baseline_lambda(baseline_lambda, self.value_baseline)

    def _default_value_baseline(
        self, long: bool, policy_kwargs: dict[str, Any] | None, limit: int | None
    ) -> bool | str:
        """The PPO family's ``value_baseline=None`` for the model's objective and env
        (:func:`~ordergrad_rl.agents.common.arguments.default_value_baseline`, seeing
        :meth:`baseline_rule_policy_kwargs`); ``False`` while SB3's load builds without an env (no action space: the
        save's value follows)."""
        if not hasattr(self, "action_space"):
            return False
        policy_kwargs = self.baseline_rule_policy_kwargs(policy_kwargs)
        return default_value_baseline(self.objective, self.action_space, long, policy_kwargs, self.group_size, limit)

    def _setup_model(self) -> None:
        super()._setup_model()
        if getattr(self, "value_baseline", False) == HISTORY:
            normalize_images = self.policy.normalize_images  # images as the policy sees them
            baseline = HistoryBaseline(self.observation_space, normalize_images=normalize_images)
            self.history_baseline = baseline.to(self.device)
            saved = self.__dict__.pop("history_baseline_state", None)  # SB3's load put the save's data here
            if saved is not None:
                self.history_baseline.load_saved_state(saved)

    def _excluded_save_params(self) -> list[str]:
        # The history baseline travels in the save's data (history_baseline_state), not among its torch state
        # dicts, so that SB3's loaders of the save, which have no such module, still load it.
        return [*super()._excluded_save_params(), "history_baseline"]

    def get_parameters(self) -> dict[str, dict]:
        """SB3's ``get_parameters``; with ``value_baseline="history"`` also the baseline's network (with its
        statistics) and optimizer (:data:`HISTORY_PARAMETERS`), as SB3's holds every network an algorithm trains, so
        that ``set_parameters`` of the dict gives the same baseline and so the same next update. A save holds them in
        its data instead (:meth:`save`). SB3's own ``set_parameters`` (``PPO``'s) takes SB3's entries only:
        ``{name: params[name] for name in ("policy", "policy.optimizer")}``."""
        params = super().get_parameters()
        baseline = getattr(self, "history_baseline", None)
        if baseline is not None:
            params[HISTORY_PARAMETERS[0]] = baseline.state_dict()
            params[HISTORY_PARAMETERS[1]] = baseline.optimizer.state_dict()
        return params

    def save(self, path: Any, exclude: Any = None, include: Any = None) -> None:
        """SB3's ``save``; with ``value_baseline="history"`` the baseline (network, optimizer, statistics) too, in the
        save's data: SB3's ``save`` writes ``get_parameters()`` as the file's state dicts, which SB3's loaders restore
        name by name, so the baseline is lent away while it runs."""
        baseline = getattr(self, "history_baseline", None)
        lent: dict[str, Any] = {}
        if baseline is not None:
            self.history_baseline_state = baseline.saved_state()
            lent["history_baseline"] = None
        try:
            with lent_attributes(self, **lent):
                super().save(path, exclude, include)
        finally:
            self.__dict__.pop("history_baseline_state", None)

    def set_parameters(
        self,
        load_path_or_dict: str | pathlib.Path | io.BufferedIOBase | dict[str, Any],
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        """SB3's ``set_parameters``; also the history baseline (network, statistics and optimizer), where the
        parameters and this model both have one, as SB3's restores every network its algorithm trains (PPO's critic
        with its policy): from a save (a path or file object) out of its data, from a dict (``get_parameters``) out of
        its :data:`HISTORY_PARAMETERS` entries (a dict without them, an SB3 model's, sets the policy alone). Parameters
        with a history baseline set into a model without one raise ``ValueError`` at ``exact_match=True``, as SB3's
        does for a name the model lacks; ``exact_match=False`` sets the policy alone."""
        if isinstance(load_path_or_dict, dict):
            params = dict(load_path_or_dict)
            module, optimizer = (params.pop(name, None) for name in HISTORY_PARAMETERS)
            self._check_history_parameters(module is not None or optimizer is not None, exact_match)
            super().set_parameters(params, exact_match, device)
            baseline = getattr(self, "history_baseline", None)
            if baseline is not None and module is not None:
                baseline.load_state_dict(module, strict=exact_match)
            if baseline is not None and optimizer is not None:
                baseline.optimizer.load_state_dict(optimizer)
            return
        data, params, _ = load_from_zip_file(load_path_or_dict, device=device)
        saved = (data or {}).get("history_baseline_state")
        self._check_history_parameters(saved is not None, exact_match)
        super().set_parameters(params, exact_match, device)
        baseline = getattr(self, "history_baseline", None)
        if saved is not None and baseline is not None:
            baseline.load_saved_state(saved)

    def _check_history_parameters(self, has_history: bool, exact_match: bool) -> None:
        """``ValueError`` for parameters with a history baseline (``has_history``) set at ``exact_match`` into a model
        without one, which would drop the trained baseline."""
        if exact_match and has_history and getattr(self, "history_baseline", None) is None:
            raise ValueError(
                "The parameters hold a history baseline (value_baseline='history') that this model, built with "
                f"value_baseline={getattr(self, 'value_baseline', False)!r}, does not have: build it with "
                "value_baseline='history' to restore it, or pass exact_match=False to set the policy alone"
            )

    def hparams(self) -> dict[str, Any]:
        values = super().hparams()
        # One type per HParams column: "state" (True), "history" or "none" (False).
        baseline = getattr(self, "value_baseline", False)
        values["value_baseline"] = {True: "state", False: "none"}.get(baseline, baseline)
        values["baseline_lambda"] = getattr(self, "baseline_lambda", 1.0)
        return values

    def _compute_advantages(self) -> None:
        """The episode weights of every step (:meth:`EpisodicAlgorithmMixin._compute_advantages`) over the
        ``value_baseline``: ``V(s_t)`` (``True``; the weights become the value head's regression targets) or the
        history baseline ``b(s_t, t, G_<t)`` (``"history"``, fitted to this rollout's weights once they are used),
        as the ``baseline_lambda``-returns of the weights."""
        super()._compute_advantages()
        baseline = getattr(self, "value_baseline", False)  # absent from saves before 0.2
        if not baseline:
            return
        buffer = self.rollout_buffer
        buffer.returns = buffer.advantages.copy()
        if baseline is True:
            buffer.values = predict_values(self.policy, buffer.observations)
        else:
            so_far = returns_before(
                discounted_rewards(buffer.rewards, buffer.episode_step, self.gamma), buffer.episode_index
            )
            history = self.history_baseline
            # Predict before this rollout enters anything (the standardization included): the baseline of a step
            # must not depend on the actions it credits.
            features = history.features(buffer.observations, buffer.episode_step, so_far)
            buffer.values = history.predict(features)
            # Out of sample (predicted before this rollout is fitted), as SB3's train/explained_variance of a critic:
            # at or below 0 the baseline adds as much variance to the advantages as it removes.
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # weights all but tied: var ~ 1e-300
                fit_quality = explained_variance(buffer.values, buffer.returns)
            if np.isfinite(fit_quality):  # nan when every weight ties (nothing to explain), inf when nearly
                self.logger.record("train/baseline_explained_variance", float(fit_quality))
            features = history.updated(features, buffer.episode_step, so_far)
            self.logger.record("train/baseline_loss", history.fit(features, buffer.returns))
        if getattr(self, "_rollout_tied_at_best", False):
            # A rollout that ranks nothing (every episode tied at the best return seen) keeps its advantages, its
            # weights, all zero: its estimate of the objective's gradient is zero. The baseline's terms, zero only in
            # expectation, would be the whole update, a random step of a converged policy (see ``value_baseline``).
            return
        lam = getattr(self, "baseline_lambda", 1.0)
        buffer.advantages = lambda_advantages(buffer.returns, buffer.values, buffer.episode_index, lam).astype(
            np.float32
        )
