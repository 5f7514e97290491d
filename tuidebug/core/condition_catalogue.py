"""The watchpoint condition catalogue (spec §3.1) and the check's wire-level types (§3.4).

Everything about a condition except computing it: `CONDITIONS`, MindInsight r2.3's 17
`ConditionSpec`s with their `ParamSpec`s (ids, abbreviations, wire numbers, parameter order,
ranges, defaults), the wire condition numbers (`ConditionType`), which statistic and
comparison each parameter selects (the part of MindSpore's check math (§3.5) that is fixed
per condition), and the `CheckRequest` / `CheckResult` a check takes and gives.

Light on purpose: no numpy, no threads, no numba. A picker, a spec parser, a hit list or
the API's condition classes import this; only code that checks tensor values imports the
engine (`core.scan_engine.evaluate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from tuidebug.core.graph import Category


class WatchpointError(ValueError):
    """A watchpoint the user asked for cannot be built; the message is one sentence."""


class UnknownConditionError(WatchpointError):
    """A condition id or abbreviation that is not in the catalogue."""


# --------------------------------------------------------------------------- wire numbers
class ConditionType(IntEnum):
    """MindSpore's `DebugServices::CONDITION_TYPE` (spec §3.4): the wire condition number."""

    HAS_NAN = 0
    HAS_INF = 1
    IS_OVERFLOW = 2
    MAX_GT = 3
    MAX_LT = 4
    MIN_GT = 5
    MIN_LT = 6
    MAX_MIN_GT = 7
    MAX_MIN_LT = 8
    MEAN_GT = 9
    MEAN_LT = 10
    SD_GT = 11
    SD_LT = 12
    GENERAL_OVERFLOW = 13
    INIT = 14
    TOO_LARGE = 15
    TOO_SMALL = 16
    ALL_ZERO = 17
    CHANGE_TOO_LARGE = 18
    CHANGE_TOO_SMALL = 19
    NOT_CHANGED = 20
    RANGE = 21


_CT = ConditionType
# legacy single-`param` conditions: which statistic they read and which way they compare
LEGACY_STAT: dict[int, str] = {
    _CT.MAX_GT: "max",
    _CT.MAX_LT: "max",
    _CT.MIN_GT: "min",
    _CT.MIN_LT: "min",
    _CT.MAX_MIN_GT: "max_min",
    _CT.MAX_MIN_LT: "max_min",
    _CT.MEAN_GT: "mean",
    _CT.MEAN_LT: "mean",
    _CT.SD_GT: "sd",
    _CT.SD_LT: "sd",
}
LEGACY_GT = frozenset({_CT.MAX_GT, _CT.MIN_GT, _CT.MAX_MIN_GT, _CT.MEAN_GT, _CT.SD_GT})
LEGACY_LT = frozenset({_CT.MAX_LT, _CT.MIN_LT, _CT.MAX_MIN_LT, _CT.MEAN_LT, _CT.SD_LT})
# the conditions that compare with the previous iteration
CHANGE_CONDITIONS = frozenset({_CT.CHANGE_TOO_LARGE, _CT.CHANGE_TOO_SMALL, _CT.NOT_CHANGED})
# these clear the NaN/Inf error bits, so their parameters are evaluated even on such tensors
CLEARS_ERRORS = frozenset({_CT.HAS_NAN, _CT.HAS_INF, _CT.GENERAL_OVERFLOW})

# a parameter's name suffix selects its comparison (MindSpore's `IsWatchpointHit`)
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
    "le": lambda a, b: a <= b,
}

# MindSpore's update ratio uses this constant, not the `epsilon` parameter (spec §3.5)
UPDATE_RATIO_EPSILON = 1e-9
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8


# ------------------------------------------------------------------------------ catalogue
def _fmt_bound(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a condition, with MindInsight's definition (spec §3.1)."""

    name: str
    default: float | None
    lo: float | None
    hi: float | None
    lo_inclusive: bool
    hi_inclusive: bool
    support_disable: bool
    visible: bool
    kind: Literal["check", "support"]
    requires: tuple[str, ...]
    needs_prev: bool
    is_bool: bool = False

    @property
    def statistic(self) -> str:
        """The statistic the engine compares: the name before the last `_`."""
        return self.name.rsplit("_", 1)[0] if "_" in self.name else ""

    @property
    def comparison(self) -> str:
        """`gt`, `lt`, `ge` or `le` (the name suffix), or "" for tolerances and bounds."""
        suffix = self.name.rsplit("_", 1)[-1]
        return suffix if suffix in COMPARISONS else ""

    @property
    def range_text(self) -> str:
        """The allowed values in words, e.g. `0 <= value <= 100`."""
        if self.is_bool:
            return "true or false"
        if self.lo is None and self.hi is None:
            return "any number"
        parts = []
        if self.lo is not None:
            parts.append(f"{_fmt_bound(self.lo)} {'<=' if self.lo_inclusive else '<'} ")
        parts.append("value")
        if self.hi is not None:
            parts.append(f" {'<=' if self.hi_inclusive else '<'} {_fmt_bound(self.hi)}")
        return "".join(parts)

    def check(self, value: float) -> str | None:
        """None when `value` is allowed, else one sentence naming the parameter and its range."""
        if self.is_bool:
            if value in (0.0, 1.0):
                return None
            return f"Parameter {self.name} must be true or false, got {value!r}."
        ok = not math.isnan(value)
        if ok and self.lo is not None:
            ok = value >= self.lo if self.lo_inclusive else value > self.lo
        if ok and self.hi is not None:
            ok = value <= self.hi if self.hi_inclusive else value < self.hi
        if ok:
            return None
        return f"Parameter {self.name} must satisfy {self.range_text}, got {value!r}."


@dataclass(frozen=True, repr=False)
class ConditionSpec:
    """One watchpoint condition of MindInsight's catalogue (spec §3.1)."""

    id: str
    abbr: str
    name: str
    target: Category
    proto: int
    params: tuple[ParamSpec, ...]
    ascend_only: bool = False

    @property
    def needs_prev(self) -> bool:
        """True for the change conditions, which compare with the previous step's value."""
        return any(p.needs_prev for p in self.params)

    @property
    def visible_params(self) -> tuple[ParamSpec, ...]:
        """The parameters a user sets (hidden ones are sent automatically)."""
        return tuple(p for p in self.params if p.visible)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        if not self.params:
            raise WatchpointError(f"{self.abbr} ({self.id}) takes no parameters.")
        valid = ", ".join(self.param_names)
        raise WatchpointError(
            f"Unknown parameter {name!r} for {self.abbr} ({self.id}); valid parameters: {valid}."
        )

    def __str__(self) -> str:
        return f"{self.abbr} ({self.id})"

    def __repr__(self) -> str:
        return f"ConditionSpec({self.abbr})"


_INF = math.inf


def _check(
    name: str,
    default: float | None = None,
    lo: float | None = -_INF,
    hi: float | None = _INF,
    lo_inclusive: bool = False,
    hi_inclusive: bool = False,
    *,
    requires: tuple[str, ...] = (),
    needs_prev: bool = False,
) -> ParamSpec:
    return ParamSpec(
        name, default, lo, hi, lo_inclusive, hi_inclusive, True, True, "check", requires, needs_prev
    )


def _hidden(name: str, default: float, *, needs_prev: bool, is_bool: bool = False) -> ParamSpec:
    """atol, equal_nan, epsilon: not disableable, not shown, always sent with their default."""
    return ParamSpec(
        name, default, None, None, True, True, False, False, "check", (), needs_prev, is_bool
    )


def _support(name: str) -> ParamSpec:
    return ParamSpec(name, None, -_INF, _INF, False, False, True, True, "support", (), False)


_BOUNDS = ("range_start_inclusive", "range_end_inclusive")
P_ZERO_PERCENTAGE_GE = _check("zero_percentage_ge", 100.0, 0.0, 100.0, True, True)
P_MAX_GT = _check("max_gt")
P_MAX_LT = _check("max_lt")
P_MIN_GT = _check("min_gt")
P_MIN_LT = _check("min_lt")
P_MEAN_GT = _check("mean_gt")
P_MEAN_LT = _check("mean_lt")
P_ABS_MEAN_GT = _check("abs_mean_gt", None, 0.0, _INF, True)
P_ABS_MEAN_LT = _check("abs_mean_lt", None, 0.0, _INF, True)
P_RTOL = _check("rtol", DEFAULT_RTOL, 0.0, _INF, True, needs_prev=True)
P_ATOL = _hidden("atol", DEFAULT_ATOL, needs_prev=True)
P_EQUAL_NAN = _hidden("equal_nan", 0.0, needs_prev=False, is_bool=True)
P_RATIO_GT = _check("abs_mean_update_ratio_gt", 1e-1, 0.0, _INF, True, needs_prev=True)
P_RATIO_LT = _check("abs_mean_update_ratio_lt", 1e-4, 0.0, _INF, True, needs_prev=True)
P_EPSILON = _hidden("epsilon", UPDATE_RATIO_EPSILON, needs_prev=False)
P_RANGE_START = _support("range_start_inclusive")
P_RANGE_END = _support("range_end_inclusive")
P_RANGE_PERCENTAGE_LT = _check(
    "range_percentage_lt", None, 0.0, 100.0, True, True, requires=_BOUNDS
)
P_RANGE_PERCENTAGE_GT = _check(
    "range_percentage_gt", None, 0.0, 100.0, True, True, requires=_BOUNDS
)
P_MAX_MIN_LT = _check("max_min_lt", None, 0.0, _INF, False)
P_MAX_MIN_GT = _check("max_min_gt", None, 0.0, _INF, True)

_TOO_LARGE = (P_ABS_MEAN_GT, P_MAX_GT, P_MIN_GT, P_MEAN_GT)
_TOO_SMALL = (P_ABS_MEAN_LT, P_MAX_LT, P_MIN_LT, P_MEAN_LT)
_RANGE = (
    P_RANGE_START,
    P_RANGE_END,
    P_RANGE_PERCENTAGE_LT,
    P_RANGE_PERCENTAGE_GT,
    P_MAX_MIN_LT,
    P_MAX_MIN_GT,
)
_W, _G, _A, _T = Category.WEIGHT, Category.GRADIENT, Category.ACTIVATION, Category.TENSOR

_CATALOGUE = (
    ConditionSpec(
        "weight_initialization",
        "WI",
        "Initial weight value",
        _W,
        _CT.INIT,
        (P_ZERO_PERCENTAGE_GE, P_MAX_GT, P_MIN_LT),
    ),
    ConditionSpec("weight_overflow", "WO", "Weight overflow", _W, _CT.GENERAL_OVERFLOW, ()),
    ConditionSpec(
        "weight_too_large", "WL", "Weight above threshold", _W, _CT.TOO_LARGE, _TOO_LARGE
    ),
    ConditionSpec(
        "weight_too_small", "WS", "Weight below threshold", _W, _CT.TOO_SMALL, _TOO_SMALL
    ),
    ConditionSpec(
        "gradient_vanishing", "GV", "Gradient disappearance", _G, _CT.TOO_SMALL, _TOO_SMALL
    ),
    ConditionSpec(
        "gradient_too_large", "GL", "Gradient above threshold", _G, _CT.TOO_LARGE, _TOO_LARGE
    ),
    ConditionSpec("gradient_exploding", "GE", "Gradient explosion", _G, _CT.GENERAL_OVERFLOW, ()),
    ConditionSpec("tensor_overflow", "TO", "Tensor overflow", _T, _CT.GENERAL_OVERFLOW, ()),
    ConditionSpec(
        "operator_overflow",
        "OO",
        "Operator overflow (Ascend only)",
        _T,
        _CT.IS_OVERFLOW,
        (),
        ascend_only=True,
    ),
    ConditionSpec(
        "tensor_too_large", "TL", "Tensor above threshold", _T, _CT.TOO_LARGE, _TOO_LARGE
    ),
    ConditionSpec(
        "tensor_too_small", "TS", "Tensor below threshold", _T, _CT.TOO_SMALL, _TOO_SMALL
    ),
    ConditionSpec(
        "tensor_all_zero",
        "TZ",
        "Whether tensor values are all 0",
        _T,
        _CT.ALL_ZERO,
        (P_ZERO_PERCENTAGE_GE,),
    ),
    ConditionSpec(
        "weight_not_changed",
        "WNC",
        "Unchanged weight",
        _W,
        _CT.NOT_CHANGED,
        (P_RTOL, P_ATOL, P_EQUAL_NAN),
    ),
    ConditionSpec(
        "weight_change_too_large",
        "WCL",
        "Weight change above threshold",
        _W,
        _CT.CHANGE_TOO_LARGE,
        (P_RATIO_GT, P_EPSILON),
    ),
    ConditionSpec(
        "weight_change_too_small",
        "WCS",
        "Weight change below threshold",
        _W,
        _CT.CHANGE_TOO_SMALL,
        (P_RATIO_LT, P_EPSILON),
    ),
    ConditionSpec("activation_range", "AR", "Activation value range", _A, _CT.RANGE, _RANGE),
    ConditionSpec("tensor_range", "TR", "Tensor value range", _T, _CT.RANGE, _RANGE),
)

CONDITIONS: dict[str, ConditionSpec] = {c.id: c for c in _CATALOGUE}
_BY_KEY: dict[str, ConditionSpec] = {
    **{c.id.lower(): c for c in _CATALOGUE},
    **{c.abbr.lower(): c for c in _CATALOGUE},
}


def get_condition(key: str | ConditionSpec) -> ConditionSpec:
    """The condition called `key`: its id (`tensor_too_large`) or abbreviation (`TL`), any case."""
    if isinstance(key, ConditionSpec):
        return key
    found = _BY_KEY.get(str(key).strip().lower())
    if found is None:
        abbrs = ", ".join(c.abbr for c in _CATALOGUE)
        raise UnknownConditionError(f"Unknown condition {key!r}; use one of {abbrs}.")
    return found


# the REST listing's collection order (spec §3.1, last paragraph)
_TARGET_ORDER = (Category.TENSOR, Category.WEIGHT, Category.ACTIVATION, Category.GRADIENT)


def condition_available(cond: ConditionSpec, backend: str | None, step: int | None) -> bool:
    """MindInsight's availability rules (spec §3.1): weight_initialization only at step 0,
    operator_overflow only on Ascend. None = that rule is not applied."""
    if step is not None and cond.proto == _CT.INIT and step != 0:
        return False
    return not (
        backend is not None
        and cond.ascend_only
        and not backend.strip().lower().startswith("ascend")
    )


def conditions_by_target(
    backend: str | None = None, step: int | None = None
) -> dict[Category, list[ConditionSpec]]:
    """Conditions grouped for a picker: tensor, weight, activation, gradient; each by id.
    With `backend` / `step`, only the conditions available there."""
    return {
        target: sorted(
            (c for c in _CATALOGUE if c.target is target and condition_available(c, backend, step)),
            key=lambda c: c.id,
        )
        for target in _TARGET_ORDER
    }


# ------------------------------------------------------------------------- wire-level types
@dataclass(frozen=True)
class Param:
    """A condition parameter as it travels in a SetCMD (`WatchCondition.Parameter`)."""

    name: str
    value: float = 0.0
    disabled: bool = True


@dataclass(frozen=True)
class ParamResult:
    """A parameter after the check. `actual` None = the engine left it untouched (disabled,
    not evaluated because of an error bit, or its statistic is NaN / not applicable); on the
    wire that is `actual_value = 0`."""

    name: str
    value: float
    disabled: bool
    hit: bool = False
    actual: float | None = None


@dataclass(frozen=True)
class CheckRequest:
    """One watchpoint to check: wire condition number and its full parameter list, in order."""

    condition: int
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class CheckResult:
    hit: bool
    error_code: int
    params: tuple[ParamResult, ...] = ()

    @property
    def reported(self) -> bool:
        """MindSpore sends a hit for a tensor when it hit or produced an error code."""
        return self.hit or self.error_code != 0


def untouched_params(req: CheckRequest) -> tuple[ParamResult, ...]:
    """The request's parameters echoed, none evaluated (for results decided without data)."""
    return tuple(ParamResult(p.name, p.value, p.disabled) for p in req.params)
