"""Dump discovery (spec §5.1, §5.5): ranks, settings, graph files, dumped iterations,
execution order, graph history, step count, and the cached listing of tensor files.

This module reads one rank folder (`RankLayout`); `dump_layout.DumpLayout` finds the ranks
(or an Ascend asynchronous layout, `async_layout`) under the dump root. It finds the net,
graph and iteration folders and the execution-order
files, and caches each listing; the rest is shared with four modules: `dump_scan` lists
folders (and refuses what must not be followed), `dump_metadata` reads `.dump_metadata/`,
`graph_history` reads the history files and applies MindInsight's consistency rule, and
`iteration_listing` lists one iteration folder.

Everything a user's dump can get wrong (garbage files, names that are not UTF-8, unreadable
folders, symbolic links leaving the dump, missing or inconsistent files) becomes one sentence
in a `problems` list and the rest of the dump stays usable; `DumpError` is raised only when
nothing is usable. Tensor files are never opened here: an iteration folder is listed once,
with `os.scandir`, and each name is parsed.

Only regular files and folders are used. A FIFO, a socket or a device in a listing is never
opened (opening a FIFO blocks until a writer comes); it is refused with its true reason, as
are dangling symbolic links, link loops and links leaving the dump. The few files read here
(`mapping.csv`, the `.dump_metadata` JSON, the execution-order CSVs, `statistic.csv`) are
opened through `regular_file`, which never blocks and checks the type on the open file.

What could not be read is kept, not only reported: `IterationListing.refused` (refused
entries whose name is a tensor's) and `RankLayout.blockers` (an unreadable folder, a refused
`mapping.csv`, a refused entry whose name says nothing) let the checker tell a complete
check from one that skipped watched data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tuidebug.core.graph_run import GraphRun
from tuidebug.offline.files.execution_order import OrderFileError, read_execution_order
from tuidebug.offline.files.listing import MAX_NAMED_PER_FOLDER, Entry, Scanner
from tuidebug.offline.files.metadata import DumpSettings, read_settings
from tuidebug.offline.files.names import TensorFile
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.layout.graph_history import load_history

if TYPE_CHECKING:
    # read by `statistics`, when a check or a listing asks, and an iteration folder listed
    # when its tensors are asked for (`listing`): the start, which checks that the folder
    # is a dump, loads neither (issue 28's cold start)
    from tuidebug.offline.files.statistic_csv import StatisticTable
    from tuidebug.offline.layout.iteration_folder import IterationListing

__all__ = [
    "DumpError",
    "GraphFiles",
    "RankLayout",
]

_RANK_DIR = re.compile(r"rank_(\d+)")
_GRAPH_FILE = re.compile(r"ms_output_trace_code_graph_(\d+)\.(pb|ir)")
_EXEC_ORDER_FILE = re.compile(r"ms_execution_order_graph_(\d+)\.csv")
_HISTORY_FILE = re.compile(r"ms_global_execution_order_graph_(\d+)\.csv")
METADATA_DIR = ".dump_metadata"
GRAPHS_DIR = "graphs"
EXECUTION_ORDER_DIR = "execution_order"
CONSTANTS_DIR = "constants"
# Folders of a rank folder that are never the net folder.
_RANK_SYSTEM_DIRS = frozenset({METADATA_DIR, GRAPHS_DIR, EXECUTION_ORDER_DIR, "debug_files"})


@dataclass(frozen=True)
class GraphFiles:
    graph_id: int
    pb: Path | None = None
    ir: Path | None = None


class RankLayout:
    """One `rank_<N>` folder: its graphs, dumped iterations, execution order and history.

    Iteration folders are listed on first use (`tensor_files`) and cached; problems found
    while listing are appended to `problems` at that time.
    """

    def __init__(
        self,
        rank_id: int,
        path: Path,
        scanner: Scanner,
        net_name_hint: str | None = None,
    ) -> None:
        self.rank_id = rank_id
        self.path = path
        self._scanner = scanner
        self.problems: list[str] = []
        self.settings = DumpSettings()
        self.net_name: str | None = None
        self.net_dir: Path | None = None
        self.graph_files: dict[int, GraphFiles] = {}
        # graph id → sorted dumped iterations ({net}/{graph_id}/{iteration} folders)
        self.dumped_iterations: dict[int, list[int]] = {}
        # graph id → `constants/` folder, when present
        self.constants_dirs: dict[int, Path] = {}
        self.execution_order_files: dict[int, Path] = {}
        self.history_files: dict[int, Path] = {}
        # graph id → iterations in which the root graph ran, as the history files say; the
        # checker's "previous iteration" comes from here, as in MindSpore's offline engine
        self.history_raw: dict[int, list[int]] = {}
        # the same after MindInsight's consistency rule (§5.5 step 5): empty when discarded;
        # step count and graph runs come from here, as in MindInsight's UI
        self.history: dict[int, list[int]] = {}
        self.history_discarded = False
        self._exec_order: dict[int, list[str]] = {}
        self._listings: dict[tuple[int, int | None], IterationListing] = {}
        self._statistics: dict[tuple[int, int], StatisticTable | None] = {}
        # graph id (None: every graph of the rank) → sentences about tensor data that could
        # not be read there and cannot be tied to an iteration: an unreadable net or graph
        # folder, a refused iteration folder (see `blockers`)
        self._graph_blockers: dict[int | None, list[str]] = {}
        self._refused_history: set[int] = set()  # graph ids whose history file was refused
        self._discover(net_name_hint)

    def __repr__(self) -> str:
        return f"RankLayout(rank_{self.rank_id}, graphs={sorted(self.graph_files)})"

    # ------------------------------------------------------------------ discovery
    def _show(self, path: str | os.PathLike[str]) -> str:
        return self._scanner.show(path)

    def _discover(self, net_name_hint: str | None) -> None:
        entries = self._scanner.scan(str(self.path), self.problems)
        if entries is None:
            return
        children = {e.name: e for e in entries}
        meta = children.get(METADATA_DIR)
        if meta is not None and meta.is_dir:
            self.settings = read_settings(Path(meta.path), self._scanner, self.problems)
        self._discover_graphs(children.get(GRAPHS_DIR))
        self._discover_execution_order(children.get(EXECUTION_ORDER_DIR))
        self._discover_net(children, self.settings.net_name or net_name_hint)
        self._load_history()

    def _discover_graphs(self, entry: Entry | None) -> None:
        where = self._show(self.path / GRAPHS_DIR)
        if entry is not None and entry.refused is not None:
            # the listing said why (a FIFO, a dangling link…); "missing" would be untrue
            self.problems.append(
                f"{where} is not a readable folder, so rank_{self.rank_id} has no graph to show."
            )
            return
        if entry is None or not entry.is_dir:
            self.problems.append(
                f"{where} is missing, so rank_{self.rank_id} has no graph to show "
                "(its tensor files are still listed)."
            )
            return
        found: dict[int, dict[str, Path]] = {}
        for e in self._scanner.scan(entry.path, self.problems) or []:
            m = _GRAPH_FILE.fullmatch(e.name)
            if m and e.is_file:
                found.setdefault(int(m.group(1)), {})[m.group(2)] = Path(e.path)
        for gid in sorted(found):
            self.graph_files[gid] = GraphFiles(gid, found[gid].get("pb"), found[gid].get("ir"))
        if not any(g.pb for g in self.graph_files.values()):
            self.problems.append(
                f"{where} holds no ms_output_trace_code_graph_<id>.pb file, so rank_{self.rank_id} "
                "has no graph to show."
            )

    def _discover_execution_order(self, entry: Entry | None) -> None:
        if entry is None or not entry.is_dir:
            return  # reported per graph when its history is looked for
        for e in self._scanner.scan(entry.path, self.problems) or []:
            if e.refused is not None:
                if m := _HISTORY_FILE.fullmatch(e.name):
                    self._refused_history.add(int(m.group(1)))
                continue
            if not e.is_file:
                continue
            if m := _EXEC_ORDER_FILE.fullmatch(e.name):
                self.execution_order_files[int(m.group(1))] = Path(e.path)
            elif m := _HISTORY_FILE.fullmatch(e.name):
                self.history_files[int(m.group(1))] = Path(e.path)

    def _net_candidates(
        self, children: dict[str, Entry]
    ) -> dict[str, tuple[list[Entry], list[str]]]:
        """Folders holding a graph-id folder, by name, with their listing and its problems
        (kept for the chosen one, so it is not listed again)."""
        out = {}
        for name, e in sorted(children.items()):
            if not e.is_dir or name in _RANK_SYSTEM_DIRS or name.startswith("."):
                continue
            problems: list[str] = []
            sub = self._scanner.scan(e.path, problems)
            if sub is None:
                # an unreadable folder may be the net folder: say why, and count its data
                # as unread rather than absent
                self.problems.extend(problems)
                self._graph_blockers.setdefault(None, []).extend(problems)
            elif any(s.is_dir and s.name.isdigit() for s in sub):
                out[name] = (sub, problems)
        return out

    def _discover_net(self, children: dict[str, Entry], hint: str | None) -> None:
        chosen: str | None = None
        listed: tuple[list[Entry], list[str]] | None = None
        if hint and hint in children and children[hint].is_dir:
            chosen = hint
        else:
            scanned = self._net_candidates(children)
            candidates = list(scanned)
            if hint and candidates:
                self.problems.append(
                    f"rank_{self.rank_id} has no folder for the net {hint!r} named in "
                    f".dump_metadata; using {candidates[0]!r} instead."
                )
            if len(candidates) > 1:
                self.problems.append(
                    f"rank_{self.rank_id} holds several net folders ({', '.join(candidates)}); "
                    f"only {candidates[0]!r} is read."
                )
            chosen = candidates[0] if candidates else None
            listed = scanned[chosen] if chosen is not None else None
        if chosen is None:
            self.problems.append(
                f"{self._show(self.path)} holds no <net_name>/<graph_id>/<iteration> folder, "
                "so it has no tensor data."
            )
            return
        self.net_name = chosen
        self.net_dir = Path(children[chosen].path)
        garbage: list[str] = []
        if listed is None:
            before = len(self.problems)
            entries = self._scanner.scan(str(self.net_dir), self.problems)
            if entries is None:
                self._graph_blockers.setdefault(None, []).extend(self.problems[before:])
        else:
            entries, problems = listed
            self.problems.extend(problems)
        for g in entries or []:
            if g.refused is not None:
                if _is_number_name(g.name):  # a graph folder whose data cannot be read
                    self._graph_blockers.setdefault(int(g.name), []).append(g.refused)
                continue  # the listing said why
            if not (g.is_dir and _is_number_name(g.name)):
                garbage.append(g.name)
                continue
            gid = int(g.name)
            iterations: list[int] = []
            inner: list[str] = []
            before = len(self.problems)
            listed_graph = self._scanner.scan(g.path, self.problems)
            if listed_graph is None:
                self._graph_blockers.setdefault(gid, []).extend(self.problems[before:])
            for it in listed_graph or []:
                if it.refused is not None:
                    # An iteration (or constants) folder that cannot be read: its number is
                    # known but not whether a check would have covered it, so any check of
                    # the graph counts it as unread (incomplete rather than silently clean).
                    if _is_number_name(it.name) or it.name == CONSTANTS_DIR:
                        self._graph_blockers.setdefault(gid, []).append(it.refused)
                    continue
                if it.is_dir and _is_number_name(it.name):
                    iterations.append(int(it.name))
                elif it.is_dir and it.name == CONSTANTS_DIR:
                    self.constants_dirs[gid] = Path(it.path)
                else:
                    inner.append(it.name)
            self._report_garbage(Path(g.path), inner, "is not an iteration folder")
            self.dumped_iterations[gid] = sorted(iterations)
        self._report_garbage(self.net_dir, garbage, "is not a graph-id folder")

    def _report_garbage(self, folder: Path, names: list[str], why: str) -> None:
        for name in sorted(names)[:MAX_NAMED_PER_FOLDER]:
            self.problems.append(f"{self._show(folder / name)} {why}; it was skipped.")
        if len(names) > MAX_NAMED_PER_FOLDER:
            self.problems.append(
                f"{self._show(folder)}: {len(names) - MAX_NAMED_PER_FOLDER} more entries that "
                f"are not expected there were skipped."
            )

    def _load_history(self) -> None:
        loaded = load_history(
            self.history_files,
            self.dumped_iterations,
            refused=self._refused_history,
            rank=f"rank_{self.rank_id}",
            order_dir=self.path / EXECUTION_ORDER_DIR,
            show=self._show,
            problems=self.problems,
        )
        self.history_raw = loaded.raw
        self.history = loaded.history
        self.history_discarded = loaded.discarded

    # ------------------------------------------------------------------ queries
    @property
    def graph_ids(self) -> list[int]:
        """Every graph id with a graph file or a dump folder."""
        return sorted(set(self.graph_files) | set(self.dumped_iterations))

    @property
    def iterations(self) -> list[int]:
        """Union of dumped iterations over this rank's graphs."""
        return sorted({i for its in self.dumped_iterations.values() for i in its})

    @property
    def step_count(self) -> int:
        """§5.5 step 6: max(history) + 1, else max(dumped iteration) + 1, else 0. A graph
        without a usable history file counts with its dumped iterations (MindInsight
        ignores such graphs), so every listed graph run is a step one can go to."""
        counted = [i for its, _ in self._run_iterations().values() for i in its]
        return max(counted) + 1 if counted else 0

    def _run_iterations(self) -> dict[int, tuple[list[int], bool]]:
        """Graph id → (iterations in which it ran, whether they come from its history file).
        Graphs without a usable history (no file, an empty one, or the rank's history
        discarded by the consistency rule) ran in their dumped iterations."""
        out: dict[int, tuple[list[int], bool]] = {}
        for gid in sorted(set(self.history) | set(self.dumped_iterations)):
            history = self.history.get(gid)
            if history:
                out[gid] = (history, True)
            elif self.dumped_iterations.get(gid):
                out[gid] = (self.dumped_iterations[gid], False)
        return out

    def has_history(self, graph_id: int) -> bool:
        """True when a readable history file exists for this root graph (even one that
        MindInsight's consistency rule discards for the UI). When False, the checker decides
        what change conditions do (MindSpore's error 16; spec §5.8)."""
        return graph_id in self.history_raw

    def previous_iteration(self, graph_id: int, iteration: int) -> int | None:
        """The previous iteration in which the root graph ran according to its history file
        (spec §5.8); None for its first run, for an iteration absent from the history, or
        without a history file."""
        history = self.history_raw.get(graph_id)
        if not history:
            return None
        try:
            at = history.index(iteration)
        except ValueError:
            return None
        return history[at - 1] if at > 0 else None

    def execution_order(self, graph_id: int) -> list[str]:
        """Kernel full names in execution order (empty, with a problem, when unreadable)."""
        if graph_id not in self._exec_order:
            names: list[str] = []
            path = self.execution_order_files.get(graph_id)
            if path is not None:
                try:
                    names = read_execution_order(path, self._show(path))
                except OrderFileError as err:
                    self.problems.append(str(err))
            self._exec_order[graph_id] = names
        return self._exec_order[graph_id]

    def iteration_dir(self, graph_id: int, iteration: int) -> Path | None:
        if self.net_dir is None or iteration not in self.dumped_iterations.get(graph_id, ()):
            return None
        return self.net_dir / str(graph_id) / str(iteration)

    def listing(self, graph_id: int, iteration: int | None) -> IterationListing | None:
        """The cached listing of an iteration folder (iteration None: the `constants/`
        folder), or None when the dump has no such folder."""
        key = (graph_id, iteration)
        if key not in self._listings:
            folder = (
                self.constants_dirs.get(graph_id)
                if iteration is None
                else self.iteration_dir(graph_id, iteration)
            )
            if folder is None:
                return None
            from tuidebug.offline.layout.iteration_folder import list_iteration_folder

            listing = list_iteration_folder(folder, self._scanner)
            self.problems.extend(listing.problems)
            self._listings[key] = listing
        return self._listings[key]

    def tensor_files(self, graph_id: int, iteration: int) -> list[TensorFile]:
        """Tensor files of one dumped iteration, by name only (nothing is opened)."""
        listing = self.listing(graph_id, iteration)
        return listing.tensor_files if listing else []

    def blockers(self, graph_id: int, iteration: int | None) -> list[str]:
        """Sentences about tensor data of the graph folder `graph_id` at `iteration` (None:
        its `constants/` folder) that exists but could not be read and cannot be tied to one
        tensor: the folder unreadable, a refused `mapping.csv` or unknown entry. Empty when
        everything there was readable. Lists the iteration folder if not done yet."""
        listing = self.listing(graph_id, iteration)
        return list(listing.blockers) if listing is not None else []

    def graph_blockers(self, graph_id: int) -> list[str]:
        """The same for the graph folder as a whole: the net or graph folder unreadable, an
        iteration (or constants) folder refused."""
        return [*self._graph_blockers.get(None, ()), *self._graph_blockers.get(graph_id, ())]

    def add_blocker(self, sentence: str) -> None:
        """Count `sentence` as unread data of every graph of the rank (`graph_blockers`):
        data the dump holds outside this folder that may be this rank's."""
        self._graph_blockers.setdefault(None, []).append(sentence)

    def refused_files(self, graph_id: int, iteration: int | None) -> list[tuple[TensorFile, str]]:
        """Entries of an iteration (None: constants) folder named as tensor files that were
        refused (a FIFO, a dangling link, a link loop or out of the dump), with the
        sentence saying why."""
        listing = self.listing(graph_id, iteration)
        return listing.refused if listing else []

    def constant_files(self, graph_id: int) -> list[TensorFile]:
        """Tensor files of the graph's `constants/` folder (2.x), if any."""
        listing = self.listing(graph_id, None)
        return listing.tensor_files if listing else []

    def statistics(self, graph_id: int, iteration: int) -> StatisticTable | None:
        """The iteration's statistic.csv, read on first use; None when absent or unreadable
        (the reason is added to `problems`)."""
        from tuidebug.offline.files.statistic_csv import StatisticCsvError, read_statistic_csv

        key = (graph_id, iteration)
        if key not in self._statistics:
            listing = self.listing(graph_id, iteration)
            table = None
            if listing is not None and listing.statistic_csv is not None:
                path = listing.statistic_csv
                lost: list[str] = []
                try:
                    table = read_statistic_csv(path, self._show(path))
                    lost = table.problems  # rows skipped: their tensors are unknown
                except StatisticCsvError as err:
                    lost = [str(err)]
                self.problems.extend(lost)
                if not listing.tensor_files:
                    # statistic-only: the CSV is the only record of the folder's tensors, so
                    # what of it was not read may hold any watched one (issue 27 §3)
                    listing.blockers.extend(lost)
            self._statistics[key] = table
        return self._statistics[key]

    def graph_runs(self, graph_names: Mapping[int, str] | None = None) -> list[GraphRun]:
        """Spec §5.7: one row per root graph and iteration of its history, sorted by
        iteration then graph id. A graph without a usable history file (the sub-graphs of a
        control-flow net, or every graph when the rank's history is discarded) is listed
        from its dumped iteration folders, with `from_history=False`; MindInsight would
        list nothing for it."""
        names = graph_names or {}
        # (iteration, graph id, run): the graph id orders a step's runs and is not shown
        keyed: list[tuple[int, int, GraphRun]] = []
        for gid, (iterations, from_history) in self._run_iterations().items():
            dumped = set(self.dumped_iterations.get(gid, ()))
            name = names.get(gid, f"kernel_graph_{gid}")
            keyed.extend(
                (i, gid, GraphRun(i, name, i in dumped, from_history=from_history))
                for i in iterations
            )
        keyed.sort(key=lambda k: (k[0], k[1]))
        return [run for _, _, run in keyed]


# ---------------------------------------------------------------------- helpers


def _is_number_name(name: str) -> bool:
    """`0`, `12`: a graph-id or iteration folder. Not `03` (MindSpore never writes it, and it
    would be read as iteration 3 a second time while paths are built as `3`)."""
    return name.isascii() and name.isdigit() and name == str(int(name))
