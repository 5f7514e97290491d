"""The dump model: one MindSpore dump folder, its ranks' graphs and tensor indexes.

`OfflineDump` joins the pieces the other offline modules provide: discovery (`layout`), graph
files (`graph_files`), the file ↔ node index (`tensor_index`) and safe tensor reading
(`tensor_store`). Graphs are loaded per rank on first use, so opening a dump with many ranks
costs only its discovery; indexes are built per (rank, graph) on first use too.

Everything that leaves part of the dump unusable (a damaged `.pb`, garbage files, names that
are not UTF-8, symbolic links leaving the dump) is one sentence in `problems`; only a folder
with nothing usable raises `DumpError`.

Thread safety: the session calls this from worker threads while the UI reads it, so lazy
loading is guarded by one lock. Tensor values are read without the lock (memory maps).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tuidebug.core.graph import Graph, Node, NodeKind, StepInputs
from tuidebug.core.graph_pb import GraphFileError, GraphTooLargeError
from tuidebug.core.graph_run import GraphRun
from tuidebug.offline.files.bin_tensors import BinTensorFile, raw_sentence, read_bin_file
from tuidebug.offline.files.graphs import load_graph_file
from tuidebug.offline.files.listing import Scanner
from tuidebug.offline.files.names import encode_dump_name, show_name
from tuidebug.offline.files.names_24 import kernel_dump_names
from tuidebug.offline.files.npy import (
    TensorFileError,
    TensorRefusedError,
    TensorTooLargeError,
    load_npy,
)
from tuidebug.offline.files.overflow import OverflowMap, tensor_name_pair, tie_overflows
from tuidebug.offline.layout.async_rank import AsyncRankLayout
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.layout.name_graph import graph_from_files
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.sync_rank import RankLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

if TYPE_CHECKING:
    from tuidebug.offline.files.names import TensorFile

__all__ = ["DumpError", "OfflineDump", "TensorFileError", "TensorTooLargeError"]


class OfflineDump:
    """A MindSpore dump folder opened for reading.

    `mem_limit` (bytes, None = no limit) is the checker's per-tensor memory limit: a tensor
    larger than it is not read and its watchpoints report error code 8 (MindInsight's
    `mem_limit` semantics, spec §3.6). Viewing a tensor (`value`) memory-maps it and is not
    limited.
    """

    # a foreign dump's statistics in words (`foreign/source.py`); "" for MindSpore's
    statistics_words = ""
    # MindSpore dumps a parameter after the step's update (`Capabilities`)
    parameters_after_update = True

    def __init__(
        self,
        root: str | os.PathLike[str],
        mem_limit: int | None = None,
        graph_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if mem_limit is not None and mem_limit <= 0:
            raise ValueError("The memory limit must be a positive number of bytes.")
        self.layout = DumpLayout.open(root)  # DumpError when nothing is usable
        # a synchronous dump of the same network whose `rank_N/graphs/*.pb` stand for the
        # graphs a dump without graph files lacks (`--graph DIR`; Ascend async layouts)
        self.graph_dir = os.fspath(graph_dir) if graph_dir is not None else None
        self._graph_layout: DumpLayout | None = None
        # (rank, graph name) → the graph-folder id its tensors are read from, when it is
        # not the graph's own root id (graphs taken from --graph or built from names)
        self._folder_ids: dict[tuple[int, str], int] = {}
        self._named_graphs: set[tuple[int, str]] = set()  # graphs built from file names
        self._overflow: dict[tuple[int, int, int], OverflowMap] = {}
        self.root: Path = self.layout.root
        self.given_root = os.fspath(root)
        self.mem_limit = mem_limit
        self._lock = threading.RLock()
        self._graphs: dict[int, dict[str, Graph]] = {}
        self._graph_file_ids: dict[tuple[int, str], int] = {}
        self._indexes: dict[tuple[int, str], TensorIndex] = {}
        self._rank_dump_names: dict[int, dict[str, dict[str, str]]] = {}
        self._graph_problems: dict[int, list[str]] = {}
        self._reported: set[str] = set()

    def __repr__(self) -> str:
        return f"OfflineDump({str(self.root)!r}, ranks={self.ranks})"

    # ------------------------------------------------------------------ settings
    @property
    def ranks(self) -> list[int]:
        return self.layout.rank_ids

    @property
    def backend(self) -> str:
        """`device_target` of `.dump_metadata/config.json` (CPU, GPU, Ascend) or ""."""
        return self.layout.settings.device_target or ""

    @property
    def ms_version(self) -> str:
        return self.layout.settings.ms_version or ""

    @property
    def net_name(self) -> str:
        for rid in self.ranks:
            name = self.layout.ranks[rid].net_name
            if name:
                return name
        return self.layout.settings.net_name or ""

    def refresh(self) -> bool:
        """Look for iterations that appeared since the dump was opened; True when some did.
        (A foreign dump's steps: `foreign/dump.py`; a MindSpore dump is read as opened.)"""
        return False

    def source_text(self, path: str) -> list[str] | None:
        """The dump's own copy of a source file its stacks name (foreign dumps that hold
        one: `foreign/source.py`); a MindSpore dump holds none."""
        return None

    def tensor_alias(self, rank: int, name: str) -> tuple[str, str, int] | None:
        """(graph, node, slot) of a tensor named by its dump tool's own name (foreign dumps:
        `foreign/source.py` `aliases`); MindSpore dumps name tensors by node and slot."""
        return None

    def step_inputs(self, rank: int, graph: str, iteration: int) -> dict[str, StepInputs]:
        """Node → its data edges at `iteration` where they differ from the graph's
        (`DebugSession.step_inputs`); a MindSpore graph's edges are the same every step."""
        return {}

    def rank_layout(self, rank: int) -> RankLayout:
        try:
            return self.layout.ranks[rank]
        except KeyError:
            ranks = ", ".join(map(str, self.ranks))
            raise KeyError(f"Rank {rank} is not in the dump (ranks: {ranks}).") from None

    # ------------------------------------------------------------------ graphs
    def graphs(self, rank: int) -> dict[str, Graph]:
        """The graphs of a rank by name, loaded on first use (damaged files are problems)."""
        with self._lock:
            if rank not in self._graphs:
                self._load_graphs(rank)
            return self._graphs[rank]

    def _load_graphs(self, rank: int) -> None:
        layout = self.rank_layout(rank)
        graphs: dict[str, Graph] = {}
        problems: list[str] = []
        if not layout.graph_files and layout.dumped_iterations:
            self._substitute_graphs(rank, layout, graphs, problems)
        for gid, files in sorted(layout.graph_files.items()):
            if files.pb is None:
                continue
            try:
                graph = load_graph_file(files.pb, ir_path=files.ir)
            except (GraphFileError, GraphTooLargeError) as err:
                problems.append(self._relative(str(err)))
                continue
            if graph.name in graphs:
                problems.append(
                    f"rank_{rank} holds two graphs named {graph.name}; only the first is used."
                )
                continue
            graphs[graph.name] = graph
            self._graph_file_ids[(rank, graph.name)] = gid
        if not graphs and layout.dumped_iterations and layout.graph_files:
            problems.append(
                f"rank_{rank} has tensor data but no readable graph, so its tensors cannot be "
                "tied to nodes."
            )
        self._graph_problems[rank] = problems
        self._graphs[rank] = graphs

    def graph(self, rank: int, name: str) -> Graph:
        graphs = self.graphs(rank)
        try:
            return graphs[name]
        except KeyError:
            known = ", ".join(graphs) or "none"
            raise KeyError(f"rank_{rank} has no graph {name!r} (graphs: {known}).") from None

    def graph_order(self, rank: int, name: str) -> int:
        """Sort key of a graph within its rank: its graph id."""
        self.graphs(rank)
        return self._graph_file_ids.get((rank, name), 1 << 30)

    def graph_id(self, rank: int, name: str) -> int:
        """The id of the graph's folder of tensor files (its root graph id)."""
        return self.index(rank, name).graph_id

    def node(self, rank: int, graph: str, name: str) -> Node:
        return self.graph(rank, graph).node(name)

    # ------------------------------------------------------------------ indexes
    def index(self, rank: int, graph: str) -> TensorIndex:
        key = (rank, graph)
        found = self._indexes.get(key)  # built once: later calls need no lock
        if found is not None:
            return found
        with self._lock:
            found = self._indexes.get(key)
            if found is None:
                found = TensorIndex(
                    self.rank_layout(rank),
                    self.graph(rank, graph),
                    graph_id=self._folder_ids.get(key),
                    dump_names=self._dump_names(rank, graph),
                )
                self._indexes[key] = found
            return found

    def _dump_names(self, rank: int, graph: str) -> dict[str, str]:
        """2.4+ dump names of the graph's kernels (spec §5.2a: numbered across the rank's
        graphs in graph-id order), computed once per rank."""
        if (rank, graph) in self._named_graphs:
            # built from the files' own names: each node's dump name is its file's
            return {n.name: n.dump_name for n in self.graph(rank, graph) if n.dump_name}
        names = self._rank_dump_names.get(rank)
        if names is None:
            graphs = sorted(
                self.graphs(rank).values(), key=lambda g: self.graph_order(rank, g.name)
            )
            names = self._rank_dump_names[rank] = kernel_dump_names(graphs)
        return names[graph]

    def indexes(self, rank: int) -> list[TensorIndex]:
        return [self.index(rank, name) for name in self.graphs(rank)]

    # ------------------------------------------------------------------ iterations
    def iterations(self, rank: int | None = None, graph: str | None = None) -> list[int]:
        """Dumped iterations: of one graph, of one rank (union over its graph folders), or of
        the whole dump."""
        if graph is not None and rank is not None:
            return list(self.index(rank, graph).iterations)
        if rank is not None:
            return self.rank_layout(rank).iterations
        return self.layout.iterations

    def step_count(self, rank: int | None = None) -> int:
        """Spec §5.5 step 6: max(history) + 1, else max(dumped iteration) + 1, else 0."""
        if rank is None:
            return self.layout.step_count
        return self.rank_layout(rank).step_count

    def has_history(self, rank: int, graph: str) -> bool:
        return self.index(rank, graph).has_history

    def previous_iteration(self, rank: int, graph: str, iteration: int) -> int | None:
        """The previous run of the graph per its history (spec §5.8), or None."""
        return self.index(rank, graph).previous_iteration(iteration)

    def execution_position(self, rank: int, graph: str, node: str) -> int:
        return self.index(rank, graph).execution_position(node)

    def graph_runs(self, rank: int) -> list[GraphRun]:
        """Spec §5.7 graph runs of a rank, sorted by iteration then graph id."""
        names = {self._graph_file_ids.get((rank, n), -1): n for n in self.graphs(rank)}
        return self.rank_layout(rank).graph_runs(names)

    # ------------------------------------------------------------------ tensors
    def tensor_file(
        self,
        rank: int,
        graph: str,
        node: str,
        slot: int,
        iteration: int,
        is_output: bool = True,
        *,
        checked: bool = True,
    ) -> TensorFile | None:
        """The file holding a tensor, or None when it was not dumped. Constants are never
        looked up here (they are not per-iteration data; see `value`). `checked=False`: the
        header is not checked against the graph; the reader calls `verify_read` after."""
        index = self.index(rank, graph)
        found = index.graph.get(node)
        if found is not None and found.kind is NodeKind.CONSTANT:
            return None
        return index.lookup(node, slot, iteration, is_output, checked=checked)

    def data_node_name(self, rank: int, graph: str, node: str) -> str:
        """The graph's own name of `node` (a `graph_name/` prefix dropped) when its tensors
        are per-iteration data, "" otherwise (unknown, or a constant: see `tensor_file`)."""
        found = self.index(rank, graph).node(node)
        return "" if found is None or found.kind is NodeKind.CONSTANT else found.name

    def verify_read(
        self,
        rank: int,
        graph: str,
        node: str,
        f: TensorFile,
        iteration: int,
        dtype: np.dtype,
        shape: tuple[int, ...],
    ) -> bool:
        """Whether a file found unchecked and read fits its node (see `TensorIndex.verify`);
        a file that does not is dropped and its sentence joins the dump's problems."""
        return self.index(rank, graph).verify(node, f, iteration, dtype, shape)

    def refused_reason(
        self,
        rank: int,
        graph: str,
        node: str,
        slot: int,
        iteration: int,
        is_output: bool = True,
    ) -> str | None:
        """Why the tensor's own file, found by discovery, was not used (a FIFO, a dangling
        or looping link, a link out of the dump), as discovery reported it; None when no
        file of it was refused. A file that fails when read is the reader's error instead."""
        found = self.index(rank, graph).refused(node, slot, iteration, is_output)
        return found[1] if found else None

    def contradicted(
        self, rank: int, graph: str, node: str, slot: int, iteration: int
    ) -> tuple[TensorFile, str] | None:
        """The tensor's output file at `iteration` that contradicts the graph's dtype or shape
        (never shown under the node), with the sentence a check says when it reads it as it
        is; None when no file of it did."""
        return self.index(rank, graph).contradicted(node, slot, iteration)

    def blockers(self, rank: int, graph: str, iteration: int) -> list[str]:
        """Sentences about data of the graph's iteration folder that exists but could not
        be read and cannot be tied to one tensor (the folder unreadable, a refused
        `mapping.csv` or unknown entry): any of its tensors may be among it."""
        return self.index(rank, graph).blockers(iteration)

    def graph_blockers(self, rank: int, graph: str) -> list[str]:
        """The same for the graph's whole folder (the net or graph folder unreadable, an
        iteration folder refused): any tensor of the graph may be among it."""
        return self.index(rank, graph).graph_blockers()

    def value(
        self,
        rank: int,
        graph: str,
        node: str,
        slot: int,
        iteration: int | None,
        is_output: bool = True,
        trip: int | None = None,
    ) -> np.ndarray | None:
        """A tensor's value (a read-only memory map for dumped files), or None when it has no
        value at that iteration. Constants with a value in the graph file return it directly,
        whatever the iteration; other constants come from the `constants/` folder. `trip`
        (1-based) picks one of the files a control-flow loop wrote for the tensor in one
        iteration folder (`TensorIndex.trips`); None reads the newest, as MindSpore does.
        Raises `TensorFileError` (one sentence naming the file) for unreadable files."""
        index = self.index(rank, graph)
        found = index.graph.node(node)
        if found.kind is NodeKind.CONSTANT:
            if found.value is not None and slot == 0:
                return np.asarray(found.value)
            iterations = index.iterations
            if not iterations:
                return None
            iteration = iterations[0]
        elif iteration is None:
            return None
        tensor_file = index.lookup(found.name, slot, iteration, is_output)
        if trip is not None and tensor_file is not None:
            trips = index.trips(found.name, slot, iteration, is_output)
            tensor_file = trips[trip - 1] if 1 <= trip <= len(trips) else None
        if tensor_file is None:
            refused = index.refused(found.name, slot, iteration, is_output)
            if refused is not None:
                # dumped but not readable: "no value" would read as "not dumped"
                raise TensorRefusedError(refused[0].path, refused[1])
            return None
        if isinstance(tensor_file, BinTensorFile):
            # read into memory (converted from its device layout): the checker's limit holds
            value = read_bin_file(tensor_file, self.root, self.mem_limit)
            raw = raw_sentence(tensor_file, self.rank_layout(rank)._show(tensor_file.path))
            if raw is not None:
                with self._lock:  # shown once, as a Notice, by whoever reads the problems
                    said = self._graph_problems.setdefault(rank, [])
                    if raw not in said:
                        said.append(raw)
            return value
        return load_npy(tensor_file.path, root=self.root, mmap=True)

    def statistics(self, rank: int, iteration: int) -> dict[str, list[dict[str, str]]]:
        """MindInsight's `select_tensor_statistics` shape for one rank and iteration: the rows of
        every graph folder's statistic.csv keyed by `"{Op Name}:{IO}:{Slot}"`."""
        out: dict[str, list[dict[str, str]]] = {}
        layout = self.rank_layout(rank)
        for gid in sorted(layout.dumped_iterations):
            if iteration not in layout.dumped_iterations[gid]:
                continue
            table = layout.statistics(gid, iteration)
            if table is None:
                continue
            for row in table.rows:
                out.setdefault(row.key, []).append(dict(row.raw))
        return out

    # ------------------------------------------------------------------ graphs substituted
    def _substitute_graphs(
        self, rank: int, layout: RankLayout, graphs: dict[str, Graph], problems: list[str]
    ) -> None:
        """Graphs for a rank with tensor data and no graph file: those of `--graph DIR`
        (matched to graph folders by operator names), else built from the file names."""
        if self.graph_dir is not None:
            taken = self._graphs_from_sync_dump(rank, layout, problems)
            if taken:
                graphs.update(taken)
                return
        if not isinstance(layout, AsyncRankLayout):
            # a synchronous rank whose graphs/ folder is missing is damaged, not a kind of
            # dump: its 2.4+ names do not decode into scopes reliably, so it stays refused
            # (with --graph DIR as the way to read it)
            return
        for gid in sorted(layout.dumped_iterations):
            files = [
                f for it in layout.dumped_iterations[gid] for f in layout.tensor_files(gid, it)
            ]
            graph = graph_from_files(f"kernel_graph_{gid}", files)
            graphs[graph.name] = graph
            self._graph_file_ids[(rank, graph.name)] = gid
            self._folder_ids[(rank, graph.name)] = gid
            self._named_graphs.add((rank, graph.name))

    def _graphs_from_sync_dump(
        self, rank: int, layout: RankLayout, problems: list[str]
    ) -> dict[str, Graph]:
        """The `.pb` graphs of the same rank (else the first rank) of the `--graph` dump,
        each reading the graph folder of this dump whose files name most of its nodes."""
        assert self.graph_dir is not None
        if self._graph_layout is None:
            try:
                self._graph_layout = DumpLayout.open(self.graph_dir)
            except DumpError as err:
                problems.append(f"--graph {show_name(self.graph_dir)}: {err}")
                self.graph_dir = None
                return {}
        source = self._graph_layout
        src_rank = source.ranks.get(rank) or source.ranks[source.rank_ids[0]]
        loaded: dict[str, Graph] = {}
        for gid, files in sorted(src_rank.graph_files.items()):
            if files.pb is None:
                continue
            try:
                graph = load_graph_file(files.pb, ir_path=files.ir)
            except (GraphFileError, GraphTooLargeError) as err:
                problems.append(str(err))
                continue
            loaded.setdefault(graph.name, graph)
            self._graph_file_ids[(rank, graph.name)] = gid
        if not loaded:
            problems.append(
                f"--graph {show_name(self.graph_dir)} has no readable graph file for rank "
                f"{src_rank.rank_id}; the graph is built from the operator names instead."
            )
            return {}
        # each graph folder of this dump goes to the graph naming most of its files
        for folder in sorted(layout.dumped_iterations):
            op_names = {
                f.op_name
                for it in layout.dumped_iterations[folder]
                for f in layout.tensor_files(folder, it)
            }
            best, score = None, 0
            for graph in loaded.values():
                known = {encode_dump_name(n.name) for n in graph} | {n.short_name for n in graph}
                hits = len(op_names & known)
                if hits > score:
                    best, score = graph, hits
            if best is not None and (rank, best.name) not in self._folder_ids:
                self._folder_ids[(rank, best.name)] = folder
        if not any(k[0] == rank for k in self._folder_ids):
            problems.append(
                f"No operator of rank_{rank}'s files is in the graphs of --graph "
                f"{show_name(self.graph_dir)}; the graph is built from the operator names instead."
            )
            return {}
        return loaded

    # ------------------------------------------------------------------ overflow
    def overflow_nodes(self, rank: int, graph: str, iteration: int) -> set[str]:
        """Names of the graph's nodes that Ascend recorded as overflowing at `iteration`
        (spec §5.2: `Opdebug.Node_OpDebug.*` records tied to operators by task and stream
        id); records that name no operator are sentences in `problems`."""
        index = self.index(rank, graph)
        gid = index.graph_id
        key = (rank, gid, iteration)
        with self._lock:
            found = self._overflow.get(key)
            if found is None:
                found = self._overflow[key] = self._read_overflow(rank, gid, iteration)
        if not found.op_names:
            return set()
        out: set[str] = set()
        for node in index.graph:
            if node.kind is NodeKind.CONSTANT:
                continue
            if (
                node.dump_name in found.op_names
                or encode_dump_name(node.name) in found.op_names
                or node.short_name in found.op_names
            ):
                out.add(node.name)
        return out

    def _read_overflow(self, rank: int, gid: int, iteration: int) -> OverflowMap:
        layout = self.rank_layout(rank)
        listing = layout.listing(gid, iteration)
        records: list[Path] = list(listing.overflow_files) if listing else []
        ops: list[tuple[str, str, str]] = [
            (f.op_name, f.task_id, f.stream_id) for f in (listing.tensor_files if listing else ())
        ]
        folders = (
            layout.iteration_folders(gid, iteration)
            if isinstance(layout, AsyncRankLayout)
            else [p for p in [layout.iteration_dir(gid, iteration)] if p is not None]
        )
        scratch: list[str] = []
        for folder in folders:  # unconverted .bin files carry the ids in their names too
            for e in layout_scan(self.root, folder, scratch):
                pair = tensor_name_pair(e)
                if pair is not None:
                    ops.append(pair)
        if not isinstance(layout, AsyncRankLayout):
            # spec §5.2: rank_{r}/debug_files/{iteration}/ first, then the iteration folder
            debug = layout.path / "debug_files" / str(iteration)
            records.extend(debug / n for n in layout_scan(self.root, debug, scratch))
        where = f"rank_{rank} iteration {iteration}"
        found = tie_overflows(records, ops, where)
        with self._lock:
            for p in found.problems:
                self._graph_problems.setdefault(rank, []).append(p)
        return found

    # ------------------------------------------------------------------ problems
    @property
    def problems(self) -> list[str]:
        """Every problem found so far: discovery, then graphs and indexes of loaded ranks.
        Listing iteration folders (lazily) can add more later."""
        out = list(self.layout.problems)
        with self._lock:
            for rank in sorted(self._graph_problems):
                out.extend(self._graph_problems[rank])
            for key in sorted(self._indexes):
                out.extend(self._indexes[key].problems)
        return list(dict.fromkeys(out))  # each once, first occurrence kept

    def new_problems(self) -> list[str]:
        """Problems not returned by an earlier call (so each is shown once)."""
        with self._lock:
            fresh = [p for p in self.problems if p not in self._reported]
            self._reported.update(fresh)
        return fresh

    def mark_reported(self, messages: list[str]) -> None:
        """Count `messages` as shown: `new_problems` will not return them (the checker's
        report repeats the discovery sentences about watched data it could not read)."""
        with self._lock:
            self._reported.update(messages)

    def _relative(self, message: str) -> str:
        """Messages name files relative to the dump root, like the layout's."""
        prefix = str(self.root) + os.sep
        return message.replace(prefix, "")


def layout_scan(root: Path, folder: Path, problems: list[str]) -> list[str]:
    """Names of the regular files of `folder` (nothing when it is absent or unreadable;
    what the listing refuses is never opened)."""
    if not folder.is_dir():
        return []
    entries = Scanner(str(root)).scan(str(folder), problems)
    return [e.name for e in entries or [] if e.is_file and e.refused is None]
