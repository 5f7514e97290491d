"""Joins tensor files to graph nodes (spec §5.2, fixtures/README.md).

How a file names its node depends on the MindSpore version, so the index never decodes
file names; it encodes every graph node in each way MindSpore spells it and looks the file's
`op_name` up:

* ≤ 2.3: operators by their short name (`Conv2D-op77`), parameters by their name with dots
  kept (`moments.fc1.weight`), constants as `data-N` in `constants/` (from the constant's dump
  name `Default--data-N`) or, in older dumps, `cstN` in the iteration folder.
* ≥ 2.4: operators by their full scope name with `/` → `_`, parameters with `.` → `_`
  (`fc1_weight`). Short names are not unique there (`fc1-Dense/MatMul-op0`,
  `fc2-Dense/MatMul-op0`), so the full name is tried first for files carrying a dtype, the
  short name first for the others; a short name is only used when it is unique.

Op-number fallback: MindSpore 2.10 writes a few kernels with a different `-opN` on disk than
in the graph and execution order (LeNet: `…/Grad_Conv2D/Conv2DBackpropFilter-op1` in the
graph, `…-op0` on disk). A file whose name matches no node is given to the unique node with
the same scope and operator type that has no file of its own, provided that exactly one
unmatched name claims it. Each such match is recorded in `fallbacks` so the UI and CLI can
say so. Files that still match nothing are listed in `unmatched` and summed up in `problems`.

When several files name the same tensor, the one with the newest timestamp wins (MindSpore's
offline engine does the same).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.offline.filenames import (
    TensorFile,
    constant_data_name,
    encode_dump_name,
    strip_op_number,
)
from tuidebug.offline.layout import RankLayout
from tuidebug.offline.statistic_csv import StatisticRow

TensorKey = tuple[str, str, int]  # (node name, "input" | "output", slot)


@dataclass(frozen=True)
class NameFallback:
    """A file name matched to a node by the op-number fallback."""

    file_op_name: str
    node_name: str
    op_type: str

    def describe(self) -> str:
        return (
            f"tensor files named {self.file_op_name!r} match no node exactly and were given to "
            f"{self.node_name} (same scope and operator type, different -op number on disk)."
        )


def _unique(nodes: list[Node] | None) -> Node | None:
    return nodes[0] if nodes and len(nodes) == 1 else None


class _NodeMatcher:
    """Every graph node under each name MindSpore may give its files."""

    def __init__(self, graph: Graph) -> None:
        self.full: dict[str, list[Node]] = defaultdict(list)
        self.short: dict[str, list[Node]] = defaultdict(list)
        self.param_raw: dict[str, Node] = {}
        self.param_encoded: dict[str, list[Node]] = defaultdict(list)
        self.const_key: dict[str, Node] = {}
        self.const_data: dict[str, Node] = {}
        # (op type, encoded full name without -opN) → operators, for the fallback
        self.scope_type: dict[tuple[str, str], list[Node]] = defaultdict(list)
        for node in graph:
            if node.kind is NodeKind.OPERATOR:
                encoded = encode_dump_name(node.name)
                self.full[encoded].append(node)
                self.short[node.short_name].append(node)
                self.scope_type[(node.op_type, strip_op_number(encoded))].append(node)
            elif node.kind is NodeKind.PARAMETER:
                self.param_raw[node.name] = node
                self.param_encoded[encode_dump_name(node.name)].append(node)
            else:
                self.const_key[node.name] = node
                data = constant_data_name(node.dump_name) if node.dump_name else None
                if data is not None:
                    self.const_data[data] = node

    def match(
        self, op_type: str, op_name: str, full_first: bool, in_constants: bool
    ) -> Node | None:
        if in_constants:
            return self.const_data.get(op_name) or self.const_key.get(op_name)
        if op_type == "Parameter":
            return (
                self.param_raw.get(op_name)
                or _unique(self.param_encoded.get(op_name))
                or self.const_key.get(op_name)
                or self.const_data.get(op_name)
            )
        if full_first:
            return _unique(self.full.get(op_name)) or _unique(self.short.get(op_name))
        return _unique(self.short.get(op_name)) or _unique(self.full.get(op_name))


class TensorIndex:
    """Tensor files of one graph on one rank, keyed by (node, io, slot) per iteration.

    `graph_id` is the folder the files live in, the root graph id by default (sub-graph
    tensors are stored under their root graph's folder on Ascend); the execution order is
    read for the graph's own id.
    """

    def __init__(self, rank: RankLayout, graph: Graph, graph_id: int | None = None) -> None:
        self.rank = rank
        self.graph = graph
        self.graph_id = graph.root_graph_id if graph_id is None else graph_id
        self.problems: list[str] = []
        self.fallbacks: list[NameFallback] = []
        self.unmatched: list[TensorFile] = []
        self._matcher = _NodeMatcher(graph)
        self._by_iteration: dict[int, dict[TensorKey, TensorFile]] = {}
        self._constants: dict[TensorKey, TensorFile] = {}
        self._node_iterations: dict[str, set[int]] = defaultdict(set)
        self._positions: dict[str, int] | None = None
        self._fallback_names: dict[tuple[str, str], Node] = {}
        self._build()

    def __repr__(self) -> str:
        return (
            f"TensorIndex(rank_{self.rank.rank_id}, {self.graph.name}, "
            f"iterations={self.iterations})"
        )

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        pending: list[tuple[int | None, TensorFile]] = []
        owners: set[str] = set()
        match = self._matcher.match
        for iteration in self.iterations:
            table = self._by_iteration.setdefault(iteration, {})
            for f in self.rank.tensor_files(self.graph_id, iteration):
                node = match(f.op_type, f.op_name, f.dtype is not None, False)
                if node is None:
                    pending.append((iteration, f))
                    continue
                owners.add(node.name)
                self._add(table, node.name, f)
                self._node_iterations[node.name].add(iteration)
        for f in self.rank.constant_files(self.graph_id):
            node = match(f.op_type, f.op_name, f.dtype is not None, True)
            if node is None:
                pending.append((None, f))
                continue
            owners.add(node.name)
            self._add(self._constants, node.name, f)
        self._resolve_pending(pending, owners)
        self._check_execution_order()

    @staticmethod
    def _add(table: dict[TensorKey, TensorFile], node_name: str, f: TensorFile) -> None:
        key = (node_name, f.io, f.slot)
        old = table.get(key)
        if old is None or f.timestamp > old.timestamp:
            table[key] = f

    def _resolve_pending(
        self, pending: list[tuple[int | None, TensorFile]], owners: set[str]
    ) -> None:
        """The op-number fallback, then the report of what is left."""
        groups: dict[tuple[str, str], set[str]] = defaultdict(set)
        for iteration, f in pending:
            if iteration is not None and f.op_type != "Parameter":
                groups[(f.op_type, strip_op_number(f.op_name))].add(f.op_name)
        for (op_type, prefix), names in groups.items():
            if len(names) != 1 or prefix == next(iter(names)):
                continue
            free = [
                n
                for n in self._matcher.scope_type.get((op_type, prefix), ())
                if n.name not in owners
            ]
            if len(free) != 1:
                continue
            (name,) = names
            self._fallback_names[(op_type, name)] = free[0]
            self.fallbacks.append(NameFallback(name, free[0].name, op_type))
        left: dict[tuple[str, str, Path], int] = defaultdict(int)
        for iteration, f in pending:
            node = (
                self._fallback_names.get((f.op_type, f.op_name)) if iteration is not None else None
            )
            if node is None:
                self.unmatched.append(f)
                # iteration files are summed over iterations: name the graph folder
                where = f.path.parent if iteration is None else f.path.parent.parent
                left[(f.op_type, f.op_name, where)] += 1
                continue
            self._add(self._by_iteration[iteration], node.name, f)  # type: ignore[index]
            self._node_iterations[node.name].add(iteration)  # type: ignore[arg-type]
        show = self.rank._show
        for (op_type, op_name, where), count in sorted(left.items()):
            self.problems.append(
                f"{count} tensor file{'s' if count != 1 else ''} named {op_type}.{op_name} under "
                f"{show(where)} match{'' if count != 1 else 'es'} no node of graph "
                f"{self.graph.name}, so {'they are' if count != 1 else 'it is'} not shown."
            )

    def _check_execution_order(self) -> None:
        names = self.rank.execution_order(self.graph.graph_id)
        missing = [n for n in names if n not in self.graph.nodes]
        if missing:
            self.problems.append(
                f"{len(missing)} kernel{'s' if len(missing) != 1 else ''} of the execution order "
                f"of graph {self.graph.graph_id} on rank_{self.rank.rank_id} "
                f"{'are' if len(missing) != 1 else 'is'} not in graph {self.graph.name} "
                f"(first: {missing[0]})."
            )

    # ------------------------------------------------------------------ queries
    @property
    def iterations(self) -> list[int]:
        """Dumped iterations of the graph's folder."""
        return self.rank.dumped_iterations.get(self.graph_id, [])

    def _node(self, node_name: str) -> Node | None:
        node = self.graph.get(node_name)
        if node is None and node_name.startswith(self.graph.name + "/"):
            # check-node names may carry a `graph_name/` prefix (spec §5.8)
            node = self.graph.get(node_name[len(self.graph.name) + 1 :])
        return node

    def lookup(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> TensorFile | None:
        """The file holding one tensor, or None. Constants dumped in `constants/` hold at
        every dumped iteration."""
        node = self._node(node_name)
        if node is None:
            return None
        key = (node.name, "output" if is_output else "input", slot)
        found = self._by_iteration.get(iteration, {}).get(key)
        if found is None and node.kind is NodeKind.CONSTANT and iteration in self._by_iteration:
            found = self._constants.get(key)
        return found

    def files_for(self, iteration: int) -> dict[TensorKey, TensorFile]:
        """Every matched file of one iteration by (node name, io, slot), constants from
        `constants/` included. A new dict: callers may keep or change it."""
        table = self._by_iteration.get(iteration)
        if table is None:
            return {}
        merged = dict(self._constants)
        merged.update(table)
        return merged

    def iterations_with_data(self, node_name: str) -> list[int]:
        node = self._node(node_name)
        if node is None:
            return []
        found = set(self._node_iterations.get(node.name, ()))
        if node.kind is NodeKind.CONSTANT and any(k[0] == node.name for k in self._constants):
            found.update(self.iterations)
        return sorted(found)

    def execution_position(self, node_name: str) -> int:
        """Where the node runs: its line in the execution-order file. Nodes not in it
        (parameters, constants, kernels absent from the file) come after every kernel, in
        graph order, so sorting by this is total and stable."""
        if self._positions is None:
            order = self.rank.execution_order(self.graph.graph_id)
            positions = {name: i for i, name in enumerate(order)}
            base = len(order)
            for i, name in enumerate(self.graph.nodes):
                positions.setdefault(name, base + i)
            self._positions = positions
        node = self._node(node_name)
        if node is None:
            return len(self._positions) + len(self.graph.nodes)
        return self._positions[node.name]

    @property
    def has_history(self) -> bool:
        return self.rank.has_history(self.graph_id)

    def previous_iteration(self, iteration: int) -> int | None:
        return self.rank.previous_iteration(self.graph_id, iteration)

    def statistics_for(self, iteration: int) -> dict[TensorKey, StatisticRow]:
        """The iteration's statistic.csv rows by (node name, io, slot); rows naming no node
        are left out. Empty without a statistic.csv."""
        table = self.rank.statistics(self.graph_id, iteration)
        if table is None:
            return {}
        out: dict[TensorKey, StatisticRow] = {}
        for row in table.rows:
            node = self._matcher.match(row.op_type, row.op_name, True, False)
            if node is None:
                node = self._fallback_names.get((row.op_type, row.op_name))
            if node is not None:
                out[(node.name, row.io, row.slot)] = row
        return out

    def notes(self) -> list[str]:
        """Sentences about fallback matches, for the UI and the CLI."""
        return [f.describe() for f in self.fallbacks]
