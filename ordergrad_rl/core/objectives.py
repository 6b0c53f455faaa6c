"""Order-statistic objectives: a spec string (or a numeric vector) -> size ``k`` and rank weights ``alpha``.

An :class:`Objective` names the L-statistic ``J = E[sum_j alpha_j R_(j:k)]`` of paper eq. (order-obj).
Rank weights are ordered **low to high**: ``alpha[0]`` weights the minimum ``R_(1:k)``, ``alpha[-1]``
the maximum. Specs are case-insensitive and ignore spaces and underscores; parameters follow the name
(``cvar0.2``, ``TopM:2``, ``RangeLowerTailMean:0.1:0.3``) and ``@K`` fixes ``k``::

    Objective.parse("cvar0.2@128")        # lower-tail mean of the worst ceil(0.2 * 128) = 26 of 128
    Objective.parse("cvar0.2", k=128)     # the same, k from the caller
    Objective.parse("LowerTailMean:0.2")  # the paper's preset name (unbound: k still needed)
    Objective.from_weights([0.5, 0, 0.5]) # a numeric low-to-high alpha vector

Every family is built from its textbook definition; the table in the README lists them.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
from scipy import special

from ordergrad_rl.core import weights
from ordergrad_rl.core._xp import check_concrete, to_numpy

Params = tuple[float, ...]


# ---------------------------------------------------------------------------------------------- builders
def _ceil_level(level: float, k: int) -> int:
    # round() guards ceil against binary noise: 0.7 * 10 == 7.000000000000001 must give 7, not 8.
    return max(1, math.ceil(round(level * k, 9)))


def _bottom(m: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[:m] = 1.0 / m
    return alpha


def _top(m: int, k: int) -> np.ndarray:
    return _bottom(m, k)[::-1].copy()


# Plotting positions p_j = (j - a) / (k + 1 - 2a) of the j-th of k order statistics (all symmetric):
# Hazen a = 1/2 (p_j = (j - 1/2)/k), Weibull a = 0 (j/(k+1)), Blom a = 3/8 ((j - 3/8)/(k + 1/4)).
_PLOTTING = {"hazen": 0.5, "weibull": 0.0, "blom": 0.375}


def _quantile(q: float, k: int, a: float = 0.5) -> np.ndarray:
    """Weight on the (fractional) rank whose plotting position is ``q``, linearly interpolated, clamped to [1, k]."""
    pos = min(max(round(a + q * (k + 1 - 2 * a), 12), 1.0), float(k))
    lo = math.floor(pos)
    frac = pos - lo
    alpha = np.zeros(k)
    alpha[lo - 1] = 1.0 - frac
    if frac > 0.0:
        alpha[lo] = frac
    return alpha


def _harrell_davis(q: float, k: int) -> np.ndarray:
    """``alpha_j = P((j-1)/k < U <= j/k)``, ``U ~ Beta((k+1) q, (k+1)(1-q))`` (Harrell & Davis 1982).

    q = 0 and q = 1 are the limits (all mass on the minimum / maximum). Each increment is taken from the
    CDF or from the survival function, whichever is smaller there, so both tails keep relative accuracy.
    """
    if q <= 0.0 or q >= 1.0:
        return _bottom(1, k) if q <= 0.0 else _top(1, k)
    a, b = (k + 1) * q, (k + 1) * (1 - q)
    edges = np.arange(k + 1) / k
    lower = special.betainc(a, b, edges)
    upper = special.betaincc(a, b, edges)
    below_mean = (edges[1:] + edges[:-1]) / 2 <= a / (a + b)
    return np.maximum(np.where(below_mean, np.diff(lower), -np.diff(upper)), 0.0)  # no -0.0 or rounding below 0


def _trim(m: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[m : k - m] = 1.0 / (k - 2 * m)
    return alpha


def _winsor(m: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[m : k - m] = 1.0 / k
    alpha[m] += m / k
    alpha[k - m - 1] += m / k
    return alpha


def _topbot(m: int, k: int) -> np.ndarray:
    # The average of TopM and BotM (paper App. weight schemes); for 2m > k the ranks in both get both halves.
    return 0.5 * (_top(m, k) + _bottom(m, k))


def _rank(r: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[k - r] = 1.0
    return alpha


def _range_mean(lo: float, hi: float, k: int) -> np.ndarray:
    """Mean of the quantile function over levels ``[lo, hi]``: rank j (levels ``[(j-1)/k, j/k]``) gets its overlap
    with ``[lo, hi]`` divided by ``hi - lo``, so fractional bounds give fractional edge weights."""
    low, high = round(lo * k, 9), round(hi * k, 9)
    j = np.arange(k)
    overlap = np.clip(np.minimum(j + 1.0, high) - np.maximum(j, low), 0.0, None)
    return overlap / (high - low)


def _whole_ranks(start: float, stop: float, k: int) -> np.ndarray:
    """Equal weights on the whole ranks ``floor(start) .. ceil(stop) - 1`` (0-based, low to high): the rounding of
    the paper authors' range presets (levels times ``k`` rounded outwards to whole ranks; float noise below 1e-9
    is ignored, so ``0.3 * 10`` is 3)."""
    first, end = math.floor(round(start, 9)), math.ceil(round(stop, 9))
    alpha = np.zeros(k)
    alpha[first:end] = 1.0 / (end - first)
    return alpha


def _authors_lower_range(lo: float, hi: float, k: int) -> np.ndarray:
    """``RangeLowerTailMean:lo:hi``: 1/n on the ranks ``floor(lo k) + 1 .. ceil(hi k)`` (1-based, from the bottom)."""
    return _whole_ranks(lo * k, hi * k, k)


def _authors_upper_range(lo: float, hi: float, k: int) -> np.ndarray:
    """``RangeUpperTailMean:lo:hi``: the same ranks counted from the top."""
    return _whole_ranks(lo * k, hi * k, k)[::-1].copy()


def _authors_trimmed_frac(lo: float, hi: float, k: int) -> np.ndarray:
    """``TrimmedMeanFrac:lo:hi``: levels ``[lo, hi]`` counted from the top, whole ranks ``floor(lo k) + 1 .. k -
    floor((1 - hi) k)`` (1-based, from the top): ``0.2:0.8`` at ``k = 10`` is 1/6 on the ranks 3..8."""
    stop = k - math.floor(round((1.0 - hi) * k, 9))
    return _whole_ranks(lo * k, stop, k)[::-1].copy()


def _lmoment_coefficients(r: int) -> list[int]:
    """``p*_{r-1,i} = (-1)^(r-1-i) C(r-1, i) C(r-1+i, i)``, ``i = 0..r-1``: the shifted Legendre polynomial."""
    s = r - 1
    return [(-1) ** (s - i) * math.comb(s, i) * math.comb(s + i, i) for i in range(r)]


def _lmoment_poly(r: int, k: int) -> np.ndarray:
    """Falling-factorial coefficients ``c_i`` with ``alpha[x] = sum_i c_i (x)_i``, ``x = j - 1``: the unbiased sample
    L-moment ``l_r = (1/k) sum_j [sum_i p*_{r-1,i} C(j-1, i) / C(k-1, i)] x_(j:k)`` (Hosking 1990)."""
    return np.array([p / (k * math.perm(k - 1, i)) for i, p in enumerate(_lmoment_coefficients(r))])


def _lmoment(r: int, k: int) -> np.ndarray:
    x = np.arange(k, dtype=np.float64)
    alpha = np.zeros(k)
    ratio = np.ones(k)  # (x)_i / (k-1)_i, built factor by factor so that nothing overflows
    for i, p in enumerate(_lmoment_coefficients(r)):
        alpha += p * ratio
        if i + 1 < r:
            ratio = ratio * (x - i) / (k - 1 - i)
    return alpha / k


def _gmd_poly(k: int) -> np.ndarray:
    return 2.0 * _lmoment_poly(2, k)  # Gini mean difference E|X - Y| = 2 lambda_2


def _gmd(k: int) -> np.ndarray:
    j = np.arange(1, k + 1)
    return 2.0 * (2.0 * j - k - 1.0) / (k * (k - 1.0))


# ---------------------------------------------------------------------------------------------- families
@dataclass(frozen=True)
class _Family:
    """One objective family. Parameter kinds: ``"level"`` (a float in (0, 1]), ``"prob"`` (in [0, 1]),
    ``"count"`` (a positive integer), ``"frac"`` (a fraction in [0, 1]); cross-parameter rules in ``check``."""

    kinds: tuple[str, ...]
    build: Callable[[Params, int], np.ndarray]
    min_k: Callable[[Params], int] = lambda _: 1
    needs: str = ""  # human-readable constraint shown when k is too small
    check: Callable[[Params], str | None] | None = None  # -> error message for invalid parameter combinations
    # Falling-factorial coefficients of alpha in x = j - 1 (polynomial weights have closed-form hypergeometric
    # moments, see weights.py).
    poly: Callable[[Params, int], np.ndarray] | None = None
    # Fractional k (known regime): weights at a fixed number of ranks from one end, ("top" | "bottom", weights
    # from that end outwards).
    anchor: Callable[[Params], tuple[str, np.ndarray]] | None = None


def _count(p: Params, i: int = 0) -> int:
    return int(p[i])


def _quantile_family(a: float, mirror: bool) -> _Family:
    def build(p: Params, k: int) -> np.ndarray:
        alpha = _quantile(p[0], k, a)
        return alpha[::-1].copy() if mirror else alpha

    return _Family(("prob",), build)


def _end_mean(end: str) -> _Family:
    """TopM / BotM: 1/m on the m ranks at one end (anchored there, so a fractional k is defined)."""
    build = _top if end == "top" else _bottom
    return _Family(
        ("count",),
        lambda p, k: build(_count(p), k),
        _count,
        "m <= k",
        anchor=lambda p: (end, np.full(_count(p), 1.0 / _count(p))),
    )


def _check_range(p: Params) -> str | None:
    lo, hi = p
    return None if 0.0 <= lo < hi <= 1.0 else f"needs 0 <= lo < hi <= 1, got lo={lo}, hi={hi}"


def _check_trimfrac(p: Params) -> str | None:
    lo, hi = p
    if 0.0 <= lo and 0.0 <= hi and lo + hi < 1.0:
        return None
    return f"trims lo from the bottom and hi from the top: needs lo, hi >= 0 and lo + hi < 1, got lo={lo}, hi={hi}"


_FAMILIES: dict[str, _Family] = {
    "mean": _Family((), lambda _, k: np.ones(1)),
    "cvar": _Family(("level",), lambda p, k: _bottom(_ceil_level(p[0], k), k)),
    "uppertail": _Family(("level",), lambda p, k: _top(_ceil_level(p[0], k), k)),
    "quantile": _quantile_family(_PLOTTING["hazen"], mirror=False),
    "quantileweibull": _quantile_family(_PLOTTING["weibull"], mirror=False),
    "quantileblom": _quantile_family(_PLOTTING["blom"], mirror=False),
    "topquantile": _quantile_family(_PLOTTING["hazen"], mirror=True),
    "topquantileweibull": _quantile_family(_PLOTTING["weibull"], mirror=True),
    "topquantileblom": _quantile_family(_PLOTTING["blom"], mirror=True),
    "median": _Family((), lambda _, k: _quantile(0.5, k)),
    "harrelldavis": _Family(("prob",), lambda p, k: _harrell_davis(p[0], k)),
    "top": _end_mean("top"),
    "bot": _end_mean("bottom"),
    "max": _Family((), lambda _, k: _top(1, k), anchor=lambda _: ("top", np.ones(1))),
    "min": _Family((), lambda _, k: _bottom(1, k), anchor=lambda _: ("bottom", np.ones(1))),
    "rank": _Family(
        ("count",),
        lambda p, k: _rank(_count(p), k),
        _count,
        "r <= k",
        anchor=lambda p: ("top", np.eye(_count(p))[-1]),
    ),  # fmt: skip
    "trim": _Family(("count",), lambda p, k: _trim(_count(p), k), lambda p: 2 * _count(p) + 1, "2m < k"),
    "winsor": _Family(("count",), lambda p, k: _winsor(_count(p), k), lambda p: 2 * _count(p) + 1, "2m < k"),
    "topbot": _Family(("count",), lambda p, k: _topbot(_count(p), k), _count, "m <= k"),
    "gmd": _Family((), lambda _, k: _gmd(k), lambda _: 2, "k >= 2", poly=lambda _, k: _gmd_poly(k)),
    "lmoment": _Family(
        ("count",),
        lambda p, k: _lmoment(_count(p), k),
        _count,
        "r <= k",
        poly=lambda p, k: _lmoment_poly(_count(p), k),
    ),  # fmt: skip
    "rangelowertail": _Family(("frac", "frac"), lambda p, k: _range_mean(p[0], p[1], k), check=_check_range),
    # The mirror image of the lower-tail range: levels counted from the top.
    "rangeuppertail": _Family(
        ("frac", "frac"), lambda p, k: _range_mean(p[0], p[1], k)[::-1].copy(), check=_check_range
    ),
    "trimfrac": _Family(("frac", "frac"), lambda p, k: _range_mean(p[0], 1.0 - p[1], k), check=_check_trimfrac),
    # The paper authors' preset names, with their whole-rank rounding (the project's names above keep exact levels).
    "rangelowertailmean": _Family(
        ("frac", "frac"), lambda p, k: _authors_lower_range(p[0], p[1], k), check=_check_range
    ),
    "rangeuppertailmean": _Family(
        ("frac", "frac"), lambda p, k: _authors_upper_range(p[0], p[1], k), check=_check_range
    ),
    "trimmedmeanfrac": _Family(("frac", "frac"), lambda p, k: _authors_trimmed_frac(p[0], p[1], k), check=_check_range),
}

# The paper's and the authors' preset names and other spellings -> canonical family.
_ALIASES: dict[str, str] = {
    "lowertail": "cvar",
    "lowertailmean": "cvar",
    "uppertailmean": "uppertail",
    "var": "quantile",
    "quantilehazen": "quantile",
    "topquantilehazen": "topquantile",
    "topm": "top",
    "botm": "bot",
    "bottom": "bot",
    "bottomm": "bot",
    "remax": "max",
    "remin": "min",
    "trimm": "trim",
    "winsorizedm": "winsor",
    "midrangem": "topbot",
    "midrange": "topbot",
    "ginimeandifference": "gmd",
}

_NUMBER = r"(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
_SPEC_RE = re.compile(
    rf"^(?P<name>[a-z]+?)(?P<params>:?{_NUMBER}(?::{_NUMBER})*)?(?:@(?P<k>[^@]*))?$"
)  # fmt: skip
_ALPHA_RE = re.compile(r"^alpha\[(?P<values>[^\]]*)\](?:@(?P<k>\d+))?$")
_EXAMPLE = {"level": "0.2", "prob": "0.1", "count": "2", "frac": "0.1"}


@runtime_checkable
class WeightArray(Protocol):
    """A 1-D array of rank weights of any array-API library: NumPy, a torch tensor (with ``requires_grad``, the
    weights are learned: see :func:`~ordergrad_rl.core.lstat_value`), a JAX or CuPy array."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def ndim(self) -> int: ...


ObjectiveLike = Union["Objective", str, Sequence[float], WeightArray]

_ACCEPTED = (
    "an Objective, a spec string such as 'cvar0.2@128' or 'TopM:2', or a 1-D sequence/array of real rank weights"
)


def valid_names() -> list[str]:
    """All accepted objective names (canonical families and aliases), for error messages and docs."""
    return sorted(set(_FAMILIES) | set(_ALIASES))


def _format_param(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and value >= 1 else repr(float(value))


def _format_params(params: Params) -> str:
    return ":".join(_format_param(p) for p in params)


def check_k(k: Any, *, name: str = "k") -> int:
    """``k`` as a Python int, or a ``TypeError``/``ValueError`` saying that a finite integer >= 1 is needed."""
    if isinstance(k, bool) or not isinstance(k, numbers.Real):
        raise TypeError(f"{name} must be an integer >= 1, got {k!r} of type {type(k).__name__}")
    # typeshed's numbers.Real declares no __int__ (python/mypy#3186); every real number here has one.
    if not math.isfinite(k) or int(k) != k:  # type: ignore[call-overload]
        raise ValueError(f"{name} must be a finite integer >= 1, got {k!r}")
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {name}={int(k)}")  # type: ignore[call-overload]
    return int(k)  # type: ignore[call-overload]


def real_weights(alpha: Any, name: str = "alpha") -> np.ndarray:
    """A real numeric vector as float64 NumPy, or a ``TypeError`` naming what is accepted (no silent casts)."""
    if isinstance(alpha, (str, bytes, bytearray)) or alpha is None or isinstance(alpha, (bool, numbers.Number)):
        raise TypeError(f"{name} must be a 1-D sequence or array of real numbers, got {type(alpha).__name__}")
    check_concrete(alpha, name, "an Objective (fixed rank weights; pass traced ones to lstat_value, lstat_advantage)")
    try:
        arr = to_numpy(alpha)
    except (TypeError, ValueError) as err:  # ragged nested lists
        raise TypeError(f"{name} must be a 1-D sequence or array of real numbers ({err})") from None
    if arr.dtype.kind not in "fiu":
        kind = "complex" if arr.dtype.kind == "c" else f"dtype {arr.dtype}"
        raise TypeError(f"{name} must contain real numbers (float or int), got {kind}")
    return arr.astype(np.float64)


@dataclass(frozen=True, eq=False)
class Objective:
    """An order-statistic objective ``E[sum_j alpha_j R_(j:k)]``.

    Build it with :meth:`parse` (spec strings) or :meth:`from_weights` (a numeric alpha vector); the constructor, as
    the repr prints it (``Objective(name='cvar', params=(0.2,), k=10)``), checks the parameters as :meth:`parse` does.
    An objective without ``k`` is *unbound*: it names a family (``cvar0.2``) whose weights depend on
    ``k``; :meth:`bind` fixes ``k``. Objectives are immutable and hashable (they key the weight caches).

    :param name: canonical family (``"cvar"``, ``"top"``, ...) or ``"alpha"`` for a numeric vector.
    :param params: the family's parameters (level, probability, count or range bounds), possibly empty.
    :param k: order-statistic size, or ``None`` while unbound.
    """

    name: str
    params: Params = ()
    k: int | None = None
    _alpha: tuple[float, ...] | None = field(default=None, repr=False)

    # Family objectives are determined by (name, params, k); numeric ones by their weights. Hashing the weights
    # of a family objective would cost O(k) on every cached lookup.
    def _key(self) -> tuple:
        return (self.name, self.params, self.k, self._alpha if self.name == "alpha" else None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Objective) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __post_init__(self) -> None:
        # Objective(name, params, k) written out, as the repr prints it, and dataclasses.replace(objective, k=...):
        # checked as the parser checks a spec. A family's weights are always built from (name, params, k), never
        # taken from the caller, so that replacing a field cannot keep the old weights. A numeric objective is its
        # weights: Objective.from_weights.
        if self.name == "alpha":
            if self._alpha is None:
                raise ValueError("a numeric objective is built with Objective.from_weights(alpha)")
            if self.params or self.k != len(self._alpha):
                raise ValueError(
                    f"a numeric objective has no params and k = its number of weights ({len(self._alpha)}), got "
                    f"params={self.params!r}, k={self.k!r}; build another one with Objective.from_weights(alpha)"
                )
            return
        name = _ALIASES.get(self.name, self.name)
        if name not in _FAMILIES:
            raise _unknown_name(self.name, self.name)
        try:
            values = tuple(float(v) for v in self.params)
        except (TypeError, ValueError):
            raise TypeError(
                f"objective {name!r}: params must be a tuple of numbers such as (0.2,), got {self.params!r}"
            ) from None
        spec = name + _format_params(values) + ("" if self.k is None else f"@{self.k}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", _check_values(name, _FAMILIES[name], values, spec))
        if name == "mean":
            if self.k not in (None, 1):
                raise ValueError(f"'mean' is the k = 1 objective, got k={self.k!r}")
            object.__setattr__(self, "k", 1)
            object.__setattr__(self, "_alpha", (1.0,))
        elif self.k is None:
            object.__setattr__(self, "_alpha", None)
        else:
            object.__setattr__(self, "k", check_k(self.k))
            object.__setattr__(self, "_alpha", _family_weights(name, self.params, self.k))

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, spec: ObjectiveLike, k: int | None = None) -> Objective:
        """Parse a spec string (or pass through an ``Objective`` / numeric alpha) and bind ``k`` if given.

        :param spec: e.g. ``"cvar0.2@128"``, ``"top2@4"``, ``"TopM:2"``, ``"quantile0.1"``,
            ``"RangeLowerTailMean:0.1:0.3"``, ``"alpha[0.5,0,0.5]"``, an existing :class:`Objective`, or a
            low-to-high numeric alpha vector.
        :param k: order-statistic size when the spec has no ``@K``. It must agree with ``@K`` if both are given.
        :raises TypeError: ``spec`` is none of the accepted kinds (``None``, a number, bytes, a list of strings).
        :raises ValueError: unknown name (the message lists valid names and the closest one), malformed
            parameter, or ``k`` incompatible with the family (e.g. ``trim3@6`` needs 2m < k).
        """
        return _parse(spec, k, None)

    @classmethod
    def from_weights(cls, alpha: Sequence[float] | WeightArray) -> Objective:
        """An objective from a numeric low-to-high rank-weight vector (its length is ``k``)."""
        arr = real_weights(alpha)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"alpha must be a non-empty 1-D vector of rank weights, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("alpha contains NaN or inf")
        return cls("alpha", (), int(arr.size), tuple(float(a) for a in arr))

    def bind(self, k: int) -> Objective:
        """Return this objective with order-statistic size ``k`` (``mean`` always has k = 1)."""
        k = check_k(k)
        if self.name == "mean":
            return Objective("mean")
        if self.name == "alpha":
            if k != self.k:
                raise ValueError(f"numeric alpha has k={self.k} entries; cannot bind k={k}")
            return self
        return Objective(self.name, self.params, k)

    # ------------------------------------------------------------------ accessors
    @property
    def param(self) -> float | None:
        """The first parameter, or ``None`` (kept for the one-parameter families)."""
        return self.params[0] if self.params else None

    @property
    def is_bound(self) -> bool:
        return self.k is not None

    @property
    def weights(self) -> np.ndarray:
        """Rank weights ``alpha``, low to high, shape ``(k,)``, float64 (a fresh read-only array)."""
        if self._alpha is None:
            raise ValueError(
                f"objective {str(self)!r} has no k yet: write e.g. '{self}@128' or pass k= (see Objective.bind)"
            )
        arr = np.array(self._alpha, dtype=np.float64)
        arr.flags.writeable = False
        return arr

    @property
    def polynomial(self) -> np.ndarray | None:
        """Falling-factorial coefficients ``c`` with ``alpha[x] = sum_i c_i x(x-1)...(x-i+1)``, ``x = j - 1``, for
        families whose weights are a polynomial in the rank (``gmd``, ``lmoment``); ``None`` otherwise."""
        family = _FAMILIES.get(self.name)
        if family is None or family.poly is None or self.k is None:
            return None
        return family.poly(self.params, self.k)

    def anchored(self) -> tuple[str, np.ndarray] | None:
        """``("top" | "bottom", beta)`` when the weights sit at a fixed number of ranks from one end whatever ``k``
        (``max``, ``top<m>``, ``rank<r>``, ``min``, ``bot<m>``): ``beta[i]`` weights the (i+1)-th rank from that
        end. This is what makes a fractional ``k`` meaningful in the known regime."""
        family = _FAMILIES.get(self.name)
        if family is None or family.anchor is None:
            return None
        return family.anchor(self.params)

    def __str__(self) -> str:
        if self.name == "alpha":
            return "alpha[" + ",".join(repr(a) for a in self._alpha or ()) + "]"
        text = self.name + _format_params(self.params)
        if self.k is not None and self.name != "mean":
            text += f"@{self.k}"
        return text


def _family_weights(name: str, params: Params, k: int) -> tuple[float, ...]:
    """The rank weights of family ``name`` at ``k``, or a ``ValueError`` when ``k`` is too small or too large."""
    family = _FAMILIES[name]
    if k < family.min_k(params):
        raise ValueError(f"objective {name}{_format_params(params)}@{k} needs {family.needs} (k={k})")
    limit = weights.RANKWISE_MAX_BYTES  # read at each call: users may change it
    if 8 * k > limit:  # refused before numpy fails to allocate them (or the machine swaps)
        raise ValueError(
            f"objective {name}{_format_params(params)}@{k}: its k float64 rank weights need "
            f"{8 * k / 2**30:.3g} GiB, above the {limit / 2**30:.3g} GiB limit "
            "(ordergrad_rl.core.weights.RANKWISE_MAX_BYTES); lower k (the known regime takes max, min, top<m>, "
            "bot<m> and rank<r> at any k without building their weights)"
        )
    return _built_weights(name, params, k)


@lru_cache(maxsize=256)
def _built_weights(name: str, params: Params, k: int) -> tuple[float, ...]:
    return tuple(_FAMILIES[name].build(params, k).tolist())


def clear_caches() -> None:
    """Forget the parsed specs and bound weights."""
    _parse_string.cache_clear()
    _built_weights.cache_clear()


def _unknown_name(raw: str, spec: str) -> ValueError:
    close = difflib.get_close_matches(raw, valid_names(), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(f"unknown objective {raw!r} in spec {spec!r}.{hint} Valid names: {', '.join(valid_names())}")


def _example_params(family: _Family) -> str:
    return "0.1:0.3" if family.kinds == ("frac", "frac") else ":".join(_EXAMPLE[kind] for kind in family.kinds)


def _check_params(name: str, family: _Family, raw: str | None, spec: str, k_text: str | None = None) -> Params:
    if not family.kinds:
        if raw:
            raise ValueError(f"objective {name!r} takes no parameter, got {spec!r}")
        return ()
    if not raw:
        raise ValueError(f"objective {name!r} needs a parameter, e.g. '{name}{_example_params(family)}'; got {spec!r}")
    return _check_values(name, family, tuple(float(v) for v in raw.lstrip(":").split(":")), spec, k_text)


def _check_values(name: str, family: _Family, values: Params, spec: str, k_text: str | None = None) -> Params:
    """``values`` if they are valid parameters of ``family`` (a ``ValueError`` naming ``spec`` otherwise)."""
    if len(values) != len(family.kinds):
        raise ValueError(
            f"objective {name!r} takes {len(family.kinds)} parameter(s) ({name}{_example_params(family)}), "
            f"got {len(values)} in {spec!r}"
        )
    for value, kind in zip(values, family.kinds, strict=True):
        if kind == "level" and not 0.0 < value <= 1.0:
            raise ValueError(f"{name} level must be in (0, 1], got {value} in {spec!r}")
        if kind in ("prob", "frac") and not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} probability must be in [0, 1], got {value} in {spec!r}")
        if kind == "count" and (not value.is_integer() or value < 1):
            raise ValueError(f"{name} count must be a positive integer, got {_format_param(value)} in {spec!r}")
    if family.check is not None and (problem := family.check(values)) is not None:
        k_note = "" if k_text is None else f" (k={k_text})"
        raise ValueError(f"objective {name!r} {problem}{k_note} in {spec!r}")
    return values


def split_spec(spec: str) -> tuple[str, str | None]:
    """``spec`` without spaces/underscores, lower case, and the text after ``@`` (``None`` without ``@``)."""
    text = "".join(spec.split()).lower().replace("_", "")
    if "@" not in text:
        return text, None
    body, _, k = text.rpartition("@")
    return body, k


@lru_cache(maxsize=256)
def _parse_string(spec: str) -> tuple[Objective, int | None]:
    """``(objective, k from @K or None)``; the objective is unbound unless it is numeric or ``mean``."""
    text, k_text = split_spec(spec)
    if not text:
        raise ValueError(f"empty objective spec; valid names: {', '.join(valid_names())}")
    match = _ALPHA_RE.match(text if k_text is None else f"{text}@{k_text}")
    if match:
        try:
            values = [float(v) for v in match["values"].split(",") if v]
        except ValueError:
            raise ValueError(f"malformed alpha vector in objective spec {spec!r}") from None
        obj = Objective.from_weights(values)
        if match["k"] is not None and int(match["k"]) != obj.k:
            raise ValueError(f"objective spec {spec!r}: alpha has {obj.k} entries but @K says {match['k']}")
        return obj, None
    match = _SPEC_RE.match(text)
    # k was split off at the last "@": another "@" left in the body is malformed ("top2@4+junk@4").
    if not match or match["k"] is not None or (k_text is not None and not re.fullmatch(_NUMBER, k_text)):
        raise ValueError(
            f"malformed objective spec {spec!r}: expected NAME[PARAM[:PARAM]][@K] such as 'cvar0.2@128', 'top2@4', "
            f"'median', 'RangeLowerTailMean:0.1:0.3' or 'alpha[0.5,0,0.5]'"
        )
    raw_name = match["name"]
    name = _ALIASES.get(raw_name, raw_name)
    if name not in _FAMILIES:
        raise _unknown_name(raw_name, spec)
    obj = Objective(name, _check_params(name, _FAMILIES[name], match["params"], spec, k_text))
    if k_text is None:
        return (obj.bind(1), None) if name == "mean" else (obj, None)
    k = float(k_text)
    if not k.is_integer() or k < 1:
        # Only a real k > 1 of an end-anchored family (max, top<m>, ...) has a meaning, in the known regime.
        fractional = obj.anchored() is not None and 1 < k < math.inf
        hint = f"; a fractional k is defined only in the known-(r,p) regime (known_lstat_value(r, p, '{obj}', k={k}))"
        raise ValueError(f"k must be a positive integer in {spec!r}{hint if fractional else ''}")
    if name == "mean" and k != 1:
        raise ValueError(
            f"'mean' is the k = 1 objective; mean@{int(k)} would be the same gradient in expectation — "
            f"use 'mean' (or 'top{int(k)}@{int(k)}' for that exact estimator)"
        )
    return obj, int(k)


def _parse(spec: ObjectiveLike, k: Any, check: Callable[[int], None] | None) -> Objective:
    """Objective.parse, with ``check(k)`` called on the final ``k`` before any weights are built."""
    k = None if k is None else check_k(k)
    if isinstance(spec, Objective):
        obj, spec_k = spec, None
    elif isinstance(spec, str):
        obj, spec_k = _parse_string(spec)
    elif isinstance(spec, (bytes, bytearray)):
        raise TypeError(f"objective must be {_ACCEPTED}; got bytes {spec!r} (decode it to str first)")
    elif spec is None or isinstance(spec, (bool, numbers.Number)):
        raise TypeError(f"objective must be {_ACCEPTED}; got {spec!r}")
    elif isinstance(spec, Sequence) and any(isinstance(s, (str, bytes)) for s in spec):
        raise TypeError(f"objective must be {_ACCEPTED}; got a sequence of strings {list(spec)!r}")
    else:
        obj, spec_k = Objective.from_weights(spec), None
    if obj.k is not None:  # already bound (an Objective, numeric alpha, mean)
        if k is not None and obj.k != k and obj.name != "mean":
            raise ValueError(f"objective {str(obj)!r} fixes k={obj.k} but k={k} was also passed")
        if check is not None:
            check(obj.k)
        return obj
    if spec_k is not None and k is not None and spec_k != k:
        raise ValueError(f"objective {spec!r} fixes k={spec_k} but k={k} was also passed")
    k = spec_k if spec_k is not None else k
    if k is None:
        return obj
    if check is not None:
        check(k)
    return obj.bind(k)


def resolve_objective(
    objective: ObjectiveLike, k: int | None = None, check: Callable[[int], None] | None = None
) -> Objective:
    """Parse ``objective`` and make sure it is bound (raise a clear error if no ``k`` is known).

    :param objective: a spec, an :class:`Objective` or numeric rank weights.
    :param k: order-statistic size when the objective has no ``@K`` (it must agree with ``@K`` if both are given).
    :param check: called with the final ``k`` before the weights are built (e.g. to refuse ``k > N`` without
        first allocating ``k`` weights).
    """
    obj = _parse(objective, k, check)
    if not obj.is_bound:
        raise ValueError(f"objective {str(obj)!r} needs k: write '{obj}@K' or pass k=")
    return obj
