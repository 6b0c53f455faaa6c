"""scripts/probe_nav_novelty_phase.py: novelty weights for a first phase of training on the point navigation."""

from __future__ import annotations

import json

import pytest
from conftest import load_script as load


def test_the_probe_trains_the_no_schedule_usage_line_with_the_novelty_phase():
    # The option itself (and that it trains what the probe's first version did) is tested in test_novelty_phase.py.
    model = load("probe_nav_novelty_phase").build(0, 0.15)
    assert model.novelty_phase == 0.15 and model.risk_schedule is None and str(model.objective) == "cvar0.2@16"


def test_quick_run_writes_scored_runs(tmp_path):
    path = tmp_path / "runs.json"
    runs = load("probe_nav_novelty_phase").main(["--quick", "--seeds", "0", "--json", str(path)])
    assert json.loads(path.read_text())["runs"] == json.loads(json.dumps(runs))
    assert runs[0]["greedy"]["cvar"] <= 7.0 + 1e-9 and runs[0]["timesteps"] >= 2_000 and runs[0]["curve"]
    with pytest.raises(SystemExit):
        load("probe_nav_novelty_phase").main(["--fraction", "1.5"])
