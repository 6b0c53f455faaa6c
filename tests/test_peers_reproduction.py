"""``reproduce peers``: the evaluation against the lava grid's exact numbers, the statistics, and ``--quick`` end to
end."""

import json
import math

import numpy as np
import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.envs.lava_grid import SAFE_POLICY, SHORTCUT_POLICY
from ordergrad_rl.experiments import peers


class TablePolicy:
    """A stand-in for a model: a fixed action per lava-grid cell."""

    def __init__(self, table):
        self.table = np.asarray(table)

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        assert deterministic
        return self.table[np.asarray(obs, dtype=int)], None


@pytest.mark.parametrize(
    ("table", "mean", "cvar", "lava"),
    [(SHORTCUT_POLICY, 3.793, -4.446, 0.0732), (SAFE_POLICY, 3.207, 0.951, 0.0037)],
    ids=["shortcut", "safe"],
)
def test_lava_evaluation_matches_the_exact_return_distribution(table, mean, cvar, lava):
    """The env's documented exact mean, CVaR_0.2 and P(lava) (dynamic programming, tests/test_envs_showcase.py)."""
    n = 8000
    returns = peers.evaluation_returns("lava", TablePolicy(table), n=n, seed=0)["returns"]
    assert returns.shape == (n,)
    assert abs(returns.mean() - mean) < 4 * returns.std() / math.sqrt(n)
    lava_share = np.mean(returns < -10)  # lava costs 15, so every lava episode returns <= -16; no other does
    lava_se = math.sqrt(lava * (1 - lava) / n)
    assert abs(lava_share - lava) < 4 * lava_se
    # The empirical CVaR moves by about 100 per unit of P(lava) (lava episodes ~ -18 against ~ +3 of the rest of the
    # tail, over 0.2): 4 standard errors of that.
    assert abs(peers.cvar(returns) - cvar) < 4 * 100 * lava_se + 0.05


def test_cvar_is_the_mean_of_the_lowest_fifth():
    returns = np.array([5.0, -3.0, 2.0, 0.0, 7.0, 1.0, -1.0, 4.0, 3.0, 6.0])
    assert peers.cvar(returns) == pytest.approx(-2.0)  # the lowest 2 of 10: -3 and -1


def test_bootstrap_ci_brackets_the_mean_over_seeds():
    values = np.array([[1.0, 2.0], [2.0, 2.5], [4.0, 3.0], [3.0, 2.0], [5.0, 2.5]])
    low, high = peers.bootstrap_ci(values)
    means = values.mean(axis=0)
    assert np.all(low < means) and np.all(means < high)
    assert np.all(low >= values.min(axis=0)) and np.all(high <= values.max(axis=0))
    one = peers.bootstrap_ci(values[:1])
    np.testing.assert_array_equal(one[0], values[0])
    np.testing.assert_array_equal(one[1], values[0])


def test_quick_runs_end_to_end_and_writes_every_method(tmp_path, capsys):
    path = tmp_path / "peers.json"
    assert main(["reproduce", "peers", "--quick", "--quiet", "--out", str(tmp_path), "--json", str(path)]) == 0
    results = json.loads(path.read_text())
    config = peers.Config.quick()
    assert set(results["envs"]) == {"tailrisk", "lava"}
    for env, methods in peers.ENV_METHODS.items():
        summary = results["envs"][env]
        assert set(methods) <= set(summary)
        for method in methods:
            curve = summary[method]["curve"]
            # The initial policy, then `evaluations` more points up to the training budget.
            assert curve["steps"] == np.linspace(0, summary["steps"], config.evaluations + 1).round().tolist()
            for stat in ("mean", "cvar"):
                per_seed = np.array(curve[stat]["per_seed"])
                assert per_seed.shape == (config.seeds, config.evaluations + 1) and np.isfinite(per_seed).all()
                assert np.all(np.array(curve[stat]["low"]) <= np.array(curve[stat]["high"]))
            final = summary[method]["final"]
            assert final["cvar"]["mean"] <= final["mean"]["mean"]
            assert len(final["mean"]["per_seed"]) == config.seeds
    assert "QR-DQN-CVaR_0.2" in capsys.readouterr().out
    variance = results["gradient_variance"]
    assert variance["batches"] == config.variance_batches
    # GCVaR weights only the ceil(alpha N) tail episodes, and the one at VaR_hat gets 0 (continuous returns).
    n = config.n_episodes
    assert variance["gcvar"]["nonzero"] == pytest.approx((math.ceil(0.2 * n) - 1) / n)
    assert variance["ordergrad_cvar"]["nonzero"] > 0.9
    assert -1.0 <= variance["cos_between_means"] <= 1.0
    assert (tmp_path / "peers_curves.png").stat().st_size > 0
