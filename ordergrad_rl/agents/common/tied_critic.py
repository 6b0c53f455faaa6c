"""A discounted critic for the rollouts that rank nothing: OrderGradPPO's ``critic_when_tied``.

A rollout whose episodes all return the best return seen ties every rank, so every weight of an L-statistic is
zero and the episodic update has no gradient there. A policy that reaches a task's best return (CartPole-v1's
500-step limit) then stops moving at whatever width it had, and a later rollout with a rare failure flips many of
its actions (docs/benchmarks.md, "CartPole-v1 at 100k: rollouts tied at the limit"). SB3's PPO keeps sharpening
there on its critic's per-step advantages, which are not zero: the states from which earlier rollouts failed have
lower values. With ``critic_when_tied`` the episodic PPO does the same: the policy's value head is fitted after
every rollout to the GAE returns of the per-step rewards (:data:`TIED_CRITIC_GAMMA`, the model's ``gae_lambda``),
and a rollout tied at the best return seen trains on the critic's GAE advantages, standardized, in place of its
zero weights. Every other rollout trains exactly as without it: the fit moves the critic's own parameters only
(the value head, its hidden layers and, where it is not shared, its features extractor), with minibatches drawn
from a generator of their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import explained_variance, obs_as_tensor

from ordergrad_rl.agents.common.advantages import episode_order, gae_advantages
from ordergrad_rl.agents.common.policies import predict_values

#: The critic's discount: SB3 PPO's default. The episode return's own ``gamma`` (1 by default) would make the value of
#: a state on a time-limited task depend on the time left, which the observation does not show.
TIED_CRITIC_GAMMA = 0.99


def critic_parameters(policy: ActorCriticPolicy) -> list[th.nn.Parameter]:
    """The parameters only the critic uses: the value head, the value branch of SB3's ``MlpExtractor``
    (``mlp_extractor.value_net``) and, where the features extractor is not shared, the critic's own
    (``vf_features_extractor``). A shared extractor stays the actor's (the fit reads its features without
    gradients)."""
    modules = [policy.value_net, getattr(policy.mlp_extractor, "value_net", None)]
    if not policy.share_features_extractor:
        modules.append(policy.vf_features_extractor)
    return [parameter for module in modules if module is not None for parameter in module.parameters()]


def critic_values(policy: ActorCriticPolicy, obs: th.Tensor | dict[str, th.Tensor]) -> th.Tensor:
    """``V(s)`` ``[batch]`` of observations as tensors, with gradients to :func:`critic_parameters` only."""
    if policy.share_features_extractor:
        with th.no_grad():
            features = policy.extract_features(obs, policy.features_extractor)
    else:
        features = policy.extract_features(obs, policy.vf_features_extractor)
    assert isinstance(features, th.Tensor)  # one extractor's features (SB3 types the pair of both too)
    return policy.value_net(policy.mlp_extractor.forward_critic(features)).flatten()


def fit_critic(
    policy: ActorCriticPolicy,
    observations: np.ndarray | dict[str, np.ndarray],
    targets: np.ndarray,
    n_epochs: int,
    batch_size: int,
    rng: np.random.Generator,
) -> float:
    """Regress the critic on ``targets`` (``[T]``, mean squared error) with the policy's optimizer, ``n_epochs``
    passes of shuffled minibatches of ``batch_size`` steps: only :func:`critic_parameters` get gradients, so the
    optimizer's step leaves the actor and its optimizer state as they were, and every parameter's ``grad`` is left
    as the update left it.

    :return: the last minibatch's loss.
    """
    parameters = critic_parameters(policy)
    optimizer = policy.optimizer
    # The update's gradients, as SB3's train leaves them (inspected after learn, as SB3's are), set back after the fit.
    update_gradients = [(parameter, parameter.grad) for parameter in policy.parameters()]
    target = th.as_tensor(targets, dtype=th.float32, device=policy.device)
    loss = th.zeros(())
    for _ in range(n_epochs):
        permutation = rng.permutation(len(target))
        for start in range(0, len(target), batch_size):
            rows = permutation[start : start + batch_size]
            # Moved to the device a minibatch at a time, as SB3's buffer does (a rollout of images may not fit).
            batch = (
                {key: value[rows] for key, value in observations.items()}
                if isinstance(observations, dict)
                else (observations[rows])
            )
            obs = obs_as_tensor(batch, policy.device)  # type: ignore[arg-type]  # a dict of arrays too
            loss = th.nn.functional.mse_loss(critic_values(policy, obs), target[th.as_tensor(rows)])
            # Every other gradient cleared, so that the step moves the critic only.
            optimizer.zero_grad(set_to_none=True)
            for parameter, gradient in zip(parameters, th.autograd.grad(loss, parameters), strict=True):
                parameter.grad = gradient
            optimizer.step()
    for parameter, update_gradient in update_gradients:
        # torch types the setter as a Tensor, the getter as Tensor | None: a None read back is set back.
        parameter.grad = update_gradient  # type: ignore[assignment]
    return float(loss.detach())


class TiedCriticMixin:
    """``critic_when_tied`` of an episodic PPO (module docstring): :meth:`_tied_critic_advantages` runs at the end of
    the rollout's ``_compute_advantages``, :meth:`_fit_tied_critic` after its update."""

    critic_when_tied: bool
    gae_lambda: float
    n_epochs: int
    batch_size: int
    num_timesteps: int
    seed: int | None
    policy: ActorCriticPolicy
    rollout_buffer: Any
    logger: Any

    def _tied_critic_advantages(self) -> None:
        """The critic's GAE targets of this rollout (its values predicted before the rollout is fitted, as SB3's
        are at collection); on a rollout tied at the best return seen, not blind to success (where
        ``novelty_when_blind`` acts) and not drawn by the noise sampler (its GAE would need the draws' likelihood
        ratios), the standardized GAE advantages replace the zero weights."""
        self._critic_targets = None
        if not self.critic_when_tied:
            return
        buffer = self.rollout_buffer
        values = predict_values(self.policy, buffer.observations)
        order, last = episode_order(buffer.episode_index)
        last_step = np.zeros(len(buffer.episode_time_outs), dtype=np.float64)
        last_step[buffer.episode_index[order][last]] = values[order][last]
        # A time-out's next state is not stored: the value of its last state stands in for it, one step apart.
        bootstrap = np.where(buffer.episode_time_outs, last_step, 0.0)
        advantages = gae_advantages(
            buffer.rewards, values, buffer.episode_index, bootstrap, TIED_CRITIC_GAMMA, self.gae_lambda
        )
        self._critic_targets = (advantages + values).astype(np.float32)
        self._critic_explained_variance = float(explained_variance(values, self._critic_targets))
        tied = getattr(self, "_rollout_tied_at_best", False) and not getattr(self, "_rollout_blind", False)
        self._rollout_critic_trained = bool(tied and getattr(self, "_rollout_noise_weights", None) is None)
        if self._rollout_critic_trained:
            buffer.advantages = ((advantages - advantages.mean()) / (advantages.std() + 1e-8)).astype(np.float32)

    def _fit_tied_critic(self) -> None:
        """After the rollout's update: fit the critic to its targets (:func:`fit_critic`, with a generator of the
        model's seed and step count, so that a resumed run draws what an unbroken one does), and log
        ``train/value_loss``, ``train/explained_variance`` (of the values it predicted for the rollout) and
        ``train/tied_critic`` (1 where the rollout trained on the critic's advantages)."""
        targets = getattr(self, "_critic_targets", None)
        if targets is None:
            return
        rng = np.random.default_rng([abs(self.seed or 0), self.num_timesteps])
        loss = fit_critic(self.policy, self.rollout_buffer.observations, targets, self.n_epochs, self.batch_size, rng)
        self.logger.record("train/value_loss", loss)
        self.logger.record("train/explained_variance", self._critic_explained_variance)
        self.logger.record("train/tied_critic", float(self._rollout_critic_trained))
        self._critic_targets = None
