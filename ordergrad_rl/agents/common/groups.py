"""Prompt-conditional groups: ``G`` episodes that share a start context and are otherwise independent.

The paper's LLM experiments rank the rollouts of one prompt against each other (8 per prompt). In an episodic rollout
with ``group_size=G``, episode ``j`` (the buffer's numbering, see :mod:`ordergrad_rl.agents.common.buffers`) belongs
to group ``j // G``; at the start of a rollout the agent draws one context per group, and every env that starts a
counted episode is reset into its group's context. Members of a group are then conditionally i.i.d. given the
context, so the core's ``[n_groups, G]`` advantages give an unbiased gradient of the context-averaged objective.

How an env's episode is put in a context, for any Gymnasium env (checked once per env by :class:`GroupResetter`):

* **options rule** (envs that separate the context from the noise opt in): the env has the attributes
  ``context_key`` (a reset-option name) and ``n_contexts`` (an int). A group's context is ``c ~ U{0 .. n_contexts-1}``
  and its members are reset with ``reset(options={context_key: c})``; nothing else is shared. ``TargetSum-v0`` has
  ``context_key = "problem"``.
* **seed rule** (every other env): the members are reset with one shared seed, ``reset(seed=s_g)``, so they get the
  same start state; then each env gets back the generator it had before that reset (``env.unwrapped.np_random``,
  seeded ``seed + i`` by SB3), so the dynamics of every member run on its own env's stream, independent of the other
  members and of the context. Contexts are then start states drawn from the env's own reset distribution. The rule
  assumes the env draws its start state at reset and the rest of its randomness while stepping: whatever an env draws
  at reset is shared by the group (``SyntheticTailRisk-v0`` draws its whole market path at reset, so its groups share
  the path), and an env whose reset draws from other sources than ``np_random`` cannot be grouped this way (a member
  whose start observation differs from the one its group's seed gave before is warned about, once). Such envs
  should separate context from noise and declare ``context_key``.

Per-env resets go through SB3's ``VecEnv.env_method("reset", ...)`` (``DummyVecEnv``, ``SubprocVecEnv``) or the native
batch's :meth:`~ordergrad_rl.envs.sb3_vec_env.NativeVecEnv.reset_envs`. VecEnv wrappers must not transform
observations, except ``VecNormalize`` (its ``normalize_obs`` is applied) and ``VecTransposeImage`` (its transpose is
applied; SB3 wraps channel-last image envs in it itself); ``VecMonitor`` is fine.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    VecEnv,
    VecEnvWrapper,
    VecMonitor,
    VecNormalize,
    VecTransposeImage,
)

from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.common.warning_util import user_stacklevel
from ordergrad_rl.envs.sb3_vec_env import NativeVecEnv

#: Env attribute naming the reset option that poses a context (options rule).
CONTEXT_KEY = "context_key"
#: Env attribute: the number of contexts (contexts are ``0 .. n_contexts - 1``).
N_CONTEXTS = "n_contexts"
OPTIONS_RULE, SEED_RULE = "options", "seed"
_SEED_BOUND = 2**31 - 1
#: Seed rule: how many member starts are compared with their group's first start (those of the first rollouts; an
#: env whose start does not follow its seed shows it at once), before the checks stop costing reset time.
CHECKED_STARTS = 64


def check_group_size(group_size: int | None, n_episodes: int) -> int | None:
    """``group_size`` as an int (or ``None``), or a ``ValueError``: at least 2 and dividing ``n_episodes``."""
    if group_size is None:
        return None
    group_size = check_int("group_size", group_size, 2)
    if n_episodes % group_size:
        raise ValueError(
            f"n_episodes={n_episodes} is not a multiple of group_size={group_size}: a rollout is n_groups * "
            f"group_size episodes (e.g. n_episodes={-(-n_episodes // group_size) * group_size})"
        )
    return group_size


def group_normalize(weights: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Each group's weights divided by that group's standard deviation (``ddof=0``; + ``eps``).

    :param weights: ``[n_groups, G]``.
    """
    return weights / (weights.std(axis=-1, keepdims=True) + eps)


def _wrappers(venv: VecEnv) -> tuple[list[VecEnvWrapper], VecEnv]:
    chain = []
    while isinstance(venv, VecEnvWrapper):
        chain.append(venv)
        venv = venv.venv
    return chain, venv


class GroupResetter:
    """Resets chosen envs of a VecEnv into chosen contexts (see the module docstring for the two rules).

    :param venv: the training VecEnv.
    :param rng: the agent's generator of contexts.
    :raises ValueError: a VecEnv wrapper that transforms observations, or an env with ``context_key`` but no
        ``n_contexts``.
    """

    def __init__(self, venv: VecEnv, rng: np.random.Generator) -> None:
        chain, base = _wrappers(venv)
        for wrapper in chain:
            if not isinstance(wrapper, VecMonitor | VecNormalize | VecTransposeImage):
                raise ValueError(
                    f"group_size needs per-env resets, which bypass VecEnv wrappers; {type(wrapper).__name__} "
                    "transforms observations (only VecMonitor, VecNormalize and VecTransposeImage are supported): "
                    "apply it inside the env (a gymnasium wrapper) instead"
                )
        self.venv = venv
        self.base = base
        self.native = base if isinstance(base, NativeVecEnv) else None
        # The wrappers' transforms of one env's observation, innermost first, as the VecEnv's own reset applies them.
        self.transforms = [
            wrapper.normalize_obs if isinstance(wrapper, VecNormalize) else wrapper.transpose_observations
            for wrapper in reversed(chain)
            if isinstance(wrapper, VecNormalize | VecTransposeImage)
        ]
        self.rng = rng
        declared = venv.has_attr(CONTEXT_KEY)
        if declared and not venv.has_attr(N_CONTEXTS):
            raise ValueError(
                f"the env declares {CONTEXT_KEY}={venv.get_attr(CONTEXT_KEY, indices=[0])[0]!r} but no {N_CONTEXTS}: "
                f"the options rule draws a group's context from 0 .. {N_CONTEXTS} - 1, so give the env an "
                f"{N_CONTEXTS} attribute (or remove {CONTEXT_KEY} to share a reset seed instead)"
            )
        if declared:
            self.rule = OPTIONS_RULE
            self.key: str | None = str(venv.get_attr(CONTEXT_KEY, indices=[0])[0])
            self.n_contexts: int | None = check_int(N_CONTEXTS, venv.get_attr(N_CONTEXTS, indices=[0])[0], 1)
        else:
            self.rule, self.key, self.n_contexts = SEED_RULE, None, None
        # Seed rule: the first start observation of each context drawn, for the first CHECKED_STARTS repeats.
        self._starts: dict[int, Any] | None = {} if self.rule == SEED_RULE else None
        self._checks_left = CHECKED_STARTS

    def draw_contexts(self, n: int) -> np.ndarray:
        """``n`` contexts: indices in ``[0, n_contexts)`` (options rule) or reset seeds (seed rule), ``[n]`` int64."""
        if self._starts:
            self._starts = {}
        high = _SEED_BOUND if self.n_contexts is None else self.n_contexts  # None: the seed rule
        return self.rng.integers(high, size=n, dtype=np.int64)

    def reset(self, env_ids: np.ndarray, contexts: np.ndarray, obs: Any) -> Any:
        """Reset env ``env_ids[j]`` into context ``contexts[j]`` now and write its first observation into ``obs``.

        :param env_ids: ``[B]`` envs to reset.
        :param contexts: ``[B]`` their contexts (from :meth:`draw_contexts`).
        :param obs: the batch observation ``[n_envs, ...]`` (or a dict of such).
        :return: a copy of ``obs`` with the rows of ``env_ids`` replaced (VecEnvs may hand out their own buffers).
        """
        obs = {key: np.array(value) for key, value in obs.items()} if isinstance(obs, dict) else np.array(obs)
        if self.native is not None:
            fresh = self._reset_native(env_ids, contexts)
            rows = {i: _row(fresh, i) for i in env_ids}
        else:
            rows = {i: self._reset_one(int(i), int(c)) for i, c in zip(env_ids, contexts, strict=True)}
        if self._starts is not None:
            for i, c in zip(env_ids, contexts, strict=True):
                self._check_start(int(i), int(c), rows[i])
        for i, row in rows.items():
            for transform in self.transforms:
                row = transform(row)
            if isinstance(obs, dict):
                for key in obs:
                    obs[key][i] = row[key]
            else:
                obs[i] = row
        return obs

    def _check_start(self, i: int, context: int, row: Any) -> None:
        """Seed rule: warn, once, when env ``i``, reset with the seed ``context``, did not start with the observation
        ``row`` that an earlier reset with that seed gave (the env's start does not follow its reset seed). Checks the
        first :data:`CHECKED_STARTS` repeats only."""
        if self._starts is None:  # done checking (earlier in the same reset)
            return
        first = self._starts.get(context)
        if first is None:
            self._starts[context] = {k: np.array(v) for k, v in row.items()} if isinstance(row, dict) else np.array(row)
            return
        if isinstance(row, dict):
            same = all(np.array_equal(first[k], row[k]) for k in first)
        else:
            same = np.array_equal(first, row)
        self._checks_left -= 1
        if same and self._checks_left > 0:
            return
        self._starts = None  # checked enough, or warned
        if not same:
            warnings.warn(
                f"group_size: env {i}, reset with its group's seed, did not start with the observation that seed gave "
                "another member, so the members of a group do not share a start state: the env's reset draws from "
                "something other than its np_random (or ignores the seed). Give the env a context_key reset option "
                "and n_contexts to pose its contexts (README, 'Groups')",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    def _reset_one(self, i: int, context: int) -> Any:
        base = self.base
        if isinstance(base, DummyVecEnv):  # the same calls, without env_method's per-call indirections
            env = base.envs[i]
            if self.key is not None:  # the options rule
                obs, info = env.reset(options={self.key: context})
            else:
                own = env.np_random
                obs, info = env.reset(seed=context)
                env.np_random = own
            base.reset_infos[i] = info
            return obs
        if self.key is not None:  # the options rule
            obs, info = base.env_method("reset", options={self.key: context}, indices=[i])[0]
        else:
            own = base.get_attr("np_random", indices=[i])[0]
            obs, info = base.env_method("reset", seed=context, indices=[i])[0]
            # The start state came from the shared seed; the dynamics go on with the env's own stream.
            base.set_attr("np_random", own, indices=[i])
        if hasattr(base, "reset_infos"):
            infos = list(base.reset_infos)  # SubprocVecEnv keeps a tuple
            infos[i] = info
            base.reset_infos = infos
        return obs

    def _reset_native(self, env_ids: np.ndarray, contexts: np.ndarray) -> Any:
        native = self.native
        assert native is not None
        if self.key is not None:  # the options rule
            values = np.zeros(native.num_envs, dtype=np.int64)
            values[env_ids] = contexts
            return native.reset_envs(env_ids, options={self.key: values})
        seeds: list[int | None] = [None] * native.num_envs
        for i, c in zip(env_ids, contexts, strict=True):
            seeds[i] = int(c)
        rngs = native.vector_env.env_rngs
        own = [rngs[i] for i in env_ids]
        obs = native.reset_envs(env_ids, seed=seeds)
        for i, rng in zip(env_ids, own, strict=True):
            rngs[i] = rng  # the env's own stream for the dynamics (None: created on first use)
        return obs


def _row(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {key: value[i] for key, value in obs.items()}
    return obs[i]
