"""Stable-Baselines3-compatible OrderGrad agents, laid out as SB3 and sb3-contrib lay out theirs: one folder per
algorithm (``reinforce/``, ``ppo/``, ``ppo_recurrent/``, ``ppo_mask/``, ``ppo_q_critic/``, ``qrdqn_cvar/``: the class,
its policies and buffer) on the shared machinery of ``common/``.

* :class:`OrderGradREINFORCE`, :class:`OrderGradPPO` — SB3 algorithms whose advantages are OrderGrad weights of an
  order-statistic objective of the episode return, collected as complete i.i.d. episodes;
* :class:`OrderGradRecurrentPPO`, :class:`OrderGradMaskablePPO` — the same on sb3-contrib's RecurrentPPO (LSTM
  policies) and MaskablePPO (invalid-action masks);
* :class:`QRDQNCVaR` — peer baseline: sb3-contrib's QR-DQN acting greedily on the CVaR of its quantiles (per step);
  the GCVaR peer is ``objective="gcvar<a>"`` of the episodic agents (:mod:`ordergrad_rl.core.gcvar`);
* :class:`OrderGradQCriticPPO` (also ``OrderGradPPO(advantage="q_critic")``) — per-state known-regime advantages with
  a per-action Q critic (paper Algorithm 1); :class:`GridCNN` is the small MinAtar trunk;
* :mod:`~ordergrad_rl.agents.common.policies` — ``MlpPolicy`` / ``CnnPolicy`` / ``MultiInputPolicy`` with the options
  ``learn_log_std`` and ``zero_init_action_net``;
* :class:`RiskEvalCallback` — periodic evaluation logging ``eval_risk/*``; :class:`PassAtKEvalCallback` — the pass@k
  curve of sampled episodes per context (``eval_pass@k/*``), :mod:`~ordergrad_rl.agents.common.callbacks`;
* :mod:`~ordergrad_rl.agents.common.groups` — ``group_size=G``: episodes in groups sharing a start context (GRPO /
  MaxPO / prompt-conditional OrderGrad); :class:`ChannelObjective` — one objective per reward channel
  (:mod:`~ordergrad_rl.core.channels`);
* :mod:`~ordergrad_rl.agents.common.risk_logging` — the ``risk/*`` tags and the TensorBoard custom-scalars layout.
"""

from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer
from ordergrad_rl.agents.common.callbacks import PassAtKEvalCallback, RiskEvalCallback
from ordergrad_rl.agents.common.entropy_plateau import EntropyPlateau
from ordergrad_rl.agents.common.episodic import EpisodicAlgorithmMixin
from ordergrad_rl.agents.common.evaluation import EpisodeInfoAggregator, sample_successes
from ordergrad_rl.agents.common.policies import (
    CnnPolicy,
    MlpPolicy,
    MultiInputPolicy,
    OrderGradActorCriticCnnPolicy,
    OrderGradActorCriticPolicy,
    OrderGradMultiInputPolicy,
    OrderGradPolicyMixin,
)
from ordergrad_rl.agents.common.risk_logging import record_risk_profile, risk_layout, write_risk_layout
from ordergrad_rl.agents.common.torch_layers import GridCNN
from ordergrad_rl.agents.ppo import OrderGradPPO
from ordergrad_rl.agents.ppo_mask import OrderGradMaskablePPO
from ordergrad_rl.agents.ppo_q_critic import OrderGradQCriticPPO, QCriticMixin, q_critic_advantages
from ordergrad_rl.agents.ppo_recurrent import OrderGradRecurrentPPO
from ordergrad_rl.agents.qrdqn_cvar import QRDQNCVaR
from ordergrad_rl.agents.reinforce import OrderGradREINFORCE
from ordergrad_rl.core.channels import Channel, ChannelObjective

__all__ = [
    "Channel",
    "ChannelObjective",
    "CnnPolicy",
    "EpisodeInfoAggregator",
    "EntropyPlateau",
    "EpisodicAlgorithmMixin",
    "EpisodicRolloutBuffer",
    "GridCNN",
    "MlpPolicy",
    "MultiInputPolicy",
    "OrderGradActorCriticCnnPolicy",
    "OrderGradActorCriticPolicy",
    "OrderGradMaskablePPO",
    "OrderGradMultiInputPolicy",
    "OrderGradPPO",
    "OrderGradPolicyMixin",
    "OrderGradQCriticPPO",
    "OrderGradREINFORCE",
    "OrderGradRecurrentPPO",
    "PassAtKEvalCallback",
    "QCriticMixin",
    "QRDQNCVaR",
    "RiskEvalCallback",
    "q_critic_advantages",
    "record_risk_profile",
    "risk_layout",
    "sample_successes",
    "write_risk_layout",
]
