"""Joins tensor files to graph nodes (spec §5.2, §5.2a, fixtures/README.md).

How a file names its node depends on the MindSpore version, so the index never decodes
file names; it encodes every graph node in each way MindSpore spells it and looks the file's
`op_name` up:

* ≤ 2.3: operators by their short name (`Conv2D-op77`), parameters by their name with dots
  kept (`moments.fc1.weight`), constants as `data-N` in `constants/` (from the constant's dump
  name `Default--data-N`) or, in older dumps, `cstN` in the iteration folder. A short name is
  only used when it is unique.
* ≥ 2.4 (files carrying a dtype): operators by their full scope name with `/` → `_` and
  MindSpore's own op number (`dump_names`, spec §5.2a: the index among the nodes of the same
  scope and type, counted across the rank's graphs), parameters with `.` → `_`
  (`fc1_weight`). Should a dump's files follow the graph's own numbers instead (more of its
  names are the graph's than the rule's), the graph's names are used.

Every file is checked against the graph's declared output dtype and shape before it is shown
under a node: the dtype of 2.4+ names when the index is built, the `.npy` header of an
iteration's files when the iteration is first used (reading headers costs an open a file, so
it is paid only for iterations someone looks at). A file that contradicts its node is never
handed out for it; one sentence in `problems` names both. Reshape-type kernels dump their
output in their input's shape, so a shape with the declared element count is accepted.

When several files name the same tensor (node, io, slot, iteration), the newest wins, as in
MindSpore's offline engine (spec §5.2 step 4): "newest" is the timestamp in the file name,
not the file's mtime (a copy of the dump changes every mtime). MindSpore compares the
timestamp strings; they are compared as numbers here, which agrees for MindSpore's own
timestamps (always the same number of digits) and stays right for hand-made names. Equal
timestamps are settled by the file name, so the choice never depends on the listing order.
One such tensor is one sentence in `problems`, naming the files ignored; several (a
control-flow loop dumps a tensor once per trip into one iteration folder) are one sentence
for the graph, saying how many and that `trips` gives the earlier files (`pt NAME@IT#TRIP`).

Files that match no node are listed in `unmatched` and summed up in `problems`, except
2.0-era `constants/` files of constants the graph does not hold (MindInsight shows none of
them either). Entries named as tensor files but refused by discovery (a FIFO, a dangling or
looping link, a link out of the dump) are kept per tensor (`refused_reason`), so a check can
tell "not dumped" from "dumped but unreadable".
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.tensor import UnsupportedDataTypeError, dtype_from_dump_name
from tuidebug.offline.files.bin_tensors import converted_fit
from tuidebug.offline.files.names import TensorFile, constant_data_name, encode_dump_name
from tuidebug.offline.files.names_24 import kernel_dump_names
from tuidebug.offline.files.npy import NpyHeader, SpecConflict, peek_header, spec_conflict
from tuidebug.offline.files.statistic_csv import StatisticRow
from tuidebug.offline.layout.sync_rank import RankLayout

TensorKey = tuple[str, str, int]  # (node name, "input" | "output", slot)
# remembered (header, declared type) answers; a dump has a few dozen distinct headers
_MAX_FITS = 4096


def _unique(nodes: list[Node] | None) -> Node | None:
    return nodes[0] if nodes and len(nodes) == 1 else None


class _NodeMatcher:
    """Every graph node under each name MindSpore may give its files."""

    def __init__(self, graph: Graph, dump_names: Mapping[str, str]) -> None:
        self.full: dict[str, list[Node]] = defaultdict(list)
        self.short: dict[str, list[Node]] = defaultdict(list)
        self.renamed: dict[str, Node] = {}
        self.param_raw: dict[str, Node] = {}
        self.param_encoded: dict[str, list[Node]] = defaultdict(list)
        self.const_key: dict[str, Node] = {}
        self.const_data: dict[str, Node] = {}
        self.by_rule = True
        for node in graph:
            if node.kind is NodeKind.OPERATOR:
                self.full[encode_dump_name(node.name)].append(node)
                self.short[node.short_name].append(node)
                renamed = dump_names.get(node.name)
                if renamed is not None:
                    self.renamed[renamed] = node
            elif node.kind is NodeKind.PARAMETER:
                self.param_raw[node.name] = node
                self.param_encoded[encode_dump_name(node.name)].append(node)
            else:
                self.const_key[node.name] = node
                data = constant_data_name(node.dump_name) if node.dump_name else None
                if data is not None:
                    self.const_data[data] = node

    def choose_scheme(self, op_names: set[str]) -> None:
        """Name 2.4+ kernels by MindSpore's renumbering unless the graph's own names explain
        more of the dump's files."""
        by_rule = sum(1 for n in op_names if n in self.renamed)
        by_graph = sum(1 for n in op_names if self._graph_name(n) is not None)
        self.by_rule = by_rule >= by_graph

    def _graph_name(self, op_name: str) -> Node | None:
        return _unique(self.full.get(op_name)) or _unique(self.short.get(op_name))

    def match(
        self, op_type: str, op_name: str, new_grammar: bool, in_constants: bool
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
        if new_grammar:
            return self.renamed.get(op_name) if self.by_rule else self._graph_name(op_name)
        return _unique(self.short.get(op_name)) or _unique(self.full.get(op_name))


def _newer(a: TensorFile, b: TensorFile) -> bool:
    """Whether `a` is the newer of two files of one tensor: the larger timestamp, then the
    larger name (so equal timestamps never depend on the listing order)."""
    return (a.timestamp, a.name) > (b.timestamp, b.name)


def _spec(node: Node, slot: int) -> TensorSpec | None:
    for spec in node.outputs:
        if spec.slot == slot:
            return spec
    return None


class TensorIndex:
    """Tensor files of one graph on one rank, keyed by (node, io, slot) per iteration.

    `graph_id` is the folder the files live in, the root graph id by default (sub-graph
    tensors are stored under their root graph's folder on Ascend); the execution order is
    read for the graph's own id. `dump_names` maps the graph's operators to their 2.4+ dump
    names (`dump_names.kernel_dump_names` over all graphs of the rank, which number on across
    graphs); without it they are computed from this graph alone.

    Thread safety: built in the constructor; an iteration's header check runs once, under a
    lock, the first time the iteration is looked up.
    """

    def __init__(
        self,
        rank: RankLayout,
        graph: Graph,
        graph_id: int | None = None,
        dump_names: Mapping[str, str] | None = None,
    ) -> None:
        self.rank = rank
        self.graph = graph
        self.graph_id = graph.root_graph_id if graph_id is None else graph_id
        self.problems: list[str] = []
        self.unmatched: list[TensorFile] = []
        if dump_names is None:
            dump_names = kernel_dump_names([graph])[graph.name]
        self._matcher = _NodeMatcher(graph, dump_names)
        self._by_iteration: dict[int, dict[TensorKey, TensorFile]] = {}
        self._constants: dict[TensorKey, TensorFile] = {}
        # (iteration, None for constants/) → tensor → its refused file and the sentence why
        self._refused: dict[int | None, dict[TensorKey, tuple[TensorFile, str]]] = {}
        # (iteration or None, tensor) → files of the tensor ignored for a newer one
        self._ignored: dict[tuple[int | None, TensorKey], list[TensorFile]] = {}
        self._node_iterations: dict[str, set[int]] = defaultdict(set)
        self._positions: dict[str, int] | None = None
        self._checked: set[int | None] = set()  # iterations (None: constants) header-checked
        # `verify`'s answers by (dtype, shape, declared dtype, declared shape)
        self._read_fits: dict[tuple[object, ...], SpecConflict | None] = {}
        self._conflicts: set[TensorKey] = set()
        # (iteration, None for constants/) → tensor → its file that contradicts the graph
        # and the sentence a check says when it reads that file as it is: a file dropped
        # from the tables must not vanish from a check (issue 27 §3)
        self._contradicted: dict[int | None, dict[TensorKey, tuple[TensorFile, str]]] = {}
        self._keys: dict[TensorKey, TensorKey] = {}
        # (declared dtype, dtype named by a file) → whether they fit, or the words of the
        # conflict: every file of a tensor asks the same question
        self._named_fits: dict[tuple[object, str], SpecConflict | None] = {}
        # (header, declared dtype, declared shape) → the conflict or None
        self._header_fits: dict[tuple[NpyHeader, object, object], SpecConflict | None] = {}
        self._lock = threading.Lock()
        # statistic-only iterations (a statistic.csv and no tensor file, `saved_data:
        # "statistic"`): their tensors by the CSV's rows, matched to nodes like file names
        self._stat_rows: dict[int, dict[TensorKey, StatisticRow]] = {}
        # other iterations' statistic.csv rows (beside tensor files), read when asked for
        self._csv_rows: dict[int, dict[TensorKey, StatisticRow]] = {}
        # statistic-only rows that contradict the graph, with their sentence: a check decides
        # from them as they are and says so, never skips them (issue 27 §3)
        self._contradicted_rows: dict[int, dict[TensorKey, tuple[StatisticRow, str]]] = {}
        self._build()

    def __repr__(self) -> str:
        return (
            f"TensorIndex(rank_{self.rank.rank_id}, {self.graph.name}, "
            f"iterations={self.iterations})"
        )

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        listed = [(it, self.rank.tensor_files(self.graph_id, it)) for it in self.iterations]
        csv_rows = self._statistic_only_rows(listed)
        self._matcher.choose_scheme(
            {
                f.op_name
                for _, files in listed
                for f in files
                if f.dtype is not None and f.op_type != "Parameter"
            }
            | {r.op_name for rows in csv_rows.values() for r in rows if r.op_type != "Parameter"}
        )
        match = self._matcher.match
        left: dict[tuple[str, str, str], int] = defaultdict(int)
        add = self._add
        fits = self._named_dtype_fits
        node_iterations = self._node_iterations
        for iteration, files in listed:
            table = self._by_iteration.setdefault(iteration, {})
            for f in files:
                node = match(f.op_type, f.op_name, f.dtype is not None, False)
                if node is None:
                    self.unmatched.append(f)
                    # iteration files are summed over iterations: name the graph folder
                    left[(f.op_type, f.op_name, f.folder)] += 1
                elif fits(node, f, iteration):
                    add(table, node.name, f, iteration)
                    node_iterations[node.name].add(iteration)
            self._keep_refused(iteration, False)
        for f in self.rank.constant_files(self.graph_id):
            node = match(f.op_type, f.op_name, f.dtype is not None, True)
            if node is None:
                # 2.0 dumps write every constant of the session here, most of them of no
                # node of this graph; MindInsight lists none of them either
                self.unmatched.append(f)
            elif self._named_dtype_fits(node, f, None):
                self._add(self._constants, node.name, f, None)
        self._keep_refused(None, True)
        for iteration, rows in csv_rows.items():
            self._index_rows(iteration, rows)
        show = self.rank._show
        graph_folders: dict[tuple[str, str, Path], int] = defaultdict(int)
        for (op_type, op_name, folder), count in left.items():
            graph_folders[(op_type, op_name, Path(folder).parent)] += count
        for (op_type, op_name, where), count in sorted(graph_folders.items()):
            self.problems.append(
                f"{count} tensor file{'s' if count != 1 else ''} named {op_type}.{op_name} under "
                f"{show(where)} match{'' if count != 1 else 'es'} no node of graph "
                f"{self.graph.name}, so {'they are' if count != 1 else 'it is'} not shown."
            )
        self._report_duplicates()
        self._check_execution_order()

    def _statistic_only_rows(
        self, listed: list[tuple[int, list[TensorFile]]]
    ) -> dict[int, list[StatisticRow]]:
        """The statistic.csv rows of each iteration folder holding no tensor file (the
        layout of `saved_data: "statistic"`); the CSV of a folder with tensors is read only
        when asked for (`statistic_row`)."""
        out: dict[int, list[StatisticRow]] = {}
        for iteration, files in listed:
            if files:
                continue
            table = self.rank.statistics(self.graph_id, iteration)
            if table is not None and table.rows:
                out[iteration] = table.rows
        return out

    def _match_row(self, row: StatisticRow) -> Node | None:
        """The node of a statistic.csv row: its `Op Name` is what a file name would hold,
        in either grammar (the CSV carries no dtype to tell them apart)."""
        return self._matcher.match(row.op_type, row.op_name, True, False) or self._matcher.match(
            row.op_type, row.op_name, False, False
        )

    def _index_rows(self, iteration: int, rows: list[StatisticRow]) -> None:
        """Index a statistic-only iteration's rows like files: matched to nodes, checked
        against the declared output type, the last row of a tensor kept."""
        table = self._stat_rows.setdefault(iteration, {})
        unmatched = 0
        for row in rows:
            node = self._match_row(row)
            if node is None:
                unmatched += 1
                continue
            if row.io == "output" and not self._row_fits(node, row, iteration):
                continue
            key = (node.name, row.io, row.slot)
            table[self._keys.setdefault(key, key)] = row
            if row.io == "output":
                self._node_iterations[node.name].add(iteration)
        if unmatched:
            self.problems.append(
                f"{unmatched} row{'s' if unmatched != 1 else ''} of the statistic.csv of "
                f"iteration {iteration} (graph folder {self.graph_id} on rank_"
                f"{self.rank.rank_id}) name{'' if unmatched != 1 else 's'} no node of graph "
                f"{self.graph.name}, so {'they are' if unmatched != 1 else 'it is'} not shown."
            )

    def _row_fits(self, node: Node, row: StatisticRow, iteration: int) -> bool:
        """A row's `Data Type` and `Shape` against the node's declared output (as a file's
        header is checked); a type name that is no dump type name is not checked."""
        spec = _spec(node, row.slot)
        if spec is None or row.shape is None or (spec.dtype is None and spec.shape is None):
            return True
        # the cell is untrusted text: only the dump's own type names (`float32`, `bfloat16`)
        # are read, never numpy's dtype grammar (`"f4,f4"`, `"(1,)("` raise or build structs);
        # an unknown name contradicts nothing, so the row is kept unchecked
        dtype = dtype_from_dump_name(row.data_type)
        if dtype is None:
            return True
        conflict = spec_conflict(dtype, row.shape, spec, reshaped_ok=True)
        if conflict is None:
            return True
        key = (node.name, row.io, row.slot)
        sentence = (
            f"The statistic.csv row {row.key} of iteration {iteration} describes "
            f"{conflict.actual}, but the graph declares {node.name} output {row.slot} as "
            f"{conflict.declared}, so the row is not shown under that node; a check decides "
            "from it as it is."
        )
        self._contradicted_rows.setdefault(iteration, {})[key] = (row, sentence)
        if key not in self._conflicts:
            self._conflicts.add(key)
            self.problems.append(sentence)
        return False

    def _keep_refused(self, iteration: int | None, in_constants: bool) -> None:
        """Tie the files discovery refused in a folder to their tensors (those of no node of
        this graph are not watched here, and are reported by discovery anyway)."""
        for f, sentence in self.rank.refused_files(self.graph_id, iteration):
            node = self._matcher.match(f.op_type, f.op_name, f.dtype is not None, in_constants)
            if node is not None:
                self._refused.setdefault(iteration, {})[(node.name, f.io, f.slot)] = (f, sentence)

    def _add(
        self,
        table: dict[TensorKey, TensorFile],
        node_name: str,
        f: TensorFile,
        iteration: int | None,
    ) -> None:
        key = (node_name, f.io, f.slot)
        # one key object per tensor, whatever the number of iterations holding it
        key = self._keys.setdefault(key, key)
        old = table.get(key)
        if old is None:
            table[key] = f
            return
        newer, older = (f, old) if _newer(f, old) else (old, f)
        table[key] = newer
        self._ignored.setdefault((iteration, key), []).append(older)

    def trips(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> list[TensorFile]:
        """Every file of one tensor in one iteration folder, oldest first: a control-flow
        loop dumps a tensor once per trip, and the last (the newest, what `lookup` gives) is
        the one read by default. Empty when the tensor has no file there."""
        node = self._node(node_name)
        if node is None:
            return []
        key = (node.name, "output" if is_output else "input", slot)
        table = self._table(iteration)
        kept = None if table is None else table.get(key)
        if kept is None:
            return []
        older = sorted(self._ignored.get((iteration, key), []), key=lambda f: (f.timestamp, f.name))
        return [*older, kept]

    def _report_duplicates(self) -> None:
        """One sentence for a tensor held by several files, naming the files ignored; one
        sentence for the graph when several are (loop trips: a control-flow graph can hold
        hundreds, and one wrapped warning per file buried everything else)."""
        show = self.rank._show
        items = sorted(self._ignored.items(), key=lambda kv: (kv[0][0] is None, kv[0]))
        if len(items) > 1:
            (iteration, (node, io, slot)), _ = items[0]
            most = max(len(ignored) for _, ignored in items) + 1
            where = "constants/" if iteration is None else f"iteration {iteration}"
            self.problems.append(
                f"{len(items)} tensors of graph {self.graph.name} have several files in one "
                f"folder (control-flow loop trips, up to {most} each; the first is {node} "
                f"{io} {slot} at {where}): the newest file of each is read, and "
                "`pt NAME:SLOT@ITERATION#TRIP` (#1 the first) or ( / ) in the tensor view "
                "show an earlier trip."
            )
            return
        for (iteration, key), ignored in items:  # one at most
            table = self._constants if iteration is None else self._by_iteration[iteration]
            kept = table[key]
            node, io, slot = key
            where = "in constants/" if iteration is None else f"iteration {iteration}"
            names = sorted(show(f.path) for f in ignored)
            if len(names) == 1:
                what = f"{names[0]} holds"
                verb = "it is"
            else:
                shown = names[:3] + ([f"{len(names) - 3} more"] if len(names) > 3 else [])
                what = f"{', '.join(shown[:-1])} and {shown[-1]} hold"
                verb = "they are"
            self.problems.append(
                f"{what} the same tensor ({node} {io} {slot}, {where}) as the newer "
                f"{kept.path.name}, so {verb} ignored by the checks (a loop trip? `pt "
                "NAME:SLOT@ITERATION#TRIP` and ( / ) in the tensor view show earlier trips)."
            )

    def _named_dtype_fits(self, node: Node, f: TensorFile, iteration: int | None) -> bool:
        """The dtype in a 2.4+ output file name against the node's declared output type."""
        if f.dtype is None or f.io != "output":
            return True
        spec = _spec(node, f.slot)
        if spec is None:
            return True
        key = (spec.dtype, f.dtype)
        try:
            conflict = self._named_fits[key]
        except KeyError:
            try:
                named = dtype_from_dump_name(f.dtype)
            except UnsupportedDataTypeError:
                named = None
            # only the dtype is known from the name
            conflict = (
                None if named is None else spec_conflict(named, (), replace(spec, shape=None))
            )
            self._named_fits[key] = conflict
        if conflict is None:
            return True
        self._conflict(node, f, f"is named as {conflict.actual}", conflict.declared, iteration)
        return False

    def _conflict(
        self, node: Node, f: TensorFile, found: str, declared: str, iteration: int | None
    ) -> None:
        """Record a file that contradicts its node: one sentence per node output in
        `problems`, and each such file with its own sentence per iteration for checks (the
        first file's is the same sentence, so it is said once)."""
        key = (node.name, f.io, f.slot)
        sentence = (
            f"{self.rank._show(f.path)} {found}, but the graph declares {node.name} output "
            f"{f.slot} as {declared}, so the file is not shown under that node (nor are other "
            "files of it that disagree); a check reads it as it is."
        )
        self._contradicted.setdefault(iteration, {})[self._keys.setdefault(key, key)] = (
            f,
            sentence,
        )
        if key not in self._conflicts:
            self._conflicts.add(key)
            self.problems.append(sentence)

    def _checked_table(
        self, iteration: int | None, table: dict[TensorKey, TensorFile]
    ) -> dict[TensorKey, TensorFile]:
        """`table` after its output files' headers were checked against the graph (once)."""
        if iteration in self._checked:
            return table
        with self._lock:
            if iteration not in self._checked:
                for key, f in list(table.items()):
                    if f.io != "output":
                        continue
                    node = self.graph.get(key[0])
                    if node is None:
                        continue
                    spec = _spec(node, f.slot)
                    if spec is None or (spec.dtype is None and spec.shape is None):
                        continue
                    fit = converted_fit(f)
                    if fit is not None:  # a .bin tensor: its header was read when listed
                        conflict = spec_conflict(*fit, spec, reshaped_ok=True)
                        if conflict is not None:
                            del table[key]
                            self._conflict(node, f, conflict.found, conflict.declared, iteration)
                        continue
                    header = peek_header(f.fspath)  # None: reading it will say what is wrong
                    if header is None:
                        continue
                    # headers are shared (cached per header bytes): ask once per pair
                    fit_key = (header, spec.dtype, spec.shape)
                    try:
                        conflict = self._header_fits[fit_key]
                    except KeyError:
                        conflict = spec_conflict(header.dtype, header.shape, spec, reshaped_ok=True)
                        if len(self._header_fits) >= _MAX_FITS:  # headers all different
                            self._header_fits.clear()
                        self._header_fits[fit_key] = conflict
                    if conflict is not None:
                        del table[key]
                        self._conflict(node, f, conflict.found, conflict.declared, iteration)
                self._checked.add(iteration)
        return table

    def _table(self, iteration: int) -> dict[TensorKey, TensorFile] | None:
        table = self._by_iteration.get(iteration)
        return None if table is None else self._checked_table(iteration, table)

    def _constant_table(self) -> dict[TensorKey, TensorFile]:
        return self._checked_table(None, self._constants)

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

    def node(self, node_name: str) -> Node | None:
        """The graph node of a name as check requests may write it (`graph_name/` prefix)."""
        return self._node(node_name)

    def unchecked_files(self, iteration: int) -> Mapping[TensorKey, TensorFile]:
        """The iteration's files as `lookup(checked=False)` sees them (constants from
        `constants/` aside); read-only."""
        return self._by_iteration.get(iteration) or {}

    def _node(self, node_name: str) -> Node | None:
        node = self.graph.get(node_name)
        if node is None and node_name.startswith(self.graph.name + "/"):
            # check-node names may carry a `graph_name/` prefix (spec §5.8)
            node = self.graph.get(node_name[len(self.graph.name) + 1 :])
        return node

    def lookup(
        self,
        node_name: str,
        slot: int,
        iteration: int,
        is_output: bool = True,
        *,
        checked: bool = True,
    ) -> TensorFile | None:
        """The file holding one tensor, or None. Constants dumped in `constants/` hold at
        every dumped iteration. `checked=False` skips the header check against the graph
        (the first lookup of an iteration opens every output file's header): for a reader
        that reads the file anyway and then calls `verify` with what it found."""
        node = self._node(node_name)
        if node is None:
            return None
        key = (node.name, "output" if is_output else "input", slot)
        table = self._table(iteration) if checked else self._by_iteration.get(iteration)
        if table is None:
            return None
        found = table.get(key)
        if found is None and node.kind is NodeKind.CONSTANT:
            found = (self._constant_table() if checked else self._constants).get(key)
        return found

    def verify(
        self,
        node_name: str,
        f: TensorFile,
        iteration: int,
        dtype: np.dtype,
        shape: tuple[int, ...],
    ) -> bool:
        """Whether an output file found with `lookup(checked=False)` and read (its `dtype`
        and `shape`) fits its node, as the header check would have decided; a file that does
        not is dropped from the index and its sentence recorded, exactly as that check does."""
        node = self.graph.get(node_name)
        spec = None if node is None or f.io != "output" else _spec(node, f.slot)
        if node is None or spec is None or (spec.dtype is None and spec.shape is None):
            return True
        fit_key = (dtype, shape, spec.dtype, spec.shape)
        try:
            conflict = self._read_fits[fit_key]
        except KeyError:
            conflict = spec_conflict(dtype, shape, spec, reshaped_ok=True)
            if len(self._read_fits) >= _MAX_FITS:
                self._read_fits.clear()
            self._read_fits[fit_key] = conflict
        if conflict is None:
            return True
        with self._lock:
            key = (node.name, f.io, f.slot)
            for table in (self._by_iteration.get(iteration), self._constants):
                if table is not None and table.get(key) is f:
                    del table[key]
            self._conflict(node, f, conflict.found, conflict.declared, iteration)
        return False

    def files_for(self, iteration: int) -> dict[TensorKey, TensorFile]:
        """Every matched file of one iteration by (node name, io, slot), constants from
        `constants/` included. A new dict: callers may keep or change it."""
        table = self._table(iteration)
        if table is None:
            return {}
        merged = dict(self._constant_table())
        merged.update(table)
        return merged

    def refused_any(self) -> bool:
        """Whether discovery refused any file of this graph (a FIFO, a dangling link…)."""
        return bool(self._refused)

    def refused(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> tuple[TensorFile, str] | None:
        """The tensor's file that exists but was refused by discovery (a FIFO, a dangling
        link…) and the sentence discovery reported; None when no file of it was refused."""
        if not self._refused:  # the usual dump: nothing refused, nothing to look up
            return None
        node = self._node(node_name)
        if node is None:
            return None
        key = (node.name, "output" if is_output else "input", slot)
        found = self._refused.get(iteration, {}).get(key)
        if found is None and node.kind is NodeKind.CONSTANT:
            found = self._refused.get(None, {}).get(key)
        return found

    def contradicted(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> tuple[TensorFile, str] | None:
        """The tensor's file at `iteration` that contradicts the graph's dtype or shape (not
        in the tables, so not shown under its node) and the sentence a check says when it
        reads it as it is; None when none did."""
        if not self._contradicted:  # the usual dump
            return None
        node = self._node(node_name)
        if node is None:
            return None
        key = (node.name, "output" if is_output else "input", slot)
        found = self._contradicted.get(iteration, {}).get(key)
        if found is None and node.kind is NodeKind.CONSTANT:
            found = self._contradicted.get(None, {}).get(key)
        return found

    def blockers(self, iteration: int) -> list[str]:
        """Sentences about data of this graph's iteration folder that exists but could not
        be read and cannot be tied to one tensor (`RankLayout.blockers`)."""
        return self.rank.blockers(self.graph_id, iteration)

    def graph_blockers(self) -> list[str]:
        """The same for the graph's whole folder (`RankLayout.graph_blockers`)."""
        return self.rank.graph_blockers(self.graph_id)

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

    def statistic_only(self, iteration: int) -> bool:
        """Whether the iteration's tensors are known by statistic.csv rows alone (the folder
        holds a statistic.csv and no tensor file: `saved_data: "statistic"`)."""
        return iteration in self._stat_rows

    def statistic_rows(self, iteration: int) -> Mapping[TensorKey, StatisticRow]:
        """A statistic-only iteration's rows by (node name, io, slot); empty for any other
        iteration. Read-only."""
        return self._stat_rows.get(iteration) or {}

    def contradicted_row(
        self, node_name: str, slot: int, iteration: int
    ) -> tuple[StatisticRow, str] | None:
        """A statistic-only iteration's output row of the tensor that contradicts the
        graph's dtype or shape (not in `statistic_rows`), with its sentence; or None."""
        node = self._node(node_name)
        if node is None or not self._contradicted_rows:
            return None
        return self._contradicted_rows.get(iteration, {}).get((node.name, "output", slot))

    def statistic_row(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> StatisticRow | None:
        """The statistic.csv row of one tensor at an iteration, in a statistic-only folder
        or beside the tensor files (`saved_data: "full"`), or None."""
        node = self._node(node_name)
        if node is None:
            return None
        key = (node.name, "output" if is_output else "input", slot)
        rows = self._stat_rows.get(iteration)
        if rows is None:
            with self._lock:
                rows = self._csv_rows.get(iteration)
                if rows is None:
                    rows = self._csv_rows[iteration] = self.statistics_for(iteration)
        return rows.get(key)

    def statistics_for(self, iteration: int) -> dict[TensorKey, StatisticRow]:
        """The iteration's statistic.csv rows by (node name, io, slot); rows naming no node
        are left out. Empty without a statistic.csv."""
        table = self.rank.statistics(self.graph_id, iteration)
        if table is None:
            return {}
        out: dict[TensorKey, StatisticRow] = {}
        for row in table.rows:
            node = self._match_row(row)
            if node is not None:
                out[(node.name, row.io, row.slot)] = row
        return out
