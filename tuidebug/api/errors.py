"""The API's errors and the argument checks that raise them (MindInsight's names and rules).

Every user mistake raises a `DumpAnalyzerError` whose message is one sentence; the checks
below are MindInsight's `isinstance` rules, with bools refused where numbers are meant.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import TypeGuard


class DumpAnalyzerError(Exception):
    """Base of every error the API raises for a user mistake; the message is one sentence."""


class DebuggerParamValueError(DumpAnalyzerError, ValueError):
    """A parameter has the right type but a wrong value (MindInsight's name)."""


class DebuggerParamTypeError(DumpAnalyzerError, TypeError):
    """A parameter has the wrong type (MindInsight's name)."""


def type_name(value: object) -> str:
    return type(value).__name__


def is_int(value: object) -> TypeGuard[numbers.Integral]:
    """int or a numpy integer, never a bool (numpy's bool_ is no `numbers.Integral`)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def validate_number(value: object, name: str) -> float:
    """int or float (numpy scalars too), never bool — MindInsight checks
    `isinstance(v, (int, float))` and a bool threshold is always a mistake; stored as float."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise DebuggerParamTypeError(
            f"The type of {name} should be int or float, but got {type_name(value)}."
        )
    return float(value)


def validate_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise DebuggerParamTypeError(
            f"The type of {name} should be bool, but got {type_name(value)}."
        )
    return value


def validate_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise DebuggerParamTypeError(
            f"The type of {name} should be str, but got {type_name(value)}."
        )
    return value


def int_list(value: object, name: str, allowed: Sequence[int] | None) -> list[int]:
    """MindInsight's `parse_param_to_iterable_obj`: int, list/tuple/set of int, or None
    (= everything allowed); values outside `allowed` are an error."""
    if value is None:
        return list(allowed) if allowed is not None else []
    items: Iterable[object]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
    else:
        items = [value]
    out: list[int] = []
    for raw in items:
        if not is_int(raw):
            raise DebuggerParamTypeError(
                f"The type of {name} should be int, list[int] or None, but got {type_name(raw)}."
            )
        item = int(raw)
        if allowed is not None and item not in allowed:
            raise DebuggerParamValueError(
                f"The value {item} of {name} should be in {sorted(set(allowed))}."
            )
        if item not in out:
            out.append(item)
    return out


def validate_slots(slots: object) -> list[int] | None:
    if slots is None:
        return None
    if not isinstance(slots, (list, tuple)):
        raise DebuggerParamTypeError(
            f"The param `slots` only supports list[int] or None, but got {type_name(slots)}."
        )
    out = []
    for slot in slots:
        if not is_int(slot):
            raise DebuggerParamTypeError(
                f"The type of slot should be int (slots is list[int] or None), but got "
                f"{type_name(slot)}."
            )
        out.append(int(slot))
    return out


class TensorValueError(DumpAnalyzerError):
    """A dumped tensor file that cannot be read (damaged, truncated, refused)."""
