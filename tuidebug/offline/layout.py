"""Dump discovery (spec §5.1, §5.5): ranks, settings, graph files, dumped iterations,
execution order, graph history, step count, and the cached listing of tensor files.

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

import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuidebug.offline.dump_error import DumpError
from tuidebug.offline.execution_order import (
    OrderFileError,
    read_execution_order,
    read_graph_history,
)
from tuidebug.offline.filenames import (
    MAPPING_CSV,
    FileKind,
    TensorFile,
    classify_file_name,
    is_utf8_name,
    parse_mapping_csv,
    parse_tensor_file_name,
    show_name,
)
from tuidebug.offline.regular_file import (
    FileTooLargeError,
    NotRegularFileError,
    file_kind,
    read_regular,
)
from tuidebug.offline.statistic_csv import StatisticCsvError, StatisticTable, read_statistic_csv

__all__ = [
    "DumpError",
    "DumpLayout",
    "DumpSettings",
    "GraphFiles",
    "GraphRun",
    "IterationListing",
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
MAX_JSON_BYTES = 1 << 20
# A mapping.csv row is one short name and one file name (< 300 bytes): 64 MiB is > 200,000
# files with over-long names, far more than a real iteration folder holds.
MAX_MAPPING_BYTES = 64 << 20
# Garbage in one folder is reported name by name up to this many, then as a count.
_MAX_NAMED_PER_FOLDER = 20


@dataclass(frozen=True)
class DumpSettings:
    """What `.dump_metadata/` says about the dump (spec §5.1). Every field is None when the
    dump has no metadata (MindSpore 2.10 on CPU, 2.4+ on Ascend write none)."""

    net_name: str | None = None
    ms_version: str | None = None
    device_target: str | None = None
    # MindInsight's rule: sync if device_target is GPU or e2e_dump_settings.enable.
    is_sync: bool | None = None
    file_format: str | None = None
    saved_data: str | None = None
    input_output: int | None = None
    source: Path | None = None  # the .dump_metadata folder these settings came from


@dataclass(frozen=True)
class GraphFiles:
    graph_id: int
    pb: Path | None = None
    ir: Path | None = None


@dataclass(frozen=True)
class GraphRun:
    """One row of the graph-runs list (spec §5.7)."""

    count: int  # iteration + 1, the 1-based step MindInsight shows
    iteration: int
    graph_id: int
    graph_name: str
    has_data: bool
    # False: the graph has no usable history file (sub-graphs of a control-flow net have
    # none), so its runs are its dumped iteration folders and each has data
    from_history: bool = True


@dataclass
class IterationListing:
    """One listed iteration (or constants) folder."""

    path: Path
    tensor_files: list[TensorFile] = field(default_factory=list)
    statistic_csv: Path | None = None
    overflow_files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # refused entries whose name is a tensor file's (after mapping.csv), with the sentence
    # saying why: the tensor exists but cannot be read
    refused: list[tuple[TensorFile, str]] = field(default_factory=list)
    # sentences about data here that could not be read and cannot be tied to one tensor
    # (the folder itself, a refused mapping.csv, a refused entry with a name that says
    # nothing): any watched tensor of this folder may be among it
    blockers: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    path: str
    is_dir: bool
    is_file: bool
    # why the entry is not used (a FIFO, a dangling link…), as a sentence; None when usable
    refused: str | None = None


class _Scanner:
    """Lists folders inside the dump root, refusing what must not be followed, and words
    every refusal as a problem sentence."""

    def __init__(self, root: str) -> None:
        self.root = root  # already resolved (realpath)
        self._root_prefix = root.rstrip(os.sep) + os.sep

    def show(self, path: str | os.PathLike[str]) -> str:
        """A path as shown in messages: relative to the dump root when inside it."""
        text = os.fspath(path)
        if text.startswith(self._root_prefix):
            text = text[len(self._root_prefix) :]
        return show_name(text)

    def inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self._root_prefix)

    def scan(self, folder: str, problems: list[str]) -> list[_Entry] | None:
        """The entries of `folder`, or None (with a problem) when it cannot be listed."""
        try:
            iterator = os.scandir(folder)
        except FileNotFoundError:
            problems.append(f"{self.show(folder)} disappeared while the dump was being read.")
            return None
        except PermissionError:
            problems.append(f"cannot read the folder {self.show(folder)}: permission denied.")
            return None
        except OSError as err:
            problems.append(f"cannot read the folder {self.show(folder)}: {err.strerror or err}.")
            return None
        entries: list[_Entry] = []
        bad_names: list[str] = []
        refused = 0
        with iterator:
            for entry in iterator:
                name = entry.name
                if not is_utf8_name(name):
                    bad_names.append(show_name(name))
                    continue
                try:
                    found = self._entry(entry)
                except FileNotFoundError:
                    continue  # removed since the folder was listed (a dump being written)
                if found.refused is not None:
                    # named up to a bound per folder; every refused entry is still returned
                    refused += 1
                    if refused <= _MAX_NAMED_PER_FOLDER:
                        problems.append(found.refused)
                entries.append(found)
        if refused > _MAX_NAMED_PER_FOLDER:
            problems.append(
                f"{self.show(folder)}: {refused - _MAX_NAMED_PER_FOLDER} more entries that are "
                "not regular files or folders were skipped."
            )
        for shown in bad_names[:_MAX_NAMED_PER_FOLDER]:
            problems.append(
                f"{self.show(os.path.join(folder, shown))}: the name is not valid UTF-8, "
                "so the file was skipped."
            )
        if len(bad_names) > _MAX_NAMED_PER_FOLDER:
            problems.append(
                f"{self.show(folder)}: {len(bad_names) - _MAX_NAMED_PER_FOLDER} more names "
                "that are not valid UTF-8 were skipped."
            )
        return entries

    def _entry(self, entry: os.DirEntry[str]) -> _Entry:
        """One listed entry with its type. A symbolic link is resolved only when it stays
        inside the dump; what is neither a regular file nor a folder is refused with its
        true reason (the listing's own type first: no `stat` for ordinary entries)."""
        name, path = entry.name, entry.path
        shown = self.show(path)
        try:
            if not entry.is_symlink():
                if entry.is_dir(follow_symlinks=False):
                    return _Entry(name, path, True, False)
                if entry.is_file(follow_symlinks=False):
                    return _Entry(name, path, False, True)
                kind = file_kind(entry.stat(follow_symlinks=False).st_mode)  # lstat
                return _refused(name, path, f"{shown} is {kind}, not a regular file")
            real = os.path.realpath(path)
            if not self.inside(real):
                return _refused(
                    name,
                    path,
                    f"{shown} is a symbolic link to {show_name(real)}, outside the dump "
                    "folder, so it was not followed",
                    end=".",
                )
            try:
                mode = os.stat(path).st_mode  # the target, known to be inside the dump
            except FileNotFoundError:
                return _refused(
                    name,
                    path,
                    f"{shown} is a dangling symbolic link (its target {self.show(real)} does "
                    "not exist)",
                )
        except FileNotFoundError:
            raise
        except OSError as err:
            if err.errno == errno.ELOOP:
                return _refused(name, path, f"{shown} is a symbolic link loop")
            return _refused(name, path, f"cannot read {shown}: {_reason(err)}")
        if stat.S_ISDIR(mode):
            return _Entry(name, path, True, False)
        if stat.S_ISREG(mode):
            return _Entry(name, path, False, True)
        return _refused(
            name, path, f"{shown} is a symbolic link to {file_kind(mode)}, not a regular file"
        )


def _refused(name: str, path: str, sentence: str, end: str = "; it was skipped.") -> _Entry:
    return _Entry(name, path, False, False, sentence + end)


class RankLayout:
    """One `rank_<N>` folder: its graphs, dumped iterations, execution order and history.

    Iteration folders are listed on first use (`tensor_files`) and cached; problems found
    while listing are appended to `problems` at that time.
    """

    def __init__(
        self,
        rank_id: int,
        path: Path,
        scanner: _Scanner,
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
            self.settings = _read_settings(Path(meta.path), self._scanner, self.problems)
        self._discover_graphs(children.get(GRAPHS_DIR))
        self._discover_execution_order(children.get(EXECUTION_ORDER_DIR))
        self._discover_net(children, self.settings.net_name or net_name_hint)
        self._load_history()

    def _discover_graphs(self, entry: _Entry | None) -> None:
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

    def _discover_execution_order(self, entry: _Entry | None) -> None:
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
        self, children: dict[str, _Entry]
    ) -> dict[str, tuple[list[_Entry], list[str]]]:
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

    def _discover_net(self, children: dict[str, _Entry], hint: str | None) -> None:
        chosen: str | None = None
        listed: tuple[list[_Entry], list[str]] | None = None
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
        for name in sorted(names)[:_MAX_NAMED_PER_FOLDER]:
            self.problems.append(f"{self._show(folder / name)} {why}; it was skipped.")
        if len(names) > _MAX_NAMED_PER_FOLDER:
            self.problems.append(
                f"{self._show(folder)}: {len(names) - _MAX_NAMED_PER_FOLDER} more entries that "
                f"are not expected there were skipped."
            )

    def _load_history(self) -> None:
        """Read every history file, then apply MindInsight's consistency rule (§5.5 step 5):
        if a graph's dumped iterations are not a subset of its history, the history of the
        whole rank is discarded, except for one extra final iteration (dataset sink mode)."""
        raw: dict[int, list[int]] = {}
        for gid, path in sorted(self.history_files.items()):
            label = self._show(path)
            try:
                iterations, bad = read_graph_history(path, label)
            except OrderFileError as err:
                self.problems.append(str(err))
                continue
            if bad:
                self.problems.append(
                    f"{label}: skipped {bad} line{'s' if bad != 1 else ''} that "
                    f"{'are' if bad != 1 else 'is'} not an iteration number."
                )
            raw[gid] = sorted(set(iterations))
        missing = [
            g for g, dumped in sorted(self.dumped_iterations.items()) if dumped and g not in raw
        ]
        if len(missing) == 1:
            expected = (
                self.path
                / EXECUTION_ORDER_DIR
                / f"ms_global_execution_order_graph_{missing[0]}.csv"
            )
            state = "cannot be read" if missing[0] in self._refused_history else "is missing"
            self.problems.append(
                f"{self._show(expected)} {state}, so iterations of graph {missing[0]} have "
                "no previous run for change conditions."
            )
        elif missing:  # a control-flow net: one sentence, not one per sub-graph
            self.problems.append(
                f"{self._show(self.path / EXECUTION_ORDER_DIR)} has no "
                f"ms_global_execution_order_graph_<id>.csv for graphs {_ranges(missing)}, so "
                "their iterations have no previous run for change conditions."
            )
        for gid, dumped in sorted(self.dumped_iterations.items()):
            history = raw.get(gid)
            if not history or not dumped:
                continue
            extra = set(dumped) - set(history)
            if not extra:
                continue
            last = max(dumped)
            if extra == {last} and last - 1 in history:
                self.problems.append(
                    f"iteration {last} of graph {gid} on rank_{self.rank_id} is dumped but not "
                    "in the graph history; this is normal in dataset sink mode."
                )
                continue
            self.problems.append(
                f"{self._show(self.history_files[gid])} does not list the dumped iterations "
                f"{_ranges(sorted(extra))}, so the graph runs and step count of "
                f"rank_{self.rank_id} come from the dumped iterations instead."
            )
            self.history_discarded = True
            break
        else:
            self.history = raw
        self.history_raw = raw

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
            listing = self._list_folder(folder)
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
        key = (graph_id, iteration)
        if key not in self._statistics:
            listing = self.listing(graph_id, iteration)
            table = None
            if listing is not None and listing.statistic_csv is not None:
                path = listing.statistic_csv
                try:
                    table = read_statistic_csv(path, self._show(path))
                    self.problems.extend(table.problems)
                except StatisticCsvError as err:
                    self.problems.append(str(err))
            self._statistics[key] = table
        return self._statistics[key]

    def graph_runs(self, graph_names: Mapping[int, str] | None = None) -> list[GraphRun]:
        """Spec §5.7: one row per root graph and iteration of its history, sorted by count
        then graph id. A graph without a usable history file (the sub-graphs of a
        control-flow net, or every graph when the rank's history is discarded) is listed
        from its dumped iteration folders, with `from_history=False`; MindInsight would
        list nothing for it."""
        names = graph_names or {}
        runs: list[GraphRun] = []
        for gid, (iterations, from_history) in self._run_iterations().items():
            dumped = set(self.dumped_iterations.get(gid, ()))
            name = names.get(gid, f"kernel_graph_{gid}")
            runs.extend(
                GraphRun(i + 1, i, gid, name, i in dumped, from_history) for i in iterations
            )
        runs.sort(key=lambda r: (r.count, r.graph_id))
        return runs

    # ------------------------------------------------------------------ listing
    def _list_folder(self, folder: Path) -> IterationListing:
        listing = IterationListing(folder)
        problems = listing.problems
        entries = self._scanner.scan(str(folder), problems)
        if entries is None:
            listing.blockers.extend(problems)  # the folder's data exists but is unread
            return listing
        mapping: dict[str, str] = {}
        for e in entries:
            if e.name != MAPPING_CSV:
                continue
            if e.refused is not None:
                # the files it names by number cannot be tied to their tensors
                listing.blockers.append(e.refused)
            elif e.is_file:
                names = {x.name for x in entries}
                mapping = self._read_mapping(Path(e.path), names, problems, listing.blockers)
        directory = folder
        files = listing.tensor_files
        garbage: list[str] = []
        async_bins = 0
        for e in entries:
            name = e.name
            if e.refused is not None:
                self._refused_entry(listing, e, mapping)
                continue
            if not e.is_file:
                garbage.append(name)
                continue
            parsed = self._tensor_name(name, directory, mapping)
            if parsed is not None:
                # the name tells what the tensor is; the path stays the file on disk
                files.append(
                    parsed if parsed.path.name == name else _with_path(parsed, Path(e.path))
                )
                continue
            kind = classify_file_name(name)
            if kind is FileKind.STATISTIC:
                listing.statistic_csv = Path(e.path)
            elif kind is FileKind.OVERFLOW:
                listing.overflow_files.append(Path(e.path))
            elif kind is FileKind.ASYNC_BIN:
                async_bins += 1
            elif kind in (FileKind.MAPPING, FileKind.KERNEL_ARGS):
                pass
            elif name not in mapping:
                garbage.append(name)
        if async_bins:
            problems.append(
                f"{self._show(folder)} holds {async_bins} Ascend async dump file"
                f"{'s' if async_bins != 1 else ''} in bin format; tuidebug reads only .npy "
                "(convert them with CANN's msaccucmp.py first)."
            )
        for name in sorted(garbage)[:_MAX_NAMED_PER_FOLDER]:
            problems.append(
                f"{self._show(folder / name)} is not a MindSpore tensor file name; it was skipped."
            )
        if len(garbage) > _MAX_NAMED_PER_FOLDER:
            problems.append(
                f"{self._show(folder)}: {len(garbage) - _MAX_NAMED_PER_FOLDER} more files that "
                "are not MindSpore tensor file names were skipped."
            )
        return listing

    @staticmethod
    def _tensor_name(name: str, directory: Path, mapping: dict[str, str]) -> TensorFile | None:
        """The tensor an entry of an iteration folder holds, by its name or the name
        `mapping.csv` gives it; None when it is not a tensor file."""
        real = mapping.get(name) or (mapping.get(name[:-4]) if name.endswith(".npy") else None)
        if real is not None:
            if not real.endswith(".npy") and name.endswith(".npy"):
                real += ".npy"
            parsed = parse_tensor_file_name(real, directory)
            if parsed is not None:
                return parsed
        return parse_tensor_file_name(name, directory)

    def _refused_entry(self, listing: IterationListing, e: _Entry, mapping: dict[str, str]) -> None:
        """Keep what a refused entry (already reported by the listing) means for checks.

        Named as a tensor: that tensor is unreadable (`refused`). Named as one of MindSpore's
        other files (statistic.csv, kernel args, overflow records): no watched tensor is
        lost. Any other name: it may be a tensor under a name only a `mapping.csv` knows,
        so it counts against every tensor of the folder (`blockers`) — a check may then
        report "incomplete" for a stray FIFO, never "clean" for a lost tensor."""
        assert e.refused is not None
        parsed = self._tensor_name(e.name, listing.path, mapping)
        if parsed is not None:
            listing.refused.append((_with_path(parsed, Path(e.path)), e.refused))
            return
        kind = classify_file_name(e.name)
        if kind in (FileKind.UNKNOWN, FileKind.TENSOR) and e.name != MAPPING_CSV:
            listing.blockers.append(e.refused)

    def _read_mapping(
        self, path: Path, names: set[str], problems: list[str], blockers: list[str]
    ) -> dict[str, str]:
        """The rows of `mapping.csv` for the folder's own `names` (a hostile file of
        millions of rows costs a pass, not a dict of millions of entries)."""
        shown = self._show(path)
        try:
            text = read_regular(path, MAX_MAPPING_BYTES).decode("utf-8-sig")
            return parse_mapping_csv(text, names)
        except FileTooLargeError:
            problem = (
                f"{shown} is larger than {MAX_MAPPING_BYTES:,} bytes, too large to be a "
                "mapping.csv, so it was ignored."
            )
        except FileNotFoundError:
            return {}  # removed since the folder was listed: as if never there
        except NotRegularFileError as err:
            problem = f"{shown} is {err.strerror}; it was skipped."
        except OSError as err:
            problem = f"cannot read {shown}: {_reason(err)}."
        except UnicodeDecodeError:
            problem = f"{shown} is not UTF-8 text, so it was ignored."
        except ValueError as err:  # a row the csv module refuses
            problem = f"{shown} is not a valid mapping.csv ({err}), so it was ignored."
        problems.append(problem)
        blockers.append(problem)  # the files it names by number are lost to their tensors
        return {}


class DumpLayout:
    """A MindSpore dump folder: its ranks and settings. Build it with `DumpLayout.open`."""

    def __init__(
        self,
        root: Path,
        ranks: dict[int, RankLayout],
        settings: DumpSettings,
        problems: list[str],
    ) -> None:
        self.root = root
        self.ranks = ranks
        self.settings = settings
        self._problems = problems

    def __repr__(self) -> str:
        return f"DumpLayout({str(self.root)!r}, ranks={self.rank_ids})"

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> DumpLayout:
        """Discover the dump under `root` (the folder holding `rank_<N>/`).

        Raises DumpError when nothing is usable: `root` missing or not a folder, or no rank
        folder in it. Everything else is collected in `problems`.
        """
        path = os.fspath(root)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path.strip():
            raise DumpError("the dump folder path is empty; give the folder holding rank_0/.")
        given = show_name(path)  # a name that is not UTF-8 is shown as its escaped bytes
        if "\0" in path or not os.path.exists(path):
            raise DumpError(f"{given} does not exist.")
        if not os.path.isdir(path):
            raise DumpError(
                f"{given} is not a folder; give the MindSpore dump folder (the one holding "
                "rank_0/)."
            )
        real = os.path.realpath(path)
        scanner = _Scanner(real)
        problems: list[str] = []
        entries = scanner.scan(real, problems)
        if entries is None:
            raise DumpError(problems[0] if problems else f"cannot read the folder {given}.")
        rank_entries: dict[int, _Entry] = {}
        for e in entries:
            m = _RANK_DIR.fullmatch(e.name)
            if not m or not e.is_dir or not e.name.isascii():
                continue
            rid = int(m.group(1))
            if rid in rank_entries:
                problems.append(
                    f"{e.name} and {rank_entries[rid].name} are the same rank {rid}; "
                    f"only {rank_entries[rid].name} is read."
                )
                continue
            rank_entries[rid] = e
        if not rank_entries:
            hint = ""
            if _RANK_DIR.fullmatch(os.path.basename(real.rstrip(os.sep))):
                hint = " (it looks like a rank folder itself: give its parent folder)"
            elif problems:  # e.g. rank_0 is a link leaving the folder: say so, not "no rank"
                hint = f" that can be read ({problems[0].rstrip('.')})"
            raise DumpError(
                f"{given} holds no rank_<N> folder, so it is not a MindSpore dump folder{hint}."
            )
        # Settings come from the first rank that has .dump_metadata (MindInsight: rank 0).
        settings = DumpSettings()
        ranks: dict[int, RankLayout] = {}
        for rid in sorted(rank_entries):
            rank = RankLayout(rid, Path(rank_entries[rid].path), scanner, settings.net_name)
            if settings.source is None and rank.settings.source is not None:
                settings = rank.settings
            ranks[rid] = rank
        if not any(r.graph_files or r.dumped_iterations for r in ranks.values()):
            names = ", ".join(f"rank_{rid}" for rid in sorted(ranks))
            raise DumpError(
                f"{given} has no graph file and no tensor data in its rank folders ({names})."
            )
        return cls(Path(real), ranks, settings, problems)

    @property
    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    def rank(self, rank_id: int) -> RankLayout:
        try:
            return self.ranks[rank_id]
        except KeyError:
            raise KeyError(
                f"rank {rank_id} is not in the dump (ranks: {', '.join(map(str, self.rank_ids))})"
            ) from None

    @property
    def problems(self) -> list[str]:
        """Every problem found so far, dump-level first, then rank by rank. Listing iteration
        folders (done lazily) can add more."""
        out = list(self._problems)
        for rid in self.rank_ids:
            out.extend(self.ranks[rid].problems)
        return out

    @property
    def iterations(self) -> list[int]:
        return sorted({i for r in self.ranks.values() for i in r.iterations})

    @property
    def step_count(self) -> int:
        return max((r.step_count for r in self.ranks.values()), default=0)


# ---------------------------------------------------------------------- helpers
def _read_json(path: Path, scanner: _Scanner, problems: list[str]) -> dict[str, Any] | None:
    shown = scanner.show(path)
    try:
        if path.is_symlink() and not scanner.inside(os.path.realpath(path)):
            problems.append(
                f"{shown} is a symbolic link outside the dump folder, so it was not read."
            )
            return None
        # opened whatever it is: a FIFO or a folder is refused with its true reason
        value = json.loads(read_regular(path, MAX_JSON_BYTES).decode("utf-8-sig"))
    except FileNotFoundError:
        return None  # absent (or a dangling link): MindSpore 2.10 writes no metadata
    except FileTooLargeError:
        problems.append(f"{shown} is larger than {MAX_JSON_BYTES:,} bytes, so it was not read.")
        return None
    except NotRegularFileError as err:
        problems.append(f"{shown} is {err.strerror}; it was not read.")
        return None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        problems.append(f"cannot read {shown}: {_reason(err)}.")
        return None
    if not isinstance(value, dict):
        problems.append(f"{shown} does not hold a JSON object, so it was ignored.")
        return None
    return value


def _read_settings(meta: Path, scanner: _Scanner, problems: list[str]) -> DumpSettings:
    dump = _read_json(meta / "data_dump.json", scanner, problems)
    config = _read_json(meta / "config.json", scanner, problems)
    if dump is None and config is None:
        return DumpSettings()
    common = _dict(dump, "common_dump_settings")
    e2e = _dict(dump, "e2e_dump_settings")
    device = _str(config, "device_target")
    is_sync: bool | None = None
    if dump is not None:
        # MindInsight: device_target defaults to Ascend; GPU or e2e enable ⇒ sync
        is_sync = device == "GPU" or bool(e2e.get("enable"))
    io_setting = common.get("input_output")
    return DumpSettings(
        net_name=_str(common, "net_name"),
        ms_version=_str(config, "ms_version"),
        device_target=device,
        is_sync=is_sync,
        file_format=_str(common, "file_format"),
        saved_data=_str(common, "saved_data"),
        input_output=io_setting if isinstance(io_setting, int) else None,
        source=meta,
    )


def _dict(obj: dict[str, Any] | None, key: str) -> dict[str, Any]:
    value = obj.get(key) if obj else None
    return value if isinstance(value, dict) else {}


def _str(obj: dict[str, Any] | None, key: str) -> str | None:
    value = obj.get(key) if obj else None
    return value if isinstance(value, str) and value else None


def _with_path(parsed: TensorFile, path: Path) -> TensorFile:
    return TensorFile(
        path,
        parsed.op_type,
        parsed.op_name,
        parsed.task_id,
        parsed.stream_id,
        parsed.timestamp,
        parsed.io,
        parsed.slot,
        parsed.format,
        parsed.dtype,
    )


def _is_number_name(name: str) -> bool:
    """`0`, `12`: a graph-id or iteration folder. Not `03` (MindSpore never writes it, and it
    would be read as iteration 3 a second time while paths are built as `3`)."""
    return name.isascii() and name.isdigit() and name == str(int(name))


def _reason(err: BaseException) -> str:
    """Why a file could not be read, to follow "cannot read PATH: ". Never `str()` of an
    OSError, which repeats the path in its own quoting; the first letter is lowered to
    continue the sentence (the reason only: paths are never changed)."""
    if isinstance(err, OSError):
        text = (err.strerror or type(err).__name__).rstrip(".")
        return text[:1].lower() + text[1:]
    if isinstance(err, RecursionError):
        return "it is nested too deeply"
    if isinstance(err, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(err, json.JSONDecodeError):
        return f"it is not valid JSON ({err.msg} at line {err.lineno})"
    return str(err)


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] → '0–2, 5' (messages stay one short sentence)."""
    parts: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:  # type: ignore[operator]
            prev = v
        else:
            parts.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}–{prev}")
    return ", ".join(parts)
