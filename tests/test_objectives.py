"""Objective spec strings: every row of DESIGN.md's table, aliases, @K, numeric alpha, canonical str, errors."""

import math

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
        ("QuantileWeibull:0.1", "quantileweibull0.1"),
        ("QuantileBlom:0.1", "quantileblom0.1"),
        ("Quantile_Hazen:0.1", "quantile0.1"),
        ("TopQuantile:0.1", "topquantile0.1"),
        ("TopQuantileBlom:0.1", "topquantileblom0.1"),
        ("HarrellDavis:0.5", "harrelldavis0.5"),
        ("LMoment:3", "lmoment3"),
        ("RangeLowerTailMean:0.1:0.3", "rangelowertailmean0.1:0.3"),
        ("RangeUpperTailMean:0.1:0.3", "rangeuppertailmean0.1:0.3"),
        ("TrimmedMeanFrac:0.1:0.2", "trimmedmeanfrac0.1:0.2"),
        ("MidrangeM:2", "topbot2"),
    ],
)
def test_paper_aliases(alias, canonical):
    assert Objective.parse(alias, k=12) == Objective.parse(canonical, k=12)


@pytest.mark.parametrize(
    "spec",
    ["top2@4", "max@8", "cvar0.2@128", "quantile0.1@100", "trim4@10", "gmd@6", "winsor2@9", "mean",
     "quantileweibull0.1@10", "topquantileblom0.25@7", "harrelldavis0.5@20", "harrelldavis0.0@3", "lmoment3@9",
     "rangelowertail0.0:0.25@8", "rangeuppertail0.1:1@8", "trimfrac0.1:0.2@10", "topbot3@4"],
)  # fmt: skip
def test_str_round_trip(spec):
    obj = Objective.parse(spec)
    assert str(obj) == spec
    assert Objective.parse(str(obj)) == obj


@pytest.mark.parametrize("spec", ["top2@4", "cvar0.2@128", "quantile0.1@100", "trimfrac0.1:0.2@10", "mean", "top2"])
def test_constructor_as_the_repr_prints_it_binds_and_checks(spec):
    """``Objective(name='cvar', params=(0.2,), k=10)``, the documented constructor its repr prints, had no weights:
    ``.weights`` and lstat_advantage raised "has no k yet: write e.g. 'cvar0.2@10@128'", and invalid parameters or
    names were taken silently (cvar1.5 weighted every rank 1/15) or raised a bare KeyError."""
    from ordergrad_rl import lstat_advantage

    obj = Objective.parse(spec)
    built = eval(repr(obj), {"Objective": Objective})
    assert built == obj and str(built) == spec
    if obj.is_bound:
        np.testing.assert_array_equal(built.weights, obj.weights)
        rewards = np.random.default_rng(0).normal(size=obj.k + 3)
        np.testing.assert_array_equal(lstat_advantage(rewards, built), lstat_advantage(rewards, obj))
    with pytest.raises(ValueError, match=r"cvar level must be in \(0, 1\], got 1.5 in 'cvar1.5'"):
        Objective("cvar", (1.5,))
    with pytest.raises(ValueError, match="unknown objective 'foo'"):
        Objective("foo", (), 4)
    with pytest.raises(ValueError, match=r"trim2@4 needs 2m < k"):
        Objective("trim", (2,), 4)
    with pytest.raises(TypeError, match="params must be a tuple of numbers"):
        Objective("cvar", 0.2)  # type: ignore[arg-type]


def test_dataclasses_replace_rebuilds_the_weights():
    """``dataclasses.replace(Objective.parse("cvar0.2@10"), k=5)`` printed ``cvar0.2@5`` but kept the ten weights of
    ``cvar0.2@10`` (and a new ``params`` or ``name`` kept the old ones too): a silently wrong objective. A family's
    weights now follow its fields; a numeric objective, which is its weights, refuses a ``k`` they do not have."""
    import copy
    import dataclasses
    import pickle

    obj = Objective.parse("cvar0.2@10")
    for changes, spec in [
        ({"k": 5}, "cvar0.2@5"),
        ({"params": (0.5,)}, "cvar0.5@10"),
        ({"name": "top", "params": (2,)}, "top2@10"),
        ({"name": "median", "params": ()}, "median@10"),
    ]:
        replaced = dataclasses.replace(obj, **changes)
        assert replaced == Objective.parse(spec)
        np.testing.assert_array_equal(replaced.weights, Objective.parse(spec).weights)
    assert dataclasses.replace(obj, k=None) == Objective.parse("cvar0.2")
    assert not dataclasses.replace(obj, k=None).is_bound
    np.testing.assert_array_equal(dataclasses.replace(Objective.parse("cvar0.2"), k=10).weights, obj.weights)
    for copied in (copy.copy(obj), copy.deepcopy(obj), pickle.loads(pickle.dumps(obj))):
        assert copied == obj
        np.testing.assert_array_equal(copied.weights, obj.weights)
    with pytest.raises(ValueError, match="'mean' is the k = 1 objective, got k=4"):
        dataclasses.replace(Objective.parse("mean"), k=4)
    with pytest.raises(ValueError, match="trim2@4 needs 2m < k"):
        dataclasses.replace(Objective.parse("trim2@10"), k=4)
    numeric = Objective.from_weights([0.5, 0.0, 0.5])
    assert dataclasses.replace(numeric) == numeric
    with pytest.raises(ValueError, match=r"k = its number of weights \(3\), got params=\(\), k=4"):
        dataclasses.replace(numeric, k=4)


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
        ("RangeLowerTailMean:0.3:0.2", r"0 <= lo < hi <= 1, got lo=0.3, hi=0.2"),
        ("rangeuppertail0.2:0.2@8", r"lo=0.2, hi=0.2 \(k=8\)"),
        ("trimfrac0.5:0.5@8", r"lo \+ hi < 1, got lo=0.5, hi=0.5"),
        ("rangelowertail0.1@8", "takes 2 parameter"),
        ("rangelowertail0.1:1.5", r"in \[0, 1\]"),
        ("lmoment3@2", "r <= k"),
        ("lmoment0", "positive integer"),
        ("quantileweibull1.5", r"in \[0, 1\]"),
        ("harrelldavis@5", "needs a parameter"),
        ("topbot5@4", "m <= k"),
        ("top2@2.5", "fractional k is defined only in the known"),
        ("top2@4+junk@4", "malformed"),  # a second "@" used to be ignored
        ("top2@4@4", "malformed"),
    ],
)
def test_malformed_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        Objective.parse(spec)


@pytest.mark.parametrize("spec", ["cvar0.2@0", "top2@0", "top2@1e400", "cvar0.2@2.5", "median@0.5"])
def test_bad_k_in_a_spec_suggests_a_fractional_k_only_where_one_is_defined(spec):
    """'cvar0.2@0' said "a fractional k is defined only in the known-(r,p) regime (known_lstat_value(r, p,
    'cvar0.2', k=0.0))", a call that fails too: k = 0 and inf are no fractional k, and cvar has none."""
    with pytest.raises(ValueError, match="k must be a positive integer") as err:
        Objective.parse(spec)
    assert "fractional" not in str(err.value)


@pytest.mark.parametrize(
    ("spec", "k"), [("cvar0.2@99999999999999999999", None), ("median", 10**10), ("max@200000000", None)]
)
def test_a_k_whose_weights_cannot_be_held_is_refused_naming_the_objective(spec, k):
    """'cvar0.2@99999999999999999999' raised numpy's bare "Maximum allowed dimension exceeded", k = 10^10 a
    MemoryError for 74.5 GiB, and k = 2 * 10^8 allocated 1.5 GiB of weights (and a 6 GiB tuple) before any check."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"rank weights need .* GiB, above the 1 GiB limit"):
        Objective.parse(spec, k=k)
    assert time.perf_counter() - start < 1.0
    assert Objective.parse("cvar0.2@100000").k == 100000


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


# ---------------------------------------------------------------------------------------------- new families (#15)
NEW_ROWS = [
    # Weibull position q (k+1) = 1.1 and Blom 3/8 + q (k + 1/4) = 1.4: interpolated between ranks 1 and 2
    ("quantileweibull0.1", 10, [0.9, 0.1] + [0.0] * 8),
    ("quantileblom0.1", 10, [0.6, 0.4] + [0.0] * 8),
    ("quantileweibull0.5", 4, [0, 0.5, 0.5, 0]),
    ("topquantile0.1", 10, [0.0] * 8 + [0.5, 0.5]),  # the mirror of quantile0.1
    ("topquantileweibull0.1", 10, [0.0] * 8 + [0.1, 0.9]),
    ("harrelldavis0", 4, [1, 0, 0, 0]),
    ("harrelldavis1", 4, [0, 0, 0, 1]),
    ("lmoment1", 4, [0.25] * 4),
    ("lmoment2", 3, [-1 / 3, 0, 1 / 3]),  # half the Gini mean difference
    # l_3 = (1/k) sum_j [6 C(j-1,2)/C(k-1,2) - 6 (j-1)/(k-1) + 1] x_(j)   (Hosking 1990), k = 5
    ("lmoment3", 5, [0.2, -0.1, -0.2, -0.1, 0.2]),
    ("rangelowertail0.1:0.3", 10, [0, 0.5, 0.5] + [0.0] * 7),
    ("rangelowertail0.05:0.2", 10, [1 / 3, 2 / 3] + [0.0] * 8),  # fractional bounds: fractional edge weights
    ("rangeuppertail0.05:0.2", 10, [0.0] * 8 + [2 / 3, 1 / 3]),
    ("trimfrac0.1:0.25", 10, [0] + [2 / 13] * 6 + [1 / 13, 0, 0]),  # levels [0.1, 0.75]
    # The paper authors' presets: whole ranks (issue 22's table, k = 10).
    ("RangeLowerTailMean:0.05:0.2", 10, [0.5, 0.5] + [0.0] * 8),
    ("RangeUpperTailMean:0.05:0.2", 10, [0.0] * 8 + [0.5, 0.5]),
    ("TrimmedMeanFrac:0.1:0.2", 10, [0.0] * 8 + [1.0, 0.0]),
    ("TrimmedMeanFrac:0.2:0.8", 10, [0, 0] + [1 / 6] * 6 + [0, 0]),
    ("topbot1", 2, [0.5, 0.5]),  # MidrangeM:1 = (min + max) / 2
    ("topbot3", 4, [1 / 6, 1 / 3, 1 / 3, 1 / 6]),  # 2m > k: the average of TopM and BotM, overlaps add up
]


@pytest.mark.parametrize("spec,k,alpha", NEW_ROWS)
def test_new_family_rows(spec, k, alpha):
    obj = Objective.parse(spec, k=k)
    np.testing.assert_allclose(obj.weights, alpha, atol=1e-15)


def test_harrell_davis_is_the_beta_cdf_increment():
    from scipy import stats

    k, q = 12, 0.3
    edges = stats.beta((k + 1) * q, (k + 1) * (1 - q)).cdf(np.arange(k + 1) / k)
    np.testing.assert_allclose(Objective.parse(f"harrelldavis{q}@{k}").weights, np.diff(edges), atol=1e-15)
    # tails keep relative accuracy (increments from the survival function above the mean)
    far = Objective.parse("harrelldavis0.5@2000").weights
    assert far.sum() == pytest.approx(1.0, abs=1e-14) and far.min() >= 0
    tail = far[far > 1e-290]  # symmetric for q = 1/2, down to the smallest increments that do not underflow
    np.testing.assert_allclose(tail, tail[::-1], rtol=1e-9)
    assert tail[0] < 1e-250


@pytest.mark.parametrize("r", [1, 2, 3, 4, 5])
def test_lmoment_weights_are_the_unbiased_sample_lmoment(r):
    """l_r = sum_i p*_{r-1,i} b_i with b_i = (1/k) sum_j C(j-1, i)/C(k-1, i) x_(j) (Hosking 1990), k = 9."""
    from math import comb

    k = 9
    expected = np.zeros(k)
    for i in range(r):
        p_star = (-1) ** (r - 1 - i) * comb(r - 1, i) * comb(r - 1 + i, i)
        expected += p_star * np.array([comb(j - 1, i) / comb(k - 1, i) for j in range(1, k + 1)]) / k
    np.testing.assert_allclose(Objective.parse(f"lmoment{r}@{k}").weights, expected, atol=1e-15)


def test_lmoment2_is_half_the_gini_mean_difference():
    from ordergrad_rl import lstat_advantage, lstat_value

    x = np.random.default_rng(0).normal(size=30)
    pairs = np.abs(x[:, None] - x[None, :])[np.triu_indices(30, 1)].mean()  # GMD = E|X - Y|
    for k in (2, 7, 30):
        np.testing.assert_allclose(lstat_value(x, f"gmd@{k}"), pairs, rtol=1e-13)  # a U-statistic: same for any k
        np.testing.assert_allclose(lstat_value(x, f"lmoment2@{k}"), pairs / 2, rtol=1e-13)
    np.testing.assert_allclose(lstat_advantage(x, "lmoment2@7"), lstat_advantage(x, "gmd@7") / 2, atol=1e-15)
    np.testing.assert_allclose(Objective.parse("LMoment:2@8").weights, Objective.parse("gmd@8").weights / 2)


# ---------------------------------------------------------------------------------------------- bad input types (#9)
@pytest.mark.parametrize("bad", [None, 5, 2.5, True, b"cvar0.2", ["cvar0.2"], ("top2", "@4")])
def test_parse_refuses_non_specs_with_a_type_error(bad):
    with pytest.raises(TypeError, match="spec string such as 'cvar0.2@128'"):
        Objective.parse(bad)


@pytest.mark.parametrize("k,error", [(float("inf"), ValueError), (float("nan"), ValueError), ("3", TypeError),
                                     (True, TypeError), (2.5, ValueError), (-1, ValueError)])  # fmt: skip
def test_parse_refuses_bad_k(k, error):
    with pytest.raises(error, match="k must be"):
        Objective.parse("cvar0.2", k=k)


def test_complex_alpha_is_refused():
    with pytest.raises(TypeError, match="real numbers"):
        Objective.from_weights([1 + 2j, 0.5])
    with pytest.raises(TypeError, match="real numbers"):
        Objective.parse(np.array([0.5, 0.5], dtype=complex))
    assert Objective.parse(np.array([1, 0, 1])).weights.dtype == np.float64  # integers are fine


def _authors_rule(name: str, lo: float, hi: float, k: int) -> np.ndarray:
    """The authors' rule written out rank by rank (1-based ranks; an independent reading of issue 22's text)."""
    if name == "TrimmedMeanFrac":  # levels [lo, hi] from the top: ranks floor(lo k) + 1 .. k - floor((1 - hi) k)
        first, last = math.floor(round(lo * k, 9)) + 1, k - math.floor(round((1 - hi) * k, 9))
        from_top = True
    else:  # from floor(lo k) to ceil(hi k): ranks floor(lo k) + 1 .. ceil(hi k)
        first, last = math.floor(round(lo * k, 9)) + 1, math.ceil(round(hi * k, 9))
        from_top = name == "RangeUpperTailMean"
    alpha = np.zeros(k)
    for rank in range(first, last + 1):
        alpha[k - rank if from_top else rank - 1] = 1.0 / (last - first + 1)
    return alpha


@pytest.mark.parametrize("name", ["RangeLowerTailMean", "RangeUpperTailMean", "TrimmedMeanFrac"])
def test_authors_presets_give_the_authors_weights_for_every_k(name):
    levels = [0.0, 0.01, 0.05, 0.1, 0.125, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0]
    for k in range(1, 65):
        for lo in levels:
            for hi in levels:
                if not lo < hi:
                    continue
                weights = Objective.parse(f"{name}:{lo!r}:{hi!r}", k=k).weights
                np.testing.assert_allclose(
                    weights, _authors_rule(name, lo, hi, k), atol=1e-15, err_msg=f"{lo},{hi},{k}"
                )


def test_project_range_names_keep_their_exact_levels():
    assert Objective.parse("rangelowertail0.05:0.2", k=10).weights[:2].tolist() == pytest.approx([1 / 3, 2 / 3])
    assert Objective.parse("trimfrac0.1:0.2", k=10) != Objective.parse("TrimmedMeanFrac:0.1:0.2", k=10)
