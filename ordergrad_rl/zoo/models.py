"""Saved models and evaluation episodes, shared by ``train``, ``evaluate`` and ``compare``.

Heavy imports (torch, Stable-Baselines3) happen inside the functions, so the commands' ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.extras import require_env_extra
from ordergrad_rl.common.options import closest_argument, model_file

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm


# ---------------------------------------------------------------------------------------------------- envs
def check_env_id(env_id: str) -> None:
    """The commands' check of an env id before any work. MinAtar's ids are ordergrad-rl's MinAtar envs unless
    registered already (:func:`~ordergrad_rl.envs.minatar.register_minatar_envs`, through ``env_spec``).

    :raises CommandError: unknown env id (with the registry's suggestion, and for an id no import registered, how to
        import the module that registers it), a ``module:EnvId-v0`` whose module does not import, or an env whose
        module needs a package that is not installed (MuJoCo's ``InvertedPendulum-v5``), found by importing it; the
        extra that brings it where there is one (``LunarLander-v3``: ``[box2d]``, ``MinAtar/Breakout-v1``:
        ``[minatar]``).
    """
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    from ordergrad_rl.envs.sb3_vec_env import env_spec

    try:
        entry_point = env_spec(env_id).entry_point
        if isinstance(entry_point, str):
            require_env_extra(entry_point, env_id)
            load_env_creator(entry_point)
    except (gym.error.DependencyNotInstalled, ImportError) as err:
        raise CommandError(f"{env_id} needs a package that is not installed: {err}") from err
    except gym.error.Error as err:
        raise unknown_env_error(env_id, err) from err


def unknown_env_error(env_id: str, err: Exception) -> CommandError:
    """The commands' error for ``env_id``, which Gymnasium's registry refused with ``err`` (``env_spec``'s own for a
    ``module:EnvId-v0`` whose module does not import)."""
    if isinstance(err.__cause__, ImportError):  # env_spec's, naming the module
        return CommandError(str(err))
    return CommandError(f"unknown env id {env_id!r}: {_unknown_env_reason(env_id, err)}")


def _unknown_env_reason(env_id: str, err: Exception) -> str:
    """Gymnasium's ``err`` for ``env_id``, with what to do where no imported module registered the id: an id of the
    user's own needs the module that registers it."""
    import gymnasium as gym

    reason = str(err)
    if not isinstance(err, (gym.error.NameNotFound, gym.error.NamespaceNotFound)) or ":" in env_id:
        return reason
    if "Did you mean" in reason:  # Gymnasium's suggestion of a registered id: most likely a typo
        return reason
    return (
        f"{reason} An env of your own: give its id as MODULE:{env_id} (gym.make imports MODULE first, whose import "
        "registers it), or MODULE in --gym-packages (train, evaluate, compare)"
    )


def is_batched(env_id: str) -> bool:
    """Whether ``make_sb3_vec_env`` runs ``env_id`` as one NumPy batch (the ids with a native vector env): then
    many envs cost about as much as one.

    :raises CommandError: unknown env id.
    """
    import gymnasium as gym

    from ordergrad_rl.envs.sb3_vec_env import has_native_batch

    try:
        return has_native_batch(env_id)
    except gym.error.Error as err:
        raise unknown_env_error(env_id, err) from err


def eval_n_envs(env_id: str, episodes: int, wrapped: bool = False) -> int:
    """Envs for ``episodes`` evaluation episodes: all at once on a batched env (not ``wrapped`` in an
    ``env_wrapper``, which makes it env by env), else up to 8 (fewer policy calls; ``evaluate_policy`` still runs
    exactly ``episodes`` episodes, spread evenly)."""
    return episodes if is_batched(env_id) and not wrapped else min(episodes, 8)


# ---------------------------------------------------------------------------------------------------- env wrappers
#: rl-zoo3's ``env_wrapper``, read (:func:`parse_env_wrapper`): the dotted path of each
#: wrapper with its keyword arguments, innermost first (``()``: none). A run's wrappers end with those of its
#: ``VecEnv``, SB3 ``VecEnvWrapper`` classes (rl-zoo3's ``vec_env_wrapper``, then ``frame_stack``'s
#: ``VecFrameStack``: :func:`vec_env_wrappers`), which wrap the ``VecEnv`` of the envs in the others.
EnvWrappers = tuple[tuple[str, dict[str, Any]], ...]

#: The ``VecEnvWrapper`` of rl-zoo3's ``frame_stack: N``, as a run's wrappers hold it: ``VecFrameStack(n_stack=N)``.
FRAME_STACK = "stable_baselines3.common.vec_env.VecFrameStack"


class EnvWrapperError(CommandError):
    """A wrapper of an ``env_wrapper`` refused the env or its keyword arguments (:func:`apply_env_wrapper`)."""


def import_wrapper(path: str) -> Any:
    """The wrapper (a ``gym.Wrapper`` class, or a function of the env) at the dotted ``path``: the module is imported
    and the name looked up in it, no code is evaluated.

    :raises ValueError: a path without a module, a module that does not import, or a name it lacks (with the closest
        one it has).
    """
    module_name, _, name = path.rpartition(".")
    if not module_name or not name:
        raise ValueError(f"expected the dotted path of a wrapper (gymnasium.wrappers.FlattenObservation), got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"{path}: cannot import {module_name} ({err})") from err
    wrapper = getattr(module, name, None)
    if not callable(wrapper):
        raise ValueError(f"{path}: {module_name} has no wrapper {name!r}{closest_argument(name, dir(module))}")
    return wrapper


def is_vec_env_wrapper(path: str) -> bool:
    """Whether the wrapper at ``path`` wraps a ``VecEnv`` (an SB3 ``VecEnvWrapper`` class), not each env."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    wrapper = import_wrapper(path)
    return isinstance(wrapper, type) and issubclass(wrapper, VecEnvWrapper)


def parse_env_wrapper(value: Any, where: str, vec_env: bool | None = False) -> EnvWrappers:
    """rl-zoo3's ``env_wrapper`` value -> ``((dotted path, keyword arguments), ...)``, innermost first (``()``: none).

    As rl-zoo3's ``get_wrapper_class`` reads it: the dotted path of a ``gym.Wrapper`` (or of a function of the env
    that returns one), a list of them, and a one-key mapping ``{path: {keyword: value}}`` in place of a path;
    ``null`` for none. Each wrapper is imported (its module, then the name in it: no code is evaluated) and its
    keywords checked against its signature here, before any env is made.

    :param where: the file and entry, for the message.
    :param vec_env: ``True``: rl-zoo3's ``vec_env_wrapper``, each an SB3 ``VecEnvWrapper`` class; ``None``: either
        kind (a run's wrappers, as :func:`save_env_wrapper` writes them).
    :raises ValueError: another value, a path that does not import, keywords the wrapper does not take, or a wrapper
        of the other kind.
    """

    def check_kind(path: str, wrapper: Any) -> None:
        if vec_env is not None and is_vec_env_wrapper(path) != vec_env:
            raise ValueError(
                f"{path} is {'not ' if vec_env else ''}a VecEnvWrapper: "
                + ("put it in env_wrapper" if vec_env else "put it in vec_env_wrapper (rl-zoo3's key for those)")
            )

    what = "the dotted path of a wrapper (gymnasium.wrappers.FlattenObservation)"
    return _dotted_calls(value, where, what, takes_env=True, check=check_kind)


def parse_callback(value: Any, where: str) -> EnvWrappers:
    """rl-zoo3's ``callback`` value (``get_callback_list``'s, in ``env_wrapper``'s form) -> ``((dotted path, keyword
    arguments), ...)`` of SB3 callback classes, each imported and its keywords checked (:func:`make_callbacks`).

    :raises ValueError: as :func:`parse_env_wrapper`, or a class that is not an SB3 ``BaseCallback``.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    def check_kind(path: str, callback: Any) -> None:
        if isinstance(callback, type) and not issubclass(callback, BaseCallback):
            raise ValueError(f"{path} is not an SB3 callback (a subclass of BaseCallback)")

    what = "the dotted path of an SB3 callback (stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes)"
    return _dotted_calls(value, where, what, takes_env=False, check=check_kind)


def make_callbacks(callbacks: EnvWrappers) -> list[Any]:
    """The SB3 callbacks of ``callbacks`` (:func:`parse_callback`), each called with its keywords, as rl-zoo3's
    ``get_callback_list`` makes them.

    :raises CommandError: a callback that refuses its keywords, or a function that does not return a callback.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    made = []
    for path, kwargs in callbacks:
        try:
            callback = import_wrapper(path)(**kwargs)
        except (TypeError, ValueError, AssertionError) as err:
            raise CommandError(f"callback: {wrapper_call(path, kwargs)}: {err}") from err
        if not isinstance(callback, BaseCallback):
            raise CommandError(f"callback: {wrapper_call(path, kwargs)} gave {callback!r}, not an SB3 callback")
        made.append(callback)
    return made


def _dotted_calls(value: Any, where: str, what: str, takes_env: bool, check: Callable[[str, Any], None]) -> EnvWrappers:
    """rl-zoo3's form of ``env_wrapper``, ``vec_env_wrapper`` and ``callback`` (``what``, a list of them, a one-key
    mapping ``{path: {keyword: value}}`` in place of one; ``null``: none) -> ``((dotted path, keywords), ...)``,
    each imported, ``check``-ed (``check(path, imported)`` raises a ``ValueError`` for one of another kind), and
    its keywords bound to its signature (after the env where it ``takes_env``)."""
    import inspect

    calls = []
    first = (None,) if takes_env else ()
    for item in value if isinstance(value, list) else [] if value is None else [value]:
        path, kwargs = next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, {})
        kwargs = {} if kwargs is None else kwargs  # "- gymnasium.wrappers.FlattenObservation:" in YAML
        if not isinstance(path, str) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise ValueError(
                f"{where}: expected {what}, a list of them, or in place of one a mapping "
                f"{{path: {{keyword: value}}}}; got {item!r}"
            )
        try:
            called = import_wrapper(path)
            check(path, called)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from err
        try:
            signature = inspect.signature(called)
        except (TypeError, ValueError):  # no signature to read (a builtin): it checks its own
            signature = None
        if signature is not None:
            try:  # A keyword it does not take first, then one it needs.
                signature.bind_partial(*first, **kwargs)
                signature.bind(*first, **kwargs)
            except TypeError as err:
                raise ValueError(f"{where}: {path}: {err}") from err
        calls.append((path, dict(kwargs)))
    return tuple(calls)


def apply_env_wrapper(env: Any, env_wrapper: EnvWrappers) -> Any:
    """``env`` in the wrappers of ``env_wrapper``, the first innermost, as rl-zoo3's ``get_wrapper_class`` wraps it.

    :raises EnvWrapperError: a wrapper that refuses the env or its keyword arguments, or needs a package that is not
        installed.
    """
    import gymnasium as gym

    for path, kwargs in env_wrapper:
        try:
            env = import_wrapper(path)(env, **kwargs)
        except (TypeError, ValueError, AssertionError, gym.error.Error) as err:
            name = env.spec.id if env.spec is not None else env
            raise EnvWrapperError(f"env_wrapper: {wrapper_call(path, kwargs)} cannot wrap {name}: {err}") from err
    return env


def vec_env_wrappers(vec_env_wrapper: EnvWrappers, frame_stack: int | None) -> EnvWrappers:
    """The ``VecEnv``'s wrappers of a run, in the order rl-zoo3's ``ExperimentManager`` applies them: those of
    ``vec_env_wrapper``, then ``VecFrameStack(n_stack=frame_stack)`` (none for ``None``). A ``VecNormalize`` (an
    entry's ``normalize``) goes between them, as in rl-zoo3 (:func:`under_frame_stack`)."""
    return vec_env_wrapper + (() if frame_stack is None else ((FRAME_STACK, {"n_stack": frame_stack}),))


def split_vec_env_wrappers(env_wrapper: EnvWrappers) -> tuple[EnvWrappers, EnvWrappers]:
    """``(each env's wrappers, the VecEnv's)`` of a run's ``env_wrapper`` (:func:`is_vec_env_wrapper`)."""
    vec = tuple(item for item in env_wrapper if is_vec_env_wrapper(item[0]))
    return tuple(item for item in env_wrapper if item not in vec), vec


def apply_vec_env_wrapper(venv: Any, vec_env_wrapper: EnvWrappers) -> Any:
    """``venv`` in the ``VecEnvWrapper`` classes of ``vec_env_wrapper``, the first innermost.

    :raises EnvWrapperError: a wrapper that refuses the ``VecEnv`` (``VecFrameStack`` of a ``Discrete`` space).
    """
    for path, kwargs in vec_env_wrapper:
        try:
            venv = import_wrapper(path)(venv, **kwargs)
        except (TypeError, ValueError, AssertionError) as err:
            venv.close()
            raise EnvWrapperError(f"{wrapper_call(path, kwargs)} cannot wrap the envs: {err}") from err
    return venv


def wrapper_call(path: str, kwargs: dict[str, Any]) -> str:
    """A wrapper of an ``env_wrapper`` as messages name it, ``path`` called with its keywords:
    ``gymnasium.wrappers.TimeLimit(max_episode_steps=20)`` (``train``'s printout passes the name alone)."""
    return f"{path}({', '.join(f'{key}={value!r}' for key, value in kwargs.items())})"


def written_env_wrapper(env_wrapper: EnvWrappers) -> list[Any]:
    """``env_wrapper`` as an entry writes it: a list of dotted paths, ``{path: kwargs}`` for one with keywords."""
    return [{path: kwargs} if kwargs else path for path, kwargs in env_wrapper]


def inner_time_limits(
    env_id: str, env_kwargs: dict[str, Any] | None, env_wrapper: EnvWrappers
) -> tuple[dict[str, Any] | None, EnvWrappers]:
    """``(env_kwargs, env_wrapper)`` with each ``gymnasium.wrappers.TimeLimit(max_episode_steps=N)`` of
    ``env_wrapper`` made ``gym.make``'s ``max_episode_steps``: the smallest of the wrappers' ``N`` and the env's own
    limit (``env_kwargs``' ``max_episode_steps``, else the registered one), the step at which the wrappers would
    truncate. A wrapper's ``TimeLimit`` counts the env's steps as ``gym.make``'s does.

    Why: rl-zoo3 (SB3's ``make_vec_env(wrapper_class=...)``) puts the ``env_wrapper`` outside the ``Monitor``, which
    then never sees a truncation of a ``TimeLimit`` there: it records no episode, and SB3's ``evaluate_policy``, which
    counts the ``Monitor``'s episodes, waited forever on an env without a limit of its own. ``gym.make``'s
    ``TimeLimit`` is inside the ``Monitor``, and the env's spec, which a ``SubprocVecEnv``'s worker reports, names the
    limit that applies (:func:`~ordergrad_rl.agents.common.env_util.episode_limit`). A ``TimeLimit`` of another class,
    or with keywords ``TimeLimit`` refuses, stays in ``env_wrapper`` (the agents read the smaller limit in the
    workers then).
    """
    from gymnasium.wrappers import TimeLimit

    from ordergrad_rl.envs.sb3_vec_env import env_spec

    def limit(path: str, kwargs: dict[str, Any]) -> int | None:
        steps = kwargs.get("max_episode_steps")
        plain = import_wrapper(path) is TimeLimit and kwargs.keys() == {"max_episode_steps"}
        return steps if plain and isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else None

    limits = [steps for path, kwargs in env_wrapper if (steps := limit(path, kwargs)) is not None]
    if not limits:
        return env_kwargs, env_wrapper
    own = (env_kwargs or {}).get("max_episode_steps", env_spec(env_id).max_episode_steps)
    if isinstance(own, int) and own > 0:  # -1, None: no limit of its own
        limits.append(own)
    wrappers = tuple((path, kwargs) for path, kwargs in env_wrapper if limit(path, kwargs) is None)
    return {**(env_kwargs or {}), "max_episode_steps": min(limits)}, wrappers


def env_wrapper_class(env_wrapper: EnvWrappers) -> Any:
    """SB3's ``make_vec_env(..., wrapper_class=...)`` of ``env_wrapper`` (:func:`apply_env_wrapper`, picklable for
    ``SubprocVecEnv``), or ``None`` for none."""
    import functools

    return functools.partial(apply_env_wrapper, env_wrapper=env_wrapper) if env_wrapper else None


# ---------------------------------------------------------------------------------------------------- saved models
@dataclass(frozen=True)
class Algorithm:
    """How to recognize a saved model of an algorithm from the attributes stored in its zip's ``data`` file.

    ordergrad-rl's episodic algorithms are recognized by :func:`ordergrad_rl.agents.common.saving.saved_algorithm`; the
    others (SB3's, and the QRDQNCVaR peer) by the attributes they save.
    """

    name: str
    module: str
    #: Attributes the algorithm saves (not used for ordergrad-rl's algorithms).
    required: frozenset[str] = frozenset()
    #: Attributes it never saves (they tell it from its relatives).
    absent: frozenset[str] = frozenset()
    #: Policy modules it never uses (sb3-contrib's PPO variants save the same attributes as PPO).
    foreign_policy_modules: tuple[str, ...] = ()
    #: Policy modules of which it is the only user (most SB3 and sb3-contrib algorithms keep their policies in their
    #: own package: ``stable_baselines3.dqn.policies``); a save with such a policy is recognized by it alone.
    policy_modules: tuple[str, ...] = ()

    def load_class(self) -> type[BaseAlgorithm]:
        return getattr(importlib.import_module(self.module), self.name)

    def matches(self, data: Mapping[str, Any]) -> bool:
        from ordergrad_rl.agents.common.saving import saved_algorithm

        ordergrad = saved_algorithm(dict(data))
        if self.module.startswith("ordergrad_rl") and not self.required:  # the episodic agents record their name
            return ordergrad == self.name
        policy = data.get("policy_class")
        policy_module = policy.get("__module__", "") if isinstance(policy, dict) else ""
        if self.policy_modules:
            return ordergrad is None and policy_module.startswith(self.policy_modules)
        return (
            ordergrad is None
            and self.required <= data.keys()
            and not (self.absent & data.keys())
            and not policy_module.startswith(self.foreign_policy_modules)
        )


_CONTRIB = ("sb3_contrib",)
#: The algorithms ``evaluate`` and ``compare`` load, most specific first.
ALGORITHMS: tuple[Algorithm, ...] = (
    Algorithm("OrderGradPPO", "ordergrad_rl.agents"),
    Algorithm("OrderGradREINFORCE", "ordergrad_rl.agents"),
    Algorithm("OrderGradRecurrentPPO", "ordergrad_rl.agents"),
    Algorithm("OrderGradMaskablePPO", "ordergrad_rl.agents"),
    Algorithm("QRDQNCVaR", "ordergrad_rl.agents", frozenset({"alpha", "n_quantiles", "target_update_interval"})),
    Algorithm(
        "PPO",
        "stable_baselines3",
        frozenset({"n_steps", "n_epochs", "clip_range", "gae_lambda"}),
        frozenset(),
        _CONTRIB,
    ),
    Algorithm(
        "A2C",
        "stable_baselines3",
        frozenset({"n_steps", "gae_lambda", "normalize_advantage"}),
        frozenset({"n_epochs", "clip_range", "batch_size", "buffer_size"}),
        _CONTRIB,
    ),
    # The risk-neutral baselines a user compares against, recognized by their policies' packages.
    Algorithm("DQN", "stable_baselines3", policy_modules=("stable_baselines3.dqn.",)),
    Algorithm("SAC", "stable_baselines3", policy_modules=("stable_baselines3.sac.",)),
    Algorithm("TD3", "stable_baselines3", policy_modules=("stable_baselines3.td3.",)),  # DDPG's saves too
    Algorithm("QRDQN", "sb3_contrib", policy_modules=("sb3_contrib.qrdqn.",)),
    Algorithm("TQC", "sb3_contrib", policy_modules=("sb3_contrib.tqc.",)),
    Algorithm("CrossQ", "sb3_contrib", policy_modules=("sb3_contrib.crossq.",)),
    Algorithm("ARS", "sb3_contrib", policy_modules=("sb3_contrib.ars.",)),
    Algorithm("RecurrentPPO", "sb3_contrib", policy_modules=("sb3_contrib.common.recurrent.",)),
    Algorithm("MaskablePPO", "sb3_contrib", policy_modules=("sb3_contrib.common.maskable.",)),
    # TRPO's policies are SB3's ActorCriticPolicy, as PPO's and A2C's are: told apart by its conjugate-gradient steps.
    Algorithm("TRPO", "sb3_contrib", frozenset({"cg_max_steps", "line_search_max_iter", "n_critic_updates"})),
)


def model_path(path: str | Path) -> Path:
    """The zip file of a saved model, accepting the path without ``.zip`` as SB3's ``load`` does.

    :raises CommandError: no such file; for a directory (an rl-zoo3 run folder, a TensorBoard run), the models in it.
    """
    path = Path(path)
    for candidate in (path, path.with_name(path.name + ".zip")):
        if candidate.is_file():
            return candidate
    if path.is_dir():  # rl-zoo3's enjoy finds a run folder's model itself (-f logs --exp-id 1): name them
        models = sorted(file.name for file in path.glob("*.zip"))
        held = f"give one of its models: {', '.join(models)}" if models else "it holds no model (.zip)"
        raise CommandError(f"no saved model at {path}: a directory; {held}")
    raise CommandError(f"no saved model at {path}")


def detect_algorithm(path: str | Path) -> Algorithm:
    """The algorithm that saved the model at ``path`` (an SB3 ``model.save`` zip).

    :raises CommandError: not a saved SB3 model, or one of an algorithm other than those of :data:`ALGORITHMS`.
    """
    from ordergrad_rl.agents.common.saving import read_saved_data

    path = model_path(path)
    try:
        data = read_saved_data(path)
    except ValueError as err:
        raise CommandError(str(err)) from err
    for algorithm in ALGORITHMS:
        if algorithm.matches(data):
            return algorithm
    names = ", ".join(a.name for a in ALGORITHMS)
    raise CommandError(f"cannot tell which algorithm saved {path}; supported: {names}")


def load_model(path: str | Path, device: str = "cpu") -> tuple[BaseAlgorithm, Algorithm]:
    """Load a saved model for inference with the algorithm that saved it (see :func:`detect_algorithm`).

    :return: ``(model, algorithm)``.
    """
    algorithm = detect_algorithm(path)
    # Schedules are pickled functions that may not load in another Python; inference does not need them.
    inference_only = {
        "learning_rate": 0.0,
        "lr_schedule": lambda _: 0.0,
        "clip_range": lambda _: 0.0,
        "exploration_schedule": lambda _: 0.0,  # DQN's and QR-DQN's (predict reads exploration_rate, saved apart)
    }
    model = algorithm.load_class().load(model_path(path), device=device, custom_objects=inference_only)
    return model, algorithm


# ---------------------------------------------------------------------------------------------------- VecNormalize
#: rl-zoo3's name of the file of a run's ``VecNormalize`` statistics.
VEC_NORMALIZE_FILE = "vecnormalize.pkl"


def vec_normalize_file(path: str | Path) -> Path:
    """Where ``train`` saves the ``VecNormalize`` statistics of the model it saves at ``path`` (SB3 appends ``.zip``
    to a name without a suffix), in rl-zoo3's layout (``<env>.zip`` beside ``<env>/vecnormalize.pkl``):
    ``models/cliff`` -> ``models/cliff/vecnormalize.pkl``; a model file not named ``.zip`` gets
    ``<file>_vecnormalize.pkl`` beside it."""
    return _model_side_file(path, VEC_NORMALIZE_FILE)


def _model_side_file(path: str | Path, name: str) -> Path:
    """The file ``name`` of the model saved at ``path``: ``models/cliff`` -> ``models/cliff/<name>``, a model file
    not named ``.zip`` ``<file>_<name>`` (:func:`vec_normalize_file`)."""
    file = model_file(path)
    if file.suffix == ".zip":
        return file.with_suffix("") / name
    return file.with_name(f"{file.name}_{name}")


def _saved_side_file(path: Path, name: str) -> Path | None:
    """The file ``name`` of the model saved at ``path`` (:func:`_model_side_file`), or for a checkpoint of SB3's
    ``CheckpointCallback`` (``NAME_<steps>_steps.zip``) that of its run (``NAME/<name>``), where ``train`` writes
    it once for all its checkpoints; ``None`` where neither exists."""
    import re

    candidates = [_model_side_file(path, name)]
    checkpoint = re.fullmatch(r"(.+)_(\d+)_steps", path.name.removesuffix(".zip"))
    if checkpoint is not None:
        candidates.append(_model_side_file(path.with_name(f"{checkpoint[1]}.zip"), name))
    return next((candidate for candidate in candidates if candidate.is_file()), None)


#: The file of the wrappers a model's env was made with (rl-zoo3 keeps them in its run's ``config.yml``).
ENV_WRAPPER_FILE = "env_wrapper.yml"


def env_wrapper_file(path: str | Path) -> Path:
    """Where ``train`` writes the ``env_wrapper`` of the model it saves at ``path``, beside its ``VecNormalize``
    statistics (:func:`vec_normalize_file`): ``models/cliff`` -> ``models/cliff/env_wrapper.yml``."""
    return _model_side_file(path, ENV_WRAPPER_FILE)


def save_env_wrapper(path: str | Path, env_wrapper: EnvWrappers) -> Path | None:
    """Write ``env_wrapper`` (as an entry writes it: :func:`written_env_wrapper`) at :func:`env_wrapper_file` of the
    model saved at ``path``, or, for none, remove the file an earlier model saved there left.

    :return: the file, or ``None`` for no wrapper.
    """
    import yaml

    file = env_wrapper_file(path)
    if not env_wrapper:
        file.unlink(missing_ok=True)
        return None
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yaml.safe_dump(written_env_wrapper(env_wrapper), sort_keys=False))
    return file


def saved_env_wrapper(path: str | Path, env_id: str | None = None) -> EnvWrappers:
    """The ``env_wrapper`` the model saved at ``path`` was trained in (:func:`save_env_wrapper`), that of its run for
    a checkpoint of SB3's ``CheckpointCallback`` (``NAME_<steps>_steps.zip``: ``NAME/env_wrapper.yml``), or for a
    model in a run folder of rl-zoo3 (:func:`rl_zoo_env_folder`, as :func:`saved_statistics` finds it) the wrappers of
    its ``config.yml`` (:func:`rl_zoo_env_wrapper`); ``()`` where there is none.

    :raises CommandError: a file that is not such a list, or names a wrapper that does not import.
    """
    import yaml

    path = model_path(path)
    found = _saved_side_file(path, ENV_WRAPPER_FILE)
    if found is None:
        folder = rl_zoo_env_folder(path, env_id)
        config = None if folder is None else folder / RL_ZOO_CONFIG_FILE
        return rl_zoo_env_wrapper(config) if config is not None and config.is_file() else ()
    try:
        return parse_env_wrapper(yaml.safe_load(found.read_text()), str(found), vec_env=None)
    except (yaml.YAMLError, ValueError) as err:
        raise CommandError(f"{found}: {err}" if isinstance(err, yaml.YAMLError) else str(err)) from err


def saved_statistics(path: str | Path, env_id: str | None = None) -> Path | None:
    """The ``VecNormalize`` statistics of the model saved at ``path``: :func:`vec_normalize_file`, or for a
    checkpoint of SB3's ``CheckpointCallback`` (``NAME_<steps>_steps.zip``) the one it saves beside it
    (``NAME_vecnormalize_<steps>_steps.pkl``), or for a model in a run folder of rl-zoo3 (:func:`rl_zoo_env_folder`,
    whatever ``env_id`` it is evaluated on: ``logs/ppo/CartPole-v1_1/best_model.zip``) the one rl-zoo3 saves there
    for every model of the run and its ``enjoy`` loads (``logs/ppo/CartPole-v1_1/CartPole-v1/vecnormalize.pkl``);
    ``None`` where there is none and the save records no ``VecNormalize``
    (:func:`~ordergrad_rl.agents.common.saving.saved_vec_normalize`).

    :raises CommandError: the save records that its model acts on ``VecNormalize``'s statistics, or for an SB3 model
        of an rl-zoo3 run its ``config.yml``'s ``normalize`` does, and none of the files exists (its policy would act
        on raw observations, wrongly).
    """
    import re

    from ordergrad_rl.agents.common.saving import read_saved_data, saved_vec_normalize

    path = model_path(path)
    candidates = [vec_normalize_file(path)]
    checkpoint = re.fullmatch(r"(.+)_(\d+)_steps", path.name.removesuffix(".zip"))
    if checkpoint is not None:
        candidates.append(path.with_name(f"{checkpoint[1]}_vecnormalize_{checkpoint[2]}_steps.pkl"))
    folder = rl_zoo_env_folder(path, env_id)
    if folder is not None:
        candidates.append(folder / VEC_NORMALIZE_FILE)
    found = next((candidate for candidate in candidates if candidate.is_file()), None)
    if found is None:
        if folder is not None:  # an SB3 save records no VecNormalize: its rl-zoo3 run's config.yml says so
            _check_rl_zoo_normalize(path, folder)
        try:
            record = saved_vec_normalize(read_saved_data(path))
        except ValueError as err:
            raise CommandError(str(err)) from err
        if record is not None:
            arguments = ", ".join(f"{key}={value}" for key, value in record.items())
            raise CommandError(
                f"{path} was trained in VecNormalize({arguments}), whose statistics it acts on: they are not at "
                f"{' or '.join(map(str, candidates))} (train --save writes them there; with VecNormalize.save, save "
                "them there)"
            )
    return found


def _check_rl_zoo_normalize(path: Path, folder: Path) -> None:
    """:raises CommandError: the ``config.yml`` of the rl-zoo3 run ``folder`` of the model saved at ``path`` has a
    ``normalize`` of the observations, whose statistics are missing from ``folder`` (rl-zoo3's ``enjoy`` would run
    the policy on raw observations, wrongly)."""
    from ordergrad_rl.zoo.algorithms import python_text

    config = folder / RL_ZOO_CONFIG_FILE
    if not config.is_file():
        return
    value = read_rl_zoo_file(config).get("normalize")
    try:  # true, or VecNormalize's arguments: a mapping or its text, as rl-zoo3 writes them (parse_normalize)
        normalize = python_text(value) if isinstance(value, str) else value
    except ValueError as err:
        raise CommandError(f"{config}: normalize: expected true, false or VecNormalize's arguments, got {err}") from err
    if normalize is True or (isinstance(normalize, dict) and normalize.get("norm_obs", True)):
        raise CommandError(
            f"{path} was trained in VecNormalize (normalize: {value!r} in {config}), whose statistics its policy "
            f"acts on: they are not at {folder / VEC_NORMALIZE_FILE}, where rl-zoo3 saves them"
        )


#: rl-zoo3's file of a run's hyperparameters, beside its ``VecNormalize`` statistics (:func:`rl_zoo_env_folder`).
RL_ZOO_CONFIG_FILE = "config.yml"
#: rl-zoo3's file of the command-line arguments a run was trained with (its ``train``'s), beside ``config.yml``.
RL_ZOO_ARGS_FILE = "args.yml"
#: The name of a run folder of rl-zoo3: ``<env name>_<run id>[_<uuid>]``.
RL_ZOO_RUN = r"_\d+(_.+)?"


def rl_zoo_env_name(env_id: str) -> str:
    """The name rl-zoo3 gives the folders of ``env_id`` (``huggingface_sb3``'s ``EnvironmentName``): its ``/`` as
    ``-`` (``ALE/Pong-v5`` -> ``ALE-Pong-v5``), without the module of gym.make's ``module:EnvId-v0`` form (rl-zoo3
    imports its ``--gym-packages`` and names the id alone)."""
    return env_id.rpartition(":")[2].replace("/", "-")


def rl_zoo_env_folder(path: Path, env_id: str | None) -> Path | None:
    """``<run>/<env name>/`` of a model saved in a run folder of rl-zoo3,
    ``<log folder>/<algo>/<env name>_<run>[_<uuid>]/`` (``logs/ppo/CartPole-v1_1/best_model.zip``; the env name is
    :func:`rl_zoo_env_name`'s: ``logs/ppo/ALE-Pong-v5_1/ALE-Pong-v5/``), where rl-zoo3 keeps the run's
    ``vecnormalize.pkl``, ``config.yml`` and ``args.yml``; ``None`` for a model elsewhere. That of ``env_id`` (the
    env it is evaluated on) where the run is named for it, else (no ``env_id``, or another env than the run's, such
    as a variant of it) the one folder of the run that holds one of those files, whose name the run's starts with,
    as rl-zoo3's ``get_trained_models`` finds a run's env: they are the run's, whatever env the model runs on."""
    import re

    def named_for(name: str) -> bool:
        return re.fullmatch(re.escape(name) + RL_ZOO_RUN, path.parent.name) is not None

    if env_id is not None and named_for(rl_zoo_env_name(env_id)):
        return path.parent / rl_zoo_env_name(env_id)
    if re.search(RL_ZOO_RUN, path.parent.name) is None:  # not a run folder (models/): its entries are not listed
        return None
    files = (RL_ZOO_ARGS_FILE, RL_ZOO_CONFIG_FILE, VEC_NORMALIZE_FILE)
    found = [
        folder
        for folder in (path.parent.iterdir() if path.parent.is_dir() else ())
        if named_for(folder.name) and folder.is_dir() and any((folder / file).is_file() for file in files)
    ]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class PythonObject:
    """A value of rl-zoo3's ``config.yml`` or ``args.yml`` that PyYAML wrote with a Python tag (a NumPy scalar, a
    class), which :func:`load_rl_zoo_config` does not construct: PyYAML's unsafe loader, which rl-zoo3 reads them
    with, would run code to.

    :param tag: its tag, ``!!python/object/apply:numpy._core.multiarray.scalar``.
    """

    tag: str

    def __repr__(self) -> str:
        return f"<a Python object ({self.tag}), not read>"


def check_read_env_kwargs(env_kwargs: Mapping[str, Any], where: str, option: str) -> None:
    """:raises CommandError: a value of ``env_kwargs`` (read from ``where``, an rl-zoo3 file and its entry) that is,
    or holds, a :class:`PythonObject`, which the env would get as that placeholder, named with ``option``, which
    gives it instead."""

    def unread(value: Any) -> PythonObject | None:
        if isinstance(value, PythonObject):
            return value
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
        return next((found for item in items if (found := unread(item)) is not None), None)

    for key, value in env_kwargs.items():
        if (found := unread(value)) is not None:
            raise CommandError(
                f"{where}: {key}: a Python object ({found.tag}), which is not read (PyYAML's unsafe loader, rl-zoo3's, "
                f"would run code to construct it): give its value with {option} {key}=VALUE"
            )


def load_rl_zoo_config(text: str) -> Any:
    """rl-zoo3's ``config.yml`` or ``args.yml``, which ``yaml.dump`` wrote from an ``OrderedDict``: read with PyYAML's
    ``SafeLoader``, its ``!!python/object/apply:collections.OrderedDict`` as the mapping of its pairs, a
    ``!!python/tuple`` (a tuple of an ``--env-kwargs`` value) as the tuple, and any other Python tag as a
    :class:`PythonObject` naming it (never run)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def ordered_dict(loader: yaml.SafeLoader, node: Any) -> dict[Any, Any]:
        (pairs,) = loader.construct_sequence(node, deep=True)
        return {key: value for key, value in pairs}

    Loader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", ordered_dict)
    Loader.add_constructor(
        "tag:yaml.org,2002:python/tuple", lambda loader, node: tuple(loader.construct_sequence(node, deep=True))
    )
    Loader.add_multi_constructor(
        "tag:yaml.org,2002:python/", lambda loader, suffix, node: PythonObject(f"!!python/{suffix}")
    )
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader, with the constructors above


def read_rl_zoo_file(file: Path) -> dict[str, Any]:
    """The mapping of rl-zoo3's ``config.yml`` or ``args.yml`` (:func:`load_rl_zoo_config`).

    :raises CommandError: a file that is not valid YAML, or not a mapping.
    """
    import yaml

    try:
        values = load_rl_zoo_config(file.read_text())
    except yaml.YAMLError as err:
        raise CommandError(f"{file}: not valid YAML ({err})") from err
    if not isinstance(values, dict):
        held = "arguments" if file.name == RL_ZOO_ARGS_FILE else "hyperparameters"
        raise CommandError(f"{file}: expected rl-zoo3's mapping of a run's {held}")
    return values


def rl_zoo_env_wrapper(config: Path) -> EnvWrappers:
    """The wrappers a run of rl-zoo3 made its envs in, from its ``config.yml``: its ``env_wrapper``, then its
    ``vec_env_wrapper`` and ``frame_stack`` (:func:`vec_env_wrappers`), as rl-zoo3's ``enjoy`` makes its env.

    :raises CommandError: a file that is not such a mapping, or wrappers that do not import.
    """
    values = read_rl_zoo_file(config)
    try:
        env_wrapper = parse_env_wrapper(values.get("env_wrapper"), f"{config}: env_wrapper")
        vec_env_wrapper = parse_env_wrapper(values.get("vec_env_wrapper"), f"{config}: vec_env_wrapper", vec_env=True)
        frame_stack = parse_frame_stack(values.get("frame_stack"), f"{config}: frame_stack")
    except ValueError as err:
        raise CommandError(str(err)) from err
    return env_wrapper + vec_env_wrappers(vec_env_wrapper, frame_stack)


def env_label(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> str:
    """``env_id`` with the arguments it is made with, as the commands print it: ``FrozenLake-v1 (is_slippery=True)``."""
    if not env_kwargs:
        return env_id
    return f"{env_id} ({' '.join(f'{key}={value!r}' for key, value in env_kwargs.items())})"


def save_run_arguments(path: str | Path, arguments: Mapping[str, Any] | None) -> Path | None:
    """Write ``arguments`` (the env id a run trained on, its ``env_kwargs``, ``gym_packages``, ...: what
    :func:`model_env` reads) to ``args.yml`` beside the model saved at ``path``, as rl-zoo3 writes its ``train``'s
    arguments beside ``<env>.zip`` (``models/cliff`` -> ``models/cliff/args.yml``), or, for none, remove the file
    an earlier model saved there left.

    :return: the file, or ``None`` for no arguments.
    """
    import yaml

    file = _model_side_file(path, RL_ZOO_ARGS_FILE)
    if arguments is None:
        file.unlink(missing_ok=True)
        return None
    file.parent.mkdir(parents=True, exist_ok=True)
    # yaml.dump, as rl-zoo3's: a tuple of an --env-kwargs value is written with its Python tag (load_rl_zoo_config).
    file.write_text(yaml.dump(dict(arguments), sort_keys=True))
    return file


def run_arguments_file(path: Path, env_id: str | None = None) -> Path | None:
    """The ``args.yml`` of the run of the model saved at ``path``: the one ``train --save`` writes beside it
    (:func:`save_run_arguments`; a checkpoint's is its run's), or for a model in a run folder of rl-zoo3
    (:func:`rl_zoo_env_folder`) the run's ``<env>/args.yml``; ``None`` where there is none."""
    found = _saved_side_file(path, RL_ZOO_ARGS_FILE)
    if found is None:
        folder = rl_zoo_env_folder(path, env_id)
        if folder is not None and (folder / RL_ZOO_ARGS_FILE).is_file():
            return folder / RL_ZOO_ARGS_FILE
    return found


def run_argument(path: str | Path, name: str, env_id: str | None = None) -> tuple[Any, Path | None]:
    """``(value, file)``: the entry ``name`` of the ``args.yml`` of the run of the model saved at ``path``
    (:func:`run_arguments_file`) and that file, or ``(None, None)`` where there is none.

    rl-zoo3's ``args.yml`` (its ``train``'s arguments) has no ``eval_env``: its runs evaluate on their ``env`` every
    ``eval_freq`` steps (with ``eval_env_kwargs``, else ``env_kwargs``), none for an ``eval_freq`` of ``-1`` (or
    ``0``). Its entries read as ``train --save`` writes them: ``eval_env`` its ``env``, or ``None`` without
    evaluation, whose ``eval_freq`` is then ``None`` too.
    """
    file = run_arguments_file(model_path(path), env_id)
    if file is None:
        return None, None
    values = read_rl_zoo_file(file)
    if "eval_env" not in values and "eval_freq" in values:  # rl-zoo3's: it evaluated on its env, or never
        freq = values["eval_freq"]
        evaluates = type(freq) is int and freq > 0
        values = values | {
            "eval_env": values.get("env") if evaluates else None,
            "eval_freq": freq if evaluates else None,
        }
    return values.get(name), file


class ModelEnv(NamedTuple):
    """The env a saved model is evaluated on (:func:`model_env`).

    :param env: its id.
    :param env_kwargs: the arguments it is made with.
    :param gym_packages: the modules imported to register it, from the ``args.yml`` of the model's run.
    :param option: where its arguments come from, as the errors about them name it (:func:`make_env`'s
        ``option``): ``--env-kwargs``, or the file of the run's arguments (``models/cliff/args.yml: env_kwargs``)
        where it gives some, which a user fixes there (a key given with ``--env-kwargs`` replaces its value).
    """

    env: str
    env_kwargs: dict[str, Any]
    gym_packages: list[str]
    option: str = "--env-kwargs"


def model_env(path: str | Path, env_id: str | None, env_kwargs: Mapping[str, Any]) -> ModelEnv:
    """The env id and arguments the model saved at ``path`` is evaluated on, or trained on again: ``env_id`` and
    ``env_kwargs`` (``--env``, ``--env-kwargs``), and the ``args.yml`` of its run, as rl-zoo3's ``enjoy`` reads it,
    so that nothing the run was trained with is given again. That file is the one ``train --save`` writes beside the
    model (:func:`save_run_arguments`; a checkpoint's is its run's), or for a model in a run folder of rl-zoo3
    (:func:`rl_zoo_env_folder`) the run's ``<env>/args.yml``, beside its ``config.yml``.

    From it: the ``env`` where ``env_id`` is ``None``, the modules of its ``gym_packages`` imported (their import
    registers the env), and, for that env (not another id the model is evaluated on, such as a deployment variant),
    its arguments: those of ``config.yml``'s ``env_kwargs``, replaced by those of ``args.yml`` (the ``train
    --env-kwargs``) where it has them, as in ``enjoy``, updated with ``env_kwargs`` (a key given wins).

    :raises CommandError: no ``env_id``, and no ``args.yml`` to read the env from; a file that is not such a
        mapping, an ``env_kwargs`` that is not a mapping, or a module of its ``gym_packages`` that does not import.
    """
    from ordergrad_rl.common.options import import_gym_packages

    path = model_path(path)
    found = run_arguments_file(path, env_id)
    arguments = {} if found is None else read_rl_zoo_file(found)
    saved_env = arguments.get("env")
    if env_id is None:
        if not isinstance(saved_env, str):
            raise CommandError(
                f"give --env ID, the env to evaluate {path} on (a model saved by train --save, or in a run folder of "
                f"rl-zoo3, is evaluated on the env of the {RL_ZOO_ARGS_FILE} beside it)"
            )
        env_id = saved_env
    packages = arguments.get("gym_packages") or []
    if not isinstance(packages, list) or not all(isinstance(package, str) for package in packages):
        raise CommandError(f"{found}: gym_packages: expected a list of module names, got {packages!r}")
    try:
        import_gym_packages(packages)
    except CommandError as err:
        raise CommandError(f"{found}: {err}") from err
    made: dict[str, Any] = {}
    source = None
    if found is not None and isinstance(saved_env, str) and rl_zoo_env_name(saved_env) == rl_zoo_env_name(env_id):
        config_file = found.with_name(RL_ZOO_CONFIG_FILE)
        config = read_rl_zoo_file(config_file) if config_file.is_file() else {}
        for file, values in ((config_file, config), (found, arguments)):
            saved = values.get("env_kwargs")
            if saved is not None and not isinstance(saved, dict):
                raise CommandError(f"{file}: env_kwargs: expected a mapping of the env's arguments, got {saved!r}")
            if saved is not None:  # args.yml's replace config.yml's, as in enjoy
                made, source = dict(saved), file
    # A value the file's reader did not construct, unless --env-kwargs gives it.
    check_read_env_kwargs(
        {key: made[key] for key in made if key not in env_kwargs}, f"{source}: env_kwargs", "--env-kwargs"
    )
    option = "--env-kwargs"
    if any(key not in env_kwargs for key in made):  # the file gives some: a bad one is fixed there
        option = f"{source}: env_kwargs" + (" under --env-kwargs" if env_kwargs else "")
    return ModelEnv(env_id, made | dict(env_kwargs), packages, option)


def parse_frame_stack(value: Any, where: str) -> int | None:
    """rl-zoo3's ``frame_stack`` value: the number of frames ``VecFrameStack`` stacks, or ``None`` without it.

    :raises ValueError: a value that is not a positive integer.
    """
    counts = isinstance(value, int) and not isinstance(value, bool)
    if value is not None and not (counts and value >= 1):
        raise ValueError(
            f"{where}: expected the number of frames VecFrameStack stacks (a positive integer, as rl-zoo3 reads "
            f"it), got {value!r}"
        )
    return value


def under_frame_stack(venv: Any, normalize: Callable[[Any], Any]) -> Any:
    """``normalize(venv)`` (a ``VecNormalize`` of ``venv``), under ``venv``'s ``VecFrameStack`` where it is one
    (:func:`vec_env_wrappers`): ``VecFrameStack(normalize(venv.venv))``, as rl-zoo3 stacks normalized frames, so
    that the statistics are of one frame's observations, those of an rl-zoo3 run's ``vecnormalize.pkl`` too."""
    from stable_baselines3.common.vec_env import VecFrameStack

    if isinstance(venv, VecFrameStack):  # frame_stack's, made with SB3's channel order, found again the same
        return VecFrameStack(normalize(venv.venv), venv.stacked_obs.n_stack)
    return normalize(venv)


def frozen_vec_normalize(venv: Any, statistics: Any) -> Any:
    """``venv`` in the ``VecNormalize`` of ``statistics`` (a training env's ``VecNormalize``, or the file its
    ``save`` wrote) as rl-zoo3 evaluates: its settings and statistics, which evaluation does not update
    (``training=False``), and the env's own rewards (``norm_reward=False``); under a ``VecFrameStack``
    (:func:`under_frame_stack`)."""
    import copy

    from stable_baselines3.common.vec_env import VecNormalize

    def frozen(inner: Any) -> Any:
        if isinstance(statistics, VecNormalize):
            normalize = copy.deepcopy(statistics)  # its pickled state, without its env (as VecNormalize.load reads)
            normalize.set_venv(inner)
        else:
            normalize = VecNormalize.load(str(statistics), inner)
        normalize.training = False
        normalize.norm_reward = False
        return normalize

    return under_frame_stack(venv, frozen)


# ---------------------------------------------------------------------------------------------------- evaluation
@dataclass
class Evaluation:
    """Episodes of a policy on an env.

    :param returns: ``[E]`` undiscounted episode returns (the ``Monitor``'s).
    :param lengths: ``[E]`` episode lengths.
    :param info: numeric step-info summaries, keyed like TensorBoard's ``eval_info/`` tags (``<key>_mean``: mean
        over an episode's steps, ``<key>_final``: value at its last step, averaged over episodes; vector entries
        whose components the env names, one pair per component: ``weight_cash_mean``).
    """

    returns: np.ndarray
    lengths: np.ndarray
    info: dict[str, float] = field(default_factory=dict)

    def profile(self) -> dict[str, float]:
        """:func:`ordergrad_rl.risk.risk_profile` of the returns."""
        from ordergrad_rl.risk import risk_profile

        return risk_profile(self.returns)

    def info_rows(self) -> list[tuple[str, float | None, float | None]]:
        """``(entry, mean over steps, value at the episode end)`` per info entry."""
        rows: dict[str, list[float | None]] = {}
        for key, value in self.info.items():
            base, suffix = key.rsplit("_", 1)
            rows.setdefault(base, [None, None])[0 if suffix == "mean" else 1] = value
        return [(name, mean, final) for name, (mean, final) in rows.items()]


def fitted_env(model: Any, venv: Any, env_id: str) -> Any:
    """``venv`` (made from ``env_id``) as SB3's algorithms step it, checked against ``model``: in the
    ``VecTransposeImage`` that SB3's ``_wrap_env`` puts around channel-last images (what a ``CnnPolicy`` model trained
    on observes, and what SB3's ``load(path, env)`` gives it, so rl-zoo3's enjoy), then SB3's
    ``check_for_correct_spaces`` and the env's action masks for a model that acts with them.

    :raises CommandError: the observation or action spaces differ, or a MaskablePPO model meets an env without masks.
    """
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.utils import check_for_correct_spaces

    from ordergrad_rl.agents.common.evaluation import check_action_masks

    venv = BaseAlgorithm._wrap_env(venv, verbose=0, monitor_wrapper=False)  # a VecEnv: only the transposition
    try:
        check_for_correct_spaces(venv, model.observation_space, model.action_space)
        check_action_masks(model, venv)
    except ValueError as err:
        raise CommandError(f"the model does not fit {env_id}: {err}") from err
    return venv


#: ``gym.make``'s own keyword arguments, which ``--env-kwargs`` passes on with the env's.
MAKE_KWARGS = ("max_episode_steps", "disable_env_checker")


def accepted_env_arguments(env_id: str) -> tuple[list[str], bool]:
    """The keyword arguments ``gym.make(env_id, ...)`` takes: its constructor's and ``gym.make``'s own
    (:data:`MAKE_KWARGS`), and whether that is all of them. A class whose ``__init__`` takes ``**kwargs`` adds the
    arguments of its bases' ``__init__`` in MRO order up to one that takes none (MuJoCo's ``HopperEnv`` passes its
    ``**kwargs`` to ``MujocoEnv``), which are not known to be all: such an env refuses its own.
    """
    import inspect

    from gymnasium.envs.registration import load_env_creator

    from ordergrad_rl.envs.sb3_vec_env import env_spec

    entry_point = env_spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    if creator is None:  # no entry point (a vector-only env): only gym.make's own
        return list(MAKE_KWARGS), False
    is_class = isinstance(creator, type)
    inits = (
        [vars(cls)["__init__"] for cls in creator.__mro__ if "__init__" in vars(cls)]
        if isinstance(creator, type)
        else [creator]
    )
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names: list[str] = []
    for i, init in enumerate(inits):
        try:
            parameters = list(inspect.signature(init).parameters.values())[int(is_class) :]  # without self
        except (TypeError, ValueError):  # a signature inspect cannot read
            return names + list(MAKE_KWARGS), False
        names += [
            parameter.name for parameter in parameters if parameter.kind in keyword and parameter.name not in names
        ]
        if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
            return names + list(MAKE_KWARGS), i == 0
    return names + list(MAKE_KWARGS), False


def check_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any] | None, option: str = "--env-kwargs") -> None:
    """The keys of ``env_kwargs`` against the arguments of ``env_id``'s constructor and ``gym.make``'s
    (:func:`accepted_env_arguments`); an env whose constructor takes ``**kwargs`` is left to refuse its own.

    :raises CommandError: a key neither takes, named with the closest argument and the list of them.
    """
    accepted, complete = accepted_env_arguments(env_id)
    if not complete:
        return
    for key in env_kwargs or {}:
        if key not in accepted:
            hint = closest_argument(key, accepted)
            if ":" in key:  # YAML's {max_episode_steps:100} (a sweep's --grid, a file) is that key, without a value
                name, _, value = key.partition(":")
                hint = f" (YAML reads {{{key}}} as that key: write {{{name}: {value}}}, a space after the colon)"
            raise CommandError(f"{option}: {env_id} takes no argument {key!r}{hint}; it takes {', '.join(accepted)}")


#: ``--vec-env`` (rl-zoo3's option): the name of each SB3 ``VecEnv`` class.
VEC_ENVS = ("dummy", "subproc")


def make_env(
    env_id: str,
    n_envs: int | None,
    seed: int | None,
    env_kwargs: dict[str, Any] | None,
    option: str = "--env-kwargs",
    vec_env: str = "dummy",
    env_wrapper: EnvWrappers = (),
) -> Any:
    """``make_sb3_vec_env(env_id, n_envs, seed, env_kwargs)``, or with ``n_envs=None`` the one env
    ``gym.make(env_id, **env_kwargs)``; with ``vec_env="subproc"``, SB3's ``make_vec_env(..., vec_env_cls=
    SubprocVecEnv)`` of the same seeds and arguments (:func:`subproc_env`).

    :param option: the option ``env_kwargs`` came from, named in the errors.
    :param vec_env: a name of :data:`VEC_ENVS`.
    :param env_wrapper: rl-zoo3's ``env_wrapper``: each env in these wrappers, outside its ``Monitor``, as
        rl-zoo3 passes them to ``make_vec_env`` (:func:`apply_env_wrapper`), but for a ``TimeLimit``, which becomes
        ``gym.make``'s ``max_episode_steps``, inside it (:func:`inner_time_limits`); its ``VecEnvWrapper`` classes
        (``vec_env_wrapper``, ``frame_stack``: :func:`vec_env_wrappers`) wrap the ``VecEnv`` (one env's without
        ``n_envs``).
    :raises CommandError: unknown env id, a package the env needs missing (:func:`check_env_id`), or env arguments
        the env refuses (:func:`check_env_kwargs`, then the env's own ``TypeError``, ``ValueError``, and with
        arguments its ``KeyError`` or ``AssertionError``); ``"subproc"`` for an env run as one
        NumPy batch; a wrapper that refuses the env.
    """
    import gymnasium as gym

    from ordergrad_rl.envs import make_sb3_vec_env

    check_env_id(env_id)
    check_env_kwargs(env_id, env_kwargs, option)
    env_kwargs, env_wrapper = inner_time_limits(env_id, env_kwargs, env_wrapper)
    env_wrapper, vec_env_wrapper = split_vec_env_wrappers(env_wrapper)
    try:
        if vec_env == "subproc":
            venv = subproc_env(env_id, n_envs or 1, seed, env_kwargs, env_wrapper)
        elif n_envs is None and not vec_env_wrapper:
            return apply_env_wrapper(gym.make(env_id, **(env_kwargs or {})), env_wrapper)
        else:
            wrapper_class = env_wrapper_class(env_wrapper)
            venv = make_sb3_vec_env(env_id, n_envs or 1, seed=seed, env_kwargs=env_kwargs, wrapper_class=wrapper_class)
    except (TypeError, ValueError, KeyError, AssertionError) as err:
        if isinstance(err, KeyError | AssertionError) and not env_kwargs:
            raise  # not a refusal of the arguments: the env's own failure, with its traceback
        # An env taking **kwargs refuses its own (MuJoCo's: "MujocoEnv.__init__() got an unexpected keyword argument");
        # name the closest argument it does take, as check_env_kwargs names it for the others.
        refused = [key for key in env_kwargs or {} if f"unexpected keyword argument {key!r}" in str(err)]
        hint = closest_argument(refused[0], accepted_env_arguments(env_id)[0]) if refused else ""
        # A value the env looks up or asserts (FrozenLake-v1's map_name=7x7: KeyError '7x7'), named as such.
        reason = f"{type(err).__name__} {err}" if isinstance(err, KeyError | AssertionError) else str(err)
        raise CommandError(
            f"{option}: cannot make {env_id} with env arguments {env_kwargs or {}}: {reason}{hint}"
        ) from err
    return apply_vec_env_wrapper(venv, vec_env_wrapper)


def subproc_env(
    env_id: str, n_envs: int, seed: int | None, env_kwargs: dict[str, Any] | None, env_wrapper: EnvWrappers = ()
) -> Any:
    """SB3's ``make_vec_env(env_id, n_envs, seed, env_kwargs=env_kwargs, vec_env_cls=SubprocVecEnv)``: each env
    steps in a worker process, seeded as ``make_sb3_vec_env`` seeds it (``seed + i``), in ``env_wrapper``'s wrappers
    (:func:`apply_env_wrapper`).

    The workers get the id's registration, its ``EnvSpec`` (:func:`make_from_spec`), not the id: a worker started by
    ``forkserver`` or ``spawn`` has imported none of the modules that registered it (this package, ``--gym-packages``,
    a ``module:EnvId-v0``'s module, the user's script), while the spec's entry point imports what the env needs.

    :raises CommandError: an id that runs as one NumPy batch (:func:`is_batched`), which a subprocess per env
        would step env by env; a wrapper that refuses the env (:func:`apply_env_wrapper`, tried once in this process).
    """
    import functools

    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from ordergrad_rl.envs.sb3_vec_env import env_spec

    if is_batched(env_id) and "max_episode_steps" not in (env_kwargs or {}) and not env_wrapper:
        raise CommandError(
            f"--vec-env subproc: {env_id} runs all its envs as one NumPy batch in this process, faster than a "
            "process per env; use --vec-env dummy"
        )
    make = functools.partial(make_from_spec, env_spec(env_id))
    if env_wrapper:  # a wrapper's refusal of the env here, not as a traceback of each worker
        apply_env_wrapper(make(**(env_kwargs or {})), env_wrapper).close()
    wrapper_class = env_wrapper_class(env_wrapper)
    return make_vec_env(
        make, n_envs, seed=seed, env_kwargs=env_kwargs, vec_env_cls=SubprocVecEnv, wrapper_class=wrapper_class
    )


def make_from_spec(spec: Any, **env_kwargs: Any) -> Any:
    """``gym.make(spec, **env_kwargs)`` of a registered ``EnvSpec``, as SB3's ``make_vec_env`` makes an env id: in
    ``render_mode="rgb_array"`` unless ``env_kwargs`` give another, or without one where the env takes none."""
    import gymnasium as gym

    try:
        return gym.make(spec, **{"render_mode": "rgb_array", **env_kwargs})
    except TypeError:
        return gym.make(spec, **env_kwargs)


def evaluate_model(
    model: Any,
    env_id: str,
    episodes: int,
    deterministic: bool,
    seed: int | None = 0,
    quiet: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    statistics: Path | None = None,
    env_wrapper: EnvWrappers = (),
    option: str = "--env-kwargs",
) -> Evaluation:
    """Run ``episodes`` episodes of ``model`` on ``make_sb3_vec_env(env_id, ..., seed, env_kwargs)`` (SB3's
    ``evaluate_policy``).

    :param statistics: the ``VecNormalize`` statistics the model acts on (:func:`saved_statistics`), or ``None``.
    :param env_wrapper: the wrappers the model trained in (:func:`saved_env_wrapper`), or ``()``.
    :param option: where ``env_kwargs`` come from, named in the errors about them (:func:`make_env`,
        :attr:`ModelEnv.option`).

    :raises CommandError: the model's observation or action space differs from the env's, or an episode has not
        ended after ``MAX_EPISODE_STEPS`` steps (SB3's ``evaluate_policy`` would wait for it forever).
    """
    from stable_baselines3.common.utils import set_random_seed
    from tqdm.auto import tqdm

    from ordergrad_rl.agents.common.buffers import MAX_EPISODE_STEPS  # training's bound on an episode
    from ordergrad_rl.agents.common.evaluation import (
        EndlessEpisodeError,
        EpisodeEndCheck,
        EpisodeInfoAggregator,
        UnrecordedEpisodeError,
        evaluate_episodes,
        info_component_names,
    )

    n_envs = eval_n_envs(env_id, episodes, bool(env_wrapper))
    venv = fitted_env(model, make_env(env_id, n_envs, seed, env_kwargs, option, env_wrapper=env_wrapper), env_id)
    if statistics is not None:
        venv = frozen_vec_normalize(venv, statistics)
    if seed is not None:
        set_random_seed(seed)  # the policy's own sampling (without --deterministic)
    aggregator = EpisodeInfoAggregator(venv.num_envs, names=info_component_names(venv))
    ends = EpisodeEndCheck(venv.num_envs, MAX_EPISODE_STEPS)
    with tqdm(total=episodes, desc=f"episodes on {env_id}", disable=quiet, dynamic_ncols=True, leave=False) as bar:

        def callback(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
            aggregator(locals_, globals_)
            if locals_["done"]:
                bar.update(1)
            try:
                ends(locals_)
            except EndlessEpisodeError as err:
                venv.close()
                raise CommandError(
                    f"an episode on {env_id} has not ended after {MAX_EPISODE_STEPS:,} steps (the env has no time "
                    f"limit, or a longer one): give it one with --env-kwargs max_episode_steps=..."
                ) from err
            except UnrecordedEpisodeError as err:  # a wrapper outside the Monitor: an env_wrapper's
                venv.close()
                called = ", ".join(wrapper_call(path, kwargs) for path, kwargs in env_wrapper)
                raise CommandError(
                    f"the Monitor of {env_id} has recorded no episode's end in {MAX_EPISODE_STEPS:,} steps, while "
                    f"episodes ended: a wrapper outside it ends them (env_wrapper: {called}), and evaluation counts "
                    "the Monitor's episodes only. End them inside the Monitor: a time limit as --env-kwargs "
                    "max_episode_steps=... or a gymnasium.wrappers.TimeLimit (made gym.make's)"
                ) from err

        returns, lengths = evaluate_episodes(
            model, venv, n_eval_episodes=episodes, deterministic=deterministic, return_episode_rewards=True,
            callback=callback,
        )  # fmt: skip
    venv.close()
    return Evaluation(np.asarray(returns, dtype=np.float64), np.asarray(lengths), aggregator.summary())


#: Contexts of a pass@k evaluation on an env that does not declare its own: reset seeds 0 .. 99.
DEFAULT_SEED_CONTEXTS = 100
#: Envs of a pass@k evaluation on an env without a native batch.
PASS_AT_K_ENVS = 8


def pass_at_k_evaluation(
    model: Any,
    env_id: str,
    n_samples: int,
    n_contexts: int | None = None,
    deterministic: bool = False,
    seed: int | None = 0,
    quiet: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    statistics: Path | None = None,
    env_wrapper: EnvWrappers = (),
    option: str = "--env-kwargs",
) -> Any:
    """``n_samples`` episodes of ``model`` per context (:func:`ordergrad_rl.agents.sample_successes`), on the
    ``VecNormalize`` of ``statistics`` if given (:func:`saved_statistics`), in the wrappers of ``env_wrapper``
    (:func:`saved_env_wrapper`), made with ``env_kwargs`` (from ``option``, named in the errors about them).

    Contexts: the first ``n_contexts`` of those the env declares (all by default), else reset seeds ``0 ..
    n_contexts - 1`` (:data:`DEFAULT_SEED_CONTEXTS` by default).

    :return: a :class:`~ordergrad_rl.agents.common.evaluation.PassAtK`.
    :raises CommandError: spaces that do not fit, more contexts than the env has, or episodes without
        ``info["is_success"]``.
    """
    from stable_baselines3.common.utils import set_random_seed
    from tqdm.auto import tqdm

    from ordergrad_rl.agents.common.env_util import first_env_attr
    from ordergrad_rl.agents.common.evaluation import sample_successes
    from ordergrad_rl.agents.common.groups import N_CONTEXTS

    batched = is_batched(env_id)
    venv = make_env(env_id, 1, seed, env_kwargs, option, env_wrapper=env_wrapper)
    declared = first_env_attr(venv, N_CONTEXTS)
    if declared is not None:
        available = int(declared)
        if n_contexts is not None and n_contexts > available:
            raise CommandError(f"--contexts {n_contexts}: {env_id} has {available} contexts")
        contexts = np.arange(available if n_contexts is None else n_contexts)
    else:
        contexts = np.arange(DEFAULT_SEED_CONTEXTS if n_contexts is None else n_contexts)
    total = contexts.size * n_samples
    venv.close()
    n_envs = min(total, 1024) if batched and not env_wrapper else min(total, PASS_AT_K_ENVS)
    venv = fitted_env(model, make_env(env_id, n_envs, seed, env_kwargs, option, env_wrapper=env_wrapper), env_id)
    if statistics is not None:
        venv = frozen_vec_normalize(venv, statistics)
    if seed is not None:
        set_random_seed(seed)  # the policy's sampling
    with tqdm(total=total, desc=f"episodes on {env_id}", disable=quiet, dynamic_ncols=True, leave=False) as bar:
        try:
            return sample_successes(model, venv, contexts, n_samples, deterministic, on_episode=lambda: bar.update(1))
        except ValueError as err:
            raise CommandError(str(err)) from err
        finally:
            venv.close()
