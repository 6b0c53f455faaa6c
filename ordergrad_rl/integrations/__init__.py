"""Bridges to other libraries, each an optional extra imported only when used.

* :mod:`ordergrad_rl.integrations.trl`: OrderGrad advantages in TRL's ``GRPOTrainer`` (``pip install
  "ordergrad-rl[trl]"``).
* :mod:`ordergrad_rl.integrations.mlflow`: SB3's logger to MLflow, under metric names MLflow takes (``pip install
  mlflow``).
"""
