"""Command-line options shared by the ``ordergrad-rl`` commands: argparse types, the standard output options, and
their up-front checks.

A command must fail *before* its work (training, evaluation episodes, a reproduction's grid), with a
:class:`~ordergrad_rl.common.errors.CommandError` that names the option, never with a traceback after the work.
:func:`check_output_arguments` runs for every command (``ordergrad_rl.cli.main`` calls it before ``run``); the other
checks are called by the commands that have the option.

Light imports only (torch is imported inside :func:`check_device`).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.ray_tune import require_ray

#: Standard output options, checked before any command runs: ``dest -> (flag, kind)``. ``dir``: a directory that
#: exists or can be created; ``file``: a file path (not a directory) in such a directory; ``figure``: such a file
#: whose extension matplotlib writes (none: ``.png``, see :func:`figure_file`); ``model``: a file that SB3's
#: ``model.save`` writes (``.zip`` appended when the path has no suffix, see :func:`model_file`).
OUTPUT_OPTIONS: dict[str, tuple[str, str]] = {
    "out": ("--out", "dir"),
    "tensorboard": ("--tensorboard", "dir"),
    "json": ("--json", "file"),
    "figure": ("--figure", "figure"),
    "save": ("--save", "model"),
}

#: A file name the directory error of each kind of file option suggests.
_EXAMPLE_NAMES = {"file": "results.json", "figure": "figure.png", "model": "model.zip"}

#: The format of a figure path without an extension (matplotlib's default ``savefig.format``).
DEFAULT_FIGURE_FORMAT = "png"


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _directory_problem(path: Path) -> str | None:
    """Why no file could be written in directory ``path`` (existing or to be created), or ``None``."""
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    base = _nearest_existing(path)
    if not base.is_dir():
        return f"cannot create a directory there, {base} is a file"
    if not os.access(base, os.W_OK | os.X_OK):
        return f"{base} is not writable"
    return None


def check_directory(path: str | Path, option: str) -> Path:
    """``path`` is a directory, or can be created as one, where files can be written (nothing is created here).

    :raises CommandError: naming ``option``.
    """
    path = Path(path)
    problem = _directory_problem(path)
    if problem is not None:
        raise CommandError(f"{option} {path}: {problem}")
    return path


def check_file(path: str | Path, option: str, example: str = _EXAMPLE_NAMES["file"]) -> Path:
    """``path`` can be written as a file: it is not a directory, and its directory can be created and written.

    :param example: a file name the error for a directory suggests inside it.
    :raises CommandError: naming ``option``.
    """
    path = Path(path)
    if path.is_dir():
        raise CommandError(f"{option} {path} is a directory; give a file path such as {path / example}")
    if path.exists() and not os.access(path, os.W_OK):
        raise CommandError(f"{option} {path}: the file is not writable")
    problem = _directory_problem(path.parent)
    if problem is not None:
        raise CommandError(f"{option} {path}: its directory {path.parent} {problem}")
    return path


def model_file(path: str | Path) -> Path:
    """The file SB3's ``model.save(path)`` writes: ``path``, with ``.zip`` appended when it has no suffix."""
    path = Path(path)
    return path if path.suffix else path.with_name(path.name + ".zip")


def figure_file(path: str | Path) -> Path:
    """The file a figure saved to ``path`` is written to: ``path``, with ``.png`` appended when it has no suffix
    (as matplotlib's ``savefig`` does, which would not say so)."""
    path = Path(path)
    return path if path.suffix else path.with_name(f"{path.name}.{DEFAULT_FIGURE_FORMAT}")


def check_figure(path: str | Path, option: str) -> Path:
    """:func:`check_file` of :func:`figure_file` ``(path)``, whose extension matplotlib must write (checked now,
    not after the work that makes the figure).

    :raises CommandError: naming ``option`` and the supported extensions.
    """
    path = Path(path)
    if path.is_dir():
        check_file(path, option, _EXAMPLE_NAMES["figure"])
    from matplotlib.figure import Figure  # here: only commands given --figure pay for matplotlib

    supported = Figure().canvas.get_supported_filetypes()
    extension = figure_file(path).suffix[1:].lower()
    if extension not in supported:
        raise CommandError(
            f"{option} {path}: matplotlib cannot write .{extension} figures; use one of "
            + ", ".join(f".{name}" for name in sorted(supported))
        )
    return check_file(figure_file(path), option, _EXAMPLE_NAMES["figure"])


def check_output_arguments(args: argparse.Namespace) -> None:
    """Check every standard output option of :data:`OUTPUT_OPTIONS` that ``args`` has (and is not ``None``).

    :raises CommandError: the first unusable one.
    """
    for dest, (flag, kind) in OUTPUT_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        if kind == "dir":
            check_directory(value, flag)
        elif kind == "file":
            check_file(value, flag)
        elif kind == "figure":
            check_figure(value, flag)
        else:
            # SB3 would write <dir>.zip beside a directory (or <dir>_2 for one with a suffix): refuse it instead,
            # unless it is the folder of the model saved there (rl-zoo3's layout: <name>.zip beside <name>/, where
            # train writes the VecNormalize statistics), which saving again at <name> replaces.
            if not model_file(value).is_file():
                check_file(value, flag, _EXAMPLE_NAMES["model"])
            check_file(model_file(value), flag, _EXAMPLE_NAMES["model"])


def parser_check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """:func:`check_output_arguments` for a script's own parser (``scripts/``): an unusable output option is
    ``parser``'s usage error (exit status 2), before the script's work.

    :raises SystemExit: from ``parser.error``.
    """
    try:
        check_output_arguments(args)
    except CommandError as err:
        parser.error(str(err))


def check_device(device: str, here: bool = True) -> str:
    """``device`` if torch (or SB3, for ``"auto"``) accepts it as a device string, and, ``here`` (where the model
    trains; a sweep's driver checks the string only), torch can use it: a CUDA device this machine has, any other
    type one torch can put a tensor on. A CUDA device on a machine without any gets a warning: SB3 trains on the
    CPU then, as with ``"auto"``.

    :raises CommandError: naming ``--device``: not a device string, a CUDA index past this machine's devices
        (torch failed inside the model's constructor: "invalid device ordinal"), or a device torch cannot use here
        (``mps`` elsewhere than on a Mac: a traceback of "PyTorch is not linked with support for mps devices").
    """
    if device == "auto":
        return device
    import warnings

    import torch as th

    try:
        parsed = th.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise CommandError(f"--device {device!r} is not a torch device (e.g. cpu, cuda, cuda:1, mps, auto)") from err
    if not here or parsed.type == "cpu":
        return device
    if parsed.type == "cuda":
        count = th.cuda.device_count() if th.cuda.is_available() else 0
        if not count:  # SB3's get_device: the CPU, without a word
            warnings.warn(f"--device {device}: torch finds no CUDA device here, so SB3 trains on the CPU", stacklevel=2)
        elif parsed.index is not None and parsed.index >= count:
            raise CommandError(
                f"--device {device}: this machine has {count} CUDA device(s), cuda:0 .. cuda:{count - 1}"
            )
        return device
    try:
        th.empty(1, device=parsed)
    except (RuntimeError, AssertionError) as err:
        reason = str(err).split(". ", 1)[0].rstrip(".")  # the first sentence: torch lists every backend after it
        raise CommandError(f"--device {device}: torch cannot use it here ({reason}); give cpu, cuda or auto") from err
    return device


def add_output_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """Add ``--out DIR`` (figures, default ``results/<name>``) and ``--json PATH`` (numbers) to ``parser``."""
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results") / name,
        metavar="DIR",
        help="directory for the figures (created if missing; default: %(default)s)",
    )
    parser.add_argument(
        "--json",
        type=file_path,
        default=None,
        metavar="PATH",
        help="also write the measured numbers to this JSON file",
    )


def add_address_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--address``: run the experiment's independent runs as Ray Tune trials (the ``[ray]`` extra)."""
    parser.add_argument(
        "--address",
        default=None,
        metavar="local|auto|HOST:PORT",
        help="run the training runs as Ray Tune trials: on a new local Ray instance (local), or on a Ray cluster "
        '(auto: the one `ray start` made here; HOST:PORT: its head node); needs pip install "ordergrad-rl[ray]". '
        "Default: local worker processes",
    )


def check_address_arguments(args: argparse.Namespace, default_workers: int | None = None) -> None:
    """Refuse ``--workers`` beside ``--address`` (:func:`add_address_argument`): the runs are then Ray Tune trials,
    as many at once as the Ray cluster has CPUs, and the local worker count would be ignored. With ``--address``,
    check that Ray Tune imports, before the command writes or trains anything.

    :param default_workers: the command's default ``--workers`` (any other value was given).
    :raises CommandError: both given, or ``--address`` without the ``[ray]`` extra.
    """
    if args.address is None:
        return
    if args.workers != default_workers:
        raise CommandError(
            f"--workers {args.workers} sizes the local worker processes, and --address {args.address} runs the runs "
            "as Ray Tune trials instead (as many at once as the Ray cluster has CPUs): drop --workers"
        )
    require_ray(f"--address {args.address}")


def refuse_option(parser: argparse.ArgumentParser, flag: str, reason: str) -> None:
    """Declare ``flag`` (an option other commands take, e.g. ``--seeds``) as one this command refuses with
    ``reason``: hidden from ``--help``, and a usage error that says why instead of "unrecognized arguments"."""

    class Refuse(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None) -> None:
            parser.error(f"{option_string} does not apply here: {reason}")

    parser.add_argument(flag, nargs="?", action=Refuse, help=argparse.SUPPRESS)


def add_quick_argument(parser: argparse.ArgumentParser, quick: Mapping[str, object]) -> None:
    """Declare ``--quick``: the command's smallest setting, each option of ``quick`` (``dest -> value``) set to its
    value (CI's smoke run of a benchmark, measurement or reproduction; the numbers mean nothing); the help lists
    them. :func:`apply_quick` applies it."""
    flags = {dest: "--" + dest.replace("_", "-") for dest in quick}
    settings = ", ".join(flags[dest] if value is True else f"{flags[dest]} {value}" for dest, value in quick.items())
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the smallest setting, a smoke run (CI; the numbers mean nothing): {settings}",
    )


def apply_quick(args: argparse.Namespace, quick: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """With ``args.quick`` (:func:`add_quick_argument`), set each option of ``quick`` to its value in ``args``.

    :param defaults: each option's default (``dest -> value``): one that differs was given on the command line.
    :raises CommandError: an option of ``quick`` given with ``--quick`` (``--quick`` would override it).
    """
    if not args.quick:
        return
    given = ["--" + dest.replace("_", "-") for dest in quick if getattr(args, dest) != defaults[dest]]
    if given:
        raise CommandError(f"--quick sets its own sizes (a smoke run); drop {' '.join(given)}, or drop --quick")
    for dest, value in quick.items():
        setattr(args, dest, value)


def parse_quick_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, quick: Mapping[str, object]
) -> argparse.Namespace:
    """Parse ``argv`` with a ``--quick`` flag added (:func:`add_quick_argument`, :func:`apply_quick`); a size given
    with it is a usage error."""
    add_quick_argument(parser, quick)
    args = parser.parse_args(argv)
    try:
        apply_quick(args, quick, {dest: parser.get_default(dest) for dest in quick})
    except CommandError as err:
        parser.error(str(err))
    return args


def _int_at_least(text: str, minimum: int) -> int:
    value = int(text)  # a ValueError: argparse's "invalid <type name> value"
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text}")
    return value


def file_path(text: str) -> Path:
    """argparse type of a file to write (``--save``, ``--json``, ``--figure``): refuses text that ends in a path
    separator, ``newdir/``, which ``Path`` would read as the file ``newdir`` (a save then wrote ``newdir.zip``)."""
    if text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text!r} ends in a separator, so it names a directory: give a file in it")
    return Path(text)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def frequency_int(text: str) -> int:
    """argparse type of ``--eval-freq`` and ``--save-freq``: an integer >= 1, or rl-zoo3's negative value for "none",
    returned as -1 (``train`` then evaluates or saves no checkpoint), so that rl-zoo3's command lines run as pasted."""
    value = int(text)
    if value < 0:
        return -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 (or rl-zoo3's -1: none), got {text}")
    return value


def sample_size_int(text: str) -> int:
    """argparse type of a number of repeats a standard deviation or standard error is computed from: an integer
    >= 2 (one repeat has none)."""
    return _int_at_least(text, 2)


def seed_int(text: str) -> int:
    """argparse type of ``--seed``: an integer >= 0 (NumPy and Gymnasium refuse negative seeds)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a seed >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (learning rates)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def closest_argument(key: str, accepted: list[str]) -> str:
    """`` (did you mean <argument>?)`` for the argument of ``accepted`` closest to ``key``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(key, accepted, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (a trial's GPUs)."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def key_value_items(items: list[str], option: str) -> Iterator[tuple[str, Any, str]]:
    """``["key=value", ...]`` (the items of ``option``) -> ``(key, ast.literal_eval(value), value)`` each, the raw
    text as the value where it is not a literal. rl-zoo3's ``key:value`` items (its ``--env-kwargs`` and
    ``--hyperparams``) read the same: the key ends at the first ``=`` or ``:``, which no argument name holds
    (``policy_kwargs:dict(net_arch=[64])`` is ``policy_kwargs``'s text).

    :raises CommandError: an item without ``=`` or ``:``, or without a key.
    """
    for item in items:
        cut = min((i for i in (item.find("="), item.find(":")) if i >= 0), default=-1)
        key, text = item[:cut].strip(), item[cut + 1 :]
        if cut < 0 or not key:
            raise CommandError(f"{option} expects key=value items (or rl-zoo3's key:value), got {item!r}")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        yield key, value, text


def parse_env_kwargs(items: list[str], option: str = "--env-kwargs") -> dict[str, Any]:
    """``["key=value", ...]`` (the items of ``option``) -> ``{key: value}`` (:func:`key_value_items`).

    :raises CommandError: an item without ``=``, or a key given twice.
    """
    out: dict[str, Any] = {}
    for key, value, _ in key_value_items(items, option):
        if key in out:
            raise CommandError(f"{option}: {key} is given twice")
        out[key] = value
    return out


def add_gym_packages_argument(parser: argparse.ArgumentParser) -> None:
    """Add rl-zoo3's ``--gym-packages MODULE ...`` (imported by :func:`import_gym_packages`)."""
    parser.add_argument(
        "--gym-packages",
        nargs="+",
        default=[],
        metavar="MODULE",
        help="modules to import first, whose import registers your Gymnasium envs (rl-zoo3's option; or give the "
        "env as module:EnvId-v0, which gym.make reads the same way)",
    )


def import_gym_packages(packages: Sequence[str]) -> None:
    """Import ``packages`` (rl-zoo3's ``--gym-packages``): a package of your own registers its envs on import.

    :raises CommandError: a module that does not import, named with the reason.
    """
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError as err:
            raise CommandError(f"--gym-packages: cannot import {package!r}: {err}") from err
