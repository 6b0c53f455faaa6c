"""Objective spec strings: every row of DESIGN.md's table, aliases, @K, numeric alpha, canonical str, errors."""

import numpy as np
import pytest

from ordergrad_rl import Objective
from ordergrad_rl.core import resolve_objective, valid_names

# spec, k, expected low-to-high alpha
ROWS = [
    ("mean", 7, [1.0]),
    ("cvar0.2", 10, [0.5, 0.5] + [0.0] * 8),
    ("cvar0.25", 10, [1 / 3] * 3 + [0.0] * 7),  # ceil(2.5) = 3
    ("cvar0.7", 10, [1 / 7] * 7 + [0.0] * 3),  # 0.7 * 10 is 7.000000000000001 in binary: still 7 ranks
    ("lowertail0.2", 10, [0.5, 0.5] + [0.0] * 8),
    ("uppertail0.2", 10, [0.0] * 8 + [0.5, 0.5]),
    ("quantile0.1", 10, [0.5, 0.5] + [0.0] * 8),  # Hazen pos = 0.1 * 10 + 0.5 = 1.5: half on ranks 1 and 2
    ("quantile0.5", 4, [0.0, 0.5, 0.5, 0.0]),
    ("quantile0.0", 4, [1.0, 0.0, 0.0, 0.0]),  # clamped to rank 1
    ("quantile1.0", 4, [0.0, 0.0, 0.0, 1.0]),  # clamped to rank k
    ("var0.3", 5, [0.0, 1.0, 0.0, 0.0, 0.0]),  # pos = 2.0
    ("median", 5, [0, 0, 1, 0, 0]),
    ("median", 4, [0, 0.5, 0.5, 0]),
    ("top2", 4, [0, 0, 0.5, 0.5]),
    ("bot2", 4, [0.5, 0.5, 0, 0]),
    ("max", 4, [0, 0, 0, 1]),
    ("min", 4, [1, 0, 0, 0]),
    ("rank1", 4, [0, 0, 0, 1]),
    ("rank3", 4, [0, 1, 0, 0]),
    ("trim1", 5, [0, 1 / 3, 1 / 3, 1 / 3, 0]),
    ("winsor1", 5, [0, 2 / 5, 1 / 5, 2 / 5, 0]),
    ("topbot1", 4, [0.5, 0, 0, 0.5]),
    ("gmd", 3, [-2 / 3, 0, 2 / 3]),
]


@pytest.mark.parametrize("spec,k,alpha", ROWS)
def test_table_rows(spec, k, alpha):
    obj = Objective.parse(spec, k=k)
    np.testing.assert_allclose(obj.weights, alpha, atol=1e-15)
    assert obj.k == len(alpha)


def test_quantile_hazen_interpolation():
    # pos = 0.33 * 10 + 0.5 = 3.8: 0.2 on rank 3, 0.8 on rank 4
    np.testing.assert_allclose(Objective.parse("quantile0.33@10").weights[2:4], [0.2, 0.8])


@pytest.mark.parametrize(
    "alias,canonical",
    [
        ("TopM:2", "top2"),
        ("BotM:2", "bot2"),
        ("LowerTailMean:0.2", "cvar0.2"),
        ("UpperTailMean:0.2", "uppertail0.2"),
        ("Quantile:0.1", "quantile0.1"),
        ("Median", "median"),
        ("TrimM:4", "trim4"),
        ("WinsorizedM:2", "winsor2"),
        ("TopBot:2", "topbot2"),
        ("ReMax", "max"),
        ("ReMin", "min"),
        ("Rank:3", "rank3"),
        ("GiniMeanDifference", "gmd"),
        ("  CVaR 0.2 ", "cvar0.2"),
        ("VAR0.1", "quantile0.1"),
    ],
)
def test_paper_aliases(alias, canonical):
    assert Objective.parse(alias, k=12) == Objective.parse(canonical, k=12)


@pytest.mark.parametrize(
    "spec", ["top2@4", "max@8", "cvar0.2@128", "quantile0.1@100", "trim4@10", "gmd@6", "winsor2@9", "mean"]
)
def test_str_round_trip(spec):
    obj = Objective.parse(spec)
    assert str(obj) == spec
    assert Objective.parse(str(obj)) == obj


def test_canonical_str_of_aliases_and_alpha():
    assert str(Objective.parse("LowerTailMean:0.20", k=128)) == "cvar0.2@128"
    assert str(Objective.parse("TopM:2")) == "top2"
    obj = Objective.from_weights([0.1, 0.0, 0.9])
    assert Objective.parse(str(obj)) == obj
    assert Objective.parse([0.1, 0.0, 0.9]) == obj
    assert Objective.parse(np.array([0.1, 0.0, 0.9]), k=3) == obj


def test_k_from_spec_or_caller():
    assert Objective.parse("cvar0.2@128").k == 128
    assert Objective.parse("cvar0.2", k=128) == Objective.parse("cvar0.2@128")
    assert Objective.parse("cvar0.2@128", k=128).k == 128
    assert not Objective.parse("cvar0.2").is_bound
    assert Objective.parse("mean", k=64).k == 1  # mean is the k = 1 objective whatever the caller's k


def test_unbound_weights_error():
    with pytest.raises(ValueError, match="no k yet"):
        _ = Objective.parse("cvar0.2").weights
    with pytest.raises(ValueError, match="needs k"):
        resolve_objective("top2")


def test_unknown_name_lists_valid_names_and_closest():
    with pytest.raises(ValueError) as err:
        Objective.parse("cvra0.2@8")
    message = str(err.value)
    assert "Did you mean 'cvar'" in message
    for name in ("cvar", "quantile", "trim", "gmd", "topm"):
        assert name in message
    assert set(valid_names()) >= {"cvar", "median", "remax", "ginimeandifference"}


@pytest.mark.parametrize(
    "spec,match",
    [
        ("trim3@6", "2m < k"),
        ("winsor2@4", "2m < k"),
        ("top5@4", "m <= k"),
        ("rank5@4", "r <= k"),
        ("topbot6@5", "m <= k"),
        ("gmd@1", "k >= 2"),
        ("cvar1.5@8", r"in \(0, 1\]"),
        ("cvar0@8", r"in \(0, 1\]"),
        ("quantile1.5@8", r"in \[0, 1\]"),
        ("top2.5@8", "positive integer"),
        ("cvar@8", "needs a parameter"),
        ("median0.3@8", "takes no parameter"),
        ("mean@5", "k = 1 objective"),
        ("", "empty"),
        ("cvar0.2@", "malformed"),
        ("alpha[1,x]", "malformed alpha"),
        ("alpha[0.5,0.5]@3", "2 entries"),
    ],
)
def test_malformed_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        Objective.parse(spec)


def test_conflicting_k_and_bad_k():
    with pytest.raises(ValueError, match="fixes k=128"):
        Objective.parse("cvar0.2@128", k=64)
    with pytest.raises(ValueError, match="k must be >= 1"):
        Objective.parse("cvar0.2", k=0)
    with pytest.raises(ValueError, match="integer"):
        Objective.parse("cvar0.2", k=2.5)


def test_numeric_alpha_errors():
    with pytest.raises(ValueError, match="1-D"):
        Objective.from_weights([[1.0, 2.0]])
    with pytest.raises(ValueError, match="non-empty"):
        Objective.from_weights([])
    with pytest.raises(ValueError, match="NaN"):
        Objective.from_weights([1.0, float("nan")])


def test_objectives_are_hashable_and_weights_read_only():
    obj = Objective.parse("cvar0.2@10")
    assert len({obj, Objective.parse("lowertail0.2@10")}) == 1
    with pytest.raises(ValueError):
        obj.weights[0] = 3.0
