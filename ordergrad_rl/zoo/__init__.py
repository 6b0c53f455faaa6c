"""The zoo: what ``ordergrad-rl train``, ``evaluate``, ``compare`` and the sweep share, without argparse (rl-zoo3's
layer under both its CLI and its search).

* :mod:`~ordergrad_rl.zoo.algorithms`: the algorithms by ``--algo`` name and the checks of their hyperparameters;
* :mod:`~ordergrad_rl.zoo.hyperparams`: the per-env hyperparameter files shipped with the package;
* :mod:`~ordergrad_rl.zoo.training`: :class:`~ordergrad_rl.zoo.training.TrainSettings` -> a model and its
  evaluation callback;
* :mod:`~ordergrad_rl.zoo.models`: recognizing, loading and evaluating saved models;
* :mod:`~ordergrad_rl.zoo.compare`: risk profiles of models and TensorBoard runs side by side.
"""
