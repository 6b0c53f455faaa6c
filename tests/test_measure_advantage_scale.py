"""scripts/measure_advantage_scale.py: the scale of the usage line's per-step advantages, per rollout."""

import numpy as np
import pytest
from conftest import load_script as load


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")  # 2,000 steps: a few updates
def test_quick_records_each_update_and_prints_the_bonus_it_makes(capsys):
    rows = load("measure_advantage_scale").main(["--quick"])["RiskyLavaGrid-v0"]
    # 256 lava episodes of at most 30 steps per update: at least one update in 2,000 steps.
    assert rows.ndim == 2 and rows.shape[1] == 2 and len(rows) >= 1
    assert np.all(np.isfinite(rows)) and np.all(rows >= 0.0)
    assert "RiskyLavaGrid-v0" in capsys.readouterr().out


def test_cliffwalking_is_the_slippery_outside_task():
    env = load("measure_advantage_scale").make_env("cliffwalking")
    assert env.spec.id == "CliffWalking-v1" and env.spec.max_episode_steps == 100
    assert env.spec.kwargs["is_slippery"] is True
