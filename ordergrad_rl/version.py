"""The package version: one place, read by ``pyproject.toml`` (setuptools' dynamic version), ``ordergrad_rl``,
the CLI's ``--version`` and the base model's cache key. Imports nothing."""

__version__ = "0.2.0"
