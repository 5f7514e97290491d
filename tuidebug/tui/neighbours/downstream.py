"""What a node feeds: every node downstream of it, nearest first, with the hits of each.

The other half of the NaN/Inf origin trace (`o` walks upstream to where a bad value
appeared; `O` lists where it goes from there). A breadth-first walk over the graph's
consumers gives each downstream node its distance (1 = reads an output of the start node
directly); `Graph.affected` is the same set without the distances. No Textual here.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

from tuidebug.core.graph import Graph
from tuidebug.core.watchpoints import WatchpointHit

__all__ = ["MAX_DOWNSTREAM_ROWS", "Downstream", "DownstreamNode", "downstream_of"]

MAX_DOWNSTREAM_ROWS = 2000  # rows the screen lists; the farthest ones are left out beyond


@dataclass(frozen=True)
class DownstreamNode:
    name: str
    depth: int  # edges from the start node
    hits: int  # watchpoint hits on this node's tensors


@dataclass(frozen=True)
class Downstream:
    start: str
    start_hits: int
    nodes: list[DownstreamNode]  # nearest first, graph order within a depth; at most `limit`
    total: int  # downstream nodes in all (more than `nodes` when cut)
    with_hits: int  # downstream nodes (of all) that have a hit


def _hit_counts(hits: Iterable[WatchpointHit], graph: Graph, rank: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for hit in hits:
        ref = hit.tensor
        if ref.graph not in ("", graph.name) or ref.rank not in (rank, None):
            continue
        counts[ref.node] += 1
    return counts


def downstream_of(
    graph: Graph,
    start: str,
    hits: Iterable[WatchpointHit] = (),
    *,
    rank: int = 0,
    limit: int = MAX_DOWNSTREAM_ROWS,
) -> Downstream:
    """The nodes downstream of `start` (a node of `graph`; KeyError when it is not)."""
    start = graph.node(start).name  # KeyError for an unknown node; a UI name resolved
    depth: dict[str, int] = {start: 0}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        for consumer in graph.consumers(name):
            if consumer.name not in depth:
                depth[consumer.name] = depth[name] + 1
                queue.append(consumer.name)
    del depth[start]  # a loop back to the start is not downstream of it for the list
    order = {node.name: i for i, node in enumerate(graph) if node.name in depth}
    names = sorted(depth, key=lambda n: (depth[n], order.get(n, 0)))
    counts = _hit_counts(hits, graph, rank)
    nodes = [DownstreamNode(n, depth[n], counts.get(n, 0)) for n in names[:limit]]
    return Downstream(
        start=start,
        start_hits=counts.get(start, 0),
        nodes=nodes,
        total=len(names),
        with_hits=sum(1 for n in names if counts.get(n)),
    )
