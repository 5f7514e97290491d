"""Which tensors a watchpoint watches: one resolver for the offline and online sessions, the
headless `check` and the TUI's watchpoint list.

`resolve_targets` (core/watchpoints.py) turns a condition and its targets into the leaf nodes
of one graph. The callers then differ in a few ways, and each difference is a parameter here
instead of a private copy of the loop:

- `constants`: whether a constant named explicitly as a target stays watched. The sessions
  leave constants out (MindSpore never checks them); `check` and the watchpoint list keep
  what `resolve_targets` returns.
- `strip_graph_prefix`: targets written as `graph/scope/...` (as the list shows a peer's
  targets) are read relative to the graph.
- `node_filter`: `check --node REGEX` narrows the nodes.
- `tolerate`: offline watches every graph of a rank; a target that exists in only some of
  them is watched there, and is an error only when it resolves in none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tuidebug.core.condition_catalogue import ConditionSpec, WatchpointError
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.watchpoints import resolve_targets

__all__ = ["graph_relative", "output_slots", "watched_nodes", "watched_tensors"]

NodeFilter = Callable[[Node], bool]


def output_slots(node: Node) -> range:
    """The output slots a watchpoint checks on a node: every output, at least slot 0."""
    return range(max(1, len(node.outputs)))


def graph_relative(targets: Sequence[str], graph: Graph) -> list[str]:
    """Targets with a leading `graph/` taken off (how a peer's targets may be written)."""
    prefix = graph.name + "/"
    return [t.removeprefix(prefix) for t in targets]


def watched_nodes(
    condition: ConditionSpec | str,
    targets: Sequence[str],
    graph: Graph,
    *,
    constants: bool,
    strip_graph_prefix: bool = False,
    node_filter: NodeFilter | None = None,
) -> list[Node]:
    """The nodes of `graph` a watchpoint with `condition` and `targets` watches, in graph
    order. `WatchpointError` (one sentence) when a target names nothing in `graph`."""
    if strip_graph_prefix:
        targets = graph_relative(targets, graph)
    nodes = resolve_targets(condition, targets, graph)
    if not constants:
        nodes = [n for n in nodes if n.kind is not NodeKind.CONSTANT]
    if node_filter is not None:
        nodes = [n for n in nodes if node_filter(n)]
    return nodes


def watched_tensors(
    condition: ConditionSpec | str,
    targets: Sequence[str],
    graphs: Iterable[Graph],
    *,
    constants: bool,
    node_filter: NodeFilter | None = None,
    tolerate: bool = False,
) -> dict[str, list[tuple[str, int]]]:
    """Graph name → the (node name, output slot) pairs a watchpoint watches there; graphs
    with nothing to watch are left out. A target that names nothing raises
    `WatchpointError`; with `tolerate=True` only when it does so in every graph (the first
    graph's sentence), and each target is watched in the graphs where it resolves."""
    out: dict[str, list[tuple[str, int]]] = {}
    errors: dict[str, str] = {}  # target → the first graph's sentence that it names nothing
    found: set[str] = set()
    for graph in graphs:
        here = list(targets)
        if tolerate:
            # each target in the graphs that have it: a watchpoint across graphs names the
            # nodes of several (the recommended gradient nodes, one graph's each)
            here = [t for t in targets if t == "" or graph.get(t) is not None or graph.is_scope(t)]
            found.update(here)
            for target in targets:
                if target not in here:  # resolve_targets' sentence
                    said = f"No node or scope named {target!r} in graph {graph.name}."
                    errors.setdefault(target, said)
            if targets and not here:
                continue  # no targets would mean the whole category
        nodes = watched_nodes(condition, here, graph, constants=constants, node_filter=node_filter)
        pairs = [(n.name, slot) for n in nodes for slot in output_slots(n)]
        if pairs:
            out[graph.name] = pairs
    missing = [t for t in targets if t in errors and t not in found]
    if missing:
        raise WatchpointError(errors[missing[0]])
    return out
