"""Checking a dump on a Dask cluster: `tuidebug check --cluster` and
`DumpAnalyzer.check_watchpoints(..., cluster=client)`.

The check is planned and merged here exactly as a local one (`offline/check/checker.py`): this
process lists the dump and builds the checker's `Task`s, and `ClusterRunner` stands in for
the checker's threads (its `TaskRunner`). The tasks are grouped into batches by (rank,
graph, iteration range); each batch runs `check_task.run_task`, the checker's own unit of
work, on the Dask worker that executes it, reading the tensor files from the shared file
system (the dump must be at the same path on every worker). Results stream back with
`as_completed` and go back to the checker in task order, so hits, their order, error codes
and the incomplete-run rules are those of a local check.

Failures: Dask retries a batch whose worker died (its scheduler does) and one that raised
(`retries=`); a batch that still fails is answered as unreadable with one sentence naming
its rank, graph and iterations, so the check is incomplete (exit 2 without hits), never
silently short. A cluster left with no worker at all (its only worker killed, no nanny)
gives up the batches left after `NO_WORKER_SECONDS`, in one sentence. A hung worker (alive
to Dask's heartbeats, never finishing) is bounded by
`STALL_SECONDS`: its batches run once more on idle workers, then are given up the same way,
and later checks prefer the other workers. A scheduler lost or hung mid-check gives up the
batches it held (one sentence); no request to it waits more than `ANSWER_SECONDS`.
Ctrl+C (or the checker's `cancel` event) cancels the futures on the cluster.

Reaching a cluster (`--cluster ADDRESS|local[:N]`) is `offline/check/cluster_connect.py`.
`distributed` is an optional extra (`pip install 'tuidebug[cluster]'`); these two are the
only modules that import it (an import-linter contract says so).
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from tuidebug.core import scan_engine
from tuidebug.core.text import rank_ranges
from tuidebug.offline.check.task import Task, TaskResult, run_task

if TYPE_CHECKING:
    from distributed import Client

    from tuidebug.offline.check.checker import CheckReport, ProgressCallback, TensorKey

# A batch grows over the iterations of one (rank, graph) until it weighs this much (by the
# graph's shapes): big enough that the scheduler's few ms per task vanish, small enough
# that a 16-rank dump gives every worker of a small cluster several batches.
BATCH_BYTES = 256 << 20
# ... or holds this many tensors (a dump of tiny tensors, or one whose graph gives no shape)
BATCH_TENSORS = 2000
# How often Dask runs a batch that raised before the run calls it failed (a lost worker is
# retried by the scheduler itself, up to its `allowed-failures`).
RETRIES = 2
# A check in which no batch has come back for this long is stalled: Dask's heartbeats
# catch a dead worker, not a hung one (a read blocked on a stuck file system, a wedged
# process). The batches on the workers that hold them are run once more on idle workers,
# and given up (unchecked, named, the run incomplete) when they stall again or no worker
# is idle. A batch is at most BATCH_BYTES: 5 minutes is under 1 MB/s.
STALL_SECONDS = 300.0
# How often the wait for batches looks at the cancel event and the stall clock.
POLL_SECONDS = 0.5
# How long one request to the scheduler (asking the workers, cancelling) may wait: Dask's
# blocking calls have no bound of their own, and a stopped or wedged scheduler never answers.
ANSWER_SECONDS = 30.0
# A check whose cluster has had no worker at all for this long gives up the batches left:
# the scheduler keeps them queued for a worker that may never come (the only worker
# SIGKILLed, no nanny to restart it), and the stall bound, meant for hung workers, would
# leave the user looking at nothing for minutes. A nanny restarts a worker in seconds.
NO_WORKER_SECONDS = 30.0
# How often, while batches are out and none comes back, the scheduler is asked how many
# workers it has (one cheap request; a scheduler that does not answer is the stall bound's).
WORKER_POLL_SECONDS = 2.0


T = TypeVar("T")


class ClusterError(Exception):
    """The cluster cannot check this dump; the message is one sentence."""


def ask(call: Callable[[], T], what: str, seconds: float | None = None) -> T:
    """`call()`, a blocking request to the scheduler, within `seconds` (`ANSWER_SECONDS`),
    else ClusterError naming `what` was asked. The request runs in a daemon thread that
    is left waiting when the scheduler is hung: the check goes on (or ends) without it."""
    bound = ANSWER_SECONDS if seconds is None else seconds
    answer: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            answer.append((True, call()))
        except BaseException as err:  # handed to the caller's thread
            answer.append((False, err))

    thread = threading.Thread(target=run, name="tuidebug-dask-request", daemon=True)
    thread.start()
    thread.join(bound)
    if not answer:
        raise ClusterError(
            f"the Dask scheduler did not answer ({what}) within {bound:g} s: is it hung?"
        )
    ok, value = answer[0]
    if not ok:
        raise value
    result: T = value
    return result


@dataclass(frozen=True, slots=True)
class Batch:
    """The tasks of one (rank, graph) over iterations `first`..`last`: one Dask task."""

    rank: int
    graph: str
    first: int
    last: int
    tids: tuple[int, ...]
    nbytes: int

    def where(self) -> str:
        its = (
            f"iteration {self.first}"
            if self.first == self.last
            else f"iterations {self.first}-{self.last}"
        )
        return f"rank_{self.rank} graph {self.graph} {its}"


@dataclass(frozen=True, slots=True)
class ClusterProgress:
    """Where a cluster check stands (what the CLI shows while it runs)."""

    done: int
    total: int
    tensors: int
    nbytes: int
    # the rank with the most batches still running or queued, and how many (None when done)
    slowest_rank: int | None
    slowest_left: int
    # the ranks whose batches have all come back (the TUI says which ranks are done)
    ranks_done: tuple[int, ...] = ()

    def describe(self) -> str:
        """`12/16 tasks, ranks done 0–5, 7` (a progress label's tail)."""
        text = f"{self.done}/{self.total} tasks"
        if self.ranks_done:
            text += f", ranks done {rank_ranges(self.ranks_done)}"
        return text


def plan_batches(
    tasks: list[Task],
    keys: list[TensorKey],
    batch_bytes: int = BATCH_BYTES,
    batch_tensors: int = BATCH_TENSORS,
) -> list[Batch]:
    """Group the checker's tasks by (rank, graph, iteration range), biggest batches first
    (so the tail of the run is short, as the checker orders its own tasks)."""
    groups: dict[tuple[int, str], dict[int, list[Task]]] = {}
    for task in tasks:
        key = keys[task.tid]
        groups.setdefault((key.rank, key.graph), {}).setdefault(key.iteration, []).append(task)
    batches: list[Batch] = []
    for (rank, graph), by_iteration in sorted(groups.items()):
        tids: list[int] = []
        nbytes = 0
        first = last = -1
        for iteration in sorted(by_iteration):
            if not tids:
                first = iteration
            last = iteration
            for task in by_iteration[iteration]:
                tids.append(task.tid)
                nbytes += task.nbytes
            if nbytes >= batch_bytes or len(tids) >= batch_tensors:
                batches.append(Batch(rank, graph, first, last, tuple(tids), nbytes))
                tids, nbytes = [], 0
        if tids:
            batches.append(Batch(rank, graph, first, last, tuple(tids), nbytes))
    batches.sort(key=lambda b: -b.nbytes)  # stable: equal weights stay in dump order
    return batches


# ---------------------------------------------------------------------- on the workers
def dump_visible(root: str) -> bool:
    """Whether this worker sees the dump root."""
    return os.path.isdir(root)


def worker_view(root: str) -> tuple[str, bool]:
    """Run on every worker before the check: its tuidebug version (the tasks are this
    version's code and answers) and whether it sees the dump root."""
    from tuidebug import __version__

    return __version__, dump_visible(root)


def check_batch(tasks: list[Task], root: str, max_bytes: int | None) -> list[TaskResult]:
    """One batch on the worker that runs it: the checker's `run_task` per tensor. Raises
    (and so is retried elsewhere) when this worker cannot see the dump."""
    if not dump_visible(root):
        raise FileNotFoundError(f"the dump {root} is not visible on this worker")
    big = scan_engine.KERNEL_MIN_ELEMENTS * 4  # as Checker._run decides it
    scan_engine.prepare_kernel(
        sum(
            t.nbytes
            for t in tasks
            if t.nbytes >= big
            and scan_engine.needs_float64_stage(t.requests, t.prev_path is not None)
        )
    )
    return [run_task(task, root, max_bytes) for task in tasks]


def _failed_worker(text: str, version: str) -> tuple[str, str]:
    """What a worker that failed `worker_view` lacks, and the fix, from its error's text
    (Dask hands back the worker's exception, often as its repr)."""
    if "No module named 'tuidebug" in text:
        return (
            "cannot import tuidebug",
            f"install tuidebug {version} on every worker "
            f"(pip install 'tuidebug[cluster]=={version}')",
        )
    missing = re.search(r"No module named '([^']+)'", text)
    if missing:  # tuidebug is there, one of its dependencies not
        return (
            f"cannot import what tuidebug needs (no module {missing.group(1)})",
            f"install tuidebug {version} with pip on every worker (it brings its dependencies)",
        )
    if "Can't get attribute" in text or "has no attribute" in text:
        # an older tuidebug (no worker_view), or a worker started before an upgrade
        return (
            "run another tuidebug version",
            f"install tuidebug {version} on every worker and restart them",
        )
    return f"failed when asked about the dump ({text.rstrip('.')})", "see their logs"


# ---------------------------------------------------------------------- in this process
class ClusterRunner:
    """The checker's `TaskRunner` on a Dask `Client`: `Checker(dump, runner=ClusterRunner(c))`."""

    def __init__(
        self,
        client: Client,
        *,
        on_progress: Callable[[ClusterProgress], None] | None = None,
        retries: int = RETRIES,
        batch_bytes: int = BATCH_BYTES,
        batch_tensors: int = BATCH_TENSORS,
        stall_seconds: float = STALL_SECONDS,
        no_worker_seconds: float | None = None,
    ) -> None:
        from distributed import Client

        if not isinstance(client, Client):
            raise TypeError(f"a distributed.Client is needed, not {type(client).__name__}")
        self.client = client
        self.on_progress = on_progress
        self.retries = retries
        self.batch_bytes = batch_bytes
        self.batch_tensors = batch_tensors
        self.stall_seconds = stall_seconds
        # None: NO_WORKER_SECONDS as it is when a check waits (tests shorten the constant)
        self.no_worker_seconds = no_worker_seconds
        # seconds per batch as the workers took them, and the submit-to-result time: the
        # difference is the scheduler's cost (the benchmark reports it)
        self.batches: list[Batch] = []
        # batches of the last check run again elsewhere because they stalled (a hung worker)
        self.rerun: list[Batch] = []
        # workers that held a batch past the stall bound: later checks prefer the others (a
        # hung worker's thread stays stuck, and each batch sent to it would wait the bound)
        self.hung: set[str] = set()
        self.elapsed: float = 0.0
        # what `close()` releases: the client (and local cluster) of `open_runner`
        self._owned: ExitStack | None = None

    def close(self) -> None:
        """Close the client this runner was opened with (`open_runner`); a client passed
        in by the caller stays the caller's to close."""
        owned, self._owned = self._owned, None
        if owned is not None:
            owned.close()

    def check_workers(self, root: str) -> None:
        """Every worker must run this tuidebug version and see the dump at `root`; else
        one sentence (ClusterError) naming how many do not and one of them."""
        from tuidebug import __version__

        if self.client.status != "running":  # lost (reconnecting, then closed): say so now
            address = getattr(self.client.scheduler, "address", None) or "the scheduler"
            raise ClusterError(
                f"the connection to the Dask scheduler at {address} was lost "
                f"({self.client.status}): is it still running?"
            )
        try:
            views: dict[str, Any] = ask(
                lambda: self.client.run(worker_view, root, on_error="return"),
                "which workers see the dump",
            )
        except (OSError, TimeoutError) as err:
            raise ClusterError(f"the Dask cluster cannot be asked about the dump: {err}.") from None
        if not views:
            raise ClusterError("the Dask cluster has no worker, so nothing can be checked.")

        def few(addrs: list[str], what: str, fix: str) -> ClusterError:
            return ClusterError(
                f"{len(addrs)} of the cluster's {len(views)} workers (e.g. {addrs[0]}) {what}: "
                f"{fix}."
            )

        failed = sorted(a for a, v in views.items() if isinstance(v, BaseException))
        if failed:
            failure = views[failed[0]]
            text = str(failure).strip()
            text = text.splitlines()[0] if text else type(failure).__name__
            raise few(failed, *_failed_worker(text, __version__))
        other = sorted(a for a, (version, _) in views.items() if version != __version__)
        if other:
            raise few(
                other,
                f"run tuidebug {views[other[0]][0]}, not {__version__}",
                "install the same version on every worker",
            )
        blind = sorted(a for a, (_, seen) in views.items() if not seen)
        if blind:
            raise few(
                blind,
                f"cannot see the dump at {root}",
                "put it on a file system they share, at the same path",
            )

    def __call__(
        self,
        tasks: list[Task],
        keys: list[TensorKey],
        root: str,
        max_bytes: int | None,
        report: CheckReport,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> list[TaskResult]:
        started = time.perf_counter()
        if tasks:
            self.check_workers(root)
        batches = plan_batches(tasks, keys, self.batch_bytes, self.batch_tensors)
        self.batches = batches
        self.rerun = []
        info = ask(self.client.scheduler_info, "its workers")
        workers: dict[str, Any] = info.get("workers", {})
        report.workers = sum(int(w.get("nthreads", 1)) for w in workers.values())
        self.hung &= set(workers)  # a worker gone (restarted) is forgotten
        healthy = sorted(set(workers) - self.hung)
        run_id = uuid.uuid4().hex[:8]
        futures: dict[Any, Batch] = {}
        for n, batch in enumerate(batches):
            key = f"tuidebug-check-{run_id}-{n}-rank{batch.rank}-it{batch.first}-{batch.last}"
            future = self.submit_batch(
                batch, tasks, root, max_bytes, key,
                workers=healthy if self.hung and healthy else None, strict=False,
            )  # fmt: skip
            futures[future] = batch
        results: list[TaskResult] = []
        left_per_rank: dict[int, int] = {}
        for batch in batches:
            left_per_rank[batch.rank] = left_per_rank.get(batch.rank, 0) + 1
        done = tensors = nbytes = 0
        total_tensors = len(tasks)
        if progress:
            progress(0, total_tensors)
        self._tell(0, len(batches), 0, 0, left_per_rank)
        pending = set(futures)
        waiting = _BoundedWait(self, tasks, root, max_bytes)
        try:
            for future, answer in waiting.completed(pending, futures, cancel):
                batch = futures[future]
                results.extend(answer if answer is not None else self._collect(future, batch))
                done += 1
                tensors += len(batch.tids)
                nbytes += sum(r.nbytes for r in results[-len(batch.tids) :])
                left_per_rank[batch.rank] -= 1
                if progress:
                    progress(tensors, total_tensors)
                self._tell(done, len(batches), tensors, nbytes, left_per_rank)
                if cancel is not None and cancel.is_set():
                    break
            report.cancelled = cancel is not None and cancel.is_set() and bool(pending)
        finally:
            if pending:  # Ctrl+C, a cancelled check or a bug here: nothing keeps running
                self.cancel(list(pending))
        self.elapsed = time.perf_counter() - started
        return sorted(results, key=lambda r: r.tid)

    def cancel(self, futures: list[Any]) -> None:
        """Cancel `futures` on the cluster, best effort: a scheduler that does not answer
        (lost, hung) has nothing to run them on either."""
        # the check's answer is decided by then: a failure here adds nothing to it
        with suppress(Exception):
            ask(lambda: self.client.cancel(futures), "to cancel tasks")

    def submit_batch(
        self,
        batch: Batch,
        tasks: list[Task],
        root: str,
        max_bytes: int | None,
        key: str,
        workers: list[str] | None = None,
        strict: bool = True,
    ) -> Any:
        """One batch as one Dask task (a future); `workers`: only on those (a batch moved
        off a hung worker), or with `strict=False` preferably on those (not on the workers
        known to be hung, while others are up), else wherever the scheduler likes."""
        placed: dict[str, Any] = {"workers": workers, "allow_other_workers": not strict}
        return self.client.submit(
            check_batch,
            [tasks[tid] for tid in batch.tids],
            root,
            max_bytes,
            key=key,
            pure=False,
            retries=self.retries,
            **(placed if workers else {}),
        )

    def _collect(self, future: Any, batch: Batch) -> list[TaskResult]:
        """A batch's results, or (failed after its retries, or its workers kept dying) each
        of its tensors unread with one sentence naming where: the check is incomplete."""
        if future.status == "finished":
            try:
                answer: list[TaskResult] = future.result()
                return answer
            except Exception as err:  # lost between "finished" and the transfer
                failure: BaseException = err
        else:
            try:
                failure = future.exception() or RuntimeError(future.status)
            except Exception as err:  # cancelled, or the scheduler forgot it
                failure = err
        reason = str(failure).strip().splitlines()[0] if str(failure).strip() else ""
        reason = (reason or type(failure).__name__).rstrip(".")
        if type(failure).__name__ == "KilledWorker":
            reason = "its workers kept dying"
        return unchecked(batch, reason)

    def _tell(
        self, done: int, total: int, tensors: int, nbytes: int, left_per_rank: dict[int, int]
    ) -> None:
        if self.on_progress is None:
            return
        slowest: int | None = None
        most = 0
        for rank, left in sorted(left_per_rank.items()):
            if left > most:
                slowest, most = rank, left
        ranks_done = tuple(rank for rank, left in sorted(left_per_rank.items()) if left == 0)
        self.on_progress(ClusterProgress(done, total, tensors, nbytes, slowest, most, ranks_done))


def unchecked(batch: Batch, reason: str) -> list[TaskResult]:
    """Each tensor of a batch unread, with one sentence naming where and why."""
    sentence = (
        f"{batch.where()} could not be checked on the cluster ({reason}), so its "
        f"{len(batch.tids)} tensor{'s' if len(batch.tids) != 1 else ''} were not checked."
    )
    return [TaskResult(tid, (), (sentence,), 0, False) for tid in batch.tids]


def unchecked_together(batches: list[Batch], reason: str) -> list[list[TaskResult]]:
    """Batches given up for one reason (a lost or hung scheduler takes every batch left):
    one sentence for all of them, naming their ranks and iterations, so a 1000-rank dump
    gets one line, not a thousand; each batch's unread results, in `batches` order."""
    if len(batches) == 1:
        return [unchecked(batches[0], reason)]
    first, last = min(b.first for b in batches), max(b.last for b in batches)
    its = f"iteration {first}" if first == last else f"iterations {first}-{last}"
    count = sum(len(b.tids) for b in batches)
    sentence = (
        f"{len(batches)} tasks of ranks {rank_ranges((b.rank for b in batches), '-')} ({its}) "
        f"could not be checked on the cluster ({reason}), so their {count} tensors were not "
        f"checked."
    )
    return [[TaskResult(tid, (), (sentence,), 0, False) for tid in b.tids] for b in batches]


class _BoundedWait:
    """The wait for a check's batches, bounded (`STALL_SECONDS`): it yields each future as
    it completes (with None: the runner collects it) or, for a batch given up as hung, its
    unchecked answer; it returns early when `cancel` is set."""

    def __init__(
        self, runner: ClusterRunner, tasks: list[Task], root: str, max_bytes: int | None
    ) -> None:
        self._runner = runner
        self._tasks = tasks
        self._root = root
        self._max_bytes = max_bytes

    def completed(
        self,
        pending: set[Any],
        futures: dict[Any, Batch],
        cancel: threading.Event | None,
    ) -> Iterator[tuple[Any, list[TaskResult] | None]]:
        from distributed import wait

        client = self._runner.client
        last = time.monotonic()
        workers = _WorkerWatch(client, self._runner.no_worker_seconds)
        while pending:
            if cancel is not None and cancel.is_set():
                return
            try:
                finished = wait(list(pending), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished = None
            except Exception as err:  # futures cancelled under the check: a lost scheduler
                yield from self._cancelled(client, pending, futures, err)
                continue
            if finished is not None and finished.done:
                last = time.monotonic()
                for future in finished.done:
                    pending.discard(future)
                    yield future, None
                continue
            gone_for = workers.none_for()
            if gone_for is not None:
                yield from self._no_worker(pending, futures, gone_for)
                return
            if time.monotonic() - last < self._runner.stall_seconds:
                continue
            last = time.monotonic()  # the batches moved get a full bound of their own
            for future, answer in self._unstall(client, pending, futures):
                yield future, answer

    def _no_worker(
        self, pending: set[Any], futures: dict[Any, Batch], seconds: float
    ) -> Iterator[tuple[Any, list[TaskResult]]]:
        """The cluster has had no worker for `seconds`: every batch left is given up in one
        sentence (the run incomplete) and cancelled, so a worker joining later does not run
        the check's leftovers for nobody."""
        gone = list(pending)
        pending.clear()
        self._runner.cancel(gone)
        reason = f"the cluster has had no worker for {seconds:g} s"
        yield from zip(gone, unchecked_together([futures[f] for f in gone], reason), strict=True)

    def _cancelled(
        self, client: Client, pending: set[Any], futures: dict[Any, Batch], err: Exception
    ) -> Iterator[tuple[Any, list[TaskResult]]]:
        """`wait` raised: batches were cancelled under the check (the connection to the
        scheduler was lost, or another client cancelled them). Those cannot come back: they
        are given up, named; the rest are still waited for. When none can be told apart
        (some other failure of the wait), every batch left is given up, so it never spins."""
        text = str(err).strip()
        if "connection-lost" in text or client.status != "running":
            reason = "the connection to the Dask scheduler was lost"
        else:
            reason = (text.splitlines()[0] if text else type(err).__name__).rstrip(".:")
        gone = [f for f in pending if f.status in ("cancelled", "lost")] or list(pending)
        pending.difference_update(gone)
        answers = unchecked_together([futures[f] for f in gone], reason)
        yield from zip(gone, answers, strict=True)

    def _unstall(
        self, client: Client, pending: set[Any], futures: dict[Any, Batch]
    ) -> Iterator[tuple[Any, list[TaskResult]]]:
        """No batch came back for `stall_seconds`: run the ones on busy workers once more on
        idle workers; give up those moved before, or all when no worker is idle (or the
        scheduler does not say which are busy: it is hung too)."""
        seconds = self._runner.stall_seconds
        try:
            processing: dict[str, list[str]] = ask(client.processing, "which workers are busy")
        except Exception:  # a hung or lost scheduler: nothing can be moved
            gone = list(pending)
            pending.clear()
            reason = f"no result after {seconds:.0f} s and no answer from the scheduler"
            yield from zip(
                gone, unchecked_together([futures[f] for f in gone], reason), strict=True
            )
            return
        on = {key: worker for worker, keys in processing.items() for key in keys}
        idle = sorted(worker for worker, keys in processing.items() if not keys)
        for future in list(pending):
            batch = futures[future]
            worker = on.get(future.key)
            if worker is None and idle:
                continue  # still waiting for a worker: not stuck itself
            if worker is not None:
                self._runner.hung.add(worker)
            if batch in self._runner.rerun or not idle:  # moved once already: given up
                pending.discard(future)
                self._runner.cancel([future])
                where = f" on {worker}" if worker else ""
                yield (
                    future,
                    unchecked(batch, f"no result after {seconds:.0f} s{where}: is a worker hung?"),
                )
                continue
            pending.discard(future)
            self._runner.cancel([future])
            again = self._runner.submit_batch(
                batch,
                self._tasks,
                self._root,
                self._max_bytes,
                f"{future.key}-again",
                workers=idle,
            )
            futures[again] = batch
            pending.add(again)
            self._runner.rerun.append(batch)


class _WorkerWatch:
    """How long the cluster has had no worker, asked of the scheduler at most every
    `WORKER_POLL_SECONDS` (only while batches are out and none comes back)."""

    def __init__(self, client: Client, bound: float | None) -> None:
        self._client = client
        self._bound = NO_WORKER_SECONDS if bound is None else bound
        self._asked = float("-inf")
        self._none_since: float | None = None
        # a scheduler that did not answer once is not asked again: each question would leave
        # one more thread waiting on it, and the stall bound already covers a hung scheduler
        self._silent = False

    def none_for(self) -> float | None:
        """The bound, once the cluster has had no worker for that long; else None."""
        now = time.monotonic()
        if self._silent or now - self._asked < min(WORKER_POLL_SECONDS, self._bound):
            return None
        self._asked = now
        try:
            count = len(ask(self._client.nthreads, "how many workers it has"))
        except Exception:  # hung or lost: the stall bound and `_cancelled` say so
            self._silent = True
            return None
        if count:
            self._none_since = None
            return None
        if self._none_since is None:
            self._none_since = now
            return None
        return self._bound if now - self._none_since >= self._bound else None
