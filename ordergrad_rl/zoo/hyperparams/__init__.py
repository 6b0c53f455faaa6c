"""Per-env hyperparameters, in rl-zoo3's convention: one YAML file per algorithm shipped in the package
(``ordergrad_ppo.yml``, ``ordergrad_reinforce.yml``), keyed by env id, every value with a one-line reason in a
comment. ``ordergrad-rl train`` applies the entry of its ``--env`` by default; from Python:

    >>> from ordergrad_rl import OrderGradPPO
    >>> from ordergrad_rl.zoo.hyperparams import load_hyperparams
    >>> hp = load_hyperparams("ppo", "SyntheticTailRisk-v0")
    >>> model = OrderGradPPO(hp.policy, "SyntheticTailRisk-v0", objective="cvar0.2", **hp.kwargs)
    >>> model = model.learn(hp.n_timesteps)  # doctest: +SKIP

An env without an entry needs none: the algorithms' defaults are meant to work everywhere (see their docstrings);
an entry exists only where an env is measured to need its own settings.
"""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ordergrad_rl.zoo.models import EnvWrappers

#: ``--algo`` name -> the YAML file shipped for it.
FILES: dict[str, str] = {"ppo": "ordergrad_ppo.yml", "reinforce": "ordergrad_reinforce.yml"}
#: Keys of an entry that are not constructor arguments (rl-zoo3's names).
N_TIMESTEPS, POLICY, ENV_KWARGS, NORMALIZE = "n_timesteps", "policy", "env_kwargs", "normalize"
ENV_WRAPPER, VEC_ENV_WRAPPER, FRAME_STACK, CALLBACK = "env_wrapper", "vec_env_wrapper", "frame_stack", "callback"


@dataclasses.dataclass(frozen=True)
class Hyperparams:
    """One env's entry of a hyperparameter file.

    :param env_id: the entry's env id.
    :param kwargs: constructor arguments of the algorithm (``policy_kwargs`` a dict).
    :param n_timesteps: env steps to train for, or ``None`` if the entry does not say.
    :param policy: the policy name (default: the algorithm's first, ``"MlpPolicy"``; recurrent_ppo's
        ``"MlpLstmPolicy"``).
    :param source: the file the entry comes from.
    :param env_kwargs: the env's arguments (rl-zoo3's ``--env-kwargs``; ``gym.make``'s ``max_episode_steps`` too),
        ``{}`` if the entry has none: ``train`` makes its env with them, under its ``--env-kwargs``.
    :param normalize: rl-zoo3's ``normalize``: ``None`` without it (or ``false``), else the keyword arguments of
        SB3's ``VecNormalize`` it gives (``{}`` for ``true``), which ``train`` wraps its env in
        (:func:`~ordergrad_rl.zoo.training.vec_normalize_kwargs`).
    :param env_wrapper: rl-zoo3's ``env_wrapper``: ``((dotted path, keyword arguments), ...)`` of the wrappers
        ``train`` makes every env in, innermost first (:func:`~ordergrad_rl.zoo.models.parse_env_wrapper`); ``()``
        without it.
    :param vec_env_wrapper: rl-zoo3's ``vec_env_wrapper``: those of the SB3 ``VecEnvWrapper`` classes that wrap
        the ``VecEnv`` of those envs, innermost first; ``()`` without it.
    :param frame_stack: rl-zoo3's ``frame_stack``: the frames SB3's ``VecFrameStack`` stacks around them, or
        ``None`` without it (:func:`~ordergrad_rl.zoo.models.vec_env_wrappers`).
    :param callback: rl-zoo3's ``callback``: ``((dotted path, keyword arguments), ...)`` of the SB3 callbacks
        ``train`` trains with, beside its own (:func:`~ordergrad_rl.zoo.models.parse_callback`); ``()`` without it.
    """

    env_id: str
    kwargs: dict[str, Any]
    n_timesteps: int | None
    policy: str
    source: str
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    normalize: dict[str, Any] | None = None
    env_wrapper: EnvWrappers = ()
    vec_env_wrapper: EnvWrappers = ()
    frame_stack: int | None = None
    callback: EnvWrappers = ()

    @property
    def run_wrappers(self) -> EnvWrappers:
        """The wrappers a run of this entry makes its envs in: ``env_wrapper``'s, then the ``VecEnv``'s
        (:func:`~ordergrad_rl.zoo.models.vec_env_wrappers`), as ``train --save`` remembers them."""
        from ordergrad_rl.zoo.models import vec_env_wrappers

        return self.env_wrapper + vec_env_wrappers(self.vec_env_wrapper, self.frame_stack)


#: ``VecNormalize``'s arguments an entry's ``normalize`` may give (not ``venv`` nor ``training``).
VEC_NORMALIZE_ARGUMENTS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs_keys")


def parse_normalize(value: Any, where: str) -> dict[str, Any] | None:
    """rl-zoo3's ``normalize`` value -> ``VecNormalize``'s keyword arguments (``None``: no normalization).

    ``true`` / ``false``, a mapping, or its text as rl-zoo3 writes it (``"{'norm_obs': True, 'norm_reward': False}"``
    or ``"dict(norm_obs=True, norm_reward=False)"``; read, not run as code as rl-zoo3's ``eval`` does:
    :func:`~ordergrad_rl.zoo.algorithms.python_text`).

    :param where: the file and entry, for the message.
    :raises ValueError: another value, or a key ``VecNormalize`` does not take.
    """
    from ordergrad_rl.zoo.algorithms import python_text

    if isinstance(value, bool):
        return {} if value else None
    if isinstance(value, str):
        try:
            value = python_text(value)
        except ValueError as err:
            raise ValueError(f"{where}: expected a mapping of VecNormalize's arguments, got {err}") from err
    if not isinstance(value, dict):
        raise ValueError(
            f"{where}: expected true, false or a mapping of VecNormalize's arguments such as "
            f"{{'norm_obs': True, 'norm_reward': False}}, got {value!r}"
        )
    unknown = [key for key in value if key not in VEC_NORMALIZE_ARGUMENTS]
    if unknown:
        raise ValueError(
            f"{where}: VecNormalize takes no argument {unknown[0]!r}; it takes {', '.join(VEC_NORMALIZE_ARGUMENTS)}"
        )
    return dict(value)


def hyperparams_file(algo: str) -> Path:
    """The shipped hyperparameter file of ``algo`` (``"ppo"`` or ``"reinforce"``).

    :raises ValueError: an ``algo`` without one (unknown, or ``recurrent_ppo`` and ``maskable_ppo``).
    """
    from ordergrad_rl.zoo.algorithms import ALGOS

    if algo not in FILES:
        what = "no hyperparameter file is shipped for" if algo in ALGOS else "unknown algo"
        raise ValueError(f"{what} {algo!r}: hyperparameter files exist for {', '.join(FILES)}")
    return Path(str(resources.files(__package__).joinpath(FILES[algo])))


def read_hyperparams_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """All entries of a hyperparameter file: env id -> its mapping, as written.

    :raises ValueError: the file is not a YAML mapping of env ids to mappings.
    :raises OSError: the file cannot be read.
    """
    import yaml  # pyyaml: only needed when a file is read

    try:
        entries = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from err
    entries = {} if entries is None else entries
    if not isinstance(entries, dict) or not all(
        isinstance(key, str) and isinstance(value, dict) for key, value in entries.items()
    ):
        raise ValueError(f"{path}: expected a mapping of env ids to mappings of hyperparameters")
    return entries


def load_hyperparams(algo: str, env_id: str, path: str | Path | None = None) -> Hyperparams | None:
    """The entry of ``env_id`` in ``path`` (default: the file shipped for ``algo``), or ``None`` if it has none
    (or no file is shipped for ``algo``: the class defaults apply). A module-qualified id (``gym.make``'s
    ``"module:EnvId-v0"``) gets the entry of ``EnvId-v0`` unless the file has one for the qualified id.

    :raises ValueError: unknown ``algo``, a malformed file, an ``n_timesteps`` that is not a positive integer, or a
        key or value the algorithm does not accept (``lin_<x>`` becomes a linear schedule, as in ``train``).
    """
    from ordergrad_rl.zoo.algorithms import ALGOS

    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}: one of {', '.join(ALGOS)}")
    if path is None and algo not in FILES:
        return None
    source = hyperparams_file(algo) if path is None else Path(path)
    entries = read_hyperparams_file(source)
    # gym.make's "module:EnvId-v0" (ordergrad_rl:RiskyBandit-v0) is the env EnvId-v0, and has its entry.
    entry = entries.get(env_id, entries.get(env_id.rpartition(":")[2]))
    if entry is None:
        return None
    kwargs = dict(entry)
    n_timesteps = kwargs.pop(N_TIMESTEPS, None)
    if n_timesteps is not None:
        # YAML reads 1e6 as a string and 1.0e6 as a float: accept any integral number (not true, which is 1).
        try:
            count = float("nan") if isinstance(n_timesteps, bool) else float(n_timesteps)
        except (TypeError, ValueError):
            count = float("nan")
        if not count.is_integer() or count < 1:
            raise ValueError(f"{source}: {env_id}: n_timesteps must be a positive integer, got {n_timesteps!r}")
        n_timesteps = int(count)
    policy = kwargs.pop(POLICY, None)
    env_kwargs = kwargs.pop(ENV_KWARGS, None) or {}
    normalize = (
        parse_normalize(kwargs.pop(NORMALIZE), f"{source}: {env_id}: {NORMALIZE}") if NORMALIZE in kwargs else None
    )
    from ordergrad_rl.zoo.models import parse_callback, parse_env_wrapper, parse_frame_stack

    env_wrapper = parse_env_wrapper(kwargs.pop(ENV_WRAPPER, None), f"{source}: {env_id}: {ENV_WRAPPER}")
    vec_env_wrapper = parse_env_wrapper(
        kwargs.pop(VEC_ENV_WRAPPER, None), f"{source}: {env_id}: {VEC_ENV_WRAPPER}", vec_env=True
    )
    callback = parse_callback(kwargs.pop(CALLBACK, None), f"{source}: {env_id}: {CALLBACK}")
    frame_stack = parse_frame_stack(kwargs.pop(FRAME_STACK, None), f"{source}: {env_id}: {FRAME_STACK}")
    # Checked and converted as `train` does (lin_<x> to a schedule; keys the constructor lacks, or rl-zoo3's wrapper
    # keys, refused), so that ``cls(hp.policy, env_id, **hp.kwargs)`` works from Python as the README shows.
    from ordergrad_rl.common.errors import CommandError
    from ordergrad_rl.zoo.algorithms import ENTRY_OPTIONS, algorithm_class, check_hparam, check_policy_name, number
    from ordergrad_rl.zoo.models import check_env_kwargs

    cls = algorithm_class(algo)
    if policy is None:  # as train without --policy: the algorithm's first (recurrent_ppo has no "MlpPolicy")
        policy = next(iter(cls.policy_aliases))
    try:
        check_policy_name(cls, policy, f"{source}: {env_id}: policy")
        for key, value in kwargs.items():  # 3e-4, which YAML 1.1 reads as text, is the number (as in a sweep)
            kwargs[key] = check_hparam(key, number(value), cls, f"{source}: {env_id}: {key}", options=ENTRY_OPTIONS)
        if not isinstance(env_kwargs, dict) or not all(isinstance(key, str) for key in env_kwargs):
            raise CommandError(f"{source}: {env_id}: env_kwargs must map argument names to values, got {env_kwargs!r}")
        check_env_kwargs(env_id, env_kwargs, f"{source}: {env_id}: env_kwargs")
    except CommandError as err:
        raise ValueError(str(err)) from err
    return Hyperparams(
        env_id, kwargs, n_timesteps, policy, str(source), env_kwargs, normalize, env_wrapper, vec_env_wrapper,
        frame_stack, callback,
    )  # fmt: skip


__all__ = ["FILES", "Hyperparams", "hyperparams_file", "load_hyperparams", "read_hyperparams_file"]
