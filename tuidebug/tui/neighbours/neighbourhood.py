"""Which nodes the graph view (`G`) draws around one: the centre, its inputs and consumers
a few steps away, at most `MAX_BOXES` boxes, with every closed scope of several nodes as one
box (MindInsight's hierarchical graph). No Textual here; `graph_layout` draws the result.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from tuidebug.core.graph import Graph

DEFAULT_DEPTH = 2
MAX_DEPTH = 8
MAX_BOXES = 40

# ------------------------------------------------------------------ which nodes
SCOPE_END = "/"  # a scope's box is named by its path and this: no node name ends with it


def is_scope_box(name: str) -> bool:
    """Whether a box of the picture is a collapsed scope (named `Default/network/fc1/`)."""
    return name.endswith(SCOPE_END)


def scope_ancestors(graph: Graph, name: str) -> list[str]:
    """The scopes holding node `name` in the tree, outermost first (`Default`,
    `Default/network`, …): the centre's are always open, so it is drawn as itself."""
    node = graph.get(name)
    if node is None:
        return []
    parts = node.ui_name.split("/")[:-1]
    return ["/".join(parts[: k + 1]) for k in range(len(parts))]


class _Units:
    """What is drawn as one box: a node, or a closed scope of several nodes (MindInsight's
    hierarchical graph: a scope is one box until it is opened). `expanded` None: every
    scope open, one box per node."""

    def __init__(self, graph: Graph, expanded: Collection[str] | None) -> None:
        self.graph = graph
        self.members: dict[str, list[str]] = {}
        self._unit: dict[str, str] = {}
        if expanded is None:
            return
        # one pass over the graph: a scope's box needs all its nodes (their edges are its)
        for node in graph:
            unit = self._closed_scope(node.ui_name, expanded)
            if unit is not None:
                self._unit[node.name] = unit
                self.members.setdefault(unit, []).append(node.name)

    def _closed_scope(self, ui_name: str, expanded: Collection[str]) -> str | None:
        parts = ui_name.split("/")[:-1]
        for k in range(len(parts)):
            path = "/".join(parts[: k + 1])
            # a scope of one node is drawn as that node: a box saying "1 node" hides it
            if path not in expanded and self.graph.leaf_count(path) > 1:
                return path + SCOPE_END
        return None

    def of(self, name: str) -> str:
        return self._unit.get(name, name)

    def nodes(self, unit: str) -> list[str]:
        return self.members.get(unit) or [unit]

    def inputs(self, unit: str) -> list[str]:
        return _fresh(
            (self.of(src.name) for m in self.nodes(unit) for src in self.graph.inputs(m)), (unit,)
        )

    def consumers(self, unit: str) -> list[str]:
        return _fresh(
            (self.of(dst.name) for m in self.nodes(unit) for dst in self.graph.consumers(m)),
            (unit,),
        )


@dataclass(frozen=True)
class Neighbourhood:
    """The nodes (and closed scopes) to draw around `centre` and the data edges among them."""

    centre: str
    depth: int
    nodes: tuple[str, ...]  # the centre first, then by distance (found order within one)
    distance: Mapping[str, int]  # signed: < 0 inputs (upstream), > 0 consumers
    edges: tuple[tuple[str, str], ...]  # producer → consumer, both drawn, each pair once
    left_out: int = 0  # nodes found within `depth` that the cap left out (at least)
    deeper: bool = False  # there are nodes beyond `depth` (a larger depth shows more)
    # a closed scope's box (`path/`) → the nodes it holds; nodes are not in it
    scopes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # an edge → the nodes producing its tensors (more than one only out of a scope's box)
    producers: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def cut(self) -> bool:
        return self.left_out > 0


def neighbourhood(
    graph: Graph,
    centre: str,
    depth: int,
    cap: int = MAX_BOXES,
    *,
    expanded: Collection[str] | None = None,
) -> Neighbourhood:
    """The centre with its inputs `depth` steps up and its consumers `depth` steps down,
    breadth first, nearest first (up and down alternating), at most `cap` boxes. Once the
    cap is reached the search stops: `left_out` counts the boxes of that distance that did
    not fit (boxes further away were not looked for). `expanded`: the open scopes; every
    other scope of several nodes is one box (its nodes' edges are its edges, a step is a
    step between boxes); the centre's scopes are always open. None: each node a box."""
    start = graph.node(centre)
    if expanded is not None:
        expanded = {*expanded, *scope_ancestors(graph, start.name)}
    units = _Units(graph, expanded)
    depth = max(0, depth)
    distance: dict[str, int] = {start.name: 0}
    nodes = [start.name]
    ups, downs = [start.name], [start.name]
    left_out = 0
    deeper = False
    for step in range(1, depth + 2):
        found_up = _fresh((src for n in ups for src in units.inputs(n)), distance)
        found_down = _fresh((dst for n in downs for dst in units.consumers(n)), distance)
        if step > depth:
            deeper = bool(found_up or found_down)
            break
        ups, downs = [], []
        for name, sign in _interleave(found_up, found_down):
            if name in distance:  # both an input and a consumer: only in a cyclic graph
                continue
            if len(nodes) >= cap:
                left_out += 1
                continue
            distance[name] = sign * step
            nodes.append(name)
            (ups if sign < 0 else downs).append(name)
        if left_out:
            break
    drawn = set(nodes)
    producers: dict[tuple[str, str], dict[str, None]] = {}
    for name in nodes:
        for member in units.nodes(name):
            for src in graph.inputs(member):
                unit = units.of(src.name)
                if unit in drawn and unit != name:
                    producers.setdefault((unit, name), {})[src.name] = None
    scopes = {n: tuple(units.members[n]) for n in nodes if n in units.members}
    return Neighbourhood(
        start.name,
        depth,
        tuple(nodes),
        distance,
        tuple(producers),
        left_out,
        deeper or bool(left_out),
        scopes,
        {edge: tuple(found) for edge, found in producers.items()},
    )


def _fresh(names: Iterable[str], seen: Collection[str]) -> list[str]:
    """`names` not seen yet, each once, in order."""
    return list(dict.fromkeys(name for name in names if name not in seen))


def _interleave(up: list[str], down: list[str]) -> list[tuple[str, int]]:
    """Inputs and consumers alternately, so a cut keeps some of both."""
    out: list[tuple[str, int]] = []
    for i in range(max(len(up), len(down))):
        if i < len(up):
            out.append((up[i], -1))
        if i < len(down):
            out.append((down[i], 1))
    return out


__all__ = [
    "DEFAULT_DEPTH",
    "MAX_BOXES",
    "MAX_DEPTH",
    "SCOPE_END",
    "Neighbourhood",
    "is_scope_box",
    "neighbourhood",
    "scope_ancestors",
]
