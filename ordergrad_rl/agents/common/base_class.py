"""What every OrderGrad algorithm adds to its SB3 algorithm, whatever its collection: the objective (parsed once,
saved as its spec string and re-parsed strictly on ``load``), the load-time check of the saved algorithm,
``from_sb3``, the default TensorBoard run name, the hparams and the ``risk/*`` dashboard layout.

:class:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin` (whole episodes) and
:class:`~ordergrad_rl.agents.ppo_q_critic.OrderGradQCriticPPO` (SB3's step-based rollouts) build on it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from numbers import Integral
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.arguments import ARGUMENT_CHECKS, check_arguments
from ordergrad_rl.agents.common.checks import (
    check_action_space,
    check_observation_space,
    warn_if_normalization_missing,
)
from ordergrad_rl.agents.common.env_util import AgentEnv, build_env, env_arguments, wrap_env
from ordergrad_rl.agents.common.progress import clamped_progress_remaining, warn_if_schedules_restart
from ordergrad_rl.agents.common.risk_logging import TRAIN_PREFIX, default_run_name, record_hparams, write_risk_layout
from ordergrad_rl.agents.common.saving import (
    VEC_NORMALIZE,
    algorithm_family,
    check_saved_algorithm,
    read_saved_data,
    saved_vec_normalize,
)
from ordergrad_rl.agents.common.sb3_compat import from_sb3
from ordergrad_rl.agents.common.utils import lent_attributes
from ordergrad_rl.core import ChannelObjective, Objective, parse_objective

SelfOrderGrad = TypeVar("SelfOrderGrad", bound="OrderGradAlgorithmMixin")


def sb3_load_options(
    custom_objects: dict[str, Any] | None, print_system_info: bool, force_reset: bool
) -> dict[str, Any]:
    """SB3's own options of ``load`` (its positional order: ``load(path, env, device, custom_objects,
    print_system_info, force_reset)``), those given other than SB3's defaults: the ``kwargs`` entries that the
    OrderGrad algorithms' ``load`` read them from before it named them."""
    given = {"custom_objects": custom_objects, "print_system_info": print_system_info, "force_reset": force_reset}
    defaults = {"custom_objects": None, "print_system_info": False, "force_reset": True}
    return {name: value for name, value in given.items() if value is not defaults[name]}


#: Attributes logged as TensorBoard hparams when the algorithm has them (with algorithm, env and objective), as
#: :func:`~ordergrad_rl.agents.common.hparams.hparam_value` gives them: a schedule by its values at the start and the
#: end of training; ``None`` and other values without a TensorBoard form are left out.
HPARAM_NAMES: tuple[str, ...] = (
    "k",
    "n_episodes",
    "group_size",
    "learning_rate",
    "seed",
    "n_envs",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "relative_ent_coef",
    "novelty_when_blind",
    "vf_coef",
    "max_grad_norm",
    "clip_range",
    "target_kl",
    "use_sde",
    "sde_sample_freq",
    "normalize_advantage",
    "reward_to_go",
    "advantage",
)


def _walk(callback: BaseCallback | None) -> Iterator[BaseCallback]:
    """The callback and all callbacks nested in it (``CallbackList``, ``EventCallback``)."""
    if callback is None:
        return
    yield callback
    for child in getattr(callback, "callbacks", []):
        yield from _walk(child)
    yield from _walk(getattr(callback, "callback", None))


def _env_id(env: VecEnv | None) -> str | None:
    """The registered id of a VecEnv's first env; ``None`` without one (a user's VecEnv need not expose ``spec``)."""
    try:
        spec = env.get_attr("spec", [0])[0] if env is not None else None
    except AttributeError:
        return None
    return getattr(spec, "id", None)


if TYPE_CHECKING:  # what the mixin is mixed in front of, for type checkers (at run time the MRO puts it there)
    from stable_baselines3.common.base_class import BaseAlgorithm as _MixedInto
else:
    _MixedInto = object


class OrderGradAlgorithmMixin(_MixedInto):
    """The objective, saving, loading and logging shared by the OrderGrad algorithms; mix in front of the SB3 class.

    The algorithm sets its objective with :meth:`_set_objective` in ``__init__`` and calls :meth:`_restore_objective`
    in ``_setup_model`` (after ``load`` the saved spec replaces the constructor's default).
    """

    #: The algorithm name a save records (``ordergrad_algorithm``) and ``load`` checks; ``None``: the class's own
    #: (:func:`~ordergrad_rl.agents.common.saving.algorithm_family`).
    saved_as: ClassVar[str | None] = None
    #: The advantage estimator that default run names end in, for an estimator other than the algorithm's default
    #: one (``OrderGradPPO(advantage="q_critic")``: ``OrderGradPPO_top5@10_qcritic``, beside the episodic
    #: ``OrderGradPPO_top5@10``, so TensorBoard, ``compare`` and the dashboards keep the two apart); ``None``: none.
    run_name_estimator: ClassVar[str | None] = None
    #: The constructor arguments whose ``None`` the constructor resolves to a default of the env, the objective and
    #: the other arguments (``ent_coef=None``: 0.01 for a ranked objective on categorical actions ...), which
    #: :meth:`load` refuses: it builds no env and chooses no default again (those the class takes).
    default_when_none: ClassVar[tuple[str, ...]] = (
        "n_envs",
        "n_episodes",
        "batch_size",
        "gamma",
        "normalize_advantage",
        "reward_to_go",
        "risk_schedule",
        "noise_sampler",
        "novelty_when_blind",
        "value_baseline",
        "ent_coef",
        "entropy_plateau",
    )

    #: What :meth:`load` refuses to change (given as an argument or in ``custom_objects``): the objective (its spec,
    #: ``k``, GCVaR's level) and the advantage mode the model was saved with.
    fixed_at_load: ClassVar[tuple[str, ...]] = ("objective", "objective_spec", "k", "gcvar_alpha", "advantage")

    objective: Objective | ChannelObjective
    objective_spec: str
    k: int
    policy_kwargs: dict[str, Any]

    # ------------------------------------------------------------------ the objective
    def _set_objective(self, objective: Objective | ChannelObjective) -> None:
        """Set ``objective`` (bound), ``k`` and ``objective_spec`` (what ``save`` stores) and the algorithm's name."""
        self.objective = objective
        self.k = int(objective.k)  # type: ignore[arg-type]
        self.objective_spec = str(objective)
        self.ordergrad_algorithm = algorithm_family(type(self))

    def _restore_objective(self) -> None:
        """After ``load``: parse the saved ``objective_spec`` strictly (older saves hold the objective itself), so a
        damaged file fails here instead of training the default objective. A no-op when the objective is the one the
        constructor parsed.

        :raises ValueError: not a valid objective spec, or inconsistent with the saved ``k``.
        """
        spec = getattr(self, "objective_spec", None) or self.objective
        if isinstance(self.objective, Objective | ChannelObjective) and spec == str(self.objective):
            if self.objective.k == self.k:
                return
        try:
            objective = parse_objective(spec)
        except (TypeError, ValueError) as err:
            raise ValueError(f"the model's objective {spec!r} is not a valid objective: {err}") from err
        if objective.k != self.k:
            raise ValueError(f"the model's objective {str(objective)!r} has k={objective.k}, but its k is {self.k}")
        self._set_objective(objective)

    @property
    def _info_channels(self) -> tuple[str, ...]:
        """The objective's channels read from step infos (none for a plain objective)."""
        return self.objective.info_channels if isinstance(self.objective, ChannelObjective) else ()

    def _check_policy_critic(self, advantage: str, allowed: tuple[str, ...]) -> None:
        """Refuse a ``policy_kwargs["critic"]`` that ``advantage`` cannot use. The algorithm passes the critic it
        needs when it builds the policy; ``policy_kwargs`` stay the user's (SB3's ``load`` compares them with the
        saved ones), except in files saved by earlier versions, which hold the critic they were built with."""
        critic = self.policy_kwargs.get("critic", allowed[0])
        if critic not in allowed:
            raise ValueError(f"advantage={advantage!r} needs policy critic={allowed[0]!r}, got {critic!r}")

    # ------------------------------------------------------------------ saving and loading
    @classmethod
    def load(
        cls: type[SelfOrderGrad],
        path: Any,
        env: AgentEnv | str | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfOrderGrad:
        """SB3's ``load``, after checking that ``path`` was saved by this algorithm (see
        :mod:`ordergrad_rl.agents.common.saving`); the saved objective is re-parsed strictly.

        ``env`` may be an env id, as in the constructors (SB3's ``load`` takes env objects only): it is built as the
        constructor builds one (:func:`~ordergrad_rl.agents.common.env_util.build_env`) with the save's ``n_envs``
        and ``seed`` (``n_envs`` and ``seed`` among ``kwargs``, if given), so ``load(path, env="CartPole-v1")`` trains
        on as many envs as the saved model did, and ``load(path, env="CartPole-v1", n_envs=4)`` on 4. With an env
        object, ``n_envs`` is checked against its number of envs, as in the constructor.

        SB3's ``load`` sets ``kwargs`` on the model without running the constructor; here each one the constructor
        takes is checked first as the constructor checks it (:meth:`argument_checks`), so that ``load(path,
        gamma=2.0)`` raises the constructor's ``ValueError`` naming ``gamma``. Other names are set as SB3 sets them.
        The entries of SB3's ``custom_objects`` that name the model's arguments are read as the same arguments
        (:meth:`load_kwargs`, which the algorithms' ``load`` runs first): checked, refused and converted alike.

        ``None`` is refused for the arguments whose ``None`` the constructor reads as its default for the env, the
        objective and the other arguments (:attr:`default_when_none`: ``ent_coef``, ``risk_schedule``,
        ``entropy_plateau``, ``n_episodes`` ...): SB3's load set it as given, where it meant "off" (the risk schedule,
        the entropy plateau) or failed deep inside at the first rollout (``ent_coef``, ``n_episodes``), but never the
        constructor's default. Pass the value to train with (``risk_schedule="none"`` and ``entropy_plateau=False``
        turn them off), or leave the argument out to keep the saved value, which the constructor resolved.

        :raises ValueError: a file of another algorithm, a saved objective that is not a valid spec, a value in
            ``kwargs`` that the constructor refuses, ``n_envs`` without ``env`` or other than ``env``'s, ``use_sde``
            other than the saved one (the policy's layout), ``None`` for an argument of :attr:`default_when_none`
            (:meth:`refuse_none_defaults`), or a name of :attr:`fixed_at_load` among ``kwargs``: the model keeps the
            objective and the advantage mode it was saved with (SB3's load set the string as it was, and the model
            trained on as before; ``advantage="q_critic"`` on an episodic model made its next save load as the
            Q-critic algorithm; the saved ``objective_spec`` or ``gcvar_alpha`` given another value changed the
            objective trained without a word).
        """
        kwargs = {**kwargs, **sb3_load_options(custom_objects, print_system_info, force_reset)}
        fixed = [name for name in cls.fixed_at_load if name in kwargs]
        if fixed:
            raise ValueError(
                f"{cls.__name__}.load keeps the objective and the advantage mode the model was saved with; "
                f"{' and '.join(fixed)} cannot change at load (as an argument or in custom_objects): build a model "
                "with the new ones and copy the saved weights with its set_parameters(path)"
            )
        checks = cls.argument_checks()
        if kwargs.get("learning_rate") == 0:  # nothing trains: SB3's inference-only load (see load_kwargs)
            checks.pop("clip_range", None)
        check_arguments(checks, **kwargs)
        check_saved_algorithm(path, cls)
        saved = read_saved_data(path)
        if "use_sde" in kwargs and kwargs["use_sde"] != saved.get("use_sde", False):
            # SB3's load built the policy with it, then failed deep inside: loading the saved log_std (one per action
            # without gSDE, one per latent feature and action with it), or gSDE's arguments on a categorical policy.
            raise ValueError(
                f"{cls.__name__}.load(path, use_sde={kwargs['use_sde']!r}): the model was saved with use_sde="
                f"{saved.get('use_sde', False)!r}, and its policy's weights have that layout; build a model with "
                f"use_sde={kwargs['use_sde']!r} to train with it"
            )
        given_n_envs = "n_envs" in kwargs
        # SB3's load sets the number of envs from the env, which the n_envs given would override.
        n_envs = kwargs.pop("n_envs", None)
        if given_n_envs and env is None:
            raise ValueError(
                f"{cls.__name__}.load(path, n_envs={n_envs!r}) needs env=: n_envs is the number of envs built from "
                "an env id (or that the env passed has), and a save holds no env"
            )
        if isinstance(env, str) or given_n_envs:  # an id, as the constructors take one (SB3's load failed on it:
            # "not a Gymnasium environment ... expect OpenAI Gym to be installed"), built with the n_envs given, else
            # the save's, and its seed; an env object is checked against the n_envs given, as in the constructor
            n_envs = n_envs if given_n_envs else saved.get("n_envs")
            env = build_env(env, n_envs, kwargs.get("seed", saved.get("seed")))  # type: ignore[arg-type]
        model = super().load(path, env=env, device=device, **kwargs)  # type: ignore[arg-type]  # SB3 types env GymEnv; _wrap_env takes a native batch
        warn_if_normalization_missing(model.get_env(), saved_vec_normalize(saved))
        return model

    @classmethod
    def load_arguments(cls) -> set[str]:
        """The names that :meth:`load` reads as the model's arguments, in its ``kwargs`` or its ``custom_objects``
        (:meth:`load_kwargs`): the constructor's (except those SB3's ``load`` takes itself or compares with the
        saved ones: ``policy``, ``env``, ``device``, ``policy_kwargs``) and :attr:`fixed_at_load`."""
        taken_by_sb3 = {"policy", "env", "device", "policy_kwargs", "_init_setup_model"}
        return (set(inspect.signature(cls).parameters) - taken_by_sb3) | set(cls.fixed_at_load)

    @classmethod
    def load_kwargs(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` of :meth:`load` with the entries of ``custom_objects`` that name the model's arguments
        (:meth:`load_arguments`) moved among them, so that they are checked, refused and converted as the same
        arguments given to ``load``: SB3's ``custom_objects`` replace saved entries with no check, so
        ``custom_objects={"gamma": 2.0}`` set a ``gamma`` the constructor refuses, and ``{"objective": "max@4"}`` was
        ignored without a word. Where ``kwargs`` has the name too, its value wins, as in SB3. Other entries
        (``lr_schedule`` ...) stay in ``custom_objects`` for SB3; ``policy_kwargs`` too (SB3 builds the policy with
        them, where ``load(path, policy_kwargs=...)`` must equal the saved ones), checked as the constructor checks
        them (SB3's load failed deep in torch on ``{"net_arch": "x"}``).

        SB3's inference-only load, ``custom_objects={"learning_rate": 0.0, "lr_schedule": lambda _: 0.0,
        "clip_range": lambda _: 0.0}`` (for a save whose schedules do not unpickle in this Python), loads as in SB3:
        with a zero learning rate, :meth:`load` takes a zero ``clip_range`` (which the constructor refuses, as it
        would freeze the policy).
        """
        custom_objects = kwargs.get("custom_objects")
        if not isinstance(custom_objects, dict):  # None, or SB3's ValueError for another type
            return kwargs
        arguments = cls.load_arguments()
        moved = {name: value for name, value in custom_objects.items() if name in arguments and name not in kwargs}
        rest = {name: value for name, value in custom_objects.items() if name not in arguments}
        if "policy_kwargs" in rest:
            check_arguments(cls.argument_checks(), policy_kwargs=rest["policy_kwargs"])
        return {**kwargs, **moved, "custom_objects": rest}

    @classmethod
    def refuse_none_defaults(cls, kwargs: dict[str, Any]) -> None:
        """``ValueError`` for ``None`` among the ``kwargs`` given to :meth:`load` where the constructor reads it as its
        default (:attr:`default_when_none`). The algorithm's ``load`` runs it on the caller's ``kwargs``, before it
        converts them or adds its own."""
        accepted = inspect.signature(cls).parameters
        for name in cls.default_when_none:
            if name in accepted and name in kwargs and kwargs[name] is None:
                raise ValueError(
                    f"{cls.__name__}.load(path, {name}=None): None asks for the constructor's default, which may "
                    "depend on the env, the objective and the other arguments, and which load does not choose "
                    f"again; pass the value to train with, or leave {name} out to keep the saved one"
                )

    @classmethod
    def argument_checks(cls) -> dict[str, Callable[[Any], object]]:
        """The check of each constructor argument of this class whose valid values do not depend on the others, by
        name: :data:`~ordergrad_rl.agents.common.arguments.ARGUMENT_CHECKS` of the arguments the class takes, which
        :meth:`load` runs on its ``kwargs``; a class that checks an argument its own way replaces the entry."""
        accepted = inspect.signature(cls).parameters
        return {name: check for name, check in ARGUMENT_CHECKS.items() if name in accepted}

    @classmethod
    def from_sb3(
        cls: type[SelfOrderGrad],
        source: Any,
        env: AgentEnv | str | None = None,
        device: th.device | str = "auto",
        **kwargs: Any,
    ) -> SelfOrderGrad:
        """Risk fine-tuning of an SB3 model: an agent of this class whose policy starts from ``source``'s weights.

        ``OrderGradPPO.from_sb3(ppo_model, objective="cvar0.2")`` or ``OrderGradPPO.from_sb3("ppo.zip", env,
        objective="cvar0.2")``. The agent is built with the SB3 model's policy class (SB3's ``MlpPolicy`` ...
        become the OrderGrad ones, same layout), ``policy_kwargs`` and ``use_sde``, and the whole policy is copied:
        features extractor and actor, and the value head, which the clipped-surrogate update never trains (a warm
        start of OrderGradPPO's ``critic_when_tied`` critic, and of the fine-tuned model if it goes back to PPO); in
        Q-critic mode the Q head starts fresh. The
        optimizer starts fresh. SB3's own ``set_parameters`` also works when the layouts match.

        :param source: an SB3 on-policy model with an actor-critic policy (``PPO``, ``A2C`` ...; sb3-contrib's
            ``RecurrentPPO`` / ``MaskablePPO`` for OrderGradRecurrentPPO / OrderGradMaskablePPO) or its save's path.
        :param env: the training env; default: the SB3 model's env (required with a path).
        :param device: torch device.
        :param kwargs: this class's arguments (``objective``, ``n_episodes`` ...).
        :raises ValueError: no env, a policy that is not an actor-critic, or ``policy_kwargs`` that change the actor.
        """
        return from_sb3(cls, source, env, device=device, **kwargs)

    def save(self, path: Any, exclude: Any = None, include: Any = None) -> None:
        """SB3's ``save``. A model whose env is wrapped in ``VecNormalize`` records it (``vec_normalize``: its
        ``norm_obs`` and ``norm_reward``; :func:`~ordergrad_rl.agents.common.saving.saved_vec_normalize`): SB3 saves
        the statistics apart (``VecNormalize.save``), and a policy acting on raw observations without them acts wrongly,
        silently; ``load`` and ``set_env`` warn of an env without them, ``evaluate`` refuses it."""
        normalize = self.get_vec_normalize_env()
        if normalize is not None:
            self.__dict__[VEC_NORMALIZE] = {"norm_obs": normalize.norm_obs, "norm_reward": normalize.norm_reward}
        try:
            super().save(path, exclude, include)  # type: ignore[safe-super]  # the SB3 class mixed into implements it
        finally:
            self.__dict__.pop(VEC_NORMALIZE, None)

    def set_env(self, env: Any, force_reset: bool = True) -> None:
        """SB3's ``set_env``; a model loaded from a save that records a ``VecNormalize`` of the observations warns
        when ``env`` has none (:func:`~ordergrad_rl.agents.common.checks.warn_if_normalization_missing`), as
        :meth:`load` does."""
        super().set_env(env, force_reset)  # type: ignore[safe-super]  # the SB3 class mixed into implements it
        warn_if_normalization_missing(self.env, getattr(self, "_saved_vec_normalize", None))

    def _excluded_save_params(self) -> list[str]:
        # The objective is saved as its spec string (objective_spec): readable, and independent of the class layout;
        # the loaded save's VecNormalize record is its env's, and save writes this model's own.
        return [*super()._excluded_save_params(), "objective", "_saved_vec_normalize"]

    # ------------------------------------------------------------------ learning and logging
    def learn(
        self: SelfOrderGrad,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        **kwargs: Any,
    ) -> SelfOrderGrad:
        """SB3's ``learn``; ``tb_log_name`` defaults to :meth:`run_name` (``OrderGradPPO_cvar0.2@128_1``, ...), which
        callbacks read in ``self.locals["tb_log_name"]`` as SB3's read ``"PPO"``. ``kwargs`` go to the algorithm's own
        ``learn`` (MaskablePPO's ``use_masking``).

        ``log_interval`` counts rollouts, as SB3's: the logs are written every ``log_interval`` rollouts (each one
        update on ``n_episodes`` whole episodes), and ``None`` writes none. Its default is 1, as SB3's ``PPO``
        has it; SB3's ``A2C``, whose rollouts are 5 steps, has 100. A negative integer is SB3's reading of it (the
        rollouts whose count it divides: -1 logs every one), kept so that a PPO script runs unchanged. ``0`` or a
        value that is not an integer raises a ``ValueError`` at once (SB3 divides by it after the first rollout: 0
        was a ``ZeroDivisionError``).

        A ``tb_log_name`` with slashes, ``"OrderGradPPO_cvar0.2@128/seed0"``, puts the run under the subdirectory
        ``OrderGradPPO_cvar0.2@128`` of ``tensorboard_log`` (as ``seed0_1``), so the runs of one method are one
        group in TensorBoard's run list and its run filter.

        ``total_timesteps`` counts env steps, like SB3: a rollout of ``n_episodes`` episodes of length ``L`` costs at
        least ``n_episodes * L`` of them (e.g. 750 updates of 256 tail-risk episodes = 750 * 256 * 16 steps).

        Schedules of ``progress_remaining`` follow one call, as SB3's: ``reset_num_timesteps=False`` after a call that
        ran to its end starts them again, and says so in a ``UserWarning`` when one is in force
        (:func:`~ordergrad_rl.agents.common.progress.warn_if_schedules_restart`).
        """
        # SB3 divides the rollout count by it after the first rollout.
        counts = isinstance(log_interval, Integral) and not isinstance(log_interval, bool) and log_interval != 0
        if log_interval is not None and not counts:
            raise ValueError(f"log_interval must be None or a nonzero integer, got {log_interval!r}")
        warn_if_schedules_restart(self, reset_num_timesteps)
        self._size_for_learn(total_timesteps)
        return super().learn(  # type: ignore[safe-super]  # the SB3 class mixed into implements it
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,  # type: ignore[arg-type]  # SB3 types int, reads None as never
            # The run name, as SB3's learn passes its own ("PPO"): callbacks read it in self.locals["tb_log_name"].
            # The default is made once the budget has sized the rollout (and so k).
            tb_log_name=tb_log_name or self.run_name(),
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
            **kwargs,
        )

    def _size_for_learn(self, total_timesteps: int) -> None:
        """Decide what waits for the first ``learn`` call's budget, before the run is named (hook: the episodic
        rollout size). Nothing here."""

    @staticmethod
    def _wrap_env(env: AgentEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        """:func:`~ordergrad_rl.agents.common.env_util.wrap_env`: SB3's, taking a native batch's ``gym.make_vec``."""
        return wrap_env(env, verbose, monitor_wrapper)

    def _setup_model(self) -> None:
        # A record of the saved model's env, not of this one's (save); kept apart for set_env's check of a model
        # loaded without an env (load checks the env it is given).
        self._saved_vec_normalize = saved_vec_normalize(self.__dict__)
        self.__dict__.pop(VEC_NORMALIZE, None)
        check_action_space(self.action_space)
        check_observation_space(self.observation_space)
        super()._setup_model()  # type: ignore[safe-super]  # the SB3 class mixed into implements it

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        """SB3's progress, held at 0 once a rollout of whole episodes overshoots the budget
        (:func:`~ordergrad_rl.agents.common.progress.clamped_progress_remaining`): the last update reads every
        schedule at its end value, never past it (``lambda p: 0.01 * p`` would be an entropy penalty there)."""
        self._current_progress_remaining = clamped_progress_remaining(num_timesteps, total_timesteps)

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str | None = None,
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        parent, _, name = str(tb_log_name or self.run_name()).rpartition("/")  # SB3 formats it into the run name
        log_dir = self.tensorboard_log
        # SB3 numbers runs within one directory: the parent of a "parent/name" run is the directory it numbers in.
        run_dir = os.path.join(log_dir, parent) if parent and log_dir is not None else log_dir
        with lent_attributes(self, tensorboard_log=run_dir):
            steps, learn_callback = super()._setup_learn(
                total_timesteps, callback, reset_num_timesteps, name, progress_bar
            )
        # The risk dashboards of training and of every evaluation callback that logs a risk profile (risk_prefix).
        prefixes = [TRAIN_PREFIX] + [f"{TRAIN_PREFIX}/{name}" for name in self._info_channels]
        prefixes += [
            prefix for cb in _walk(learn_callback) if isinstance(prefix := getattr(cb, "risk_prefix", None), str)
        ]
        write_risk_layout(self.logger, prefixes)
        record_hparams(self.logger, self.hparams(), prefixes)
        return steps, learn_callback

    def _algorithm_name(self) -> str:
        """The name in run names and hparams: the class's, or the saved name of a class saved as another."""
        return self.saved_as or type(self).__name__

    def objective_label(self) -> str:
        """The objective as run names and hparams show it: ``objective_spec``, or the spec a user gave where the
        weights are not the spec's own (GCVaR's ``"gcvar0.2"``, which trains at ``objective_spec`` ``cvar0.2@k``)."""
        return self.objective_spec

    def run_name(self) -> str:
        """Default TensorBoard run name: the algorithm and the objective, ``OrderGradPPO_cvar0.2@128``, then
        :attr:`run_name_estimator` where the class sets one (``OrderGradPPO_top5@10_qcritic``)."""
        return default_run_name(self._algorithm_name(), self.objective_label(), self.run_name_estimator)

    def hparams(self) -> dict[str, Any]:
        """The arguments logged to TensorBoard's HParams dashboard: objective, algorithm, k, n_episodes, the
        constructor's other scalar arguments (:data:`HPARAM_NAMES` that the algorithm has), the env id and, for an
        env made with arguments other than its registered ones, ``env_kwargs``: them as ``key=value`` items
        (:func:`~ordergrad_rl.agents.common.env_util.env_arguments`, what ``evaluate --env-kwargs`` takes)
        (TensorBoard shows the columns of :data:`~ordergrad_rl.agents.common.hparams.SHOWN_HPARAMS` first)."""
        values: dict[str, Any] = {"objective": self.objective_label(), "algorithm": self._algorithm_name()}
        values.update({name: getattr(self, name) for name in HPARAM_NAMES if hasattr(self, name)})
        values["env"] = _env_id(self.env)
        arguments = env_arguments(self.env)
        if arguments:
            values["env_kwargs"] = " ".join(f"{key}={value!r}" for key, value in arguments.items())
        return values
