"""Feature extractors for the OrderGrad policies.

:class:`GridCNN` is the small convolutional trunk of pgx's MinAtar PPO (the paper's appendix "RL Experiments",
network architecture): one 2x2 convolution, ReLU, 2x2 average pooling, and a dense layer with ReLU. Use it with
any SB3 actor-critic policy::

    policy_kwargs = dict(features_extractor_class=GridCNN, net_arch=dict(pi=[64, 64], vf=[64, 64]))

SB3's ``NatureCNN`` needs images of at least 36x36 pixels in ``uint8``; MinAtar's observations are 10x10xC grids of
0/1 channels.
"""

from __future__ import annotations

import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class GridCNN(BaseFeaturesExtractor):
    """2x2 ``Conv2d(C, n_filters)`` with "same" padding -> ReLU -> ``AvgPool2d(2)`` -> flatten -> Linear -> ReLU.

    "same" padding of an even kernel: one zero row/column at the bottom/right, as Flax's ``Conv`` does in pgx.

    :param observation_space: ``Box`` of shape ``(H, W, C)`` (``channels_last``, MinAtar's layout) or ``(C, H, W)``.
    :param features_dim: width of the dense layer (the latent state shared by the actor and critic heads).
    :param n_filters: convolution channels.
    :param channels_last: whether the channel axis is the last one.
    :raises ValueError: the space is not a 3-D ``Box``, or its grid is smaller than 2x2.
    """

    def __init__(
        self,
        observation_space: spaces.Box,
        features_dim: int = 64,
        n_filters: int = 32,
        channels_last: bool = True,
    ) -> None:
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 3:
            raise ValueError(f"GridCNN needs a 3-D Box observation space, got {observation_space}")
        super().__init__(observation_space, features_dim)
        shape = observation_space.shape
        height, width, channels = shape if channels_last else (shape[1], shape[2], shape[0])
        if height < 2 or width < 2:
            layout = "(H, W, C)" if channels_last else "(C, H, W)"
            raise ValueError(
                f"GridCNN pools 2x2 cells: it needs a grid of at least 2x2, got {height}x{width} (observation shape "
                f"{shape} read as {layout}; set channels_last for the other layout)"
            )
        self.channels_last = channels_last
        self.cnn = th.nn.Sequential(
            # Explicit padding: torch's padding="same" with an even kernel copies the input and warns.
            th.nn.ZeroPad2d((0, 1, 0, 1)),
            th.nn.Conv2d(channels, n_filters, kernel_size=2),
            th.nn.ReLU(),
            th.nn.AvgPool2d(2),
            th.nn.Flatten(),
        )
        n_flat = n_filters * (height // 2) * (width // 2)
        self.linear = th.nn.Sequential(th.nn.Linear(n_flat, features_dim), th.nn.ReLU())

    def forward(self, observations: th.Tensor) -> th.Tensor:
        if self.channels_last:
            observations = observations.permute(0, 3, 1, 2)
        return self.linear(self.cnn(observations))
