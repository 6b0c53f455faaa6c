"""The OrderGrad estimator mathematics (no RL in here). Placeholder while the core is written."""


def _todo(*args, **kwargs):
    raise NotImplementedError("ordergrad_rl.core is being written")


Objective = OrderStatTransform = lstat_value = lstat_advantage = _todo
known_lstat_value = known_lstat_advantage = known_lstat_inclusion = known_orderstats = _todo
