"""``reproduce weights``: the profiles have the shapes the paper describes, and the command writes its files."""

import json

import numpy as np
import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.experiments import weight_profiles as wt

FIGURES = {figure.name: figure for figure in wt.FIGURES}


def _profiles(name: str) -> dict[str, np.ndarray]:
    figure = FIGURES[name]
    return {s.label: wt.profile(figure.n, s) for s in figure.schemes}


def test_paper_settings():
    assert (FIGURES["quantiles"].n, {s.k for s in FIGURES["quantiles"].schemes}) == (400, {100})
    assert (FIGURES["remax"].n, [s.k for s in FIGURES["remax"].schemes]) == (8, list(range(1, 8)))
    assert (FIGURES["ranks"].n, len(FIGURES["ranks"].schemes)) == (100, 10)
    for name in ("tails", "robust"):
        assert (FIGURES[name].n, {s.k for s in FIGURES[name].schemes}) == (100, {20})


def test_location_profiles_are_distributions_and_gmd_is_a_signed_line():
    for figure in wt.FIGURES:
        for scheme in figure.schemes:
            w = wt.profile(figure.n, scheme)
            if scheme.spec == "GiniMeanDifference":
                assert w.sum() == pytest.approx(0.0, abs=1e-12)
                np.testing.assert_allclose(np.diff(w, 2), 0.0, atol=1e-12)  # linear in the rank
                assert w[0] < 0 < w[-1]
            else:
                assert w.sum() == pytest.approx(1.0, abs=1e-12) and w.min() >= -1e-15


def test_profile_shapes():
    remax = _profiles("remax")
    np.testing.assert_allclose(remax["ReMax, k=1 (mean)"], np.full(8, 1 / 8))
    tops = [remax[f"ReMax, k={k}"][-1] for k in range(2, 8)]
    assert tops == sorted(tops)  # larger k, more mass on the maximum
    ranks = _profiles("ranks")
    peaks = [int(np.argmax(ranks[f"Rank {r}"])) + 1 for r in range(1, 11)]
    assert peaks[0] == 100 and peaks[-1] == 1 and peaks == sorted(peaks, reverse=True)  # Rank 1 = max
    np.testing.assert_allclose(ranks["Rank 3"], ranks["Rank 8"][::-1], atol=1e-15)  # r-th largest mirrors r-th smallest
    quantiles = _profiles("quantiles")
    for q in (0.03, 0.1, 0.25, 0.5):
        assert abs(np.argmax(quantiles[f"Quantile:{q:g}"]) + 1 - q * 400) <= 0.03 * 400
    tails = _profiles("tails")
    np.testing.assert_allclose(tails["TopM:4"], tails["BotM:4"][::-1], atol=1e-15)
    np.testing.assert_allclose(tails["TopBot:4"], (tails["TopM:4"] + tails["BotM:4"]) / 2, atol=1e-15)
    topm = _profiles("topm")
    np.testing.assert_allclose(topm["TopM:10, k=10 (mean)"], np.full(100, 0.01), atol=1e-15)


def test_median_of_k_minus_1_equals_trimmed_middle_pair_of_k():
    # Order-statistic recurrence: E[(X_(h:2h) + X_(h+1:2h)) / 2] = E[X_(h:2h-1)], so median@9 == trim4@10.
    np.testing.assert_allclose(
        wt.profile(256, wt.Scheme("", "median", 9)), wt.profile(256, wt.Scheme("", "TrimM:4", 10)), atol=1e-14
    )


def test_summary():
    mean = wt.profile_summary(np.full(10, 0.1), np.ones(1))
    assert mean == {"total": 1.0, "peak_rank": 1, "effective_n": pytest.approx(10)}
    single = wt.profile_summary(np.eye(5)[3], np.array([0.0, 1.0]))
    assert single == {"total": 1.0, "peak_rank": 4, "effective_n": 1.0}
    signed = wt.profile_summary(np.array([-0.5, 0.0, 0.5]), np.array([-1.0, 1.0]))
    assert signed == {"total": 0.0, "peak_rank": 1, "effective_n": pytest.approx(2.0)}  # two ranks carry weight


def test_totals_are_exact_and_gmd_row_has_no_negative_zero_or_nan(tmp_path, capsys):
    """Issue 9, defect 8: the GMD row printed ``-0`` (float dust of sum(W alpha)) and ``nan`` (the effective sample
    size of a signed profile)."""
    results = wt.run_experiment()
    for figure in wt.FIGURES:
        for scheme in figure.schemes:
            summary = results[figure.name]["schemes"][scheme.label]
            # sum_m (W alpha)_m = sum_j alpha_j: every order statistic's weights over the ranks sum to 1.
            assert summary["weights"].sum() == pytest.approx(summary["total"], abs=1e-12)
            assert summary["total"] in (0.0, 1.0) and np.copysign(1.0, summary["total"]) == 1.0
            assert 1.0 - 1e-12 <= summary["effective_n"] <= figure.n * (1 + 1e-12)
    gmd = results["robust"]["schemes"]["GiniMeanDifference"]
    assert gmd["total"] == 0.0 and gmd["effective_n"] == pytest.approx(75.0, rel=0.01)  # |w| ~ uniform: n * 3/4
    assert main(["reproduce", "weights", "--out", str(tmp_path)]) == 0
    cells = {
        cell.strip()
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("|")
        for cell in line.split("|")
    }
    assert not cells & {"-0", "nan", "-0.0"}


def test_weights_refuses_seeds_and_says_why(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "weights", "--seeds", "2"])
    assert exc.value.code == 2
    assert "--seeds does not apply here: the weight profiles are exact" in capsys.readouterr().err


def test_cli_run_writes_every_figure(tmp_path, capsys):
    out_json = tmp_path / "w.json"
    assert main(["reproduce", "weights", "--out", str(tmp_path), "--json", str(out_json)]) == 0
    assert "GiniMeanDifference" in capsys.readouterr().out
    for name in [*FIGURES, "overview"]:
        assert (tmp_path / f"weights_{name}.png").stat().st_size > 10_000
    results = json.loads(out_json.read_text())
    assert len(results["figures"]["quantiles"]["schemes"]["Quantile:0.5"]["weights"]) == 400
