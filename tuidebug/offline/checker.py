"""The offline watchpoint checker: many watchpoints over many dump tensors, in parallel.

How a check runs (spec §3.5, §3.6, §5.8):

* Every tensor is read once per check, however many watchpoints watch it: all the requests of
  one tensor go to a single `core.scan_engine.evaluate` call (one chunked pass).
* Work goes to a process pool (default: every core) as *file paths*; each worker memory-maps
  one file at a time (`tensor_store.load_npy`), so memory stays bounded by the largest tensor
  being processed whatever the dump size. Small checks (a LeNet dump) run in-process: starting
  a pool would cost more than the check.
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
  name that is not a tensor's): its sentence, when a watched tensor of that graph has no
  readable file at that iteration. When every watched tensor there was read, the lost entry
  cannot have been one of them. A refused iteration or graph folder counts whenever the
  graph is watched: its iterations are not known to the check at all.

So "0 hits" with an empty `problems` means every watched tensor that was dumped was read.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from tuidebug.core.condition_catalogue import CHANGE_CONDITIONS, CheckRequest, CheckResult
from tuidebug.core.error_codes import ErrorCode
from tuidebug.offline.check_worker import (
    Task,
    TaskResult,
    error_result,
    read_message,
    run_batch,
    run_task,
    write_message,
)

if TYPE_CHECKING:
    from tuidebug.offline.dump import OfflineDump

# Below these, a check runs in the calling process: a pool costs ~0.3 s to start and LeNet-
# sized dumps check faster than that.
INPROCESS_MAX_BYTES = 64 << 20
INPROCESS_MAX_TASKS = 4000
# A batch sent to one worker: big enough to amortise pickling, small enough to balance the
# load, report progress often and stop soon after a cancel.
BATCH_BYTES = 32 << 20
BATCH_TASKS = 256

ProgressCallback = Callable[[int, int], None]


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
    workers: int = 0  # 0 = in-process


def needs_previous(condition: int) -> bool:
    """True for the wire condition numbers that compare with the previous value (18–20)."""
    return condition in CHANGE_CONDITIONS


class WorkerError(Exception):
    """A worker process died or failed; its batch is rerun in the calling process."""


class _WorkerProcess:
    """One `python -m tuidebug.offline.check_worker` child and its two pipes."""

    def __init__(self) -> None:
        import tuidebug

        env = dict(os.environ)
        # The child must import this very tuidebug, installed or not.
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(tuidebug.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tuidebug.offline.check_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def run(self, batch: Sequence[Task], root: str, max_bytes: int | None) -> list[TaskResult]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            write_message(self.proc.stdin, (list(batch), root, max_bytes))
            reply = read_message(self.proc.stdout)
        except (
            OSError,
            EOFError,
            ValueError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
        ) as err:
            # a reply that cannot be read back (a class the parent lacks) must not end the
            # feeding thread: the parent would wait for that batch for ever
            raise WorkerError(f"a checker worker failed: {err}") from None
        if reply is None:
            code = self.proc.poll()
            raise WorkerError(f"a checker worker stopped unexpectedly (exit status {code})")
        status, payload = cast("tuple[str, Any]", reply)
        if status != "ok":
            raise WorkerError(f"a checker worker failed: {payload}")
        return cast("list[TaskResult]", payload)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()


# ---------------------------------------------------------------------- parent side
def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Checker:
    """Runs watchpoint checks over an `OfflineDump`. Keep one per dump: the process pool is
    started on first need and reused until `close()`."""

    def __init__(
        self,
        dump: OfflineDump,
        workers: int | None = None,
        inprocess_max_bytes: int | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError("The number of workers must be at least 1.")
        self.dump = dump
        self.workers = workers or default_workers()
        # read at run time, not import time, so tests and tools can lower the threshold
        self.inprocess_max_bytes = (
            INPROCESS_MAX_BYTES if inprocess_max_bytes is None else inprocess_max_bytes
        )
        self._pool: list[_WorkerProcess] | None = None
        self._lock = threading.Lock()
        self._failures: list[str] = []

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Stop the worker processes (they also stop by themselves if this process dies)."""
        with self._lock:
            pool, self._pool = self._pool, None
        for worker in pool or ():
            worker.close()

    @property
    def worker_pids(self) -> list[int]:
        return [w.pid for w in self._pool or ()]

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_pool(self) -> list[_WorkerProcess]:
        with self._lock:
            if self._pool is None:
                self._pool = [_WorkerProcess() for _ in range(self.workers)]
            else:
                # replace workers that died since the last check
                self._pool = [w if w.alive() else _WorkerProcess() for w in self._pool]
            return list(self._pool)

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
        dump = self.dump
        outcomes: list[CheckOutcome] = []
        problems: list[str] = []
        tasks: list[Task] = []
        task_keys: list[TensorKey] = []
        task_wps: list[tuple[int, ...]] = []
        seen_problem: set[str] = set()

        def problem(msg: str) -> None:
            if msg not in seen_problem:
                seen_problem.add(msg)
                problems.append(msg)

        for iteration in sorted(set(iterations)):
            # (rank, graph) groups with a watched tensor that has no readable file here
            missing: set[tuple[int, str]] = set()
            # per tensor, each watchpoint id once (the first watch), even if listed twice
            wanted: dict[TensorKey, dict[int, Watch]] = {}
            for watch in watches:
                if watch.iterations is not None and iteration not in watch.iterations:
                    continue
                for (rank, graph), pairs in watch.tensors.items():
                    for node, slot in pairs:
                        key = TensorKey(rank, graph, node, slot, iteration)
                        wanted.setdefault(key, {}).setdefault(watch.watchpoint_id, watch)
            for key, uniq in wanted.items():
                tensor_file = dump.tensor_file(key.rank, key.graph, key.node, key.slot, iteration)
                refused = dump.refused_reason(key.rank, key.graph, key.node, key.slot, iteration)
                if refused is not None:
                    problem(refused)
                if tensor_file is None:
                    missing.add((key.rank, key.graph))
                    if error_on_no_value:
                        for wp_id, watch in uniq.items():
                            outcomes.append(
                                CheckOutcome(
                                    key, wp_id, error_result(watch.request, ErrorCode.NO_VALUE)
                                )
                            )
                    continue
                requests: list[CheckRequest] = []
                needs: list[bool] = []
                wp_ids: list[int] = []
                prev_path: str | None = None
                prev_looked_up = False
                for wp_id, watch in uniq.items():
                    if watch.needs_prev:
                        if not dump.has_history(key.rank, key.graph):
                            outcomes.append(
                                CheckOutcome(
                                    key, wp_id, error_result(watch.request, ErrorCode.NO_HISTORY)
                                )
                            )
                            continue
                        if not prev_looked_up:
                            prev_looked_up = True
                            prev_it = dump.previous_iteration(key.rank, key.graph, iteration)
                            if prev_it is not None:
                                prev_file = dump.tensor_file(
                                    key.rank, key.graph, key.node, key.slot, prev_it
                                )
                                if prev_file is not None:
                                    prev_path = str(prev_file.path)
                    requests.append(watch.request)
                    needs.append(watch.needs_prev)
                    wp_ids.append(wp_id)
                if not requests:
                    continue
                path = str(tensor_file.path)
                tasks.append(
                    Task(
                        len(tasks),
                        path,
                        prev_path if any(needs) else None,
                        tuple(requests),
                        tuple(needs),
                        _file_size(path),
                    )
                )
                task_keys.append(key)
                task_wps.append(tuple(wp_ids))
            for rank, graph in sorted({(k.rank, k.graph) for k in wanted}):
                for sentence in dump.graph_blockers(rank, graph):
                    problem(sentence)
                if (rank, graph) in missing:
                    for sentence in dump.blockers(rank, graph, iteration):
                        problem(sentence)

        total = len(tasks)
        total_bytes = sum(t.nbytes for t in tasks)
        report = CheckReport(outcomes, problems, workers=0)
        if progress:
            progress(0, total)
        results: list[TaskResult] = []
        root = str(dump.root)
        max_bytes = dump.mem_limit
        use_pool = self.workers > 1 and (
            total_bytes > self.inprocess_max_bytes or total > INPROCESS_MAX_TASKS
        )
        if not use_pool:
            last = time.monotonic()
            for i, task in enumerate(tasks):
                if cancel is not None and cancel.is_set():
                    report.cancelled = True
                    break
                results.append(run_task(task, root, max_bytes))
                now = time.monotonic()
                if progress and (now - last > 0.1 or i + 1 == total):
                    last = now
                    progress(i + 1, total)
        else:
            report.workers = self.workers
            self._failures = []
            report.cancelled = self._run_in_pool(
                tasks, root, max_bytes, results, total, progress, cancel
            )
            for failure in self._failures:
                problem(failure[:1].upper() + failure[1:])

        for res in results:
            report.tensors_checked += res.readable
            report.bytes_read += res.nbytes
            for msg in res.problems:
                problem(msg)
            key = task_keys[res.tid]
            wps = task_wps[res.tid]
            for index, result in res.reported:
                outcomes.append(CheckOutcome(key, wps[index], result))
        report.outcomes = self._ordered(outcomes)
        report.seconds = time.perf_counter() - started
        # callers show `problems` and then the dump's new problems: each sentence once
        dump.mark_reported(problems)
        return report

    def _run_in_pool(
        self,
        tasks: list[Task],
        root: str,
        max_bytes: int | None,
        results: list[TaskResult],
        total: int,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> bool:
        """Feed batches to the worker processes, one in flight per worker so a cancel is
        quick and no pipe fills up. Returns True when cancelled."""
        pool = self._get_pool()
        # Big tensors first: the slowest batches start early and the tail stays short.
        order = sorted(tasks, key=lambda t: -t.nbytes)
        batches: list[list[Task]] = []
        cur: list[Task] = []
        cur_bytes = 0
        per_batch = max(
            1 << 20, min(BATCH_BYTES, sum(t.nbytes for t in tasks) // (self.workers * 8) or 1)
        )
        for task in order:
            cur.append(task)
            cur_bytes += task.nbytes
            if cur_bytes >= per_batch or len(cur) >= BATCH_TASKS:
                batches.append(cur)
                cur, cur_bytes = [], 0
        if cur:
            batches.append(cur)
        todo: queue.Queue[list[Task]] = queue.Queue()
        for batch in batches:
            todo.put(batch)
        done: queue.Queue[tuple[list[TaskResult], str | None]] = queue.Queue()
        stop = threading.Event()

        def feed(worker: _WorkerProcess) -> None:
            """One thread per worker: one batch in flight each, so pipes never fill up."""
            broken = False
            while not stop.is_set():
                try:
                    batch = todo.get_nowait()
                except queue.Empty:
                    return
                if broken:
                    done.put((run_batch(batch, root, max_bytes), None))
                    continue
                try:
                    done.put((worker.run(batch, root, max_bytes), None))
                except WorkerError as err:
                    broken = True
                    done.put(
                        (
                            run_batch(batch, root, max_bytes),
                            str(err) + "; its tensors were checked in-process.",
                        )
                    )

        threads = [threading.Thread(target=feed, args=(w,), daemon=True) for w in pool]
        for thread in threads:
            thread.start()
        received = 0
        done_count = 0
        cancelled = False
        try:
            while received < len(batches):
                if cancel is not None and cancel.is_set() and not cancelled:
                    cancelled = True
                    stop.set()
                if cancelled and not any(t.is_alive() for t in threads) and done.empty():
                    break
                try:
                    batch_results, failure = done.get(timeout=0.1)
                except queue.Empty:
                    continue
                received += 1
                results.extend(batch_results)
                done_count += len(batch_results)
                if failure:
                    self._failures.append(failure)
                if progress:
                    progress(done_count, total)
        finally:
            # also on KeyboardInterrupt: no thread may start another batch
            stop.set()
            for thread in threads:
                thread.join()
        while not done.empty():  # batches finished while stopping still count
            batch_results, _failure = done.get_nowait()
            results.extend(batch_results)
        return cancelled

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


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
