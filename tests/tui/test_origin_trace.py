"""The app's side of a NaN/Inf trace as plain functions: what it starts from, the counts
beside each origin, the throttled progress, the sentence when nothing is found."""

from __future__ import annotations

import pytest

from tests.tui.support import CONV, RELU, FakeSession, synthetic_graph
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.origins import Origin, OriginTrace, TraceCancelled
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.origins.trace import (
    TraceTarget,
    nothing_found,
    origin_counts,
    throttled_progress,
    trace_target,
)

GRAPH = synthetic_graph()
GRAPHS = {GRAPH.name: GRAPH}


def hit(node: str, *, graph: str = GRAPH.name, rank: int = 0, iteration: int = 2) -> WatchpointHit:
    ref = TensorRef(node, 0, iteration, rank, graph)
    return WatchpointHit(1, get_condition("tensor_overflow"), ref, 0)


def test_the_focused_hit_wins_over_the_selected_node() -> None:
    relu = GRAPH.get(RELU)
    assert trace_target(hit(CONV), GRAPHS, 0, GRAPH.name, relu) == TraceTarget(GRAPH.name, CONV, 2)
    assert trace_target(None, GRAPHS, 0, GRAPH.name, relu) == TraceTarget(GRAPH.name, RELU, None)
    assert trace_target(None, GRAPHS, 0, GRAPH.name, None) is None
    assert trace_target(None, GRAPHS, 0, "gone", relu) is None


def test_a_hit_of_an_unknown_graph_is_found_by_its_node_and_other_ranks_are_skipped() -> None:
    assert trace_target(hit(CONV, graph=""), GRAPHS, 0, None, None) == TraceTarget(
        GRAPH.name, CONV, 2
    )
    assert trace_target(hit("nowhere", graph=""), GRAPHS, 0, None, None) is None
    assert trace_target(hit(CONV, rank=1), GRAPHS, 0, None, None) is None
    assert trace_target("a tree row, not a hit", GRAPHS, 0, None, None) is None


def test_progress_is_quiet_at_first_then_a_few_times_a_second() -> None:
    now = [0.0]
    posted: list[int] = []
    progress = throttled_progress(posted.append, after=5, every=1, clock=lambda: now[0])
    for t, read in [(1, 1), (4.9, 2), (5, 3), (5.5, 4), (6, 5), (6.5, 6), (7.1, 7)]:
        now[0] = t
        progress(read)
    assert posted == [3, 5, 7]


def test_origin_counts_read_each_origins_first_non_finite_slot() -> None:
    session = FakeSession(nan_node=RELU)
    session.start()
    trace = OriginTrace(RELU, (0,), (Origin(RELU, (0,)), Origin(CONV, ())))
    counts = origin_counts(session, trace, GRAPH, None, 0)
    assert counts == {RELU: (1, 1, 0)}  # CONV has no non-finite slot to count


def test_a_cancelled_count_stops() -> None:
    session = FakeSession(nan_node=RELU)
    session.start()
    trace = OriginTrace(RELU, (0,), (Origin(RELU, (0,)),))
    with pytest.raises(TraceCancelled):
        origin_counts(session, trace, GRAPH, None, 0, cancelled=lambda: True)


def test_nothing_found_sentences() -> None:
    found = OriginTrace(RELU, (0,), (Origin(RELU, (0,)),))
    assert nothing_found(found, GRAPH, "step 3") is None
    assert (
        nothing_found(OriginTrace(RELU, (), ()), GRAPH, "step 3")
        == "ReLU-op1 has no NaN or Inf at step 3."
    )
    no_value = OriginTrace(RELU, (), (), start_has_value=False)
    assert nothing_found(no_value, GRAPH, "step 3") == "ReLU-op1 has no value at step 3."
