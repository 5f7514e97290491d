"""The offline watchpoint checker: many watchpoints over many dump tensors, in parallel.

How a check runs (spec §3.5, §3.6, §5.8):

* `Checker.check` plans, runs and merges. The plan (`_Planner`) lists per watched tensor a
  `PlannedTask` (a file to read) or the outcomes decided without reading a value; the tasks
  run in this process's threads or on a `TaskRunner`; the merge turns their results into
  the `CheckReport`, in task order.
* Every tensor is read once per check, however many watchpoints watch it: all the requests of
  one tensor go to a single `core.scan_engine.evaluate` call (one chunked pass).
* Work runs in threads of the calling process (default: one per core, the calling thread
  included), started once and reused by every check: the compiled scan kernel runs without
  the GIL and numpy releases it on large arrays, so threads scale on big tensors with no
  process to start, no pickling and no shutdown to wait for. Each thread memory-maps one file
  at a time (`tensor_store.load_npy`), so memory stays bounded by the largest tensors being
  processed whatever the dump size. Tensors go biggest first, so the tail is short; a check
  of one tensor (or fewer tensors than threads) scans each tensor with several threads
  instead.
* Change conditions (`needs_prev`) read the previous value from the previous iteration in which
  the tensor's root graph ran, per the graph execution history (`ms_global_execution_order_
  graph_<id>.csv`). The first run of a graph has no previous value: error 4.

Error codes (bits, spec §3.6): 1 NaN, 2 ±Inf (both from `evaluate`), 4 no previous value,
8 tensor larger than the memory limit (not read), 16 no graph history, 32 no dumped value
(only with ``error_on_no_value=True``).

**Missing history (error 16), a deliberate choice.** MindSpore's engine overwrites the error
code of *every* watchpoint with 16 when the history file of the tensor's graph is missing, which
turns every watched tensor into an error "hit" and makes dumps without history (Ascend from
2.4, some CPU runs) uncheckable. tuidebug treats the history as optional: without it, only the
watchpoints whose condition needs the previous value (WNC, WCL, WCS: conditions 18, 19, 20)
report error 16, because only they cannot tell which iteration is "previous"; every other
condition is evaluated normally. `OfflineSession` also says so once in a Notice.

Results are `CheckOutcome`s (reported when hit or error_code ≠ 0) ordered by iteration, rank,
graph, the node's position in the kernel execution order (parameters and unlisted nodes after
the kernels), node name, slot, then watchpoint id. Unreadable files never stop a check: each
gives one sentence in `CheckReport.problems` and the rest is checked.

**Watched data skipped at discovery makes the check incomplete.** `CheckReport.problems`
lists every watched tensor that could not be read, not only files that failed when read:

* a watched tensor whose own file was refused by discovery (a FIFO, a dangling or looping
  link, a link out of the dump): its sentence, whether or not another file of it was read
  (the refused one may have been the newer);
* data that could not be read and cannot be tied to one tensor (an unreadable iteration,
  graph or net folder, a refused iteration folder or `mapping.csv`, a refused entry with a
  name that is not a tensor's, an unreadable `.bin` header, a `statistic.csv` of a
  statistic-only folder that was refused or had rows skipped): its sentence, for every
  watched iteration of that graph, even when each watched tensor there was read — the lost
  entry may hold tensors the graph does not know (a graph built from file names never saw
  the operator of an unreadable `.bin`);
* a file (or statistic-only row) that contradicts its node's dtype or shape: it is checked
  as it is (a NaN is a NaN whatever the shape), and its sentence says so.

So "0 hits" with an empty `problems` means every watched tensor that was dumped was read.

Ascend `.bin` files (`bin_files`): each watched slot is read from its file; one whose device
format is not converted to the host layout is checked raw, in its device shape (as
MindSpore's offline debugger checked what CANN could not convert), with one sentence in
`notes` naming the format (informational: it was checked), and is not checked against the
graph's declared shape.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tuidebug.core import scan_engine
from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    CheckRequest,
    CheckResult,
    ConditionType,
    untouched_params,
)
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.tensor import UnsupportedDataTypeError, numpy_dtype
from tuidebug.offline.check.statistic import Missing, condition_label, decide, refusal_sentence
from tuidebug.offline.check.task import Task, TaskResult, error_result, run_task
from tuidebug.offline.files.bin_tensors import BinTensorFile, raw_sentence, read_raw

if TYPE_CHECKING:
    from tuidebug.core.graph import Graph
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.names import TensorFile

# Below this many bytes a check runs in the calling thread alone: handing tiny tensors to
# other threads costs more than it saves (their numpy calls hold the GIL).
THREADED_MIN_BYTES = 8 << 20
# How often the calling thread reports progress.
PROGRESS_SECONDS = 0.1

ProgressCallback = Callable[[int, int], None]


class TaskRunner(Protocol):
    """What runs a check's tasks somewhere else than this process's threads (a Dask cluster:
    `offline/check/cluster.py`). It gets the planned tasks with their tensors and answers one
    `TaskResult` per task in task order (a task it could not run: unreadable, with a
    sentence), so the merge below is the same as a local check's."""

    def __call__(
        self,
        tasks: list[Task],
        keys: list[TensorKey],
        root: str,
        max_bytes: int | None,
        report: CheckReport,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> list[TaskResult]: ...


@dataclass(frozen=True, slots=True)
class TensorKey:
    """One dumped tensor: an output slot of a graph node at an iteration on a rank."""

    rank: int
    graph: str
    node: str
    slot: int
    iteration: int


@dataclass(frozen=True)
class Watch:
    """One watchpoint as the checker sees it.

    `tensors` maps (rank, graph name) to the (node name, slot) pairs to check there;
    `iterations` restricts the watch to some iterations (None = all the check covers).
    """

    watchpoint_id: int
    request: CheckRequest
    needs_prev: bool
    tensors: Mapping[tuple[int, str], Sequence[tuple[str, int]]]
    iterations: frozenset[int] | None = None


@dataclass(frozen=True)
class CheckOutcome:
    """A reported result: hit, or an error code (then `result.hit` may be False)."""

    key: TensorKey
    watchpoint_id: int
    result: CheckResult

    @property
    def error_code(self) -> int:
        return self.result.error_code


@dataclass
class CheckReport:
    outcomes: list[CheckOutcome]
    problems: list[str]
    tensors_checked: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    workers: int = 1  # threads that checked tensors (the calling thread included)
    # sentences that inform and lose nothing (a tensor checked raw in its device layout):
    # shown like `problems`, but never what makes a check incomplete
    notes: list[str] = field(default_factory=list)


def needs_previous(condition: int) -> bool:
    """True for the wire condition numbers that compare with the previous value (18–20)."""
    return condition in CHANGE_CONDITIONS


# ---------------------------------------------------------------------- the threads
def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The checker threads, shared by every check of the process and started on first need
    (a thread costs nothing while idle; `concurrent.futures` ends them at exit)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max(1, default_workers() - 1), thread_name_prefix="tuidebug-check"
            )
        return _POOL


class _Run:
    """One check's tasks shared by its threads: each claims the next task (biggest first)
    until none is left or the check stops."""

    def __init__(
        self,
        tasks: list[Task],
        root: str,
        max_bytes: int | None,
        scan_threads: int,
        cancel: threading.Event | None,
    ) -> None:
        self.tasks = sorted(tasks, key=lambda t: -t.nbytes)
        self.root = root
        self.max_bytes = max_bytes
        self.scan_threads = scan_threads
        self.cancel = cancel
        self.results: list[TaskResult] = []  # list.append is atomic: no lock
        self.stop = False
        self.cancelled = False
        self._next = itertools.count()  # next() on a count is atomic under the GIL

    def work(self) -> None:
        """Check tasks until none is left or the check stops (a helper thread's job)."""
        while self.claim_and_run():
            pass

    def claim_and_run(self) -> bool:
        """Check one more task; False once there is none left or the check stopped."""
        if self.stop:
            return False
        if self.cancel is not None and self.cancel.is_set():
            self.cancelled = self.stop = True
            return False
        index = next(self._next)
        if index >= len(self.tasks):
            return False
        self.results.append(
            run_task(self.tasks[index], self.root, self.max_bytes, self.scan_threads)
        )
        return True


class Checker:
    """Runs watchpoint checks over an `OfflineDump`. Cheap to make: the threads belong to the
    process and are shared; `close()` is kept for the `with` habit and frees nothing."""

    def __init__(
        self, dump: OfflineDump, workers: int | None = None, runner: TaskRunner | None = None
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError("The number of workers must be at least 1.")
        self.dump = dump
        self.workers = workers or default_workers()
        # planning and merging stay here either way: only reading and scanning move
        self.runner = runner

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Nothing to release: a check's threads are done when `check` returns."""

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ check
    def check(
        self,
        watches: Sequence[Watch],
        iterations: Iterable[int],
        error_on_no_value: bool = False,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> CheckReport:
        """Check `watches` at each of `iterations`. `progress(done, total)` counts tensors;
        setting `cancel` stops the check soon (the report then has `cancelled=True` and the
        outcomes found so far)."""
        started = time.perf_counter()
        plan = _Planner(self.dump, watches, error_on_no_value).plan(iterations)
        # the report holds the plan's lists: the merge appends to them
        report = CheckReport(
            plan.outcomes, plan.problems.sentences, tensors_checked=plan.stat_checked
        )
        results = self._dispatch(plan.tasks, report, progress, cancel)
        self._merge(plan, results, report)
        report.outcomes = self._ordered(report.outcomes)
        report.seconds = time.perf_counter() - started
        # callers show `problems` and then the dump's new problems: each sentence once
        self.dump.mark_reported([*report.notes, *report.problems])
        if progress and not report.cancelled:
            progress(len(plan.tasks), len(plan.tasks))
        return report

    def _dispatch(
        self,
        planned: list[PlannedTask],
        report: CheckReport,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> list[TaskResult]:
        """The planned tasks' results in task order, from the runner when there is one (the
        `TaskRunner` interface takes the tasks and their tensors as two lists), else from
        this process's threads."""
        tasks = [p.task for p in planned]
        root, max_bytes = str(self.dump.root), self.dump.mem_limit
        if self.runner is not None:
            keys = [p.key for p in planned]
            return self.runner(tasks, keys, root, max_bytes, report, progress, cancel)
        return self._run(tasks, root, max_bytes, report, progress, cancel)

    def _merge(
        self,
        plan: CheckPlan,
        results: list[TaskResult],
        report: CheckReport,
    ) -> None:
        """Each task's results into `report`, in task order, so that problems are listed as
        the tensors were."""
        notes = _Notes()
        for res in results:
            planned = plan.tasks[res.tid]
            report.tensors_checked += res.readable
            report.bytes_read += res.nbytes
            plan.problems.extend(res.problems)
            self._verify(planned, res, plan.problems, notes)
            for position, result in res.reported:
                wp_id = planned.watchpoint_ids[position]
                report.outcomes.append(CheckOutcome(planned.key, wp_id, result))
        report.notes.extend(notes.final())

    def _verify(
        self, planned: PlannedTask, res: TaskResult, problems: _Problems, notes: _Notes
    ) -> None:
        """Say in `problems` when what `res` read contradicts the graph's dtype or shape of
        its node. The file's results stand: a NaN is a NaN whatever the shape, and dropping
        them would report a clean tensor that was never checked as the graph declares it;
        the sentence makes the check incomplete when nothing hit (issue 27 §3). The
        tensor's folder blockers join too. A tensor read raw is not verified against the
        graph: `notes` says it was read raw instead (it was checked: nothing is lost)."""
        f, key = planned.file, planned.key
        # the file's shown name only for the few tensors read raw: not per tensor
        raw = raw_sentence(f, _shown(f, self.dump.root)) if read_raw(f) else None
        if raw is not None:
            # read (not refused as too large): checked raw, in its device layout, and the
            # report says so once (bin_files)
            if res.dtype is not None:
                notes.add(raw)
            return
        if res.dtype is None or res.shape is None:
            return
        if self.dump.verify_read(
            key.rank, key.graph, key.node, f, key.iteration, res.dtype, res.shape
        ):
            return
        found = self.dump.contradicted(key.rank, key.graph, key.node, key.slot, key.iteration)
        if found is not None:
            problems.add(found[1])
        problems.extend(self.dump.blockers(key.rank, key.graph, key.iteration))

    def _run(
        self,
        tasks: list[Task],
        root: str,
        max_bytes: int | None,
        report: CheckReport,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> list[TaskResult]:
        """Check `tasks` in this thread and, for a big check, `workers - 1` pool threads.
        Progress is reported from this thread only. Fewer tensors than threads: each tensor
        is scanned by several threads instead (the scan engine's own)."""
        total = len(tasks)
        # the compiled kernel only for big float tensors whose watchpoints read sums; its
        # load costs more than a small check (file sizes: float32 elements, headers aside)
        big = scan_engine.KERNEL_MIN_ELEMENTS * 4
        scan_engine.prepare_kernel(
            sum(
                t.nbytes
                for t in tasks
                if t.nbytes >= big
                and scan_engine.needs_float64_stage(t.requests, t.prev_path is not None)
            )
        )
        helpers = 0
        if self.workers > 1 and sum(t.nbytes for t in tasks) >= THREADED_MIN_BYTES:
            helpers = min(self.workers, total) - 1
        scan_threads = 1 if helpers else min(self.workers, scan_engine.THREADS)
        run = _Run(tasks, root, max_bytes, scan_threads, cancel)
        futures: list[Future[None]] = [_pool().submit(run.work) for _ in range(helpers)]
        report.workers = 1 + helpers
        if progress:
            progress(0, total)
        last = time.monotonic()
        try:
            while run.claim_and_run():
                if progress and time.monotonic() - last >= PROGRESS_SECONDS:
                    last = time.monotonic()
                    progress(len(run.results), total)
        finally:
            run.stop = True  # also on KeyboardInterrupt: helpers finish their tensor and stop
            for future in futures:
                if not future.cancel():  # a helper still queued behind another check: dropped
                    future.result()  # re-raises a helper's bug here
        report.cancelled = run.cancelled
        # in task order, so that problems are listed as the tensors were
        return sorted(run.results, key=lambda r: r.tid)

    def _ordered(self, outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
        dump = self.dump
        cache: dict[tuple[int, str, str], int] = {}
        graph_rank: dict[tuple[int, str], int] = {}

        def position(o: CheckOutcome) -> tuple[Any, ...]:
            k = o.key
            gk = (k.rank, k.graph)
            if gk not in graph_rank:
                graph_rank[gk] = dump.graph_order(k.rank, k.graph)
            nk = (k.rank, k.graph, k.node)
            if nk not in cache:
                cache[nk] = dump.execution_position(k.rank, k.graph, k.node)
            return (k.iteration, k.rank, graph_rank[gk], cache[nk], k.node, k.slot, o.watchpoint_id)

        return sorted(outcomes, key=position)


# ---------------------------------------------------------------------- the plan
class _Problems:
    """A check's sentences, each once, in the order first said."""

    def __init__(self) -> None:
        self.sentences: list[str] = []
        self._seen: set[str] = set()

    def add(self, sentence: str) -> None:
        if sentence not in self._seen:
            self._seen.add(sentence)
            self.sentences.append(sentence)

    def extend(self, sentences: Iterable[str]) -> None:
        for sentence in sentences:
            self.add(sentence)


class _Notes:
    """The raw-layout notes of a check, each once, the first `LISTED` as they are and the
    rest counted: a hostile `.bin` folder can describe 100,000 raw tensors, and a note per
    tensor would be a flood of lines (and a list scanned per tensor, quadratic)."""

    LISTED = 20

    def __init__(self) -> None:
        self._sentences: list[str] = []
        self._seen: set[str] = set()

    def add(self, sentence: str) -> None:
        if sentence not in self._seen:
            self._seen.add(sentence)
            if len(self._sentences) < self.LISTED:
                self._sentences.append(sentence)

    def final(self) -> list[str]:
        more = len(self._seen) - len(self._sentences)
        if more <= 0:
            return list(self._sentences)
        return [
            *self._sentences,
            f"{more:,} more tensors were likewise used raw, in their device layout.",
        ]


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """One tensor file to read: its task, and where its results go (the task's requests are
    those of `watchpoint_ids`, in that order)."""

    task: Task
    key: TensorKey
    watchpoint_ids: tuple[int, ...]
    file: TensorFile


@dataclass
class CheckPlan:
    """A planned check: the files to read (`tasks[i].task.tid == i`), and what was decided
    without reading a value (overflow records, statistic rows, errors 16 and 32)."""

    tasks: list[PlannedTask]
    outcomes: list[CheckOutcome]
    problems: _Problems
    stat_checked: int = 0  # tensors decided from statistic.csv rows (statistic-only dumps)


class _Planner:
    """Plans one check, iteration by iteration: per watched tensor, a task that reads its
    file, or outcomes and sentences decided without one. What does not change between
    iterations is resolved once per check, the rest once per iteration: a dump of many tiny
    files pays the look-ups per file."""

    def __init__(
        self, dump: OfflineDump, watches: Sequence[Watch], error_on_no_value: bool
    ) -> None:
        self.dump = dump
        self.watches = watches
        self.error_on_no_value = error_on_no_value
        self.out = CheckPlan([], [], _Problems())
        self.weights = _Weights(dump)
        self.names: dict[tuple[int, str, str], str] = {}  # the graph's name of a watched node
        # per iteration (reset by `_iteration`), keyed by (rank, graph)
        self.iteration = 0
        self.tables: dict[tuple[int, str], Mapping[tuple[str, str, int], TensorFile]] = {}
        self.refusing: set[tuple[int, str]] = set()  # groups with a file discovery refused
        self.stat_tables: dict[tuple[int, str], Mapping[tuple[str, str, int], Any]] = {}
        self.overflowing: dict[tuple[int, str], set[str]] = {}

    def plan(self, iterations: Iterable[int]) -> CheckPlan:
        for iteration in sorted(set(iterations)):
            self._iteration(iteration)
        return self.out

    def _iteration(self, iteration: int) -> None:
        self.iteration = iteration
        self.tables, self.refusing, self.stat_tables, self.overflowing = {}, set(), {}, {}
        wanted = _wanted(self.watches, iteration)
        for key, uniq in wanted.items():
            self._tensor(key, uniq)
        for rank, graph in sorted({(k.rank, k.graph) for k in wanted}):
            self.out.problems.extend(self.dump.graph_blockers(rank, graph))
            # every watched iteration's blockers, also when each watched tensor was found:
            # a lost entry may hold tensors the graph does not know (an unreadable `.bin` of
            # an operator a graph built from file names never saw), issue 27 §3
            self.out.problems.extend(self.dump.blockers(rank, graph, iteration))

    def _tensor(self, key: TensorKey, uniq: dict[int, Watch]) -> bool:
        """Plan one watched tensor; False when it has no readable file (nor statistic row)."""
        if any(w.request.condition == ConditionType.IS_OVERFLOW for w in uniq.values()):
            uniq = self._overflow(key, uniq)
            if not uniq:
                return True
        found, tensor_file = self._file(key)
        if tensor_file is None and found and self._from_statistics(key, uniq, found):
            return True
        if tensor_file is None:
            if self.error_on_no_value:
                self.out.outcomes.extend(_no_value(key, uniq.items()))
            return False
        self._task(key, uniq, tensor_file)
        return True

    def _overflow(self, key: TensorKey, uniq: dict[int, Watch]) -> dict[int, Watch]:
        """OperatorOverflow is decided from Ascend's overflow records, never from values
        (spec §5.2): a hit per watched tensor of an overflowing node. The other watches of
        the tensor are left to read it."""
        group = (key.rank, key.graph)
        if group not in self.overflowing:
            self.overflowing[group] = self.dump.overflow_nodes(key.rank, key.graph, self.iteration)
        node_name = self.dump.data_node_name(key.rank, key.graph, key.node) or key.node
        others: dict[int, Watch] = {}
        for wp_id, watch in uniq.items():
            if watch.request.condition != ConditionType.IS_OVERFLOW:
                others[wp_id] = watch
            elif node_name in self.overflowing[group]:
                hit = CheckResult(True, 0, untouched_params(watch.request))
                self.out.outcomes.append(CheckOutcome(key, wp_id, hit))
        return others

    def _file(self, key: TensorKey) -> tuple[str, TensorFile | None]:
        """The graph's name of the tensor's node and its file at this iteration: what
        dump.tensor_file(..., checked=False) answers. Unchecked: the read gives the header,
        verified against the graph by the merge. A refused file of the tensor is a problem
        whether or not another was found (the refused one may have been the newer)."""
        group = (key.rank, key.graph)
        table = self.tables.get(group)
        if table is None:
            index = self.dump.index(*group)
            table = self.tables[group] = index.unchecked_files(self.iteration)
            if index.refused_any():
                self.refusing.add(group)
        node = (key.rank, key.graph, key.node)
        found = self.names.get(node)
        if found is None:
            found = self.names[node] = self.dump.data_node_name(*node)
        tensor_file = table.get((found, "output", key.slot)) if found else None
        if tensor_file is None and found:
            # dropped from the table for contradicting the graph (a header check of an
            # earlier lookup or check): read as it is, and the merge says so again
            contradicted = self.dump.contradicted(*node, key.slot, self.iteration)
            if contradicted is not None:
                tensor_file = contradicted[0]
        if group in self.refusing:
            refused = self.dump.refused_reason(*node, key.slot, self.iteration)
            if refused is not None:
                self.out.problems.add(refused)
        return found, tensor_file

    def _from_statistics(self, key: TensorKey, uniq: dict[int, Watch], found: str) -> bool:
        """A statistic-only iteration: the tensor decided from its statistic.csv row
        (statistic_check), or refused per watchpoint with one sentence. False: no row."""
        group = (key.rank, key.graph)
        rows = self.stat_tables.get(group)
        if rows is None:
            rows = self.stat_tables[group] = self.dump.index(*group).statistic_rows(self.iteration)
        row = rows.get((found, "output", key.slot))
        if row is None:
            # a row that contradicts the graph is decided as it is, with its sentence: a
            # NaN count is a NaN count whatever the shape the row states
            contradicted = self.dump.index(*group).contradicted_row(found, key.slot, self.iteration)
            if contradicted is None:
                return False
            row = contradicted[0]
            self.out.problems.add(contradicted[1])
        self.out.stat_checked += 1
        for wp_id, watch in uniq.items():
            decided = decide(watch.request, row.stats)
            if isinstance(decided, Missing):
                self.out.problems.add(_refusal(self.dump, watch.request, decided))
            elif decided.reported:
                self.out.outcomes.append(CheckOutcome(key, wp_id, decided))
        return True

    def _task(self, key: TensorKey, uniq: dict[int, Watch], tensor_file: TensorFile) -> None:
        """The task that reads `tensor_file` for its watches. A change condition without
        the graph's history gets error 16 instead; its previous value is looked up once."""
        if len(uniq) == 1:  # the usual case, without the look-ups below
            ((wp_id, watch),) = uniq.items()
            if not watch.needs_prev:
                self._add(key, tensor_file, [(wp_id, watch)], None)
                return
        kept: list[tuple[int, Watch]] = []
        previous: TensorFile | None = None
        looked_up = False
        for wp_id, watch in uniq.items():
            if watch.needs_prev:
                if not self.dump.has_history(key.rank, key.graph):
                    no_history = error_result(watch.request, ErrorCode.NO_HISTORY)
                    self.out.outcomes.append(CheckOutcome(key, wp_id, no_history))
                    continue
                if not looked_up:
                    looked_up = True
                    previous = self._previous(key)
            kept.append((wp_id, watch))
        if kept:
            self._add(key, tensor_file, kept, previous)

    def _previous(self, key: TensorKey) -> TensorFile | None:
        """The tensor's file at the previous iteration its graph ran, if dumped."""
        prev_it = self.dump.previous_iteration(key.rank, key.graph, self.iteration)
        if prev_it is None:
            return None
        return self.dump.tensor_file(key.rank, key.graph, key.node, key.slot, prev_it)

    def _add(
        self,
        key: TensorKey,
        tensor_file: TensorFile,
        watches: list[tuple[int, Watch]],
        previous: TensorFile | None,
    ) -> None:
        """One task for `watches` (id, watch) on `tensor_file`; `previous` is only looked up
        for a change condition, so it is None when no request needs it."""
        task = Task(
            len(self.out.tasks),
            tensor_file.fspath,
            previous.fspath if previous is not None else None,
            tuple(watch.request for _, watch in watches),
            tuple(watch.needs_prev for _, watch in watches),
            self.weights.nbytes(key.rank, key.graph, key.node, key.slot),
            _in_bin(tensor_file),
            _in_bin(previous) if previous is not None else None,
        )
        wp_ids = tuple(wp_id for wp_id, _ in watches)
        self.out.tasks.append(PlannedTask(task, key, wp_ids, tensor_file))


def _refusal(dump: OfflineDump, request: CheckRequest, missing: Missing) -> str:
    """The sentence refusing a watchpoint that a tensor's statistics cannot decide: a
    foreign dump's (`statistics_words`) names its tool's statistics, not statistic.csv's."""
    words = dump.statistics_words
    if not words:
        return refusal_sentence(request, missing)
    what = condition_label(request) + (f" {missing.param}" if missing.param else "")
    need = missing.what.split(", which", 1)[0]
    column = re.fullmatch(r"the '([^']+)' column of statistic\.csv", need)
    if column is not None:  # statistic.csv's header, said as the statistic it holds
        need = f"the {column.group(1).lower()}"
    return (
        f"The watchpoint {what} cannot be checked on {words} without tensor files: it needs {need}."
    )


def _no_value(key: TensorKey, watches: Iterable[tuple[int, Watch]]) -> list[CheckOutcome]:
    """Error 32 for each (id, watch) of a tensor without a dumped value."""
    return [
        CheckOutcome(key, wp_id, error_result(watch.request, ErrorCode.NO_VALUE))
        for wp_id, watch in watches
    ]


def _wanted(watches: Sequence[Watch], iteration: int) -> dict[TensorKey, dict[int, Watch]]:
    """The tensors watched at `iteration`, each with its watchpoints by id: each id once
    (its first watch), even if listed twice."""
    wanted: dict[TensorKey, dict[int, Watch]] = {}
    for watch in watches:
        if watch.iterations is not None and iteration not in watch.iterations:
            continue
        for (rank, graph), pairs in watch.tensors.items():
            for node, slot in pairs:
                key = TensorKey(rank, graph, node, slot, iteration)
                wanted.setdefault(key, {}).setdefault(watch.watchpoint_id, watch)
    return wanted


def _in_bin(f: TensorFile) -> BinTensorFile | None:
    """`f` when it is one tensor of a `.bin` file (the task reads it from there)."""
    return f if isinstance(f, BinTensorFile) else None


def _shown(f: TensorFile, root: Path) -> str:
    """A file as the check's sentences name it: relative to the dump root."""
    try:
        return os.path.relpath(f.fspath, root)
    except ValueError:
        return f.fspath


class _Weights:
    """What each tensor weighs by its graph (dtype × shape), 0 where the graph does not say:
    it orders the work and decides threads and the kernel, so no file is stat-ed for it."""

    def __init__(self, dump: OfflineDump) -> None:
        self.dump = dump
        self.graphs: dict[tuple[int, str], Graph | None] = {}
        self.itemsizes: dict[int, int] = {}

    def nbytes(self, rank: int, graph: str, node: str, slot: int) -> int:
        key = (rank, graph)
        if key not in self.graphs:
            try:
                self.graphs[key] = self.dump.graph(rank, graph)
            except Exception:  # an unreadable graph is the dump's problem, reported there
                self.graphs[key] = None
        g = self.graphs[key]
        found = g.get(node) if g is not None else None
        if found is None or slot >= len(found.outputs):
            return 0
        spec = found.outputs[slot]
        if spec.dtype is None or spec.shape is None:
            return 0
        if spec.dtype not in self.itemsizes:
            try:
                self.itemsizes[spec.dtype] = numpy_dtype(spec.dtype).itemsize
            except UnsupportedDataTypeError:
                self.itemsizes[spec.dtype] = 0
        return self.itemsizes[spec.dtype] * math.prod(spec.shape)
