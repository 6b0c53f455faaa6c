"""sb3-contrib's recurrent (LSTM) actor-critic policies with the OrderGrad policy options.

``OrderGradRecurrentPPO``'s ``"MlpLstmPolicy"`` / ``"CnnLstmPolicy"`` / ``"MultiInputLstmPolicy"`` resolve to the
classes below. They accept everything sb3-contrib's policies accept plus ``learn_log_std`` and
``zero_init_action_net`` (see :mod:`ordergrad_rl.agents.common.policies`). ``critic`` is set by the algorithm:
``"none"`` in episodic mode, where ``evaluate_actions`` returns zero values without running a value branch (and no
critic LSTM is built: ``enable_critic_lstm=False``, ``shared_lstm=True``); ``"value"`` gives sb3-contrib's behaviour.
The per-action Q critic (``"q"``) is OrderGradQCriticPPO's only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import (
    RecurrentActorCriticCnnPolicy,
    RecurrentActorCriticPolicy,
    RecurrentMultiInputActorCriticPolicy,
)
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import Schedule

from ordergrad_rl.agents.common.policies import OrderGradPolicyMixin, refuse_q_critic


class OrderGradRecurrentPolicy(OrderGradPolicyMixin, RecurrentActorCriticPolicy):
    """sb3-contrib's ``RecurrentActorCriticPolicy`` (``"MlpLstmPolicy"``) with the OrderGrad options.

    With ``critic="none"`` only the actor LSTM exists (the critic options ``enable_critic_lstm`` / ``shared_lstm`` are
    set accordingly) and :meth:`evaluate_actions` runs the actor only. Untrained parts remain: SB3's ``value_net``,
    and with ``share_features_extractor=False`` a second features extractor and sb3-contrib's feed-forward ``critic``
    layer, which :meth:`forward` runs (:class:`~ordergrad_rl.agents.OrderGradRecurrentPPO`'s ``policy``).
    sb3-contrib names its feed-forward critic module ``critic``, so the critic kind is ``critic_kind`` here.
    """

    policy_alias = "MlpLstmPolicy"
    #: sb3-contrib's feed-forward critic module (``None`` without one), not the mixin's critic kind (a ``str``).
    critic: Any

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Schedule, **kwargs):
        refuse_q_critic(kwargs, type(self).__name__)
        critic_kind = kwargs.get("critic", "value")
        if critic_kind == "none":
            # A critic LSTM would be dead weight; the shared one needs a shared features extractor.
            kwargs.update(enable_critic_lstm=False, shared_lstm=kwargs.get("share_features_extractor", True))
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)
        self.critic_kind = critic_kind  # sb3-contrib's constructor has replaced ``critic`` by its module (or None)

    def _build(self, lr_schedule: Schedule) -> None:
        # SB3 sizes the features of a MultiDiscrete observation with a NumPy integer (the sum of its nvec), which the
        # LSTM that sb3-contrib builds next refuses ("input_size should be of type int"); SB3's MLPs take either.
        self.features_dim = int(self.features_dim)
        super()._build(lr_schedule)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        """SB3's, with the LSTM's options, which sb3-contrib's policy leaves out (so ``policy.save`` then
        ``OrderGradRecurrentPolicy.load`` rebuilt the default 256-unit LSTM and failed in ``load_state_dict``), and
        the critic kind."""
        return {
            **super()._get_constructor_parameters(),
            "lstm_hidden_size": self.lstm_output_dim,
            "n_lstm_layers": self.lstm_hidden_state_shape[0],
            "shared_lstm": self.shared_lstm,
            "enable_critic_lstm": self.enable_critic_lstm,
            "lstm_kwargs": self.lstm_kwargs,
            "critic": self.critic_kind,
        }

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """torch's ``load_state_dict``; ``ValueError`` naming the cause where this policy has a critic and a strict
        ``state_dict`` has none: the parameters of episodic mode (``critic="none"``), which sb3-contrib's
        ``RecurrentPPO.load`` (or SB3's ``PPO.load``) of an OrderGradRecurrentPPO save gives a policy with a critic."""
        critic = [name for name in self.state_dict() if name.startswith(("lstm_critic.", "critic."))]
        if strict and critic and not any(name in state_dict for name in critic):
            raise ValueError(
                "these policy parameters have no critic (they are an OrderGradRecurrentPPO save's: episodic mode "
                f"builds and trains none), but this {type(self).__name__} has one ({critic[0]} ...), so an algorithm "
                "with a critic (sb3-contrib's RecurrentPPO, SB3's PPO) cannot load them: load the save with "
                "ordergrad_rl.OrderGradRecurrentPPO.load"
            )
        return super().load_state_dict(state_dict, strict, assign)

    # sb3-contrib's recurrent signatures (LSTM states, episode starts), not the feed-forward ones of the mixin: they
    # override SB3's the same way (sb3-contrib's own "type: ignore[override]").
    forward = RecurrentActorCriticPolicy.forward  # type: ignore[assignment]
    predict_values = RecurrentActorCriticPolicy.predict_values  # type: ignore[assignment]

    def evaluate_actions(  # type: ignore[override]
        self, obs: th.Tensor, actions: th.Tensor, lstm_states: RNNStates, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """Values, log-likelihoods and entropies of ``actions`` along padded sequences ``[n_seq * max_len, ...]``
        (sb3-contrib's contract); with ``critic="none"`` the values are zeros ``[n_seq * max_len, 1]``."""
        if self.critic_kind != "none":
            return RecurrentActorCriticPolicy.evaluate_actions(self, obs, actions, lstm_states, episode_starts)
        hidden, cell = lstm_states.pi  # sb3-contrib's RNNStates types them tuple[Tensor, ...]
        distribution, _ = self.get_distribution(obs, (hidden, cell), episode_starts)
        log_prob = distribution.log_prob(actions)
        return log_prob.new_zeros((log_prob.shape[0], 1)), log_prob, distribution.entropy()


class OrderGradRecurrentCnnPolicy(OrderGradRecurrentPolicy, RecurrentActorCriticCnnPolicy):
    """sb3-contrib's ``RecurrentActorCriticCnnPolicy`` (``"CnnLstmPolicy"``) with the OrderGrad options."""

    policy_alias = "CnnLstmPolicy"


class OrderGradRecurrentMultiInputPolicy(OrderGradRecurrentPolicy, RecurrentMultiInputActorCriticPolicy):
    """sb3-contrib's ``RecurrentMultiInputActorCriticPolicy`` (``"MultiInputLstmPolicy"``) with the OrderGrad
    options."""

    policy_alias = "MultiInputLstmPolicy"


RECURRENT_POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpLstmPolicy": OrderGradRecurrentPolicy,
    "CnnLstmPolicy": OrderGradRecurrentCnnPolicy,
    "MultiInputLstmPolicy": OrderGradRecurrentMultiInputPolicy,
}

MlpLstmPolicy = OrderGradRecurrentPolicy
CnnLstmPolicy = OrderGradRecurrentCnnPolicy
MultiInputLstmPolicy = OrderGradRecurrentMultiInputPolicy
