"""Optional extras (``pip install "ordergrad-rl[<extra>]"``): import them, or say which extra is missing."""

from __future__ import annotations

import importlib

from ordergrad_rl.common.errors import CommandError


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
