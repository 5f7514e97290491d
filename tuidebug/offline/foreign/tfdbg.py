"""TensorFlow Debugger V2 dumps (issue 32) as a `DumpSource`: `tuidebug offline DIR`,
`exec`, the API and the session's checks open a tfdbg dump like any other.

What the dump model sees:

* one rank (0); one graph per TensorFlow graph that has op records (the `.graphs` file's
  `graph_op_creation`s: TF 2.21's graph_defs are empty), named by its graph name (`#2`…
  added when two share one); nodes its ops in creation order, the name scopes of their
  names the scope tree, their op types, edges from their `input_names` (`^x` control
  edges kept as such), their outputs as slots; watchpoint categories by TensorFlow's
  conventions (`files/tfdbg.categories`); stacks from `.stack_frames` with each frame's
  line read from the dump's own `.source_files` (a file's text read when a stack first
  needs it, then kept), so no local copy of the code is needed;
* steps: records carry no step number, and traces of concurrently running graphs (a Keras
  `fit`'s tf.data pipeline beside the model) interleave, so steps are derived as the check
  derives them: the calls of the function `.execution` records most (the training step),
  a trace belonging to the step whose call returned first at or after it was written. For
  a graph that function contains this is the call it ran in; for another (the pipeline's
  `map`) it is the step that was running when the trace was written. Said in a note;
* FULL_TENSOR values: each output's `path` is a reference to its trace's record
  (`files/tfdbg_values`), so `pt`, the tensor view, `L` and the checker read the recorded
  values by offset when asked, bounded by the dump's budget (the checker decides every
  tensor condition and the change conditions on them, as `tuidebug check` does);
* one step's tensors: its traces read by offset (`TfdbgDump.trace_index`: one framing
  pass on first use, 20 bytes a trace), each output's statistics from its mode: element,
  NaN, ±Inf (and FULL_HEALTH's zero) counts from the health summaries, count and shape
  from SHAPE, and from FULL_TENSOR's values count, NaN/±Inf/zero counts, max, min and mean;
  an op output traced more than once in a step (a loop) has its counts summed. CURT_HEALTH's
  one flag is `non_finite_count` (TO and every condition needing only "any NaN/±Inf" are
  decided from it, as `tuidebug check` does; HasNaN / HasInf and thresholds are refused in
  one sentence, `statistics_words`); NO_TENSOR gives no statistics;
* eager ops (outside any tf.function) with recorded values are the graph `eager`: each a
  node named by its op type and its place among the step's ops of that type
  (`eager/Mul`, `eager/Mul_1`…, so the k-th Mul of every step is one node), in the step
  that was running when it ran (after the last call: the last step), its outputs'
  statistics and FULL_TENSOR values read from its `.execution` record like a trace's;
  checked like every graph, as `tuidebug check` checks them;
* the history (`h`, `graph_runs`): one row per derived step for the function's call, its
  nested graphs as sub-graphs, and the eager graph where the step ran eager ops; the
  source view's text (`source_text`): the whole file from `.source_files`.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.core.graph import Graph, Node, NodeKind, StackFrame, TensorSpec
from tuidebug.core.graph_run import GraphRun
from tuidebug.offline.files.tfdbg import (
    FULL_TENSOR,
    HEALTH_MODES,
    TfdbgDump,
    TfdbgError,
    categories,
    find_tfdbg_prefix,
    health_counts,
    tensor_values,
)
from tuidebug.offline.files.tfdbg_values import MARK, value_ref
from tuidebug.offline.foreign.source import DumpSource, ForeignGraph, ForeignStep, ForeignTensor
from tuidebug.offline.layout.errors import DumpError

__all__ = ["TfdbgSource", "tfdbg_source"]

SHAPE = 5
EAGER = "eager"  # the graph of the eager ops' outputs
# tensorflow.DataType numbers → names, for node details
_DTYPE_NAMES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}
_SUMMED = ("count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count", "non_finite_count")


def tfdbg_source(root: str | os.PathLike[str]) -> TfdbgSource | None:
    """The tfdbg dump in `root` as a source, or None when `root` holds none; two runs in
    one folder are a `DumpError` (one sentence)."""
    try:
        if find_tfdbg_prefix(root) is None:
            return None
        return TfdbgSource(root)
    except TfdbgError as err:
        raise DumpError(str(err)) from None


class _EagerOp(NamedTuple):
    op_type: str
    outputs: int
    frames: tuple[str, ...]


class _Steps:
    """The derived steps (module docstring): each trace's step, and each step's eager ops
    with values (where their records are, and their node in the eager graph)."""

    def __init__(self, dump: TfdbgDump) -> None:
        calls: dict[str, list[float]] = {}
        # per eager op with values, in arrays (a long eager run has millions): its wall
        # time, record place, and its (type, output count, stack) as an index into `kinds`
        # (few distinct ones; never its values: a FULL_TENSOR run's would all be in memory)
        walls_e: array[float] = array("d")
        offsets_e: array[int] = array("q")
        lengths_e: array[int] = array("q")
        kind_e: array[int] = array("i")
        kinds: dict[_EagerOp, int] = {}
        for offset, length, proto, wall in dump.execution_records():
            if proto.graph_id:
                calls.setdefault(proto.graph_id, []).append(wall)
            elif any(tp.ByteSize() for tp in proto.tensor_protos):  # an empty one: no value
                op = _EagerOp(
                    proto.op_type,
                    len(proto.tensor_protos),
                    tuple(proto.code_location.stack_frame_ids),
                )
                walls_e.append(wall)
                offsets_e.append(offset)
                lengths_e.append(length)
                kind_e.append(kinds.setdefault(op, len(kinds)))
        self.function_id = max(calls, key=lambda g: len(calls[g])) if calls else ""
        clock = calls[self.function_id] if calls else []
        self.function_calls = len(clock)
        walls = np.sort(np.asarray(clock, np.float64))
        self.offsets, self.lengths, trace_walls = dump.trace_index()
        self.of_trace = np.searchsorted(walls, trace_walls, side="left")
        self.count = max(len(clock), int(self.of_trace.max()) + 1 if len(self.of_trace) else 0)
        eager = np.searchsorted(walls, np.frombuffer(walls_e, np.float64), side="left")
        if self.count:  # after the last call (a training's end: metrics read): the last step
            eager = np.minimum(eager, self.count - 1)
        else:
            self.count = 1 if len(eager) else 0  # eager ops only: one step
        # each eager op with values as a node of the eager graph, named by its type and
        # its place among the step's ops of that type (`eager/Mul`, `eager/Mul_1`…), so
        # the k-th Mul of a step is one node in every step (what change conditions need)
        by_index = list(kinds)
        self.eager_nodes: dict[str, _EagerOp] = {}  # node name → its first execution
        ids: dict[str, int] = {}
        node_e: array[int] = array("i")
        seen: Counter[tuple[int, str]] = Counter()
        for step, kind in zip(eager.tolist(), kind_e, strict=True):
            op = by_index[kind]
            k = seen[(step, op.op_type)]
            seen[(step, op.op_type)] += 1
            # under `eager/`: a graph op may be named like an op type (`ReadVariableOp`)
            name = f"eager/{op.op_type}" + (f"_{k}" if k else "")
            self.eager_nodes.setdefault(name, op)
            node_e.append(ids.setdefault(name, len(ids)))
        self._names = list(ids)
        # eager ops in file order, so by step (the walls grow): a step's are one slice
        self._eager_step = np.asarray(eager, np.int64)
        self._eager_node = np.frombuffer(node_e, np.int32).copy()
        self._eager_offset = np.frombuffer(offsets_e, np.int64).copy()
        self._eager_length = np.frombuffer(lengths_e, np.int64).copy()

    def eager_of(self, step: int) -> list[tuple[str, int, int]]:
        """The step's eager ops with values: (node, data offset, length) in run order."""
        lo, hi = np.searchsorted(self._eager_step, [step, step + 1], side="left").tolist()
        return [
            (self._names[n], o, ln)
            for n, o, ln in zip(
                self._eager_node[lo:hi].tolist(),
                self._eager_offset[lo:hi].tolist(),
                self._eager_length[lo:hi].tolist(),
                strict=True,
            )
        ]


class TfdbgSource(DumpSource):
    """A tfdbg dump folder (module docstring)."""

    kind = "tfdbg"
    statistics_words = (
        "tfdbg's recorded summaries (CURT_HEALTH: one NaN-or-Inf flag; CONCISE_HEALTH: element, "
        "NaN and ±Inf counts; FULL_HEALTH: also zero counts)"
    )

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.dump = TfdbgDump(root)
        self.problems = self.dump.problems  # the reader's own list: sentences as found
        self.backend = "TensorFlow"
        self.version = self.dump.tensorflow_version
        self.net_name = Path(self.dump.prefix).name
        self._graphs: dict[str, Graph] | None = None
        self._names: dict[str, str] = {}  # graph id → the graph's name here
        self._steps: _Steps | None = None
        self._eager_graph = ""  # the eager ops' graph's name, when there are some
        self._lines: dict[str, list[str] | None] = {}

    # ------------------------------------------------------------------ discovery
    def ranks(self) -> list[int]:
        return [0]

    def steps(self) -> _Steps:
        if self._steps is None:
            self._steps = _Steps(self.dump)
            if self._steps.function_calls:
                derived = (
                    f"Steps are derived (tfdbg records carry no step number): the "
                    f"{self._steps.function_calls} calls of the function called most; "
                    "a trace belongs to the call that returned next after it."
                )
                self.problems.append(derived)
                self.notes.append(derived)
        return self._steps

    def iterations(self, rank: int) -> list[int]:
        return list(range(self.steps().count)) if rank == 0 else []

    # ------------------------------------------------------------------ graphs
    def graphs(self, rank: int) -> dict[str, Graph]:
        if self._graphs is None:
            self._graphs = self._build()
        return self._graphs if rank == 0 else {}

    def _build(self) -> dict[str, Graph]:
        by_graph: dict[str, list[tuple[str, str]]] = {}
        for key in self.dump.ops:
            by_graph.setdefault(key[0], []).append(key)
        taken: Counter[str] = Counter()
        out: dict[str, Graph] = {}
        for graph_id, keys in by_graph.items():
            g = self.dump.graphs.get(graph_id)
            name = (g.name if g is not None and g.name else graph_id) or "graph"
            taken[name] += 1
            if taken[name] > 1:
                name = f"{name}#{taken[name]}"
            self._names[graph_id] = name
            names = {k[1] for k in keys}
            nodes = [self._node(name, key, names) for key in keys]
            cats = {n.name: categories(n.name, n.op_type) for n in nodes}
            out[name] = ForeignGraph(name, nodes, cats)
        eager = self.steps().eager_nodes
        if eager:  # eager ops with values: a graph of their own (module docstring)
            name = EAGER if not taken[EAGER] else f"{EAGER}#{taken[EAGER] + 1}"
            self._eager_graph = name
            nodes = [
                Node(
                    node,
                    NodeKind.OPERATOR,
                    op.op_type,
                    scope="eager",
                    graph_name=name,
                    outputs=[TensorSpec(slot) for slot in range(op.outputs)],
                    attributes={"op type": op.op_type, "eager": "outside any tf.function"},
                    stack=self._stack(op.frames),
                    dump_name=node,
                )
                for node, op in eager.items()
            ]
            cats = {n.name: categories(n.op_type, n.op_type) for n in nodes}
            out[name] = ForeignGraph(name, nodes, cats)
        return out

    def _node(self, graph: str, key: tuple[str, str], names: set[str]) -> Node:
        op = self.dump.ops[key]
        inputs: list[str] = []
        control: list[str] = []
        for raw in op.input_names:
            is_control = raw.startswith("^")
            source = raw[1:] if is_control else raw.rpartition(":")[0] or raw
            if source in names and source not in inputs:  # not a captured outer tensor
                inputs.append(source)
                if is_control:
                    control.append(source)
        attributes = {"op type": op.op_type, "tfdbg graph id": op.graph_id}
        if op.input_names:
            attributes["inputs"] = ", ".join(op.input_names)
        return Node(
            op.op_name,
            NodeKind.OPERATOR,
            op.op_type,
            scope=op.op_name.rpartition("/")[0],
            graph_name=graph,
            inputs=inputs,
            outputs=[TensorSpec(slot) for slot in range(max(op.num_outputs, 0))],
            attributes=attributes,
            stack=self._stack(op.stack_frame_ids),
            dump_name=op.op_name,
            control_inputs=tuple(control),
        )

    def _stack(self, frame_ids: tuple[str, ...]) -> list[StackFrame]:
        frames = []
        for frame_id in frame_ids:
            found = self.dump.stack_frames.get(frame_id)
            if found is None:
                continue
            file_index, line, func = found
            order = self.dump.source_order
            path = order[file_index] if 0 <= file_index < len(order) else ""
            code = self._line(path, line) or func
            frames.append(StackFrame(path, line if path else None, code))
        return frames

    def _line(self, path: str, line: int) -> str:
        """Line `line` (1-based) of `path` as the dump's source text holds it, or ""."""
        if not path:
            return ""
        if path not in self._lines:
            self._lines[path] = self.dump.source_lines(path)
        lines = self._lines[path]
        if lines is None or not 0 < line <= len(lines):
            return ""
        return lines[line - 1].strip()

    # ------------------------------------------------------------------ one step
    def read_step(self, rank: int, graph: str, iteration: int) -> ForeignStep:
        step = ForeignStep()
        if rank != 0:
            return step
        steps = self.steps()
        self.graphs(0)
        nodes = self._graphs.get(graph) if self._graphs else None
        if nodes is None:
            return step
        if graph == self._eager_graph:
            self._read_eager(step, steps.eager_of(iteration), iteration)
            return step
        unreadable = 0
        chosen = np.nonzero(steps.of_trace == iteration)[0]
        places = list(
            zip(steps.offsets[chosen].tolist(), steps.lengths[chosen].tolist(), strict=True)
        )
        events = self.dump.read_events("graph_execution_traces", places)
        for place, event in zip(places, events, strict=True):
            if isinstance(event, str):
                unreadable += 1
                if unreadable == 1:
                    step.blockers.append(f"{event}; its trace is not in step {iteration}.")
                continue
            if not event.HasField("graph_execution_trace"):
                continue
            trace = event.graph_execution_trace
            if self._names.get(trace.tfdbg_context_id) != graph:
                continue
            node = nodes.get(trace.op_name)
            if node is None:
                continue  # an op the graph records do not hold: nothing to show it under
            self._add(step, node.name, trace, place)
        if unreadable > 1:
            step.blockers.append(f"{unreadable} traces of step {iteration} could not be read.")
        return step

    def _read_eager(
        self, step: ForeignStep, ops: list[tuple[str, int, int]], iteration: int
    ) -> None:
        """The step's eager ops' outputs, read from their `.execution` records."""
        path = self.dump.path("execution")
        events = self.dump.read_events("execution", [(o, n) for _node, o, n in ops])
        for (node, offset, length), event in zip(ops, events, strict=True):
            if isinstance(event, str):
                step.blockers.append(f"{event}; eager op {node} is not in step {iteration}.")
                continue
            e = event.execution
            for slot, tp in enumerate(e.tensor_protos):
                stats, dtype, shape = _statistics(e.tensor_debug_mode, tp)
                if isinstance(stats, str):
                    step.blockers.append(f"The eager output {node}:{slot} cannot be read: {stats}.")
                    continue
                if not stats and not tp.ByteSize():
                    continue  # an output the mode does not summarize (not a float)
                ref = None
                if e.tensor_debug_mode == FULL_TENSOR:
                    ref = value_ref(path, [(offset, length, slot)])
                step.tensors[(node, slot)] = ForeignTensor(
                    node, slot, f"{node}:{slot}", dtype, shape, stats, ref
                )

    def _add(
        self, step: ForeignStep, node: str, trace: pb.GraphExecutionTrace, place: tuple[int, int]
    ) -> None:
        slot = trace.output_slot
        stats, dtype, shape = _statistics(trace.tensor_debug_mode, trace.tensor_proto)
        if isinstance(stats, str):
            step.blockers.append(f"The trace of {node}:{slot} cannot be read: {stats}.")
            return
        # FULL_TENSOR: the value is the record's own tensor proto, named by a reference
        # (`files/tfdbg_values`) and read only when viewed or checked
        path = None
        if trace.tensor_debug_mode == FULL_TENSOR and trace.tensor_proto.ByteSize():
            path = value_ref(self.dump.path("graph_execution_traces"), [(*place, 0)])
        before = step.tensors.get((node, slot))
        if before is not None:  # traced again in the step (a loop): counts summed
            stats = _merge(before.stats, stats)
            dtype, shape = before.dtype or dtype, before.shape or shape
            # the values of every run, concatenated (flat) when viewed or checked
            path = f"{before.path},{path.rpartition(MARK)[2]}" if path and before.path else None
            shape = None if path else shape
        step.tensors[(node, slot)] = ForeignTensor(
            node, slot, f"{node}:{slot}", dtype, shape, stats, path
        )

    def aliases(self, rank: int) -> Mapping[str, tuple[str, int]]:
        return {}

    def graph_runs(self, rank: int) -> list[GraphRun] | None:
        """The execution list (DV2's "Graph Executions"), one row per derived step: the
        call of the function called most (the training step), with the graphs it contains
        as its sub-graphs, and the eager graph where that step ran eager ops with values.
        Graphs no call contains (a tf.data pipeline's) are left out: which steps they ran
        in is not recorded per graph."""
        if rank != 0:
            return []
        graphs = self.graphs(0)
        steps = self.steps()
        runs: list[GraphRun] = []
        function = self._names.get(steps.function_id, "")
        inside: tuple[str, ...] = ()
        if function:
            inside = tuple(
                self._names[g]
                for g in self.dump.graphs
                if g != steps.function_id
                and g in self._names
                and self._inside(g, steps.function_id)
            )
        for step in range(steps.count):
            if function and step < steps.function_calls:
                runs.append(GraphRun(step, function, True, inside))
            if self._eager_graph in graphs and steps.eager_of(step):
                runs.append(GraphRun(step, self._eager_graph, True))
        return runs

    def _inside(self, graph_id: str, function_id: str) -> bool:
        """Whether `graph_id` is nested in `function_id` (followed out by
        `outer_context_id`; `seen` stops a hostile loop of ids)."""
        seen: set[str] = set()
        at = graph_id
        while at and at not in seen:
            if at == function_id:
                return True
            seen.add(at)
            g = self.dump.graphs.get(at)
            at = g.outer_context_id if g is not None else ""
        return False

    def source_text(self, path: str) -> list[str] | None:
        """The whole file as `.source_files` holds it (read now, CRC-checked; not kept:
        the view holds it while open), or the copy the stacks' lines were read from."""
        if path in self._lines:
            return self._lines[path]
        return self.dump.source_lines(path)


def _statistics(
    mode: int, tp: pb.TensorProto
) -> tuple[dict[str, float] | str, str, tuple[int, ...] | None]:
    """(statistics under `StatisticRow.stats` keys or a sentence, dtype, shape) of one
    trace's tensor proto as its mode records it."""
    if not tp.ByteSize():
        return {}, "", None  # an output the mode does not summarize (not a float)
    if mode in HEALTH_MODES:
        h = health_counts(mode, tp)
        if isinstance(h, str):
            return h, "", None
        if h.count is None:  # CURT_HEALTH: one flag, NaN and ±Inf not told apart
            return {"non_finite_count": 1.0 if h.bad else 0.0}, "", None
        stats = {
            "count": h.count,
            "nan_count": h.nan,
            "neg_inf_count": h.neg,
            "pos_inf_count": h.pos,
        }
        dtype = ""
        if mode == 4:
            values = tensor_values(tp)
            if not isinstance(values, str) and values.size >= 11:
                dtype = _DTYPE_NAMES.get(int(values[2]), "")
        if h.zero is not None:
            stats["zero_count"] = h.zero
        return stats, dtype, None
    if mode == SHAPE:
        values = tensor_values(tp)
        if isinstance(values, str) or values.size < 10:
            return {}, "", None
        rank = int(values[2]) if 0 <= values[2] <= 6 else 0
        shape = tuple(int(x) for x in values[4 : 4 + rank])
        return {"count": float(values[3])}, _DTYPE_NAMES.get(int(values[1]), ""), shape
    if mode != FULL_TENSOR:
        return {}, "", None
    values = tensor_values(tp)
    if isinstance(values, str):
        return values, "", None
    shape = tuple(max(d.size, 0) for d in tp.tensor_shape.dim)
    dtype = _DTYPE_NAMES.get(tp.dtype, "")
    if values.dtype.kind not in "fiub" or not values.size:
        return {"count": float(values.size)}, dtype, shape
    v = values.astype(np.float64)
    finite = v[np.isfinite(v)]
    stats = {
        "count": float(v.size),
        "nan_count": float(np.isnan(v).sum()),
        "neg_inf_count": float((v == -np.inf).sum()),
        "pos_inf_count": float((v == np.inf).sum()),
        "zero_count": float((v == 0).sum()),
    }
    if finite.size:
        stats.update(max=float(finite.max()), min=float(finite.min()), avg=float(finite.mean()))
    return stats, dtype, shape


def _merge(a: Mapping[str, object], b: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in _SUMMED:
        x, y = a.get(key), b.get(key)
        if isinstance(x, (int, float)) and y is not None:
            out[key] = float(x) + y
    for key, pick in (("max", max), ("min", min)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, (int, float)) and y is not None:
            out[key] = pick(float(x), y)
    xa, ya, xc, yc = a.get("avg"), b.get("avg"), a.get("count"), b.get("count")
    if isinstance(xa, float) and ya is not None and isinstance(xc, float) and yc:
        out["avg"] = (xa * xc + ya * yc) / (xc + yc) if xc + yc else xa
    return out
