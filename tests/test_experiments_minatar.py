"""`reproduce minatar`: the method list (baselines with and without the entropy bonus, Top-M@K from --m), --methods,
the per-run cache key, and aggregates, figures and JSON for any subset of the methods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.common.jobs import RunCache
from ordergrad_rl.experiments import minatar as exp
from ordergrad_rl.version import __version__

pytest.importorskip("minatar", reason="MinAtar is not installed (pip install 'ordergrad-rl[minatar]')")
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

ALL = ["ppo_v", "ppo_v_ent", "ppo_q", "ppo_q_ent", "top1@10", "top5@10", "top9@10"]


def _rliable() -> None:
    try:
        import rliable.library  # noqa: F401
    except Exception as error:  # arch 7 (rliable's bootstrap) fails to import under pandas 3: a TypeError
        pytest.skip(f"rliable unusable here: {error!r}")


def _no_work(*args, **kwargs):
    raise AssertionError("the command started its work")


# ---------------------------------------------------------------------------------------------------------- methods
def test_methods_are_the_baselines_then_top_m_in_table_order() -> None:
    assert exp.Config().methods() == ALL and exp.Config().top_ms() == [1, 5, 9]
    chosen = exp.Config(method_subset=("top9@10", "ppo_q_ent", "ppo_v"))
    assert chosen.methods() == ["ppo_v", "ppo_q_ent", "top9@10"] and chosen.top_ms() == [9]
    assert exp.Config(method_subset=("ppo_v_ent", "ppo_q_ent")).top_ms() == []
    assert exp.Config(m=(3,), k=4).all_methods()[-1] == "top3@4"
    assert [exp.method_label(m) for m in ALL[:4]] == ["PPO-V", "PPO-V + ent 0.01", "PPO-Q", "PPO-Q + ent 0.01"]
    assert exp.method_label("ppo_q_ent", exp.Config(ent_coef_baselines=0.05)) == "PPO-Q + ent 0.05"


@pytest.mark.parametrize(
    ("subset", "message"),
    [
        (("ppo_x",), r"unknown methods \['ppo_x'\]"),
        (("top7@10",), r"unknown methods \['top7@10'\] \(the Top-M@K methods are top<M>@10 for the M values \[1, 5"),
        (("top9@8", "ppo_v"), r"unknown methods \['top9@8'\]"),
        ((), "no methods chosen"),
    ],
)
def test_unknown_methods_are_refused_with_the_valid_names(subset: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        exp.Config(method_subset=subset)
    assert str(error.value).endswith("valid methods: " + ", ".join(ALL))


def test_cli_refuses_unknown_methods_before_training(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(exp, "run_experiment", _no_work)
    assert main(["reproduce", "minatar", "--m", "9", "--methods", "top5@10", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl reproduce minatar: error: --methods: unknown methods ['top5@10']")
    assert err.rstrip().endswith("valid methods: ppo_v, ppo_v_ent, ppo_q, ppo_q_ent, top9@10")


@pytest.mark.parametrize(("method", "coef"), [("ppo_v", 0.0), ("ppo_v_ent", 0.01), ("ppo_q", 0.0), ("ppo_q_ent", 0.01)])
def test_the_entropy_coefficient_reaches_the_model(method: str, coef: float) -> None:
    from stable_baselines3 import PPO

    from ordergrad_rl.agents import OrderGradQCriticPPO
    from ordergrad_rl.envs.minatar import make_minatar_vec_env

    config = exp.Config(n_envs=2, n_steps=16, batch_size=16)
    model = exp.build_model(method, make_minatar_vec_env("breakout", 2, seed=0), config, seed=0)
    assert model.ent_coef == coef
    # The + ent variant is the same algorithm as its baseline: only the entropy coefficient differs.
    assert type(model) is (PPO if method.startswith("ppo_v") else OrderGradQCriticPPO)
    if method.startswith("ppo_q"):
        assert str(model.objective) == "mean" and model.gae_lambda == 0.95
    other = exp.Config(n_envs=2, n_steps=16, batch_size=16, ent_coef=0.002, ent_coef_baselines=0.05)
    model = exp.build_model(method, make_minatar_vec_env("breakout", 2, seed=0), other, seed=0)
    assert model.ent_coef == (0.05 if method.endswith("_ent") else 0.002)


def test_ordergrad_keeps_entropy_coefficient_zero() -> None:
    from ordergrad_rl.envs.minatar import make_minatar_vec_env

    model = exp.build_model("top9@10", make_minatar_vec_env("breakout", 2, seed=0), exp.Config(), seed=0)
    assert model.ent_coef == 0.0 and str(model.objective) == "top9@10"


# ---------------------------------------------------------------------------------------------------------- cache
def test_run_key_separates_the_entropy_bonus_and_keeps_older_runs_valid() -> None:
    config = exp.Config()
    assert config.run_key("ppo_v")["ent_coef"] == 0.0 and config.run_key("ppo_v_ent")["ent_coef"] == 0.01
    assert config.run_key("ppo_q") != config.run_key("ppo_q_ent")
    # The fields of a run's key before the + ent methods existed: runs cached then are reused, not retrained.
    assert set(config.run_key("top9@10")) == {
        "steps", "k", "n_envs", "n_steps", "batch_size", "n_epochs", "learning_rate", "gamma", "gae_lambda_ppo",
        "gae_lambda_ordergrad", "clip_range", "max_grad_norm", "vf_coef", "ent_coef", "eval_episodes",
    }  # fmt: skip
    # Neither the subset run nor the bonus of the other methods changes a run's key; the bonus changes its own.
    other = exp.Config(method_subset=("ppo_v",), ent_coef_baselines=0.05)
    assert other.run_key("ppo_v") == config.run_key("ppo_v")
    assert other.run_key("ppo_v_ent") != config.run_key("ppo_v_ent")


def test_a_cached_run_is_reused_only_for_its_own_key(tmp_path: Path) -> None:
    config = exp.Config()
    cache = RunCache(tmp_path)
    cache.path("run").write_text(json.dumps({"method": "ppo_q", "config": config.run_key("ppo_q")}))
    assert cache.load("run", config.run_key("ppo_q")) is not None
    assert cache.load("run", config.run_key("ppo_q_ent")) is None  # an ent-0 run never stands in for an ent run
    assert cache.load("run", exp.Config(ent_coef=0.01).run_key("ppo_q")) is None
    assert exp._run_id("breakout", "ppo_q_ent", 0) != exp._run_id("breakout", "ppo_q", 0)


def test_a_run_stored_by_other_code_is_trained_again(tmp_path: Path, monkeypatch, capsys) -> None:
    """A stored run was reused whatever release (and so training code) had stored it, as long as its settings matched:
    one stored by another version or run format, or before they were recorded, is trained again, named on stderr."""
    config = exp.Config(games=("breakout",), seeds=1, method_subset=("ppo_v",))
    trained = []

    def train_run(game, method, seed, config, tensorboard_log=None):
        trained.append(method)
        return {"method": method, "config": config.run_key(method)}

    monkeypatch.setattr(exp, "train_run", train_run)
    cache, name = RunCache(tmp_path / "runs"), exp._run_id("breakout", "ppo_v", 0)
    stored = {"method": "ppo_v", "config": config.run_key("ppo_v")}
    for record, code in (
        (stored, "a release that did not record its version"),
        (stored | {"format": exp.RUN_FORMAT, "version": "0.0.1"}, f"ordergrad-rl 0.0.1 (run format {exp.RUN_FORMAT})"),
        (stored | {"format": exp.RUN_FORMAT + 1, "version": __version__}, f"(run format {exp.RUN_FORMAT + 1})"),
    ):
        cache.save(name, record)
        (run,) = exp.run_experiment(config, tmp_path, quiet=True)
        assert trained == ["ppo_v"] and run["version"] == __version__ and run["format"] == exp.RUN_FORMAT
        assert f"{name} by " in (err := capsys.readouterr().err) and err.rstrip().endswith(code)
        trained.clear()
    assert exp.run_experiment(config, tmp_path, quiet=True) == [cache.record(name)] and not trained  # this code's
    assert capsys.readouterr().err == ""


def test_a_run_trained_again_replaces_its_tensorboard_run(tmp_path: Path) -> None:
    """A run retrained (its cache invalid, or interrupted before its JSON) logged seed0_2 beside the earlier seed0_1."""
    config = exp.Config(steps=256, n_envs=2, batch_size=64, eval_episodes=2)
    for _ in range(2):
        exp.train_run("breakout", "ppo_v", 0, config, str(tmp_path))
    assert [path.name for path in (tmp_path / "breakout_ppo_v").iterdir()] == ["seed0_1"]


def test_each_seed_evaluates_on_its_own_env_seeds(monkeypatch) -> None:
    """The final evaluation of seed ``s`` runs on envs in ``s``'s own seed block: before, envs seeded ``10_000 + s +
    i`` made adjacent seeds share all but one of their evaluation envs, so their scores were not independent."""
    config = exp.Config(games=("breakout",), steps=64, n_envs=2, n_steps=32, batch_size=32, eval_episodes=2)
    real, seen = exp.make_minatar_vec_env, []

    def recording(game: str, n_envs: int, seed: int):
        seen.append(range(seed, seed + n_envs))
        return real(game, n_envs, seed=seed)

    monkeypatch.setattr(exp, "make_minatar_vec_env", recording)
    runs = [exp.train_run("breakout", "ppo_v", seed, config) for seed in (1, 2)]
    (train_1, eval_1), (train_2, eval_2) = seen[:2], seen[2:]
    assert [run["eval_seed"] for run in runs] == [eval_1.start, eval_2.start] == [exp.eval_seed(1), exp.eval_seed(2)]
    assert set(train_1) & set(train_2)  # training envs follow SB3's seed + i, as before
    # At the default 16 evaluation envs, the blocks of 20 seeds are disjoint from each other and from training.
    blocks = [set(range(exp.eval_seed(seed), exp.eval_seed(seed) + 16)) for seed in range(20)]
    assert len(set().union(*blocks)) == 20 * 16 and not set().union(*blocks) & set(range(20 + 16))
    assert exp.eval_seed(0) == 10_000  # seed 0 keeps the envs of the README's tables


# ---------------------------------------------------------------------------------------------------------- subsets
def _fake_run(game: str, method: str, seed: int, score: float) -> dict:
    return dict(
        game=game,
        method=method,
        seed=seed,
        steps=1000,
        train_seconds=1.0,
        steps_per_second=1000.0,
        eval_returns=[score, score],
        episodes=[[100 * (i + 1), score * i / 9] for i in range(10)],
        entropy=[[250, 1.0], [500, 0.8], [1000, 0.5]],
    )


def test_aggregate_and_figures(tmp_path) -> None:
    _rliable()
    config = exp.Config(games=("breakout", "asterix"), steps=1000, seeds=2, m=(1, 9), curve_bins=5, reps=100)
    scores = {"ppo_v": 0.1, "ppo_v_ent": 0.15, "ppo_q": 0.2, "ppo_q_ent": 0.25, "top1@10": 0.3, "top9@10": 0.4}
    runs = [
        _fake_run(g, m, s, s_ * exp.MAX_SCORES[g]) for g in config.games for m, s_ in scores.items() for s in range(2)
    ]
    summary = exp.aggregate(runs, config)
    for method, score in scores.items():
        agg = summary["methods"][method]
        assert agg["median"] == pytest.approx(score) and agg["iqm"] == pytest.approx(score)
        # The last of 5 bins holds the episodes ending at steps 900 and 1000 (returns 8/9 and 9/9 of the score).
        assert agg["iqm_curve"][-1] == pytest.approx(score * 17 / 18)
    assert summary["per_game"]["asterix"]["top9@10"]["entropy_curve"][-1] == pytest.approx(0.5)
    for plot, name in [(exp.plot_aggregate, "a.png"), (exp.plot_effect_of_m, "m.png"), (exp.plot_entropy, "e.png")]:
        assert plot(summary, config, tmp_path / name).stat().st_size > 1000
    assert "OrderGrad Top-9@10" in exp.format_table(summary, config)


def test_one_seed_prints_no_iqm_interval() -> None:
    # rliable's stratified bootstrap over one seed per game resamples the same runs: the table printed [0.400, 0.400]
    # under "IQM 95% CI", an interval of width 0 for a number measured once (--quick's and --seeds 1's tables).
    _rliable()
    for seeds, cell in ((1, "-"), (2, "[0.400, 0.400]")):
        config = exp.Config(games=("breakout",), steps=1000, seeds=seeds, m=(9,), curve_bins=5, reps=50)
        runs = [
            _fake_run("breakout", m, s, 0.4 * exp.MAX_SCORES["breakout"])
            for m in config.methods()
            for s in range(seeds)
        ]
        row = exp.format_table(exp.aggregate(runs, config), config).splitlines()[2]
        assert [c.strip() for c in row.strip("|").split("|")][3] == cell


@pytest.mark.parametrize("subset", [("ppo_v_ent", "ppo_q_ent"), ("top9@10",), ("ppo_q", "top1@10", "top9@10")])
def test_aggregate_table_and_figures_for_a_subset(subset: tuple[str, ...], tmp_path: Path) -> None:
    _rliable()
    config = exp.Config(
        games=("breakout", "asterix"), steps=1000, seeds=2, m=(1, 9), curve_bins=5, reps=100, method_subset=subset
    )
    runs = [
        _fake_run(g, m, s, 0.1 * (i + 1) * exp.MAX_SCORES[g])
        for g in config.games
        for i, m in enumerate(subset)
        for s in range(2)
    ]
    summary = exp.aggregate(runs, config)
    assert list(summary["methods"]) == config.methods()
    assert all(list(summary["per_game"][g]) == config.methods() for g in config.games)
    for m in config.methods():
        assert summary["methods"][m]["iqm"] == pytest.approx(0.1 * (subset.index(m) + 1))
    assert exp.plot_aggregate(summary, config, tmp_path / "a.png").stat().st_size > 1000
    assert exp.plot_entropy(summary, config, tmp_path / "e.png").stat().st_size > 1000
    if config.top_ms():
        assert exp.plot_effect_of_m(summary, config, tmp_path / "m.png").stat().st_size > 1000
    table = exp.format_table(summary, config)
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == [
        exp.method_label(m, config) for m in config.methods()
    ]


def test_tiny_end_to_end_with_a_subset_writes_exactly_those_methods(tmp_path: Path, monkeypatch, capsys) -> None:
    _rliable()
    out, payload = tmp_path / "out", tmp_path / "minatar.json"
    argv = ["reproduce", "minatar", "--games", "breakout", "--quick"]  # 256 steps, 1 seed, 2 envs, batch 64, 2 episodes
    argv += ["--out", str(out), "--json", str(payload), "--quiet"]
    argv += ["--methods", "ppo_q_ent", "ppo_v_ent"]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert "256 steps x 1 seeds per method, 2 envs x 128 steps per rollout, minibatch 64" in stdout
    assert "entropy coefficient 0 (+ ent baselines: 0.01)" in stdout
    assert "the effect-of-M figure is skipped" in stdout and not (out / "minatar_effect_of_m.png").exists()
    assert (out / "minatar_aggregate.png").exists() and (out / "minatar_entropy.png").exists()
    result = json.loads(payload.read_text())
    assert list(result["methods"]) == ["ppo_v_ent", "ppo_q_ent"]
    assert list(result["per_game"]["breakout"]) == ["ppo_v_ent", "ppo_q_ent"]
    assert result["methods"]["ppo_q_ent"]["label"] == "PPO-Q + ent 0.01"
    assert result["config"]["method_subset"] == ["ppo_q_ent", "ppo_v_ent"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == [
        "breakout_ppo_q_ent_s0.json",
        "breakout_ppo_v_ent_s0.json",
    ]
    assert json.loads((out / "runs" / "breakout_ppo_q_ent_s0.json").read_text())["config"]["ent_coef"] == 0.01
    # A second invocation reuses the cached runs (nothing trains) and gives the same numbers.
    monkeypatch.setattr(exp, "train_run", _no_work)
    assert main([*argv[:-2], "ppo_v_ent"]) == 0
    again = json.loads(payload.read_text())
    assert list(again["methods"]) == ["ppo_v_ent"]
    assert again["per_game"]["breakout"]["ppo_v_ent"] == result["per_game"]["breakout"]["ppo_v_ent"]


def test_quick_refuses_the_sizes_it_sets(tmp_path: Path, capsys) -> None:
    argv = ["reproduce", "minatar", "--quick", "--steps", "1000", "--seeds", "3", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "--quick sets its own sizes (a smoke run); drop --steps --seeds, or drop --quick" in capsys.readouterr().err
