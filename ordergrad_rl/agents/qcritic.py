"""Q-critic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` (paper appendix "RL Experiments", Algorithm 1).

Per step rather than per episode: the rollout is SB3's (``n_steps`` per env in a ``RolloutBuffer``), and every
state's advantage is an order-statistic advantage *over the action distribution*, in the known-(r, p) regime
(paper App. D), with a learned per-action critic ``Q(s, .)``:

1. SB3 collects the rollout and computes lambda-returns ``R^lambda_t`` by GAE, bootstrapping with
   ``V(s) = sum_a pi(a|s) Q(s, a)`` (the Q policy's ``predict_values``). A truncated episode (``TimeLimit``)
   bootstraps from the value of its final observation, a terminated one from 0, as SB3 does for timeouts.
2. ``q_t = Q(s_t, .)`` and ``pi_t = pi(.|s_t)`` are the collector's own network outputs, recorded while acting
   (:meth:`~ordergrad_rl.agents.policies.OrderGradPolicyMixin.recording_q_values`).
3. ``q~_t`` = ``q_t`` with the sampled action's entry replaced by ``R^lambda_t``; the advantage of step ``t`` is
   ``A_t = k * abar_{a_t}(q~_t, pi_t)`` from **one** :func:`~ordergrad_rl.core.known_lstat_advantage` call over
   all states of the rollout (``k * abar`` is the policy-gradient weight of eq. app-known-lr-gradient).
4. SB3's ``PPO.train`` runs unchanged: the clipped surrogate on ``A_t`` (centred and scaled per minibatch when
   ``normalize_advantage``, as SB3 and pgx's PPO do), and the "value" loss on ``Q(s_t, a_t)`` (what the Q policy's
   ``evaluate_actions`` returns) against ``R^lambda_t``: the Q loss, weighted by ``vf_coef``.

With ``objective="mean"`` (k = 1) the advantage is ``q~_t(a_t) - sum_b pi_t(b) q~_t(b)``: the PPO-Q baseline with
the same network and critic, so a comparison with Top-M@K isolates the objective.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.checks import FiniteStepCheckVecEnv, check_finite_step
from ordergrad_rl.agents.episodic import EPISODIC, EpisodicAlgorithmMixin
from ordergrad_rl.agents.policies import Q_CRITIC_POLICIES, OrderGradPolicyMixin
from ordergrad_rl.agents.risk_logging import TRAIN_PREFIX, record_risk_profile
from ordergrad_rl.core import Objective, known_lstat_advantage
from ordergrad_rl.core.objectives import ObjectiveLike

#: The advantage mode implemented here.
Q_CRITIC = "q_critic"
#: States per forward pass when the whole rollout is re-evaluated (bounds the activations' memory).
_EVAL_CHUNK = 16_384


def q_critic_advantages(
    q: th.Tensor,
    probs: th.Tensor,
    actions: th.Tensor,
    returns: th.Tensor,
    objective: Objective,
) -> th.Tensor:
    """Per-step OrderGrad advantages of the sampled actions, ``A_t = k * abar_{a_t}(q~_t, pi_t)``.

    ``q~_t`` is ``q_t`` with entry ``a_t`` replaced by ``R^lambda_t``; ``abar`` is the exact known-(r, p) advantage
    (paper eq. app-adv-known) of the bound ``objective``, computed for all ``T`` states in one batched call (in
    float64: the binomial tables of a large ``k`` lose digits in float32).

    :param q: critic values ``Q(s_t, .)``, ``[T, |A|]``.
    :param probs: policy probabilities ``pi(.|s_t)``, ``[T, |A|]``.
    :param actions: sampled actions ``[T]`` (integers).
    :param returns: lambda-returns ``R^lambda_t``, ``[T]``.
    :param objective: a bound :class:`~ordergrad_rl.core.Objective` (``k`` = number of action draws).
    :return: ``[T]`` advantages, dtype of ``q``.
    """
    index = actions.long().reshape(-1, 1)
    q_tilde = q.double().scatter(-1, index, returns.double().reshape(-1, 1))
    abar = known_lstat_advantage(q_tilde, probs.double(), objective)
    return (objective.k * abar.gather(-1, index).squeeze(-1)).to(q.dtype)  # type: ignore[operator]


def _flat_steps(array: np.ndarray) -> np.ndarray:
    """``[n_steps, n_envs, *shape]`` -> ``[n_steps * n_envs, *shape]`` (a view, step-major like the buffer)."""
    return array.reshape(-1, *array.shape[2:])


class QCriticMixin:
    """Adds ``advantage="q_critic"`` to an :class:`~ordergrad_rl.agents.episodic.EpisodicAlgorithmMixin` algorithm.

    Mix in front of it (``class OrderGradPPO(QCriticMixin, EpisodicAlgorithmMixin, PPO)``). Each overridden method
    defers to the episodic mixin in the other modes; in Q-critic mode it skips the episodic mixin and runs SB3's
    step-based machinery (``OnPolicyAlgorithm.collect_rollouts``, ``RolloutBuffer``, GAE), then fills the buffer's
    advantages with :func:`q_critic_advantages` (hook :meth:`_compute_advantages`). The mode is the ``advantage``
    attribute, so ``save``/``load`` keep it.

    After the advantages are computed, the buffer's ``values`` hold ``Q(s_t, a_t)`` of the collecting policy (the
    prediction the Q loss regresses), so ``clip_range_vf`` and ``train/explained_variance`` refer to the Q head.
    """

    advantages: tuple[str, ...] = (EPISODIC, Q_CRITIC)

    # Provided by SB3 and the episodic mixin.
    advantage: str
    action_space: spaces.Space
    policy_class: type
    policy_kwargs: dict[str, Any]
    rollout_buffer: RolloutBuffer
    rollout_buffer_class: type | None
    normalize_advantage: bool

    def _sb3(self) -> Any:
        """The SB3 algorithm behind the episodic mixin (``PPO``): Q-critic mode uses its methods directly."""
        return super(EpisodicAlgorithmMixin, self)

    def _init_episodic(
        self,
        objective: ObjectiveLike,
        k: int | None,
        n_episodes: int | None,
        normalize_advantage: bool,
        advantage: str = "episodic",
        reward_to_go: bool | None = None,
        group_size: int | None = None,
    ) -> None:
        """In Q-critic mode: check the arguments and set ``objective``, ``k``, ``advantage`` (``n_episodes`` None).

        :raises ValueError: a non-``Discrete`` action space, an objective without its number of action draws
            ``k``, ``n_episodes`` given, ``gamma`` outside (0, 1], or ``policy_kwargs["critic"]`` other than ``"q"``.
        """
        if advantage != Q_CRITIC:
            super()._init_episodic(  # type: ignore[misc]
                objective, k, n_episodes, normalize_advantage, advantage, reward_to_go, group_size=group_size
            )
            return
        if group_size is not None or normalize_advantage in ("group", "channel"):
            raise ValueError(
                "group_size and normalize_advantage='group' or 'channel' are for advantage='episodic' (groups of "
                "episodes); Q-critic mode ranks action draws per state"
            )
        if reward_to_go:
            raise ValueError("reward_to_go is for advantage='episodic'; Q-critic mode uses SB3's lambda-returns")
        self._check_discrete()
        if n_episodes is not None:
            raise ValueError(
                "advantage='q_critic' collects n_steps steps per env (SB3's rollout); n_episodes is for "
                "advantage='episodic'"
            )
        parsed = Objective.parse(objective, k)
        if not parsed.is_bound:
            raise ValueError(
                f"advantage='q_critic' needs the number of action draws k of {str(parsed)!r}: write it in the spec "
                "(e.g. 'top9@10') or pass k"
            )
        self._check_policy_critic(advantage, ("q",))  # type: ignore[attr-defined]
        self._set_objective(parsed)  # type: ignore[attr-defined]
        self.n_episodes = None
        self.reward_to_go = False
        self.normalize_advantage = bool(normalize_advantage)
        self.advantage = advantage

    def _check_discrete(self) -> None:
        if self.action_space is not None and not isinstance(self.action_space, spaces.Discrete):
            raise ValueError(
                f"advantage='q_critic' needs a Discrete action space (one Q-value per action), got "
                f"{self.action_space}; use advantage='episodic' for other action spaces"
            )

    def _setup_model(self) -> None:
        if self.advantage != Q_CRITIC:
            super()._setup_model()  # type: ignore[misc]
            return
        self._restore_objective()  # type: ignore[attr-defined]
        self._check_discrete()
        if not (isinstance(self.policy_class, type) and issubclass(self.policy_class, OrderGradPolicyMixin)):
            raise ValueError(
                f"policy {self.policy_class!r} has no Q critic: use 'MlpPolicy', 'CnnPolicy', 'MultiInputPolicy' or "
                "a subclass of ordergrad_rl.agents.policies.OrderGradPolicyMixin"
            )
        buffer_class = self.rollout_buffer_class
        if buffer_class is not None and not issubclass(buffer_class, (RolloutBuffer, DictRolloutBuffer)):
            raise ValueError(
                f"advantage='q_critic' uses SB3's step-based rollouts: rollout_buffer_class must subclass "
                f"RolloutBuffer or DictRolloutBuffer, got {buffer_class}"
            )
        self._rollout_episode_returns: list[float] = []
        self._collected_q: list[tuple[th.Tensor, th.Tensor]] = []
        # The policy is built with the Q head; the stored policy_kwargs stay the user's (SB3's load compares them),
        # and the alias classes become their Q-critic versions, so a save loads into SB3's PPO with its Q head.
        self.policy_class = Q_CRITIC_POLICIES.get(self.policy_class, self.policy_class)
        user_kwargs = self.policy_kwargs
        self.policy_kwargs = {**user_kwargs, "critic": "q"}
        try:
            self._sb3()._setup_model()
        finally:
            self.policy_kwargs = user_kwargs

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_rollout_episode_returns", "_collected_q"]  # type: ignore[misc]

    # ------------------------------------------------------------------ collection
    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,  # type: ignore[override]
        n_rollout_steps: int,
    ) -> bool:
        """Q-critic mode: SB3's step-based collection (lambda-returns included), then the OrderGrad advantages.

        :return: False if a callback stopped training.
        """
        if self.advantage != Q_CRITIC:
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)  # type: ignore[misc]
        self._rollout_episode_returns = []
        check_finite_step(self._last_obs, None, "at the start of a rollout (the reset observation)")
        checked = FiniteStepCheckVecEnv(env, lambda: self.num_timesteps)  # type: ignore[attr-defined]
        with self.policy.recording_q_values() as records:  # type: ignore[attr-defined]
            if not self._sb3().collect_rollouts(checked, callback, rollout_buffer, n_rollout_steps):
                return False
        # The collector's own Q(s, .) and pi(.|s), one record per step: no second pass over the rollout.
        self._collected_q = records
        self._compute_advantages()
        self._record_rollout_logs()
        return True

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        super()._update_info_buffer(infos, dones)  # type: ignore[misc]
        if self.advantage == Q_CRITIC:
            # Monitor's (undiscounted) returns of the episodes finished in this rollout, for the risk/ profile.
            self._rollout_episode_returns.extend(
                float(info["episode"]["r"]) for info in infos if info.get("episode") is not None
            )

    # ------------------------------------------------------------------ hooks
    def _rollout_q_values(self) -> tuple[th.Tensor, th.Tensor]:
        """``Q(s_t, .)`` and ``pi(.|s_t)`` of the rollout's states, ``[n_steps * n_envs, |A|]`` step-major: the
        collector's records if complete, else one batched pass of the network over the buffer."""
        buffer = self.rollout_buffer
        records, self._collected_q = self._collected_q, []
        if len(records) == buffer.buffer_size:
            n_actions = records[0][0].shape[-1]
            return (
                th.stack([q for q, _ in records]).reshape(-1, n_actions),
                th.stack([p for _, p in records]).reshape(-1, n_actions),
            )
        n_states = buffer.buffer_size * buffer.n_envs
        q_chunks, prob_chunks = [], []
        with th.no_grad():
            for start in range(0, n_states, _EVAL_CHUNK):
                chunk = slice(start, start + _EVAL_CHUNK)
                if isinstance(buffer.observations, dict):
                    obs: Any = {key: _flat_steps(value)[chunk] for key, value in buffer.observations.items()}
                else:
                    obs = _flat_steps(buffer.observations)[chunk]
                q, distribution = self.policy.q_values(obs_as_tensor(obs, self.device))  # type: ignore[attr-defined]
                q_chunks.append(q)
                prob_chunks.append(distribution.distribution.probs)
        return th.cat(q_chunks), th.cat(prob_chunks)

    def _compute_advantages(self) -> None:
        """Q-critic mode: ``advantages`` <- :func:`q_critic_advantages`, ``values`` <- ``Q(s_t, a_t)``."""
        if self.advantage != Q_CRITIC:
            super()._compute_advantages()  # type: ignore[misc]
            return
        buffer = self.rollout_buffer
        shape = buffer.returns.shape  # [n_steps, n_envs]
        q, probs = self._rollout_q_values()
        actions = th.as_tensor(buffer.actions.reshape(-1), device=q.device).long()
        returns = th.as_tensor(buffer.returns.reshape(-1), device=q.device)
        advantages = q_critic_advantages(q, probs, actions, returns, self.objective)
        buffer.advantages[:] = advantages.reshape(shape).cpu().numpy()
        buffer.values[:] = q.gather(-1, actions[:, None]).reshape(shape).cpu().numpy()
        entropy = -(probs * th.log(probs.clamp_min(1e-12))).sum(-1)
        self._rollout_entropy = float(entropy.mean())

    def _record_rollout_logs(self) -> None:
        """Q-critic mode: ``rollout/entropy`` (mean policy entropy over the rollout's states) and ``risk/*`` of the
        returns of the episodes finished during the rollout (none if no episode ended or the env has no
        ``Monitor``)."""
        if self.advantage != Q_CRITIC:
            super()._record_rollout_logs()  # type: ignore[misc]
            return
        logger = self.logger  # type: ignore[attr-defined]
        logger.record("rollout/entropy", self._rollout_entropy)
        if self._rollout_episode_returns:
            record_risk_profile(logger, TRAIN_PREFIX, np.asarray(self._rollout_episode_returns))
