"""The episodic rollout buffer of sb3-contrib's MaskablePPO update: minibatches of steps with their action masks.

:class:`~ordergrad_rl.agents.common.buffers.EpisodicRolloutBuffer` (the same episode quota, returns and weights) whose
minibatches carry the action masks the collector stored (``extras["action_masks"]``), as
``MaskableRolloutBufferSamples``.
"""

from __future__ import annotations

import numpy as np
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBufferSamples, MaskableRolloutBufferSamples
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer

#: The ``extras`` key of the action masks.
ACTION_MASKS = "action_masks"


class MaskableEpisodicRolloutBuffer(EpisodicRolloutBuffer):
    """:class:`EpisodicRolloutBuffer` whose minibatches carry the stored action masks (``None`` if the collector
    stored none, i.e. ``learn(use_masking=False)``)."""

    def _get_samples(  # type: ignore[override]
        self, batch_inds: np.ndarray, env: VecNormalize | None = None
    ) -> MaskableRolloutBufferSamples | MaskableDictRolloutBufferSamples:
        samples = super()._get_samples(batch_inds, env)
        masks = self.extras.get(ACTION_MASKS)
        action_masks = None if masks is None else self.to_torch(masks[batch_inds])
        # sb3-contrib types action_masks a Tensor; its MaskablePPO update takes None (no masking) as well.
        if isinstance(samples, DictRolloutBufferSamples):
            return MaskableDictRolloutBufferSamples(*samples, action_masks)  # type: ignore[arg-type]
        return MaskableRolloutBufferSamples(*samples, action_masks)  # type: ignore[arg-type]
