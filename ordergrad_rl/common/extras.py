"""Optional extras (``pip install "ordergrad-rl[<extra>]"``): import them, or say which extra is missing."""

from __future__ import annotations

import importlib

from ordergrad_rl.common.errors import CommandError

#: The modules an extra brings that registered envs import (not the package itself).
ENV_EXTRA_MODULES: dict[str, tuple[str, ...]] = {"box2d": ("Box2D", "pygame"), "minatar": ("minatar",)}
#: Env modules (a prefix of the registered entry point) whose envs need an extra: Gymnasium's Box2D envs, and
#: MinAtar's (``ordergrad_rl.envs.minatar.register_minatar_envs``).
GYMNASIUM_ENV_EXTRAS: dict[str, str] = {"gymnasium.envs.box2d": "box2d", "minatar.gym": "minatar"}


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


def require_env_extra(entry_point: str, command: str) -> None:
    """Import what the Gymnasium env registered with ``entry_point`` (``"module:Class"``) needs from an extra (Box2D
    and pygame for ``LunarLander-v3``, MinAtar for ``MinAtar/Breakout-v1``), or say which extra to install; nothing
    for the other envs.

    :raises CommandError: with the ``pip install`` line.
    """
    for prefix, extra in GYMNASIUM_ENV_EXTRAS.items():
        if entry_point.startswith(prefix):
            require_extra(extra, ENV_EXTRA_MODULES[extra], command)
