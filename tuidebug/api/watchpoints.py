"""Watchpoints and their hits as the API shows them (spec §6.4): `Watchpoint(tensors,
condition)` in, `WatchpointHit`s out of `DumpAnalyzer.check_watchpoints`."""

from __future__ import annotations

from tuidebug.api.conditions import KNOWN_CONDITION_IDS, ConditionBase, HitDetail
from tuidebug.api.errors import DebuggerParamTypeError, DebuggerParamValueError, type_name
from tuidebug.api.nodes import DebuggerTensor
from tuidebug.core.error_codes import error_messages


class Watchpoint:
    """A condition applied to tensors: `Watchpoint(tensors, condition)` (spec §6.4)."""

    def __init__(self, tensors: list[DebuggerTensor], condition: ConditionBase) -> None:
        if not isinstance(tensors, list):
            raise DebuggerParamTypeError(
                f"The type of tensors should be list of DebuggerTensor, but got "
                f"{type_name(tensors)}."
            )
        for i, tensor in enumerate(tensors):
            if not isinstance(tensor, DebuggerTensor):
                raise DebuggerParamTypeError(
                    f"The type of tensors should be list of DebuggerTensor, but item {i} is "
                    f"{type_name(tensor)}."
                )
        if not isinstance(condition, ConditionBase):
            raise DebuggerParamTypeError(
                f"The type of condition should be ConditionBase, but got {type_name(condition)}."
            )
        if isinstance(condition, HitDetail):
            raise DebuggerParamValueError(
                "The condition is a hit's detail (get_hit_detail()); use the hit's "
                "get_threshold() or a new condition."
            )
        if condition.condition_id not in KNOWN_CONDITION_IDS:
            raise DebuggerParamValueError(
                f"{type(condition).__name__} has no condition to check (condition_id "
                f"{condition.condition_id}); use one of the condition classes such as "
                "TensorOverflowCondition()."
            )
        self._tensors = tensors
        self._condition = condition

    @property
    def tensors(self) -> list[DebuggerTensor]:
        return self._tensors

    @property
    def condition(self) -> ConditionBase:
        return self._condition


class WatchpointHit:
    """A watchpoint that triggered on a tensor, or whose check failed (error_code ≠ 0).
    Immutable; not built by users."""

    def __init__(
        self,
        tensor: DebuggerTensor,
        condition: ConditionBase,
        hit_detail: HitDetail,
        error_code: int,
        watchpoint_id: int = 0,
    ) -> None:
        self._tensor = tensor
        self._condition = condition
        self._hit_detail = hit_detail
        self._error_code = error_code
        self._watchpoint_id = watchpoint_id

    @property
    def error_code(self) -> int:
        return self._error_code

    @property
    def error_msg(self) -> list[str]:
        return error_messages(self._error_code)

    @property
    def tensor(self) -> DebuggerTensor:
        return self._tensor

    @property
    def watchpoint_id(self) -> int:
        """Position of the watchpoint in the list given to `check_watchpoints`."""
        return self._watchpoint_id

    def get_threshold(self) -> ConditionBase:
        return self._condition

    def get_hit_detail(self) -> HitDetail | None:
        return None if self._error_code else self._hit_detail

    def __str__(self) -> str:
        if self._error_code:
            return (
                f"Watchpoint {self._condition.name} check failed on tensor:\n{self._tensor}\n"
                f"Threshold: {self._condition}\nError detail: {self.error_msg}"
            )
        return (
            f"Watchpoint {self._condition.name} triggered on tensor:\n{self._tensor}\n"
            f"Threshold: {self._condition}\nHit detail: {self._hit_detail}"
        )

    def __repr__(self) -> str:
        return (
            f"WatchpointHit({self._condition.name}, {self._tensor!r}, "
            f"error_code={self._error_code})"
        )
