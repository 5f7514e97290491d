"""`CommandContext`: the session as the commands see it — name lookup, iterations, values.

Names typed by a user are forgiving, as in tfdbg: a node is found by its full name, its
scope-tree name (`scope/conv1.weight`), or a unique tail of either (`Conv2D-op77`,
`conv1-Conv2d/Conv2D-op77`); an ambiguous tail names the candidates. A tensor is written
`NAME[:SLOT][@ITERATION]`, the iteration being the dump's (offline) or the step (online).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tuidebug.core.graph import Graph, Node
from tuidebug.core.session import DebugSession, SessionError
from tuidebug.core.tensor import TensorRef

__all__ = ["CommandContext", "CommandError", "TensorName", "parse_tensor_name"]

MAX_CANDIDATES_NAMED = 5


class CommandError(Exception):
    """A mistake in a command line or a thing it names; `str()` is one sentence."""


@dataclass(frozen=True)
class TensorName:
    node: str
    slot: int
    iteration: int | None
    slice: str  # "" or "[...]"
    # a control-flow loop's trip (1 the first) of the tensor in its iteration folder; None
    # = the newest file, the one MindSpore reads
    trip: int | None = None


# `#TRIP` only after `@ITERATION`: node names may hold `#` (duplicate names get `#N`)
_TENSOR = re.compile(
    r"^(?P<node>.+?)(?::(?P<slot>\d+))?(?:@(?P<it>-?\d+)(?:#(?P<trip>\d+))?)?(?P<slice>\[.*\])?$"
)


def parse_tensor_name(text: str) -> TensorName:
    """`Conv2D-op77:0@2[0, :, :]` → node, slot 0, iteration 2, slice `[0, :, :]`;
    `Add-op3:0@2#1` → trip 1 (the first loop trip) of iteration 2."""
    m = _TENSOR.match(text.strip())
    if not m:
        raise CommandError(f"{text!r} is not a tensor name like NODE:SLOT@ITERATION[SLICE].")
    return TensorName(
        node=m["node"],
        slot=int(m["slot"]) if m["slot"] else 0,
        iteration=int(m["it"]) if m["it"] else None,
        slice=m["slice"] or "",
        trip=int(m["trip"]) if m["trip"] else None,
    )


class CommandContext:
    """The commands' view of one `DebugSession`."""

    def __init__(self, session: DebugSession, width: int = 100) -> None:
        self.session = session
        self.width = width  # the printout width numpy wraps arrays at
        self.iteration: int | None = None  # the default iteration, when not the current one
        # folders whose files `ps` shows for a stack's path, besides the dump's and the
        # working folder (`tuidebug exec --source-root`; commands/source.py says why)
        self.source_roots: list[str] = []

    # ------------------------------------------------------------------ nodes
    def graphs(self) -> list[Graph]:
        graphs = list(self.session.graphs.values())
        if not graphs:
            raise CommandError("No graph is loaded yet.")
        return graphs

    def find_node(self, name: str) -> tuple[Graph, Node]:
        graphs = self.graphs()
        for graph in graphs:
            node = graph.get(name)
            if node is not None:
                return graph, node
        found: list[tuple[Graph, Node]] = []
        tail = "/" + name.lstrip("/")
        for graph in graphs:
            for node in graph:
                if node.ui_name == name or node.name.endswith(tail) or node.ui_name.endswith(tail):
                    found.append((graph, node))
        if len(found) == 1:
            return found[0]
        if not found:
            alias = self.alias(name)
            if alias is not None:
                return alias[0], alias[1]
            raise CommandError(f"No node is named {name!r}.")
        named = ", ".join(n.name for _, n in found[:MAX_CANDIDATES_NAMED])
        more = f" and {len(found) - MAX_CANDIDATES_NAMED} more" if len(found) > 5 else ""
        raise CommandError(f"{name!r} names {len(found)} nodes ({named}{more}); give more of it.")

    def alias(self, name: str) -> tuple[Graph, Node, int] | None:
        """The graph, node and slot of a tensor named by its dump tool's own name (msprobe's
        `Functional.linear.0.forward.output.0`), or None."""
        found = self.session.tensor_alias(name)
        if found is None:
            return None
        graph = self.session.graphs.get(found[0])
        node = graph.get(found[1]) if graph is not None else None
        return None if graph is None or node is None else (graph, node, found[2])

    def node_names(self) -> list[str]:
        return [node.name for graph in self.session.graphs.values() for node in graph]

    # ------------------------------------------------------------- iterations
    def current_iteration(self) -> int:
        """The iteration commands read by default: the current step's; before the first
        step of an offline session (step 0 holds no values there) the first iteration."""
        if self.iteration is not None:
            return self.iteration
        md = self.session.metadata
        if md.iteration is not None:
            return md.iteration
        if not self.session.capabilities.step_zero_has_values:
            return 0
        return md.step

    # ------------------------------------------------------------------ values
    def ref(self, graph: Graph, node: Node, slot: int, iteration: int | None) -> TensorRef:
        return TensorRef(
            node=node.name,
            slot=slot,
            iteration=self.current_iteration() if iteration is None else iteration,
            rank=self.session.metadata.rank,
            graph=graph.name,
        )

    def value(self, name: TensorName) -> tuple[TensorRef, np.ndarray]:
        """The tensor's value, read from the session (blocking: it may read a file or wait
        for the training to send it)."""
        alias = self.alias(name.node)
        if alias is not None:  # the name says its slot (`….output.1`)
            graph, node, slot = alias
        else:
            (graph, node), slot = self.find_node(name.node), name.slot
        ref = self.ref(graph, node, slot, name.iteration)
        try:
            if name.trip is not None:
                array = self.session.tensor_trip(ref, name.trip)
                trips = self.session.tensor_trips(ref)
                if array is None and trips:
                    raise CommandError(
                        f"{node.name}:{name.slot} has {trips} trip{'s' if trips != 1 else ''} "
                        f"at {self.session.step_label(ref)}, not #{name.trip} (#1 is the first)."
                    )
            else:
                array = self.session.tensor(ref)
        except SessionError as err:
            raise CommandError(str(err)) from None
        if array is None:
            raise CommandError(
                f"{node.name}:{name.slot} has no value at {self.session.step_label(ref)}."
            )
        return ref, array
