"""Tracing a NaN/Inf to its origin, the app's side: what to trace, and the worker's reads.

The walk itself is `core.origins.trace_in_session`. Here: which tensor a trace starts from
(`trace_target`), the NaN/Inf counts the origin screen shows beside each origin
(`origin_counts`), a progress callback that posts a few times a second at most
(`throttled_progress`) and the sentence said when there is nothing to show
(`nothing_found`). No Textual here: the app runs these in a worker and shows the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuidebug.core.graph import Graph, Node
from tuidebug.core.session import DebugSession
from tuidebug.core.tensor import TensorRef, tensor_statistics
from tuidebug.core.watchpoints import WatchpointHit

if TYPE_CHECKING:
    from tuidebug.core.origins import OriginTrace

# `trace_target` feeds the app's key guards from the first frame on; the walk itself
# (core.origins and its tensor search) loads with the first trace (`origin_counts`).

TRACE_PROGRESS_AFTER = 0.5  # seconds before a running trace shows "Tracing… N tensors read"
PROGRESS_EVERY = 0.1  # seconds between two progress lines at most
MAX_COUNTED_ORIGINS = 20  # origins whose NaN/Inf are counted for the origin screen

Counts = tuple[int, int, int]  # NaN, +Inf, −Inf (origin_screen's Counts)


@dataclass(frozen=True)
class TraceTarget:
    """Where a trace starts: a node of a graph, at a dumped iteration or (None) the
    current step."""

    graph: str
    node: str
    iteration: int | None


def trace_target(
    hit: object,
    graphs: Mapping[str, Graph],
    rank: int,
    current_graph: str | None,
    current_node: Node | None,
) -> TraceTarget | None:
    """The hit under the cursor (`hit`: None unless the hit list has focus) when it is
    on this rank and in a loaded graph, else the selected node at the current step."""
    if isinstance(hit, WatchpointHit):
        ref = hit.tensor
        graph_name = ref.graph if ref.graph in graphs else ""
        if not graph_name:
            graph_name = next((n for n, g in graphs.items() if g.get(ref.node)), "")
        if graph_name and ref.rank in (rank, None):
            return TraceTarget(graph_name, ref.node, ref.iteration)
    if current_node is not None and current_graph in graphs:
        assert current_graph is not None
        return TraceTarget(current_graph, current_node.name, None)
    return None


def throttled_progress(
    post: Callable[[int], None],
    *,
    after: float = TRACE_PROGRESS_AFTER,
    every: float = PROGRESS_EVERY,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[int], None]:
    """A progress callback for the trace that calls `post(tensors read)` only once the
    trace has run `after` seconds (a quick trace shows no progress line), then at most
    every `every` seconds (the worker reads thousands of tensors)."""
    began = clock()
    shown = [0.0]

    def progress(read: int) -> None:
        now = clock()
        if now - began >= after and now - shown[0] >= every:
            shown[0] = now
            post(read)

    return progress


def origin_counts(
    session: DebugSession,
    trace: OriginTrace,
    graph: Graph,
    iteration: int | None,
    rank: int,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, Counts]:
    """NaN/±Inf counts of each origin's first non-finite slot (worker; a few origins,
    each read in chunks). Parameters are counted as the trace judged them: their value
    when the step began, where the session has one. Raises TraceCancelled."""
    from tuidebug.core.origins import TraceCancelled

    counts: dict[str, Counts] = {}
    for origin in trace.origins[:MAX_COUNTED_ORIGINS]:
        if cancelled():
            raise TraceCancelled
        if not origin.slots:
            continue
        node = graph.get(origin.node)
        ref = TensorRef(origin.node, origin.slots[0], iteration, rank, graph.name)
        try:
            array = None
            if node is not None and node.is_parameter and origin.node != trace.start:
                array = session.tensor(ref, previous=True)
            if array is None:
                array = session.tensor(ref)
            stats = tensor_statistics(array) if array is not None else None
        except Exception:
            continue  # the counts are a nicety: the row stays without them
        if stats is not None:
            counts[origin.node] = (stats.nan_count, stats.pos_inf_count, stats.neg_inf_count)
    return counts


def nothing_found(trace: OriginTrace, graph: Graph, step: str) -> str | None:
    """The sentence for a trace with no origin to show (None when it found some); `step`
    is `DebugSession.step_label`'s words for the traced step."""
    if trace.found:
        return None
    node = graph.get(trace.start)
    short = node.short_name if node is not None else trace.start
    if trace.start_has_value:
        return f"{short} has no NaN or Inf at {step}."
    return f"{short} has no value at {step}."


__all__ = [
    "MAX_COUNTED_ORIGINS",
    "TRACE_PROGRESS_AFTER",
    "Counts",
    "TraceTarget",
    "nothing_found",
    "origin_counts",
    "throttled_progress",
    "trace_target",
]
