"""``entropy_plateau``: the entropy bonus decays while the episode returns stop improving, and never comes back."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from ordergrad_rl.agents import EntropyPlateau, OrderGradPPO
from ordergrad_rl.agents.common.entropy_plateau import make_entropy_plateau, returns_improving


def exact_one_sided_p(new: np.ndarray, old: np.ndarray) -> float:
    """The share of the relabellings of the pooled values whose Mann-Whitney U of the ``new`` group is at least the
    observed one (no ties): the exact one-sided p-value, by enumeration."""
    pooled = np.concatenate([new, old])

    def u(group: np.ndarray, rest: np.ndarray) -> int:
        return int(sum((a > b) for a in group for b in rest))

    observed = u(new, old)
    hits = total = 0
    for chosen in itertools.combinations(range(pooled.size), new.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(chosen)] = True
        hits += u(pooled[mask], pooled[~mask]) >= observed
        total += 1
    return hits / total


@pytest.mark.parametrize("seed", range(5))
def test_the_test_is_the_exact_one_sided_mann_whitney_test(seed):
    rng = np.random.default_rng(seed)
    new, old = rng.normal(0.5, 1.0, 5), rng.normal(0.0, 1.0, 4)
    p = exact_one_sided_p(new, old)
    # Improving exactly where the enumerated p-value is below the level.
    for level in (0.05, 0.1, 0.3, 0.6):
        if not np.isclose(p, level):
            assert returns_improving([new[:2], new[2:]], [old], level) == (p < level)


def test_higher_returns_improve_and_tied_or_equal_ones_do_not():
    rng = np.random.default_rng(0)
    low = [rng.normal(0.0, 1.0, 32) for _ in range(3)]
    assert returns_improving([r + 2.0 for r in low], low, 0.1)
    assert not returns_improving(low, [r + 2.0 for r in low], 0.1)
    assert not returns_improving(low, low, 0.1)
    tied = [np.full(32, 500.0)] * 3
    assert not returns_improving(tied, tied, 0.1)  # CartPole at the limit: a plateau


def test_the_scale_falls_on_plateaus_by_the_rollouts_share_of_the_budget_and_never_rises():
    plateau = EntropyPlateau(window=2, p_value=0.1, decay_share=0.5)
    flat = np.arange(32.0)
    steps = 0
    for _ in range(3):  # the window fills: no test before 2 * window rollouts
        steps += 1_000
        assert plateau.update(flat, False, steps, 100_000) == 1.0
    steps += 1_000
    assert plateau.update(flat, False, steps, 100_000) == pytest.approx(1.0 - 1_000 / 50_000)
    steps += 3_000
    assert plateau.update(flat, False, steps, 100_000) == pytest.approx(1.0 - 4_000 / 50_000)
    # Improving returns hold the scale where it is: it does not come back.
    for shift in (100.0, 200.0):
        steps += 1_000
        assert plateau.update(flat + shift, False, steps, 100_000) == pytest.approx(1.0 - 4_000 / 50_000)
    for _ in range(60):
        steps += 1_000
        scale = plateau.update(flat + 200.0, False, steps, 100_000)
    assert scale == 0.0  # and not below


def test_a_blind_rollout_empties_the_window_and_keeps_the_scale():
    plateau = EntropyPlateau(window=1, p_value=0.1, decay_share=1.0)
    plateau.update(np.arange(8.0), False, 1_000, 10_000)
    assert plateau.update(np.arange(8.0), False, 2_000, 10_000) == pytest.approx(0.9)
    assert plateau.update(np.full(8, -500.0), True, 3_000, 10_000) == pytest.approx(0.9)
    # The test starts over: the first rollout after the blind one is not tested.
    assert plateau.update(np.arange(8.0), False, 4_000, 10_000) == pytest.approx(0.9)
    assert plateau.update(np.arange(8.0), False, 5_000, 10_000) == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"window": 0}, "window"), ({"window": 1.5}, "window"), ({"p_value": 1.0}, "p_value"),
     ({"p_value": 0.0}, "p_value"), ({"p_value": float("nan")}, "p_value"), ({"p_value": "0.1"}, "p_value"),
     ({"decay_share": 0.0}, "decay_share"), ({"decay_share": 1.5}, "decay_share"), ({"window": True}, "window")],
)  # fmt: skip
def test_bad_settings_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        EntropyPlateau(**kwargs)


def test_the_argument_takes_bools_none_or_settings_and_names_anything_else():
    assert make_entropy_plateau(False) is None and make_entropy_plateau(None) is None
    assert isinstance(make_entropy_plateau(True), EntropyPlateau)
    settings = EntropyPlateau(window=2)
    copied = make_entropy_plateau(settings)
    assert copied is not settings and copied.window == 2  # a run's state is its own
    assert repr(make_entropy_plateau({"p_value": 0.1})) == "EntropyPlateau(window=3, p_value=0.1, decay_share=0.1)"
    with pytest.raises(ValueError, match="unknown settings \\['patience'\\]"):
        make_entropy_plateau({"patience": 3})
    with pytest.raises(ValueError, match="entropy_plateau: p_value"):
        make_entropy_plateau({"p_value": 2.0})
    with pytest.raises(ValueError, match="entropy_plateau"):
        make_entropy_plateau("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entropy_plateau"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", entropy_plateau=1)  # type: ignore[arg-type]


def test_on_by_default_only_where_long_episodes_take_the_constant_bonus():
    long = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2")
    assert isinstance(long.entropy_plateau, EntropyPlateau)
    assert OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", ent_coef=0.01).entropy_plateau is None
    assert OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean").entropy_plateau is None
    short = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2")
    assert short.entropy_plateau is None  # its held-then-decayed bonus instead
    given = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", entropy_plateau=True)
    assert isinstance(given.entropy_plateau, EntropyPlateau)
    assert long.hparams()["entropy_plateau"] == "EntropyPlateau(window=3, p_value=0.5, decay_share=0.1)"


def fast_plateau_agent(**kwargs: Any) -> OrderGradPPO:
    """CartPole with a rule that tests every rollout against the one before and decays within a short budget."""
    rule = EntropyPlateau(window=1, p_value=1e-9, decay_share=0.05)  # p < 1e-9: every rollout a plateau
    return OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.25", n_episodes=8, n_epochs=1, seed=0,
                        entropy_plateau=rule, **kwargs)  # fmt: skip


def test_each_update_takes_the_coefficient_times_the_scale_and_logs_the_scale():
    model = fast_plateau_agent()
    seen: list[tuple[float, float, float, Any]] = []
    own = model._ent_coef_in_force

    def spy() -> float:
        coef, scale = own(), model.entropy_plateau.scale
        model.entropy_plateau.scale = 1.0  # the coefficient the rollout would take without the rule
        unscaled = own()
        model.entropy_plateau.scale = scale
        seen.append((coef, unscaled, scale))
        return coef

    model._ent_coef_in_force = spy  # type: ignore[method-assign]
    model.learn(2_000)
    scales = [scale for _, _, scale in seen]
    assert scales[0] == 1.0 and 0.0 <= scales[-1] < 1.0
    assert all(a >= b for a, b in itertools.pairwise(scales))
    assert any(unscaled == pytest.approx(0.01) for _, unscaled, _ in seen)
    for coef, unscaled, scale in seen:
        assert coef == pytest.approx(unscaled * scale)  # after the tie rules (a rollout partly tied at the best)


def test_the_scale_is_logged_in_the_row_of_its_update(tmp_path):
    """``train/entropy_scale`` was recorded with the rollout, and SB3 dumps the logs between a rollout and its
    update: each row paired the scale of one update with the ``train/ent_coef`` (and losses) of the update before
    (the row where the coefficient was 0.01 at scale 1 read scale 0). Both now come from the update."""
    import csv

    from stable_baselines3.common.logger import configure

    model = fast_plateau_agent()
    model.entropy_plateau.decay_share = 0.5  # several rows on the way down
    seen: list[tuple[float, float]] = []
    own = model._ent_coef_in_force

    def spy() -> float:
        seen.append((own(), model.entropy_plateau.scale))
        return seen[-1][0]

    model._ent_coef_in_force = spy  # type: ignore[method-assign]
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2_000, log_interval=1)
    rows = list(csv.DictReader((tmp_path / "progress.csv").read_text().splitlines()))
    # The row of update i is dumped after rollout i + 1 (SB3's order), the last update's never.
    assert rows[0]["train/ent_coef"] == rows[0]["train/entropy_scale"] == ""
    logged = np.array([[float(row["train/ent_coef"]), float(row["train/entropy_scale"])] for row in rows[1:]])
    np.testing.assert_allclose(logged, np.array(seen[: len(logged)]), rtol=1e-6)  # the CSV's digits
    assert len(set(logged[:, 1])) > 2


def test_save_load_and_resume_keep_the_scale_and_the_window(tmp_path):
    model = fast_plateau_agent()
    model.learn(1_500)
    scale, window = model.entropy_plateau.scale, len(model.entropy_plateau._returns)
    assert scale < 1.0 and window == 2
    model.save(tmp_path / "m")
    loaded = OrderGradPPO.load(tmp_path / "m", env=model.get_env())
    assert loaded.entropy_plateau.scale == scale
    assert loaded.entropy_plateau.decay_share == 0.05  # the save's own share, not this release's default
    assert [list(r) for r in loaded.entropy_plateau._returns] == [list(r) for r in model.entropy_plateau._returns]
    with pytest.warns(UserWarning, match="reset_num_timesteps=False"):  # the schedules' note on a finished call
        loaded.learn(1_000, reset_num_timesteps=False)
    assert loaded.entropy_plateau.scale <= scale


def test_a_save_from_before_the_rule_loads_without_it(tmp_path):
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=4, n_epochs=1, seed=0)
    del model.entropy_plateau  # as a save of an earlier release holds none
    model.save(tmp_path / "old")
    loaded = OrderGradPPO.load(tmp_path / "old")
    assert loaded.entropy_plateau is None
    assert loaded._ent_coef_in_force() == pytest.approx(0.01)
