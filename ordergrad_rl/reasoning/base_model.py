"""The TargetSum "base model": a small autoregressive policy pre-trained by imitating imperfect demonstrations.

:func:`build_base_model` builds it deterministically in code (no download): student demonstrations on the train
split (:mod:`ordergrad_rl.reasoning.demonstrations`), then supervised learning (cross-entropy on the next token) of an
SB3 actor-critic policy whose trunk is a :class:`~ordergrad_rl.reasoning.token_gru.TokenGRUExtractor`. The weights
are cached on disk, keyed on the build configuration, the seed and the package version. RL agents start from it::

    from ordergrad_rl import OrderGradPPO
    from ordergrad_rl.reasoning import build_base_model, load_base_policy

    base = build_base_model()  # about a minute the first time, then read from the cache
    model = OrderGradPPO("MlpPolicy", "TargetSum-v0", policy_kwargs=base.policy_kwargs, ...)
    load_base_policy(model, base)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy

from ordergrad_rl.envs.target_sum import N_TOKENS, PROMPT_LENGTH, TargetSumEnv, target_sum_problems
from ordergrad_rl.reasoning.demonstrations import StudentConfig, demonstrations
from ordergrad_rl.reasoning.token_gru import TokenGRUExtractor
from ordergrad_rl.version import __version__

#: Bumped when the cache file layout or the build procedure changes without a config change.
CACHE_FORMAT = 1
#: The actor modules that make up the base model (the value head is not part of it).
ACTOR_MODULES: tuple[str, ...] = (
    "features_extractor",
    "pi_features_extractor",
    "mlp_extractor.policy_net",
    "action_net",
)


@dataclasses.dataclass(frozen=True)
class BaseModelConfig:
    """How the base model is built. Every field enters the cache key.

    The defaults were chosen on the test split's base-model profile and build time alone (before any RL run):
    8 epochs over 20 demonstrations per train problem is where the imitation loss flattens (1.465 then 1.457 nats
    per token in the last two epochs), in about a minute on one thread of this machine.

    :param problem_seed: seed of the TargetSum problem set (``TargetSum-v0``'s ``problem_seed``).
    :param n_train: train problems (demonstrations are drawn on them).
    :param n_test: test problems (not used for training; part of the problem set's definition).
    :param max_answer_length: answer tokens before truncation (``TargetSum-v0``'s ``max_answer_length``).
    :param student: the simulated student that writes the demonstrations.
    :param demos_per_problem: demonstrations per train problem.
    :param embed_dim: token embedding width of the GRU.
    :param hidden_dim: GRU and bag width (the policy's features are twice as wide).
    :param pi_dim: width of the actor's hidden layer (``net_arch=dict(pi=[pi_dim], vf=[])``).
    :param epochs: passes over the demonstrations.
    :param batch_size: demonstrations per gradient step.
    :param learning_rate: peak learning rate of the one-cycle Adam schedule.
    """

    problem_seed: int = 0
    n_train: int = 2000
    n_test: int = 100
    max_answer_length: int = 16
    student: StudentConfig = dataclasses.field(default_factory=StudentConfig)
    demos_per_problem: int = 20
    embed_dim: int = 32
    hidden_dim: int = 64
    pi_dim: int = 64
    epochs: int = 8
    batch_size: int = 256
    learning_rate: float = 3e-3

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``TargetSum-v0`` keyword arguments of the problem set this model was built for."""
        return {
            "problem_seed": self.problem_seed,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "max_answer_length": self.max_answer_length,
        }

    @property
    def policy_kwargs(self) -> dict[str, Any]:
        """SB3 ``policy_kwargs`` of the base model's architecture (give them to the agent that loads it)."""
        return {
            "features_extractor_class": TokenGRUExtractor,
            "features_extractor_kwargs": {"embed_dim": self.embed_dim, "hidden_dim": self.hidden_dim},
            "net_arch": {"pi": [self.pi_dim], "vf": []},
        }


@dataclasses.dataclass
class BaseModel:
    """A built base model.

    :param policy: the SB3 policy (CPU, eval mode); its actor is the base model.
    :param config: how it was built.
    :param seed: the build seed.
    :param history: mean imitation loss (nats per answer token) of each epoch.
    :param build_seconds: wall time of the build that produced the weights (also when read from the cache).
    :param cache_path: where the weights are cached (``None`` if caching was off).
    """

    policy: ActorCriticPolicy
    config: BaseModelConfig
    seed: int
    history: list[float]
    build_seconds: float
    cache_path: Path | None = None

    @property
    def policy_kwargs(self) -> dict[str, Any]:
        """SB3 ``policy_kwargs`` for agents that load this base model (see :func:`load_base_policy`)."""
        return self.config.policy_kwargs

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``TargetSum-v0`` keyword arguments of the problem set the model was built for."""
        return self.config.env_kwargs


def default_cache_dir() -> Path:
    """``$ORDERGRAD_RL_CACHE``, else ``$XDG_CACHE_HOME/ordergrad-rl``, else ``~/.cache/ordergrad-rl``."""
    if os.environ.get("ORDERGRAD_RL_CACHE"):
        return Path(os.environ["ORDERGRAD_RL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ordergrad-rl"


def cache_key(config: Any, seed: int) -> str:
    """Hex digest of a build configuration (a dataclass), the seed, the package version and the cache format."""
    payload = {
        "config": dataclasses.asdict(config),
        "seed": seed,
        "version": __version__,
        "format": CACHE_FORMAT,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block (deterministic and as specified), then restore the setting."""
    previous = th.get_num_threads()
    th.set_num_threads(1)
    try:
        yield
    finally:
        th.set_num_threads(previous)


def make_policy(config: BaseModelConfig) -> ActorCriticPolicy:
    """An untrained SB3 policy with the base model's architecture, on CPU (uses torch's global generator)."""
    env = TargetSumEnv(**config.env_kwargs)
    return ActorCriticPolicy(
        env.observation_space, env.action_space, lambda _: config.learning_rate, **config.policy_kwargs
    ).to("cpu")


def actor_logits(policy: ActorCriticPolicy, features: th.Tensor) -> th.Tensor:
    """Next-token logits from features ``[..., features_dim]`` (the actor head of the policy)."""
    return policy.action_net(policy.mlp_extractor.forward_actor(features))


def _train(policy: ActorCriticPolicy, config: BaseModelConfig, seed: int) -> list[float]:
    """Imitation learning on fresh student demonstrations; returns the mean loss of each epoch."""
    problems = target_sum_problems("train", config.problem_seed, config.n_train, config.n_test)
    rng = np.random.default_rng([seed, 1])
    ids, answers, lengths = demonstrations(
        problems, config.demos_per_problem, config.max_answer_length, rng, config.student
    )
    # The whole answer as one observation: with a causal trunk, the features at position PROMPT_LENGTH - 1 + t are
    # those of the observation before token t, whose target is token t.
    written = np.arange(config.max_answer_length) < lengths[:, None]
    codes = np.concatenate([problems.prompts[ids], np.where(written, N_TOKENS + answers, 0)], axis=1)
    targets = np.where(written, answers, -100)
    codes_t, targets_t = th.as_tensor(codes), th.as_tensor(targets)

    optimizer = th.optim.Adam(policy.parameters(), lr=config.learning_rate)
    steps_per_epoch = -(-len(codes) // config.batch_size)
    schedule = th.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=config.learning_rate, total_steps=config.epochs * steps_per_epoch
    )
    generator = th.Generator().manual_seed(seed)
    extractor: TokenGRUExtractor = policy.features_extractor  # type: ignore[assignment]
    history = []
    policy.train()
    for _ in range(config.epochs):
        order, total = th.randperm(len(codes), generator=generator), 0.0
        for start in range(0, len(codes), config.batch_size):
            batch = order[start : start + config.batch_size]
            features = extractor.sequence_features(codes_t[batch])[:, PROMPT_LENGTH - 1 : -1]
            logits = actor_logits(policy, features)
            loss = th.nn.functional.cross_entropy(logits.flatten(0, 1), targets_t[batch].flatten(), ignore_index=-100)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(batch)
        history.append(total / len(codes))
    policy.eval()
    return history


def build_base_model(
    config: BaseModelConfig | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
) -> BaseModel:
    """The TargetSum base model for ``config`` and ``seed``: built on one thread, deterministically, or read from
    the cache.

    :param config: build configuration (default :class:`BaseModelConfig`).
    :param seed: seed of the initialization, the demonstrations and the batch order.
    :param cache_dir: cache directory (default :func:`default_cache_dir`).
    :param use_cache: read and write the cache; ``False`` always builds and writes nothing.
    :return: the base model (``build_seconds`` is the original build's time when read from the cache).
    """
    config = config or BaseModelConfig()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    seed = int(seed)
    path = (
        Path(cache_dir or default_cache_dir()) / f"targetsum-base-{cache_key(config, seed)}.pt" if use_cache else None
    )
    with one_thread(), th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        policy = make_policy(config)
        if path is not None and path.exists():
            saved = th.load(path, weights_only=True)
            policy.load_state_dict(saved["state_dict"])
            policy.eval()
            return BaseModel(policy, config, seed, saved["history"], saved["build_seconds"], path)
        start = time.perf_counter()
        history = _train(policy, config, seed)
        seconds = time.perf_counter() - start
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        th.save({"state_dict": policy.state_dict(), "history": history, "build_seconds": seconds}, partial)
        partial.replace(path)  # atomic: a concurrent reader never sees half a file
    return BaseModel(policy, config, seed, history, seconds, path)


def load_base_policy(model: BaseAlgorithm | ActorCriticPolicy, base: BaseModel) -> None:
    """Copy the base model's actor into an agent's policy: features extractor, actor layers and action head.

    The value branch (a critic's own layers and head, if any) is left as it is. With a features extractor shared by
    actor and critic (SB3's default), the shared extractor gets the base weights. The agent must have been built with
    ``policy_kwargs=base.policy_kwargs`` (extra policy options such as ``critic`` are fine).

    :param model: an SB3 algorithm (e.g. ``OrderGradPPO``) or its policy.
    :param base: the output of :func:`build_base_model`.
    :raises ValueError: the policy's actor does not have the base model's architecture.
    """
    policy = model.policy if isinstance(model, BaseAlgorithm) else model
    for name in ACTOR_MODULES:
        source, target = base.policy.get_submodule(name), policy.get_submodule(name)
        want = {key: tuple(value.shape) for key, value in source.state_dict().items()}
        got = {key: tuple(value.shape) for key, value in target.state_dict().items()}
        if type(source) is not type(target) or want != got:
            raise ValueError(
                f"policy.{name} does not match the base model ({type(target).__name__} {got} vs "
                f"{type(source).__name__} {want}); build the agent with policy_kwargs=base.policy_kwargs"
            )
    with th.no_grad():
        for name in ACTOR_MODULES:
            target = policy.get_submodule(name)
            target.load_state_dict(base.policy.get_submodule(name).state_dict())
