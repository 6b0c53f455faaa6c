"""The ``ordergrad-rl train``, ``evaluate`` and ``compare`` commands (one module each, see :mod:`ordergrad_rl.cli`).

:mod:`ordergrad_rl.commands._models` holds what they share: recognizing and loading saved models, and running
evaluation episodes into a risk profile.
"""
