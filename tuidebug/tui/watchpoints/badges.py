"""The watched and hit badges the tree draws: which nodes and scopes a graph's watchpoints
watch, and how many hits each node and scope has (no Textual).

Apart from the list (list_pane.py), whose DataTable the first frame does without
(shell.py): the hits shown (hits_shown.py) redraw the badges without it, and load this
module (and the core's watch targets) with the first graph shown, after the first frame.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuidebug.core.condition_catalogue import WatchpointError
from tuidebug.core.graph import Graph, Node
from tuidebug.core.watch_targets import graph_relative
from tuidebug.core.watch_targets import watched_nodes as resolve_watched
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit

Badges = tuple[set[str], set[str], dict[str, int], dict[str, int]]


def watched_nodes(graph: Graph, watchpoint: Watchpoint) -> tuple[list[Node], list[str]]:
    """(nodes a watchpoint watches in this graph, scope paths it names)."""
    if watchpoint.graph_name and watchpoint.graph_name != graph.name:
        return [], []
    targets = watchpoint.targets
    if not watchpoint.graph_name and targets:
        # a watchpoint across graphs (offline) names the nodes of several: this graph's
        here = graph_relative(targets, graph)
        targets = tuple(
            t
            for t, r in zip(targets, here, strict=True)
            if graph.get(r) is not None or graph.is_scope(r)
        )
        if not targets:
            return [], []
    try:
        nodes = resolve_watched(
            watchpoint.condition,
            targets,
            graph,
            constants=True,  # a constant named as a target is badged as watched
            strip_graph_prefix=True,
        )
    except WatchpointError:
        return [], []  # a target of another graph: nothing to badge here
    scopes = [t for t in graph_relative(targets, graph) if graph.is_scope(t)]
    return nodes, scopes


def _add_ancestors(path: str, into: set[str]) -> None:
    scope = path.rpartition("/")[0]
    while scope and scope not in into:
        into.add(scope)
        scope = scope.rpartition("/")[0]


def watch_badges(
    graph: Graph, watchpoints: Sequence[Watchpoint], hits: Sequence[WatchpointHit]
) -> Badges:
    """Node names and scope paths to badge as watched, and hit counts per node and scope."""
    nodes: set[str] = set()
    scopes: set[str] = set()
    for watchpoint in watchpoints:
        if not watchpoint.enabled:
            continue
        found, named_scopes = watched_nodes(graph, watchpoint)
        for scope in named_scopes:
            scopes.add(scope)
            _add_ancestors(scope, scopes)
        for node in found:
            if node.name not in nodes:
                nodes.add(node.name)
                _add_ancestors(node.ui_name, scopes)
    node_hits: dict[str, int] = {}
    scope_hits: dict[str, int] = {}
    for hit in hits:
        ref = hit.tensor
        if ref.graph and ref.graph != graph.name:
            continue
        hit_node = graph.get(ref.node)
        if hit_node is None:
            continue
        node_hits[hit_node.name] = node_hits.get(hit_node.name, 0) + 1
        scope = hit_node.ui_name.rpartition("/")[0]
        while scope:
            scope_hits[scope] = scope_hits.get(scope, 0) + 1
            scope = scope.rpartition("/")[0]
    return nodes, scopes, node_hits, scope_hits
