"""The ``stacklevel`` that shows a warning at the user's line.

A warning about a user's call (a constructor's arguments, ``learn``'s budget, the env passed) belongs at the line
that made the call, as SB3, Gymnasium and NumPy show theirs. Its depth in the library varies (the agents' mixins,
SB3's ``learn`` calling back into ``collect_rollouts``, callbacks initialized inside ``learn``), so it is found by
walking the stack past the frames of ordergrad-rl and of the libraries it extends, as Python 3.12's
``warnings.warn(skip_file_prefixes=...)`` does.
"""

from __future__ import annotations

import os
import sys

#: The packages whose frames stand between a user's call and an ordergrad-rl warning: ordergrad-rl itself, and
#: SB3 / sb3-contrib, whose ``learn`` and callbacks call the agents' overrides back.
LIBRARY_PACKAGES = ("ordergrad_rl", "stable_baselines3", "sb3_contrib")


def _library_prefixes() -> tuple[str, ...]:
    """The folders of the :data:`LIBRARY_PACKAGES` imported (one not imported has no frame on the stack)."""
    prefixes = []
    for name in LIBRARY_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path is not None:
            prefixes.append(os.path.dirname(path) + os.sep)
    return tuple(prefixes)


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` made by the caller that points at the first frame outside
    :data:`LIBRARY_PACKAGES`: the user's line (``1`` is the caller itself, as for ``warnings.warn``).

    Use it for warnings about the user's call: ``warnings.warn(message, UserWarning, stacklevel=user_stacklevel())``.
    """
    prefixes = _library_prefixes()
    frame = sys._getframe(1)  # the function calling warnings.warn: stacklevel 1
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(prefixes):
        frame = frame.f_back
        level += 1
    return level
