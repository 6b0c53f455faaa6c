"""Batched sampling of TargetSum answers from a policy, and the pass@k evaluation built on it.

Every sample is one episode of the native vector env's batch (:class:`~ordergrad_rl.envs.target_sum.TargetSumBatch`
of :class:`~ordergrad_rl.envs.target_sum.TargetSumVectorEnv`), posed its problem at reset and scored by the env's
verifier; the policy acts on all unfinished answers at once, with its own action distribution (temperature 1, no
nucleus truncation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy

from ordergrad_rl.envs.target_sum import EOS, PROMPT_LENGTH, TargetSumVectorEnv
from ordergrad_rl.passk import pass_at_k_curve
from ordergrad_rl.reasoning.base_model import actor_logits
from ordergrad_rl.reasoning.token_gru import TokenGRUExtractor


def sample_answers(
    policy: ActorCriticPolicy,
    problem_ids: Any,
    n_samples: int,
    *,
    split: str = "test",
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    batch_size: int = 16384,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_samples`` answers of ``policy`` to each problem of ``problem_ids``.

    A policy whose trunk is a :class:`~ordergrad_rl.reasoning.token_gru.TokenGRUExtractor` is run incrementally
    (the prompt is read once, then one GRU step per token; same distribution up to float rounding, measured 5x faster);
    any other SB3 actor-critic policy re-reads the observation at every step.

    :param policy: an SB3 actor-critic policy for ``TargetSum-v0`` observations (e.g. ``model.policy``).
    :param problem_ids: ``[P]`` problem indices of the split.
    :param n_samples: answers per problem.
    :param split: the problem split.
    :param env_kwargs: other ``TargetSum-v0`` arguments (problem set, ``max_answer_length``).
    :param seed: seed of the token sampling (a local torch generator: the global one is untouched).
    :param batch_size: episodes run side by side.
    :return: ``success [P, n_samples]`` (bool, the verifier's verdicts) and ``lengths [P, n_samples]`` (answer tokens,
        ``<eos>`` included).
    :raises ValueError: ``n_samples`` is no integer >= 1.
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}")
    ids = np.repeat(np.asarray(problem_ids, dtype=np.int64), n_samples)
    success = np.zeros(len(ids), dtype=bool)
    lengths = np.zeros(len(ids), dtype=np.int64)
    generator = th.Generator().manual_seed(seed)
    extractor = policy.pi_features_extractor
    gru = extractor if isinstance(extractor, TokenGRUExtractor) else None  # decodes the answer token by token
    for start in range(0, len(ids), batch_size):
        chunk = slice(start, min(start + batch_size, len(ids)))
        # The vector env's batch steps only the unfinished answers (no autoreset of the finished ones).
        batch = TargetSumVectorEnv(chunk.stop - chunk.start, split=split, **(env_kwargs or {})).batch
        obs = batch.reset(np.arange(batch.num_envs), ids[chunk])
        rows = np.arange(batch.num_envs)  # the unfinished answers
        with th.no_grad():
            if gru is not None:
                features, state = gru.decode_start(th.as_tensor(obs[:, :PROMPT_LENGTH], device=policy.device))
            while rows.size:
                if gru is not None:
                    logits = actor_logits(policy, features)
                else:
                    # SB3 types a Distribution's distribution as one or a list; TargetSum's is one Categorical.
                    distribution = policy.get_distribution(th.as_tensor(obs[rows], device=policy.device)).distribution
                    logits = distribution.logits  # type: ignore[union-attr]
                actions = np.full(batch.num_envs, EOS, dtype=np.int64)
                actions[rows] = th.multinomial(logits.softmax(dim=-1).cpu(), 1, generator=generator)[:, 0].numpy()
                obs, reward, terminated, truncated, _ = batch.step(actions, rows)
                ended = (terminated | truncated)[rows]
                success[chunk][rows[ended]] = reward[rows[ended]] > 0
                lengths[chunk][rows[ended]] = batch.length[rows[ended]]
                rows = rows[~ended]
                if gru is not None and rows.size:
                    keep = th.as_tensor(~ended, device=policy.device)
                    written = obs[rows, PROMPT_LENGTH + batch.length[rows] - 1]  # the env's code of the new token
                    state = (state[0][:, keep], state[1][keep])
                    features, state = gru.decode_step(state, th.as_tensor(written, device=policy.device))
    return success.reshape(-1, n_samples), lengths.reshape(-1, n_samples)


def evaluate_pass_at_k(
    policy: ActorCriticPolicy,
    n_samples: int = 1024,
    *,
    split: str = "test",
    problem_ids: Any = None,
    ks: Any = None,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """pass@k of ``policy`` on a TargetSum split, and the lengths of its right and wrong answers.

    :param policy: an SB3 actor-critic policy for ``TargetSum-v0`` observations (e.g. ``model.policy``).
    :param n_samples: answers per problem (the paper uses 1024).
    :param split: the problem split (``"train"`` or ``"test"``).
    :param problem_ids: problems to evaluate (default: the whole split).
    :param ks: subset sizes (default ``1, 2, 4, ..., <= n_samples``).
    :param env_kwargs: other ``TargetSum-v0`` arguments (problem set, ``max_answer_length``).
    :param seed: seed of the token sampling (a local torch generator: the global one is untouched).
    :return: JSON-ready dict: ``pass_at_k`` (``{k: mean over problems}``), ``n_correct`` (per problem),
        ``mean_length_correct``, ``mean_length_incorrect`` (tokens), ``length_counts_correct`` and
        ``length_counts_incorrect`` (answers of each length ``0 .. max_answer_length``), ``n_samples``.
    """
    if problem_ids is None:
        problem_ids = np.arange(len(TargetSumVectorEnv(1, split=split, **(env_kwargs or {})).problems))
    success, lengths = sample_answers(policy, problem_ids, n_samples, split=split, env_kwargs=env_kwargs, seed=seed)
    return pass_at_k_report(success, lengths, ks)


def pass_at_k_report(success: np.ndarray, lengths: np.ndarray, ks: Any = None) -> dict[str, Any]:
    """The JSON-ready report of :func:`evaluate_pass_at_k` from sampled answers.

    :param success: ``[problems, n_samples]`` bool, whether each answer is correct.
    :param lengths: ``[problems, n_samples]`` answer lengths in tokens.
    :param ks: subset sizes (default ``1, 2, 4, ..., <= n_samples``).
    """
    n_samples = success.shape[1]
    n_correct = success.sum(axis=1)
    bins = int(lengths.max()) + 1

    def mean(values: np.ndarray) -> float | None:
        return float(values.mean()) if values.size else None

    return {
        "n_samples": n_samples,
        "pass_at_k": {int(k): v for k, v in pass_at_k_curve(n_correct, n_samples, ks).items()},
        "n_correct": n_correct.tolist(),
        "mean_length_correct": mean(lengths[success]),
        "mean_length_incorrect": mean(lengths[~success]),
        "length_counts_correct": np.bincount(lengths[success], minlength=bins).tolist(),
        "length_counts_incorrect": np.bincount(lengths[~success], minlength=bins).tolist(),
    }
