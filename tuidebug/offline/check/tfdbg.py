"""Watchpoints checked on a TensorFlow Debugger V2 dump (issue 32), from what its
`tensor_debug_mode` recorded for each op output.

What each mode decides, and why:

* TO (NaN or ±Inf): CURT_HEALTH's flag (slot 1: any NaN/Inf), CONCISE_HEALTH's counts
  (slots 2–4: −Inf, +Inf, NaN), FULL_HEALTH's counts (slots 5–7), or FULL_TENSOR's values
  (any non-finite element). These are DebugNumericSummaryV2's layouts, the same slots
  TensorFlow's own `DebugDataReader` users read;
* NO_TENSOR and SHAPE record no value and no health count: TO is refused in one sentence;
* every other condition is refused per watchpoint in one sentence for now (the threshold
  and zero conditions need more than the first part reads).

Hits come from the graph execution traces (ops inside `tf.function`s) in file order, which
is execution order. Records carry no step number, so a hit's step is derived: the trace's
graph is followed out (`outer_context_id`) to the function graph the `.execution` file
records calls of, and the step is the index of that function's first call whose record was
written at or after the trace (a call's record is written when it returns, after its ops'
traces). A trace after the last call's record (a run killed mid-call) is that next call.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.core.condition_catalogue import CheckRequest, CheckResult, ConditionType
from tuidebug.core.graph import Category
from tuidebug.offline.check.statistic import condition_label
from tuidebug.offline.files.tfdbg import TfdbgDump, tensor_values

__all__ = ["MODE_NAMES", "TfdbgHit", "TfdbgReport", "check_tfdbg", "derived_steps"]

MODE_NAMES = {
    0: "UNSPECIFIED",
    1: "NO_TENSOR",
    2: "CURT_HEALTH",
    3: "CONCISE_HEALTH",
    4: "FULL_HEALTH",
    5: "SHAPE",
    6: "FULL_NUMERICS",
    7: "FULL_TENSOR",
    8: "REDUCE_INF_NAN_THREE_SLOTS",
}
_DECIDES_TO = {2, 3, 4, 7}


@dataclass(frozen=True)
class TfdbgHit:
    watchpoint_id: int
    index: int  # the trace's position in `.graph_execution_traces`
    op_name: str
    op_type: str
    output_slot: int
    graph: str  # the graph's name (its id when it has none)
    step: int | None
    # NaN, −Inf, +Inf counts where the mode gives them (CURT_HEALTH gives a flag only)
    counts: tuple[int, int, int] | None
    result: CheckResult


@dataclass
class TfdbgReport:
    hits: list[TfdbgHit] = field(default_factory=list)
    refusals: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    checked: int = 0
    modes: set[int] = field(default_factory=set)


def _refusal(req: CheckRequest, category: Category) -> str | None:
    if req.condition == ConditionType.GENERAL_OVERFLOW and category == Category.TENSOR:
        return None
    return (
        f"The watchpoint {condition_label(req)} cannot be checked on a tfdbg dump yet: "
        "only TO (NaN or +/-Inf in any op output) is decided from its health counts or "
        "values."
    )


def derived_steps(dump: TfdbgDump) -> tuple[dict[str, str], dict[str, list[float]]]:
    """(graph id → the id of the called function graph that contains it, called function
    graph id → the wall times of its calls' `.execution` records, in order)."""
    calls: dict[str, list[float]] = {}
    for e in dump.executions:
        if e.graph_id:
            calls.setdefault(e.graph_id, []).append(e.wall_time)
    owner: dict[str, str] = {}
    for graph_id in dump.graphs:
        seen: set[str] = set()
        at = graph_id
        while at and at not in calls and at not in seen:  # `seen`: a hostile loop of ids
            seen.add(at)
            g = dump.graphs.get(at)
            at = g.outer_context_id if g is not None else ""
        if at in calls:
            owner[graph_id] = at
    return owner, calls


def _non_finite(mode: int, tp: pb.TensorProto) -> tuple[bool, tuple[int, int, int] | None] | str:
    """Whether a trace's tensor proto says NaN/Inf, with the counts where known, or a
    sentence saying why it cannot tell."""
    values = tensor_values(tp)
    if isinstance(values, str):
        return values
    if mode == 7:
        if values.dtype.kind not in "fc":
            return False, (0, 0, 0)
        finite = np.isfinite(values)
        if finite.all():
            return False, (0, 0, 0)
        nan = int(np.isnan(values).sum())
        return True, (nan, int((values == -np.inf).sum()), int((values == np.inf).sum()))
    need = {2: 2, 3: 5, 4: 8}[mode]
    if values.size < need:
        return f"a {MODE_NAMES[mode]} summary of {values.size} values, not {need}"
    v = values.astype(np.float64)
    lo = {2: 1, 3: 2, 4: 5}[mode]
    slots = v[lo : lo + (1 if mode == 2 else 3)]
    if not np.isfinite(slots).all():  # a damaged summary: a NaN is no count
        return f"a {MODE_NAMES[mode]} summary whose NaN/Inf counts are not numbers"
    if mode == 2:
        return bool(slots[0] > 0), None
    neg, pos, nan = (int(x) for x in slots)
    return neg + pos + nan > 0, (nan, neg, pos)


def check_tfdbg(
    dump: TfdbgDump,
    watches: Sequence[tuple[CheckRequest, Category]],
    node_filter: re.Pattern[str] | None = None,
) -> TfdbgReport:
    """Check `watches` (watchpoint id = position) on every graph execution trace, streamed
    (memory: the op records and one trace at a time)."""
    report = TfdbgReport()
    live = []
    for wp_id, (req, category) in enumerate(watches):
        sentence = _refusal(req, category)
        if sentence is None:
            live.append(wp_id)
        else:
            report.refusals[wp_id] = sentence
    owner, calls = derived_steps(dump)
    refused_modes: set[int] = set()
    for index, (trace, wall_time) in enumerate(dump.traces()):
        mode = trace.tensor_debug_mode
        report.modes.add(mode)
        if not live:
            continue
        if mode not in _DECIDES_TO:
            if mode not in refused_modes:
                refused_modes.add(mode)
                for wp_id in live:
                    report.refusals.setdefault(
                        wp_id,
                        (
                            f"The watchpoint {condition_label(watches[wp_id][0])} cannot be checked"
                            f": the dump was written with tensor_debug_mode="
                            f"{MODE_NAMES.get(mode, mode)}, which records no values or NaN/Inf "
                            "counts (use CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH or FULL_TENSOR)."
                        ),
                    )
            continue
        if node_filter is not None and not node_filter.search(trace.op_name):
            continue
        outcome = _non_finite(mode, trace.tensor_proto)
        if isinstance(outcome, str):
            report.problems.append(
                f"the trace of {trace.op_name!r} (record {index}) cannot be read: {outcome}."
            )
            continue
        report.checked += 1
        bad, counts = outcome
        if not bad:
            continue
        graph_id = trace.tfdbg_context_id
        graph = dump.graphs.get(graph_id)
        op = dump.ops.get((graph_id, trace.op_name))
        step = None
        fn = owner.get(graph_id)
        if fn is not None:
            step = bisect.bisect_left(calls[fn], wall_time)
        for wp_id in live:
            if wp_id in report.refusals:
                continue
            report.hits.append(
                TfdbgHit(
                    wp_id,
                    index,
                    trace.op_name,
                    op.op_type if op else "",
                    trace.output_slot,
                    (graph.name or graph_id) if graph else graph_id,
                    step,
                    counts,
                    CheckResult(True, 0, ()),
                )
            )
    # eager ops (outside any tf.function) carry their own values in `.execution`; they are
    # not checked yet, so a run holding some is incomplete rather than silently clean
    eager = [
        e for e in dump.executions if not e.graph_id and e.tensor_protos
        and (node_filter is None or node_filter.search(e.op_type))
    ]  # fmt: skip
    if eager and live:
        report.problems.append(
            f"{len(eager)} eager op execution{'s' if len(eager) != 1 else ''} (outside a "
            f"tf.function, e.g. {eager[0].op_type!r}) {'were' if len(eager) != 1 else 'was'} "
            "not checked: only the graph execution traces are."
        )
    if not report.modes and live:
        for wp_id in live:
            report.refusals.setdefault(
                wp_id,
                (
                    f"The watchpoint {condition_label(watches[wp_id][0])} cannot be checked: the "
                    "dump has no graph execution traces."
                ),
            )
    return report
