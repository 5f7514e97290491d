"""`ForeignDump`: an `OfflineDump` backed by a `DumpSource` (msprobe, tfdbg…), and
`open_dump`, the one place that decides which kind of dump a folder is.

`ForeignDump` overrides the dump model's public methods (those the session, the checker,
the API and `exec` call) with answers from the source; `ForeignIndex` does the same for a
graph's `TensorIndex`. So everything above the dump model works unchanged: a foreign
iteration's tensors are, to the checker, value files (checked on their values) or, when
only statistics were dumped, statistic rows (decided with MindSpore's math by
`check.statistic.decide`, refused per watchpoint with the source's sentence).

Memory: the steps read are kept in a small most-recently-used cache (`KEPT_STEPS`: the step
in view, the one before it for the change conditions, one more being moved to), so a run
of many steps costs one step's records, not the run's.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tuidebug.core.graph import Graph, Node, NodeKind, StepInputs
from tuidebug.core.graph_run import GraphRun
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files.msprobe import find_msprobe_root
from tuidebug.offline.files.names import TensorFile
from tuidebug.offline.files.npy import load_npy
from tuidebug.offline.files.pt import load_pt
from tuidebug.offline.files.statistic_csv import StatisticRow
from tuidebug.offline.files.tfdbg_values import is_value_ref, read_value_ref
from tuidebug.offline.foreign.source import DumpSource, ForeignStep, ForeignTensor
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.layout.sync_rank import RankLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

__all__ = ["KEPT_STEPS", "ForeignDump", "ForeignIndex", "open_dump", "open_source"]

# steps kept read (module docstring)
KEPT_STEPS = 3
# A `.pt` viewed (not checked) is read into memory: at most this much, unless the dump's
# memory limit is lower (an `.npy` is memory-mapped and needs no limit).
VIEW_MAX_BYTES = 8 << 30

_Key = tuple[int, str, int]

# statistic.csv's headers for the API's rows (`DumpAnalyzer.select_tensor_statistics`)
_HEADERS = {
    "max": "Max Value",
    "min": "Min Value",
    "avg": "Avg Value",
    "count": "Count",
    "nan_count": "NaN Count",
    "neg_inf_count": "Negative Inf Count",
    "pos_inf_count": "Positive Inf Count",
    "l2norm": "L2Norm Value",
}


@dataclass(frozen=True, slots=True)
class RecordedFile(TensorFile):
    """A value that is no file of its own (a tfdbg record's tensor proto) with the dtype
    and shape its tool recorded: the listing's dtype and size (`lt`), as a `.npy` file's
    header gives them, without reading the value."""

    recorded_dtype: str = ""
    recorded_shape: tuple[int, ...] | None = None

    def recorded_fit(self) -> tuple[np.dtype, tuple[int, ...]] | None:
        if self.recorded_shape is None or not self.recorded_dtype:
            return None
        try:
            return np.dtype(self.recorded_dtype), self.recorded_shape
        except TypeError:  # a name numpy has no dtype for (bfloat16): no size
            return None


def _file(t: ForeignTensor) -> TensorFile | None:
    if t.path is None:
        return None
    folder, name = os.path.split(t.path)
    if is_value_ref(t.path):
        return RecordedFile(
            folder, name, "", t.node, "", "", 0, "output", t.slot, "", None, t.dtype, t.shape
        )
    return TensorFile(folder, name, "", t.node, "", "", 0, "output", t.slot, "", None)


def _row(t: ForeignTensor) -> StatisticRow:
    raw = {
        "Op Name": t.name,
        "IO": "output",
        "Slot": str(t.slot),
        "Data Type": t.dtype,
        "Shape": "" if t.shape is None else str(tuple(t.shape)),
    }
    for key, header in _HEADERS.items():
        value = t.stats.get(key)
        if value is not None:
            raw[header] = str(value)
    return StatisticRow(
        "", t.name, "", "", None, "output", t.slot, None, t.dtype, t.shape, dict(t.stats), raw
    )


def read_value(path: str, root: Path, max_bytes: int | None, *, mmap: bool = True) -> np.ndarray:
    """A foreign tensor's value file by its extension (`.pt`: torch.save, read without
    torch; anything else: `.npy`); one sentence naming the file (`TensorFileError`) when
    it cannot be read, `TensorTooLargeError` past `max_bytes`."""
    if path.endswith(".pt"):
        return load_pt(path, root=root, max_bytes=max_bytes)
    if is_value_ref(path):  # a tfdbg record's own tensor proto
        return read_value_ref(path, max_bytes)
    return load_npy(path, root=root, mmap=mmap, max_bytes=max_bytes)


class _Rows(Mapping[tuple[str, str, int], StatisticRow]):
    """A step's tensors as statistic rows keyed by (node, "output", slot), each row made
    when asked for: listing a step of 10⁶ tensors builds no row it does not show."""

    def __init__(self, step: ForeignStep, *, without_values: bool = False) -> None:
        self._tensors = step.tensors
        # only the tensors with no value file (a statistic-only tensor): those with one
        # are listed and checked by their file, not twice
        self._skip = without_values

    def __getitem__(self, key: tuple[str, str, int]) -> StatisticRow:
        node, io, slot = key
        t = self._tensors.get((node, slot)) if io == "output" else None
        if t is None or (self._skip and t.path is not None):
            raise KeyError(key)
        return _row(t)

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        if not self._skip:
            return ((node, "output", slot) for node, slot in self._tensors)
        return ((n, "output", s) for (n, s), t in self._tensors.items() if t.path is None)

    def __len__(self) -> int:
        if not self._skip:
            return len(self._tensors)
        return sum(1 for t in self._tensors.values() if t.path is None)


class ForeignIndex(TensorIndex):
    """A `TensorIndex` over one graph of a foreign dump: the same questions, answered from
    the source's steps (through the dump's step cache). Nothing is contradicted or refused
    per tensor here: what a source could not read is its step's `blockers`."""

    def __init__(self, dump: ForeignDump, rank: int, graph: Graph) -> None:  # no super():
        # the base class indexes MindSpore files, which a foreign dump has none of
        self._dump = dump
        self._rank_id = rank
        self.graph = graph
        self.graph_id = 0
        self.problems: list[str] = []
        self.unmatched: list[TensorFile] = []
        self._order = {name: i for i, name in enumerate(graph.nodes)}

    def __repr__(self) -> str:
        return f"ForeignIndex(rank {self._rank_id}, {self.graph.name})"

    def _step(self, iteration: int) -> ForeignStep:
        return self._dump.step(self._rank_id, self.graph.name, iteration)

    @property
    def iterations(self) -> list[int]:
        return self._dump.source.iterations(self._rank_id)

    def node(self, node_name: str) -> Node | None:
        return self.graph.get(node_name)

    def _node(self, node_name: str) -> Node | None:
        return self.graph.get(node_name)

    def unchecked_files(self, iteration: int) -> Mapping[tuple[str, str, int], TensorFile]:
        return self.files_for(iteration)

    def files_for(self, iteration: int) -> dict[tuple[str, str, int], TensorFile]:
        out: dict[tuple[str, str, int], TensorFile] = {}
        for (node, slot), t in self._step(iteration).tensors.items():
            f = _file(t)
            if f is not None:
                out[(node, "output", slot)] = f
        return out

    def lookup(
        self,
        node_name: str,
        slot: int,
        iteration: int | None,
        is_output: bool = True,
        *,
        checked: bool = True,
    ) -> TensorFile | None:
        node = self.graph.get(node_name)
        if node is None or iteration is None or not is_output:
            return None
        t = self._step(iteration).tensors.get((node.name, slot))
        return None if t is None else _file(t)

    def trips(
        self, node_name: str, slot: int, iteration: int | None, is_output: bool = True
    ) -> list[TensorFile]:
        found = self.lookup(node_name, slot, iteration, is_output)
        return [found] if found is not None else []

    def verify(self, *args: object, **kwargs: object) -> bool:
        return True  # the source's own record says what the file holds

    def refused_any(self) -> bool:
        return False

    def refused(self, *args: object, **kwargs: object) -> None:
        return None

    def contradicted(self, *args: object, **kwargs: object) -> None:
        return None

    def contradicted_row(self, *args: object, **kwargs: object) -> None:
        return None

    def blockers(self, iteration: int) -> list[str]:
        return list(self._step(iteration).blockers)

    def graph_blockers(self) -> list[str]:
        return []

    def iterations_with_data(self, node_name: str) -> list[int]:
        node = self.graph.get(node_name)
        if node is None:
            return []
        # every step of the rank: reading each step's records to tell would cost the run
        return list(self.iterations)

    def execution_position(self, node_name: str) -> int:
        node = self.graph.get(node_name)
        if node is None:
            return len(self._order)
        return self._order.get(node.name, len(self._order))

    @property
    def has_history(self) -> bool:
        return True  # the steps are the runs, in order

    def previous_iteration(self, iteration: int) -> int | None:
        earlier = [i for i in self.iterations if i < iteration]
        return earlier[-1] if earlier else None

    def statistic_only(self, iteration: int) -> bool:
        return not self.files_for(iteration)

    def statistic_rows(self, iteration: int) -> Mapping[tuple[str, str, int], StatisticRow]:
        return _Rows(self._step(iteration), without_values=True)

    def statistic_row(
        self, node_name: str, slot: int, iteration: int, is_output: bool = True
    ) -> StatisticRow | None:
        node = self.graph.get(node_name)
        if node is None or not is_output:
            return None
        t = self._step(iteration).tensors.get((node.name, slot))
        return None if t is None else _row(t)

    def statistics_for(self, iteration: int) -> dict[tuple[str, str, int], StatisticRow]:
        return dict(_Rows(self._step(iteration)))


class ForeignDump(OfflineDump):
    """A foreign dump (`DumpSource`) as the dump model (module docstring)."""

    def __init__(self, source: DumpSource, mem_limit: int | None = None) -> None:  # no super():
        # the base class discovers a MindSpore layout, which this folder is not
        if mem_limit is not None and mem_limit <= 0:
            raise ValueError("The memory limit must be a positive number of bytes.")
        if not source.ranks():
            raise DumpError(f"{source.root} holds no {source.kind} data that can be read.")
        self.source = source
        self.statistics_words = source.statistics_words
        self.parameters_after_update = source.parameters_after_update
        self.root = source.root
        self.given_root = str(source.root)
        self.graph_dir = None
        self.mem_limit = mem_limit
        self._lock = threading.RLock()
        self._graphs: dict[int, dict[str, Graph]] = {}
        self._indexes: dict[tuple[int, str], TensorIndex] = {}
        self._steps: OrderedDict[_Key, ForeignStep] = OrderedDict()
        self._step_of_rank: dict[_Key, int] = {}
        self._graph_problems: dict[int, list[str]] = {}
        self._reported: set[str] = set()

    def __repr__(self) -> str:
        return f"ForeignDump({self.source.kind}, {str(self.root)!r}, ranks={self.ranks})"

    @property
    def kind(self) -> str:
        return self.source.kind

    @property
    def notes(self) -> list[str]:
        """The source's sentences that say how it was read, not what it left unread."""
        return list(self.source.notes)

    # ------------------------------------------------------------------ settings
    @property
    def ranks(self) -> list[int]:
        return self.source.ranks()

    @property
    def backend(self) -> str:
        return self.source.backend

    @property
    def ms_version(self) -> str:
        return self.source.version

    @property
    def net_name(self) -> str:
        return self.source.net_name

    def rank_layout(self, rank: int) -> RankLayout:
        raise KeyError(f"A {self.source.kind} dump has no MindSpore rank folders.")

    def refresh(self) -> bool:
        """Look again for steps that appeared (the TUI's `r`); True when some did."""
        with self._lock:
            changed = self.source.refresh()
            if changed:  # a step asked for before it was written was kept empty
                self._steps.clear()
            return changed

    def source_text(self, path: str) -> list[str] | None:
        """The dump's own copy of a source file (`DumpSource.source_text`), or None."""
        with self._lock:
            return self.source.source_text(path)

    def tensor_alias(self, rank: int, name: str) -> tuple[str, str, int] | None:
        """(graph, node, slot) of the tool's own name of a tensor on `rank`, or None."""
        with self._lock:
            self.graphs(rank)
            found = self.source.aliases(rank).get(name)
        if found is None:
            return None
        graph = next(iter(self.graphs(rank)), "")
        return graph, found[0], found[1]

    # ------------------------------------------------------------------ graphs
    def graphs(self, rank: int) -> dict[str, Graph]:
        with self._lock:
            if rank not in self._graphs:
                if rank not in self.source.ranks():
                    ranks = ", ".join(map(str, self.ranks))
                    raise KeyError(f"Rank {rank} is not in the dump (ranks: {ranks}).")
                self._graphs[rank] = self.source.graphs(rank)
            return self._graphs[rank]

    def graph_order(self, rank: int, name: str) -> int:
        return list(self.graphs(rank)).index(name) if name in self.graphs(rank) else 1 << 30

    def index(self, rank: int, graph: str) -> TensorIndex:
        key = (rank, graph)
        found = self._indexes.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._indexes.get(key)
            if found is None:
                found = self._indexes[key] = ForeignIndex(self, rank, self.graph(rank, graph))
            return found

    def _dump_names(self, rank: int, graph: str) -> dict[str, str]:
        return {}

    # ------------------------------------------------------------------ steps
    def step(self, rank: int, graph: str, iteration: int) -> ForeignStep:
        """One iteration's tensors, read on first use and kept among the last `KEPT_STEPS`."""
        key = (rank, graph, iteration)
        with self._lock:
            found = self._steps.get(key)
            if found is not None:
                self._steps.move_to_end(key)
                return found
            if iteration not in self.source.iterations(rank):
                found = ForeignStep()
            else:
                found = self.source.read_step(rank, graph, iteration)
            self._steps[key] = found
            while len(self._steps) > KEPT_STEPS:
                self._steps.popitem(last=False)
            return found

    def step_inputs(self, rank: int, graph: str, iteration: int) -> dict[str, StepInputs]:
        """The step's own data edges (`DumpSource.step_inputs`), made on first use and kept
        with the step's tensors (so among the last `KEPT_STEPS` steps, like them)."""
        step = self.step(rank, graph, iteration)
        found = step.inputs
        if found is None:
            if iteration not in self.source.iterations(rank):
                found = {}
            else:
                with self._lock:  # the source's one-step reading cache is not shared
                    found = self.source.step_inputs(rank, graph, iteration)
            step.inputs = found
        return found

    def iterations(self, rank: int | None = None, graph: str | None = None) -> list[int]:
        if rank is not None:
            return self.source.iterations(rank)
        return sorted({i for r in self.ranks for i in self.source.iterations(r)})

    def step_count(self, rank: int | None = None) -> int:
        its = self.iterations(rank)
        return its[-1] + 1 if its else 0

    def graph_runs(self, rank: int) -> list[GraphRun]:
        with self._lock:
            given = self.source.graph_runs(rank)
        if given is not None:  # the tool's own execution list (tfdbg's calls)
            return given
        names = list(self.graphs(rank))
        return [
            GraphRun(it, name, True, from_history=False)
            for it in self.source.iterations(rank)
            for name in names
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
        return self.index(rank, graph).lookup(node, slot, iteration, is_output)

    def foreign_tensor(
        self, rank: int, graph: str, node: str, slot: int, iteration: int
    ) -> ForeignTensor | None:
        """The source's record of one tensor at an iteration, or None."""
        found = self.graph(rank, graph).get(node)
        if found is None:
            return None
        return self.step(rank, graph, iteration).tensors.get((found.name, slot))

    def data_node_name(self, rank: int, graph: str, node: str) -> str:
        found = self.graph(rank, graph).get(node)
        return "" if found is None or found.kind is NodeKind.CONSTANT else found.name

    def verify_read(self, *args: object, **kwargs: object) -> bool:
        return True

    def refused_reason(self, *args: object, **kwargs: object) -> str | None:
        return None

    def contradicted(self, *args: object, **kwargs: object) -> None:
        return None

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
        if iteration is None or not is_output or (trip is not None and trip != 1):
            return None
        t = self.foreign_tensor(rank, graph, node, slot, iteration)
        if t is None or t.path is None:
            return None
        limit = VIEW_MAX_BYTES if self.mem_limit is None else min(self.mem_limit, VIEW_MAX_BYTES)
        return read_value(t.path, self.root, limit)

    def statistics(self, rank: int, iteration: int) -> dict[str, list[dict[str, str]]]:
        out: dict[str, list[dict[str, str]]] = {}
        for name in self.graphs(rank):
            for row in self.index(rank, name).statistics_for(iteration).values():
                out.setdefault(row.key, []).append(dict(row.raw))
        return out

    def overflow_nodes(self, rank: int, graph: str, iteration: int) -> set[str]:
        return set()  # no Ascend overflow records: TensorOverflow reads the statistics

    # ------------------------------------------------------------------ problems
    @property
    def problems(self) -> list[str]:
        out = list(self.source.problems)
        with self._lock:
            for step in self._steps.values():
                out.extend(step.blockers)
        return list(dict.fromkeys(out))


def open_source(root: str | os.PathLike[str]) -> DumpSource | None:
    """The foreign dump at `root` when it is one (msprobe, tfdbg, …), else None."""
    from tuidebug.offline.foreign.tfdbg import tfdbg_source  # TensorFlow Debugger V2

    tfdbg = tfdbg_source(root)
    if tfdbg is not None:
        return tfdbg
    found = find_msprobe_root(root)
    if found is not None:
        from tuidebug.offline.foreign.msprobe import MsprobeSource

        return MsprobeSource(found)
    return None


def open_dump(
    root: str | os.PathLike[str],
    mem_limit: int | None = None,
    graph_dir: str | os.PathLike[str] | None = None,
) -> OfflineDump:
    """The dump at `root`, its layout detected: a foreign dump (`open_source`) or a
    MindSpore dump folder. `DumpError` (one sentence) when it is neither."""
    source = open_source(root)
    if source is None:
        return OfflineDump(root, mem_limit=mem_limit, graph_dir=graph_dir)
    if graph_dir is not None:
        raise DumpError(
            f"--graph reads MindSpore graphs; {source.root} was written by {source.kind}, "
            "whose own records make its graph."
        )
    return ForeignDump(source, mem_limit=mem_limit)
