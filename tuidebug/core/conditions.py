"""Watchpoint conditions: MindInsight's catalogue (spec §3.1) and MindSpore's check math (§3.5).

Two halves live here:

* The catalogue — `CONDITIONS`, 17 `ConditionSpec`s with their `ParamSpec`s, exactly as
  MindInsight r2.3 declares them (ids, abbreviations, wire numbers, parameter order, ranges).
* The engine — `evaluate(tensor, requests, previous)`, which checks any number of wire-level
  `CheckRequest`s (condition number + full parameter list, as a SetCMD carries them) against
  one tensor in a single pass, reproducing `tensor_summary.cc`: the same statistics over the
  float64 conversion of every element, inclusive range bounds, error bits 1/2/4, parameters
  evaluated only without error bits, a NaN statistic leaving its parameter untouched.

The pass runs over cache-sized blocks of the flattened tensor (C order), so its extra memory
is a few small float64 buffers whatever the tensor size (a memory-mapped `.npy` is read once,
block by block), and it computes only the statistics the requests read.

Where the result cannot differ from MindSpore's it takes cheaper routes: min/max, zero and
range counts on the raw dtype when that is exact (float32 bounds rounded inwards, integer
bounds to integers); a block's max/min settling a range count or Σ|x| without a pass; sums
per block merged with `math.fsum` instead of MindSpore's running means (they agree to
rounding, ~1e-16 relative); NaN/Inf presence instead of counts (only presence is read);
the standard deviation only when a legacy SD condition asks for it. Deliberate differences:

* IS_OVERFLOW (2) never hits here: MindSpore decides it from Ascend overflow files.
* A previous tensor is converted from its own dtype (MindSpore reinterprets its bytes as the
  current dtype, which only matters if the two dtypes differ).
* HAS_NAN / HAS_INF / GENERAL_OVERFLOW clear the error bits and then evaluate any parameters
  they carry (MindInsight never sends any); on a tensor with NaN/Inf their statistics follow
  plain IEEE arithmetic rather than the artefacts of MindSpore's running updates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import partial
from typing import Literal

import numpy as np

from tuidebug.core.graph import Category

try:  # ml_dtypes is a declared dependency; the guard only keeps core importable without it
    import ml_dtypes

    _BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    _BFLOAT16 = None


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
_LEGACY_STAT: dict[int, str] = {
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
_LEGACY_GT = frozenset({_CT.MAX_GT, _CT.MIN_GT, _CT.MAX_MIN_GT, _CT.MEAN_GT, _CT.SD_GT})
_LEGACY_LT = frozenset({_CT.MAX_LT, _CT.MIN_LT, _CT.MAX_MIN_LT, _CT.MEAN_LT, _CT.SD_LT})
_CHANGE_TYPES = frozenset({_CT.CHANGE_TOO_LARGE, _CT.CHANGE_TOO_SMALL, _CT.NOT_CHANGED})
# these clear the NaN/Inf error bits, so their parameters are evaluated even on such tensors
_CLEARS_ERRORS = frozenset({_CT.HAS_NAN, _CT.HAS_INF, _CT.GENERAL_OVERFLOW})

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
        return suffix if suffix in _COMPARE else ""

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


_COMPARE = {
    "gt": lambda a, b: a > b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
    "le": lambda a, b: a <= b,
}

# ------------------------------------------------------------------------------ the engine
# Elements per block. Small enough that the few float64 scratch buffers (≤ 4 x 256 KiB)
# stay in the L2 cache, which matters more for speed than the per-call numpy overhead; any
# tensor size costs only these buffers (the spec's "≤ 64 MB of float64 temporaries").
CHUNK_ELEMENTS = 1 << 15

ERROR_NAN_BIT = 1
ERROR_INF_BIT = 2
ERROR_NO_PREV_BIT = 4


def supported_dtype(dtype: np.dtype) -> bool:
    """MindSpore checks bool, (u)int8–64, float16/32/64 and bfloat16; others get no result."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return True
    if dtype.kind == "f":
        return dtype.itemsize in (2, 4, 8)
    return _BFLOAT16 is not None and dtype == _BFLOAT16


def _param_at(req: CheckRequest, index: int) -> Param | None:
    """MindSpore reads some parameters by position; a short list reads as disabled."""
    if index < len(req.params):
        p = req.params[index]
        return None if p.disabled else p
    return None


def _range_key(req: CheckRequest) -> tuple[float, float] | None:
    start, end = _param_at(req, 0), _param_at(req, 1)
    if start is None and end is None:
        return None  # MindSpore keeps no range counter: the percentage is NaN
    return (
        float(start.value) if start is not None else -_INF,
        float(end.value) if end is not None else _INF,
    )


def _close_key(req: CheckRequest) -> tuple[float, float]:
    rtol, atol = _param_at(req, 0), _param_at(req, 1)
    return (
        float(rtol.value) if rtol is not None else DEFAULT_RTOL,
        float(atol.value) if atol is not None else DEFAULT_ATOL,
    )


def _enabled_stats(req: CheckRequest) -> set[str]:
    names = set()
    for p in req.params:
        if p.disabled:
            continue
        if p.name == "param":
            names.add(_LEGACY_STAT.get(req.condition, ""))
        elif "_" in p.name:
            names.add(p.name.rsplit("_", 1)[0])
    return names


@dataclass
class _Plan:
    """Which statistics the requests need (spec §3.5 'Computed when')."""

    extrema: bool = False
    zeros: bool = False
    mean: bool = False
    sd: bool = False  # only legacy SD_GT/SD_LT read it; MindSpore's Welford pass makes both
    abs_sum: bool = False
    ranges: list[tuple[float, float]] = field(default_factory=list)
    ratio: bool = False
    closes: list[tuple[float, float]] = field(default_factory=list)
    # keep gathering statistics after NaN/Inf shows up (only if some request evaluates
    # parameters despite NaN/Inf: HAS_NAN, HAS_INF or GENERAL_OVERFLOW *with* parameters)
    through_errors: bool = False

    @property
    def moments(self) -> bool:
        """Mean (and standard deviation) wanted; kept for the torch twin of this engine."""
        return self.mean

    @property
    def needs_f64(self) -> bool:
        return self.mean or self.abs_sum or self.ratio or bool(self.closes)

    @property
    def needs_params(self) -> bool:
        return (
            self.extrema
            or self.zeros
            or self.needs_f64
            or bool(self.ranges)
            or bool(self.closes)
            or self.ratio
        )


def _plan(requests: Sequence[CheckRequest], has_prev: bool) -> _Plan:
    plan = _Plan()
    for req in requests:
        cond = req.condition
        stats = _enabled_stats(req)
        if stats & {"max", "min", "max_min"}:
            plan.extrema = True
        if "zero_percentage" in stats:
            plan.zeros = True
        first, fourth = _param_at(req, 0), _param_at(req, 3)
        if (
            cond in (_CT.MEAN_GT, _CT.MEAN_LT, _CT.SD_GT, _CT.SD_LT)
            or (cond in (_CT.TOO_LARGE, _CT.TOO_SMALL) and fourth is not None)
            or stats & {"mean", "sd"}
        ):
            plan.mean = True
            plan.sd = plan.sd or "sd" in stats
        if (cond in (_CT.TOO_LARGE, _CT.TOO_SMALL) and first is not None) or "abs_mean" in stats:
            plan.abs_sum = True
        if cond == _CT.RANGE and "range_percentage" in stats:
            key = _range_key(req)
            if key is not None and key not in plan.ranges:
                plan.ranges.append(key)
        if has_prev and cond in (_CT.CHANGE_TOO_LARGE, _CT.CHANGE_TOO_SMALL):
            plan.ratio = plan.ratio or "abs_mean_update_ratio" in stats
        if has_prev and cond == _CT.NOT_CHANGED:
            key = _close_key(req)
            if key not in plan.closes:
                plan.closes.append(key)
        if cond in _CLEARS_ERRORS and stats:
            plan.through_errors = True
    return plan


@dataclass
class _Stats:
    n: int
    has_nan: bool = False
    has_inf: bool = False
    max: float = -np.finfo(np.float64).max  # MindSpore starts from the lowest double
    min: float = np.finfo(np.float64).max
    zero_count: int = 0
    mean: float = math.nan
    sd: float = math.nan
    abs_mean: float = math.nan
    range_percentage: dict[tuple[float, float], float] = field(default_factory=dict)
    ratio: float = math.nan
    all_close: dict[tuple[float, float], bool] = field(default_factory=dict)


def _flat(a: np.ndarray) -> tuple[np.ndarray, bool]:
    """A 1-D C-order view when possible (no copy, memmaps stay lazy), else the array itself
    to be sliced through `.flat` one block at a time."""
    a = np.asarray(a)
    if a.flags.c_contiguous:
        return a.reshape(-1), True
    return a, False


def _block(a: np.ndarray, contiguous: bool, start: int, stop: int) -> np.ndarray:
    return a[start:stop] if contiguous else a.flat[start:stop]


def _native_bounds(
    dtype: np.dtype, lo: float, hi: float
) -> tuple[np.generic | float | None, np.generic | float | None, bool]:
    """Bounds for comparing raw elements of `dtype` so that the result equals comparing the
    float64 conversions against (lo, hi). Returns (lo', hi', empty); None = no constraint."""
    if dtype == np.float64:
        return lo, hi, lo > hi
    if dtype == np.float32:
        # x32 >= lo  <=>  x32 >= (smallest float32 >= lo), and the same from above for hi
        with np.errstate(over="ignore"):
            lo32, hi32 = np.float32(lo), np.float32(hi)
        if float(lo32) < lo:
            lo32 = np.nextafter(lo32, np.float32(_INF))
        if float(hi32) > hi:
            hi32 = np.nextafter(hi32, np.float32(-_INF))
        return lo32, hi32, lo32 > hi32
    # integers up to 32 bits (bool arrives as uint8): float64 holds them exactly
    info = np.iinfo(dtype)
    lo_i = math.ceil(lo) if math.isfinite(lo) else (info.min if lo < 0 else info.max + 1)
    hi_i = math.floor(hi) if math.isfinite(hi) else (info.max if hi > 0 else info.min - 1)
    if lo_i > hi_i or lo_i > info.max or hi_i < info.min:
        return None, None, True
    typ = dtype.type
    return (
        typ(lo_i) if lo_i > info.min else None,
        typ(hi_i) if hi_i < info.max else None,
        False,
    )


class _Gatherer:
    """One pass over the tensor (and its previous value) collecting what the plan asks for."""

    def __init__(self, x: np.ndarray, prev: np.ndarray | None, plan: _Plan, chunk: int) -> None:
        self.plan = plan
        self.chunk = max(1, int(chunk))
        self.x, self.x_contig = _flat(x)
        self.n = int(x.size)
        dtype = x.dtype
        if dtype == np.bool_:
            # bool as uint8: same 0/1 values, and numpy's integer kernels apply
            self.x = self.x.view(np.uint8)
            dtype = np.dtype(np.uint8)
        self.is_float = dtype.kind == "f" or dtype == _BFLOAT16
        # native: compare / reduce the raw elements (exact, cheaper than float64)
        self.native = dtype in (np.float32, np.float64) or (
            dtype.kind in "iu" and dtype.itemsize <= 4
        )
        self.x_is_f64 = dtype == np.float64
        self.dtype = dtype
        self.prev: np.ndarray | None = None
        self.prev_contig = True
        self.prev_dtype = np.dtype(np.float64)
        if prev is not None and plan.needs_params and (plan.ratio or plan.closes):
            pv = prev.view(np.uint8) if prev.dtype == np.bool_ else prev
            self.prev, self.prev_contig = _flat(pv)
            self.prev_dtype = pv.dtype
        self.bounds = [
            _native_bounds(dtype, lo, hi) if self.native else (lo, hi, lo > hi)
            for lo, hi in plan.ranges
        ]

    def run(self) -> _Stats:
        plan, n, chunk = self.plan, self.n, self.chunk
        st = _Stats(n)
        f64 = np.float64
        b = min(chunk, n)
        use_prev = self.prev is not None
        convert_x = not self.x_is_f64 and (plan.needs_f64 or not self.native)
        convert_prev = use_prev and self.prev_dtype != f64

        def buf(needed: bool, dtype: type = f64) -> np.ndarray:
            # unused scratch stays empty so that every name is an array (no Optional juggling)
            return np.empty(b if needed else 0, dtype)

        xd = buf(convert_x)  # the block as float64
        # scratch rows: [0] |x|, x - mean, then |x - p|; [1] p, then |p|; [2] atol + rtol·|p|.
        # Few buffers keep the working set in L2, and rows 0-1 take abs and sums in one call.
        rows = 3 if use_prev and plan.closes else 2 if use_prev else 1 if plan.needs_f64 else 0
        scratch = np.empty((rows, b), f64)
        bb = buf(plan.zeros or bool(plan.ranges) or bool(plan.closes), np.bool_)
        count = np.count_nonzero
        total = partial(np.einsum, "i->")  # a plain SIMD sum; np.dot would wake BLAS threads

        gather = plan.needs_params  # still collecting parameter statistics
        block_extrema = plan.extrema or plan.zeros or bool(plan.ranges) or plan.abs_sum
        bmax = bmin = math.nan  # per-block max/min; NaN = unknown (disables the shortcuts)
        sums_x: list[float] = []
        sums_abs: list[float] = []
        sums_diff: list[float] = []
        sums_prev: list[float] = []
        m_n, m_mean, m_m2 = 0, 0.0, 0.0  # Chan et al.'s parallel merge of (count, mean, M2)
        in_range = [0] * len(plan.ranges)
        closes = dict.fromkeys(plan.closes, True)
        mx, mn = st.max, st.min

        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            m = stop - start
            xn = _block(self.x, self.x_contig, start, stop)
            if self.native:
                xv = xn
            else:  # float16, bfloat16, 64-bit integers: everything on the float64 conversion
                xv = xd[:m]
                np.copyto(xv, xn, casting="unsafe")
            if self.is_float:
                bmax, bmin = xv.max(), xv.min()  # NaN propagates through max/min
                block_nan = bool(bmax != bmax)
                if block_nan or bmax == _INF or bmin == -_INF:
                    st.has_nan |= block_nan
                    st.has_inf |= bool(np.isinf(xv).any()) if block_nan else True
                    if not plan.through_errors:
                        # no parameter will be evaluated: only the other error bit matters now
                        gather = False
                        if st.has_nan and st.has_inf:
                            break
                if not gather:
                    continue
                if plan.extrema and block_nan:  # NaN never replaces MindSpore's running max
                    fmax, fmin = np.fmax.reduce(xv), np.fmin.reduce(xv)
                    if fmax == fmax:
                        mx, mn = max(mx, float(fmax)), min(mn, float(fmin))
                elif plan.extrema:
                    mx, mn = max(mx, float(bmax)), min(mn, float(bmin))
            elif not gather:
                break
            elif block_extrema:
                bmax, bmin = xv.max(), xv.min()
                if plan.extrema:
                    mx, mn = max(mx, float(bmax)), min(mn, float(bmin))
            # Below, the block's max/min skip whole passes when they settle a statistic
            # (a block of one sign, a block inside or outside a range). With NaN in the
            # block both are NaN, every shortcut test is false and the full pass runs.

            if plan.zeros and not (bmin > 0 or bmax < 0):
                st.zero_count += int(count(np.equal(xv, 0, out=bb[:m])))
            for i, (lo, hi, empty) in enumerate(self.bounds):
                if empty:
                    continue
                above_lo = lo is None or bmin >= lo
                below_hi = hi is None or bmax <= hi
                if above_lo and below_hi:
                    in_range[i] += m
                elif (lo is not None and bmax < lo) or (hi is not None and bmin > hi):
                    pass
                elif lo is None:
                    in_range[i] += int(count(np.less_equal(xv, hi, out=bb[:m])))
                else:
                    inside = int(count(np.greater_equal(xv, lo, out=bb[:m])))
                    if hi is not None:  # {x > hi} lies inside {x >= lo} because lo <= hi
                        inside -= int(count(np.greater(xv, hi, out=bb[:m])))
                    in_range[i] += inside

            if not (plan.mean or plan.abs_sum or use_prev):
                continue
            one_signed = bool(bmin >= 0 or bmax <= 0)
            if (
                self.native
                and not self.x_is_f64
                and not use_prev
                and not plan.sd
                and (one_signed or not plan.abs_sum)
            ):
                # only sums wanted: let einsum cast as it goes, no float64 copy of the block
                s1 = float(np.einsum("i->", xn, dtype=f64))
                if plan.mean:
                    sums_x.append(s1)
                if plan.abs_sum:
                    sums_abs.append(s1 if bmin >= 0 else -s1)
                continue
            if self.x_is_f64 or not self.native:
                xf = xv
            else:
                xf = xd[:m]
                np.copyto(xf, xn, casting="unsafe")
            s1 = float(total(xf)) if plan.mean or (plan.abs_sum and one_signed) else 0.0
            if plan.mean:
                sums_x.append(s1)
                if plan.sd:
                    bmean = s1 / m
                    s2 = float(np.einsum("i,i->", xf, xf))
                    m2 = s2 - s1 * bmean
                    # s2 - s1²/m cancels when |mean| >> sd: then a centred second pass
                    if not (m2 >= 0.0 and s2 <= 16.0 * m2):
                        d = np.subtract(xf, bmean, out=scratch[0, :m])
                        m2 = float(np.einsum("i,i->", d, d))
                    if m_n == 0:
                        m_n, m_mean, m_m2 = m, bmean, m2
                    else:
                        tot = m_n + m
                        delta = bmean - m_mean
                        m_mean += delta * m / tot
                        m_m2 += m2 + delta * delta * (m_n * m / tot)
                        m_n = tot
            if plan.abs_sum:
                if one_signed:  # Σ|x| = ±Σx
                    sums_abs.append(s1 if bmin >= 0 else -s1)
                else:
                    sums_abs.append(float(total(np.abs(xf, out=scratch[0, :m]))))
            if use_prev:
                pn = _block(self.prev, self.prev_contig, start, stop)  # type: ignore[arg-type]
                pair = scratch[:2, :m]
                diff, ap = pair
                if convert_prev:
                    np.copyto(ap, pn, casting="unsafe")
                    np.subtract(xf, ap, out=diff)
                    np.abs(pair, out=pair)
                else:
                    np.subtract(xf, pn, out=diff)
                    np.abs(diff, out=diff)
                    np.abs(pn, out=ap)
                s_diff = -1.0
                if plan.ratio:
                    s_diff, s_prev = (float(v) for v in np.einsum("ij->i", pair))
                    sums_diff.append(s_diff)
                    sums_prev.append(s_prev)
                elif any(closes.values()):
                    s_diff = float(total(diff))
                for key, alive in closes.items():
                    if alive:
                        rtol, atol = key
                        if s_diff == 0.0 and rtol >= 0.0 and atol >= 0.0:
                            # unchanged block: every |x - p| is 0 and p is finite, so the
                            # tolerance is >= 0 and the comparison holds for every element
                            continue
                        # |x - p| <= atol + rtol·|p|, in MindSpore's operation order
                        tol = np.multiply(ap, rtol, out=scratch[2, :m])
                        np.add(atol, tol, out=tol)
                        closes[key] = bool(np.less_equal(diff, tol, out=bb[:m]).all())
                if not plan.ratio and not any(closes.values()):
                    use_prev = False  # nothing left to learn from the previous tensor

        st.max, st.min = mx, mn
        if plan.mean and sums_x:
            st.mean = math.fsum(sums_x) / n
        if plan.sd and m_n:
            st.sd = math.sqrt(m_m2 / (m_n - 1)) if m_n > 1 else 0.0
        if plan.abs_sum and sums_abs:
            st.abs_mean = math.fsum(sums_abs) / n
        for key, cnt in zip(plan.ranges, in_range, strict=True):
            st.range_percentage[key] = 100.0 * cnt / n
        if plan.ratio and sums_diff:
            mean_diff = math.fsum(sums_diff) / n
            st.ratio = mean_diff / (math.fsum(sums_prev) / n + UPDATE_RATIO_EPSILON)
        st.all_close = closes
        return st


def _statistic(name: str, req: CheckRequest, st: _Stats, has_prev: bool) -> float:
    """MindSpore's `StatLookup`: NaN when the statistic is unknown or was not computed."""
    if name == "param":
        name = _LEGACY_STAT.get(req.condition, "")
    elif "_" in name:
        name = name.rsplit("_", 1)[0]
    else:
        return math.nan
    if name == "max":
        return st.max
    if name == "min":
        return st.min
    if name == "max_min":
        return st.max - st.min
    if name == "mean":
        return st.mean
    if name == "sd":
        return st.sd
    if name == "abs_mean":
        return st.abs_mean
    if name == "abs_mean_update_ratio":
        return st.ratio if has_prev else math.nan
    if name == "range_percentage":
        key = _range_key(req) if req.condition == _CT.RANGE else None
        return st.range_percentage.get(key, math.nan) if key is not None else math.nan
    if name == "zero_percentage":
        return st.zero_count * 100.0 / st.n if st.n else 0.0
    return math.nan


def _untouched(req: CheckRequest) -> tuple[ParamResult, ...]:
    return tuple(ParamResult(p.name, p.value, p.disabled) for p in req.params)


def _decide(req: CheckRequest, st: _Stats, prev: np.ndarray | None) -> CheckResult:
    """MindSpore's `IsWatchpointHit` (spec §3.5, decision procedure)."""
    cond = req.condition
    if cond == _CT.IS_OVERFLOW:
        # decided from Ascend's overflow records by the caller, never from values; MindSpore
        # does not run the tensor summary for it, so there are no error bits either
        return CheckResult(False, 0, _untouched(req))
    error = (ERROR_NAN_BIT if st.has_nan else 0) | (ERROR_INF_BIT if st.has_inf else 0)
    hit = False
    if cond == _CT.HAS_NAN:
        error, hit = 0, st.has_nan
    elif cond == _CT.HAS_INF:
        error, hit = 0, st.has_inf
    elif cond == _CT.GENERAL_OVERFLOW:
        error, hit = 0, st.has_nan or st.has_inf
    elif cond == _CT.NOT_CHANGED and prev is not None and not error:
        # a previous tensor of another size reads as NaN, which is never "close"
        hit = prev.size == st.n and st.all_close.get(_close_key(req), False)
    elif cond in _CHANGE_TYPES and prev is None:
        error |= ERROR_NO_PREV_BIT
    if error:
        return CheckResult(hit, error, _untouched(req))
    inequality = "gt" if cond in _LEGACY_GT else "lt" if cond in _LEGACY_LT else ""
    results = []
    for p in req.params:
        if p.disabled:
            results.append(ParamResult(p.name, p.value, True))
            continue
        actual = _statistic(p.name, req, st, prev is not None)
        if math.isnan(actual):
            results.append(ParamResult(p.name, p.value, False))
            continue
        op = inequality or p.name.rsplit("_", 1)[-1]
        compare = _COMPARE.get(op)
        p_hit = bool(compare(actual, p.value)) if compare is not None else False
        results.append(ParamResult(p.name, p.value, False, p_hit, float(actual)))
        hit = hit or p_hit
    return CheckResult(hit, 0, tuple(results))


def evaluate(
    tensor: np.ndarray,
    requests: Sequence[CheckRequest],
    previous: np.ndarray | None = None,
    *,
    chunk_elements: int | None = None,
) -> list[CheckResult]:
    """Check every request against `tensor` in one pass; one `CheckResult` per request.

    `previous` is the same tensor's value at the previous step (change conditions 18–20);
    None means there is none (error bit 4). Elements are taken in C order and converted to
    float64 as MindSpore does. An empty tensor or an unsupported dtype gives results that
    are not reported (MindSpore skips such tensors). IS_OVERFLOW (2) never hits here: it
    is decided from the Ascend overflow records by the caller.
    """
    tensor = np.asarray(tensor)
    if tensor.size == 0 or not supported_dtype(tensor.dtype):
        return [CheckResult(False, 0, _untouched(r)) for r in requests]
    if previous is not None:
        previous = np.asarray(previous)
        if not supported_dtype(previous.dtype):
            previous = np.full(1, np.nan)  # unreadable: behaves like a mismatched size
    has_prev = previous is not None
    plan = _plan(requests, has_prev)
    prev_for_stats = previous if has_prev and previous.size == tensor.size else None
    gatherer = _Gatherer(
        tensor, prev_for_stats, plan, chunk_elements if chunk_elements else CHUNK_ELEMENTS
    )
    st = gatherer.run()
    if has_prev and prev_for_stats is None:
        st.ratio = math.nan
        st.all_close = dict.fromkeys(plan.closes, False)
    return [_decide(r, st, previous) for r in requests]
