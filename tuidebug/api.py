"""A DumpAnalyzer-compatible Python API (spec §6): a thin face over `offline/` and `core/`.

A MindInsight user's script runs after changing only its import line::

    from tuidebug.api import DumpAnalyzer, Watchpoint, TensorTooLargeCondition

Differences from MindInsight, all deliberate:

* no MindSpore is needed: tensors are read and checked by tuidebug itself (same math);
* `check_watchpoints` need not be called under ``if __name__ == "__main__"`` (it still works
  there); small checks run in-process, big ones in a process pool;
* `export_graphs` writes CSV (nodes and stacks) instead of xlsx;
* user mistakes raise `DebuggerParamValueError` / `DebuggerParamTypeError` (subclasses of
  `ValueError` / `TypeError` and of `DumpAnalyzerError`) whose message is one sentence;
* graph edges are the graph's own: an `Assign` keeps its first (parameter) input, which
  MindInsight drops from a three-input `Assign`, so the parameter's outputs list the
  `Assign` too; a producer that feeds two inputs of a node is listed once by
  `get_input_nodes` / `get_output_nodes` / `list_affected_nodes` (MindInsight lists it
  once per input), while `get_input_tensors` numbers its slots per input as MindInsight does;
* stacks: a `source_address` whose candidate header is followed by no frame is an empty
  stack (MindInsight returns the lone header line as a frame); locations in the newer
  `In file p:12~14, 4~20/code/` and the old `In file p(12)` forms are parsed (MindInsight
  keeps such a line as a code-only frame); blank lines inside a `source_address` are skipped;
* `DebuggerTensor.has_value` is True only when the tensor's own file exists. MindInsight's
  looks in every graph folder of the iteration for a file whose name matches
  `<short name>.*.output.<slot>.*.npy`, so a parameter named `u` "has a value" because of
  `ReduceSum….output.0….npy` while its `value()` is None (and `error_on_no_value` then
  reports nothing for it; tuidebug reports error 32);
* graphs without a history file (the sub-graphs of control flow): MindSpore 2.0's engine
  gives error 16 for every watched tensor of them, whatever the condition; tuidebug checks
  their values and gives 16 only for the conditions that need a previous step.
"""

from __future__ import annotations

import csv
import numbers
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuidebug import _API_NAMES

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.graph import Graph, StackFrame
    from tuidebug.core.graph import Node as GraphNode

# the names `tuidebug` re-exports lazily are listed there once; the errors, the node types
# and the stack frame type are this module's own (MindInsight keeps the last two in
# mindinsight.domain.graph.base)
__all__ = sorted(
    {
        *_API_NAMES,
        "DebuggerParamTypeError",
        "DebuggerParamValueError",
        "DumpAnalyzerError",
        "NodeType",
        "Source",
    }
)


# ------------------------------------------------------------------ errors
class DumpAnalyzerError(Exception):
    """Base of every error the API raises for a user mistake; the message is one sentence."""


class DebuggerParamValueError(DumpAnalyzerError, ValueError):
    """A parameter has the right type but a wrong value (MindInsight's name)."""


class DebuggerParamTypeError(DumpAnalyzerError, TypeError):
    """A parameter has the wrong type (MindInsight's name)."""


def _type_name(value: object) -> str:
    return type(value).__name__


def _is_int(value: object) -> bool:
    """int or a numpy integer, never a bool (numpy's bool_ is no `numbers.Integral`)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _validate_number(value: object, name: str) -> float:
    """int or float (numpy scalars too), never bool — MindInsight checks
    `isinstance(v, (int, float))` and a bool threshold is always a mistake; stored as float."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise DebuggerParamTypeError(
            f"The type of {name} should be int or float, but got {_type_name(value)}."
        )
    return float(value)


def _validate_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise DebuggerParamTypeError(
            f"The type of {name} should be bool, but got {_type_name(value)}."
        )
    return value


def _validate_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise DebuggerParamTypeError(
            f"The type of {name} should be str, but got {_type_name(value)}."
        )
    return value


def _int_list(value: object, name: str, allowed: Sequence[int] | None) -> list[int]:
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
        if not _is_int(raw):
            raise DebuggerParamTypeError(
                f"The type of {name} should be int, list[int] or None, but got {_type_name(raw)}."
            )
        item = int(raw)  # type: ignore[call-overload]
        if allowed is not None and item not in allowed:
            raise DebuggerParamValueError(
                f"The value {item} of {name} should be in {sorted(set(allowed))}."
            )
        if item not in out:
            out.append(item)
    return out


def _validate_slots(slots: object) -> list[int] | None:
    if slots is None:
        return None
    if not isinstance(slots, (list, tuple)):
        raise DebuggerParamTypeError(
            f"The param `slots` only supports list[int] or None, but got {_type_name(slots)}."
        )
    out = []
    for slot in slots:
        if not _is_int(slot):
            raise DebuggerParamTypeError(
                f"The type of slot should be int (slots is list[int] or None), but got "
                f"{_type_name(slot)}."
            )
        out.append(int(slot))
    return out


# -------------------------------------------------------------- conditions
class ConditionBase:
    """Base class of watch conditions (spec §6.4). `name`, `condition_id` (the MindSpore
    condition number), `param_dict` (the parameters the user set) and `param_names` (every
    parameter the condition sends, in wire order)."""

    _name = ""
    _condition_id = -1
    _param_names: tuple[str, ...] = ()
    _core = ""  # the condition's id in core.conditions, whose parameter ranges apply

    def __init__(self) -> None:
        self._params: dict[str, float] = {}

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


class _ThresholdCondition(ConditionBase):
    """Conditions whose parameters are all optional thresholds, at least one required."""

    def __init__(self, **values: object) -> None:
        super().__init__()
        for name in self._param_names:
            value = values.get(name)
            if value is not None:
                self._params[name] = _validate_number(value, name)
        if not self._params:
            raise DebuggerParamValueError(
                f"Please specify at least one of the parameters for {type(self).__name__}."
            )
        self._check_values()


class TensorTooLargeCondition(_ThresholdCondition):
    """Hit when any set threshold is exceeded: abs_mean, max, min or mean greater than it."""

    _name = "TensorTooLarge"
    _core = "tensor_too_large"
    _condition_id = 15
    _param_names = ("abs_mean_gt", "max_gt", "min_gt", "mean_gt")

    def __init__(
        self,
        abs_mean_gt: float | None = None,
        max_gt: float | None = None,
        min_gt: float | None = None,
        mean_gt: float | None = None,
    ) -> None:
        super().__init__(abs_mean_gt=abs_mean_gt, max_gt=max_gt, min_gt=min_gt, mean_gt=mean_gt)


class TensorTooSmallCondition(_ThresholdCondition):
    """Hit when abs_mean, max, min or mean is less than a set threshold."""

    _name = "TensorTooSmall"
    _core = "tensor_too_small"
    _condition_id = 16
    _param_names = ("abs_mean_lt", "max_lt", "min_lt", "mean_lt")

    def __init__(
        self,
        abs_mean_lt: float | None = None,
        max_lt: float | None = None,
        min_lt: float | None = None,
        mean_lt: float | None = None,
    ) -> None:
        super().__init__(abs_mean_lt=abs_mean_lt, max_lt=max_lt, min_lt=min_lt, mean_lt=mean_lt)


class TensorRangeCondition(ConditionBase):
    """Hit on the share of elements inside [start, end] (inclusive) or on max − min."""

    _name = "TensorRange"
    _core = "tensor_range"
    _condition_id = 21
    _param_names = (
        "range_start_inclusive",
        "range_end_inclusive",
        "range_percentage_lt",
        "range_percentage_gt",
        "max_min_lt",
        "max_min_gt",
    )
    _thresholds = ("range_percentage_lt", "range_percentage_gt", "max_min_lt", "max_min_gt")

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
        values = {
            "range_start_inclusive": range_start_inclusive,
            "range_end_inclusive": range_end_inclusive,
            "range_percentage_lt": range_percentage_lt,
            "range_percentage_gt": range_percentage_gt,
            "max_min_lt": max_min_lt,
            "max_min_gt": max_min_gt,
        }
        for name, value in values.items():
            if value is not None:
                self._params[name] = _validate_number(value, name)
        if not any(name in self._params for name in self._thresholds):
            raise DebuggerParamValueError(
                "Please specify at least one of the parameters [range_percentage_lt, "
                "range_percentage_gt, max_min_lt, max_min_gt] for TensorRangeCondition."
            )
        uses_range = "range_percentage_lt" in self._params or "range_percentage_gt" in self._params
        has_bounds = "range_start_inclusive" in self._params and (
            "range_end_inclusive" in self._params
        )
        if uses_range and not has_bounds:
            raise DebuggerParamValueError(
                "Please specify both range_start_inclusive and range_end_inclusive parameters "
                "for TensorRangeCondition."
            )
        self._check_values()


class TensorOverflowCondition(ConditionBase):
    """Hit when the tensor holds NaN or ±Inf."""

    _name = "TensorOverflow"
    _core = "tensor_overflow"
    _condition_id = 13


class OperatorOverflowCondition(ConditionBase):
    """Ascend operator overflow records; never hits on CPU/GPU synchronous dumps."""

    _name = "OperatorOverflow"
    _core = "operator_overflow"
    _condition_id = 2


class TensorAllZeroCondition(ConditionBase):
    """Hit when the percentage of zero elements is ≥ zero_percentage_ge."""

    _name = "TensorAllZero"
    _core = "tensor_all_zero"
    _condition_id = 17
    _param_names = ("zero_percentage_ge",)

    def __init__(self, zero_percentage_ge: float) -> None:
        super().__init__()
        self._params["zero_percentage_ge"] = _validate_number(
            zero_percentage_ge, "zero_percentage_ge"
        )
        self._check_values()


class TensorUnchangedCondition(ConditionBase):
    """Hit when every element is within atol + rtol·|previous| of the previous step."""

    _name = "TensorUnchanged"
    _core = "weight_not_changed"
    _condition_id = 20
    _param_names = ("rtol", "atol", "equal_nan")

    def __init__(self, rtol: float = 1e-5, atol: float = 1e-8) -> None:
        super().__init__()
        self._params["rtol"] = _validate_number(rtol, "rtol")
        self._params["atol"] = _validate_number(atol, "atol")
        self._check_values()


class TensorChangeBelowThresholdCondition(ConditionBase):
    """Hit when mean(|x − prev|) / (mean(|prev|) + 1e-9) < abs_mean_update_ratio_lt."""

    _name = "TensorChangeBelowThreshold"
    _core = "weight_change_too_small"
    _condition_id = 19
    _param_names = ("abs_mean_update_ratio_lt", "epsilon")

    def __init__(self, abs_mean_update_ratio_lt: float, epsilon: float = 1e-9) -> None:
        super().__init__()
        self._params["abs_mean_update_ratio_lt"] = _validate_number(
            abs_mean_update_ratio_lt, "abs_mean_update_ratio_lt"
        )
        self._params["epsilon"] = _validate_number(epsilon, "epsilon")
        self._check_values()


class TensorChangeAboveThresholdCondition(ConditionBase):
    """Hit when mean(|x − prev|) / (mean(|prev|) + 1e-9) > abs_mean_update_ratio_gt."""

    _name = "TensorChangeAboveThreshold"
    _core = "weight_change_too_large"
    _condition_id = 18
    _param_names = ("abs_mean_update_ratio_gt", "epsilon")

    def __init__(self, abs_mean_update_ratio_gt: float, epsilon: float = 1e-9) -> None:
        super().__init__()
        self._params["abs_mean_update_ratio_gt"] = _validate_number(
            abs_mean_update_ratio_gt, "abs_mean_update_ratio_gt"
        )
        self._params["epsilon"] = _validate_number(epsilon, "epsilon")
        self._check_values()


_CHANGE_CONDITION_IDS = frozenset({18, 19, 20})
# the MindSpore condition numbers of the public condition classes (spec §6.4)
_KNOWN_CONDITION_IDS = frozenset({2, 13, 15, 16, 17, 18, 19, 20, 21})


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


# ------------------------------------------------------------------ nodes and tensors
class NodeType(Enum):
    """The kind of a `Node` (`Node.node_type`), MindInsight's enum with its values:
    `n.node_type == NodeType.PARAMETER` or `n.node_type.value == "parameter"`."""

    OPERATOR = "operator"
    PARAMETER = "parameter"
    CONSTANT = "constant"


_NODE_TYPES = {t.value: t for t in NodeType}
# DataType numbers MindInsight 2.0's `PBParser.dtype_mapping` maps to a type (DT_BOOL to
# DT_TENSOR, DT_TUPLE, DT_BASE_INT/UINT/FLOAT); its schema ends at DT_REF (42)
_MI_ELEMENT_TYPES = frozenset({*range(1, 15), 31, 36, 37, 38})
_MI_LAST_TYPE = 42


def _mindinsight_knows(data_type: int, elem_type: int) -> bool:
    """Whether MindInsight counts a tuple element as an output slot
    (`PBParser._get_tuple_item_dtype` is not None): a tensor element type it knows, or an
    element type it maps."""
    return 0 < elem_type <= _MI_LAST_TYPE or data_type in _MI_ELEMENT_TYPES


class Source(dict):  # type: ignore[type-arg]
    """One frame of `Node.stack`, as MindInsight's `Source`: attributes `file_path`,
    `line_no`, `code_line` and `has_substack`, and — as MindInsight documents it — a dict
    with those keys (`frame["file_path"]`, `frame.get(...)`, `json.dumps`). Read-only.

    A header line (`# Corresponding code candidate:`) or a line naming no location is a
    frame with `file_path` "" and `line_no` 0 whose `code_line` is the line itself;
    `has_substack` is true on the located frame that opens a ` - ` marked sub-stack.
    `str()` is MindInsight's: `# - path:line  code` (`-` for `has_substack`, else a space)
    or the bare `code_line`; `select_by="code_stack"` matches that string."""

    __slots__ = ()

    def __init__(
        self, file_path: str, line_no: int, code_line: str, has_substack: bool = False
    ) -> None:
        super().__init__(
            file_path=file_path, line_no=line_no, code_line=code_line, has_substack=has_substack
        )

    @property
    def file_path(self) -> str:
        return self["file_path"]  # type: ignore[no-any-return]

    @property
    def line_no(self) -> int:
        return self["line_no"]  # type: ignore[no-any-return]

    @property
    def code_line(self) -> str:
        return self["code_line"]  # type: ignore[no-any-return]

    @property
    def has_substack(self) -> bool:
        return self["has_substack"]  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the four fields (MindInsight's method)."""
        return dict(self)

    def _read_only(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("A stack frame is read-only.")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.file_path, self.line_no, self.code_line, self.has_substack))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Source, (self.file_path, self.line_no, self.code_line, self.has_substack))

    def __repr__(self) -> str:
        return repr(self.to_dict())

    def __str__(self) -> str:
        if not self.file_path:
            return self.code_line
        marker = "-" if self.has_substack else " "
        return f"# {marker} {self.file_path}:{self.line_no}  {self.code_line}"


def _source(frame: StackFrame) -> Source:
    """A core frame as MindInsight's parser gives it: lines naming no location keep their
    `# ` (MindInsight keeps the stripped line) and `line_no` 0."""
    if not frame.file_path:
        return Source("", 0, f"# {frame.code_line}", False)
    line = 0 if frame.line_no is None else frame.line_no
    return Source(frame.file_path, line, frame.code_line, frame.has_substack)


class Node:
    """A node of a computational graph on one rank (spec §6.2). Not built by users."""

    def __init__(self, analyzer: DumpAnalyzer, rank: int, graph: Graph, node: GraphNode) -> None:
        self._analyzer = analyzer
        self._rank = rank
        self._graph = graph
        self._node = node
        self._name = _api_node_name(node)
        self._node_type = _NODE_TYPES[node.kind.value]
        self._stack: tuple[Source, ...] | None = None

    @property
    def name(self) -> str:
        """Operators: full name with scope; parameters: parameter name; constants: key."""
        return self._name

    @property
    def node_type(self) -> NodeType:
        """`NodeType.OPERATOR`, `NodeType.PARAMETER` or `NodeType.CONSTANT`."""
        return self._node_type

    @property
    def stack(self) -> list[Source]:
        """Source stack of an operator, innermost call first, as `Source` frames (each also
        a dict with `file_path`, `line_no`, `code_line`, `has_substack`); parameters and
        constants have none. Candidate headers are frames with `line_no` 0 and
        `code_line` `# Corresponding code candidate:`; a header with no frame after it is
        no stack at all (MindInsight gives the lone header as a frame)."""
        if self._stack is None:
            if self._node_type is not NodeType.OPERATOR:
                self._stack = ()
            else:
                self._stack = self._analyzer._sources(self._node.stack)
        return list(self._stack)

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def graph_name(self) -> str:
        return self._graph.name

    @property
    def root_graph_id(self) -> int:
        return self._graph.root_graph_id

    @property
    def op_type(self) -> str:
        """The operator type (`Conv2D`), `Parameter` or `Const` (a tuidebug addition)."""
        return self._node.op_type

    @property
    def output_slot_size(self) -> int:
        """Output slots, MindInsight's count: one per element of a tuple output whose type
        MindInsight's graph schema knows (a tensor, a scalar, a string, a nested tuple; not a
        monad), so a tuple of monads has none; one for any other output."""
        elements = self._node.tuple_elements
        if elements is None:
            return 1
        return sum(1 for types in elements if _mindinsight_knows(*types))

    def get_input_tensors(
        self, iterations: int | list[int] | None = None, slots: list[int] | None = None
    ) -> list[DebuggerTensor]:
        """Output tensors of the input nodes. `slots` index the concatenated output slots
        of the inputs taken one input at a time, as MindInsight numbers them: a producer
        feeding two inputs holds slots at both places, but each tensor is returned once.
        An `Assign`'s parameter input counts (MindInsight drops it from a three-input
        `Assign`, whose later inputs then start at slot 0)."""
        slots = _validate_slots(slots)
        # MindInsight narrows the iterations by this node's root graph first, then by each
        # producer's (the same graph, but an empty list stays empty)
        chosen = self._iterations(iterations)
        out: dict[DebuggerTensor, None] = {}
        offset = 0
        for producer in self._analyzer._input_occurrences(self):
            size = producer.output_slot_size
            wanted = (
                None
                if slots is None
                else [s - offset for s in slots if offset <= s < offset + size]
            )
            if wanted is None or wanted:
                out.update(dict.fromkeys(producer.get_output_tensors(chosen, wanted)))
            offset += size
        return list(out)

    def get_output_tensors(
        self, iterations: int | list[int] | None = None, slots: list[int] | None = None
    ) -> list[DebuggerTensor]:
        """One `DebuggerTensor` per output slot × iteration. Iterations default to those
        dumped for the node's root graph on its rank (`iterations` narrows them; others are
        silently left out). A root graph with no dumped iteration folder (a control-flow
        sub-graph whose kernels wrote nothing) has no default, and lists its tensors at every
        iteration asked for, with no value: MindInsight's rule, so `select_tensors` lists
        them at the selected ranks' iterations."""
        slots = _validate_slots(slots)
        chosen = self._iterations(iterations)
        all_slots = range(self.output_slot_size)
        query = list(all_slots) if slots is None else [s for s in all_slots if s in slots]
        return [DebuggerTensor(self, slot, it) for slot in query for it in chosen]

    def _iterations(self, iterations: object) -> list[int]:
        """MindInsight's `_get_iterable_iterations`: None gives the iterations dumped for the
        node's root graph on its rank; given ones are kept if dumped there — all of them when
        nothing was dumped there (its `if expected_range and …` test)."""
        dumped = self._analyzer._dump.iterations(self._rank, self._graph.name)
        if iterations is None:
            return list(dumped)
        given = _int_list(iterations, "iterations", None)
        if not dumped:
            return given
        known = set(dumped)
        return [i for i in given if i in known]

    @property
    def _key(self) -> tuple[int, str, str]:
        return (self._rank, self._graph.name, self._node.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return f"rank: {self.rank}\ngraph_name: {self.graph_name}\nnode_name: {self.name}"

    def __repr__(self) -> str:
        return f"Node(rank={self.rank}, graph_name={self.graph_name!r}, name={self.name!r})"


def _api_node_name(node: GraphNode) -> str:
    """MindInsight names `Load` and `*Summary` operators `{scope}/{type}-op{proto index}`
    (spec §6.2); every other node keeps its graph name."""
    if (node.op_type == "Load" or "Summary" in node.op_type) and node.index and node.scope:
        return f"{node.scope}/{node.op_type}-op{node.index}"
    return node.name


class DebuggerTensor:
    """An output tensor of a node at an iteration on a rank (spec §6.3). Not built by users."""

    def __init__(self, node: Node, slot: int, iteration: int | None) -> None:
        self._node = node
        self._slot = slot
        self._iteration = iteration

    @property
    def node(self) -> Node:
        return self._node

    @property
    def slot(self) -> int:
        return self._slot

    @property
    def iteration(self) -> int | None:
        return self._iteration

    @property
    def rank(self) -> int:
        return self._node.rank

    @property
    def root_graph_id(self) -> int:
        return self._node.root_graph_id

    def has_value(self) -> bool:
        """True when a file holds this tensor (constants: never, as in MindInsight). Only
        the tensor's own file counts: MindInsight's also matches any file of the iteration
        whose name contains the node's short name before `.output.<slot>.`, and then says
        True for a tensor whose `value()` is None."""
        if self._iteration is None:
            return False
        node = self._node
        found = node._analyzer._dump.tensor_file(
            node.rank, node.graph_name, node._node.name, self._slot, self._iteration
        )
        return found is not None

    def value(self) -> np.ndarray | None:
        """The value (a read-only array memory-mapped from the dump), or None when the tensor
        was not dumped at that iteration. Constants with a value in the graph file return it.
        An unreadable file raises `TensorValueError` naming it."""
        node = self._node
        if self._iteration is None and node._node.value is None:
            return None
        try:
            return node._analyzer._dump.value(
                node.rank, node.graph_name, node._node.name, self._slot, self._iteration
            )
        except Exception as err:
            from tuidebug.offline.tensor_store import TensorFileError

            if isinstance(err, TensorFileError):
                raise TensorValueError(str(err)) from None
            raise

    @property
    def _key(self) -> tuple[tuple[int, str, str], int, int | None]:
        return (self._node._key, self._slot, self._iteration)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DebuggerTensor) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return f"{self._node}\nslot: {self._slot}\niteration: {self._iteration}"

    def __repr__(self) -> str:
        return (
            f"DebuggerTensor(node={self._node.name!r}, slot={self._slot}, "
            f"iteration={self._iteration}, rank={self.rank})"
        )


class TensorValueError(DumpAnalyzerError):
    """A dumped tensor file that cannot be read (damaged, truncated, refused)."""


# ------------------------------------------------------------------ watchpoints and hits
class Watchpoint:
    """A condition applied to tensors: `Watchpoint(tensors, condition)` (spec §6.4)."""

    def __init__(self, tensors: list[DebuggerTensor], condition: ConditionBase) -> None:
        if not isinstance(tensors, list):
            raise DebuggerParamTypeError(
                f"The type of tensors should be list of DebuggerTensor, but got "
                f"{_type_name(tensors)}."
            )
        for i, tensor in enumerate(tensors):
            if not isinstance(tensor, DebuggerTensor):
                raise DebuggerParamTypeError(
                    f"The type of tensors should be list of DebuggerTensor, but item {i} is "
                    f"{_type_name(tensor)}."
                )
        if not isinstance(condition, ConditionBase):
            raise DebuggerParamTypeError(
                f"The type of condition should be ConditionBase, but got {_type_name(condition)}."
            )
        if isinstance(condition, HitDetail):
            raise DebuggerParamValueError(
                "The condition is a hit's detail (get_hit_detail()); use the hit's "
                "get_threshold() or a new condition."
            )
        if condition.condition_id not in _KNOWN_CONDITION_IDS:
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
        from tuidebug.core.error_codes import error_messages

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


# ------------------------------------------------------------------ the analyzer
_MEM_LIMIT_MIN_MB = 2048
_MEM_LIMIT_MAX_MB = 2147483647
_log = __import__("logging").getLogger("tuidebug.api")


def _warn(problem: str) -> None:
    """A dump problem as a log warning. With no logging set up Python prints it on stderr,
    often a terminal: escaped (core.text.printable) like every untrusted string shown
    there; `DumpAnalyzer.problems` keeps the exact text."""
    from tuidebug.core.text import printable

    _log.warning("%s", printable(problem))


class DumpAnalyzer:
    """Analyzer of a MindSpore dump folder (spec §6.1).

    `mem_limit` is in MB (None = no limit; else an int in [2048, 2147483647]): a tensor larger
    than it is not read by `check_watchpoints`, which reports error code 8 for it. Problems
    that leave part of the dump unusable are logged and listed in `problems`.
    """

    def __init__(self, dump_dir: str | os.PathLike[str], mem_limit: int | None = None) -> None:
        from tuidebug.offline.dump import DumpError, OfflineDump

        if mem_limit is not None and not _is_int(mem_limit):
            raise DebuggerParamTypeError(
                f"The type of mem_limit should be int or None, but got {_type_name(mem_limit)}."
            )
        limit = 0 if mem_limit is None else int(mem_limit)
        if (limit and limit < _MEM_LIMIT_MIN_MB) or limit > _MEM_LIMIT_MAX_MB:
            raise DebuggerParamValueError(
                f"If mem_limit is not None, it should be set in [{_MEM_LIMIT_MIN_MB}, "
                f"{_MEM_LIMIT_MAX_MB}]."
            )
        if not isinstance(dump_dir, (str, os.PathLike)):
            raise DebuggerParamTypeError(
                f"The type of dump_dir should be str, but got {_type_name(dump_dir)}."
            )
        try:
            self._dump = OfflineDump(dump_dir, mem_limit=limit * (1 << 20) if limit else None)
        except DumpError as err:
            raise DebuggerParamValueError(str(err)) from None
        self._dump_dir = str(self._dump.root)
        self._lock = threading.Lock()
        # one `Source` per distinct core frame: thousands of nodes share their frames
        self._frames: dict[StackFrame, Source] = {}
        # rank → {(graph name, node name): Node}; built eagerly like MindInsight's parser
        self._nodes: dict[int, dict[tuple[str, str], Node]] = {}
        self._by_api_name: dict[int, dict[tuple[str, str], Node]] = {}
        for rank in self._dump.ranks:
            nodes: dict[tuple[str, str], Node] = {}
            for graph in self._dump.graphs(rank).values():
                for node in graph:
                    nodes[(graph.name, node.name)] = Node(self, rank, graph, node)
            self._nodes[rank] = nodes
            self._by_api_name[rank] = {(n.graph_name, n.name): n for n in nodes.values()}
        if not any(self._nodes.values()):
            # every selection would be empty and every check silently hit-free
            problems = self._dump.problems
            reason = f"; first problem: {problems[0].rstrip('.')}" if problems else ""
            raise DebuggerParamValueError(
                f"No rank of {dump_dir} has a readable graph, so its tensors cannot be tied "
                f"to nodes{reason}."
            )
        for problem in self._dump.new_problems():
            _warn(problem)

    # ------------------------------------------------------------------ basics
    @property
    def problems(self) -> list[str]:
        """Sentences about parts of the dump that could not be used (a tuidebug addition)."""
        return self._dump.problems

    def get_ranks(self) -> list[int]:
        """Rank ids found in the dump folder."""
        return list(self._dump.ranks)

    def get_iterations(self, ranks: int | list[int] | None = None) -> list[int]:
        """Sorted union of the dumped iterations (`{net}/{graph id}/{iteration}` folders) of
        every graph folder of the selected ranks."""
        chosen = self._ranks(ranks)
        found: set[int] = set()
        for rank in chosen:
            found.update(self._dump.iterations(rank))
        return sorted(found)

    def _ranks(self, ranks: object) -> list[int]:
        return _int_list(ranks, "ranks", self._dump.ranks)

    # ------------------------------------------------------------------ selection
    def select_nodes(
        self,
        query_string: str,
        use_regex: bool = False,
        select_by: str = "node_name",
        ranks: int | list[int] | None = None,
        case_sensitive: bool = True,
    ) -> list[Node]:
        """Nodes whose name (or, with `select_by="code_stack"`, any stack frame's `str()`,
        MindInsight's `# - path:line  code` form) contains — or, with `use_regex`, matches
        (`re.search`) — `query_string`."""
        matches = _query(query_string, use_regex, case_sensitive)
        by_stack = _select_by(select_by)
        chosen = self._ranks(ranks)
        out = []
        for rank in chosen:
            out.extend(n for n in self._nodes[rank].values() if _selected(n, matches, by_stack))
        return out

    def select_tensors(
        self,
        query_string: str,
        use_regex: bool = False,
        select_by: str = "node_name",
        iterations: int | list[int] | None = None,
        ranks: int | list[int] | None = None,
        slots: list[int] | None = None,
        case_sensitive: bool = True,
    ) -> list[DebuggerTensor]:
        """Output tensors of the selected nodes for each requested slot × iteration.
        `iterations` (default: all) must be dumped iterations of the selected ranks; each
        node keeps those dumped for its root graph, or all of them when its root graph
        dumped no iteration folder (`Node.get_output_tensors`)."""
        matches = _query(query_string, use_regex, case_sensitive)
        by_stack = _select_by(select_by)
        slots = _validate_slots(slots)
        chosen = self._ranks(ranks)
        wanted = _int_list(iterations, "iterations", self.get_iterations(chosen))
        out: list[DebuggerTensor] = []
        for rank in chosen:
            for node in self._nodes[rank].values():
                if _selected(node, matches, by_stack):
                    out.extend(node.get_output_tensors(wanted, slots))
        return out

    # ------------------------------------------------------------------ statistics
    def select_tensor_statistics(
        self, iterations: int | list[int] | None = None, ranks: int | list[int] | None = None
    ) -> dict[int, dict[int, dict[str, list[dict[str, str]]]]]:
        """`{rank: {iteration: {"<Op Name>:<IO>:<Slot>": [statistic.csv row dict, ...]}}}`."""
        chosen = self._ranks(ranks)
        wanted = set(_int_list(iterations, "iterations", self.get_iterations(chosen)))
        out: dict[int, dict[int, dict[str, list[dict[str, str]]]]] = {}
        for rank in chosen:
            per_rank: dict[int, dict[str, list[dict[str, str]]]] = {}
            for iteration in self._dump.iterations(rank):
                if iteration in wanted:
                    per_rank[iteration] = self._dump.statistics(rank, iteration)
            out[rank] = per_rank
        for problem in self._dump.new_problems():
            _warn(problem)
        return out

    def summary_statistics(
        self,
        statistics: Mapping[int, Mapping[int, Mapping[str, Sequence[Mapping[str, Any]]]]],
        overflow_value: float = 65500,
        out_path: str = "./",
    ) -> None:
        """Aggregate statistics per tensor name over ranks and iterations into
        `statistics_summary.csv` in `out_path`: inf_number, nan_number, out_of_range_number
        (|min| or |max| > overflow_value), total_number, none_overflow_number, total_iterations."""
        if not isinstance(statistics, Mapping):
            raise DebuggerParamTypeError(
                "The type of statistics should be the dict returned by select_tensor_statistics, "
                f"but got {_type_name(statistics)}."
            )
        limit = _validate_number(overflow_value, "overflow_value")
        _validate_str(out_path, "out_path")
        summary: dict[str, dict[str, Any]] = {}
        seen_iterations: dict[str, set[tuple[int, int]]] = {}
        for rank, per_rank in statistics.items():
            if not isinstance(per_rank, Mapping):
                raise DebuggerParamTypeError(
                    f"The statistics of rank {rank} should be a dict, but got "
                    f"{_type_name(per_rank)}."
                )
            for iteration, per_iteration in per_rank.items():
                if not isinstance(per_iteration, Mapping):
                    raise DebuggerParamTypeError(
                        f"The statistics of rank {rank} iteration {iteration} should be a dict, "
                        f"but got {_type_name(per_iteration)}."
                    )
                for tensor_name, rows in per_iteration.items():
                    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
                        raise DebuggerParamTypeError(
                            f"The statistics of {tensor_name} should be a list of rows, but "
                            f"got {_type_name(rows)}."
                        )
                    for row in rows:
                        _summarise_row(summary, tensor_name, row, limit)
                    seen_iterations.setdefault(tensor_name, set()).add((rank, iteration))
        for name, entry in summary.items():
            entry["total_iterations"] = len(seen_iterations.get(name, ()))
        try:
            os.makedirs(out_path, exist_ok=True)
            target = Path(out_path) / "statistics_summary.csv"
            with open(target, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(_SUMMARY_COLUMNS)
                for entry in summary.values():
                    writer.writerow([entry[c] for c in _SUMMARY_COLUMNS])
        except OSError as err:
            raise DebuggerParamValueError(
                f"Cannot write statistics_summary.csv in {out_path}: {err.strerror or err}."
            ) from None

    # ------------------------------------------------------------------ graph queries
    def _own(self, node: object) -> Node:
        if not isinstance(node, Node):
            raise DebuggerParamTypeError(
                f"The type of node should be Node, but got {_type_name(node)}."
            )
        found = self._nodes.get(node.rank, {}).get((node.graph_name, node._node.name))
        if found is None or found._node is not node._node:
            raise DebuggerParamValueError(
                f"Failed to find node {node.name} with rank {node.rank} in the dump directory."
            )
        return found

    def _sources(self, frames: Iterable[StackFrame]) -> tuple[Source, ...]:
        cache = self._frames
        out = []
        for frame in frames:
            source = cache.get(frame)
            if source is None:
                source = cache[frame] = _source(frame)
            out.append(source)
        return tuple(out)

    def _input_nodes(self, node: Node) -> list[Node]:
        nodes = self._nodes[node.rank]
        return [nodes[(node.graph_name, n.name)] for n in node._graph.inputs(node._node.name)]

    def _input_occurrences(self, node: Node) -> list[Node]:
        """The producer of each input in input order, a producer once per input it feeds."""
        nodes = self._nodes[node.rank]
        graph_nodes = node._graph.nodes
        return [nodes[(node.graph_name, src)] for src in node._node.inputs if src in graph_nodes]

    def _output_nodes(self, node: Node) -> list[Node]:
        nodes = self._nodes[node.rank]
        return [nodes[(node.graph_name, n.name)] for n in node._graph.consumers(node._node.name)]

    def list_affected_nodes(self, tensor: DebuggerTensor) -> list[Node]:
        """Nodes that take the tensor's node as input (its direct consumers), each once;
        a parameter's list includes an `Assign` to it (see `get_output_nodes`)."""
        if not isinstance(tensor, DebuggerTensor):
            raise DebuggerParamTypeError(
                f"The type of tensor should be DebuggerTensor, but got {_type_name(tensor)}."
            )
        return self._output_nodes(self._own(tensor.node))

    def get_input_nodes(self, node: Node) -> list[Node]:
        """The producers of the node's inputs, in input order, each once (MindInsight lists
        a producer once per input it feeds). An `Assign` keeps its first input, the
        parameter it writes, which MindInsight drops from a three-input `Assign`."""
        return self._input_nodes(self._own(node))

    def get_output_nodes(self, node: Node) -> list[Node]:
        """The nodes that use an output of the node, each once (MindInsight lists a consumer
        once per input it takes from the node); a parameter's consumers include an `Assign`
        to it, which MindInsight leaves out."""
        return self._output_nodes(self._own(node))

    # ------------------------------------------------------------------ export
    def export_graphs(self, output_dir: str | None = None) -> str:
        """Write the graphs (every node with its type, inputs and code stack) to
        `dump_<YYYYmmdd_HHMMSS>.csv` in `output_dir` (default: the working directory);
        returns its path. (MindInsight writes xlsx; CSV needs no extra package.)"""
        folder = os.getcwd() if output_dir is None else _validate_str(output_dir, "output_dir")
        try:
            os.makedirs(folder, exist_ok=True)
            path = Path(folder) / f"dump_{time.strftime('%Y%m%d_%H%M%S')}.csv"
            with open(path, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(
                    [
                        "rank",
                        "graph_name",
                        "node_name",
                        "node_type",
                        "op_type",
                        "input_nodes",
                        "stack",
                    ]
                )
                for rank in self.get_ranks():
                    for node in self._nodes[rank].values():
                        inputs = [n.name for n in self._input_nodes(node)]
                        stack = "\n".join(str(f) for f in node.stack)
                        writer.writerow(
                            [
                                rank,
                                node.graph_name,
                                node.name,
                                node._node.kind.value,
                                node.op_type,
                                "\n".join(inputs),
                                stack,
                            ]
                        )
        except OSError as err:
            raise DebuggerParamValueError(
                f"Cannot write the graph export in {folder}: {err.strerror or err}."
            ) from None
        return str(path)

    # ------------------------------------------------------------------ checking
    def check_watchpoints(
        self,
        watchpoints: Iterable[Watchpoint],
        error_on_no_value: bool = False,
        *,
        workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[WatchpointHit]:
        """Check the watchpoints on their tensors, every tensor read once for all of them.

        Watchpoint ids are the positions in `watchpoints`. Iterations without dumped data are
        skipped. With `error_on_no_value`, requested tensors that have no file are reported
        with error code 32. Hits come in iteration order, then kernel execution order, then
        watchpoint id. `workers` (default: all cores) and `progress(done, total)` are
        tuidebug additions.
        """
        from tuidebug.core.condition_catalogue import CheckRequest, Param
        from tuidebug.offline.checker import Checker, Watch, needs_previous

        if isinstance(watchpoints, (str, bytes)) or not isinstance(watchpoints, Iterable):
            raise DebuggerParamTypeError(
                f"The type of watchpoints should be list of Watchpoint, but got "
                f"{_type_name(watchpoints)}."
            )
        wps = list(watchpoints)
        for i, wp in enumerate(wps):
            if not isinstance(wp, Watchpoint):
                raise DebuggerParamTypeError(
                    f"The type of watchpoints should be list of Watchpoint, but item {i} is "
                    f"{_type_name(wp)}."
                )
        _validate_bool(error_on_no_value, "error_on_no_value")
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise DebuggerParamValueError("workers should be a positive int or None.")
        dumped = set(self._dump.iterations())
        watches: list[Watch] = []
        tensor_of: dict[tuple[int, int, str, str, int, int], DebuggerTensor] = {}
        for wp_id, wp in enumerate(wps):
            cond = wp.condition
            request = CheckRequest(
                cond.condition_id,
                tuple(Param(n, v, d) for n, v, d in cond._wire_params()),
            )
            by_iteration: dict[int, dict[tuple[int, str], list[tuple[str, int]]]] = {}
            for tensor in wp.tensors:
                if tensor.iteration is None or tensor.iteration not in dumped:
                    continue
                node = self._own(tensor.node)
                graph_key = (node.rank, node.graph_name)
                pairs = by_iteration.setdefault(tensor.iteration, {}).setdefault(graph_key, [])
                pairs.append((node._node.name, tensor.slot))
                key = (
                    wp_id,
                    node.rank,
                    node.graph_name,
                    node._node.name,
                    tensor.slot,
                    tensor.iteration,
                )
                tensor_of.setdefault(key, tensor)
            for iteration, tensors in by_iteration.items():
                watches.append(
                    Watch(
                        wp_id,
                        request,
                        needs_previous(cond.condition_id),
                        tensors,
                        frozenset({iteration}),
                    )
                )
        iterations = sorted({i for w in watches for i in (w.iterations or ())})
        with Checker(self._dump, workers=workers) as checker:
            report = checker.check(
                watches, iterations, error_on_no_value=error_on_no_value, progress=progress
            )
        for problem in report.problems:
            _warn(problem)
        for problem in self._dump.new_problems():
            _warn(problem)
        hits: list[WatchpointHit] = []
        for outcome in report.outcomes:
            k = outcome.key
            tensor = tensor_of[
                (outcome.watchpoint_id, k.rank, k.graph, k.node, k.slot, k.iteration)
            ]
            cond = wps[outcome.watchpoint_id].condition
            params = [
                HitParameter(
                    p.name, p.value, p.disabled, p.hit, 0.0 if p.actual is None else p.actual
                )
                for p in outcome.result.params
            ]
            hits.append(
                WatchpointHit(
                    tensor, cond, HitDetail(params, cond), outcome.error_code, outcome.watchpoint_id
                )
            )
        return hits


# ------------------------------------------------------------------ helpers
_SUMMARY_COLUMNS = (
    "op_type",
    "op_name",
    "tensor_name",
    "inf_number",
    "nan_number",
    "out_of_range_number",
    "total_number",
    "none_overflow_number",
    "total_iterations",
)


def _cell(row: Mapping[str, Any], *names: str) -> Any:
    """A statistic.csv cell by header name, case-insensitively (`NaN Count` was renamed
    `Nan Count` in newer MindSpore)."""
    lowered = {str(k).lower(): v for k, v in row.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _summarise_row(
    summary: dict[str, dict[str, Any]], tensor_name: str, row: Mapping[str, Any], limit: float
) -> None:
    if not isinstance(row, Mapping):
        raise DebuggerParamTypeError(
            f"A statistics row of {tensor_name} should be a dict, but got {_type_name(row)}."
        )
    entry = summary.setdefault(
        tensor_name,
        {
            "op_type": _cell(row, "Op Type") or "",
            "op_name": _cell(row, "Op Name") or "",
            "tensor_name": tensor_name,
            "inf_number": 0,
            "nan_number": 0,
            "out_of_range_number": 0,
            "total_number": 0,
            "none_overflow_number": 0,
            "total_iterations": 0,
        },
    )
    entry["total_number"] += 1
    infs = _as_float(_cell(row, "Positive Inf Count")) + _as_float(_cell(row, "Negative Inf Count"))
    nans = _as_float(_cell(row, "NaN Count"))
    lo, hi = _as_float(_cell(row, "Min Value")), _as_float(_cell(row, "Max Value"))
    out_of_range = abs(lo) > limit or abs(hi) > limit
    entry["inf_number"] += infs > 0
    entry["nan_number"] += nans > 0
    entry["out_of_range_number"] += out_of_range
    entry["none_overflow_number"] += not (infs > 0 or nans > 0 or out_of_range)


def _select_by(select_by: object) -> bool:
    """True for `code_stack`, False for `node_name`."""
    if select_by == "node_name":
        return False
    if select_by == "code_stack":
        return True
    raise DebuggerParamValueError(
        "The param `select_by` only supports `node_name` or `code_stack`."
    )


def _selected(node: Node, matches: Callable[[str], bool], by_stack: bool) -> bool:
    """By name, or by any stack frame's `str()` (MindInsight matches `str(Source)`)."""
    if by_stack:
        return any(matches(str(frame)) for frame in node.stack)
    return matches(node.name)


def _query(
    query_string: object, use_regex: object, case_sensitive: object
) -> Callable[[str], bool]:
    text = _validate_str(query_string, "query_string")
    _validate_bool(use_regex, "use_regex")
    _validate_bool(case_sensitive, "case_sensitive")
    if use_regex:
        try:
            pattern = re.compile(text, 0 if case_sensitive else re.IGNORECASE)
        except re.error as err:
            raise DebuggerParamValueError(
                f"The query_string {text!r} is not a valid regular expression: {err}."
            ) from None
        return lambda s: pattern.search(s) is not None
    if case_sensitive:
        return lambda s: text in s
    lowered = text.lower()
    return lambda s: lowered in s.lower()
