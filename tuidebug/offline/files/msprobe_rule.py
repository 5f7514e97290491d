"""msprobe `overflow_check`'s own anomaly rule on one raw `dump.json` record (issue 29),
written from what msprobe 26.2's analyzer reads (`DataNode.is_anomaly`), so that
`tuidebug check` and the origin trace name the call msprobe names, edge cases included.

A call is an anomaly when all of these hold:

* its name contains none of `Torch.empty` and `Torch.fill` (a substring test, so
  `Torch.empty_like`, `Torch.fill_` and their backward calls too): their outputs are
  uninitialised memory or a value the code chose (a `-inf` mask), never a fault;
* no *top-level* record of its inputs (`input_args` and `input` items, `input_kwargs`
  values) has a Max or Min that is NaN or ±Inf. Records nested in a list argument
  (`torch.einsum(eq, [a, b])`, `multi_dot([a, b])`) are not read, nor are a module's
  `parameters`: a module whose weight is NaN while its input is finite is the anomaly, not
  the `Functional.linear` inside it that read the weight as an argument;
* a top-level record of its `output` has a Max or Min that is NaN or ±Inf.

So `parameters_grad` entries (no `output` key) are never anomalies; backward calls are
judged like forward ones (`input`: the incoming gradients); integer and boolean tensors
(finite Max/Min) never are; non-tensor arguments carry no Max/Min and are skipped. msprobe
compares `str(value).lower()` with `nan`/`inf`/`-inf`, so a Max written as the string
`"inf"` counts as its float would. Across ranks msprobe adds a step this module does not:
it stops each rank at its first `Distributed.*` communication call and follows the
collectives to the rank whose compute call began the NaN/Inf (`check` says so per rank).
"""

from __future__ import annotations

__all__ = ["IGNORED_NAMES", "is_anomaly", "is_ignored", "record_overflows"]

# msprobe's analyzer skips every call whose name contains one of these
IGNORED_NAMES = ("Torch.empty", "Torch.fill")
_NONFINITE = frozenset({"nan", "inf", "-inf", "nan\t", "inf\t", "-inf\t"})
_INPUT_KEYS = ("input", "input_args", "input_kwargs")


def is_ignored(name: str) -> bool:
    """Whether msprobe's rule never blames the call `name` (uninitialised memory, fills)."""
    return any(word in name for word in IGNORED_NAMES)


def _bad(value: object) -> bool:
    if type(value) is float:
        return value != value or value in (float("inf"), float("-inf"))  # NaN ≠ NaN
    if isinstance(value, str):
        return value.lower() in _NONFINITE
    return False


def record_overflows(part: object) -> bool:
    """Whether a role's raw JSON (`output`, `input_args`…) has a top-level record whose Max
    or Min is NaN or ±Inf: list items or dict values that are records; nothing nested."""
    if isinstance(part, list):
        items: object = part
    elif isinstance(part, dict):
        items = part.values()
    else:
        return False
    for item in items:  # type: ignore[attr-defined]
        if isinstance(item, dict) and (_bad(item.get("Max")) or _bad(item.get("Min"))):
            return True
    return False


def is_anomaly(name: str, record: object) -> bool:
    """msprobe's rule on the call `name` with its raw record (module docstring)."""
    if not isinstance(record, dict) or is_ignored(name):
        return False
    if any(record_overflows(record.get(key)) for key in _INPUT_KEYS):
        return False
    return record_overflows(record.get("output"))
