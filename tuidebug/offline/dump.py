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

from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.graph_pb import GraphFileError, GraphTooLargeError
from tuidebug.core.graph_run import GraphRun
from tuidebug.offline.dump_error import DumpError
from tuidebug.offline.dump_names import kernel_dump_names
from tuidebug.offline.graph_files import load_graph_file
from tuidebug.offline.layout import DumpLayout, RankLayout
from tuidebug.offline.tensor_index import TensorIndex
from tuidebug.offline.tensor_store import (
    TensorFileError,
    TensorRefusedError,
    TensorTooLargeError,
    load_npy,
)

if TYPE_CHECKING:
    from tuidebug.offline.filenames import TensorFile

__all__ = ["DumpError", "OfflineDump", "TensorFileError", "TensorTooLargeError"]


class OfflineDump:
    """A MindSpore dump folder opened for reading.

    `mem_limit` (bytes, None = no limit) is the checker's per-tensor memory limit: a tensor
    larger than it is not read and its watchpoints report error code 8 (MindInsight's
    `mem_limit` semantics, spec §3.6). Viewing a tensor (`value`) memory-maps it and is not
    limited.
    """

    def __init__(self, root: str | os.PathLike[str], mem_limit: int | None = None) -> None:
        if mem_limit is not None and mem_limit <= 0:
            raise ValueError("The memory limit must be a positive number of bytes.")
        self.layout = DumpLayout.open(root)  # DumpError when nothing is usable
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
                    dump_names=self._dump_names(rank, graph),
                )
                self._indexes[key] = found
            return found

    def _dump_names(self, rank: int, graph: str) -> dict[str, str]:
        """2.4+ dump names of the graph's kernels (spec §5.2a: numbered across the rank's
        graphs in graph-id order), computed once per rank."""
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
        runs = self.rank_layout(rank).graph_runs(names)
        return [
            GraphRun(r.iteration, r.graph_name, r.has_data, from_history=r.from_history)
            for r in runs
        ]

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
    ) -> np.ndarray | None:
        """A tensor's value (a read-only memory map for dumped files), or None when it has no
        value at that iteration. Constants with a value in the graph file return it directly,
        whatever the iteration; other constants come from the `constants/` folder.
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
        if tensor_file is None:
            refused = index.refused(found.name, slot, iteration, is_output)
            if refused is not None:
                # dumped but not readable: "no value" would read as "not dumped"
                raise TensorRefusedError(refused[0].path, refused[1])
            return None
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
