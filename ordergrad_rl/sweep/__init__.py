"""Sweeps: many train + evaluate trials (envs x algorithms x objectives x seeds x hyperparameters) on Ray Tune.

* :mod:`~ordergrad_rl.sweep.grid`: the config file and ``--grid`` options -> the checked list of trials;
* :mod:`~ordergrad_rl.sweep.trial`: one trial (train, final evaluation, model, TensorBoard run, JSON row);
* :mod:`~ordergrad_rl.common.ray_tune`: Ray Tune (local instance or ``--address`` cluster, resume, Ctrl-C);
* :mod:`~ordergrad_rl.sweep.table`: the risk table over seeds and the compare figure.

Only :mod:`~ordergrad_rl.common.ray_tune` imports Ray (the ``[ray]`` extra). The command is ``ordergrad-rl sweep``.
"""
