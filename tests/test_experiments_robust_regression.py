"""``reproduce robust-regression``: data, exact test MSE, leak probabilities, and a short end-to-end run."""

import json

import numpy as np
import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.core import Objective
from ordergrad_rl.experiments import robust_regression as rr


def test_training_set_has_the_stated_contamination():
    data = rr.make_training_set(seed=3, n=20_000, n_outliers=2_400)
    assert data.outlier.sum() == 2_400
    clean_resid = data.y[~data.outlier] - (2.0 * data.x[~data.outlier] - 1.0)
    outlier_resid = data.y[data.outlier] - (-1.4 * data.x[data.outlier] + 4.2)
    assert abs(clean_resid.std() - 0.25) < 0.01 and abs(clean_resid.mean()) < 0.01
    assert abs(outlier_resid.std() - 0.45) < 0.02 and abs(outlier_resid.mean()) < 0.03
    assert data.x.min() >= -3.0 and data.x.max() <= 3.0


def test_test_set_moments_give_the_exact_mse():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-3, 3, 500), rng.normal(size=500)
    test = rr.CleanTestSet.from_arrays(x, y)
    for w, b in [(0.0, 0.0), (2.0, -1.0), (1.3, 0.7)]:
        assert test.mse(w, b) == pytest.approx(np.mean((w * x + b - y) ** 2), rel=1e-10)


def test_large_test_set_matches_the_population_mse():
    test = rr.CleanTestSet.sample(400_000)
    for w, b in [(2.0, -1.0), (1.6, -0.4)]:
        population = 3.0 * (w - 2.0) ** 2 + (b + 1.0) ** 2 + 0.25**2  # Var(x) = 3, E[x] = 0
        assert test.mse(w, b) == pytest.approx(population, rel=3e-3)


def test_leak_probability():
    # Mean weights the single sampled example: the leak is the contamination fraction itself.
    assert rr.outlier_leak_probability(Objective.parse("mean"), 2000, 240) == pytest.approx(0.12)
    # Median@9 and TrimM:4@9 both first weight rank 5 of 9.
    median9, trim9 = (Objective.parse(s, 9) for s in ("median", "TrimM:4"))
    assert rr.outlier_leak_probability(median9, 2000, 240) == rr.outlier_leak_probability(trim9, 2000, 240)
    leaks = [rr.outlier_leak_probability(Objective.parse("TrimM:4", k), 2000, 240) for k in (9, 16, 32, 48)]
    assert np.all(np.diff(leaks) > 0) and leaks[1] < 0.05 < leaks[2]
    # Monte Carlo: draw k-subsets of a training set with 240 outliers and count >= 5 of them.
    rng = np.random.default_rng(1)
    outliers = np.array([rng.choice(2000, 16, replace=False) for _ in range(20_000)]) < 240
    assert np.mean(outliers.sum(1) >= 5) == pytest.approx(leaks[1], abs=0.006)


def test_fit_line_follows_the_clean_line_only_for_robust_objectives():
    config = rr.Config(seeds=1)
    data = rr.make_training_set(0, config.n_train, config.n_outliers)
    objectives = config.objectives()
    w_med, b_med = rr.fit_line(data, objectives["median"], config, seed=0)[-1]
    w_mean, b_mean = rr.fit_line(data, objectives["mean"], config, seed=0)[-1]
    assert abs(w_med - 2.0) < 0.05 and abs(b_med + 1.0) < 0.05
    # The mean converges towards least squares on the contaminated data: w ~ 1.59, b ~ -0.38.
    assert abs(w_mean - 1.59) < 0.15 and abs(b_mean + 0.38) < 0.2


def test_cli_run_writes_table_figure_and_json(tmp_path, capsys):
    out_json = tmp_path / "rr.json"
    status = main(["reproduce", "robust-regression", "--seeds", "2", "--out", str(tmp_path), "--json", str(out_json),
                   "--quiet"])  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "0.0641" in printed and "median@15" in printed and "trim4@16" in printed
    assert (tmp_path / "robust_regression_fit.png").stat().st_size > 10_000
    results = json.loads(out_json.read_text())
    assert set(results["methods"]) == {"median", "trimmed", "mean"}
    assert all(results["checks"].values())
    for key in ("median", "trimmed"):
        assert 0.0625 * 0.98 < results["methods"][key]["clean_mse"] < 0.08
    assert results["methods"]["mean"]["clean_mse"] > 0.5
    assert len(results["methods"]["mean"]["per_seed"]["w"]) == 2
    assert results["paper"]["median"]["clean_mse"] == 0.0641
