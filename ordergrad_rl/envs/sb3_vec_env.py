"""Stable-Baselines3 face of the native batch environments, and the VecEnv factory used by the agents.

Imports SB3, so :mod:`ordergrad_rl.envs` loads this module only on first use.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec, load_env_creator
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.envs import minatar
from ordergrad_rl.envs.native_vector import NativeVectorEnv
from ordergrad_rl.envs.tailrisk_gym import SyntheticTailRiskVectorEnv


def _rows(info: dict[str, np.ndarray], ids: np.ndarray | None, num_envs: int) -> list[dict[str, Any]]:
    """One info dict per env of ``ids`` (all ``num_envs`` envs if ``None``) from batch arrays.

    1-D columns become Python scalars, the others one array row per env.
    """
    if not info:
        return [{} for _ in range(num_envs if ids is None else len(ids))]
    picked = info.values() if ids is None else [value[ids] for value in info.values()]
    # C-level tolist()/list() calls transpose the columns (no Python loop per key and env).
    columns = [value.tolist() if value.ndim == 1 else list(value) for value in picked]
    return [dict(zip(info, row, strict=True)) for row in zip(*columns, strict=True)]


class NativeVecEnv(VecEnv):
    """SB3 ``VecEnv`` over a :class:`~ordergrad_rl.envs.native_vector.NativeVectorEnv`: the batch steps as NumPy.

    Same results as ``DummyVecEnv`` over the single envs (env ``i`` seeded ``seed + i`` by :meth:`seed`), without
    a Python loop per env in the dynamics. SB3 semantics: a finished env is reset within the step that ends it; its
    info then carries ``terminal_observation``, ``TimeLimit.truncated`` (truncated and not terminated) and the
    env's final-step keys (``final_step_info_keys``, e.g. ``is_success``). Rewards are float64 (``DummyVecEnv``
    uses float32). Options set with :meth:`set_options` apply at the next :meth:`reset` (as in ``DummyVecEnv``):
    one dict for all envs, or one per env with the same keys (passed to the batch as per-env arrays).

    Wrap it in ``VecMonitor`` for SB3's ``episode`` info (:func:`make_sb3_vec_env` does).

    :param vector_env: the native batch (its autoreset mode is not used: this face resets finished envs itself).
    """

    render_mode = None

    def __init__(self, vector_env: NativeVectorEnv) -> None:
        self.vector_env = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)
        self.spec: gym.envs.registration.EnvSpec | None = None
        self._actions: np.ndarray | None = None

    def _batch_options(self) -> dict[str, Any] | None:
        """SB3's per-env option dicts as one batch dict of per-env arrays (``None`` if no env has options)."""
        if not any(self._options):
            return None
        keys = set(self._options[0])
        if any(set(options) != keys for options in self._options):
            raise ValueError("set_options: every env needs the same option keys (the batch resets together)")
        return {key: np.array([options[key] for options in self._options]) for key in keys}

    def reset(self) -> VecEnvObs:
        seeds = self._seeds if any(seed is not None for seed in self._seeds) else None
        obs, info = self.vector_env._reset_envs(seeds, None, self._batch_options())
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = _rows(info, None, self.num_envs)
        return obs

    def reset_envs(
        self,
        env_ids: np.ndarray,
        seed: list[int | None] | None = None,
        options: dict[str, np.ndarray] | None = None,
    ) -> VecEnvObs:
        """Start new episodes in ``env_ids`` only, now (SB3's ``reset`` resets every env; this is the batch's
        ``reset_mask``). Used by grouped rollouts (:mod:`ordergrad_rl.agents.common.groups`).

        :param env_ids: ``[B]`` envs to reset.
        :param seed: ``None`` or one seed per env (``None`` entries keep the env's generator).
        :param options: reset options as per-env arrays ``[num_envs]`` (only the rows of ``env_ids`` are used).
        :return: the observations of all envs (the others unchanged).
        """
        env_ids = np.asarray(env_ids, dtype=np.int64)
        obs, reset_info = self.vector_env._reset_envs(seed, env_ids, options)
        for i, row in zip(env_ids, _rows(reset_info, env_ids, self.num_envs), strict=True):
            self.reset_infos[i] = row
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        obs, reward, terminated, truncated, info = self.vector_env._step_envs(self._actions, None)
        self._actions = None
        done = terminated | truncated
        final = set(self.vector_env.final_step_info_keys)
        infos = _rows({key: value for key, value in info.items() if key not in final}, None, self.num_envs)
        for i, time_limit in enumerate((truncated & ~terminated).tolist()):
            infos[i]["TimeLimit.truncated"] = time_limit
        ended = np.flatnonzero(done)
        if ended.size:
            final_rows = _rows({key: value for key, value in info.items() if key in final}, ended, self.num_envs)
            for i, row in zip(ended.tolist(), final_rows, strict=True):  # once per episode end
                infos[i].update(row, terminal_observation=obs[i])
            obs, reset_info = self.vector_env._reset_envs(None, ended, None)
            for i, row in zip(ended.tolist(), _rows(reset_info, ended, self.num_envs), strict=True):
                self.reset_infos[i] = row
        return obs, reward, done, infos

    def close(self) -> None:
        pass

    def _lookup(self, attr_name: str) -> Any:
        """An attribute of this adapter, else of the batch, else of the batch's ``simulator``."""
        for owner in (self, self.vector_env, getattr(self.vector_env, "simulator", None)):
            if owner is not None and hasattr(owner, attr_name):
                return getattr(owner, attr_name)
        raise AttributeError(f"{type(self).__name__} has no attribute {attr_name!r}")

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute, looked up on this adapter, the batch then its simulator, once per index."""
        value = self._lookup(attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the adapter; the batch shares it, so ``indices`` must cover all envs.

        Environment parameters are fixed at construction: make a new env to change them.
        """
        if sorted(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError(f"{type(self).__name__} is one batch: set_attr must address all envs")
        if hasattr(self.vector_env, attr_name) or hasattr(getattr(self.vector_env, "simulator", None), attr_name):
            raise ValueError(f"{attr_name!r} is a simulator parameter; create a new env to change it")
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a method of the adapter once and return its result for each index."""
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


class TailRiskVecEnv(NativeVecEnv):
    """SB3 ``VecEnv`` running ``num_envs`` SyntheticTailRisk episodes as one NumPy batch.

    Same results as ``DummyVecEnv`` over :class:`~ordergrad_rl.envs.tailrisk_gym.SyntheticTailRiskEnv`
    instances. Every info has the env's keys (``weights``, ``wealth``, ``drawdown``, ``max_drawdown``,
    ``disaster``, ``daily_returns``) and ``TimeLimit.truncated`` (always False: the fixed horizon is a
    termination). Rewards are float64 so that they sum to ``log W_T`` exactly.

    :param num_envs: number of parallel episodes.
    :param simulator_kwargs: the arguments of ``SyntheticTailRiskEnv``.
    """

    def __init__(self, num_envs: int, **simulator_kwargs: Any) -> None:
        vector_env = SyntheticTailRiskVectorEnv(num_envs, **simulator_kwargs)
        super().__init__(vector_env)
        self.simulator = vector_env.simulator


def env_spec(env_id: str) -> EnvSpec:
    """``gym.spec(env_id)``, reading ``gym.make``'s ``"module:EnvId-v0"`` form as ``gym.make`` does: the module is
    imported first (its import registers the env). That form is how an env of your own reaches a process that did
    not register it: a Ray Tune trial of a sweep, a ``SubprocVecEnv`` worker.

    A ``MinAtar/...`` id that no one registered is registered first as ordergrad-rl's MinAtar env
    (:func:`~ordergrad_rl.envs.minatar.register_minatar_envs`: float32 frames), since MinAtar registers its ids only
    when asked; an id registered already (MinAtar's own) is used as it is.

    :raises gymnasium.error.Error: unknown env id, or a module that does not import.
    """
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise gym.error.Error(f"env id {env_id!r}: cannot import {module!r} to register {name!r} ({err})") from err
    if name.startswith(f"{minatar.NAMESPACE}/") and name not in gym.registry:
        minatar.register_minatar_envs()
    return gym.spec(name)


def native_vector_class(env_id: str) -> type[NativeVectorEnv] | None:
    """The :class:`NativeVectorEnv` subclass registered as ``env_id``'s ``vector_entry_point`` (a ``"module:Class"``
    string or the class itself, as ``gym.register`` takes either), if any."""
    spec = env_spec(env_id)
    entry = spec.vector_entry_point
    if entry is None or spec.max_episode_steps is not None:
        return None
    creator: object = load_env_creator(entry) if isinstance(entry, str) else entry
    return creator if isinstance(creator, type) and issubclass(creator, NativeVectorEnv) else None


class NativeVecMonitor(VecMonitor):
    """SB3's ``VecMonitor`` of a native batch, which ``copy.deepcopy`` and ``pickle`` can clone (as SB3's
    ``VecNormalize`` is): SB3's ``VecEnvWrapper`` keeps its class's members, a ``mappingproxy``, in every instance, so
    a model built from a native-batch id could not be deep-copied where SB3's on the id's ``DummyVecEnv`` is. The
    members are left out of the state and read again from the class.

    Its ``reset_infos`` are the batch's: SB3's ``VecEnvWrapper`` keeps a list of its own that no reset fills, so the
    reset infos (TargetSum's ``problem``) that SB3's ``make_vec_env`` (a bare ``DummyVecEnv``) shows were always
    ``{}`` here."""

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        """The reset info of each env's current episode, the wrapped batch's."""
        return self.venv.reset_infos

    @reset_infos.setter
    def reset_infos(self, infos: list[dict[str, Any]]) -> None:
        self.venv.reset_infos = infos

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["class_attributes"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.class_attributes = dict(inspect.getmembers(self.__class__))


#: The observation spaces without one fixed shape (SB3 stacks observations into ``[n_envs, *shape]`` arrays), with the
#: way to one: Gymnasium flattens a ``Text`` into its characters' indices in the charset (a ``Box`` of ``max_length``,
#: padded with ``len(charset)``) and a ``OneOf`` into the sub-space index and the sub-spaces' flat samples; a
#: ``Sequence`` or ``Graph`` varies in length, which only the env's author can pad or summarize.
UNBATCHED_SPACES: dict[type[spaces.Space], str] = {
    spaces.Text: "flatten it (gymnasium.wrappers.FlattenObservation: a Box of its characters' indices in the charset)",
    spaces.OneOf: "flatten it (gymnasium.wrappers.FlattenObservation: a Box of the sub-space index and its sample)",
    spaces.Sequence: "pad or summarize it to a fixed shape (a gymnasium.ObservationWrapper with a Box space)",
    spaces.Graph: "pad or summarize it to a fixed shape (a gymnasium.ObservationWrapper with a Box or Dict of Boxes)",
}


def check_batched_observation_space(observation_space: spaces.Space, key: str = "") -> None:
    """``ValueError`` for an observation space (or one inside a ``Dict``, named ``[key]``) without one fixed shape
    (:data:`UNBATCHED_SPACES`), naming the way to one: SB3's ``VecEnv`` stacks observations into arrays of a fixed
    shape, and its ``DummyVecEnv`` failed inside on these ("'NoneType' object is not iterable", "Unsupported
    structured space").

    :param key: where the space is, ``""`` at the top, ``"['image']"`` inside a ``Dict``.
    """
    if isinstance(observation_space, spaces.Dict):
        for name, space in observation_space.spaces.items():
            check_batched_observation_space(space, f"{key}[{name!r}]")
    for space_class, fix in UNBATCHED_SPACES.items():
        if isinstance(observation_space, space_class):
            raise ValueError(
                f"the env's observation space{key} {observation_space} is a {space_class.__name__}, whose samples "
                f"have no fixed shape for SB3 to stack into a batch: {fix}"
            )


def _unbatched_error(
    env_id: str, env_kwargs: dict[str, Any], wrapper_class: Callable[[gym.Env], gym.Env] | None
) -> ValueError | None:
    """The ``ValueError`` of :func:`check_batched_observation_space` for one env made as SB3's ``make_vec_env`` makes
    it (after it failed: made again on that failure only), or ``None``: its observations have a fixed shape, or it
    cannot be made (SB3's error stands)."""
    try:
        env = gym.make(env_id, **env_kwargs)
    except Exception:  # noqa: BLE001 - the env's own error, which SB3's make_vec_env raised already
        return None
    try:
        check_batched_observation_space((wrapper_class or (lambda e: e))(env).observation_space)
    except ValueError as refused:
        return refused
    except Exception:  # noqa: BLE001 - a wrapper that refuses the env: SB3's error stands
        return None
    finally:
        env.close()
    return None


def make_sb3_vec_env(
    env_id: str,
    n_envs: int,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    wrapper_class: Callable[[gym.Env], gym.Env] | None = None,
) -> VecEnv:
    """An SB3 ``VecEnv`` of ``n_envs`` copies of a registered Gymnasium env, monitored.

    Ids whose ``vector_entry_point`` is a :class:`NativeVectorEnv` (``SyntheticTailRisk-v0``,
    ``SyntheticTailRiskDeploy-v0``, ``TargetSum-v0``, user variants) get the native batch
    ``NativeVecMonitor(NativeVecEnv(...))`` (SB3's ``VecMonitor``, clonable); any other id gets SB3's
    ``make_vec_env(env_id, n_envs, seed, env_kwargs=env_kwargs)`` (a ``DummyVecEnv`` of
    ``Monitor``-wrapped envs). Either way env ``i`` is seeded ``seed + i`` at the first reset and
    finished episodes carry ``info["episode"]``. ``max_episode_steps`` among ``env_kwargs`` is ``gym.make``'s (a
    ``TimeLimit``) and a ``render_mode`` other than ``None`` asks for frames, neither of which the native batch has:
    with either, those ids get SB3's ``make_vec_env`` too. ``gym.make``'s ``disable_env_checker`` is recorded in the
    batch's spec (the batch has no env checker).

    :param env_id: registered Gymnasium id.
    :param n_envs: number of parallel envs.
    :param seed: base seed, or ``None`` for random seeds.
    :param env_kwargs: keyword arguments of the env (override the registered ones), and ``gym.make``'s
        ``max_episode_steps`` and ``disable_env_checker``.
    :param wrapper_class: SB3's ``make_vec_env`` argument: it wraps each env, outside its ``Monitor`` (rl-zoo3's
        ``env_wrapper``). The ids with a native batch then get SB3's ``make_vec_env`` too.
    :return: the vectorized env.
    """
    check_int("n_envs", n_envs, 1)
    spec = env_spec(env_id)  # first: it registers the MinAtar ids
    asked = env_kwargs or {}
    # What the batch lacks: a time limit, frames, a gym.Wrapper.
    single_envs = "max_episode_steps" in asked or asked.get("render_mode") is not None or wrapper_class is not None
    vector_class = None if single_envs else native_vector_class(env_id)
    if vector_class is None:
        try:
            return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, wrapper_class=wrapper_class)
        except (TypeError, AssertionError) as error:
            # SB3's DummyVecEnv fails inside on observations without a fixed shape: name the space instead.
            refused = _unbatched_error(env_id, asked, wrapper_class)
            if refused is not None:
                raise refused from error
            raise
    kwargs = {**spec.kwargs, **asked}
    checker = kwargs.pop("disable_env_checker", None)  # gym.make's own; the batch has no env checker to disable
    if checker is not None:
        spec = dataclasses.replace(spec, disable_env_checker=checker)
    if issubclass(vector_class, SyntheticTailRiskVectorEnv):
        venv: NativeVecEnv = TailRiskVecEnv(n_envs, **kwargs)
    else:
        venv = NativeVecEnv(vector_class(n_envs, **kwargs))
    venv.spec = dataclasses.replace(spec, kwargs=kwargs) if env_kwargs else spec  # the batch's own arguments
    if seed is not None:
        venv.seed(seed)
    return NativeVecMonitor(venv)


#: Keys of a ``gym.make_vec``'d native batch's spec kwargs that are not arguments of the single env: those
#: ``gym.make_vec`` adds and the batch's ``autoreset_mode``.
VECTOR_ONLY_KEYS = ("num_envs", "vectorization_mode", "vector_kwargs", "wrappers", "autoreset_mode")


def native_sb3_vec_env(vector_env: NativeVectorEnv) -> VecEnv:
    """The SB3 face of a native batch passed as a Gymnasium vector env (``gym.make_vec("SyntheticTailRisk-v0",
    num_envs=n)``): ``NativeVecMonitor(NativeVecEnv(vector_env))``, as :func:`make_sb3_vec_env` builds it, with the spec
    ``gym.make_vec`` recorded less its vector-only keys (:data:`VECTOR_ONLY_KEYS`), so that ``gym.make(spec)`` makes
    one env of it. The batch's autoreset mode is not used (the face resets finished envs itself, SB3's way).
    """
    venv = NativeVecEnv(vector_env)
    spec = getattr(vector_env, "spec", None)
    if spec is not None:
        kwargs = {key: value for key, value in spec.kwargs.items() if key not in VECTOR_ONLY_KEYS}
        venv.spec = dataclasses.replace(spec, kwargs=kwargs)
    return NativeVecMonitor(venv)


def has_native_batch(env_id: str) -> bool:
    """Whether :func:`make_sb3_vec_env` runs ``env_id`` as one NumPy batch (a :class:`NativeVectorEnv`: the tail-risk
    and TargetSum ids), so that many envs cost about as much as one.

    :raises gymnasium.error.Error: unknown env id.
    """
    return native_vector_class(env_id) is not None


def native_batch_spec(env: gym.Env) -> gym.envs.registration.EnvSpec | None:
    """The spec of ``env`` if it can be rebuilt as a native batch: made by ``gym.make(id, **kwargs)`` from an id with
    a native batch (:func:`has_native_batch`), with no wrapper added after ``gym.make``, no ``render_mode`` (the
    batch does not render) and no ``max_episode_steps`` (the batch has no ``TimeLimit``); else ``None``.

    ``make_sb3_vec_env(spec.id, n, env_kwargs=spec.kwargs)`` then gives ``n`` envs with the same episode
    distribution as ``env``.
    """
    try:
        spec = env.spec
    except Exception:  # noqa: BLE001 - a user wrapper whose kwargs cannot be recorded: not rebuildable
        return None
    # An env may carry a spec whose id is not registered (SB3's BitFlippingEnv): then it is no registered id's env.
    if spec is None or spec.additional_wrappers or spec.id not in gym.registry or not has_native_batch(spec.id):
        return None
    return spec if getattr(env, "render_mode", None) is None and spec.max_episode_steps is None else None
