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
(ordergrad_rl/hyperparams/ordergrad_<algo>.yml, each value with its reason) is applied by default, including its
n_timesteps when --timesteps is not given; --conf-file PATH reads another file, --conf-file none applies none.
Every other constructor argument of the algorithm can be set with --hparams key=value (values are Python
literals read with ast.literal_eval; a value that is not a literal is taken as a string); --hparams and the
options win over the file. TensorBoard logs the
risk profile of every training batch (risk/*) and, with --eval-env, of deterministic evaluation episodes
(eval_risk/*, eval_info/*), and the run's arguments with its final risk values in the HParams tab. The run is
named after the algorithm and the objective (<tensorboard>/OrderGradPPO_cvar0.2@128_1), or --run-name NAME
(NAME_1; "method/seed0" puts the run in the subdirectory "method", grouping the runs of one method).
"""

from __future__ import annotations

import argparse
import ast
import collections.abc
import inspect
import sys
import time
import types
import typing
from pathlib import Path
from typing import Any

from ordergrad_rl.commands._checks import check_device
from ordergrad_rl.commands._models import CommandError, check_fits, is_batched
from ordergrad_rl.experiments._common import markdown_table, positive_int, seed_int

ALGOS: dict[str, str] = {
    "ppo": "OrderGradPPO",
    "reinforce": "OrderGradREINFORCE",
    "recurrent_ppo": "OrderGradRecurrentPPO",
    "maskable_ppo": "OrderGradMaskablePPO",
}
#: Constructor arguments that have their own option.
OPTION_OF: dict[str, str] = {
    "policy": "--policy",
    "env": "--env",
    "objective": "--objective",
    "k": "--k",
    "n_episodes": "--n-episodes",
    "n_envs": "--n-envs",
    "seed": "--seed",
    "tensorboard_log": "--tensorboard",
    "verbose": "--verbose",
    "device": "--device",
}
#: Options a per-env hyperparameter file may also set, as rl-zoo's entries set their rollout size (the option wins).
ENTRY_OPTIONS = ("n_episodes",)
#: Seeds of the evaluation envs are offset from the training envs' (env i of a VecEnv seeded s gets s + i).
EVAL_SEED_OFFSET = 1_000_000


def run_name(text: str) -> str:
    """argparse type of ``--run-name``: a relative path of named parts (``name`` or ``group/name``)."""
    parts = text.split("/")
    if text.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise argparse.ArgumentTypeError(f"expected a name or group/name (a relative path without '..'), got {text!r}")
    return text


def algorithm_class(algo: str) -> type:
    """The algorithm class of ``--algo`` (see :data:`ALGOS`)."""
    import ordergrad_rl.agents

    return getattr(ordergrad_rl.agents, ALGOS[algo])


def hyperparameter_names(cls: type) -> list[str]:
    """Constructor arguments of ``cls`` that ``--hparams`` may set."""
    names = inspect.signature(cls).parameters
    return sorted(name for name in names if name not in OPTION_OF and not name.startswith("_"))


def _annotation(cls: type, name: str) -> Any:
    """The evaluated annotation of constructor argument ``name``, or ``None`` if it has none or cannot be evaluated.

    Annotations are evaluated one by one: ``typing.get_type_hints`` fails as a whole on names imported under
    ``TYPE_CHECKING`` (``VecEnv`` in SB3's signatures).
    """
    annotation = inspect.signature(cls).parameters[name].annotation
    if annotation is inspect.Parameter.empty:
        return None
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, vars(sys.modules[cls.__module__]), {})  # the class's own source text, not user input
    except Exception:
        return None


def _matches(value: Any, annotation: Any) -> bool:
    """Whether ``value`` (a Python literal) fits ``annotation``; unknown annotations accept anything.

    Shallow: ``dict[str, Any]`` checks that ``value`` is a dict. A literal is never a class or a callable, so
    ``type[...]`` and ``Callable`` (SB3's ``Schedule``) refuse it. ``int`` fits ``float`` (PEP 484), ``bool`` fits
    only ``bool``.
    """
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin in (type, collections.abc.Callable) or annotation is collections.abc.Callable:
        return False
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(origin, type):
        return isinstance(value, origin)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


_LITERAL_KINDS: dict[Any, str] = {
    float: "a number",
    int: "an integer",
    bool: "True or False",
    str: "a string",
    type(None): "None",
    dict: "a dict such as {'key': 1}",
    list: "a list",
    tuple: "a tuple",
}


def _describe(annotation: Any) -> str:
    """What a command-line literal must be to fit ``annotation``, in words (``""`` for classes and functions)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(part for part in map(_describe, typing.get_args(annotation)) if part)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(annotation))
    if origin in (type, collections.abc.Callable) or annotation is collections.abc.Callable:
        return ""
    return _LITERAL_KINDS.get(origin or annotation, str(annotation))


def _expected(cls: type, name: str) -> Any:
    """What ``name`` accepts: its annotation, else the type of its default (``None``: anything)."""
    annotation = _annotation(cls, name)
    if annotation is not None:
        return annotation
    default = inspect.signature(cls).parameters[name].default
    return None if default is None or default is inspect.Parameter.empty else type(default)


def parse_hparams(items: list[str], cls: type) -> dict[str, Any]:
    """``["key=value", ...]`` -> ``{key: ast.literal_eval(value)}`` (the raw string if it is not a literal).

    Each value must fit the constructor argument's annotation (or its default's type, when unannotated), so
    ``learning_rate=1e-2x`` (a string, not a number) is refused here rather than deep inside the algorithm.

    :raises CommandError: malformed item, a key with its own option, a key ``cls`` does not accept, or a value of
        the wrong type.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommandError(f"--hparams expects key=value items, got {item!r}")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # e.g. activation names, device strings
        out[key] = check_hparam(key, value, cls, f"--hparams {key}={text}", raw=value is text)
    return out


def check_hparam(key: str, value: Any, cls: type, where: str, raw: bool = False, options: tuple[str, ...] = ()) -> Any:
    """``value`` if ``cls`` accepts ``key`` (not one with its own option) with a value of that type.

    :param where: how the user wrote it, for the message (``--hparams lr=x``, ``sweep.yaml: learning_rate``).
    :param raw: ``value`` is command-line text that is not a Python literal (said so in the message).
    :param options: keys with their own option that are accepted here too (:data:`ENTRY_OPTIONS` in a file).
    :raises CommandError: a key with its own option, a key ``cls`` does not accept, or a value of the wrong type.
    """
    if key in OPTION_OF and key not in options:
        raise CommandError(f"set {key} with {OPTION_OF[key]}, not --hparams")
    valid = [*hyperparameter_names(cls), *options]
    if key not in valid:
        raise CommandError(f"{cls.__name__} has no hyperparameter {key!r}; valid keys: {', '.join(valid)}")
    expected = _expected(cls, key)
    if expected is not None and not _matches(value, expected):
        got = "text that is not a Python literal" if raw else f"{type(value).__name__} {value!r}"
        accepted = _describe(expected) or "a class or function (cannot be given on the command line)"
        raise CommandError(f"{where}: {cls.__name__}'s {key} expects {accepted}, got {got}")
    return value


def zoo_hyperparams(args: argparse.Namespace) -> Any:
    """The ``--env`` entry of the ``--conf-file`` (default: the file shipped for ``--algo``), checked against the
    algorithm's constructor; ``None`` with ``--conf-file none`` or if the file has no entry for the env.

    :raises CommandError: unreadable or malformed file, or an entry key/value the algorithm does not accept.
    """
    from ordergrad_rl.hyperparams import FILES, load_hyperparams

    conf_file = args.conf_file
    if conf_file is not None and str(conf_file).lower() == "none":
        return None
    if conf_file is None and args.algo not in FILES:
        return None  # no file shipped for this algorithm
    cls = algorithm_class(args.algo)
    try:
        entry = load_hyperparams(args.algo, args.env, conf_file)
    except (OSError, ValueError) as err:
        raise CommandError(f"--conf-file: {err}") from err
    if entry is None:
        return None
    for key, value in entry.kwargs.items():
        check_hparam(key, value, cls, f"{entry.source}: {args.env}: {key}", options=ENTRY_OPTIONS)
    return entry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl train``."""
    parser.add_argument(
        "--algo", required=True, choices=sorted(ALGOS), help=", ".join(f"{k}: {v}" for k, v in ALGOS.items())
    )
    parser.add_argument("--env", required=True, metavar="ID", help="Gymnasium env id")
    parser.add_argument(
        "--objective", required=True, metavar="SPEC", help="objective of the episode return: mean, cvar0.2, max@8, ..."
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
        help="parallel envs, a divisor of N (default: the algorithm's n_envs)",
    )
    parser.add_argument(
        "--timesteps",
        type=positive_int,
        default=None,
        metavar="T",
        help="env steps to train for (default: the n_timesteps of the env's --conf-file entry; required without one)",
    )
    parser.add_argument("--seed", type=seed_int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--policy",
        default=None,
        help="MlpPolicy, CnnPolicy or MultiInputPolicy (recurrent_ppo: MlpLstmPolicy, CnnLstmPolicy, "
        "MultiInputLstmPolicy; default: the --conf-file entry's, else the first)",
    )
    parser.add_argument(
        "--conf-file",
        default=None,
        metavar="PATH",
        help="per-env hyperparameter file, rl-zoo3 style (default: ordergrad_rl/hyperparams/ordergrad_<algo>.yml "
        "shipped with the package, for ppo and reinforce; 'none': the algorithm's defaults only)",
    )
    parser.add_argument("--tensorboard", type=Path, default=None, metavar="DIR", help="TensorBoard log dir")
    parser.add_argument(
        "--run-name",
        type=run_name,
        default=None,
        metavar="NAME",
        help="TensorBoard run name (default: algorithm and objective, e.g. OrderGradPPO_cvar0.2@128); "
        "'group/name' writes the run into the subdirectory 'group'",
    )
    parser.add_argument("--save", type=Path, default=None, metavar="PATH", help="save the trained model (.zip) to PATH")
    parser.add_argument("--eval-env", default=None, metavar="ID", help="also evaluate periodically on this env id")
    parser.add_argument(
        "--eval-freq",
        type=positive_int,
        default=10_000,
        metavar="F",
        help="evaluate every F env steps (default: %(default)s)",
    )
    parser.add_argument(
        "--eval-episodes", type=positive_int, default=100, metavar="E", help="episodes per evaluation (default: 100)"
    )
    parser.add_argument(
        "--hparams",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="other constructor arguments, e.g. learning_rate=0.003 \"policy_kwargs={'net_arch': []}\"",
    )
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2), help="SB3 verbosity (default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_model(args: argparse.Namespace, hparams: dict[str, Any] | None = None, entry: Any = None) -> Any:
    """The algorithm, configured from the options.

    ``n_episodes`` and ``n_envs`` are passed only when given: otherwise the algorithm's defaults apply (they know
    which envs have a native vector form).

    :param hparams: other constructor arguments, already checked (:func:`check_hparam`); default: ``args.hparams``
        (``key=value`` strings).
    :param entry: the ``--env`` entry of the ``--conf-file`` (:func:`zoo_hyperparams`), applied under ``hparams``.
    :raises CommandError: unknown env or device, bad --hparams, or arguments the algorithm rejects.
    """
    cls = algorithm_class(args.algo)
    if hparams is None:
        hparams = parse_hparams(args.hparams, cls)
    is_batched(args.env)  # an unknown id fails here, with the registry's suggestion
    check_device(args.device)
    if entry is not None:
        hparams = {**entry.kwargs, **hparams}  # --hparams win over the file
    policy = args.policy or (entry.policy if entry is not None else next(iter(cls.policy_aliases)))
    given = {"n_episodes": args.n_episodes, "n_envs": args.n_envs}
    hparams = {**hparams, **{key: value for key, value in given.items() if value is not None}}  # options win
    try:
        model = cls(
            policy,
            args.env,
            objective=args.objective,
            k=args.k,
            seed=args.seed,
            tensorboard_log=None if args.tensorboard is None else str(args.tensorboard),
            verbose=args.verbose,
            device=args.device,
            **hparams,
        )
    except (ValueError, TypeError, KeyError) as err:
        # Objective specs, k >= N, hparam values the algorithm refuses, policy names ...
        raise CommandError(f"{cls.__name__}: {err}") from err
    check_action_masks(model, args.env)
    return model


def check_action_masks(model: Any, env_id: str) -> None:
    """:raises CommandError: a MaskablePPO model on an env without ``action_masks()`` (checked before training)."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import is_masking_supported

    if isinstance(model, MaskablePPO) and not is_masking_supported(model.get_env()):
        raise CommandError(f"--algo maskable_ppo needs an env with an action_masks() method; {env_id} has none")


def eval_callback(args: argparse.Namespace, model: Any) -> Any:
    """The ``RiskEvalCallback`` of ``--eval-env``, or ``None``.

    :raises CommandError: unknown id, or an env whose spaces differ from the model's (checked now, not at the
        first evaluation).
    """
    if args.eval_env is None:
        return None
    from ordergrad_rl.agents import RiskEvalCallback
    from ordergrad_rl.envs import make_sb3_vec_env

    n_eval_envs = args.eval_episodes if is_batched(args.eval_env) else 1
    eval_env = make_sb3_vec_env(args.eval_env, n_eval_envs, seed=args.seed + EVAL_SEED_OFFSET)
    check_fits(model, eval_env, f"--eval-env {args.eval_env}")
    return RiskEvalCallback(
        eval_env,
        n_eval_episodes=args.eval_episodes,
        # The callback counts vectorized steps (n_envs env steps each).
        eval_freq=max(1, args.eval_freq // model.n_envs),
    )


def run(args: argparse.Namespace) -> int:
    """Build, train (with a progress bar), print the last risk profiles, save."""
    from ordergrad_rl.risk import risk_profile

    entry = zoo_hyperparams(args)
    timesteps = args.timesteps if args.timesteps is not None else getattr(entry, "n_timesteps", None)
    if timesteps is None:
        raise CommandError(f"give --timesteps: no n_timesteps for {args.env} in the --conf-file")
    model = build_model(args, entry=entry)
    callback = eval_callback(args, model)
    if entry is not None:
        applied = {**entry.kwargs, **({} if args.timesteps is not None else {"n_timesteps": timesteps})}
        listed = ", ".join(f"{key}={value}" for key, value in applied.items())
        print(f"hyperparameters of {args.env} from {entry.source}: {listed}")
    print(
        f"{type(model).__name__} on {args.env}: objective {model.objective}, {model.n_episodes} episodes per update "
        f"on {model.n_envs} env{'s' if model.n_envs > 1 else ''}, {timesteps} timesteps"
    )
    start = time.perf_counter()
    model.learn(timesteps, callback=callback, tb_log_name=args.run_name, progress_bar=not args.quiet)
    print(f"trained in {time.perf_counter() - start:.1f} s ({model.num_timesteps} timesteps)")

    columns = {"last training batch": risk_profile(model.rollout_buffer.episode_returns)}
    if callback is not None and callback.last_returns is not None:
        columns[f"last evaluation ({args.eval_env})"] = callback.last_profile
    keys = list(next(iter(columns.values())))
    print(markdown_table(["return statistic", *columns], [[key, *(c[key] for c in columns.values())] for key in keys]))
    if args.save is not None:
        model.save(args.save)
        print(f"model: {args.save}")
    if args.tensorboard is not None:
        print(f"TensorBoard run: {model.logger.dir}\nTensorBoard: tensorboard --logdir {args.tensorboard}")
    return 0
