"""`downstream_of`: the nodes a node's outputs reach, nearest first, with their hits."""

from __future__ import annotations

import pytest

from tests.tui.support import CONV, RELU, synthetic_graph
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.neighbours.downstream import downstream_of
from tuidebug.tui.neighbours.downstream_screen import downstream_summary

GRAPH = synthetic_graph()


def hit(node: str, *, graph: str = GRAPH.name, rank: int = 0) -> WatchpointHit:
    return WatchpointHit(1, get_condition("tensor_overflow"), TensorRef(node, 0, 1, rank, graph), 0)


def test_every_downstream_node_nearest_first_with_depths() -> None:
    found = downstream_of(GRAPH, CONV)
    assert [n.name for n in found.nodes] == [n.name for n in GRAPH.affected(CONV)]  # a chain
    assert found.nodes[0].name == RELU and found.nodes[0].depth == 1
    assert [n.depth for n in found.nodes] == list(range(1, len(found.nodes) + 1))
    assert found.total == len(found.nodes) and found.with_hits == 0


def test_hits_are_counted_on_this_graph_and_rank_only() -> None:
    hits = [hit(RELU), hit(RELU), hit(CONV), hit(RELU, graph="other"), hit(RELU, rank=1)]
    found = downstream_of(GRAPH, CONV, hits)
    assert found.start_hits == 1
    assert found.nodes[0].hits == 2 and found.with_hits == 1


def test_a_weight_reaches_its_consumers_and_the_limit_cuts_the_farthest() -> None:
    found = downstream_of(GRAPH, "layer0.weight", limit=3)
    assert found.nodes[0].name == CONV
    assert len(found.nodes) == 3 and found.total > 3
    assert "the nearest 3 listed" in downstream_summary(found)


def test_a_last_node_feeds_nothing_and_an_unknown_one_is_an_error() -> None:
    last = list(GRAPH)[-1].name
    found = downstream_of(GRAPH, last)
    assert found.total == 0 and "Nothing reads" in downstream_summary(found)
    with pytest.raises(KeyError):
        downstream_of(GRAPH, "no such node")
