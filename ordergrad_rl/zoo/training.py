"""Models built from settings: the layer under ``ordergrad-rl train`` and the sweep's trials (rl-zoo3's
``ExperimentManager``, without argparse).

:class:`TrainSettings` holds what ``train`` reads from its options; :func:`build_model` makes the algorithm from
it, with the env's entry of a per-env hyperparameter file (:func:`zoo_hyperparams`) under the explicit
hyperparameters, and :func:`eval_callback` the periodic evaluation. Heavy imports (torch, SB3) happen in the
functions, so the command-line parser stays fast.
"""

from __future__ import annotations

import dataclasses
import glob
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import check_device, closest_argument
from ordergrad_rl.zoo.algorithms import algorithm_class, check_policy_name
from ordergrad_rl.zoo.hyperparams import load_hyperparams, read_hyperparams_file
from ordergrad_rl.zoo.models import (
    EnvWrapperError,
    EnvWrappers,
    check_env_id,
    eval_n_envs,
    fitted_env,
    frozen_vec_normalize,
    is_batched,
    make_env,
    save_env_wrapper,
    save_run_arguments,
    saved_statistics,
    under_frame_stack,
    vec_normalize_file,
)

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm


@dataclass
class TrainSettings:
    """One training run: ``ordergrad-rl train``'s options (the sweep fills them from a trial).

    :param algo: a key of :data:`~ordergrad_rl.zoo.algorithms.ALGOS`.
    :param env: Gymnasium env id.
    :param objective: objective spec (``cvar0.2``, ``TopM:2``, ...).
    :param k: order-statistic size (``None``: the algorithm's default).
    :param n_episodes: episodes per update (``None``: the algorithm's, or the file entry's).
    :param n_envs: parallel envs (``None``: the algorithm's).
    :param seed: random seed.
    :param policy: policy name (``None``: the file entry's, else the algorithm's first).
    :param tensorboard: TensorBoard log dir, or ``None``.
    :param eval_env: env id of the periodic evaluation, or ``None`` for none.
    :param eval_freq: env steps between evaluations (``None``: :func:`default_eval_freq` of the eval env's episode
        limit).
    :param eval_episodes: episodes per evaluation.
    :param deterministic: deterministic evaluation actions.
    :param device: torch device.
    :param verbose: SB3 verbosity.
    :param conf_file: per-env hyperparameter file (``None``: the one shipped for ``algo``; ``"none"``: none).
    :param env_kwargs: keyword arguments of ``env`` (``gym.make``'s too: ``max_episode_steps``), or ``None``.
    :param eval_env_kwargs: those of ``eval_env`` (``None``: ``env_kwargs`` if ``eval_env`` is ``env``, else none;
        ``{}``: none).
    :param vec_env: the training env's SB3 ``VecEnv`` (rl-zoo3's ``--vec-env``): ``"dummy"`` (the algorithm's
        envs, in this process) or ``"subproc"`` (``SubprocVecEnv``, :func:`~ordergrad_rl.zoo.models.subproc_env`).
    :param env_wrapper: rl-zoo3's ``env_wrapper`` (the file entry's): the wrappers every env of the run, training
        and evaluation, is made in (:func:`~ordergrad_rl.zoo.models.apply_env_wrapper`); ``()``: none.
    """

    algo: str
    env: str
    objective: str
    k: int | None = None
    n_episodes: int | None = None
    n_envs: int | None = None
    seed: int = 0
    policy: str | None = None
    tensorboard: Path | None = None
    eval_env: str | None = None
    eval_freq: int | None = None
    eval_episodes: int = 100
    deterministic: bool = True
    device: str = "cpu"
    verbose: int = 0
    conf_file: str | Path | None = None
    env_kwargs: dict[str, Any] | None = None
    eval_env_kwargs: dict[str, Any] | None = None
    vec_env: str = "dummy"
    env_wrapper: EnvWrappers = ()


#: The fewest env steps between two evaluations of a default ``eval_freq`` (:func:`default_eval_freq`): SB3's
#: ``EvalCallback``'s frequency.
EVAL_FREQ = 10_000


def default_eval_freq(eval_episodes: int, episode_limit: int | None) -> int:
    """The env steps between two evaluations where ``eval_freq`` is not given: :data:`EVAL_FREQ`, or, where the
    evaluation's ``eval_episodes`` episodes can take more steps (``eval_episodes * episode_limit``, the eval env's
    ``TimeLimit``), that many, so that an evaluation never steps its env more than training stepped its own since the
    last one.

    Why: 100 episodes every 10,000 steps, the default for every env before 2026-12-07, evaluated 10 env steps per
    training step on MountainCarContinuous-v0's 999-step episodes (``train --algo ppo --objective cvar0.2
    --timesteps 30000``: 97 s with ``--eval-env``, 16 s without). 100 episodes stay, the worst 20 of which a CVaR_0.2
    reading needs; short episodes (a limit of 100 steps or less at 100 episodes) keep 10,000.

    :param episode_limit: the eval env's ``max_episode_steps``; ``None`` (no limit): :data:`EVAL_FREQ`.
    """
    return max(EVAL_FREQ, eval_episodes * (episode_limit or 0))


def eval_frequency(settings: TrainSettings, eval_env: Any) -> int:
    """The env steps between evaluations of ``settings`` on ``eval_env`` (its ``VecEnv``): ``eval_freq`` where
    given, else :func:`default_eval_freq` of the env's episode limit."""
    from ordergrad_rl.agents.common.env_util import episode_limit

    if settings.eval_freq is not None:
        return settings.eval_freq
    return default_eval_freq(settings.eval_episodes, episode_limit(eval_env))


#: The size of each seed's block of evaluation env seeds (:func:`eval_seed`).
EVAL_SEED_OFFSET = 1_000_000


def eval_seed(seed: int) -> int:
    """The first evaluation env seed of a run of seed ``seed`` (env ``i`` of the evaluation VecEnv gets
    ``eval_seed(seed) + i``): ``(seed + 1) * EVAL_SEED_OFFSET``, a block of its own, apart from the training envs'
    ``seed + i``.

    Why: a sweep's interval over seeds treats the seeds' evaluations as independent draws. Before 2026-12-02 the
    evaluation envs were seeded from ``seed + EVAL_SEED_OFFSET``; an env that runs as one NumPy batch evaluates on
    ``eval_episodes`` envs at once, so seeds 0 and 1 shared 99 of their 100 evaluation envs. Seed 0 keeps its envs.
    """
    return (seed + 1) * EVAL_SEED_OFFSET


def zoo_hyperparams(algo: str, env: str, conf_file: str | Path | None = None) -> Any:
    """The ``env`` entry of ``conf_file`` (default: the file shipped for ``algo``), checked against the
    algorithm's constructor; ``None`` with ``conf_file="none"``, or if the shipped file has no entry for the env
    (the class defaults apply).

    :raises CommandError: unreadable or malformed file, an entry key/value the algorithm does not accept, or a
        ``conf_file`` given without an entry for ``env`` (rl-zoo3 refuses it too: the file was meant for the run).
    """
    if conf_file is not None and str(conf_file).lower() == "none":
        return None
    try:
        entry = load_hyperparams(algo, env, conf_file)  # checked against the algorithm's constructor there
        entries = [] if entry is not None or conf_file is None else list(read_hyperparams_file(conf_file))
    except (OSError, ValueError) as err:
        raise CommandError(f"--conf-file: {err}") from err
    if entry is None and conf_file is not None:
        hint = closest_argument(env, entries)
        raise CommandError(
            f"--conf-file {conf_file} has no entry for {env}{hint}; its entries: {', '.join(entries) or 'none'}. "
            "Add one, or give --conf-file none for the class defaults"
        )
    return entry


def with_entry_env(settings: TrainSettings, entry: Any) -> TrainSettings:
    """``settings`` with the env of the env's file entry (:func:`zoo_hyperparams`): its ``env_kwargs`` under its own
    (a key of ``settings.env_kwargs``, ``--env-kwargs``, wins over the file's, as ``--hparams`` win over its
    hyperparameters), with which the training env and an ``--eval-env`` of the same id are made, and its
    ``env_wrapper``, in which every env of the run is made, with its ``vec_env_wrapper`` and ``frame_stack``
    around their ``VecEnv`` (``entry.run_wrappers``)."""
    if entry is None:
        return settings
    env_kwargs = {**entry.env_kwargs, **(settings.env_kwargs or {})} or settings.env_kwargs
    return dataclasses.replace(settings, env_kwargs=env_kwargs, env_wrapper=entry.run_wrappers)


def build_model(settings: TrainSettings, hparams: dict[str, Any] | None = None, entry: Any = None) -> Any:
    """The algorithm, configured from the options.

    ``n_episodes`` and ``n_envs`` are passed only when given: otherwise the algorithm's defaults apply (they know
    which envs have a native vector form).

    :param hparams: other constructor arguments, already checked (:func:`check_hparam`, or
        :func:`~ordergrad_rl.zoo.algorithms.parse_hparams` for ``key=value`` text).
    :param entry: the env's entry of the hyperparameter file (:func:`zoo_hyperparams`), applied under ``hparams``;
        its ``normalize`` wraps the model's env in ``VecNormalize`` (:func:`vec_normalize_kwargs`).
    :raises CommandError: unknown env or device, bad hyperparameters, arguments the algorithm rejects, an env
        whose spaces SB3 has no policy for or the algorithm does not take, a ``normalize`` that ``VecNormalize``
        refuses for the env, or an ``env_wrapper`` that refuses it.
    """
    cls = algorithm_class(settings.algo)
    hparams = dict(hparams or {})
    check_env_id(settings.env)  # unknown ids and missing packages fail here
    check_device(settings.device)
    if entry is not None:
        hparams = {**entry.kwargs, **hparams}  # --hparams win over the file
    if settings.policy is not None:  # an entry's is checked where it is read
        check_policy_name(cls, settings.policy, "--policy")
    policy = settings.policy or (entry.policy if entry is not None else next(iter(cls.policy_aliases)))
    given = {"n_episodes": settings.n_episodes, "n_envs": settings.n_envs}
    hparams = {**hparams, **{key: value for key, value in given.items() if value is not None}}  # options win
    check_k_applies(settings.objective, settings.k)
    check_policy(cls, policy, settings.env, hparams.get("policy_kwargs"))
    try:
        env = training_env(settings, hparams.get("n_envs"))
    except EnvWrapperError as err:  # the entry's env_wrapper: name the entry
        raise CommandError(f"{entry.source}: {settings.env}: {err}" if entry is not None else str(err)) from err
    try:
        model = cls(
            policy,
            env,
            objective=settings.objective,
            k=settings.k,
            seed=settings.seed,
            tensorboard_log=None if settings.tensorboard is None else str(settings.tensorboard),
            verbose=settings.verbose,
            device=settings.device,
            **hparams,
        )
    except (ValueError, TypeError, KeyError) as err:
        if isinstance(err, ValueError):  # SB3's "You must use `MultiInputPolicy`": named as the command line asks
            origin = "--policy" if settings.policy is not None else "default" if entry is None else entry.source
            check_policy_reads_dict(cls, policy, env, settings.env, origin, hparams.get("policy_kwargs"))
        # Objective specs, k >= N, hparam values the algorithm refuses, policy names ...
        raise CommandError(f"{cls.__name__}: {err}") from err
    except NotImplementedError as err:  # SB3's refusal of a space it has no policy for (Blackjack-v1's Tuple)
        raise CommandError(
            f"{cls.__name__} cannot train on {settings.env}: {err}. train makes the env in the wrappers of the "
            "env_wrapper of its --conf-file entry (rl-zoo3's key)"
        ) from err
    except AssertionError as err:
        # Asserts the algorithm does not take (MaskablePPO's on Hopper-v5's Box actions, an action Box without bounds)
        raise CommandError(f"{cls.__name__} cannot train on {settings.env}: {err}") from err
    check_action_masks(model, settings.env)
    normalize = vec_normalize_kwargs(None if entry is None else entry.normalize, model, hparams)
    if normalize is not None:
        from stable_baselines3.common.vec_env import VecNormalize

        try:
            model.set_env(under_frame_stack(model.get_env(), lambda venv: VecNormalize(venv, **normalize)))
        except (ValueError, TypeError) as err:  # VecNormalize's refusal of a space it cannot normalize
            raise CommandError(f"{entry.source}: {settings.env}: normalize: {err}") from err
    return model


def vec_normalize_kwargs(
    normalize: dict[str, Any] | None, model: Any, hparams: dict[str, Any]
) -> dict[str, Any] | None:
    """The keyword arguments of SB3's ``VecNormalize`` that an entry's ``normalize`` gives ``model``, as rl-zoo3's
    ``ExperimentManager`` makes them: the entry's mapping (``{}`` for ``normalize: true``), with the algorithm's
    ``gamma`` where the hyperparameters set one; ``None`` without ``normalize``.

    One difference from rl-zoo3, for an objective that ranks the episode returns (every one but the mean:
    ``model.ranks_returns``): ``norm_reward`` is ``False`` unless the mapping sets it, so ``normalize: true``
    normalizes the observations only. ``VecNormalize`` would divide the rewards by a running scale that changes
    during a rollout (and clip them), and the objective would rank those, not the env's returns; a mapping with
    ``norm_reward: true`` gets it, with the agents' ``UserWarning`` saying so. The mean is rl-zoo3's, rewards too.

    :param hparams: the constructor arguments the model was built with (the entry's under ``--hparams``).
    """
    if normalize is None:
        return None
    kwargs = dict(normalize)
    if "gamma" in hparams:  # rl-zoo3: the discount of VecNormalize's running return is the algorithm's
        kwargs["gamma"] = model.gamma
    if model.ranks_returns:
        kwargs.setdefault("norm_reward", False)
    return kwargs


def training_env(settings: TrainSettings, n_envs: int | None) -> Any:
    """The env the algorithm is built on: with ``vec_env="subproc"``, a ``SubprocVecEnv`` of ``n_envs`` envs (one
    without ``n_envs``); else the env id without ``env_kwargs`` nor ``env_wrapper`` (the algorithm makes its envs
    from it); with them, ``n_envs`` envs made with them (one without ``n_envs``), or, with ``env_kwargs`` only and
    without ``n_envs`` on an id with a native batch, the one ``gym.make(env, **env_kwargs)``, which the algorithm
    steps as that batch of ``n_episodes`` envs, as it does the id.

    :raises CommandError: env arguments the env does not take, or a wrapper that refuses the env
        (:func:`~ordergrad_rl.zoo.models.make_env`).
    """
    wrapper = settings.env_wrapper
    if settings.vec_env != "dummy":
        return make_env(
            settings.env, n_envs or 1, settings.seed, settings.env_kwargs, vec_env=settings.vec_env, env_wrapper=wrapper
        )
    if not settings.env_kwargs and not wrapper:
        return settings.env
    batch = n_envs is None and is_batched(settings.env) and not wrapper
    return make_env(
        settings.env, None if batch else n_envs or 1, settings.seed, settings.env_kwargs, env_wrapper=wrapper
    )


def load_trained_agent(
    settings: TrainSettings, path: str | Path, hparams: dict[str, Any] | None = None, option: str = "--env-kwargs"
) -> Any:
    """rl-zoo3's ``--trained-agent``: the model saved at ``path``, to go on training (``learn(...,
    reset_num_timesteps=False)``) with the objective, hyperparameters and ``num_timesteps`` it was saved with.

    It is loaded by ``settings.algo``'s class on ``settings.env`` (with ``env_kwargs``) of the save's number of envs
    (``settings.n_envs`` if given), with the ``tensorboard``, ``seed``, ``device`` and ``verbose`` of ``settings``;
    ``hparams`` (and ``settings.n_episodes``) change the saved values, as SB3's ``load`` keyword arguments do; its
    envs are made in ``settings.env_wrapper`` (the save's: :func:`~ordergrad_rl.zoo.models.saved_env_wrapper`). A
    model saved with ``VecNormalize`` statistics goes on in a ``VecNormalize`` loaded from them, updating them, as
    rl-zoo3's does (:func:`~ordergrad_rl.zoo.models.saved_statistics`). ``option`` names where ``env_kwargs`` come
    from in the errors about them (:attr:`~ordergrad_rl.zoo.models.ModelEnv.option`: the save's ``args.yml``).

    :raises CommandError: no such file, a save of another algorithm, an env whose spaces differ from the model's,
        hyperparameters the algorithm refuses at load (``k``: the objective stays the saved one), or a save that
        trained in ``VecNormalize`` without its statistics beside it.
    """
    from ordergrad_rl.agents.common.saving import read_saved_data
    from ordergrad_rl.zoo.models import model_path

    cls = algorithm_class(settings.algo)
    path = model_path(path)
    check_device(settings.device)
    kwargs = dict(hparams or {})
    if settings.n_episodes is not None:
        kwargs["n_episodes"] = settings.n_episodes
    statistics = saved_statistics(path, settings.env)
    try:
        saved_n_envs = read_saved_data(path).get("n_envs")
        n_envs = settings.n_envs or saved_n_envs or 1
        env = make_env(
            settings.env, n_envs, settings.seed, settings.env_kwargs, option, vec_env=settings.vec_env,
            env_wrapper=settings.env_wrapper,
        )  # fmt: skip
        if statistics is not None:
            from stable_baselines3.common.vec_env import VecNormalize

            env = under_frame_stack(env, lambda venv: VecNormalize.load(str(statistics), venv))
        model = cls.load(
            path,
            env=env,
            device=settings.device,
            tensorboard_log=None if settings.tensorboard is None else str(settings.tensorboard),
            verbose=settings.verbose,
            seed=settings.seed,
            **kwargs,
        )  # load checks each of the hparams as the constructor checks it
    except (ValueError, TypeError, KeyError) as err:
        raise CommandError(f"--trained-agent {path}: {err}") from err
    return model


def run_arguments(
    settings: TrainSettings, gym_packages: list[str] | None = None, run_name: str | None = None
) -> dict[str, Any]:
    """What a run's save records of the env it trained on (:func:`~ordergrad_rl.zoo.models.save_run_arguments`:
    ``models/cliff/args.yml``), in the keys of rl-zoo3's ``args.yml``: ``algo``, ``env``, ``env_kwargs`` (all those
    the env was made with: an entry's and ``--env-kwargs``), ``gym_packages`` and ``seed``, which ``evaluate``,
    ``compare`` and ``--trained-agent`` read (:func:`~ordergrad_rl.zoo.models.model_env`); ``run_name``, the
    ``--run-name`` of its TensorBoard run (``None``: the algorithm's), which ``--trained-agent`` goes on logging into;
    and ``vec_env``, ``eval_env`` (``None``: none), ``eval_env_kwargs`` (``None``: those of ``env`` for the same
    id), ``eval_freq`` and ``eval_episodes``, which ``--trained-agent`` goes on with.
    """
    return {
        "algo": settings.algo,
        "env": settings.env,
        "env_kwargs": dict(settings.env_kwargs or {}),
        "eval_env": settings.eval_env,
        "eval_env_kwargs": None if settings.eval_env_kwargs is None else dict(settings.eval_env_kwargs),
        "eval_episodes": settings.eval_episodes,
        "eval_freq": settings.eval_freq,
        "gym_packages": list(gym_packages or []),
        "run_name": run_name,
        "seed": settings.seed,
        "vec_env": settings.vec_env,
    }


def checkpoint_callback(
    model: Any,
    save: str | Path,
    save_freq: int,
    env_wrapper: EnvWrappers = (),
    arguments: dict[str, Any] | None = None,
) -> Any:
    """rl-zoo3's ``--save-freq``: SB3's ``CheckpointCallback`` saving ``model`` every ``save_freq`` env steps beside
    ``save`` (``models/cvar`` -> ``models/cvar_<num_timesteps>_steps.zip``). The ``env_wrapper`` and the
    ``arguments`` (:func:`run_arguments`) of the run are written now, where ``evaluate`` reads them for every
    checkpoint (:func:`~ordergrad_rl.zoo.models.save_env_wrapper`: ``models/cvar/env_wrapper.yml``,
    :func:`~ordergrad_rl.zoo.models.save_run_arguments`: ``models/cvar/args.yml``)."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    save_env_wrapper(save, env_wrapper)
    save_run_arguments(save, arguments)
    save = Path(save)
    name = save.name.removesuffix(".zip")
    # The callback counts vectorized steps (n_envs env steps each), as SB3's and rl-zoo3's do. A VecNormalize's
    # statistics are saved beside each checkpoint: NAME_vecnormalize_<num_timesteps>_steps.pkl.
    return CheckpointCallback(
        max(save_freq // model.n_envs, 1), str(save.parent), name_prefix=name, save_vecnormalize=True
    )


def save_model(
    model: Any, path: str | Path, env_wrapper: EnvWrappers = (), arguments: dict[str, Any] | None = None
) -> Path | None:
    """``model.save(path)``, and the statistics of its env's ``VecNormalize`` where it has one, as rl-zoo3 saves
    them, at :func:`~ordergrad_rl.zoo.models.vec_normalize_file` (``models/cliff/vecnormalize.pkl``), where
    ``evaluate`` and ``--trained-agent`` load them; so too the ``env_wrapper`` its envs were made in
    (:func:`~ordergrad_rl.zoo.models.save_env_wrapper`: ``models/cliff/env_wrapper.yml``) and the ``arguments`` of
    its run, the env and the arguments it was made with (:func:`run_arguments`;
    :func:`~ordergrad_rl.zoo.models.save_run_arguments`: ``models/cliff/args.yml``).

    A model without ``VecNormalize`` removes the statistics an earlier model saved at ``path`` left there, which
    ``evaluate`` would otherwise normalize its observations with.

    :return: the statistics' file, or ``None`` for an env without ``VecNormalize``.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # else SB3 warns "Path ... does not exist. Will create it"
    model.save(path)
    save_env_wrapper(path, env_wrapper)
    save_run_arguments(path, arguments)
    normalize = model.get_vec_normalize_env()
    file = vec_normalize_file(path)
    if normalize is None:
        file.unlink(missing_ok=True)
        return None
    file.parent.mkdir(parents=True, exist_ok=True)
    normalize.save(str(file))
    return file


def check_k_applies(objective: str, k: int | None) -> None:
    """:raises CommandError: ``k`` given for an objective without an order-statistic size (``mean``, whose k is
    1, and GCVaR), which the agents would ignore."""
    if k is None:
        return
    from ordergrad_rl.core import Objective
    from ordergrad_rl.core.gcvar import gcvar_level

    try:
        if gcvar_level(objective) is not None:
            raise CommandError(f"--k {k} does not apply to {objective}: GCVaR has no order-statistic size; drop --k")
        name = Objective.parse(objective).name
    except (TypeError, ValueError):
        return  # not a plain objective (a channel objective, a bad spec): the algorithm's checks report it
    if name == "mean":
        raise CommandError(
            f"--k {k} does not apply to objective {objective}: the mean has no order statistics; drop --k"
        )


def check_policy(
    cls: type[BaseAlgorithm], policy: Any, env_id: str, policy_kwargs: dict[str, Any] | None = None
) -> None:
    """:raises CommandError: a policy whose features extractor cannot read ``env_id``'s observations (CnnPolicy's
    NatureCNN needs images, MultiInputPolicy's CombinedExtractor a Dict space), before SB3 fails on them with an
    ``AssertionError`` or ``AttributeError``. Other policies, and unknown names, are left to the algorithm."""
    from gymnasium import spaces
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.torch_layers import CombinedExtractor, NatureCNN

    kwargs = dict(policy_kwargs or {})
    extractor = features_extractor_class(cls, policy, kwargs)
    if extractor is None or not issubclass(extractor, (NatureCNN, CombinedExtractor)):
        return
    space = observation_space_of(env_id)  # only for these policies: the default ones never pay for an extra env
    name = getattr(policy, "__name__", policy)
    usable = next(iter(cls.policy_aliases))
    observes = f"a {space.dtype} Box of shape {space.shape}" if isinstance(space, spaces.Box) else str(space)
    if issubclass(extractor, NatureCNN):
        normalized = not kwargs.get("normalize_images", True)
        if not is_image_space(space, check_channels=False, normalized_image=normalized):
            image = "a Box of shape (H, W, C) or (C, H, W)" + ("" if normalized else ", dtype uint8 in [0, 255]")
            raise CommandError(
                f"--policy {name} needs image observations ({image}); {env_id} observes {observes}: use {usable}"
            )
    elif not isinstance(space, spaces.Dict):
        raise CommandError(f"--policy {name} needs Dict observations; {env_id} observes {observes}: use {usable}")


def observation_space_of(env_id: str) -> Any:
    """The observation space of ``env_id``, read from one env made for it and closed."""
    from ordergrad_rl.envs import make_sb3_vec_env

    venv = make_sb3_vec_env(env_id, 1)
    space = venv.observation_space
    venv.close()
    return space


def features_extractor_class(
    cls: type[BaseAlgorithm], policy: Any, policy_kwargs: dict[str, Any] | None = None
) -> type | None:
    """The features extractor class ``policy`` (a name of ``cls``'s ``policy_aliases`` or a class) builds with
    ``policy_kwargs``: theirs, else the default of the first class in the policy's MRO that declares one (the episodic
    policies pass ``*args, **kwargs`` on); ``None`` for an unknown name."""
    import inspect

    policy_class = cls.policy_aliases.get(policy) if isinstance(policy, str) else policy
    if not isinstance(policy_class, type):
        return None
    defaults = (
        inspect.signature(vars(klass)["__init__"]).parameters.get("features_extractor_class")
        for klass in policy_class.__mro__
        if "__init__" in vars(klass)
    )
    parameter = next((p for p in defaults if p is not None), None)
    extractor = (policy_kwargs or {}).get("features_extractor_class", None if parameter is None else parameter.default)
    return extractor if isinstance(extractor, type) else None


def check_policy_reads_dict(
    cls: type[BaseAlgorithm], policy: Any, env: Any, env_id: str, origin: str, policy_kwargs: dict[str, Any] | None
) -> None:
    """:raises CommandError: ``env`` observes a ``Dict`` and ``policy``'s features extractor is not
    ``MultiInputPolicy``'s ``CombinedExtractor``: SB3's constructor refused it saying "You must use
    `MultiInputPolicy`", not how to ask for it on the command line, where ``MlpPolicy`` is the default policy. Run
    where the constructor failed, so the env id is made only then.

    :param env: the training env (:func:`training_env`): an env object, or ``env_id`` (made with one env to read its
        observation space).
    :param origin: where the policy comes from, for the message: ``"--policy"``, the entry's file, or ``"default"``.
    """
    from gymnasium import spaces
    from stable_baselines3.common.torch_layers import CombinedExtractor

    extractor = features_extractor_class(cls, policy, policy_kwargs)
    if extractor is None or issubclass(extractor, CombinedExtractor):
        return
    space: Any = getattr(env, "observation_space", None)
    if isinstance(env, str):
        try:
            space = observation_space_of(env)
        except Exception:  # noqa: BLE001 - the constructor's own error is the one to report
            return
    if not isinstance(space, spaces.Dict):
        return
    readers = [
        name
        for name in cls.policy_aliases
        if (e := features_extractor_class(cls, name)) and issubclass(e, CombinedExtractor)
    ]
    fix = f"--policy {readers[0]}" if readers else "a policy with a features extractor for Dict observations"
    name = getattr(policy, "__name__", policy)
    if origin == "default":
        raise CommandError(
            f"{env_id} observes a Dict, {space}, which {name} (the default policy) does not read: give {fix}"
        )
    where = "--policy" if origin == "--policy" else f"{origin}: policy"
    raise CommandError(f"{where} {name} does not read Dict observations; {env_id} observes {space}: give {fix}")


def check_action_masks(model: BaseAlgorithm, env_id: str) -> None:
    """:raises CommandError: a MaskablePPO model on an env without ``action_masks()`` (checked before training)."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import is_masking_supported

    env = model.get_env() if isinstance(model, MaskablePPO) else None
    if env is not None and not is_masking_supported(env):
        raise CommandError(f"--algo maskable_ppo needs an env with an action_masks() method; {env_id} has none")


def remove_runs(log_dir: str | Path | None, tb_log_name: str) -> None:
    """Remove SB3's TensorBoard runs ``<log_dir>/<tb_log_name>_<n>``, so that a job run again (a reproduction rerun
    or interrupted, a trial retried) logs ``<tb_log_name>_1`` afresh: SB3 would add ``_2`` beside the earlier run, and
    the dashboards would count both as seeds of the method. ``log_dir`` ``None``: nothing is logged, nothing to do."""
    if log_dir is None:
        return
    path = Path(log_dir) / tb_log_name
    for run in path.parent.glob(f"{glob.escape(path.name)}_*"):
        if run.is_dir() and run.name[len(path.name) + 1 :].isdigit():
            shutil.rmtree(run, ignore_errors=True)


def learn(model: Any, timesteps: int, **kwargs: Any) -> Any:
    """``model.learn(timesteps, **kwargs)``.

    :raises CommandError: the objective names an info channel the env does not report, found by the first
        rollout (:class:`~ordergrad_rl.agents.common.channels.InfoChannelError`), the ``--eval-env``'s
        ``Monitor`` records no end of the episodes a wrapper ends
        (:class:`~ordergrad_rl.agents.common.evaluation.UnrecordedEpisodeError`), or an episode of the env or the
        ``--eval-env`` does not end within the bound on an episode's length
        (:class:`~ordergrad_rl.agents.common.buffers.EndlessEpisodeError`).
    """
    from ordergrad_rl.agents.common.buffers import EndlessEpisodeError
    from ordergrad_rl.agents.common.channels import InfoChannelError
    from ordergrad_rl.agents.common.evaluation import UnrecordedEpisodeError

    try:
        return model.learn(timesteps, **kwargs)
    except InfoChannelError as err:  # any other error of training keeps its traceback
        raise CommandError(f"--objective {model.objective}: {err}") from err
    except UnrecordedEpisodeError as err:  # the --eval-env's: a wrapper of the env_wrapper ends its episodes
        raise CommandError(f"--eval-env: {err}") from err
    except EndlessEpisodeError as err:  # an env without a time limit: the options that give it one
        raise CommandError(
            f"{err}. On the command line the time limit is --env-kwargs max_episode_steps=N (--eval-env-kwargs for "
            "an --eval-env of another id), and a longer bound --hparams "
            "\"rollout_buffer_kwargs={'max_episode_steps': N}\""
        ) from err


def eval_callback(settings: TrainSettings, model: Any, option: str = "--eval-env-kwargs") -> Any:
    """The ``RiskEvalCallback`` of ``--eval-env``, or ``None``. The env is made with ``eval_env_kwargs`` (from
    ``option``, named in the errors about them: a ``--trained-agent``'s ``args.yml``), by default with ``env_kwargs``
    if it is the training env's id (an env of another id, such as a deployment variant, keeps its registered
    arguments), in the run's ``env_wrapper`` (as rl-zoo3 makes its evaluation envs), on as many envs as ``evaluate``
    steps (:func:`~ordergrad_rl.zoo.models.eval_n_envs`: up to 8, all ``eval_episodes`` on a native batch). It
    evaluates every :func:`eval_frequency` env steps and at the end of training.

    :raises CommandError: unknown id, or an env whose spaces differ from the model's (checked now, not at the
        first evaluation).
    """
    if settings.eval_env is None:
        return None
    from ordergrad_rl.agents import RiskEvalCallback

    # evaluate's and compare's envs: fewer policy calls (1 env took 180 us per step of MountainCarContinuous-v0, 8
    # envs 30 us); a native batch runs all the episodes at once.
    n_eval_envs = eval_n_envs(settings.eval_env, settings.eval_episodes, bool(settings.env_wrapper))
    if settings.eval_env_kwargs is None:  # the training env's arguments, as rl-zoo3 makes its evaluation env
        same = settings.eval_env == settings.env
        env_kwargs, option = (settings.env_kwargs if same else None), "--env-kwargs (--eval-env-kwargs sets its own)"
    else:
        env_kwargs = settings.eval_env_kwargs
    eval_env = make_env(
        settings.eval_env, n_eval_envs, eval_seed(settings.seed), env_kwargs, option, env_wrapper=settings.env_wrapper
    )
    eval_env = fitted_env(model, eval_env, f"--eval-env {settings.eval_env}")
    normalize = model.get_vec_normalize_env()
    if normalize is not None:  # rl-zoo3's eval env: the training statistics (synced at each evaluation), raw rewards
        eval_env = frozen_vec_normalize(eval_env, normalize)
    return RiskEvalCallback(
        eval_env,
        n_eval_episodes=settings.eval_episodes,
        deterministic=settings.deterministic,
        # The callback counts vectorized steps (n_envs env steps each).
        eval_freq=max(1, eval_frequency(settings, eval_env) // model.n_envs),
    )
