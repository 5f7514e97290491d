"""Watchpoints checked on a TensorFlow Debugger V2 dump (issue 32), from what its
`tensor_debug_mode` recorded for each op output, and the origin of its first NaN/Inf.

What each mode decides (DebugNumericSummaryV2's slot layouts, the ones TensorFlow's own
`DebugDataReader` users read), and why:

* CURT_HEALTH `[id, any NaN/Inf]`: TO alone (one flag; NaN and Inf are not told apart);
* CONCISE_HEALTH `[id, elements, -Inf, +Inf, NaN]`: TO (and the legacy HasNaN / HasInf);
* FULL_HEALTH `[id, device, dtype, rank, elements, -Inf, +Inf, NaN, negative, zero,
  positive]`: those, and TZ (`zero_percentage_ge`) from the zero and element counts;
* FULL_TENSOR (the values): every tensor condition, MindSpore's math (`scan_engine.evaluate`)
  on the values, the change conditions against the same op output's previous execution;
* NO_TENSOR and SHAPE record no value and no NaN/Inf count: nothing is decided;
* whatever a mode cannot decide is refused per watchpoint in one sentence naming what is
  missing (the run is then incomplete), never passed as clean. Thresholds read only where
  MindSpore evaluates them (no NaN/Inf), through the same `decide` as statistic.csv rows.

Which outputs a category watches (TensorFlow names no weights or gradients, so by its own
conventions): weights / parameters the `ReadVariableOp` outputs (a variable's value as read);
gradients the ops under a `gradient_tape/` or `gradients/` name scope (TF 2's GradientTape
and TF 1's `tf.gradients` name them so); activations the activation op types; tensors all.

Graph execution traces (ops inside `tf.function`s) are checked in file order, which is
execution order, and eager ops' own outputs (`.execution` records outside any function)
between them by wall time. One pass streams both files (the executions are caught up with
when a trace needs them: a hit, the origin); a clean health summary takes a lean path that
reads its NaN/Inf slots alone. Memory: the op records, one trace at a time, the previous
value of each watched output for the change conditions; hits go to `on_hit` as found (time
to first result), kept only without it.

Steps: records carry no step number, and traces of concurrently running graphs (a Keras
`fit`'s dataset pipeline beside the model) interleave, so a step is derived: the trace's
graph is followed out (`outer_context_id`) to the function graph the `.execution` file
records calls of, and the step is the count of that function's calls whose records were
written before the trace (a call's record is written when it returns, after its ops'
traces). A trace after the last call's record (a run killed mid-call) is that next call; a
graph no recorded call contains (a tf.data function run by the input pipeline) has none.

Origin: the first op output that went non-finite while its inputs were finite. In the
merged order of graph traces and eager outputs nothing before the first non-finite output
was non-finite, so each of its inputs the dump recorded was finite then (an input never
recorded, a function argument or an untraced op, is not held against it): the origin is
that first non-finite output, with its data inputs (a graph op's `input_names`, an eager
op's input tensor ids). TensorFlow's DebugDataReader, read with the full input check, gives
the same op on every fixture (tests/data/tfdbg/make_dumps.py, `origin`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.message import DecodeError

from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    LEGACY_STAT,
    CheckRequest,
    CheckResult,
    ConditionType,
)
from tuidebug.core.graph import Category
from tuidebug.core.scan_engine import decide_from_summary, evaluate
from tuidebug.offline.check.statistic import Missing, condition_label, decide
from tuidebug.offline.files.tfdbg import (
    CONCISE,
    CURT,
    FULL_HEALTH,
    FULL_TENSOR,
    HEALTH_MODES,
    MODE_NAMES,
    HealthCounts,
    TfdbgDump,
    categories,
    health_counts,
    tensor_values,
)
from tuidebug.offline.files.tfdbg_wire import WireLayout, wire_layout

__all__ = [
    "MODE_NAMES",
    "TfdbgHit",
    "TfdbgOrigin",
    "TfdbgReport",
    "call_owners",
    "categories",
    "check_tfdbg",
    "mode_refusal",
]

_HEALTH = HEALTH_MODES
_DECIDES_NON_FINITE = {CURT, CONCISE, FULL_HEALTH, FULL_TENSOR}
# the statistics a health mode gives beyond the NaN/Inf counts (parameter statistic names)
_GIVES = {CURT: frozenset(), CONCISE: frozenset(), FULL_HEALTH: frozenset({"zero_percentage"})}
_STAT_WORDS = {
    "max": "the maximum",
    "min": "the minimum",
    "mean": "the mean",
    "max_min": "the maximum and minimum",
    "abs_mean": "the mean of absolute values",
    "sd": "the standard deviation",
    "range_percentage": "the percentage of values in a range",
    "zero_percentage": "the count of zeros",
}
# dtypes with no number in them (string, resource, variant): no watchpoint applies
_NOT_NUMERIC = {7, 20, 21}


@dataclass(frozen=True)
class TfdbgHit:
    watchpoint_id: int
    # the trace's position in `.graph_execution_traces`, or (eager) the execution's in
    # `.execution`
    index: int
    op_name: str  # an eager op has no name: its type
    op_type: str
    output_slot: int
    graph: str  # the graph's name (its id when it has none); "" for an eager op
    step: int | None
    # NaN, −Inf, +Inf counts where the mode gives them (CURT_HEALTH gives a flag only)
    counts: tuple[int, int, int] | None
    result: CheckResult
    eager: bool = False


@dataclass(frozen=True)
class TfdbgOrigin:
    """The first op output that went non-finite while its recorded inputs were finite."""

    index: int  # as `TfdbgHit.index`
    op_name: str
    op_type: str
    output_slot: int
    graph: str
    step: int | None
    eager: bool
    # its data inputs (eager: input tensor ids); nothing before it was non-finite, so each
    # of them the dump recorded was finite
    inputs: tuple[str, ...]


@dataclass
class TfdbgReport:
    hits: list[TfdbgHit] = field(default_factory=list)  # empty when `on_hit` took them
    hit_count: int = 0
    refusals: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    checked: int = 0  # op outputs checked (graph traces and eager outputs)
    modes: set[int] = field(default_factory=set)
    origin: TfdbgOrigin | None = None
    eager_checked: int = 0
    step_count: int = 0  # the calls of the function called most: steps 0 … count - 1


def _param_stat(req: CheckRequest, name: str) -> str:
    stat = LEGACY_STAT.get(req.condition, "") if name == "param" else name
    return stat.rsplit("_", 1)[0] if "_" in stat else stat


def mode_refusal(req: CheckRequest, mode: int) -> str | None:
    """None when `mode`'s records decide `req`, else the one sentence saying why not."""
    label = condition_label(req)
    name = MODE_NAMES.get(mode, f"{mode}")
    if req.condition == ConditionType.IS_OVERFLOW:
        return (
            f"The watchpoint {label} cannot be checked on a tfdbg dump: it is decided from "
            "Ascend's overflow records, which TensorFlow does not write."
        )
    if mode == FULL_TENSOR:
        return None
    if mode not in _HEALTH:
        return (
            f"The watchpoint {label} cannot be checked: the dump was written with "
            f"tensor_debug_mode={name}, which records no values or NaN/Inf counts (use "
            "CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH or FULL_TENSOR)."
        )
    need = ""
    if req.condition in CHANGE_CONDITIONS:
        need = "the previous execution's values"
    elif mode == CURT and req.condition in (ConditionType.HAS_NAN, ConditionType.HAS_INF):
        need = "NaN and Inf counts apart"
    else:
        for p in req.params:
            stat = _param_stat(req, p.name)
            if not p.disabled and stat in _STAT_WORDS and stat not in _GIVES[mode]:
                need = f"{_STAT_WORDS[stat]} ({p.name})"
                break
    if not need:
        return None
    return (
        f"The watchpoint {label} cannot be checked on this tfdbg dump: it needs {need}, "
        f"which tensor_debug_mode={name} does not record (FULL_TENSOR records the values)."
    )


def call_owners(dump: TfdbgDump) -> dict[str, str]:
    """Graph id → the id of the called function graph that contains it (itself when it is
    called): the graph followed out by `outer_context_id` to the first graph some
    `.execution` record calls. A graph no call contains is not in it (no step)."""
    called = dump.called_graph_ids()
    owner: dict[str, str] = {}
    for graph_id in dump.graphs:
        seen: set[str] = set()
        at = graph_id
        while at and at not in called and at not in seen:  # `seen`: a hostile loop of ids
            seen.add(at)
            g = dump.graphs.get(at)
            at = g.outer_context_id if g is not None else ""
        if at in called:
            owner[graph_id] = at
    return owner


def _decide_health(req: CheckRequest, mode: int, h: HealthCounts) -> CheckResult | None:
    if req.condition == ConditionType.GENERAL_OVERFLOW and not req.params and not h.bad:
        return None  # the common case, decided without building a result
    if mode == CURT:
        return decide_from_summary(req, count=1, has_nan=h.bad, has_inf=False)
    stats: dict[str, float | None] = {
        "count": h.count,
        "nan_count": h.nan,
        "neg_inf_count": h.neg,
        "pos_inf_count": h.pos,
        "zero_count": h.zero,
    }
    result = decide(req, stats)
    return None if isinstance(result, Missing) else result


# the fast path's summary layouts: (float64 content bytes, its unpack, the NaN/Inf slots)
# (float64 content bytes, an unpack of its NaN/Inf count slots alone, those slots clean)
_FastLayout = tuple[int, Callable[[bytes], tuple[float, ...]], tuple[float, ...]]
_FAST: dict[int, _FastLayout] = {
    CURT: (16, struct.Struct("<8xd").unpack_from, (0.0,)),
    CONCISE: (40, struct.Struct("<16x3d").unpack_from, (0.0, 0.0, 0.0)),
    FULL_HEALTH: (88, struct.Struct("<40x3d").unpack_from, (0.0, 0.0, 0.0)),
}
# the same, for `clean_health_trace`: each mode's slots and which are its NaN/Inf counts
_WIRE: dict[int, WireLayout] = {
    CURT: wire_layout(CURT, 2, range(1, 2)),
    CONCISE: wire_layout(CONCISE, 5, range(2, 5)),
    FULL_HEALTH: wire_layout(FULL_HEALTH, 11, range(5, 8)),
}
_MAX_CACHED_OPS = 100_000  # op facts kept (a real graph has thousands; hostile names, more)


@dataclass(frozen=True)
class _Op:
    """What a trace's hits need of its op, looked up once per op."""

    op_type: str
    cats: frozenset[Category]
    watched: bool
    graph: str
    owner: str | None
    inputs: tuple[str, ...]


class _Pass:
    """One pass over a dump: the state the module docstring lists, and the decisions."""

    def __init__(
        self,
        dump: TfdbgDump,
        watches: Sequence[tuple[CheckRequest, Category]],
        node_filter: re.Pattern[str] | None,
        on_hit: Callable[[TfdbgHit], None] | None,
        steps: Callable[[int], bool] | None = None,
    ) -> None:
        self.dump = dump
        self.steps = steps
        self.node_filter = node_filter
        self.on_hit = on_hit
        self.report = TfdbgReport()
        self.live: list[tuple[int, CheckRequest, Category]] = []
        for wp_id, (req, category) in enumerate(watches):
            if req.condition == ConditionType.IS_OVERFLOW:
                self.report.refusals[wp_id] = mode_refusal(req, FULL_TENSOR) or ""
            else:
                self.live.append((wp_id, req, category))
        self.by_mode: dict[int, list[tuple[int, CheckRequest, Category]]] = {}
        # per mode: the fast path's layout where a trace may take it (TO alone on every
        # tensor, no node filter: only a summary with a NaN/Inf count needs more than its
        # counts), else None
        self.fast: dict[int, _FastLayout | None] = {}
        self.wire: dict[int, WireLayout] = {}  # the same, for `clean_health_trace`
        self.owner = call_owners(dump)
        self.calls: dict[str, int] = {}  # called graph id → its calls recorded so far
        self.previous: dict[tuple[str, str, int], np.ndarray] = {}
        self.needs_previous = any(r.condition in CHANGE_CONDITIONS for _w, r, _c in self.live)
        self.ops: dict[tuple[str, str], _Op] = {}
        self.eager: dict[str, tuple[frozenset[Category], bool]] = {}  # op type → its facts

    # -------------------------------------------------------------- per mode, once
    def for_mode(self, mode: int) -> list[tuple[int, CheckRequest, Category]]:
        found = self.by_mode.get(mode)
        if found is None:
            self.report.modes.add(mode)
            found = []
            for wp_id, req, category in self.live:
                sentence = mode_refusal(req, mode)
                if sentence is None:
                    found.append((wp_id, req, category))
                else:
                    self.report.refusals.setdefault(wp_id, sentence)
            self.by_mode[mode] = found
            fast = self.node_filter is None and all(
                c == Category.TENSOR
                and r.condition == ConditionType.GENERAL_OVERFLOW
                and not r.params
                for _w, r, c in found
            )
            self.fast[mode] = _FAST.get(mode) if fast else None
            if fast and mode in _WIRE:
                self.wire[mode] = _WIRE[mode]
        return found

    def op(self, graph_id: str, op_name: str) -> _Op:
        key = (graph_id, op_name)
        found = self.ops.get(key)
        if found is None:
            op = self.dump.ops.get(key)
            graph = self.dump.graphs.get(graph_id)
            op_type = op.op_type if op is not None else ""
            found = _Op(
                op_type,
                categories(op_name, op_type),
                self.node_filter is None or bool(self.node_filter.search(op_name)),
                (graph.name or graph_id) if graph is not None else graph_id,
                self.owner.get(graph_id),
                tuple(i for i in op.input_names if not i.startswith("^")) if op else (),
            )
            if len(self.ops) >= _MAX_CACHED_OPS:
                self.ops.clear()
            self.ops[key] = found
        return found

    # -------------------------------------------------------------- one op output
    def output(
        self,
        mode: int,
        tp: pb.TensorProto,
        key: tuple[str, str, int],
        cats: frozenset[Category],
        watched: bool,
    ) -> tuple[bool | None, tuple[int, int, int] | None, list[tuple[int, CheckResult]]]:
        """(non-finite? None: cannot tell, the counts, the results to report) for one op
        output; a summary or tensor that cannot be read is one problem."""
        wants = [w for w in self.for_mode(mode) if watched and w[2] in cats]
        results: list[tuple[int, CheckResult]] = []
        if not tp.ByteSize():
            # TensorFlow records an empty proto for an output its mode does not summarize
            # (not a float: a resource, a string), as DebugDataReader's None says
            return None, None, results
        if mode in _HEALTH:
            h = health_counts(mode, tp)
            if isinstance(h, str):
                self.problem(key, h)
                return None, None, results
            counts = None if mode == CURT else (int(h.nan), int(h.neg), int(h.pos))
            for wp_id, req, _c in wants:
                result = _decide_health(req, mode, h)
                if result is not None and result.reported:
                    results.append((wp_id, result))
            if wants:
                self.report.checked += 1
            return h.bad, counts, results
        if mode != FULL_TENSOR:
            return None, None, results
        if tp.dtype in _NOT_NUMERIC:
            if wants:
                self.report.checked += 1
            return False, None, results
        values = tensor_values(tp)
        if isinstance(values, str):
            self.problem(key, values)
            return None, None, results
        counts = (0, 0, 0)
        bad = False
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            bad = True
            counts = (
                int(np.isnan(values).sum()),
                int((values == -np.inf).sum()),
                int((values == np.inf).sum()),
            )
        if not wants:
            return bad, counts, results
        self.report.checked += 1
        previous = self.previous.get(key) if self.needs_previous else None
        requests = [
            w for w in wants if w[1].condition not in CHANGE_CONDITIONS or previous is not None
        ]
        if requests:
            outcome = evaluate(values, [r for _w, r, _c in requests], previous)
            results = [(w[0], r) for w, r in zip(requests, outcome, strict=True) if r.reported]
        if self.needs_previous and any(w[1].condition in CHANGE_CONDITIONS for w in wants):
            self.previous[key] = values.copy()  # the buffer is the record's: kept apart
        return bad, counts, results

    def problem(self, key: tuple[str, str, int], why: str) -> None:
        where = f"{key[1]!r}:{key[2]}" + (f" in graph {key[0]!r}" if key[0] else " (eager)")
        self.report.problems.append(f"the recorded output {where} cannot be read: {why}.")

    def emit(self, hit: TfdbgHit) -> None:
        if self.steps is not None and (hit.step is None or not self.steps(hit.step)):
            return  # outside the steps asked for (an eager op or a pipeline op has none)
        self.report.hit_count += 1
        if self.on_hit is not None:
            self.on_hit(hit)
        else:
            self.report.hits.append(hit)

    # -------------------------------------------------------------- a graph trace
    def trace(self, index: int, trace: pb.GraphExecutionTrace, mode: int) -> None:
        """A trace the fast path (in `check_tfdbg`'s loop) did not decide."""
        if mode not in self.fast:
            self.for_mode(mode)
        if mode not in _DECIDES_NON_FINITE:
            return
        graph_id, op_name, slot = trace.tfdbg_context_id, trace.op_name, trace.output_slot
        op = self.op(graph_id, op_name)
        key = (graph_id, op_name, slot)
        bad, counts, results = self.output(mode, trace.tensor_proto, key, op.cats, op.watched)
        if bad is None or not ((bad and self.report.origin is None) or results):
            return
        step = None if op.owner is None else self.calls.get(op.owner, 0)
        if bad and self.report.origin is None:
            # nothing before it was non-finite, so each input recorded before was finite
            self.report.origin = TfdbgOrigin(
                index, op_name, op.op_type, slot, op.graph, step, False, op.inputs
            )
        for wp_id, result in results:
            self.emit(
                TfdbgHit(wp_id, index, op_name, op.op_type, slot, op.graph, step, counts, result)
            )

    # -------------------------------------------------------------- an execution
    def execution(self, index: int, proto: pb.Execution, wall_time: float) -> None:
        graph_id = proto.graph_id
        if graph_id:
            self.calls[graph_id] = self.calls.get(graph_id, 0) + 1
            return  # a function call: its ops' outputs are its graph's traces
        protos = proto.tensor_protos
        if not len(protos):
            return
        mode = proto.tensor_debug_mode
        if mode not in _DECIDES_NON_FINITE:
            self.for_mode(mode)
            return
        # an eager op's facts by its type, looked up once (a long run has many thousands
        # of eager ops of a few types); nothing else is made per execution
        op_type = proto.op_type
        found = self.eager.get(op_type)
        if found is None:
            watched = self.node_filter is None or bool(self.node_filter.search(op_type))
            found = (categories(op_type, op_type), watched)
            if len(self.eager) >= _MAX_CACHED_OPS:
                self.eager.clear()
            self.eager[op_type] = found
        cats, watched = found
        report = self.report
        for slot, tp in enumerate(protos):
            checked = report.checked
            bad, counts, results = self.output(mode, tp, ("", op_type, slot), cats, watched)
            report.eager_checked += report.checked - checked
            if bad and report.origin is None:
                inputs = tuple(f"tensor {t}" for t in proto.input_tensor_ids)
                report.origin = TfdbgOrigin(index, op_type, op_type, slot, "", None, True, inputs)
            for wp_id, result in results:
                self.emit(
                    TfdbgHit(wp_id, index, op_type, op_type, slot, "", None, counts, result, True)
                )


def check_tfdbg(
    dump: TfdbgDump,
    watches: Sequence[tuple[CheckRequest, Category]],
    node_filter: re.Pattern[str] | None = None,
    on_hit: Callable[[TfdbgHit], None] | None = None,
    steps: Callable[[int], bool] | None = None,
) -> TfdbgReport:
    """Check `watches` (watchpoint id = position) on every graph execution trace and eager
    op output, in one pass streaming both files merged by wall time, and find the origin
    (module docstring). Hits go to `on_hit` as they are found when given (then
    `report.hits` stays empty), else into `report.hits`. With `steps`, only hits at a
    derived step it accepts are reported (the origin is the run's, whatever `steps`);
    `report.step_count` says how many steps the run has."""
    run = _Pass(dump, watches, node_filter, on_hit, steps)
    executions = enumerate(dump.execution_events())
    inf = float("inf")
    at, (pending, pending_wall) = next(executions, (-1, (None, inf)))
    fast = run.fast
    report = run.report
    skipped = 0  # events of the traces file that are no trace: not counted as traces
    clean = 0  # traces the fast path found clean, added to `report.checked` at the end
    # the commonest trace, clean, told from its bytes where it is read (`tfdbg_wire`:
    # the answer decoding would give, at less than half the cost), only counted
    wire_clean = [0]
    parse = pb.DebugEvent.FromString
    at_event = -1
    for offset, _length, data in dump.trace_records(run.wire, wire_clean):
        at_event += 1
        try:
            event = parse(data)
        except (DecodeError, RecursionError, ValueError) as err:
            dump.undecodable_trace(offset, err)
            skipped += 1  # no event: not counted as a trace
            continue
        trace = event.graph_execution_trace
        mode = trace.tensor_debug_mode
        # the common case, inlined and kept lean (a long run has millions of traces): a
        # health summary whose NaN/Inf count slots are all exactly 0 decides TO without
        # more (nor the executions before it: caught up with when a trace needs them).
        # A NaN or a negative count is not 0.0, so it takes the slow path, which says so.
        layout = fast.get(mode)
        if layout is not None:
            tp = trace.tensor_proto
            content = tp.tensor_content
            if len(content) == layout[0] and tp.dtype == 2 and layout[1](content) == layout[2]:
                clean += 1
                continue
        if not mode and not event.HasField("graph_execution_trace"):
            skipped += 1  # another event in the traces file: no trace
            continue
        index = at_event + wire_clean[0] - skipped
        # a call's record is written when it returns: the calls (and eager ops) before
        # this trace, for its step (and the order of hits and the origin)
        wall_time = event.wall_time
        while pending_wall < wall_time:
            run.execution(at, pending, pending_wall)  # type: ignore[arg-type]
            at, (pending, pending_wall) = next(executions, (-1, (None, inf)))
        run.trace(index, trace, mode)
    while pending is not None:
        run.execution(at, pending, pending_wall)
        at, (pending, pending_wall) = next(executions, (-1, (None, inf)))
    report.checked += clean + wire_clean[0]
    report.step_count = max(run.calls.values(), default=0)
    if not report.modes and run.live:
        for wp_id, req, _c in run.live:
            report.refusals.setdefault(
                wp_id,
                f"The watchpoint {condition_label(req)} cannot be checked: the dump has no "
                "graph execution traces and no eager op outputs.",
            )
    return report
