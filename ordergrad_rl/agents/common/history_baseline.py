"""A baseline of the history for ranked objectives: ``b(s_t, t, G_<t) ~ E[w | s_t, t, G_<t]``.

The episode weight ``w_i`` of a ranked objective (CVaR, a quantile ...) depends on where the whole return lands in
the batch, and what decides that at step ``t`` is the state *and the return collected so far* ``G_<t =
sum_{u<t} gamma^u r_u``: the accumulated return is the state that Bauerle and Ott (2011) add to solve CVaR MDPs,
and on an env with a time limit the step ``t`` says how much can still change. A baseline of the state alone,
``V(s_t)`` (``value_baseline=True``), cannot tell an episode that has already collected enough to leave the tail
from one that has not; this one can, so the steps after an episode's rank is decided get less credit.

It stays unbiased: ``s_t``, ``t`` and ``G_<t`` are all known before the action ``a_t`` is drawn, so
``E[grad log pi(a_t | s_t) b(s_t, t, G_<t)] = 0``, as for any baseline of the history up to ``s_t`` (Williams 1992;
the policy itself still sees ``s_t`` only). The network is a small MLP of its own, with its own Adam optimizer,
fitted by regression on the weights of each rollout *after* that rollout's advantages are computed (so a rollout is
never its own baseline; the standardization is updated after the prediction too), on the preprocessed observation
(SB3's ``preprocess_obs``: one-hot for discrete, images scaled to [0, 1] unless the policy's ``normalize_images`` is
``False``, as the policy sees them) and ``t``, ``G_<t`` standardized by SB3's ``RunningMeanStd``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_flattened_obs_dim, preprocess_obs
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn

#: ``value_baseline="history"`` selects this baseline.
HISTORY = "history"
#: Hidden layers of the baseline network (SB3's default MLP widths).
NET_ARCH: tuple[int, ...] = (64, 64)
#: Adam's learning rate for the baseline (fixed before measuring, not tuned; the benchmark runs used it).
LEARNING_RATE = 1e-3
#: Passes over each rollout when fitting, as PPO's ``n_epochs``.
N_EPOCHS = 10
#: Minibatch size of the fit, in steps.
BATCH_SIZE = 256
#: Steps preprocessed at a time: a rollout of image observations is not flattened whole (16,000 Atari frames would
#: take 1.3 GB as float32).
CHUNK_STEPS = 1024


def flat_observations(observations: Any, observation_space: spaces.Space, normalize_images: bool = True) -> th.Tensor:
    """``[T, D]`` float32: SB3's ``preprocess_obs`` of each sub-observation, flattened and concatenated.

    :param normalize_images: scale image observations to [0, 1], as SB3's policies do with their
        ``normalize_images`` (pass the policy's).
    """
    if isinstance(observation_space, spaces.Dict):
        parts = [
            flat_observations(observations[key], space, normalize_images)
            for key, space in observation_space.spaces.items()
        ]
        return th.cat(parts, dim=1)
    tensor = th.as_tensor(np.asarray(observations))
    processed = preprocess_obs(tensor, observation_space, normalize_images=normalize_images)
    assert isinstance(processed, th.Tensor)  # SB3 returns a dict for a Dict space only, split above
    return processed.reshape(len(tensor), -1).float()


def observation_rows(observations: Any, rows: slice) -> Any:
    """The stored observations ``observations[rows]`` (``[T, ...]``, or a dict of such: each key's rows)."""
    if isinstance(observations, dict):
        return {key: np.asarray(value)[rows] for key, value in observations.items()}
    return np.asarray(observations)[rows]


def _flat_dim(observation_space: spaces.Space) -> int:
    """Width of :func:`flat_observations`' rows."""
    if isinstance(observation_space, spaces.Dict):
        return sum(_flat_dim(space) for space in observation_space.spaces.values())
    return get_flattened_obs_dim(observation_space)


class HistoryBaseline(nn.Module):
    """``b(s_t, t, G_<t)``, the expected episode weight given the history's sufficient part (module docstring).

    :param observation_space: the env's observation space (any SB3 supports; a ``Dict`` is flattened key by key).
    :param net_arch: hidden layer widths.
    :param learning_rate: Adam's learning rate.
    :param n_epochs: passes over each rollout per fit.
    :param batch_size: minibatch size of the fit.
    :param normalize_images: scale image observations to [0, 1] (:func:`flat_observations`): the policy's
        ``normalize_images``.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        net_arch: Sequence[int] = NET_ARCH,
        learning_rate: float = LEARNING_RATE,
        n_epochs: int = N_EPOCHS,
        batch_size: int = BATCH_SIZE,
        normalize_images: bool = True,
    ) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.normalize_images = normalize_images
        self.n_epochs, self.batch_size = n_epochs, batch_size
        width = _flat_dim(observation_space) + 2
        layers: list[nn.Module] = []
        for size in net_arch:
            layers += [nn.Linear(width, size), nn.Tanh()]
            width = size
        self.net = nn.Sequential(*layers, nn.Linear(width, 1))
        self.optimizer = th.optim.Adam(self.parameters(), lr=learning_rate)
        # (t, G_<t) standardization; saved with the module (get_extra_state).
        self.history_rms = RunningMeanStd(shape=(2,))

    def features(
        self, observations: Any, episode_step: np.ndarray, return_so_far: np.ndarray, update: bool = False
    ) -> th.Tensor:
        """``[T, D + 2]`` inputs: the flattened observation, ``t`` and ``G_<t`` standardized.

        :param observations: ``[T, ...]`` stored observations (or a dict of them).
        :param episode_step: ``[T]`` step ``t`` of each within its episode.
        :param return_so_far: ``[T]`` ``G_<t`` (:func:`~ordergrad_rl.agents.common.advantages.returns_before`).
        :param update: first fold this rollout's ``(t, G_<t)`` into the running mean and variance.
        """
        device = next(self.parameters()).device
        n_steps = len(episode_step)
        # Filled in place, CHUNK_STEPS rows of observations at a time: the flattened rollout is never held twice.
        features = th.empty((n_steps, _flat_dim(self.observation_space) + 2), dtype=th.float32, device=device)
        for start in range(0, n_steps, CHUNK_STEPS):
            rows = slice(start, start + CHUNK_STEPS)
            block = observation_rows(observations, rows)
            features[rows, :-2] = flat_observations(block, self.observation_space, self.normalize_images)
        features[:, -2:] = self._history_columns(episode_step, return_so_far, update)
        return features

    def updated(self, features: th.Tensor, episode_step: np.ndarray, return_so_far: np.ndarray) -> th.Tensor:
        """``features`` of the same steps after folding their ``(t, G_<t)`` into the running statistics: what
        ``features(..., update=True)`` gives, without flattening the observations again (its ``(t, G_<t)`` columns
        are overwritten in place)."""
        features[:, -2:] = self._history_columns(episode_step, return_so_far, True)
        return features

    def _history_columns(self, episode_step: np.ndarray, return_so_far: np.ndarray, update: bool) -> th.Tensor:
        """``[T, 2]`` standardized ``(t, G_<t)``, after folding them into the statistics if ``update``."""
        history = np.stack([np.asarray(episode_step, dtype=np.float64), np.asarray(return_so_far)], axis=1)
        if update:
            self.history_rms.update(history)
        history = (history - self.history_rms.mean) / np.sqrt(self.history_rms.var + 1e-8)
        return th.as_tensor(history, dtype=th.float32).to(next(self.parameters()).device)

    def forward(self, features: th.Tensor) -> th.Tensor:
        """``[T]`` baseline values."""
        return self.net(features).squeeze(-1)

    def predict(self, features: th.Tensor) -> np.ndarray:
        """``[T]`` float32 baseline values, without gradients."""
        with th.no_grad():
            return self(features).cpu().numpy().astype(np.float32)

    def fit(self, features: th.Tensor, targets: np.ndarray) -> float:
        """Regress the baseline on ``targets`` (``[T]`` episode weights of the steps): ``n_epochs`` passes of
        shuffled minibatches; returns the last pass's mean squared error."""
        targets_t = th.as_tensor(targets, dtype=th.float32, device=features.device)
        losses: list[float] = []
        for _ in range(self.n_epochs):
            losses = []
            for rows in th.randperm(len(targets_t), device=features.device).split(self.batch_size):
                loss = ((self(features[rows]) - targets_t[rows]) ** 2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                losses.append(loss.item())
        return float(np.mean(losses))

    def saved_state(self) -> bytes:
        """Everything :meth:`load_saved_state` restores (the network with its statistics, and Adam's state), written
        by ``torch.save``: the model's save pickles it, and tensors pickled on a GPU do not unpickle on a machine
        without one, where ``torch.load`` maps them to the baseline's device."""
        buffer = io.BytesIO()
        th.save({"module": self.state_dict(), "optimizer": self.optimizer.state_dict()}, buffer)
        return buffer.getvalue()

    def load_saved_state(self, state: bytes | dict[str, Any]) -> None:
        """Restore :meth:`saved_state` (or the dict of tensors that saves before it hold)."""
        saved: dict[str, Any] = (
            th.load(io.BytesIO(state), map_location=next(self.parameters()).device)
            if isinstance(state, bytes)
            else state
        )
        self.load_state_dict(saved["module"])
        self.optimizer.load_state_dict(saved["optimizer"])

    def get_extra_state(self) -> dict[str, Any]:
        """The running statistics of ``(t, G_<t)`` go into ``state_dict`` (and so into the model's save)."""
        rms = self.history_rms
        return {"mean": th.as_tensor(rms.mean), "var": th.as_tensor(rms.var), "count": float(rms.count)}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.history_rms.mean = state["mean"].cpu().numpy().astype(np.float64)
        self.history_rms.var = state["var"].cpu().numpy().astype(np.float64)
        self.history_rms.count = float(state["count"])
