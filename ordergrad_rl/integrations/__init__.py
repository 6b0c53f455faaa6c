"""Bridges to other libraries, each an optional extra imported only when used.

* :mod:`ordergrad_rl.integrations.trl`: OrderGrad advantages in TRL's ``GRPOTrainer`` (``pip install
  "ordergrad-rl[trl]"``).
"""
