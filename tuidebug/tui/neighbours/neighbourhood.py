"""Which nodes the graph view (`G`) draws around one: the centre, its inputs and consumers
a few steps away, at most `MAX_BOXES` boxes, with every closed scope of several nodes as one
box (MindInsight's hierarchical graph). No Textual here; `graph_layout` draws the result.
"""

from __future__ import annotations

import functools
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
    scope open, one box per node.

    Worked out per node asked and per box drawn, never for the whole graph: the view asks
    again on every redraw, and a 100,000-node graph walked each time made `G` lag."""

    def __init__(self, graph: Graph, expanded: Collection[str] | None) -> None:
        self.graph = graph
        self._expanded = expanded
        self._unit: dict[str, str] = {}
        self._members: dict[str, list[str]] = {}
        self._sources: dict[str, dict[str, list[str]]] = {}
        self._consumers: dict[str, list[str]] = {}

    def _closed_scope(self, ui_name: str, expanded: Collection[str]) -> str | None:
        parts = ui_name.split("/")[:-1]
        for k in range(len(parts)):
            path = "/".join(parts[: k + 1])
            # a scope of one node is drawn as that node: a box saying "1 node" hides it
            if path not in expanded and self.graph.leaf_count(path) > 1:
                return path + SCOPE_END
        return None

    def of(self, name: str) -> str:
        unit = self._unit.get(name)
        if unit is None:
            node = self.graph.get(name)
            closed = None
            if node is not None and self._expanded is not None:
                closed = self._closed_scope(node.ui_name, self._expanded)
            unit = self._unit[name] = closed or name
        return unit

    def nodes(self, unit: str) -> list[str]:
        """The nodes of a box: a closed scope's are every node under it (its ancestors are
        open, or it would not be a box), in graph order."""
        if not is_scope_box(unit):
            return [unit]
        members = self._members.get(unit)
        if members is None:
            members = self._members[unit] = [n.name for n in self.graph.leaves(unit[:-1])]
        return members

    def sources(self, unit: str) -> dict[str, list[str]]:
        """The boxes feeding `unit` → the nodes producing what they feed it, in order.
        Kept: a closed scope's box can hold most of the graph (`Default/` of a training
        graph), and the view asks again on every redraw and every move of the centre."""
        found = self._sources.get(unit)
        if found is None:
            found = {}
            for member in self.nodes(unit):
                for src in self.graph.inputs(member):
                    box = self.of(src.name)
                    if box != unit:
                        found.setdefault(box, []).append(src.name)
            self._sources[unit] = found
        return found

    def inputs(self, unit: str) -> list[str]:
        return list(self.sources(unit))

    def consumers(self, unit: str) -> list[str]:
        found = self._consumers.get(unit)
        if found is None:
            found = _fresh(
                (self.of(dst.name) for m in self.nodes(unit) for dst in self.graph.consumers(m)),
                (unit,),
            )
            self._consumers[unit] = found
        return found


@functools.lru_cache(maxsize=4)
def _units(graph: Graph, expanded: frozenset[str] | None) -> _Units:
    """The boxes of one graph with these scopes open, kept for the next redraws (the
    graph view redraws on every key; a handful of recent states is what it revisits)."""
    return _Units(graph, expanded)


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
        expanded = frozenset({*expanded, *scope_ancestors(graph, start.name)})
    units = _units(graph, expanded)
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
        for unit, sources in units.sources(name).items():
            if unit in drawn:
                producers.setdefault((unit, name), {}).update(dict.fromkeys(sources))
    scopes = {n: tuple(units.nodes(n)) for n in nodes if is_scope_box(n)}
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
