"""Old path of the sb3-contrib episodic buffers (:mod:`ordergrad_rl.agents.ppo_recurrent.buffers`,
:mod:`ordergrad_rl.agents.ppo_mask.buffers`); it exists for saves of release 0.1.0, which pickle
``ordergrad_rl.agents.contrib_buffers.<class>`` as their ``rollout_buffer_class``. Re-exports only."""

from ordergrad_rl.agents.ppo_mask.buffers import ACTION_MASKS, MaskableEpisodicRolloutBuffer
from ordergrad_rl.agents.ppo_recurrent.buffers import RecurrentEpisodicRolloutBuffer

__all__ = ["ACTION_MASKS", "MaskableEpisodicRolloutBuffer", "RecurrentEpisodicRolloutBuffer"]
