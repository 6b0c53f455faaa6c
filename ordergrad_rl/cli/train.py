"""Train an OrderGrad agent on an order-statistic objective of the episode return.

    ordergrad-rl train --algo reinforce --env SyntheticTailRisk-v0 --objective cvar0.2 --k 128 \\
        --timesteps 1000000 --tensorboard runs/ --save models/cvar --eval-env SyntheticTailRiskDeploy-v0
    ordergrad-rl train --algo ppo --env RiskyLavaGrid-v0 --objective mean --timesteps 200000 \\
        --hparams learning_rate=0.001 n_epochs=4 "policy_kwargs={'net_arch': [32]}"

--algo ppo is OrderGradPPO, --algo reinforce OrderGradREINFORCE, --algo recurrent_ppo OrderGradRecurrentPPO (LSTM
policy, default --policy MlpLstmPolicy) and --algo maskable_ppo OrderGradMaskablePPO (the env needs action_masks())
(ordergrad_rl.agents). Objectives: mean, cvar<a>,
quantile<q>, median, top<m>, bot<m>, max, min, trim<m>, winsor<m>, gmd, ... or the paper's names
(LowerTailMean:0.2, TopM:2, ...); "@K" in the spec or --k sets the order-statistic size k (< --n-episodes).

Per-env hyperparameters (rl-zoo3's convention): the entry of --env in the file shipped for --algo
(ordergrad_rl/zoo/hyperparams/ordergrad_<algo>.yml, each value with its reason) is applied by default, including its
n_timesteps when --timesteps is not given, its policy and n_envs unless --policy and --n-envs are given;
--conf-file PATH reads another file (it needs an entry for --env, as in rl-zoo3), --conf-file none applies none.
An entry's normalize (rl-zoo3's: true, or a mapping of VecNormalize's arguments) wraps the env in SB3's
VecNormalize, and the --eval-env in one sharing its statistics (frozen, raw rewards); for a ranked objective (all
but mean) norm_reward is off unless the mapping sets it, as a running reward scale would change the ranks of the
returns. --save PATH writes the statistics to
PATH/vecnormalize.pkl, which evaluate, compare and --trained-agent load. An entry's env_wrapper (rl-zoo3's: a
wrapper's dotted path, a list of them, or {path: {keyword: value}} in place of one) makes every env of the run in
those wrappers, outside its Monitor (env_wrapper: gymnasium.wrappers.FlattenObservation for Blackjack-v1's Tuple
observations), but for a gymnasium.wrappers.TimeLimit, gym.make's max_episode_steps, inside it (the Monitor records
the episodes it truncates); its vec_env_wrapper (SB3 VecEnvWrapper classes) and frame_stack (N: SB3's
VecFrameStack, over VecNormalize as in rl-zoo3) wrap the envs' VecEnv. --save PATH writes them all to
PATH/env_wrapper.yml, which evaluate, compare and --trained-agent read. Its callback (rl-zoo3's: SB3 callback
classes, in env_wrapper's form) trains with the run's own callbacks.
Every other constructor argument of the algorithm can be set with --hparams key=value (values are Python
literals read with ast.literal_eval; a value that is not a literal is taken as a string; policy_kwargs may be
rl-zoo3's text, "dict(net_arch=[64, 64], activation_fn=nn.ReLU)", or "dict(features_extractor_class=GridCNN)" for
small grids such as MinAtar's, in the file too); --hparams and the
options win over the file. TensorBoard logs the
risk profile of every training batch (risk/*) and, with --eval-env, of deterministic evaluation episodes
(eval_risk/*, eval_info/*; --eval-episodes on up to 8 envs, every --eval-freq steps, by default 10000 or, on long
episodes, as many steps as the episodes can take, and at the end), and the run's arguments with its final risk
values in the HParams tab. The run is named after the algorithm and the objective
(<tensorboard>/OrderGradPPO_cvar0.2@128_1; with --hparams advantage=q_critic, OrderGradPPO_top9@10_qcritic_1), or
--run-name NAME (NAME_1; "method/seed0" puts the run in the subdirectory "method", grouping the runs of one method).

An env of your own: --gym-packages MODULE ... imports the modules that register it first (rl-zoo3's option), or
--env module:EnvId-v0 imports module first, as gym.make reads it (the form for a sweep's trials, which run in other
processes); a module in the current folder imports, as with python -m rl_zoo3.train.
As in rl-zoo3: --env-kwargs KEY=VALUE ... are the env's arguments, and gym.make's max_episode_steps (a TimeLimit
for an env without one, or another limit); they make an --eval-env of the same id too, unless --eval-env-kwargs
gives its own (nothing after it: none; an --eval-env of another id takes only --eval-env-kwargs); an env_kwargs
mapping in the --conf-file entry gives them too, under --env-kwargs (a key given wins). The HParams tab
shows them (env_kwargs). --save PATH writes the env's id, all its arguments and --gym-packages to PATH/args.yml (as
rl-zoo3 writes its args.yml), which evaluate, compare and --trained-agent read: a model is evaluated on that env
without --env, and on that env id with those arguments, under --env-kwargs (a key given wins).
--trained-agent PATH (-i) goes on training a saved model for --timesteps more steps, with its algorithm, objective,
hyperparameters (--hparams change them), step count and env (its args.yml; --algo and --env need not be given),
logging into the latest TensorBoard run of its name (its --run-name, from its args.yml, unless --run-name is given),
evaluating on its --eval-env (--eval-env-kwargs, --eval-freq, --eval-episodes) and in its --vec-env, unless they are
given (--eval-env none: no evaluation); a model in an rl-zoo3 run folder evaluates as that run did, on its env every
eval_freq steps with its eval_env_kwargs (--eval-freq -1: never).
--save-freq F saves a checkpoint every F env steps beside --save (PATH_<steps>_steps.zip); Ctrl-C saves the model
trained so far to --save. --vec-env subproc steps the training envs in SB3's SubprocVecEnv (same seeds).

    ordergrad-rl train --algo ppo --env CliffWalking-v1 --env-kwargs is_slippery=True max_episode_steps=100 \\
        --objective cvar0.2 --timesteps 200000 --save models/cliff --save-freq 50000 --tensorboard runs/
    ordergrad-rl train -i models/cliff.zip --timesteps 100000 --save models/cliff_more --tensorboard runs/
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import (
    add_gym_packages_argument,
    file_path,
    frequency_int,
    import_gym_packages,
    model_file,
    parse_env_kwargs,
    positive_int,
    seed_int,
)
from ordergrad_rl.common.reports import markdown_table
from ordergrad_rl.zoo.algorithms import ALGOS, RL_ZOO_ALGOS, algo_name, algorithm_class, parse_hparams
from ordergrad_rl.zoo.dashboards import tensorboard_command
from ordergrad_rl.zoo.models import (
    FRAME_STACK,
    VEC_ENVS,
    EnvWrappers,
    check_read_env_kwargs,
    detect_algorithm,
    env_label,
    make_callbacks,
    model_env,
    run_argument,
    saved_env_wrapper,
    wrapper_call,
    written_env_wrapper,
)
from ordergrad_rl.zoo.training import (
    EVAL_FREQ,
    TrainSettings,
    build_model,
    checkpoint_callback,
    eval_callback,
    eval_frequency,
    learn,
    load_trained_agent,
    run_arguments,
    save_model,
    with_entry_env,
    zoo_hyperparams,
)


def wrapper_names(env_wrapper: EnvWrappers) -> str:
    """The wrappers of an ``env_wrapper``, innermost first, as the env is printed (``Blackjack-v1 in ...``):
    ``FlattenObservation() in TimeLimit(max_episode_steps=20)``."""
    return " in ".join(wrapper_call(path.rpartition(".")[2], kwargs) for path, kwargs in env_wrapper)


def run_name(text: str) -> str:
    """argparse type of ``--run-name``: a relative path of named parts (``name`` or ``group/name``)."""
    parts = text.split("/")
    if text.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise argparse.ArgumentTypeError(f"expected a name or group/name (a relative path without '..'), got {text!r}")
    return text


def option_text(value: Any) -> str:
    """An option's value as it is typed: a mapping of env arguments as ``KEY=VALUE`` items."""
    if isinstance(value, dict):
        return " ".join(f"{key}={item!r}" for key, item in value.items())
    return str(value)


def saved_run_name(path: Path, env_id: str) -> str | None:
    """The ``--run-name`` of the run that saved the model at ``path`` (its ``args.yml``), or ``None``: the algorithm's
    name, or a save without one.

    :raises CommandError: a ``run_name`` that :func:`run_name` refuses.
    """
    name, file = run_argument(path, "run_name", env_id)
    if name is None:
        return None
    try:
        return run_name(str(name))
    except argparse.ArgumentTypeError as err:
        raise CommandError(f"{file}: run_name: {err}") from err


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl train``."""
    rl_zoo = {key: name for name, key in RL_ZOO_ALGOS.items()}
    parser.add_argument(
        "--algo",
        default=None,
        type=algo_name,
        choices=sorted(ALGOS),
        help=", ".join(f"{k}{f' (rl-zoo3: {rl_zoo[k]})' if k in rl_zoo else ''}: {v}" for k, v in ALGOS.items())
        + " (required; with --trained-agent, the algorithm that saved it)",
    )
    parser.add_argument(
        "--env",
        default=None,
        metavar="ID",
        help="Gymnasium env id (required; with --trained-agent, the env of the args.yml train --save wrote beside it)",
    )
    add_gym_packages_argument(parser)
    parser.add_argument(
        "--env-kwargs",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="env arguments (Python literals or text), and gym.make's max_episode_steps (a TimeLimit; -1: none); "
        "also of an --eval-env of the same id unless --eval-env-kwargs is given",
    )
    parser.add_argument(
        "--vec-env",
        choices=VEC_ENVS,
        default=None,
        help="the training env's SB3 VecEnv (rl-zoo3's option): dummy (DummyVecEnv, or the native batch of the "
        "tail-risk and TargetSum ids) or subproc (SubprocVecEnv: a process per env; default: dummy, with "
        "--trained-agent its run's)",
    )
    parser.add_argument(
        "--objective",
        default=None,
        metavar="SPEC",
        help="objective of the episode return: mean, cvar0.2, max@8, ... (required, unless --trained-agent)",
    )
    parser.add_argument(
        "-i",
        "--trained-agent",
        type=Path,
        default=None,
        metavar="PATH",
        help="go on training this saved model (.zip) of --algo for --timesteps more steps, with its objective, "
        "hyperparameters and step count (rl-zoo3's option)",
    )
    parser.add_argument("--k", type=positive_int, default=None, help="order-statistic size (default: N // 2)")
    parser.add_argument(
        "--n-episodes",
        type=positive_int,
        default=None,
        metavar="N",
        help="episodes per update (default: the algorithm's n_episodes)",
    )
    parser.add_argument(
        "--n-envs",
        type=positive_int,
        default=None,
        metavar="E",
        help="parallel envs, any number: N episodes are collected across them (default: the algorithm's n_envs)",
    )
    parser.add_argument(
        "--timesteps",
        "-n",
        "--n-timesteps",
        type=positive_int,
        default=None,
        metavar="T",
        help="env steps to train for (default: the n_timesteps of the env's --conf-file entry; required without one)",
    )
    parser.add_argument(
        "--seed", type=seed_int, default=None, help="random seed (default: 0; with -i, the seed of its run's args.yml)"
    )
    parser.add_argument(
        "--policy",
        default=None,
        help="MlpPolicy, CnnPolicy or MultiInputPolicy (recurrent_ppo: MlpLstmPolicy, CnnLstmPolicy, "
        "MultiInputLstmPolicy; default: the --conf-file entry's, else the first)",
    )
    parser.add_argument(
        "--conf-file",
        "-conf",
        default=None,
        metavar="PATH",
        help="per-env hyperparameter file, rl-zoo3 style, with an entry for --env (default: "
        "ordergrad_rl/zoo/hyperparams/ordergrad_<algo>.yml shipped with the package, for ppo and reinforce, whose "
        "entry applies where it has one; 'none': the algorithm's defaults only)",
    )
    parser.add_argument(
        "--tensorboard", "-tb", "--tensorboard-log", type=Path, default=None, metavar="DIR", help="TensorBoard log dir"
    )
    parser.add_argument(
        "--run-name",
        type=run_name,
        default=None,
        metavar="NAME",
        help="TensorBoard run name (default: algorithm and objective, e.g. OrderGradPPO_cvar0.2@128, and _qcritic "
        "for advantage=q_critic); "
        "'group/name' writes the run into the subdirectory 'group'",
    )
    parser.add_argument(
        "--save",
        type=file_path,
        default=None,
        metavar="PATH",
        help="save the trained model to PATH (.zip added without a suffix)",
    )
    parser.add_argument(
        "--save-freq",
        type=frequency_int,
        default=None,
        metavar="F",
        help="also save a checkpoint every F env steps, beside --save: PATH_<steps>_steps.zip (default, or "
        "rl-zoo3's -1: none)",
    )
    parser.add_argument(
        "--eval-env",
        default=None,
        metavar="ID",
        help="also evaluate periodically on this env id (with --trained-agent, default: its run's; none: no "
        "evaluation)",
    )
    parser.add_argument(
        "--eval-env-kwargs",
        nargs="*",
        default=None,
        metavar="KEY=VALUE",
        help="arguments of --eval-env (default: --env-kwargs if --eval-env is --env, else none; none given: none)",
    )
    parser.add_argument(
        "--eval-freq",
        type=frequency_int,
        default=None,
        metavar="F",
        help=f"evaluate every F env steps (default: {EVAL_FREQ}, or --eval-episodes times the --eval-env's episode "
        "limit where that is more, so evaluating never steps more than training did: 99900 on "
        "MountainCarContinuous-v0, where 10000 took 97 s beside 16 s of training at 30000 steps; with "
        "--trained-agent that of its run, if it evaluated; rl-zoo3's -1: no evaluation, as --eval-env none)",
    )
    parser.add_argument(
        "--eval-episodes",
        type=positive_int,
        default=None,
        metavar="E",
        help=f"episodes per evaluation (default: {TrainSettings.eval_episodes}, with --trained-agent those of its "
        "run, if it evaluated)",
    )
    parser.add_argument(
        "--hparams",
        "-params",
        "--hyperparams",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="other constructor arguments, e.g. learning_rate=0.003 \"policy_kwargs={'net_arch': []}\" (rl-zoo3's "
        "key:value items too)",
    )
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2), help="SB3 verbosity (default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def settings(args: argparse.Namespace) -> TrainSettings:
    """The training run the options describe (:class:`TrainSettings`' defaults for the options not given)."""
    given = {name: getattr(args, name) for name in ("eval_freq", "eval_episodes", "vec_env", "seed")}
    return TrainSettings(
        algo=args.algo,
        env=args.env,
        objective=args.objective,
        k=args.k,
        n_episodes=args.n_episodes,
        n_envs=args.n_envs,
        policy=args.policy,
        tensorboard=args.tensorboard,
        eval_env=args.eval_env,
        device=args.device,
        verbose=args.verbose,
        conf_file=args.conf_file,
        env_kwargs=parse_env_kwargs(args.env_kwargs) or None,
        eval_env_kwargs=None
        if args.eval_env_kwargs is None
        else parse_env_kwargs(args.eval_env_kwargs, "--eval-env-kwargs"),
        **{name: value for name, value in given.items() if value is not None},
    )


#: The options a ``--trained-agent`` keeps from its run's ``args.yml`` where they are not given (as ``--algo``,
#: ``--env``, ``--env-kwargs`` and ``--run-name``): each key (rl-zoo3's, and ``eval_env``, which an rl-zoo3 run's file
#: gives as :func:`~ordergrad_rl.zoo.models.run_argument` reads it) with what its value must be.
KEPT_OPTIONS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "vec_env": (lambda value: value in VEC_ENVS, f"one of {', '.join(VEC_ENVS)}"),
    "eval_env": (lambda value: isinstance(value, str), "an env id"),
    "eval_freq": (lambda value: type(value) is int and value >= 1, "an integer >= 1"),
    "eval_episodes": (lambda value: type(value) is int and value >= 1, "an integer >= 1"),
    # Its own seed, not 0: continued runs of several seeds would otherwise all draw seed 0's env streams.
    "seed": (lambda value: type(value) is int and value >= 0, "an integer >= 0"),
}

#: The options of :data:`KEPT_OPTIONS` that set the run's evaluation, kept only from a run that evaluated (its
#: ``eval_env`` is not ``None``).
EVALUATION_OPTIONS = ("eval_freq", "eval_episodes")


def kept_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :data:`KEPT_OPTIONS` a ``--trained-agent``'s run was trained with (its ``args.yml``), set on
    ``args`` where not given: a continued run evaluates on its ``--eval-env`` (with its ``--eval-env-kwargs``,
    unless another ``--eval-env`` or ``--eval-env-kwargs`` is given), as often, and steps its envs in its
    ``--vec-env``, as the run did.

    :return: those kept, by key, with the ``eval_env_kwargs`` of its ``--eval-env``, kept or given again (a mapping,
        which :func:`settings` does not read from ``args``), where the file records them.
    :raises CommandError: a value that is not one the option takes, naming the file and the key.
    """
    kept: dict[str, Any] = {}
    saved_eval_env, _ = run_argument(args.trained_agent, "eval_env", args.env)
    for name, (valid, expected) in KEPT_OPTIONS.items():
        if getattr(args, name) is not None:  # given: the command line wins
            continue
        if name in EVALUATION_OPTIONS and saved_eval_env is None:
            # A run that did not evaluate has no frequency to go on with: an args.yml written before 2026-12-07
            # records the then default 10,000 all the same, which an -i --eval-env would take for the run's.
            continue
        value, file = run_argument(args.trained_agent, name, args.env)
        if value is None:
            continue
        if not valid(value):
            raise CommandError(f"{file}: {name}: expected {expected}, got {value!r}")
        setattr(args, name, value)
        kept[name] = value
    if args.eval_env is not None and args.eval_env == saved_eval_env and args.eval_env_kwargs is None:
        # The arguments of its --eval-env, kept or given again.
        kwargs, file = run_argument(args.trained_agent, "eval_env_kwargs", args.env)
        if kwargs is not None and not (isinstance(kwargs, dict) and all(isinstance(key, str) for key in kwargs)):
            raise CommandError(f"{file}: eval_env_kwargs: expected a mapping of the env's arguments, got {kwargs!r}")
        check_read_env_kwargs(kwargs or {}, f"{file}: eval_env_kwargs", "--eval-env-kwargs")
        if kwargs is not None:
            kept["eval_env_kwargs"] = kwargs
    return kept


def trained_agent_defaults(args: argparse.Namespace) -> None:
    """``--algo`` and ``--env`` of a ``--trained-agent`` where they are not given: the algorithm that saved it, and
    the env of its run's ``args.yml`` (which ``train --save`` writes beside it, as rl-zoo3 does).

    :raises CommandError: a save of an algorithm ``train`` does not train, or no ``args.yml`` naming the env.
    """
    if args.algo is None:
        algorithm = detect_algorithm(args.trained_agent)
        names = {name: key for key, name in ALGOS.items()}
        if algorithm.name not in names:
            raise CommandError(
                f"--trained-agent {args.trained_agent} was saved by {algorithm.name}, which train does not train: "
                f"it trains {', '.join(ALGOS.values())}"
            )
        args.algo = names[algorithm.name]
    if args.env is None:
        env, _ = run_argument(args.trained_agent, "env")
        if not isinstance(env, str):
            raise CommandError(
                f"give --env: no args.yml beside --trained-agent {args.trained_agent} names the env it trained on"
            )
        args.env = env


def rl_zoo_none(args: argparse.Namespace) -> None:
    """rl-zoo3's ``--eval-freq -1`` (no evaluation: ``--eval-env none``, a ``--trained-agent``'s run's too) and
    ``--save-freq -1`` (no checkpoints: as without it), read into ``args``.

    :raises CommandError: ``--eval-freq -1`` with an ``--eval-env`` to evaluate on.
    """
    if args.eval_freq == -1:
        if args.eval_env is not None and args.eval_env.lower() != "none":
            raise CommandError(f"--eval-freq -1 (rl-zoo3's: no evaluation) and --eval-env {args.eval_env}: give one")
        args.eval_env, args.eval_freq = "none", None
    if args.save_freq == -1:
        args.save_freq = None


def warn_if_restarting(model: Any, reset_num_timesteps: bool, timesteps: int) -> None:
    """Warn, in the command's words, where a ``--trained-agent`` that ran to its end starts its schedules again over
    these ``timesteps`` (the agents' :class:`~ordergrad_rl.agents.common.progress.ScheduleRestartWarning` says it in
    ``learn``'s, whose advice is a Python program's)."""
    from ordergrad_rl.agents.common.progress import restarting_schedules

    names = restarting_schedules(model, reset_num_timesteps)
    if names:
        start = 1 - model.num_timesteps / (model.num_timesteps + timesteps)
        warnings.warn(
            f"--trained-agent: its run took its schedules ({', '.join(names)}) to their end (progress_remaining 0); "
            f"over these {timesteps} timesteps they go from progress_remaining {start:.3g} to 0 again, as SB3's "
            "learn(reset_num_timesteps=False) runs rl-zoo3's -i. A run that Ctrl-C stopped goes on under its own "
            "schedules: give --timesteps the steps it had left",
            stacklevel=2,
        )


def check_arguments(args: argparse.Namespace) -> None:
    """:raises CommandError: options that do not go together (before any model is built)."""
    if args.trained_agent is None:
        missing = [option for option, value in (("--algo", args.algo), ("--env", args.env)) if value is None]
        if missing:
            raise CommandError(f"give {' and '.join(missing)} (without --trained-agent, whose save has them)")
        if args.objective is None:
            raise CommandError("give --objective (the objective of the episode return: mean, cvar0.2, max@8, ...)")
    else:
        kept = {"--objective": args.objective, "--k": args.k, "--policy": args.policy, "--conf-file": args.conf_file}
        given = [option for option, value in kept.items() if value is not None]
        if given:
            raise CommandError(
                f"{', '.join(given)} cannot change a --trained-agent model: it goes on with the objective, policy "
                "and hyperparameters it was saved with (--hparams change hyperparameters)"
            )
        if args.timesteps is None:
            raise CommandError("give --timesteps with --trained-agent: the env steps to train for after its own")
    if args.eval_env_kwargs is not None and args.eval_env is None:
        raise CommandError("--eval-env-kwargs is for --eval-env")
    if args.save_freq is not None and args.save is None:
        raise CommandError("--save-freq saves checkpoints beside --save PATH: give --save")


def run(args: argparse.Namespace) -> int:
    """Build (or load), train (with a progress bar), print the last risk profiles, save."""
    # Imported here, not at the top: risk pulls in the estimators (scipy), the agents torch, and `train --help` stays
    # fast.
    from ordergrad_rl.agents.common.progress import ScheduleRestartWarning
    from ordergrad_rl.risk import risk_profile

    import_gym_packages(args.gym_packages)
    rl_zoo_none(args)
    kept: dict[str, Any] = {}
    if args.trained_agent is not None:
        trained_agent_defaults(args)
        kept = kept_options(args)
    if args.eval_env is not None and args.eval_env.lower() == "none":  # no evaluation, a --trained-agent's neither
        args.eval_env = None
    check_arguments(args)
    run_settings = settings(args)
    if "eval_env_kwargs" in kept:
        run_settings = dataclasses.replace(run_settings, eval_env_kwargs=kept["eval_env_kwargs"])
    hparams = parse_hparams(args.hparams, algorithm_class(args.algo))
    entry = None
    gym_packages, tb_log_name = list(args.gym_packages), args.run_name
    if args.trained_agent is not None:
        timesteps = args.timesteps
        # The env's arguments of its save (args.yml) under --env-kwargs, and its wrappers, as evaluate makes its env.
        saved = model_env(args.trained_agent, args.env, run_settings.env_kwargs or {})
        gym_packages += [package for package in saved.gym_packages if package not in gym_packages]
        tb_log_name = tb_log_name or saved_run_name(args.trained_agent, args.env)  # its TensorBoard run goes on
        env_wrapper = saved_env_wrapper(args.trained_agent, args.env)
        run_settings = dataclasses.replace(run_settings, env_kwargs=saved.env_kwargs or None, env_wrapper=env_wrapper)
        model = load_trained_agent(run_settings, args.trained_agent, hparams, saved.option)
        shown = {  # those that change something: not a default, nor an evaluation's without its env
            name: value
            for name, value in kept.items()
            if value != getattr(TrainSettings, name) and (run_settings.eval_env or not name.startswith("eval"))
        }
        kept_text = " ".join(f"--{name.replace('_', '-')} {option_text(value)}" for name, value in shown.items())
        kept_text = f", with its run's {kept_text}" if shown else ""
        print(f"going on from {args.trained_agent} at {model.num_timesteps} timesteps{kept_text}")
    else:
        entry = zoo_hyperparams(args.algo, args.env, args.conf_file)
        run_settings = with_entry_env(run_settings, entry)
        timesteps = args.timesteps if args.timesteps is not None else getattr(entry, "n_timesteps", None)
        if timesteps is None:
            if entry is None:
                raise CommandError(f"give --timesteps: {args.env} has no per-env hyperparameter entry")
            raise CommandError(f"give --timesteps: the {args.env} entry of {entry.source} has no n_timesteps")
        model = build_model(run_settings, hparams, entry=entry)
        if entry is not None:  # as rl-zoo3 prints them: the values the model is built with
            options = {"n_episodes": args.n_episodes, "n_envs": args.n_envs}
            given = hparams | {key: value for key, value in options.items() if value is not None}
            applied = {key: value for key, value in entry.kwargs.items() if key not in given}
            applied |= {} if args.timesteps is not None else {"n_timesteps": timesteps}
            applied |= {"env_kwargs": entry.env_kwargs} if entry.env_kwargs else {}
            applied |= {"normalize": entry.normalize} if entry.normalize is not None else {}
            applied |= {"env_wrapper": written_env_wrapper(entry.env_wrapper)} if entry.env_wrapper else {}
            applied |= {"vec_env_wrapper": written_env_wrapper(entry.vec_env_wrapper)} if entry.vec_env_wrapper else {}
            applied |= {"frame_stack": entry.frame_stack} if entry.frame_stack is not None else {}
            applied |= {"callback": written_env_wrapper(entry.callback)} if entry.callback else {}
            listed = ", ".join(f"{key}={value}" for key, value in applied.items())
            replaced = ", ".join(f"{key}={given[key]}" for key in entry.kwargs if key in given)
            replaced = f"; instead of the file's, --hparams and the options give {replaced}" if replaced else ""
            print(f"hyperparameters of {args.env} from {entry.source}: {listed}{replaced}")
    eval_option = "--eval-env-kwargs"
    if "eval_env_kwargs" in kept:  # its args.yml's, as errors name them
        eval_option = f"{run_argument(args.trained_agent, 'eval_env_kwargs', args.env)[1]}: eval_env_kwargs"
    callback = eval_callback(run_settings, model, eval_option)
    if callback is not None:  # the frequency it evaluates at, which args.yml records and -i goes on with
        run_settings = dataclasses.replace(run_settings, eval_freq=eval_frequency(run_settings, callback.eval_env))
    arguments = run_arguments(run_settings, gym_packages, tb_log_name)  # written beside --save: args.yml
    callbacks = [cb for cb in (callback,) if cb is not None]
    callbacks += make_callbacks(entry.callback) if entry is not None else []  # rl-zoo3's, after ours
    if args.save_freq is not None:
        callbacks.append(checkpoint_callback(model, args.save, args.save_freq, run_settings.env_wrapper, arguments))
    if model.n_episodes is None:  # the Q-critic mode: SB3's rollouts of n_steps per env
        objective, rollout = model.objective, f"{model.n_steps} steps per env per update"
    else:  # the sizes learn(timesteps) trains with: a small first budget can halve a default n_episodes
        n_episodes, objective = model.budget_rollout(timesteps)
        rollout = f"{n_episodes} episodes per update"
    env = env_label(args.env, run_settings.env_kwargs)
    # As they wrap it: the VecNormalize over the wrappers, under frame_stack's VecFrameStack (rl-zoo3's order), last.
    inner = tuple(item for item in run_settings.env_wrapper if item[0] != FRAME_STACK)
    parts = [env, wrapper_names(inner)] if inner else [env]
    normalize = model.get_vec_normalize_env()
    if normalize is not None:
        parts.append(f"VecNormalize(norm_obs={normalize.norm_obs}, norm_reward={normalize.norm_reward})")
    if len(inner) < len(run_settings.env_wrapper):
        parts.append(wrapper_names(run_settings.env_wrapper[len(inner) :]))
    env = " in ".join(parts)
    print(
        f"{type(model).__name__} on {env}: objective {objective}, {rollout} "
        f"on {model.n_envs} env{'s' if model.n_envs > 1 else ''}, {timesteps} timesteps"
    )
    if callback is not None:
        n_eval_envs = callback.eval_env.num_envs
        print(
            f"evaluating {run_settings.eval_episodes} episodes of {run_settings.eval_env} every "
            f"{run_settings.eval_freq} steps and at the end, on {n_eval_envs} env{'s' if n_eval_envs > 1 else ''}"
        )
    warn_if_restarting(model, args.trained_agent is None, timesteps)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ScheduleRestartWarning)  # warn_if_restarting's, in the command's words
            learn(
                model,
                timesteps,
                callback=callbacks or None,
                tb_log_name=tb_log_name,
                reset_num_timesteps=args.trained_agent is None,
                progress_bar=not args.quiet,
            )
    except KeyboardInterrupt:  # Ctrl-C: as rl-zoo3, the model trained so far is saved (main returns 130)
        if args.save is not None:
            save_model(model, args.save, run_settings.env_wrapper, arguments)
            print(f"\ninterrupted at {model.num_timesteps} timesteps; model: {model_file(args.save)} (--trained-agent)")
        raise
    finally:  # as rl-zoo3: --vec-env subproc's workers end with the run, not with the calling process
        model.env.close()
        if callback is not None:
            callback.eval_env.close()
    print(f"trained in {time.perf_counter() - start:.1f} s ({model.num_timesteps} timesteps)")

    if model.n_episodes is None:  # SB3's buffer keeps steps, not episodes: the Monitor's last episodes instead
        episodes = [info["r"] for info in model.ep_info_buffer]
        columns = {f"last {len(episodes)} training episodes": risk_profile(episodes)} if episodes else {}
    else:
        columns = {"last training batch": risk_profile(model.rollout_buffer.episode_returns)}
    if callback is not None and callback.last_returns is not None:
        columns[f"last evaluation ({run_settings.eval_env})"] = callback.last_profile
    if columns:
        keys = list(next(iter(columns.values())))
        rows = [[key, *(c[key] for c in columns.values())] for key in keys]
        print(markdown_table(["return statistic", *columns], rows))
    if args.save is not None:
        statistics = save_model(model, args.save, run_settings.env_wrapper, arguments)
        print(f"model: {model_file(args.save)}")
        if statistics is not None:
            print(f"VecNormalize statistics: {statistics}")
    if args.tensorboard is not None:
        print(f"TensorBoard run: {model.logger.dir}\nTensorBoard: {tensorboard_command(args.tensorboard)}")
    return 0
