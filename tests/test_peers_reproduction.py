"""``reproduce peers``: the evaluation against the lava grid's exact numbers, the statistics, and ``--quick`` end to
end."""

import json
import math

import numpy as np
import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.core.gcvar import gcvar_weights
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


@pytest.mark.parametrize(
    ("table", "mean", "cvar", "lava"),
    [(SHORTCUT_POLICY, 3.793, -4.446, 0.0732), (SAFE_POLICY, 3.207, 0.951, 0.0036)],
    ids=["shortcut", "safe"],
)
def test_lava_outcomes_of_a_deterministic_policy_are_the_documented_ones(table, mean, cvar, lava):
    """The env docstring's exact table (its P(lava) column counts late goals below -10 too: 0.0037 for safe)."""
    out = peers.lava_outcomes(np.eye(4)[table])
    assert out["goal"] + out["lava"] + out["timeout"] == pytest.approx(1.0, abs=1e-12)
    assert (out["mean"], out["cvar"], out["lava"]) == pytest.approx((mean, cvar, lava), abs=6e-4)


def test_lava_outcomes_of_a_stochastic_policy_match_monte_carlo():
    """A random stochastic policy, sampled through the registered env (with its 30-step limit)."""
    import gymnasium as gym

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=15)
    exact = peers.lava_outcomes(probs)
    env = gym.make(peers.LAVA_ENV)
    n, returns, outcomes = 3000, [], {"goal": 0, "lava": 0, "timeout": 0}
    for episode in range(n):
        state, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            state, reward, terminated, truncated, _ = env.step(int(rng.choice(4, p=probs[state])))
            total, done = total + reward, terminated or truncated
        outcomes["timeout" if not terminated else "goal" if reward > 0 else "lava"] += 1
        returns.append(total)
    returns = np.array(returns)
    for name, count in outcomes.items():
        p = exact[name]
        assert abs(count / n - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-3, name
    assert abs(returns.mean() - exact["mean"]) < 4 * returns.std() / math.sqrt(n)
    assert abs(peers.cvar(returns) - exact["cvar"]) < 1.0  # the mean of 600 tail samples: a loose band


def test_lava_outcomes_refuse_a_wrong_shape():
    with pytest.raises(ValueError, match=r"shape \(15, 4\)"):
        peers.lava_outcomes(np.full((4, 15), 0.25))
    with pytest.raises(ValueError, match="probability distribution"):
        peers.lava_outcomes(np.full((15, 4), 0.3))


def test_variance_grid_over_n_and_a_trained_policy(tmp_path, capsys):
    path = tmp_path / "variance.json"
    argv = ["reproduce", "peers", "--quick", "--quiet", "--variance-only", "--out", str(tmp_path), "--json", str(path)]
    assert main([*argv, "--variance-n", "8", "16", "--variance-trained", "2"]) == 0
    results = json.loads(path.read_text())
    config = peers.Config.quick()
    assert results["envs"] == {} and not (tmp_path / "peers_curves.png").exists()  # no training runs
    grid = results["variance_grid"]
    assert set(grid["policies"]) == {"initial", "trained"} and grid["trained_updates"] == 2
    assert 0.0 <= grid["trained_deployment"]["profitable"] <= 1.0
    for by_n in grid["policies"].values():
        assert set(by_n) == {"8", "16"}
        for n_text, result in by_n.items():
            n = int(n_text)
            assert (result["n_episodes"], result["k"], result["batches"]) == (n, n // 2, config.variance_batches)
            assert result["gcvar"]["nonzero"] == pytest.approx((math.ceil(0.2 * n) - 1) / n)
            for name in ("gcvar", "ordergrad_cvar"):
                assert result[name]["relative_variance"] > 0
                assert np.linalg.norm(result[name]["mean_direction"]) == pytest.approx(1.0)
                assert -1.0 <= result[name]["cos_to_reference"] <= 1.0 + 1e-12
        # The reference is built from the largest N: both estimators there point along it.
        assert by_n["16"]["gcvar"]["cos_to_reference"] > 0.5
    # The trained policy is another policy: its mean estimates differ from the initial one's on the same batches.
    initial, trained = grid["policies"]["initial"]["16"], grid["policies"]["trained"]["16"]
    assert initial["ordergrad_cvar"]["mean_norm"] != pytest.approx(trained["ordergrad_cvar"]["mean_norm"], rel=1e-6)
    out = capsys.readouterr().out
    assert "trained: after 2 OrderGrad-CVaR updates" in out and "cos(mean, reference)" in out
    assert "noise share of norm(mean)^2" in out


@pytest.mark.parametrize("n", ["1", "5"])
def test_variance_n_below_six_is_refused(n, tmp_path, capsys):
    """At N <= 5 every GCVaR_0.2 weight is 0 (its tail is the VaR alone): N = 3 ended, after the measurement, in a
    ZeroDivisionError traceback while printing the grid."""
    argv = ["reproduce", "peers", "--quick", "--quiet", "--variance-only", "--out", str(tmp_path)]
    assert main([*argv, "--variance-n", n, "32"]) == 2
    assert "--variance-n needs N >= 6" in capsys.readouterr().err
    assert not np.any(gcvar_weights(np.arange(5.0), peers.ALPHA)) and np.any(gcvar_weights(np.arange(6.0), peers.ALPHA))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--variance-only", "--seeds", "3", "--workers", "2"], "trains no runs, which --seeds --workers would set"),
        (["--variance-only", "--envs", "lava"], "--variance-only trains no runs, which --envs would set"),
        (["--envs", "lava", "--variance-n", "32"], "--variance-n and --variance-trained measure the gradient variance"),
        (["--envs", "lava", "--variance-trained", "2"], "add tailrisk to --envs, or give --variance-only"),
    ],
)
def test_options_that_would_be_ignored_are_refused(options, message, tmp_path, capsys, monkeypatch):
    """``--variance-only --seeds 3`` measured the variance and dropped the seeds, and ``--envs lava --variance-n 32``
    trained on the lava grid without measuring anything: both without a word. Now refused before any work."""
    monkeypatch.setattr(peers, "run_experiment", lambda *args, **kwargs: pytest.fail("ran"))
    assert main(["reproduce", "peers", "--quiet", "--out", str(tmp_path), *options]) == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_unbiased_relative_variance_removes_the_noise_of_the_mean():
    # tr Cov = 10 * 1^2; the mean of 20 batches carries 10 / 20 = 0.5 of noise in its squared norm.
    result = {"batches": 20, "gcvar": {"mean_norm": 1.0, "relative_variance": 10.0}}
    assert peers.unbiased_relative_variance(result, "gcvar") == pytest.approx((20.0, 0.5))
    result["gcvar"]["relative_variance"] = 25.0  # noise 1.25 > 1: the mean is not resolved
    relative, noise = peers.unbiased_relative_variance(result, "gcvar")
    assert relative is None and noise == pytest.approx(1.25)
    # Monte Carlo: g = e + noise of total variance 4 in 2 dimensions, so |E g|^2 = 1, from 50 batches at a time.
    # The denominator tr Cov / ratio is unbiased for |E g|^2; the plain |mean|^2 is 1 + 4 / 50 on average.
    rng = np.random.default_rng(0)
    plain, unbiased = [], []
    for _ in range(2000):
        g = np.array([1.0, 0.0]) + rng.normal(scale=math.sqrt(2.0), size=(50, 2))
        mean = g.mean(axis=0)
        trace = np.trace(np.cov(g.T))
        stats = {"mean_norm": np.linalg.norm(mean), "relative_variance": trace / (mean @ mean)}
        plain.append(mean @ mean)
        unbiased.append(trace / peers.unbiased_relative_variance({"batches": 50, "m": stats}, "m")[0])
    se = np.std(plain) / math.sqrt(len(plain))
    assert abs(np.mean(unbiased) - 1.0) < 3 * se
    assert np.mean(plain) - 1.0 > 5 * se
