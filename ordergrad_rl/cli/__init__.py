"""The ``ordergrad-rl`` command.

    ordergrad-rl --help
    ordergrad-rl reproduce --help
    ordergrad-rl reproduce robust-regression --seeds 10 --out results/robust_regression --json rr.json

Adding a command
----------------
A command is a module with

* a docstring (shown as the command's ``--help`` description),
* ``add_arguments(parser: argparse.ArgumentParser) -> None`` declaring its options, and
* ``run(args: argparse.Namespace) -> int | None`` doing the work (``None`` means exit status 0). It checks its
  arguments before any long work and raises :class:`~ordergrad_rl.common.errors.CommandError` for a user
  error: ``main`` prints it like a usage error (exit status 2). Output options named like the standard ones
  (``--out DIR``, ``--json PATH``, ``--tensorboard DIR``, ``--save PATH``, ``--figure PATH``; see
  :data:`ordergrad_rl.common.options.OUTPUT_OPTIONS`) are checked by ``main`` before ``run``.

Register it with one :class:`Command` entry (module path and one-line help) in :data:`COMMANDS`
(``ordergrad-rl <name>``) or :data:`REPRODUCTIONS` (``ordergrad-rl reproduce <name>``). A module is imported
only when its command runs or shows its help, so commands do not slow down or break each other.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from ordergrad_rl.common.errors import CommandError, report_error
from ordergrad_rl.common.options import check_output_arguments, closest_argument
from ordergrad_rl.version import __version__


@dataclass(frozen=True)
class Command:
    """A command implemented by ``module`` (imported only when the command is parsed or its help shown).

    ``one_thread``: for a command whose runs each train with one torch thread whatever ``--threads`` says, why
    (and what runs several at once); ``--threads`` then refuses values other than 1 with it.
    """

    module: str
    help: str
    one_thread: str | None = None


@dataclass(frozen=True)
class Group:
    """A command with sub-commands (``reproduce <name>``)."""

    help: str
    description: str
    commands: dict[str, Command] = field(default_factory=dict)


#: Why the runs of a reproduction that trains them as jobs use one torch thread each.
_ONE_THREAD_JOBS = "its runs train with one torch thread each (one core per run): --workers N trains N at once"

#: ``ordergrad-rl reproduce <name>``: the paper's experiments, one module each.
REPRODUCTIONS: dict[str, Command] = {
    "tailrisk": Command(
        "ordergrad_rl.experiments.tailrisk",
        "REINFORCE vs OrderGrad-CVaR on the high-yield tail-risk portfolio (App. portfolio example)",
        _ONE_THREAD_JOBS,
    ),
    "peers": Command(
        "ordergrad_rl.experiments.peers",
        "REINFORCE vs GCVaR vs OrderGrad-CVaR (and QR-DQN-CVaR) on the portfolio and the lava grid (issue 13)",
        _ONE_THREAD_JOBS,
    ),
    "benchmarks": Command(
        "ordergrad_rl.experiments.benchmarks",
        "known-answer risk benchmarks: CVaR agents vs the exact CVaR optimum and vs PPO, at equal env steps",
        _ONE_THREAD_JOBS,
    ),
    "robust-regression": Command(
        "ordergrad_rl.experiments.robust_regression",
        "Mean vs Median vs TrimM:4 line fits with 12%% corrupted labels (App. robust regression)",
    ),
    "diagnostics": Command(
        "ordergrad_rl.experiments.diagnostics",
        "runtime, LR/RP gradient bias and variance, Top-M@K SNR (Sec. 4)",
    ),
    "weights": Command(
        "ordergrad_rl.experiments.weight_profiles",
        "rank-weight profiles W alpha of the objective families (App. weight schemes)",
    ),
    "reasoning": Command(
        "ordergrad_rl.experiments.reasoning",
        "GRPO vs MaxPO vs Top-M@K and a length reward on TargetSum, pass@k (App. LLM experiments, in miniature)",
        "its runs train with one torch thread each, one after another",
    ),
    "reasoning-lm": Command(
        "ordergrad_rl.experiments.reasoning_lm",
        "the reasoning comparison with a small transformer trained through TRL's GRPOTrainer (needs the [trl] extra)",
        _ONE_THREAD_JOBS,
    ),
    "minatar": Command(
        "ordergrad_rl.experiments.minatar",
        "PPO-V vs PPO-Q vs OrderGrad PPO Top-M@K on MinAtar (App. RL experiments; needs the [minatar] extra)",
        _ONE_THREAD_JOBS,
    ),
}

#: ``ordergrad-rl <name>``: a :class:`Command` or a :class:`Group`.
COMMANDS: dict[str, Command | Group] = {
    "train": Command(
        "ordergrad_rl.cli.train",
        "train an OrderGrad agent (ppo, reinforce, recurrent_ppo, maskable_ppo) on an objective",
    ),
    "evaluate": Command("ordergrad_rl.cli.evaluate", "risk profile of a saved model's episode returns"),
    "compare": Command(
        "ordergrad_rl.cli.compare", "side-by-side risk table and return distributions of models and runs"
    ),
    "dashboard": Command(
        "ordergrad_rl.cli.dashboard", "TensorBoard dashboards of many runs: a mean over seeds per method, HParams"
    ),
    "sweep": Command(
        "ordergrad_rl.cli.sweep",
        "a grid of train + evaluate trials on Ray Tune (local or --address cluster), with a risk table over seeds",
        "a trial trains with one torch thread per CPU of the trial: --cpus-per-trial C sets them",
    ),
    "reproduce": Group(
        help="reproduce one of the paper's experiments with the toolkit",
        description="Reproduce one of the OrderGrad paper's experiments: prints the table next to the paper's "
        "numbers and writes the figures to --out (and the numbers to --json).",
        commands=REPRODUCTIONS,
    ),
}


class _LazyParser(argparse.ArgumentParser):
    """A sub-command parser that imports its module and declares its options only when it is used.

    So ``ordergrad-rl reproduce weights`` never imports the other commands' modules (or their dependencies), and
    one broken command cannot break the others.
    """

    def __init__(self, *args, module: str | None = None, one_thread: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._module = module
        self._one_thread = one_thread

    def _load(self) -> None:
        if self._module is None:
            return
        module: ModuleType = importlib.import_module(self._module)
        self._module = None
        if module.__doc__:
            self.description = module.__doc__.strip()
        module.add_arguments(self)
        add_threads_argument(self, self._one_thread)
        self.set_defaults(_run=module.run, _prog=self.prog, _one_thread=self._one_thread, _parser=self)

    def parse_known_args(self, args=None, namespace=None):
        self._load()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._load()
        return super().format_help()


#: Torch threads of a command unless ``--threads`` says otherwise: the policies here are small MLPs, which gain
#: nothing from more threads, and torch's threads busy-wait for cores another job holds (SB3 PPO on CartPole-v1,
#: 4096 steps, this 2-core machine under load: 9.0 s with 1 thread, 26.8 s with torch's default 2;
#: scripts/bench_threads.py).
DEFAULT_THREADS = 1


def add_threads_argument(parser: argparse.ArgumentParser, one_thread: str | None = None) -> None:
    """Add ``--threads N``, also rl-zoo3's ``--num-threads N`` (every command has it; ``one_thread``: see
    :class:`Command`)."""
    text = (
        "torch threads of this process (default: %(default)s, fastest for small policies and on a busy machine; 0, "
        "or rl-zoo3's -1: torch's default, one per core). Results of a seed can differ with the thread count"
    )
    parser.add_argument(
        "--threads",
        "--num-threads",
        type=int,
        default=DEFAULT_THREADS,
        metavar="N",
        help=text if one_thread is None else f"only {DEFAULT_THREADS}: {one_thread}",
    )


def set_threads(threads: int, one_thread: str | None = None) -> None:
    """Use ``threads`` torch threads (0, or rl-zoo3's ``--num-threads -1``: torch's default), in this process and in
    the processes it starts.

    :param one_thread: the reason, for a command whose runs use one thread whatever ``threads`` is, to refuse
        other values (see :class:`Command`).
    """
    if threads < -1:
        raise CommandError(
            f"--threads must be >= 0 (or -1, as rl-zoo3's --num-threads: torch's default), got {threads}"
        )
    threads = max(threads, 0)
    if one_thread is not None and threads != DEFAULT_THREADS:
        raise CommandError(f"--threads {threads} would change nothing: {one_thread}")
    if threads == 0:
        return
    os.environ["OMP_NUM_THREADS"] = str(threads)  # read by torch when it is first imported, here or in workers
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


#: rl-zoo3's options (of its ``train`` and ``enjoy``) that the commands do not take, with what to give instead.
RL_ZOO_OPTIONS: dict[str, str] = {
    **dict.fromkeys(
        ("-f", "--log-folder", "--folder"),
        "rl-zoo3's log folder: train --save PATH saves the model (PATH.zip, with PATH/args.yml and "
        "PATH/vecnormalize.pkl beside it, rl-zoo3's layout) and --tensorboard DIR its run; evaluate and compare take "
        "a model's file, one of an rl-zoo3 run folder too",
    ),
    **dict.fromkeys(
        ("--exp-id", "--load-best", "--load-checkpoint", "--load-last-checkpoint"),
        "give evaluate the model's file (logs/ppo/CartPole-v1_1/best_model.zip, rl_model_<steps>_steps.zip)",
    ),
    **dict.fromkeys(("-P", "--progress"), "the progress bar is on by default (--quiet hides it)"),
    **dict.fromkeys(
        (
            "-optimize",
            "--optimize-hyperparameters",
            "--n-trials",
            "--max-total-trials",
            "--n-jobs",
            "--sampler",
            "--pruner",
            "--n-startup-trials",
            "--n-evaluations",
            "--storage",
            "--study-name",
            "--optimization-log-path",
            "--no-optim-plots",
        ),
        "ordergrad-rl sweep runs a grid of trials (rl-zoo3's Optuna search)",
    ),  # fmt: skip
    **dict.fromkeys(("-uuid", "--uuid"), "--run-name NAME names the TensorBoard run"),
    **dict.fromkeys(
        ("--track", "--wandb-project-name", "--wandb-entity", "-tags", "--wandb-tags"),
        "Weights & Biases is not built in: train --tensorboard DIR logs the run, which wandb.init(sync_tensorboard="
        "True) uploads",
    ),
    "--n-eval-envs": "train evaluates its --eval-env on up to 8 envs, as evaluate does, or all --eval-episodes at "
    "once on an id that runs as one NumPy batch",
    "--log-interval": "every update logs its risk profile (risk/*) with --tensorboard DIR",
    "--save-replay-buffer": "the agents are on-policy: they keep no replay buffer",
    "--truncate-last-trajectory": "the agents are on-policy: -i goes on with whole episodes, no replay buffer",
    "--stochastic": "evaluate samples its actions unless --deterministic",
    "--no-render": "evaluate does not render: it runs the episodes and prints their risk profile",
    "--norm-reward": "evaluate reports the env's own rewards (a saved VecNormalize normalizes the observations only)",
    "--reward-log": "evaluate --json PATH writes each episode's return and length",
    "--custom-objects": "evaluate loads any saved model for inference (its schedules replaced)",
    **dict.fromkeys(("-n", "--n-timesteps"), "evaluate and compare run --episodes E episodes (rl-zoo3's enjoy: steps)"),
    "--n-envs": "evaluate and compare choose their envs (all --episodes at once on an id that runs as one NumPy batch, "
    "else up to 8); train takes --n-envs",
}


#: rl-zoo3's commands (``python -m rl_zoo3.<name>``) that ``ordergrad-rl`` has under another name, with what to run.
RL_ZOO_COMMANDS: dict[str, str] = {
    "enjoy": "rl-zoo3's enjoy runs a saved model's episodes: ordergrad-rl evaluate MODEL (--episodes N, "
    "--deterministic; on the env of the args.yml beside it, or --env ID)",
}


def unknown_command(name: str) -> str:
    """argparse's message for a command ``ordergrad-rl`` does not have, with the command meant: rl-zoo3's under its
    name here (:data:`RL_ZOO_COMMANDS`), else the closest one."""
    note = f". {name}: {RL_ZOO_COMMANDS[name]}" if name in RL_ZOO_COMMANDS else closest_argument(name, list(COMMANDS))
    return f"argument <command>: invalid choice: {name!r} (choose from {', '.join(COMMANDS)}){note}"


def unrecognized_arguments(arguments: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's message for ``arguments`` that ``parser`` does not take, with what to give instead of each option:
    for one of rl-zoo3's (:data:`RL_ZOO_OPTIONS`) its equivalent, else the closest option of the command."""
    # argparse keeps a parser's options in this list (it has no public accessor); those hidden from --help are options
    # other commands take, which this one refuses with its reason (refuse_option).
    actions = [action for action in parser._actions if action.help is not argparse.SUPPRESS]
    options = [option for action in actions for option in action.option_strings if option.startswith("--")]
    notes = []
    for argument in arguments:
        flag = argument.partition("=")[0]
        if not flag.startswith("-") or flag.lstrip("-").replace(".", "", 1).isdigit():  # a value, or a number
            continue
        hint = closest_argument(flag, options)
        if flag in RL_ZOO_OPTIONS:
            notes.append(f"{flag}: {RL_ZOO_OPTIONS[flag]}")
        elif hint:
            notes.append(f"{flag}{hint}")
    return f"unrecognized arguments: {' '.join(arguments)}" + "".join(f". {note}" for note in notes)


def _add_command(subparsers: argparse._SubParsersAction, name: str, command: Command) -> None:
    subparsers.add_parser(
        name,
        help=command.help,
        module=command.module,
        one_thread=command.one_thread,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``ordergrad-rl`` parser; command modules are imported lazily (see :class:`_LazyParser`)."""
    parser = argparse.ArgumentParser(
        prog="ordergrad-rl",
        description="Risk-sensitive RL with OrderGrad: order-statistic objectives (CVaR, quantiles, trimmed "
        "means, Top-M@K, best-of-K) and the paper's experiments.",
        epilog="Run 'ordergrad-rl <command> --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(_run=None, _parser=parser)
    subparsers = parser.add_subparsers(title="commands", metavar="<command>", parser_class=_LazyParser)
    for name, entry in COMMANDS.items():
        if isinstance(entry, Group):
            group = subparsers.add_parser(name, help=entry.help, description=entry.description)
            group.set_defaults(_run=None, _parser=group)
            children = group.add_subparsers(title=f"{name} commands", metavar="<name>", parser_class=_LazyParser)
            for child, command in entry.commands.items():
                _add_command(children, child, command)
        else:
            _add_command(subparsers, name, entry)
    return parser


def add_working_directory() -> None:
    """Put the current directory on ``sys.path``, last, where it is not already (``python -m ordergrad_rl`` puts it
    first): the installed ``ordergrad-rl`` script has only its own directory there, and the user's modules beside
    them, which rl-zoo3 users import from the folder they run ``python -m rl_zoo3.train`` in (``--env
    my_module:MyEnv-v0``, ``--gym-packages my_module``, an entry's ``env_wrapper: my_module.MyWrapper``), would not
    import. Last, so that a file of theirs never hides an installed package of the same name."""
    cwd = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == cwd for entry in sys.path):
        sys.path.append(cwd)


def command_warning(prog: str) -> Callable[..., str]:
    """``warnings.formatwarning`` for a command: a warning printed as its errors are, ``ordergrad-rl train: warning:
    <message>`` (a category other than ``UserWarning`` named), not Python's ``<file>:<line>: UserWarning: <message>``
    followed by the line of the console script that called ``main`` (``sys.exit(main())``), which told a command's
    user nothing."""

    def formatwarning(
        message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
    ) -> str:
        kind = "warning" if category is UserWarning else f"warning ({category.__name__})"
        return f"{prog}: {kind}: {message}\n"

    return formatwarning


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ordergrad-rl`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    The modules of the current directory import, as with ``python -m ordergrad_rl`` (:func:`add_working_directory`).

    A group given without a sub-command (``ordergrad-rl`` or ``ordergrad-rl reproduce``) prints its help and
    returns 2, like a usage error. The standard output options (``--out``, ``--json``, ``--tensorboard``,
    ``--save``, ``--figure``) are checked before the command runs, and a ``CommandError`` raised by a command is
    printed like a usage error (status 2) instead of a traceback, and a warning as ``<command>: warning: <message>``
    (:func:`command_warning`); Ctrl-C returns 130, also without one. A reader that
    closes the pipe early (``ordergrad-rl compare ... | head``) ends the command quietly with status 141, the shell's
    status of a command that ``SIGPIPE`` ended (128 + 13), as ``ls | head``'s ``ls`` under ``set -o pipefail``.
    """
    add_working_directory()
    parser = build_parser()
    first = next(iter(sys.argv[1:] if argv is None else argv), "-")
    if not first.startswith("-") and first not in COMMANDS:  # argparse's message, with the command meant
        parser.error(unknown_command(first))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's usage and name, and what to give instead, not the top parser's bare message
        command_parser = getattr(args, "_parser", parser)
        command_parser.error(unrecognized_arguments(unknown, command_parser))
    if args._run is None:
        args._parser.print_help(sys.stderr)
        return 2

    command = args._prog.removeprefix(f"{parser.prog} ")
    formatwarning = warnings.formatwarning
    warnings.formatwarning = command_warning(args._prog)  # restored below: main may run inside a user's program
    try:
        set_threads(getattr(args, "threads", DEFAULT_THREADS), getattr(args, "_one_thread", None))
        check_output_arguments(args)
        status = args._run(args)
        sys.stdout.flush()  # a reader gone raises here, not in Python's flush at exit
    except CommandError as err:
        return report_error(command, err)
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, without a traceback
        print(f"{args._prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout closed it: as the Python docs' note on SIGPIPE recommends, stdout
        # goes to devnull (Python's flush at exit would fail again), without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        warnings.formatwarning = formatwarning
    return 0 if status is None else int(status)
