"""Trace a NaN/Inf back to the node where it first appeared.

A non-finite value spreads downstream: once a MatMul overflows, everything that reads it
turns NaN or Inf too, so the node a watchpoint hits is rarely the culprit. `trace_origins`
walks upstream from a node's non-finite outputs, breadth-first over the graph's data
edges, following only the inputs that are themselves non-finite, and stops at the nodes
whose inputs are all finite: there the NaN/Inf appeared (parameters with NaN count too).
A foreign dump's graph may carry its tool's own rule (`Graph.unread_inputs`,
`Graph.blamed_for`: msprobe's overflow_check reads no nested argument, blames a NaN
weight's module and never a call it ignores or the batch), so the trace's first origin is
the node that tool names; the ones it names none for (the batch) come after.

The walk knows nothing about dumps or networks: it asks callbacks about a node's output
slot, optionally about the value a node actually *read* on an input, and about the value a
parameter had when the step began. The last two matter because dumps write parameters
after the step's update: a weight the optimizer turned NaN at the end of step 4 looks NaN
to every kernel of step 4 in the parameter's own file, yet the MatMul that overflowed read
it finite (its input dump, or the parameter's step-3 file, says so). `session_checks`
builds the callbacks from a `DebugSession`, with a chunked test so memory-mapped tensors
are never read whole.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from tuidebug.core.graph import Graph, NodeKind, StepInputs
from tuidebug.core.tensor import (
    BFLOAT16,
    TensorRef,
    UnsupportedDataTypeError,
    numpy_dtype,
)
from tuidebug.core.tensor_search import (
    Matcher,
    SearchCancelled,
    SearchSpecError,
    find_match,
    parse_search,
)

if TYPE_CHECKING:
    from tuidebug.core.session import DebugSession

DEFAULT_MAX_TENSORS = 5000
CHUNK = 1 << 20  # elements per isfinite pass: a few MiB of temporaries at most

# Producers whose "value" only orders side effects (MindSpore's UpdateState monads): an
# edge from one carries no data, so it can neither bring a NaN nor leave the trace unsure.
ORDERING_OPS = frozenset({"UpdateState"})

# (node, slot) → True non-finite, False finite, None no value
Check = Callable[[str, int], "bool | None"]


class TraceCancelled(Exception):
    """The caller's `cancelled()` said stop (raised between tensor reads)."""


@dataclass(frozen=True)
class Origin:
    """A node where a NaN/Inf appeared. `slots`: its output slots found non-finite (empty
    when only its consumers' input dumps showed it, e.g. a node that is not dumped).
    `certain` is False when some input had no value, so the NaN/Inf may come from there."""

    node: str
    slots: tuple[int, ...]
    certain: bool = True


@dataclass(frozen=True)
class OriginTrace:
    """What `trace_origins` found, starting from `start` at one step."""

    start: str
    start_slots: tuple[int, ...]  # the start's non-finite output slots (empty: all finite)
    origins: tuple[Origin, ...]  # certain ones first, each group in graph order
    # node → the downstream node it was first reached from (the start maps to None):
    # following it from an origin gives the shortest chain to the start
    reached_from: Mapping[str, str | None] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # non-finite nodes with an input that had no value
    tensors_read: int = 0
    truncated: bool = False  # stopped at `max_tensors` before the walk was done
    start_has_value: bool = True  # False: none of the start's outputs had a value
    # parameter → which value the trace judged it by: True its value before the step's
    # optimizer update (the previous step's dump), False this step's dump (after the update:
    # the first step has no earlier one). `L`, WI/WCL and `pt` show the value after the
    # update, so a weight they show NaN may have been read finite here: the screen says so.
    parameters_read: Mapping[str, bool] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        """Whether the start has a non-finite output at all."""
        return bool(self.start_slots)

    def chain(self, origin: str) -> list[str]:
        """Node names from `origin` down to the start (both included); [] if not reached."""
        if origin not in self.reached_from:
            return []
        path = [origin]
        seen = {origin}
        nxt = self.reached_from[origin]
        while nxt is not None and nxt not in seen:
            path.append(nxt)
            seen.add(nxt)
            nxt = self.reached_from.get(nxt)
        return path

    @property
    def on_paths(self) -> frozenset[str]:
        """Every node on a chain from an origin to the start."""
        nodes: set[str] = set()
        for origin in self.origins:
            nodes.update(self.chain(origin.node))
        return frozenset(nodes)


def _output_slots(graph: Graph, name: str) -> list[int]:
    node = graph.nodes[name]
    # a node that declares no outputs may still have a dumped slot 0: ask for it
    return [spec.slot for spec in node.outputs] or [0]


def trace_origins(
    graph: Graph,
    start: str,
    nonfinite: Check,
    *,
    input_nonfinite: Check | None = None,
    parameter_nonfinite: Check | None = None,
    max_tensors: int = DEFAULT_MAX_TENSORS,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    step_inputs: Mapping[str, StepInputs] | None = None,
) -> OriginTrace:
    """Walk upstream from `start`'s non-finite outputs to where the NaN/Inf appeared.

    `nonfinite(node, slot)` tells whether an output holds NaN/±Inf (None: no value).
    `input_nonfinite(node, index)`, when given, tells the same of the value `node` read on
    input `index` (the position in `Node.inputs`); it is asked first and, when it has no
    answer, the producer's outputs decide (any non-finite slot: the edge brought one).
    An edge from a parameter is decided by `parameter_nonfinite(param, slot)` alone (the
    value when the step began; default `nonfinite`): in-place updaters such as
    ApplyMomentum dump their inputs after the update, so their input dumps would blame it.
    Each tensor is asked once; after `max_tensors` questions the walk stops (`truncated`).
    `cancelled()` is asked before each question (raises `TraceCancelled`), `progress(n)`
    after each one. Origins come in graph order (parameters, then operators as the graph
    lists them), so the result does not depend on the order the walk met them.
    `step_inputs` (node → its edges at the traced step, where they differ from the graph's:
    `DebugSession.step_inputs`) replaces those nodes' inputs, unread positions and passed-on
    nodes; their input dumps are not asked (`input_nonfinite` indexes the graph's inputs).
    """
    node = graph.node(start)
    start = node.name
    outputs: dict[tuple[str, int], bool | None] = {}
    inputs: dict[tuple[str, int], bool | None] = {}
    reads = 0

    class _Bound(Exception):
        pass

    def ask(
        check: Check, cache: dict[tuple[str, int], bool | None], key: tuple[str, int]
    ) -> bool | None:
        nonlocal reads
        if key in cache:
            return cache[key]
        if reads >= max_tensors:
            raise _Bound
        if cancelled is not None and cancelled():
            raise TraceCancelled
        value = check(*key)
        reads += 1
        cache[key] = value
        if progress is not None:
            progress(reads)
        return value

    entry: dict[tuple[str, int], bool | None] = {}
    param_check = parameter_nonfinite or nonfinite

    def producer_verdict(src: str) -> bool | None:
        if graph.nodes[src].kind is NodeKind.PARAMETER:
            check, cache = param_check, entry
        else:
            check, cache = nonfinite, outputs
        answers = [ask(check, cache, (src, slot)) for slot in _output_slots(graph, src)]
        if any(a is True for a in answers):
            return True
        return None if any(a is None for a in answers) else False

    def edge_verdict(consumer: str, index: int, src: str, own: bool) -> bool | None:
        if own and input_nonfinite is not None and graph.nodes[src].kind is not NodeKind.PARAMETER:
            seen = ask(input_nonfinite, inputs, (consumer, index))
            if seen is not None:
                return seen
        return producer_verdict(src)

    reached: dict[str, str | None] = {start: None}
    origins: list[Origin] = []
    unknown: list[str] = []
    truncated = False
    try:
        start_answers = [ask(nonfinite, outputs, (start, s)) for s in _output_slots(graph, start)]
    except _Bound:
        start_answers = []
        truncated = True
    start_slots = tuple(
        s for s, a in zip(_output_slots(graph, start), start_answers, strict=False) if a is True
    )
    if not start_slots:
        return OriginTrace(
            start,
            (),
            (),
            {start: None},
            tensors_read=reads,
            truncated=truncated,
            start_has_value=any(a is not None for a in start_answers),
        )

    queue: deque[str] = deque([start])
    try:
        while queue:
            name = queue[0]
            bad: list[str] = []
            missing = False
            seen_src: set[str] = set()
            # inputs the dump tool's rule does not read (msprobe: nested in a list): a NaN
            # there is followed to earlier origins but does not keep this one from being one
            at_step = step_inputs.get(name) if step_inputs else None
            if at_step is None:
                unread = graph.unread_inputs(name)
                sources: Sequence[str] = graph.nodes[name].inputs
                passed: Sequence[str] = graph.passed_on(name)
            else:  # the step's own data flow (msprobe: its statistics matched step by step)
                unread, sources, passed = at_step.unread, at_step.inputs, at_step.passes
            followed: list[str] = []
            for index, src in enumerate(sources):
                producer = graph.nodes.get(src)
                if producer is None or producer.op_type in ORDERING_OPS:
                    continue
                verdict = edge_verdict(name, index, src, at_step is None)
                if index in unread:
                    if verdict:
                        followed.append(src)
                elif verdict is None:
                    missing = True
                elif verdict and src not in seen_src:
                    seen_src.add(src)
                    bad.append(src)
            for src in passed:  # its output is theirs (msprobe's modules)
                if src != name and src in graph.nodes and producer_verdict(src):
                    followed.append(src)
            queue.popleft()  # only once its inputs are all read: a bound leaves it pending
            if missing:
                unknown.append(name)
            if not bad:
                origins.append(Origin(name, (), certain=not missing))
            for src in [*bad, *followed]:
                if src not in reached:  # the cycle guard: each node is walked once
                    reached[src] = name
                    queue.append(src)
    except _Bound:
        truncated = True

    # The node the dump tool's own rule names there (msprobe: a NaN weight's module, whose
    # parameters are no inputs in its rule; none for a call it ignores); reached from
    # where its stand-in was, so the chain still leads to the start.
    named: list[Origin] = []
    unnamed: set[str] = set()  # where the tool's rule names nothing: listed after the rest
    for origin in origins:
        blamed = graph.blamed_for(origin.node)
        if blamed is None or blamed not in graph.nodes:
            unnamed.add(origin.node)
            blamed = origin.node
        if blamed != origin.node:
            reached.setdefault(blamed, reached.get(origin.node))
            origin = Origin(blamed, (), origin.certain)
        if all(o.node != blamed for o in named):
            named.append(origin)
    origins = named

    # Which output slots of each origin hold the NaN/Inf, for the user to open: often
    # known already; an origin seen only through its consumers' input dumps is asked now.
    found: list[Origin] = []
    for origin in origins:
        is_param = graph.nodes[origin.node].kind is NodeKind.PARAMETER and origin.node != start
        check, cache = (param_check, entry) if is_param else (nonfinite, outputs)
        slots: list[int] = []
        for slot in _output_slots(graph, origin.node):
            try:
                if ask(check, cache, (origin.node, slot)) is True:
                    slots.append(slot)
            except _Bound:
                truncated = True
                break
        found.append(Origin(origin.node, tuple(slots), origin.certain))
    origins = found

    position = {n: i for i, n in enumerate(graph.nodes)}
    origins.sort(
        key=lambda o: (not o.certain, o.node in unnamed, position.get(o.node, len(position)))
    )
    unknown.sort(key=lambda n: position.get(n, len(position)))
    return OriginTrace(
        start,
        start_slots,
        tuple(origins),
        reached,
        tuple(unknown),
        tensors_read=reads,
        truncated=truncated,
    )


# ============================================================ values of a session
_NONFINITE = parse_search("nonfinite")


def has_nonfinite(
    array: np.ndarray, *, chunk: int = CHUNK, cancelled: Callable[[], bool] | None = None
) -> bool:
    """Whether any element is NaN or ±Inf, one chunk at a time and stopping at the first
    one; integer and bool tensors are answered from the dtype without reading them."""
    try:
        matcher = Matcher(_NONFINITE, array.dtype)
    except SearchSpecError:  # strings, objects: nothing numeric to be non-finite
        return False
    if matcher.constant is not None:
        return matcher.constant
    return find_match(array, matcher, chunk=chunk, cancelled=cancelled) is not None


def _declared_float(dtype: int | None) -> bool | None:
    """Whether a graph DataType number is a float type (None: not declared or unknown)."""
    if not dtype:
        return None
    try:
        kind = numpy_dtype(dtype)
    except UnsupportedDataTypeError:  # a tuple, a tensor type…: read the value to find out
        return None
    return kind.kind in "fc" or kind == BFLOAT16


def _sizes(shapes: Sequence[tuple[int, ...] | None]) -> set[int] | None:
    """Element counts of declared shapes; None when any is unknown or dynamic (−1)."""
    sizes: set[int] = set()
    for shape in shapes:
        if shape is None or any(d < 0 for d in shape):
            return None
        sizes.add(int(np.prod(shape, dtype=np.int64)))
    return sizes or None


def session_checks(
    session: DebugSession,
    graph: Graph,
    *,
    iteration: int | None = None,
    rank: int = 0,
    cancelled: Callable[[], bool] | None = None,
    parameters_read: dict[str, bool] | None = None,
) -> tuple[Check, Check, Check]:
    """(`nonfinite`, `input_nonfinite`, `parameter_nonfinite`) callbacks reading `graph`'s
    tensors at `iteration` (None: the session's current step) through `session.tensor`.
    A tensor the session cannot give (no value, unreadable, inputs of a live training) is
    None, never an error.

    An input dump is trusted only when its element count matches what its producer
    declares: MindSpore does not dump monad or trailing constant inputs, and an input
    index that no longer lines up must not blame the wrong producer. A parameter's value
    when the step began is its previous step's value (parameters are dumped after the
    update); at the first step, which has none, its value at this step stands in.
    `parameters_read`, when given, records which of the two each parameter was judged by
    (`OriginTrace.parameters_read`)."""
    from tuidebug.core.session import SessionError

    def read(ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        try:
            return session.tensor(ref, previous=previous)
        except (SessionError, OSError, ValueError):
            return None

    def declared_integer(name: str, slot: int) -> bool:
        spec = next((s for s in graph.nodes[name].outputs if s.slot == slot), None)
        # integers and bools are never NaN: no need to read them
        return spec is not None and _declared_float(spec.dtype) is False

    def counted(ref: TensorRef) -> bool | None:
        # a tensor whose statistics were dumped and its values not (a statistic-only
        # MindSpore dump, an msprobe statistics dump): its NaN/Inf counts decide
        try:
            stats = session.dumped_statistics(ref)
        except (SessionError, OSError, ValueError):
            return None
        if not stats:
            return None
        counts = [stats.get(k) for k in ("nan_count", "pos_inf_count", "neg_inf_count")]
        if any(c is None for c in counts):
            return None
        return any(c for c in counts if c is not None)

    def nonfinite(name: str, slot: int) -> bool | None:
        if declared_integer(name, slot):
            return False
        ref = TensorRef(name, slot, iteration, rank, graph.name)
        array = read(ref)
        return counted(ref) if array is None else has_nonfinite(array, cancelled=cancelled)

    def parameter_nonfinite(name: str, slot: int) -> bool | None:
        if declared_integer(name, slot):
            return False
        ref = TensorRef(name, slot, iteration, rank, graph.name)
        if not session.capabilities.parameters_after_update:
            return nonfinite(name, slot)  # dumped as the kernel read it (msprobe)
        array = read(ref, previous=True)
        before = array is not None
        if array is None:
            array = read(ref)
        if array is not None and parameters_read is not None:
            parameters_read[name] = before
        return None if array is None else has_nonfinite(array, cancelled=cancelled)

    def input_nonfinite(name: str, index: int) -> bool | None:
        node = graph.nodes[name]
        producer = graph.nodes.get(node.inputs[index])
        if producer is None:
            return None
        array = read(TensorRef(name, index, iteration, rank, graph.name, is_output=False))
        if array is None:
            return None
        expected = _sizes([spec.shape for spec in producer.outputs])
        if expected is not None and int(array.size) not in expected:
            return None
        return has_nonfinite(array, cancelled=cancelled)

    return nonfinite, input_nonfinite, parameter_nonfinite


def trace_in_session(
    session: DebugSession,
    graph: Graph,
    start: str,
    *,
    iteration: int | None = None,
    rank: int = 0,
    max_tensors: int = DEFAULT_MAX_TENSORS,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> OriginTrace:
    """`trace_origins` over a session's tensors (blocking: call it from a worker)."""

    def stop() -> bool:
        return cancelled is not None and cancelled()

    read: dict[str, bool] = {}
    nonfinite, input_nonfinite, parameter_nonfinite = session_checks(
        session, graph, iteration=iteration, rank=rank, cancelled=stop, parameters_read=read
    )
    from tuidebug.core.session import SessionError

    try:  # the step's own data edges (msprobe): without them, the graph's
        at_step = session.step_inputs(graph.name, iteration, rank)
    except (SessionError, OSError, ValueError):
        at_step = {}
    try:
        trace = trace_origins(
            graph,
            start,
            nonfinite,
            input_nonfinite=input_nonfinite,
            parameter_nonfinite=parameter_nonfinite,
            max_tensors=max_tensors,
            cancelled=cancelled,
            progress=progress,
            step_inputs=at_step,
        )
    except SearchCancelled:
        # find_match's own cancellation, raised inside a callback, means the same thing
        raise TraceCancelled from None
    return replace(trace, parameters_read=read)
