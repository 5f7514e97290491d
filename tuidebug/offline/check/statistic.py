"""Watchpoints checked from `statistic.csv` alone (a statistic-only dump, `saved_data:
"statistic"`, spec §5.1, §5.3): MindSpore's decision (spec §3.5) on the statistics a row
holds, or the one statistic that is missing to decide it exactly.

What a row decides (MindSpore's own statistic semantics, spec §3.7, `tensor_stat_dump.cc`):

* the error bits (NaN, ±Inf) and TensorOverflow / WeightOverflow / GradientExplosion: from
  `NaN Count` (`Nan Count` in the newer header) and `Negative/Positive Inf Count`. Every
  other condition needs them too: MindSpore evaluates no threshold on a tensor with NaN or
  ±Inf (it reports the error code instead), so without the counts the answer is unknown;
* `max_*`, `min_*`, `mean_*`: `Max Value`, `Min Value`, `Avg Value`. They are read only when
  the tensor has no NaN/Inf, where MindSpore's statistic and its watchpoint's agree; the
  value is the one the CSV holds (MindSpore writes it with C++'s default 6 significant
  digits, so a threshold within that rounding of the value may decide otherwise than the
  tensor would);
* `max_min_*` (TensorRange / ActivationRange): `Max Value` − `Min Value`;
* `zero_percentage_ge` (TensorAllZero, WeightInitialization): `Zero Count` and `Count`.

A foreign dump's row may give `non_finite_count` instead of the NaN/±Inf counts (NaN and Inf
not told apart: tfdbg's CURT_HEALTH flag); it decides everything the counts do but HasNaN and
HasInf, which stay refused.

Refused, with one sentence naming what is missing: `abs_mean_*` (the mean of |x| follows
from no column: max, min and mean leave it open), `range_percentage_*` (how many values lie
in a range), the legacy `sd_*`, and the change conditions (they compare element by element
with the previous step's values). "Negative/Positive Zero Count" mean < 0 / > 0 in MindSpore
and decide nothing here. Nothing here imports Textual.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    CLEARS_ERRORS,
    LEGACY_STAT,
    CheckRequest,
    CheckResult,
    ConditionType,
    untouched_params,
)
from tuidebug.core.scan_engine import decide_from_summary

StatValue = float | int | str | None

# the statistic a parameter reads (its name before the last `_`) → the statistic.csv
# columns it needs (their header names, `statistic_csv.STAT_COLUMNS` keys as values)
_COLUMNS_OF: dict[str, tuple[tuple[str, str], ...]] = {
    "max": (("max", "Max Value"),),
    "min": (("min", "Min Value"),),
    "mean": (("avg", "Avg Value"),),
    "max_min": (("max", "Max Value"), ("min", "Min Value")),
    "zero_percentage": (("zero_count", "Zero Count"), ("count", "Count")),
}
# what no column gives, in words for the refusal
_UNDERIVABLE: dict[str, str] = {
    "abs_mean": "the mean of absolute values (abs_mean), which no statistic.csv column holds",
    "range_percentage": (
        "the percentage of values in the range (range_percentage), which no statistic.csv "
        "column holds"
    ),
    "sd": "the standard deviation (sd), which no statistic.csv column holds",
    "abs_mean_update_ratio": (
        "the previous step's values (abs_mean_update_ratio), which a statistic-only dump "
        "does not hold"
    ),
}
_NAN = (("nan_count", "NaN Count"),)
_INF = (("neg_inf_count", "Negative Inf Count"), ("pos_inf_count", "Positive Inf Count"))

# MindInsight's names of the wire conditions (the API's condition classes)
CONDITION_NAMES: dict[int, str] = {
    ConditionType.HAS_NAN: "HasNaN",
    ConditionType.HAS_INF: "HasInf",
    ConditionType.IS_OVERFLOW: "OperatorOverflow",
    ConditionType.GENERAL_OVERFLOW: "TensorOverflow",
    ConditionType.INIT: "WeightInitialization",
    ConditionType.TOO_LARGE: "TensorTooLarge",
    ConditionType.TOO_SMALL: "TensorTooSmall",
    ConditionType.ALL_ZERO: "TensorAllZero",
    ConditionType.CHANGE_TOO_LARGE: "TensorChangeAboveThreshold",
    ConditionType.CHANGE_TOO_SMALL: "TensorChangeBelowThreshold",
    ConditionType.NOT_CHANGED: "TensorUnchanged",
    ConditionType.RANGE: "TensorRange",
}


@dataclass(frozen=True)
class Missing:
    """Why a request cannot be decided from a row: `what` names the missing statistic,
    `param` the parameter (or "" for the condition itself) that needs it."""

    what: str
    param: str = ""


def condition_label(req: CheckRequest) -> str:
    name = CONDITION_NAMES.get(req.condition)
    if name is None:
        try:
            name = ConditionType(req.condition).name
        except ValueError:
            name = f"condition {req.condition}"
    return name


def refusal_sentence(req: CheckRequest, missing: Missing) -> str:
    """The one sentence saying that a watchpoint was not checked on statistic-only data."""
    # named by condition and parameter, which every front end shows (ids are positions in
    # the API and the CLI, the user's numbers in the TUI): one sentence per such watchpoint
    what = condition_label(req) + (f" {missing.param}" if missing.param else "")
    return (
        f"The watchpoint {what} cannot be checked on statistic-only tensors (values not "
        f"dumped): it needs {missing.what}."
    )


def _number(stats: Mapping[str, StatValue], key: str) -> float | None:
    value = stats.get(key)
    if value is None or isinstance(value, str):
        return None
    return float(value)


def _need(stats: Mapping[str, StatValue], columns: tuple[tuple[str, str], ...]) -> str | None:
    """The header of the first column of `columns` the row lacks (or holds no number in)."""
    for key, header in columns:
        if _number(stats, key) is None:
            return f"the {header!r} column of statistic.csv"
    return None


def _param_stat(req: CheckRequest, name: str) -> str:
    if name == "param":
        return LEGACY_STAT.get(req.condition, "")
    return name.rsplit("_", 1)[0] if "_" in name else ""


def decide(req: CheckRequest, stats: Mapping[str, StatValue]) -> CheckResult | Missing:
    """MindSpore's result for `req` on a tensor known by its statistic.csv row (`stats`,
    `StatisticRow.stats`), or what is missing to decide it exactly."""
    cond = req.condition
    if cond == ConditionType.IS_OVERFLOW:
        # decided from Ascend's overflow records, never from values (as in the scan)
        return CheckResult(False, 0, untouched_params(req))
    if cond in CHANGE_CONDITIONS:
        return Missing(_UNDERIVABLE["abs_mean_update_ratio"])
    count = _number(stats, "count")
    needed = (
        _NAN
        if cond == ConditionType.HAS_NAN
        else _INF
        if cond == ConditionType.HAS_INF
        else _NAN + _INF
    )
    lacking = _need(stats, needed)
    flag = _number(stats, "non_finite_count") if lacking is not None else None
    if lacking is not None and (
        flag is None or cond in (ConditionType.HAS_NAN, ConditionType.HAS_INF)
    ):
        return Missing(lacking)
    if flag is not None:
        # NaN and ±Inf counted together, not told apart (tfdbg's CURT_HEALTH flag):
        # enough for every condition but HasNaN / HasInf, decided as "any non-finite"
        nan, inf = flag, 0.0
    else:
        nan = _number(stats, "nan_count") or 0.0
        inf = (_number(stats, "neg_inf_count") or 0.0) + (_number(stats, "pos_inf_count") or 0.0)
    if count is not None and count == 0:
        # MindSpore skips a tensor with no element: nothing is reported
        return CheckResult(False, 0, untouched_params(req))
    has_nan, has_inf = nan > 0, inf > 0
    clears = cond in CLEARS_ERRORS
    values: dict[str, float] = {}
    if clears or not (has_nan or has_inf):
        # thresholds are read only where MindSpore evaluates them: no error bit set
        for p in req.params:
            if p.disabled:
                continue
            stat = _param_stat(req, p.name)
            if stat in _UNDERIVABLE:
                return Missing(_UNDERIVABLE[stat], p.name)
            columns = _COLUMNS_OF.get(stat)
            if columns is None:
                continue  # a parameter MindSpore reads no statistic for (bounds, atol…)
            lacking = _need(stats, columns)
            if lacking is not None:
                return Missing(lacking, p.name)
            for key, _header in columns:
                values[key] = _number(stats, key) or 0.0
    return decide_from_summary(
        req,
        count=int(count) if count is not None else 0,
        has_nan=has_nan,
        has_inf=has_inf,
        max_value=values.get("max", math.nan),
        min_value=values.get("min", math.nan),
        zero_count=int(values.get("zero_count", 0)),
        mean=values.get("avg", math.nan),
    )
