"""Old path of :mod:`ordergrad_rl.agents.common.buffers`; it exists for saves of release 0.1.0 whose
``rollout_buffer_class`` is pickled as ``ordergrad_rl.agents.buffers.<class>`` (a subclass passed by the user keeps
its own path). Re-exports only."""

from ordergrad_rl.agents.common.buffers import EPISODIC_BUFFER_KEYS, MAX_EPISODE_STEPS, EpisodicRolloutBuffer

__all__ = ["EPISODIC_BUFFER_KEYS", "MAX_EPISODE_STEPS", "EpisodicRolloutBuffer"]
