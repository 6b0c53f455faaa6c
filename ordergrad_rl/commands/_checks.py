"""Up-front checks of command-line arguments, shared by every ``ordergrad-rl`` command.

A command must fail *before* its work (training, evaluation episodes, a reproduction's grid), with a
:class:`~ordergrad_rl.commands._models.CommandError` that names the option, never with a traceback after the work.
:func:`check_output_arguments` runs for every command (``ordergrad_rl.cli.main`` calls it before ``run``); the other
checks are called by the commands that have the option.

Light imports only (torch is imported inside :func:`check_device`).
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path

from ordergrad_rl.commands._models import CommandError

#: Standard output options, checked before any command runs: ``dest -> (flag, kind)``. ``dir``: a directory that
#: exists or can be created; ``file``: a file path (not a directory) in such a directory; ``model``: a file that
#: SB3's ``model.save`` writes (``.zip`` appended when the path has no suffix).
OUTPUT_OPTIONS: dict[str, tuple[str, str]] = {
    "out": ("--out", "dir"),
    "tensorboard": ("--tensorboard", "dir"),
    "json": ("--json", "file"),
    "figure": ("--figure", "file"),
    "save": ("--save", "model"),
}


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


def check_file(path: str | Path, option: str) -> Path:
    """``path`` can be written as a file: it is not a directory, and its directory can be created and written.

    :raises CommandError: naming ``option``.
    """
    path = Path(path)
    if path.is_dir():
        raise CommandError(f"{option} {path} is a directory; give a file path such as {path / 'results.json'}")
    if path.exists() and not os.access(path, os.W_OK):
        raise CommandError(f"{option} {path}: the file is not writable")
    problem = _directory_problem(path.parent)
    if problem is not None:
        raise CommandError(f"{option} {path}: its directory {path.parent} {problem}")
    return path


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
        else:
            path = Path(value)
            check_file(path if path.suffix else path.with_name(path.name + ".zip"), flag)


def check_device(device: str) -> str:
    """``device`` if torch (or SB3, for ``"auto"``) accepts it as a device string.

    :raises CommandError: naming ``--device``.
    """
    if device == "auto":
        return device
    import torch as th

    try:
        th.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise CommandError(f"--device {device!r} is not a torch device (e.g. cpu, cuda, cuda:1, mps, auto)") from err
    return device


def require_extra(extra: str, modules: tuple[str, ...], command: str) -> None:
    """Import ``modules`` (those ``command`` needs from the ``extra``), or say which extra to install.

    Any exception counts as missing: a dependency that is installed but broken (e.g. rliable's ``arch`` under
    pandas 3) fails at import with a ``TypeError``; the extra pins working versions.

    :raises CommandError: with the ``pip install`` line.
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as err:
            raise CommandError(
                f"{command} needs the [{extra}] extra ({module} does not import: {err}); "
                f'install it with: pip install "ordergrad-rl[{extra}]"'
            ) from err
