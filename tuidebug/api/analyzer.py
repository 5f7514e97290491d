"""`DumpAnalyzer` (spec §6.1, §6.5): a dump folder's ranks, nodes, tensors, statistics and
watchpoint checks, over `offline/` and `core/`."""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tuidebug.api.conditions import HitDetail, HitParameter
from tuidebug.api.errors import (
    DebuggerParamTypeError,
    DebuggerParamValueError,
    int_list,
    is_int,
    type_name,
    validate_bool,
    validate_number,
    validate_slots,
    validate_str,
)
from tuidebug.api.nodes import DebuggerTensor, Node, Source, source_of
from tuidebug.api.watchpoints import Watchpoint, WatchpointHit

if TYPE_CHECKING:
    from tuidebug.compare.run import CompareResult
    from tuidebug.core.graph import StackFrame


_MEM_LIMIT_MIN_MB = 2048
_MEM_LIMIT_MAX_MB = 2147483647
_log = logging.getLogger("tuidebug.api")  # the package's name, as before the split


def _warn(problem: str) -> None:
    """A dump problem as a log warning. With no logging set up Python prints it on stderr,
    often a terminal: escaped (core.text.printable) like every untrusted string shown
    there; `DumpAnalyzer.problems` keeps the exact text."""
    from tuidebug.core.text import printable

    _log.warning("%s", printable(problem))


class DumpAnalyzer:
    """Analyzer of a MindSpore dump folder (spec §6.1).

    `mem_limit` is in MB (None = no limit; else an int in [2048, 2147483647]): a tensor larger
    than it is not read by `check_watchpoints`, which reports error code 8 for it. Problems
    that leave part of the dump unusable are logged and listed in `problems`.
    """

    def __init__(
        self,
        dump_dir: str | os.PathLike[str],
        mem_limit: int | None = None,
        graph_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        # graph_dir (a tuidebug extension): a synchronous dump of the same network whose
        # graphs stand for those of a dump without graph files (Ascend asynchronous layouts)
        from tuidebug.offline.dump import DumpError
        from tuidebug.offline.foreign.dump import open_dump

        if mem_limit is not None and not is_int(mem_limit):
            raise DebuggerParamTypeError(
                f"The type of mem_limit should be int or None, but got {type_name(mem_limit)}."
            )
        limit = 0 if mem_limit is None else int(mem_limit)
        if (limit and limit < _MEM_LIMIT_MIN_MB) or limit > _MEM_LIMIT_MAX_MB:
            raise DebuggerParamValueError(
                f"If mem_limit is not None, it should be set in [{_MEM_LIMIT_MIN_MB}, "
                f"{_MEM_LIMIT_MAX_MB}]."
            )
        if not isinstance(dump_dir, (str, os.PathLike)):
            raise DebuggerParamTypeError(
                f"The type of dump_dir should be str, but got {type_name(dump_dir)}."
            )
        try:
            # a MindSpore dump folder, or a foreign one (msprobe…): detected, no flag
            self._dump = open_dump(
                dump_dir, mem_limit=limit * (1 << 20) if limit else None, graph_dir=graph_dir
            )
        except DumpError as err:
            raise DebuggerParamValueError(str(err)) from None
        self._dump_dir = str(self._dump.root)
        self._lock = threading.Lock()
        # one `Source` per distinct core frame: thousands of nodes share their frames
        self._frames: dict[StackFrame, Source] = {}
        # rank → {(graph name, node name): Node}; built eagerly like MindInsight's parser
        self._nodes: dict[int, dict[tuple[str, str], Node]] = {}
        self._by_api_name: dict[int, dict[tuple[str, str], Node]] = {}
        for rank in self._dump.ranks:
            nodes: dict[tuple[str, str], Node] = {}
            for graph in self._dump.graphs(rank).values():
                for node in graph:
                    nodes[(graph.name, node.name)] = Node(self, rank, graph, node)
            self._nodes[rank] = nodes
            self._by_api_name[rank] = {(n.graph_name, n.name): n for n in nodes.values()}
        if not any(self._nodes.values()):
            # every selection would be empty and every check silently hit-free
            problems = self._dump.problems
            reason = f"; first problem: {problems[0].rstrip('.')}" if problems else ""
            raise DebuggerParamValueError(
                f"No rank of {dump_dir} has a readable graph, so its tensors cannot be tied "
                f"to nodes{reason}."
            )
        for problem in self._dump.new_problems():
            _warn(problem)

    # ------------------------------------------------------------------ basics
    @property
    def problems(self) -> list[str]:
        """Sentences about parts of the dump that could not be used (a tuidebug addition)."""
        return self._dump.problems

    def compare(
        self,
        golden: DumpAnalyzer | str | os.PathLike[str],
        *,
        ranks: int | list[int] | None = None,
        iterations: int | list[int] | None = None,
        node: str | None = None,
        cosine: float | None = None,
        rtol: float | None = None,
        atol: float | None = None,
    ) -> CompareResult:
        """Compare this dump (the target, msprobe's -tp) against `golden` (another
        DumpAnalyzer or a dump folder), as `tuidebug compare` does (a tuidebug addition,
        issue 30): returns a `tuidebug.compare.run.CompareResult` whose `rows` are in
        execution order (each with `status` pass/diverged/unmatched/skipped, `reason`, the
        msprobe `metrics` or `stat_diffs`), `first_divergence`, `chain()`, `summary`,
        `problems` and `complete`. `node` is a regular expression; `cosine`, `rtol`,
        `atol` replace the tolerance's defaults. Raises DebuggerParamValueError with one
        sentence when the dumps cannot be compared."""
        from tuidebug.compare.pairing import CompareError
        from tuidebug.compare.run import compare_dumps

        if isinstance(golden, DumpAnalyzer):
            golden_dir: str | os.PathLike[str] = golden._dump_dir
        elif isinstance(golden, (str, os.PathLike)):
            golden_dir = golden
        else:
            raise DebuggerParamTypeError(
                "The type of golden should be DumpAnalyzer, str or os.PathLike, but got "
                f"{type_name(golden)}."
            )
        limits = {}
        for name, value in (("cosine", cosine), ("rtol", rtol), ("atol", atol)):
            if value is not None:
                number = validate_number(value, name)
                if not number >= 0:
                    raise DebuggerParamValueError(f"{name} should be 0 or more, not {value}.")
                limits[name] = number
        pattern = None
        if node is not None:
            try:
                pattern = re.compile(validate_str(node, "node"))
            except re.error as err:
                raise DebuggerParamValueError(
                    f"node {node!r} is not a valid regular expression: {err}."
                ) from None
        chosen_ranks = None if ranks is None else int_list(ranks, "ranks", None)
        chosen_steps = None if iterations is None else int_list(iterations, "iterations", None)
        try:
            return compare_dumps(
                self._dump_dir,
                golden_dir,
                ranks=chosen_ranks,
                steps=chosen_steps,
                node=pattern,
                **limits,
            )
        except CompareError as err:
            raise DebuggerParamValueError(str(err)) from None

    def get_ranks(self) -> list[int]:
        """Rank ids found in the dump folder."""
        return list(self._dump.ranks)

    def get_iterations(self, ranks: int | list[int] | None = None) -> list[int]:
        """Sorted union of the dumped iterations (`{net}/{graph id}/{iteration}` folders) of
        every graph folder of the selected ranks."""
        chosen = self._ranks(ranks)
        found: set[int] = set()
        for rank in chosen:
            found.update(self._dump.iterations(rank))
        return sorted(found)

    def _ranks(self, ranks: object) -> list[int]:
        return int_list(ranks, "ranks", self._dump.ranks)

    # ------------------------------------------------------------------ selection
    def select_nodes(
        self,
        query_string: str,
        use_regex: bool = False,
        select_by: str = "node_name",
        ranks: int | list[int] | None = None,
        case_sensitive: bool = True,
    ) -> list[Node]:
        """Nodes whose name (or, with `select_by="code_stack"`, any stack frame's `str()`,
        MindInsight's `# - path:line  code` form) contains — or, with `use_regex`, matches
        (`re.search`) — `query_string`."""
        matches = _query(query_string, use_regex, case_sensitive)
        by_stack = _select_by(select_by)
        chosen = self._ranks(ranks)
        out: list[Node] = []
        for rank in chosen:
            out.extend(n for n in self._nodes[rank].values() if _selected(n, matches, by_stack))
        return out

    def select_tensors(
        self,
        query_string: str,
        use_regex: bool = False,
        select_by: str = "node_name",
        iterations: int | list[int] | None = None,
        ranks: int | list[int] | None = None,
        slots: list[int] | None = None,
        case_sensitive: bool = True,
    ) -> list[DebuggerTensor]:
        """Output tensors of the selected nodes for each requested slot × iteration.
        `iterations` (default: all) must be dumped iterations of the selected ranks; each
        node keeps those dumped for its root graph, or all of them when its root graph
        dumped no iteration folder (`Node.get_output_tensors`)."""
        matches = _query(query_string, use_regex, case_sensitive)
        by_stack = _select_by(select_by)
        slots = validate_slots(slots)
        chosen = self._ranks(ranks)
        wanted = int_list(iterations, "iterations", self.get_iterations(chosen))
        out: list[DebuggerTensor] = []
        for rank in chosen:
            for node in self._nodes[rank].values():
                if _selected(node, matches, by_stack):
                    out.extend(node.get_output_tensors(wanted, slots))
        return out

    # ------------------------------------------------------------------ statistics
    def select_tensor_statistics(
        self, iterations: int | list[int] | None = None, ranks: int | list[int] | None = None
    ) -> dict[int, dict[int, dict[str, list[dict[str, str]]]]]:
        """`{rank: {iteration: {"<Op Name>:<IO>:<Slot>": [statistic.csv row dict, ...]}}}`."""
        chosen = self._ranks(ranks)
        wanted = set(int_list(iterations, "iterations", self.get_iterations(chosen)))
        out: dict[int, dict[int, dict[str, list[dict[str, str]]]]] = {}
        for rank in chosen:
            per_rank: dict[int, dict[str, list[dict[str, str]]]] = {}
            for iteration in self._dump.iterations(rank):
                if iteration in wanted:
                    per_rank[iteration] = self._dump.statistics(rank, iteration)
            out[rank] = per_rank
        for problem in self._dump.new_problems():
            _warn(problem)
        return out

    def summary_statistics(
        self,
        statistics: Mapping[int, Mapping[int, Mapping[str, Sequence[Mapping[str, Any]]]]],
        overflow_value: float = 65500,
        out_path: str = "./",
        *,
        overwrite: bool = False,
    ) -> None:
        """Aggregate statistics per tensor name over ranks and iterations into
        `statistics_summary.csv` in `out_path`: inf_number, nan_number, out_of_range_number
        (|min| or |max| > overflow_value), total_number, none_overflow_number, total_iterations.

        An existing `statistics_summary.csv` is not replaced (MindInsight replaces it):
        `DebuggerParamValueError` says so, unless `overwrite=True` (a tuidebug addition).
        The file's name stays MindInsight's, so a script reading it back reads this run's
        numbers or fails, never a stale file. Text cells a spreadsheet would run as a
        formula (an op name starting with = + - @) start with an apostrophe."""
        if not isinstance(statistics, Mapping):
            raise DebuggerParamTypeError(
                "The type of statistics should be the dict returned by select_tensor_statistics, "
                f"but got {type_name(statistics)}."
            )
        limit = validate_number(overflow_value, "overflow_value")
        validate_str(out_path, "out_path")
        summary: dict[str, dict[str, Any]] = {}
        seen_iterations: dict[str, set[tuple[int, int]]] = {}
        for rank, per_rank in statistics.items():
            if not isinstance(per_rank, Mapping):
                raise DebuggerParamTypeError(
                    f"The statistics of rank {rank} should be a dict, but got "
                    f"{type_name(per_rank)}."
                )
            for iteration, per_iteration in per_rank.items():
                if not isinstance(per_iteration, Mapping):
                    raise DebuggerParamTypeError(
                        f"The statistics of rank {rank} iteration {iteration} should be a dict, "
                        f"but got {type_name(per_iteration)}."
                    )
                for tensor_name, rows in per_iteration.items():
                    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
                        raise DebuggerParamTypeError(
                            f"The statistics of {tensor_name} should be a list of rows, but "
                            f"got {type_name(rows)}."
                        )
                    for row in rows:
                        _summarise_row(summary, tensor_name, row, limit)
                    seen_iterations.setdefault(tensor_name, set()).add((rank, iteration))
        for name, entry in summary.items():
            entry["total_iterations"] = len(seen_iterations.get(name, ()))
        validate_bool(overwrite, "overwrite")
        table = [[entry[c] for c in _SUMMARY_COLUMNS] for entry in summary.values()]
        _write_csv(
            Path(out_path) / "statistics_summary.csv",
            _SUMMARY_COLUMNS,
            table,
            overwrite=overwrite,
            how="pass overwrite=True to replace it, or another out_path",
        )

    # ------------------------------------------------------------------ graph queries
    def _own(self, node: object) -> Node:
        if not isinstance(node, Node):
            raise DebuggerParamTypeError(
                f"The type of node should be Node, but got {type_name(node)}."
            )
        found = self._nodes.get(node.rank, {}).get((node.graph_name, node._node.name))
        if found is None or found._node is not node._node:
            raise DebuggerParamValueError(
                f"Failed to find node {node.name} with rank {node.rank} in the dump directory."
            )
        return found

    def _sources(self, frames: Iterable[StackFrame]) -> tuple[Source, ...]:
        cache = self._frames
        out = []
        for frame in frames:
            source = cache.get(frame)
            if source is None:
                source = cache[frame] = source_of(frame)
            out.append(source)
        return tuple(out)

    def _input_nodes(self, node: Node) -> list[Node]:
        nodes = self._nodes[node.rank]
        return [nodes[(node.graph_name, n.name)] for n in node._graph.inputs(node._node.name)]

    def _input_occurrences(self, node: Node) -> list[Node]:
        """The producer of each input in input order, a producer once per input it feeds."""
        nodes = self._nodes[node.rank]
        graph_nodes = node._graph.nodes
        return [nodes[(node.graph_name, src)] for src in node._node.inputs if src in graph_nodes]

    def _output_nodes(self, node: Node) -> list[Node]:
        nodes = self._nodes[node.rank]
        return [nodes[(node.graph_name, n.name)] for n in node._graph.consumers(node._node.name)]

    def list_affected_nodes(self, tensor: DebuggerTensor) -> list[Node]:
        """Nodes that take the tensor's node as input (its direct consumers), each once;
        a parameter's list includes an `Assign` to it (see `get_output_nodes`)."""
        if not isinstance(tensor, DebuggerTensor):
            raise DebuggerParamTypeError(
                f"The type of tensor should be DebuggerTensor, but got {type_name(tensor)}."
            )
        return self._output_nodes(self._own(tensor.node))

    def get_input_nodes(self, node: Node) -> list[Node]:
        """The producers of the node's inputs, in input order, each once (MindInsight lists
        a producer once per input it feeds). An `Assign` keeps its first input, the
        parameter it writes, which MindInsight drops from a three-input `Assign`."""
        return self._input_nodes(self._own(node))

    def get_output_nodes(self, node: Node) -> list[Node]:
        """The nodes that use an output of the node, each once (MindInsight lists a consumer
        once per input it takes from the node); a parameter's consumers include an `Assign`
        to it, which MindInsight leaves out."""
        return self._output_nodes(self._own(node))

    # ------------------------------------------------------------------ export
    def export_graphs(self, output_dir: str | None = None) -> str:
        """Write the graphs (every node with its type, inputs and code stack) to
        `dump_<YYYYmmdd_HHMMSS>.csv` in `output_dir` (default: the working directory);
        returns its path. (MindInsight writes xlsx; CSV needs no extra package.) An existing
        file is never replaced: a second export in the same second is
        `dump_<YYYYmmdd_HHMMSS>_1.csv`, and so on. Text cells a spreadsheet would run as a
        formula (a node name starting with = + - @) start with an apostrophe."""
        folder = os.getcwd() if output_dir is None else validate_str(output_dir, "output_dir")
        header = ("rank", "graph_name", "node_name", "node_type", "op_type", "input_nodes", "stack")
        rows = [
            [
                rank,
                node.graph_name,
                node.name,
                node._node.kind.value,
                node.op_type,
                "\n".join(n.name for n in self._input_nodes(node)),
                "\n".join(str(f) for f in node.stack),
            ]
            for rank in self.get_ranks()
            for node in self._nodes[rank].values()
        ]
        stem = f"dump_{time.strftime('%Y%m%d_%H%M%S')}"
        # MindInsight's name; a second export in the same second is `_1`, `_2`… (the path
        # is returned), never written over the first
        for n in range(_MAX_SAME_NAME):
            name = f"{stem}.csv" if n == 0 else f"{stem}_{n}.csv"
            try:
                return str(_write_csv(Path(folder) / name, header, rows, overwrite=False))
            except _Taken:
                continue
        raise DebuggerParamValueError(
            f"Cannot write the graph export in {folder}: {stem}.csv and {_MAX_SAME_NAME - 1} "
            "suffixed names are taken."
        )

    # ------------------------------------------------------------------ checking
    def check_watchpoints(
        self,
        watchpoints: Iterable[Watchpoint],
        error_on_no_value: bool = False,
        *,
        workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        cluster: Any = None,
    ) -> list[WatchpointHit]:
        """Check the watchpoints on their tensors, every tensor read once for all of them.

        Watchpoint ids are the positions in `watchpoints`. Iterations without dumped data are
        skipped. With `error_on_no_value`, requested tensors that have no file are reported
        with error code 32. Hits come in iteration order, then kernel execution order, then
        watchpoint id. `workers` (default: all cores) and `progress(done, total)` are
        tuidebug additions, and so is `cluster`: a `distributed.Client` whose workers read
        and check the tensors, or an address as `tuidebug check --cluster` takes it
        (`"tcp://host:8786"`, `"local:4"`: connected for this call and closed after it);
        the dump must be at the same path on each worker; same hits as a local check;
        needs `pip install 'tuidebug[cluster]'`.
        """
        from tuidebug.core.condition_catalogue import CheckRequest, Param
        from tuidebug.offline.check.checker import Checker, Watch, needs_previous

        if isinstance(watchpoints, (str, bytes)) or not isinstance(watchpoints, Iterable):
            raise DebuggerParamTypeError(
                f"The type of watchpoints should be list of Watchpoint, but got "
                f"{type_name(watchpoints)}."
            )
        wps = list(watchpoints)
        for i, wp in enumerate(wps):
            if not isinstance(wp, Watchpoint):
                raise DebuggerParamTypeError(
                    f"The type of watchpoints should be list of Watchpoint, but item {i} is "
                    f"{type_name(wp)}."
                )
        validate_bool(error_on_no_value, "error_on_no_value")
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise DebuggerParamValueError("workers should be a positive int or None.")
        dumped = set(self._dump.iterations())
        watches: list[Watch] = []
        tensor_of: dict[tuple[int, int, str, str, int, int], DebuggerTensor] = {}
        for wp_id, wp in enumerate(wps):
            cond = wp.condition
            request = CheckRequest(
                cond.condition_id,
                tuple(Param(n, v, d) for n, v, d in cond._wire_params()),
            )
            by_iteration: dict[int, dict[tuple[int, str], list[tuple[str, int]]]] = {}
            for tensor in wp.tensors:
                if tensor.iteration is None or tensor.iteration not in dumped:
                    continue
                node = self._own(tensor.node)
                graph_key = (node.rank, node.graph_name)
                pairs = by_iteration.setdefault(tensor.iteration, {}).setdefault(graph_key, [])
                pairs.append((node._node.name, tensor.slot))
                key = (
                    wp_id,
                    node.rank,
                    node.graph_name,
                    node._node.name,
                    tensor.slot,
                    tensor.iteration,
                )
                tensor_of.setdefault(key, tensor)
            for iteration, tensors in by_iteration.items():
                watches.append(
                    Watch(
                        wp_id,
                        request,
                        needs_previous(cond.condition_id),
                        tensors,
                        frozenset({iteration}),
                    )
                )
        iterations = sorted({i for w in watches for i in (w.iterations or ())})
        runner = None
        # a cluster that cannot check the dump says why in one sentence (none without one)
        cluster_errors: tuple[type[Exception], ...] = ()
        if cluster is not None:
            try:
                from tuidebug.offline.check.cluster import ClusterError, ClusterRunner
                from tuidebug.offline.check.cluster_connect import open_runner
            except ImportError:
                raise DebuggerParamValueError(
                    "cluster needs Dask's distributed package: pip install 'tuidebug[cluster]'."
                ) from None
            try:
                # an address as `--cluster` takes it: connected here, closed after the check
                runner = (
                    open_runner(cluster) if isinstance(cluster, str) else ClusterRunner(cluster)
                )
            except TypeError:
                raise DebuggerParamTypeError(
                    f"The type of cluster should be distributed.Client or an address str, but "
                    f"got {type_name(cluster)}."
                ) from None
            except ClusterError as err:
                raise DebuggerParamValueError(str(err)) from None
            cluster_errors = (ClusterError,)
        try:
            with Checker(self._dump, workers=workers, runner=runner) as checker:
                report = checker.check(
                    watches, iterations, error_on_no_value=error_on_no_value, progress=progress
                )
        except cluster_errors as err:
            raise DebuggerParamValueError(str(err)) from None
        finally:
            if runner is not None:
                runner.close()  # closes only what open_runner opened; a Client stays the caller's
        for problem in [*report.notes, *report.problems]:
            _warn(problem)
        for problem in self._dump.new_problems():
            _warn(problem)
        hits: list[WatchpointHit] = []
        for outcome in report.outcomes:
            k = outcome.key
            tensor = tensor_of[
                (outcome.watchpoint_id, k.rank, k.graph, k.node, k.slot, k.iteration)
            ]
            cond = wps[outcome.watchpoint_id].condition
            params = [
                HitParameter(
                    p.name, p.value, p.disabled, p.hit, 0.0 if p.actual is None else p.actual
                )
                for p in outcome.result.params
            ]
            hits.append(
                WatchpointHit(
                    tensor, cond, HitDetail(params, cond), outcome.error_code, outcome.watchpoint_id
                )
            )
        return hits


# ------------------------------------------------------------------ helpers
_MAX_SAME_NAME = 1000  # exports of one second that get a suffix before giving up


class _Taken(Exception):
    """The export's file name exists (export_graphs tries the next suffix)."""


def _write_csv(
    path: Path,
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    overwrite: bool,
    how: str = "",
) -> Path:
    """A CSV export written whole or not at all, never over an existing file unless
    `overwrite` (`core.user_files`), text cells made spreadsheet-safe; `_Taken` when the
    name exists and `how` is empty, else one `DebuggerParamValueError` sentence."""
    from tuidebug.core.user_files import (
        TargetExistsError,
        WriteRefusedError,
        spreadsheet_text,
        write_user_file,
    )

    def write(handle: BinaryIO) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
        writer = csv.writer(text)
        writer.writerow(header)
        writer.writerows([spreadsheet_text(cell) for cell in row] for row in rows)
        text.flush()
        text.detach()  # the handle stays open: write_user_file closes it

    try:
        os.makedirs(path.parent, exist_ok=True)
    except OSError as err:
        raise DebuggerParamValueError(
            f"Cannot write {path.name} in {path.parent}: {err.strerror or err}."
        ) from None
    try:
        return write_user_file(path, write, overwrite=overwrite, how_to_overwrite=how)
    except TargetExistsError as err:
        if not how:
            raise _Taken() from None
        raise DebuggerParamValueError(str(err)) from None
    except WriteRefusedError as err:
        raise DebuggerParamValueError(str(err)) from None


_SUMMARY_COLUMNS = (
    "op_type",
    "op_name",
    "tensor_name",
    "inf_number",
    "nan_number",
    "out_of_range_number",
    "total_number",
    "none_overflow_number",
    "total_iterations",
)


def _cell(row: Mapping[str, Any], *names: str) -> Any:
    """A statistic.csv cell by header name, case-insensitively (`NaN Count` was renamed
    `Nan Count` in newer MindSpore)."""
    lowered = {str(k).lower(): v for k, v in row.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _summarise_row(
    summary: dict[str, dict[str, Any]], tensor_name: str, row: Mapping[str, Any], limit: float
) -> None:
    if not isinstance(row, Mapping):
        raise DebuggerParamTypeError(
            f"A statistics row of {tensor_name} should be a dict, but got {type_name(row)}."
        )
    entry = summary.setdefault(
        tensor_name,
        {
            "op_type": _cell(row, "Op Type") or "",
            "op_name": _cell(row, "Op Name") or "",
            "tensor_name": tensor_name,
            "inf_number": 0,
            "nan_number": 0,
            "out_of_range_number": 0,
            "total_number": 0,
            "none_overflow_number": 0,
            "total_iterations": 0,
        },
    )
    entry["total_number"] += 1
    infs = _as_float(_cell(row, "Positive Inf Count")) + _as_float(_cell(row, "Negative Inf Count"))
    nans = _as_float(_cell(row, "NaN Count"))
    lo, hi = _as_float(_cell(row, "Min Value")), _as_float(_cell(row, "Max Value"))
    out_of_range = abs(lo) > limit or abs(hi) > limit
    entry["inf_number"] += infs > 0
    entry["nan_number"] += nans > 0
    entry["out_of_range_number"] += out_of_range
    entry["none_overflow_number"] += not (infs > 0 or nans > 0 or out_of_range)


def _select_by(select_by: object) -> bool:
    """True for `code_stack`, False for `node_name`."""
    if select_by == "node_name":
        return False
    if select_by == "code_stack":
        return True
    raise DebuggerParamValueError(
        "The param `select_by` only supports `node_name` or `code_stack`."
    )


def _selected(node: Node, matches: Callable[[str], bool], by_stack: bool) -> bool:
    """By name, or by any stack frame's `str()` (MindInsight matches `str(Source)`)."""
    if by_stack:
        return any(matches(str(frame)) for frame in node.stack)
    return matches(node.name)


def _query(
    query_string: object, use_regex: object, case_sensitive: object
) -> Callable[[str], bool]:
    text = validate_str(query_string, "query_string")
    validate_bool(use_regex, "use_regex")
    validate_bool(case_sensitive, "case_sensitive")
    if use_regex:
        try:
            pattern = re.compile(text, 0 if case_sensitive else re.IGNORECASE)
        except re.error as err:
            raise DebuggerParamValueError(
                f"The query_string {text!r} is not a valid regular expression: {err}."
            ) from None
        return lambda s: pattern.search(s) is not None
    if case_sensitive:
        return lambda s: text in s
    lowered = text.lower()
    return lambda s: lowered in s.lower()
