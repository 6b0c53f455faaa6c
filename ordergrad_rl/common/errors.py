"""The one user-error type of the ``ordergrad-rl`` commands, and how it is printed.

Library code (envs, agents) raises ``ValueError``/``TypeError`` naming the argument; the application layer (the
zoo, the reproductions, the sweep, the CLI) turns what a user typed wrong into a :class:`CommandError`, which the
CLI prints like an argparse usage error instead of a traceback.
"""

from __future__ import annotations

import sys


class CommandError(Exception):
    """A user error a command reports as ``ordergrad-rl <command>: error: <message>`` (exit status 2)."""


def report_error(command: str, error: Exception) -> int:
    """Print ``error`` like argparse prints usage errors and return the exit status 2."""
    print(f"ordergrad-rl {command}: error: {error}", file=sys.stderr)
    return 2
