"""Order-statistic objectives: a spec string (or a numeric vector) -> size ``k`` and rank weights ``alpha``.

An :class:`Objective` names the L-statistic ``J = E[sum_j alpha_j R_(j:k)]`` of paper eq. (order-obj).
Rank weights are ordered **low to high**: ``alpha[0]`` weights the minimum ``R_(1:k)``, ``alpha[-1]``
the maximum. Specs are case-insensitive and ignore spaces; ``@K`` fixes ``k``::

    Objective.parse("cvar0.2@128")        # lower-tail mean of the worst ceil(0.2 * 128) = 26 of 128
    Objective.parse("cvar0.2", k=128)     # the same, k from the caller
    Objective.parse("LowerTailMean:0.2")  # the paper's preset name (unbound: k still needed)
    Objective.from_weights([0.5, 0, 0.5]) # a numeric low-to-high alpha vector
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np

# family -> (parameter kind, alpha builder).  Parameter kinds: None (no parameter), "level" (a float in
# (0, 1]), "prob" (a float in [0, 1]), "count" (a positive integer).
_Builder = Callable[[float, int], np.ndarray]


def _ceil_level(level: float, k: int) -> int:
    # round() guards ceil against binary noise: 0.7 * 10 == 7.000000000000001 must give 7, not 8.
    return max(1, math.ceil(round(level * k, 9)))


def _bottom(m: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[:m] = 1.0 / m
    return alpha


def _top(m: int, k: int) -> np.ndarray:
    return _bottom(m, k)[::-1].copy()


def _quantile(q: float, k: int) -> np.ndarray:
    # Hazen plotting position: the j-th of k order statistics sits at quantile (j - 0.5) / k.
    pos = min(max(q * k + 0.5, 1.0), float(k))
    lo = math.floor(pos)
    frac = pos - lo
    alpha = np.zeros(k)
    alpha[lo - 1] = 1.0 - frac
    if frac > 0.0:
        alpha[lo] = frac
    return alpha


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
    alpha = np.zeros(k)
    alpha[:m] = 0.5 / m
    alpha[k - m :] += 0.5 / m
    return alpha


def _rank(r: int, k: int) -> np.ndarray:
    alpha = np.zeros(k)
    alpha[k - r] = 1.0
    return alpha


def _gmd(_: float, k: int) -> np.ndarray:
    j = np.arange(1, k + 1)
    return 2.0 * (2.0 * j - k - 1.0) / (k * (k - 1.0))


@dataclass(frozen=True)
class _Family:
    kind: str | None
    build: _Builder
    min_k: Callable[[float], int] = lambda _: 1
    needs: str = ""  # human-readable constraint shown when k is too small


_FAMILIES: dict[str, _Family] = {
    "mean": _Family(None, lambda _, k: np.ones(1)),
    "cvar": _Family("level", lambda a, k: _bottom(_ceil_level(a, k), k)),
    "uppertail": _Family("level", lambda a, k: _top(_ceil_level(a, k), k)),
    "quantile": _Family("prob", lambda q, k: _quantile(q, k)),
    "median": _Family(None, lambda _, k: _quantile(0.5, k)),
    "top": _Family("count", lambda m, k: _top(int(m), k), lambda m: int(m), "m <= k"),
    "bot": _Family("count", lambda m, k: _bottom(int(m), k), lambda m: int(m), "m <= k"),
    "max": _Family(None, lambda _, k: _top(1, k)),
    "min": _Family(None, lambda _, k: _bottom(1, k)),
    "rank": _Family("count", lambda r, k: _rank(int(r), k), lambda r: int(r), "r <= k"),
    "trim": _Family("count", lambda m, k: _trim(int(m), k), lambda m: 2 * int(m) + 1, "2m < k"),
    "winsor": _Family("count", lambda m, k: _winsor(int(m), k), lambda m: 2 * int(m) + 1, "2m < k"),
    "topbot": _Family("count", lambda m, k: _topbot(int(m), k), lambda m: 2 * int(m), "2m <= k"),
    "gmd": _Family(None, _gmd, lambda _: 2, "k >= 2"),
}

# The paper's preset names and other spellings -> canonical family.
_ALIASES: dict[str, str] = {
    "lowertail": "cvar",
    "lowertailmean": "cvar",
    "uppertailmean": "uppertail",
    "var": "quantile",
    "topm": "top",
    "botm": "bot",
    "bottom": "bot",
    "bottomm": "bot",
    "remax": "max",
    "remin": "min",
    "trimm": "trim",
    "winsorizedm": "winsor",
    "ginimeandifference": "gmd",
}

_SPEC_RE = re.compile(r"^(?P<name>[a-z_]+?)(?::?(?P<param>\d+(?:\.\d*)?(?:e-?\d+)?|\.\d+))?(?:@(?P<k>\d+))?$")
_ALPHA_RE = re.compile(r"^alpha\[(?P<values>[^\]]*)\](?:@(?P<k>\d+))?$")

ObjectiveLike = Union["Objective", str, Sequence[float], np.ndarray]


def valid_names() -> list[str]:
    """All accepted objective names (canonical families and aliases), for error messages and docs."""
    return sorted(set(_FAMILIES) | set(_ALIASES))


def _format_param(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and value >= 1 else repr(float(value))


@dataclass(frozen=True)
class Objective:
    """An order-statistic objective ``E[sum_j alpha_j R_(j:k)]``.

    Build it with :meth:`parse` (spec strings) or :meth:`from_weights` (a numeric alpha vector).
    An objective without ``k`` is *unbound*: it names a family (``cvar0.2``) whose weights depend on
    ``k``; :meth:`bind` fixes ``k``. Objectives are immutable and hashable (they key the weight caches).

    :param name: canonical family (``"cvar"``, ``"top"``, ...) or ``"alpha"`` for a numeric vector.
    :param param: the family's parameter (level, probability or count), or ``None``.
    :param k: order-statistic size, or ``None`` while unbound.
    """

    name: str
    param: float | None = None
    k: int | None = None
    _alpha: tuple[float, ...] | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def parse(cls, spec: ObjectiveLike, k: int | None = None) -> Objective:
        """Parse a spec string (or pass through an ``Objective`` / numeric alpha) and bind ``k`` if given.

        :param spec: e.g. ``"cvar0.2@128"``, ``"top2@4"``, ``"TopM:2"``, ``"quantile0.1"``, ``"alpha[0.5,0,0.5]"``,
            an existing :class:`Objective`, or a low-to-high numeric alpha vector.
        :param k: order-statistic size when the spec has no ``@K``. It must agree with ``@K`` if both are given.
        :raises ValueError: unknown name (the message lists valid names and the closest one), malformed
            parameter, or ``k`` incompatible with the family (e.g. ``trim3@6`` needs 2m < k).
        """
        if isinstance(spec, Objective):
            obj = spec
        elif isinstance(spec, str):
            obj = cls._parse_string(spec)
        else:
            obj = cls.from_weights(spec)
        if k is not None:
            if obj.k is not None and obj.k != int(k) and obj.name != "mean":
                raise ValueError(f"objective {str(obj)!r} fixes k={obj.k} but k={k} was also passed")
            if obj.k is None:
                obj = obj.bind(k)
        return obj

    @classmethod
    def from_weights(cls, alpha: Sequence[float] | np.ndarray) -> Objective:
        """An objective from a numeric low-to-high rank-weight vector (its length is ``k``)."""
        arr = np.asarray(alpha, dtype=np.float64)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"alpha must be a non-empty 1-D vector of rank weights, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("alpha contains NaN or inf")
        return cls("alpha", None, int(arr.size), tuple(float(a) for a in arr))

    @classmethod
    def _parse_string(cls, spec: str) -> Objective:
        text = "".join(spec.split()).lower()
        if not text:
            raise ValueError(f"empty objective spec; valid names: {', '.join(valid_names())}")
        match = _ALPHA_RE.match(text)
        if match:
            try:
                values = [float(v) for v in match["values"].split(",") if v]
            except ValueError:
                raise ValueError(f"malformed alpha vector in objective spec {spec!r}") from None
            obj = cls.from_weights(values)
            if match["k"] is not None and int(match["k"]) != obj.k:
                raise ValueError(f"objective spec {spec!r}: alpha has {obj.k} entries but @K says {match['k']}")
            return obj
        match = _SPEC_RE.match(text)
        if not match:
            raise ValueError(
                f"malformed objective spec {spec!r}: expected NAME[PARAM][@K] such as 'cvar0.2@128', 'top2@4', "
                f"'median' or 'alpha[0.5,0,0.5]'"
            )
        raw_name = match["name"].replace("_", "")
        name = _ALIASES.get(raw_name, raw_name)
        if name not in _FAMILIES:
            close = difflib.get_close_matches(raw_name, valid_names(), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"unknown objective {match['name']!r} in spec {spec!r}.{hint} Valid names: {', '.join(valid_names())}"
            )
        family = _FAMILIES[name]
        param: float | None = None
        if family.kind is None:
            if match["param"] is not None:
                raise ValueError(f"objective {name!r} takes no parameter, got {spec!r}")
        else:
            if match["param"] is None:
                example = {"level": "0.2", "prob": "0.1", "count": "2"}[family.kind]
                raise ValueError(f"objective {name!r} needs a parameter, e.g. '{name}{example}'; got {spec!r}")
            param = float(match["param"])
            if family.kind == "level" and not 0.0 < param <= 1.0:
                raise ValueError(f"{name} level must be in (0, 1], got {param} in {spec!r}")
            if family.kind == "prob" and not 0.0 <= param <= 1.0:
                raise ValueError(f"{name} probability must be in [0, 1], got {param} in {spec!r}")
            if family.kind == "count" and (not param.is_integer() or param < 1):
                raise ValueError(f"{name} count must be a positive integer, got {match['param']} in {spec!r}")
        obj = cls(name, param)
        if name == "mean":
            if match["k"] is not None and int(match["k"]) != 1:
                raise ValueError(
                    f"'mean' is the k = 1 objective; mean@{match['k']} would be the same gradient in expectation — "
                    f"use 'mean' (or 'top{match['k']}@{match['k']}' for that exact estimator)"
                )
            return obj.bind(1)
        return obj.bind(int(match["k"])) if match["k"] is not None else obj

    def bind(self, k: int) -> Objective:
        """Return this objective with order-statistic size ``k`` (``mean`` always has k = 1)."""
        if self.name == "mean":
            return Objective("mean", None, 1, (1.0,))
        if self.name == "alpha":
            if int(k) != self.k:
                raise ValueError(f"numeric alpha has k={self.k} entries; cannot bind k={k}")
            return self
        if isinstance(k, bool) or int(k) != k:
            raise ValueError(f"k must be an integer, got {k!r}")
        k = int(k)
        family = _FAMILIES[self.name]
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if k < family.min_k(self.param or 0.0):
            raise ValueError(f"objective {self.name}{_format_param(self.param)}@{k} needs {family.needs} (k={k})")
        alpha = family.build(self.param or 0.0, k)
        return Objective(self.name, self.param, k, tuple(float(a) for a in alpha))

    # ------------------------------------------------------------------ accessors
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

    def __str__(self) -> str:
        if self.name == "alpha":
            return "alpha[" + ",".join(repr(a) for a in self._alpha or ()) + "]"
        text = self.name + _format_param(self.param)
        if self.k is not None and self.name != "mean":
            text += f"@{self.k}"
        return text


def resolve_objective(objective: ObjectiveLike, k: int | None = None) -> Objective:
    """Parse ``objective`` and make sure it is bound (raise a clear error if no ``k`` is known)."""
    obj = Objective.parse(objective, k)
    if not obj.is_bound:
        raise ValueError(f"objective {str(obj)!r} needs k: write '{obj}@K' or pass k=")
    return obj
