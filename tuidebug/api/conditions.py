"""The API's watch conditions (spec §6.4): MindInsight's condition classes over the catalogue.

Each class names its condition in `core.condition_catalogue` (`_core`); its MindSpore
condition number and its parameter names, in wire order, are read from there, so the
catalogue stays the one place that declares them. The classes keep MindInsight's names,
signatures and defaults; values are checked against the catalogue's ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tuidebug.api.errors import DebuggerParamValueError, validate_number
from tuidebug.core.condition_catalogue import (
    CONDITIONS,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    UPDATE_RATIO_EPSILON,
)


class ConditionBase:
    """Base class of watch conditions (spec §6.4). `name`, `condition_id` (the MindSpore
    condition number), `param_dict` (the parameters the user set) and `param_names` (every
    parameter the condition sends, in wire order)."""

    _name = ""
    _condition_id = -1
    _param_names: tuple[str, ...] = ()
    _core = ""  # the condition's id in the catalogue: its number, parameters and ranges

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._core:
            spec = CONDITIONS[cls._core]
            cls._condition_id = int(spec.proto)
            cls._param_names = spec.param_names

    def __init__(self) -> None:
        self._params: dict[str, float] = {}

    def _set(self, *, required: bool = False, **values: object) -> None:
        """Keep the numbers the user gave, in wire order. None leaves an optional parameter
        unset and is a type error for a required one (as MindInsight checks them)."""
        for name, value in values.items():
            if value is not None or required:
                self._params[name] = validate_number(value, name)

    def _check_values(self) -> None:
        """The ranges of spec §3.1: NaN or ±inf thresholds, negative means, percentages
        outside 0–100, a range that ends before it starts. MindInsight's API lets them
        through and the check then never hits (or always does): a silently wrong answer."""
        if not self._core or not self._params:
            return
        from tuidebug.core.condition_catalogue import WatchpointError
        from tuidebug.core.watchpoints import validate_params

        try:
            validate_params(self._core, self._params)
        except WatchpointError as err:
            raise DebuggerParamValueError(f"{type(self).__name__}: {err}") from None

    @property
    def name(self) -> str:
        return self._name

    @property
    def condition_id(self) -> int:
        return self._condition_id

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self._params)

    @property
    def param_names(self) -> list[str]:
        return list(self._param_names)

    def _wire_params(self) -> list[tuple[str, float, bool]]:
        """(name, value, disabled) in wire order; unset parameters are sent disabled with
        value 0.0, exactly as MindInsight does."""
        out = []
        for name in self._param_names:
            value = self._params.get(name)
            if value is None:
                out.append((name, 0.0, True))
            else:
                out.append((name, float(value), False))
        return out

    def __str__(self) -> str:
        return str(self.param_dict)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.param_dict.items())
        return f"{type(self).__name__}({args})"


class TensorTooLargeCondition(ConditionBase):
    """Hit when any set threshold is exceeded: abs_mean, max, min or mean greater than it."""

    _name = "TensorTooLarge"
    _core = "tensor_too_large"

    def __init__(
        self,
        abs_mean_gt: float | None = None,
        max_gt: float | None = None,
        min_gt: float | None = None,
        mean_gt: float | None = None,
    ) -> None:
        super().__init__()
        self._set(abs_mean_gt=abs_mean_gt, max_gt=max_gt, min_gt=min_gt, mean_gt=mean_gt)
        _require_one(self)
        self._check_values()


class TensorTooSmallCondition(ConditionBase):
    """Hit when abs_mean, max, min or mean is less than a set threshold."""

    _name = "TensorTooSmall"
    _core = "tensor_too_small"

    def __init__(
        self,
        abs_mean_lt: float | None = None,
        max_lt: float | None = None,
        min_lt: float | None = None,
        mean_lt: float | None = None,
    ) -> None:
        super().__init__()
        self._set(abs_mean_lt=abs_mean_lt, max_lt=max_lt, min_lt=min_lt, mean_lt=mean_lt)
        _require_one(self)
        self._check_values()


def _require_one(condition: ConditionBase) -> None:
    """TensorTooLarge / TensorTooSmall: every parameter optional, at least one required."""
    if not condition._params:
        raise DebuggerParamValueError(
            f"Please specify at least one of the parameters for {type(condition).__name__}."
        )


class TensorRangeCondition(ConditionBase):
    """Hit on the share of elements inside [start, end] (inclusive) or on max − min."""

    _name = "TensorRange"
    _core = "tensor_range"

    def __init__(
        self,
        range_start_inclusive: float | None = None,
        range_end_inclusive: float | None = None,
        range_percentage_lt: float | None = None,
        range_percentage_gt: float | None = None,
        max_min_lt: float | None = None,
        max_min_gt: float | None = None,
    ) -> None:
        super().__init__()
        self._set(
            range_start_inclusive=range_start_inclusive,
            range_end_inclusive=range_end_inclusive,
            range_percentage_lt=range_percentage_lt,
            range_percentage_gt=range_percentage_gt,
            max_min_lt=max_min_lt,
            max_min_gt=max_min_gt,
        )
        # the thresholds are the catalogue's "check" parameters; the bounds only support them
        specs = CONDITIONS[self._core].params
        thresholds = [p.name for p in specs if p.kind == "check"]
        if not any(name in self._params for name in thresholds):
            raise DebuggerParamValueError(
                f"Please specify at least one of the parameters [{', '.join(thresholds)}] "
                "for TensorRangeCondition."
            )
        for p in specs:
            if p.name in self._params and any(b not in self._params for b in p.requires):
                raise DebuggerParamValueError(
                    "Please specify both range_start_inclusive and range_end_inclusive "
                    "parameters for TensorRangeCondition."
                )
        self._check_values()


class TensorOverflowCondition(ConditionBase):
    """Hit when the tensor holds NaN or ±Inf."""

    _name = "TensorOverflow"
    _core = "tensor_overflow"


class OperatorOverflowCondition(ConditionBase):
    """Ascend operator overflow records; never hits on CPU/GPU synchronous dumps."""

    _name = "OperatorOverflow"
    _core = "operator_overflow"


class TensorAllZeroCondition(ConditionBase):
    """Hit when the percentage of zero elements is ≥ zero_percentage_ge."""

    _name = "TensorAllZero"
    _core = "tensor_all_zero"

    def __init__(self, zero_percentage_ge: float) -> None:
        super().__init__()
        self._set(required=True, zero_percentage_ge=zero_percentage_ge)
        self._check_values()


class TensorUnchangedCondition(ConditionBase):
    """Hit when every element is within atol + rtol·|previous| of the previous step."""

    _name = "TensorUnchanged"
    _core = "weight_not_changed"

    def __init__(self, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> None:
        super().__init__()
        self._set(required=True, rtol=rtol, atol=atol)
        self._check_values()


class TensorChangeBelowThresholdCondition(ConditionBase):
    """Hit when mean(|x − prev|) / (mean(|prev|) + 1e-9) < abs_mean_update_ratio_lt."""

    _name = "TensorChangeBelowThreshold"
    _core = "weight_change_too_small"

    def __init__(
        self, abs_mean_update_ratio_lt: float, epsilon: float = UPDATE_RATIO_EPSILON
    ) -> None:
        super().__init__()
        self._set(required=True, abs_mean_update_ratio_lt=abs_mean_update_ratio_lt, epsilon=epsilon)
        self._check_values()


class TensorChangeAboveThresholdCondition(ConditionBase):
    """Hit when mean(|x − prev|) / (mean(|prev|) + 1e-9) > abs_mean_update_ratio_gt."""

    _name = "TensorChangeAboveThreshold"
    _core = "weight_change_too_large"

    def __init__(
        self, abs_mean_update_ratio_gt: float, epsilon: float = UPDATE_RATIO_EPSILON
    ) -> None:
        super().__init__()
        self._set(required=True, abs_mean_update_ratio_gt=abs_mean_update_ratio_gt, epsilon=epsilon)
        self._check_values()


# the MindSpore condition numbers of the public condition classes (spec §6.4)
KNOWN_CONDITION_IDS = frozenset(
    cls._condition_id
    for cls in (
        TensorTooLargeCondition,
        TensorTooSmallCondition,
        TensorRangeCondition,
        TensorOverflowCondition,
        OperatorOverflowCondition,
        TensorAllZeroCondition,
        TensorUnchangedCondition,
        TensorChangeBelowThresholdCondition,
        TensorChangeAboveThresholdCondition,
    )
)


class HitParameter:
    """One parameter of a hit, as MindSpore's `Parameter`: the setting and what was measured
    (`actual_value` is 0.0 when the parameter was not evaluated)."""

    __slots__ = ("actual_value", "disabled", "hit", "name", "value")

    def __init__(
        self, name: str, value: float, disabled: bool, hit: bool, actual_value: float
    ) -> None:
        self.name = name
        self.value = value
        self.disabled = disabled
        self.hit = hit
        self.actual_value = actual_value

    def __repr__(self) -> str:
        return (
            f"HitParameter(name={self.name!r}, value={self.value!r}, disabled={self.disabled!r}, "
            f"hit={self.hit!r}, actual_value={self.actual_value!r})"
        )


class HitDetail(ConditionBase):
    """The condition of a hit with the measured values: `param_dict` is the list of
    `HitParameter`s (MindInsight returns the engine's parameter list there)."""

    def __init__(self, params: Sequence[HitParameter], condition: ConditionBase) -> None:
        super().__init__()
        self._param_list = list(params)
        self._condition = condition

    @property
    def name(self) -> str:
        return self._condition.name

    @property
    def condition_id(self) -> int:
        return self._condition.condition_id

    @property
    def param_dict(self) -> list[HitParameter]:  # type: ignore[override]
        return list(self._param_list)

    @property
    def param_names(self) -> list[str]:
        return self._condition.param_names

    def __repr__(self) -> str:
        return f"HitDetail({self._condition.name}, {self._param_list!r})"

    def __str__(self) -> str:
        # MindInsight: only enabled parameters that hit, and no actual values for conditions
        # without user parameters or for TensorUnchanged (an all-close test has no "value").
        show = bool(self._condition.param_dict) and self._condition.condition_id != 20
        hit = [p for p in self._param_list if not p.disabled and p.hit]
        if not (show and hit):
            return "None."
        setting = ", ".join(f"{p.name} = {p.value}" for p in hit)
        actual = ", ".join(f"{p.name} = {p.actual_value}" for p in hit)
        return (
            f"The setting for watchpoint is {setting}. The actual value of the tensor is {actual}."
        )
