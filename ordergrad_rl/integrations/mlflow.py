"""MLflow as an output of SB3's logger, for the OrderGrad agents (SB3's "Logging to MLflow" recipe, with key names
MLflow takes).

SB3 logs to MLflow through a ``KVWriter`` of its logger (SB3's docs)::

    import sys

    from stable_baselines3.common.logger import HumanOutputFormat, Logger

    from ordergrad_rl import OrderGradPPO
    from ordergrad_rl.integrations.mlflow import MLflowOutputFormat

    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2")
    model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(sys.stdout), MLflowOutputFormat()]))
    model.learn(10_000)  # inside mlflow.start_run(), or MLflow starts a run itself

MLflow refuses a metric name with characters other than alphanumerics, ``_ - . /`` and spaces (``MlflowException:
Invalid metric name``; recent releases take colons too), and the agents' keys can hold others: ``eval_pass@k/k=5``
(:class:`~ordergrad_rl.agents.common.callbacks.PassAtKEvalCallback`'s), and the keys named after an env's ``info``
entries, its noise events or a channel objective's channels. :func:`mlflow_key` replaces each such character by ``_``,
so ``eval_pass@k/k=5`` is logged as ``eval_pass_k/k_5``. Needs ``pip install mlflow`` (imported when the writer is
made).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from stable_baselines3.common.logger import KVWriter

#: The characters MLflow refuses in a metric name: all but the alphanumerics, underscores, dashes, periods, spaces and
#: slashes every MLflow release allows (``mlflow.utils.validation``; recent ones allow colons too, older ones did not).
_REFUSED = re.compile(r"[^0-9A-Za-z_\-. /]")


def mlflow_key(key: str) -> str:
    """``key`` as MLflow takes a metric name: every character MLflow refuses replaced by ``_``
    (``"eval_pass@k/k=5"`` -> ``"eval_pass_k/k_5"``)."""
    return _REFUSED.sub("_", key)


class MLflowOutputFormat(KVWriter):
    """An output of SB3's ``Logger`` that logs its scalars to the active MLflow run (``mlflow.log_metrics``), at the
    logger's step (``num_timesteps``), under :func:`mlflow_key` names. Values that are not numbers (histograms,
    text, figures, hyperparameters) and keys excluded from ``"mlflow"`` are left out, as in SB3's recipe.

    :raises ImportError: MLflow is not installed.
    """

    def __init__(self) -> None:
        try:
            import mlflow
        except ImportError as error:
            raise ImportError("MLflowOutputFormat needs MLflow: pip install mlflow") from error
        self._mlflow = mlflow

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        """Log the numbers of ``key_values`` at ``step``.

        :raises ValueError: two keys that MLflow would get under one name (naming both).
        """
        metrics: dict[str, float] = {}
        sources: dict[str, str] = {}
        for key, value in key_values.items():
            excluded = key_excluded.get(key)
            if excluded is not None and "mlflow" in excluded:
                continue
            if isinstance(value, bool | str) or not isinstance(value, int | float | np.integer | np.floating):
                continue
            name = mlflow_key(key)
            if name in sources:
                raise ValueError(
                    f"the logger keys {sources[name]!r} and {key!r} are both {name!r} in MLflow, which refuses the "
                    "characters that tell them apart: rename one, or exclude it from 'mlflow'"
                )
            metrics[name], sources[name] = float(value), key
        if metrics:
            self._mlflow.log_metrics(metrics, step=step)

    def close(self) -> None:
        """Nothing to release: the MLflow run is the caller's (``mlflow.end_run``)."""
