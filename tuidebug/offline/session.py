"""`OfflineSession`: the `DebugSession` over a MindSpore dump folder (spec §5.7).

Steps are MindInsight's offline steps: 1-based, step `s` shows dump iteration `s − 1`, and
step 0 means no iteration is loaded (only constants can be read; watchpoints are not checked,
as MindInsight does not support initial weights offline). `step(n)` and `continue_()` advance
one iteration at a time and check it; both stop as soon as a step has hits, and `continue_()`
also at the last step. A step whose hits are *all* error code 4 only ("the previous step
value cannot be found": a weight-change watchpoint at the first dumped iteration) does not
stop them: those hits say nothing about the training, only that the dump starts there, and
stopping on them would make every `continue` from step 0 halt at step 1. They are summed
up in one `Notice`, and they stay listed when the run ends on that step. `reset_step(s)`
jumps to any step without checking (the watchpoints are then outdated until `recheck()`).

A run (step, continue, recheck) tells its subscribers little while it goes, so a UI does
not redraw for steps it only passes through: one `MetadataChanged` per step (the first
also says RUNNING), `Progress` only while one step's check is long (after
`PROGRESS_AFTER` seconds, then at most every `PROGRESS_EVERY`: `StepProgress`), and the
hits once, when
it stops (`HitsArrived` for the step it stopped at), then WAITING. `pause()` stops a run at
the next tensor (`can_stop_run`): the hits the interrupted check found so far are kept
(`HitsArrived.partial`), one `Notice` says where it stopped, and that step is "checked in
part" (`Metadata.message`) until it is checked again: the next step or continue checks it
again in full first (a step counts it as its one step), as does a recheck.

Only one rank is shown at a time (`select_rank`), but a session may check every rank
(`all_ranks=True`, the default with a cluster): step `s` then checks iteration `s − 1` on
every rank that dumped it, the hits are those of all ranks (each names its rank, the hit
list filters by it), the last step is the dump's (not the shown rank's), and switching the
shown rank keeps them. Everything that goes wrong with the dump is
a `Notice` event with one sentence; `start()` raises `SessionError` only when the folder is
not a dump at all. Checks run through the `Checker` (threads of this process, one
for small steps, or a Dask cluster: `runner=cluster_connect.open_runner(...)`, then its progress
label says the cluster's tasks done and which ranks are done); `close()` cancels a
running check and closes the cluster's client. After a check of every rank,
`Metadata.message` says how many ranks were checked and which have hits.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tuidebug.core.graph import Graph, NodeKind, StepInputs
from tuidebug.core.session import (
    Capabilities,
    DebugSession,
    GraphRun,
    GraphsLoaded,
    HitsArrived,
    Metadata,
    MetadataChanged,
    Notice,
    Progress,
    SessionError,
    SessionEvent,
    SessionState,
)
from tuidebug.core.tensor import TensorRef, dtype_label
from tuidebug.core.text import rank_ranges
from tuidebug.core.watchpoint_book import WatchpointChange
from tuidebug.core.watchpoints import Watchpoint, WatchpointError, WatchpointHit
from tuidebug.offline.layout.errors import DumpError

if TYPE_CHECKING:
    import numpy as np  # the tensor readers load it, after the first frame (issue 28)

    # loaded by `tensor_entries` (the listing `L` shows), not at the start
    from tuidebug.core.tensor_listing import TensorEntry
    from tuidebug.offline.check.checker import Checker, CheckReport
    from tuidebug.offline.check.cluster import ClusterProgress, ClusterRunner

    # the dump's readers (protobuf, the graph parser, the tensor files) load where they
    # are used, after the TUI's first frame, not with this module (issue 28's cold start)
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.names import TensorFile

__all__ = ["OfflineSession"]

# A step's check shows progress only once it has taken this long (seconds)…
PROGRESS_AFTER = 0.2
# …and then at most this often: the header follows a long check, not every tensor.
PROGRESS_EVERY = 0.1


class StepProgress:
    """One step's check as `Progress` events: none while it is short; once it has lasted
    `PROGRESS_AFTER` seconds (a timer: a checker may say nothing for a while, e.g. while
    its workers start), the tensors checked of the total, then at most every
    `PROGRESS_EVERY`; `end()` clears the line if it was shown. Called as the checker's
    progress callback, from its threads."""

    def __init__(self, emit: Callable[[SessionEvent], None], label: str) -> None:
        self._emit = emit
        self._label = label
        self._lock = threading.Lock()  # the timer and the checker's threads both emit
        self._counts = (0, 0)  # (done, total) as the checker last said; 0 total: unknown
        self._shown_at: float | None = None
        self._ended = False
        self._timer = threading.Timer(PROGRESS_AFTER, self._show)
        self._timer.daemon = True
        self._timer.start()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self._counts = (done, total)
            shown_at = self._shown_at
            if shown_at is None or done >= total or self._ended:
                return
            now = time.monotonic()
            if now - shown_at >= PROGRESS_EVERY:
                self._shown_at = now
                self._emit(Progress(self._label, done, total))

    def relabel(self, label: str) -> None:
        """A new label (a cluster check's tasks and ranks done), shown at once when the
        line is up: a cluster says it once per batch, rarely enough not to throttle."""
        with self._lock:
            self._label = label
            if self._shown_at is not None and not self._ended:
                self._emit(Progress(label, *self._counts))

    def _show(self) -> None:
        with self._lock:
            if self._ended or self._shown_at is not None:
                return
            self._shown_at = time.monotonic()
            self._emit(Progress(self._label, *self._counts))

    def end(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._ended = True
            if self._shown_at is not None:
                self._emit(Progress(self._label, 1, 1))  # done: the progress line goes


def _with_file_shape(entry: TensorEntry, f: TensorFile) -> TensorEntry:
    """`entry` with the shape, dtype and size its file's header says, when the graph does
    not: kernels with several outputs (BatchNorm, LayerNorm, Dropout, Adam…) declare a
    tuple the graph parser cannot split per slot, and scalars often declare no shape. The
    header is a few hundred bytes, cached per header form (`peek_header`); the listing
    still reads no value."""
    from tuidebug.offline.files.bin_tensors import converted_fit
    from tuidebug.offline.files.npy import peek_header

    fit = converted_fit(f)
    if fit is None:
        # a value with no file of its own (a tfdbg record's): what its tool recorded
        recorded = getattr(f, "recorded_fit", None)
        fit = recorded() if recorded is not None else None
    if fit is None:
        header = peek_header(f.fspath)
        fit = None if header is None else (header.dtype, header.shape)
    if fit is None:
        return entry
    dtype, shape = fit
    dtype_name = entry.dtype or dtype_label(dtype)
    return replace(
        entry, dtype=dtype_name, shape=tuple(shape), nbytes=math.prod(shape) * dtype.itemsize
    )


class OfflineSession(DebugSession):
    """A dump folder as a debug session. Build it cheaply, then call `start()` (blocking,
    from a worker) to read the dump."""

    capabilities = Capabilities(
        live=False,
        can_step=True,
        can_continue=True,
        can_pause=False,
        can_stop_run=True,  # pause() stops a step or continue at the next tensor
        can_terminate=False,
        can_step_node=False,
        can_reset_step=True,
        can_compare_previous=True,
        step_zero_has_values=False,  # step 0 = nothing loaded yet (module docstring)
        weight_init_only_at_step_zero=False,
        watch_across_graphs=True,  # a watchpoint without a graph resolves in each (_resolve_in)
    )

    def __init__(
        self,
        dump_dir: str | os.PathLike[str],
        rank: int | None = None,
        *,
        workers: int | None = None,
        mem_limit: int | None = None,
        graph_dir: str | os.PathLike[str] | None = None,
        runner: ClusterRunner | None = None,
        all_ranks: bool | None = None,
    ) -> None:
        super().__init__()
        # checks run on this Dask cluster when given; the session owns it (close() closes it)
        self._runner = runner
        # check every rank at each step (module docstring); a cluster is for many ranks
        self.all_ranks = runner is not None if all_ranks is None else all_ranks
        self.dump_dir = os.fspath(dump_dir)
        # a sync dump whose graphs stand for those of a dump without graph files (--graph)
        self._graph_dir = graph_dir
        self._wanted_rank = rank
        self._workers = workers
        self._mem_limit = mem_limit
        self._dump: OfflineDump | None = None
        self._checker: Checker | None = None
        self._metadata = Metadata(mode="offline", source=self.dump_dir)
        self._graphs: dict[str, Graph] = {}
        # watchpoint id → (that watchpoint, what it was resolved in: the shown rank's graphs
        # or, checking every rank, the dump; its tensors)
        self._resolved: dict[
            int, tuple[Watchpoint, object, dict[tuple[int, str], list[tuple[str, int]]]]
        ] = {}
        self._hits: tuple[WatchpointHit, ...] = ()
        self._rank = 0
        # after a check of every rank: the ranks it checked (the message; the ranks with
        # hits are those of `_hits`, which a deleted watchpoint may thin out)
        self._ranks_checked: tuple[int, ...] | None = None
        # One control action at a time (the TUI runs them in workers); state reads are lock-free
        # because every published value is an immutable object swapped in whole.
        self._control = threading.RLock()
        self._cancel = threading.Event()
        # the step whose last check was stopped part-way (or failed), None when none is:
        # the next run checks it again before it goes on
        self._partial_step: int | None = None
        self._loaded_once = False
        self._closed = False
        self._noticed: set[str] = set()

    # ------------------------------------------------------------------ state
    @property
    def metadata(self) -> Metadata:
        return self._metadata

    @property
    def graphs(self) -> Mapping[str, Graph]:
        return dict(self._graphs)

    @property
    def hits(self) -> Sequence[WatchpointHit]:
        return self._hits

    @property
    def dump(self) -> OfflineDump:
        if self._dump is None:
            raise SessionError("The dump is not loaded yet.")
        return self._dump

    def graph_runs(self) -> Sequence[GraphRun]:
        if self._dump is None:
            return ()
        return tuple(self._dump.graph_runs(self._rank))

    def _set(self, **changes: object) -> None:
        self._metadata = self._moved(**changes)
        self.emit(MetadataChanged(self._metadata))

    def _moved(self, **changes: object) -> Metadata:
        """The metadata with `changes`, its `iteration` kept that of its step."""
        md = self._metadata.with_(**changes)
        return md.with_(iteration=md.step - 1 if md.step > 0 else None)

    def step_of(self, ref: TensorRef) -> int:
        """Step `s` shows dump iteration `s − 1` (module docstring)."""
        return self._metadata.step if ref.iteration is None else ref.iteration + 1

    def iteration_of_step(self, step: int) -> int | None:
        """Step `s` shows dump iteration `s − 1`; step 0 shows none (module docstring)."""
        return step - 1 if step > 0 else None

    def _notice(self, message: str, severity: str = "warning") -> None:
        self.emit(Notice(message, severity))

    def _flush_problems(self, extra: Sequence[str] = ()) -> None:
        """A Notice for every problem not shown yet (discovery, graphs, listing, reading)."""
        fresh = list(self._dump.new_problems()) if self._dump is not None else []
        for message in [*fresh, *extra]:
            if message not in self._noticed:
                self._noticed.add(message)
                self._notice(message)  # as written: many start with a file path

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Read the dump: discovery, the chosen rank's graphs, its tensor indexes. Blocks."""
        with self._control:
            self._set(state=SessionState.LOADING, message="")
            self.emit(Progress("Reading the dump folder", 0, 0))
            try:
                # a MindSpore dump folder, or a foreign one (msprobe…): detected, no flag
                # the dump's readers (foreign ones: tfdbg, msprobe, .pt) load here, after the
                # first frame, not with this module (issue 28's cold start)
                from tuidebug.offline.foreign.dump import open_dump

                dump = open_dump(
                    self.dump_dir, mem_limit=self._mem_limit, graph_dir=self._graph_dir
                )
            except DumpError as err:
                message = str(err)
                self._notice(message, "error")
                self._set(state=SessionState.PENDING, message=message)
                raise SessionError(message) from None
            self._dump = dump
            if dump.parameters_after_update != self.capabilities.parameters_after_update:
                # this session's own answer (the class's is MindSpore's)
                self.capabilities = replace(
                    self.capabilities, parameters_after_update=dump.parameters_after_update
                )
            if self._checker is not None:  # started again: the old workers are of no use
                self._checker.close()
            # the checker (and the tensor readers it brings) loads with the dump, after
            # the first frame, not with this module (issue 28's cold start)
            from tuidebug.offline.check.checker import Checker

            self._checker = Checker(dump, workers=self._workers, runner=self._runner)
            self._closed = False
            ranks = dump.ranks
            rank = self._wanted_rank if self._wanted_rank is not None else ranks[0]
            if rank not in ranks:
                self._notice(
                    f"Rank {rank} is not in the dump (ranks: {', '.join(map(str, ranks))}); "
                    f"showing rank {ranks[0]}.",
                    "warning",
                )
                rank = ranks[0]
            self._load_rank(rank)
            self._set(
                state=SessionState.WAITING,
                step=0,
                max_step=self._max_step(rank),
                rank=rank,
                ranks=tuple(ranks),
                backend=dump.backend,
                ms_version=dump.ms_version,
                graph_names=tuple(self._graphs),
                message="",
            )
            self.emit(GraphsLoaded(dict(self._graphs), first_time=not self._loaded_once))
            self._loaded_once = True
            if not dump.iterations(rank):
                self._notice(
                    f"Rank {rank} of {self.dump_dir} has no dumped iteration, so only its graphs "
                    "can be shown.",
                    "warning",
                )

    def _load_rank(self, rank: int) -> None:
        dump = self.dump
        self.emit(Progress(f"Loading the graphs of rank {rank}", 0, 0))
        graphs = dump.graphs(rank)
        total = len(graphs)
        for i, name in enumerate(graphs):
            self.emit(Progress(f"Indexing tensor files of {name}", i, total))
            dump.index(rank, name)
        self.emit(Progress("Dump loaded", total, total))
        self._rank = rank
        self._graphs = dict(graphs)
        if not self.all_ranks:  # the hits and the partial check were the old rank's
            self._hits = ()
            self._partial_step = None
        self._flush_problems()
        if not graphs:
            self._notice(
                f"rank_{rank} has no readable graph, so its tensors cannot be shown or checked.",
                "error",
            )

    def close(self) -> None:
        self._closed = True
        self._cancel.set()
        checker, self._checker = self._checker, None
        if checker is not None:
            checker.close()
        # the client lives as long as the session: a session started again after close()
        # checks with this process's threads
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()

    def select_rank(self, rank: int) -> None:
        with self._control:
            dump = self.dump
            if rank not in dump.ranks:
                raise SessionError(
                    f"Rank {rank} is not in the dump (ranks: {', '.join(map(str, dump.ranks))})."
                )
            self._set(state=SessionState.LOADING)
            self._load_rank(rank)
            max_step = self._max_step(rank)
            self._set(
                state=SessionState.WAITING,
                rank=rank,
                step=min(self._metadata.step, max_step),
                max_step=max_step,
                graph_names=tuple(self._graphs),
                message=self._step_message(min(self._metadata.step, max_step)),
            )
            self.emit(GraphsLoaded(dict(self._graphs), first_time=False))
            if not self.all_ranks:  # every rank's hits stay when all are checked
                self.emit(HitsArrived((), self._metadata.step))

    def _max_step(self, rank: int) -> int:
        """The last step: the shown rank's, or the whole dump's when every rank is checked."""
        return self.dump.step_count(None if self.all_ranks else rank)

    # ------------------------------------------------------------------ watchpoints
    def _resolve(self, wp: Watchpoint) -> dict[tuple[int, str], list[tuple[str, int]]]:
        """(rank, graph) → (node, slot) pairs the watchpoint watches: on the shown rank, or
        on every rank when all are checked (a target that no graph of a rank has is noted
        once for those ranks: raising would stop the check of the others). Kept until the
        watchpoint or the graphs it was resolved in change: every step asks again."""
        basis: object = self._dump if self.all_ranks else self._graphs
        cached = self._resolved.get(wp.id)
        if cached is not None and cached[0] is wp and cached[1] is basis:
            return cached[2]
        out = {(self._rank, name): pairs for name, pairs in self._resolve_in(wp, self._graphs)}
        if self.all_ranks:
            others = [r for r in self.dump.ranks if r != self._rank]
            missing: list[int] = []
            reason = ""
            for i, rank in enumerate(others):
                self.emit(
                    Progress(f"Reading the graphs of {len(others)} more ranks", i, len(others))
                )
                try:
                    found = self._resolve_in(wp, self.dump.graphs(rank))
                except WatchpointError as err:
                    missing.append(rank)
                    reason = reason or str(err)
                    continue
                out.update({(rank, name): pairs for name, pairs in found})
            if others:
                self.emit(Progress("Graphs read", 1, 1))  # the progress line goes
            self._flush_problems()  # damaged graph files of the other ranks
            if missing:
                self._notice(
                    f"Watchpoint {wp.id} watches nothing on rank{'s' if len(missing) > 1 else ''} "
                    f"{rank_ranges(missing)}: {reason.rstrip('.')}.",
                    "warning",
                )
        self._resolved[wp.id] = (wp, basis, out)
        return out

    @staticmethod
    def _resolve_in(
        wp: Watchpoint, rank_graphs: Mapping[str, Graph]
    ) -> list[tuple[str, list[tuple[str, int]]]]:
        """(graph, watched (node, slot) pairs) of one rank's graphs; `WatchpointError` when
        a target is in none of them."""
        if wp.graph_name:
            graph = rank_graphs.get(wp.graph_name)
            graphs = [graph] if graph is not None else []
        else:
            graphs = list(rank_graphs.values())
        # (loaded with the first watchpoint, as the hit rules with the first check: not by
        # the start, issue 28)
        from tuidebug.core.watch_targets import watched_tensors

        # the watchpoint watches every graph it resolves in; constants are never checked
        found = watched_tensors(wp.condition, wp.targets, graphs, constants=False, tolerate=True)
        return list(found.items())

    def _watch_graph(self, graph_name: str | None) -> str | None:
        if graph_name is not None and self._graphs and graph_name not in self._graphs:
            raise WatchpointError(f"There is no graph {graph_name!r} on rank {self._rank}.")
        return graph_name

    def _check_targets(self, watchpoint: Watchpoint, targets_changed: bool) -> None:
        if not self._graphs:
            return
        # unknown targets raise here, not at the next step (the shown rank decides: the
        # other ranks' graphs are read at the first check)
        if self.all_ranks:
            self._resolve_in(watchpoint, self._graphs)
        else:
            self._resolve(watchpoint)  # kept for the steps

    def _watchpoints_changed(self, change: WatchpointChange) -> None:
        if change.kind == "deleted" and change.watchpoint is not None:
            self._resolved.pop(change.watchpoint.id, None)
        super()._watchpoints_changed(change)

    def _forget_watchpoint(self, watchpoint_id: int) -> None:
        if any(h.watchpoint_id == watchpoint_id for h in self._hits):
            self._hits = tuple(h for h in self._hits if h.watchpoint_id != watchpoint_id)
            self.emit(HitsArrived(self._hits, self._metadata.step))
            if self.all_ranks:  # the header's line names the ranks with hits
                self._set(message=self._step_message(self._metadata.step))

    # ------------------------------------------------------------------ control
    def _require_loaded(self) -> OfflineDump:
        if self._closed:
            raise SessionError("The session is closed.")
        if self._dump is None or self._metadata.state is SessionState.LOADING:
            raise SessionError("The dump is not loaded yet.")
        return self._dump

    def step(self, count: int = 1) -> None:
        """Advance `count` steps, checking each; stops early at a step with hits (not at one
        whose hits are all "no previous step value", see the module docstring). A step
        whose check was stopped part-way is checked again first, as the first of them."""
        if count < 1:
            raise SessionError("The number of steps must be at least 1.")
        with self._control:
            self._require_loaded()
            step = self._metadata.step
            before = step - 1 if self._partial_step == step else step
            self._advance(before + count, "Stepping")

    def continue_(self) -> None:
        """Advance step by step until a step has hits or the last step is reached. A step
        whose every hit is error code 4 only ("the previous step value cannot be found")
        does not stop it: such hits are noted, and the run goes on to the next step. A
        step whose check was stopped part-way is checked again first."""
        with self._control:
            self._require_loaded()
            self._advance(self._metadata.max_step or 0, "Continue")

    def pause(self) -> None:
        """Stop the running step, continue or recheck at the next tensor; the hits found so
        far are kept (module docstring). Nothing happens when nothing runs. Not under the
        control lock: the run holds it."""
        if self._metadata.state is SessionState.RUNNING:
            self._cancel.set()

    def _advance(self, last: int, what: str) -> None:
        """Check the steps after the current one up to `last` (the current one first when
        its check was stopped part-way), stopping at hits; `what` names the run in the
        notice of a stop."""
        max_step = self._metadata.max_step or 0
        again = self._partial_step is not None and self._partial_step == self._metadata.step
        first = self._metadata.step if again else self._metadata.step + 1
        if first > max_step:
            raise SessionError(
                f"Already at the last step ({max_step}); reset to an earlier step to go on."
                if max_step
                else "The dump has no dumped iteration to step to."
            )
        if last > max_step:
            self._notice(
                f"The dump ends at step {max_step}; stepping to it instead of {last}.",
                "information",
            )
            last = max_step
        self._cancel.clear()
        try:
            for step in range(first, last + 1):
                if self._cancel.is_set():
                    break
                # the one event of a step that is passed through (the first says RUNNING)
                self._set(state=SessionState.RUNNING, step=step, message="")
                if not self._check_current() or not self._hits:
                    continue
                from tuidebug.core.hit_rules import stops_run

                if stops_run(self._hits):
                    break
                if step < last:
                    self._notice(
                        f"Step {step}: {len(self._hits)} "
                        f"check{'s' if len(self._hits) != 1 else ''} had no previous step "
                        "value to compare with (error 4); going on.",
                        "information",
                    )
        finally:
            self._run_ended(what)

    def reset_step(self, step: int) -> None:
        """Jump to step `step` (0 ≤ step ≤ max step) without checking; hits are cleared and the
        watchpoints are outdated until `recheck()`."""
        with self._control:
            self._require_loaded()
            max_step = self._metadata.max_step or 0
            if not 0 <= step <= max_step:
                raise SessionError(
                    f"Step {step} is out of range; the dump has steps 0 to {max_step}."
                )
            self._hits = ()
            self._partial_step = None
            self._ranks_checked = None
            self._set(step=step, message="")
            self.emit(HitsArrived((), step))

    def recheck(self) -> None:
        """Check every enabled watchpoint again at the current step; steps that appeared
        in the dump since it was opened are picked up first (a foreign dump's)."""
        with self._control:
            self._require_loaded()
            self._pick_up_steps()
            if self._metadata.step <= 0:
                self._hits = ()
                self._notice(
                    "Step 0 holds no tensors (initial weights are not dumped); step to 1 to check.",
                    "information",
                )
                self.emit(HitsArrived((), 0))
                return
            self._cancel.clear()
            self._set(state=SessionState.RUNNING, message="")
            try:
                self._check_current()
            finally:
                self._run_ended("Recheck")

    def _pick_up_steps(self) -> None:
        """New steps written while the dump is open (a training still running): the last
        step moves on, and one notice says so."""
        dump = self.dump
        before = self._metadata.max_step or 0
        if not dump.refresh():
            return
        after = self._max_step(self._rank)
        self._set(max_step=after, ranks=tuple(dump.ranks))  # a rank may have appeared too
        if after > before:
            self._notice(
                f"The dump now goes to step {after} (it went to {before} when opened).",
                "information",
            )
        self._flush_problems()

    def _run_ended(self, what: str) -> None:
        """A run stopped (at hits, at its last step, on `pause()` or an error): publish the
        hits of the step it stopped at, say once where a pause stopped it, and wait."""
        step = self._metadata.step
        partial = self._partial_step == step
        self.emit(HitsArrived(self._hits, step, partial=partial))
        message = self._step_message(step)
        if self._cancel.is_set() and not self._closed:
            count = len(self._hits)
            self._notice(
                f"{what} stopped at step {step}; {count} hit{'s' if count != 1 else ''} so far."
                + (f" {message}" if message else ""),
                "information",
            )
        self._set(state=SessionState.WAITING, message=message)

    def _step_message(self, step: int) -> str:
        """The header's line for the step shown: that it was checked in part, or which
        ranks a check of every rank checked."""
        if self._partial_step == step:
            return f"Step {step} was checked in part: " + (
                "recheck it to check it in full."
                if step >= (self._metadata.max_step or 0)
                else "a step or continue checks it again in full first."
            )
        return self._ranks_message(step)

    def _ranks_message(self, step: int) -> str:
        """After a check of every rank: how many ranks it checked and which have hits."""
        if not self.all_ranks or self._ranks_checked is None or step != self._metadata.step:
            return ""
        checked = self._ranks_checked
        with_hits = sorted({hit.tensor.rank for hit in self._hits})
        if len(checked) < 2 and not with_hits:
            return ""
        text = f"Step {step}: {len(checked)} rank{'s' if len(checked) != 1 else ''} checked"
        if not with_hits:
            return text + ", no hits."
        return text + f"; hits on rank{'s' if len(with_hits) > 1 else ''} {rank_ranges(with_hits)}."

    def _check_current(self) -> bool:
        """Check the iteration of the current step into `_hits` (published by the caller
        when the run stops there). False when the check was stopped part-way: the step is
        then `_partial_step`, as it stays when the check fails."""
        step = self._metadata.step
        iteration = step - 1
        self._hits = ()
        self._partial_step = step
        self._ranks_checked = None
        active = [wp for wp in self.watchpoint_book if wp.enabled]
        if not (active and self._graphs and self._checker is not None):
            self._flush_problems()
            self._partial_step = None
            return True
        from tuidebug.offline.check.checker import Watch

        watches = []
        for wp in active:
            try:
                tensors = self._resolve(wp)
            except WatchpointError as err:
                self._notice(f"Watchpoint {wp.id} was skipped: {err}", "warning")
                continue
            watches.append(Watch(wp.id, wp.request(), wp.condition.needs_prev, tensors))
        label = f"Checking step {step} (iteration {iteration})"
        progress = StepProgress(self.emit, label)
        runner = self._runner
        if runner is not None:

            def on_cluster(p: ClusterProgress) -> None:
                progress.relabel(f"{label} on the cluster: {p.describe()}")

            runner.on_progress = on_cluster
        try:
            report = self._checker.check(
                watches, [iteration], progress=progress, cancel=self._cancel
            )
        except Exception as err:
            if runner is None:
                raise
            # a lost scheduler, workers that cannot see the dump: one sentence, as any
            # failed control action (the run ends, the step stays checked in part)
            reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
            reason = (reason or type(err).__name__).rstrip(".")
            end = "" if reason.endswith(("?", "!")) else "."  # "is it hung?" ends a sentence
            raise SessionError(f"The check on the cluster failed: {reason}{end}") from None
        finally:
            progress.end()
        self._hits = self._to_hits(report)
        self._flush_problems([*report.notes, *report.problems])
        if report.cancelled:
            return False
        if self.all_ranks:
            dump = self.dump
            checked = {
                rank
                for watch in watches
                for rank, graph in watch.tensors
                if iteration in dump.index(rank, graph).iterations
            }
            self._ranks_checked = tuple(sorted(checked))
        self._partial_step = None
        return True

    def _to_hits(self, report: CheckReport) -> tuple[WatchpointHit, ...]:
        from tuidebug.core.hit_rules import hit_from_outcome

        dump = self.dump
        out = []
        for outcome in report.outcomes:
            wp = self.watchpoint_book.find(outcome.watchpoint_id)
            if wp is None:
                continue
            k = outcome.key
            order = dump.execution_position(k.rank, k.graph, k.node)
            out.append(hit_from_outcome(outcome, wp.condition, order, step=k.iteration + 1))
        return tuple(out)

    # ------------------------------------------------------------------ tensors
    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        """The tensor's value: `ref.iteration`, or the current step's iteration when None;
        `previous=True` gives the previous run of its graph (per the graph history, else the
        iteration before). Constants can be read at any step."""
        dump = self.dump
        rank = ref.rank if ref.rank in dump.ranks else self._rank
        graph_name = ref.graph or self._graph_of(ref.node)
        try:
            graph = dump.graph(rank, graph_name)
            node = graph.node(ref.node)
        except KeyError as err:
            raise SessionError(str(err.args[0]) if err.args else str(err)) from None
        iteration = ref.iteration if ref.iteration is not None else self._metadata.step - 1
        if previous:
            prev = dump.previous_iteration(rank, graph.name, iteration)
            if prev is None and not dump.has_history(rank, graph.name):
                dumped = dump.iterations(rank, graph.name)
                earlier = [i for i in dumped if i < iteration]
                prev = earlier[-1] if earlier else None
            if prev is None:
                return None
            iteration = prev
        if node.kind is not NodeKind.CONSTANT and iteration < 0:
            return None
        from tuidebug.offline.files.npy import TensorFileError

        try:
            return dump.value(rank, graph.name, node.name, ref.slot, iteration, ref.is_output)
        except TensorFileError as err:
            raise SessionError(str(err)) from None
        finally:
            # the first read of an iteration checks its files against the graph (spec §5.2a):
            # a file that contradicts its node is left out, and the notice says why
            self._flush_problems()

    def _trip_place(self, ref: TensorRef) -> tuple[int, str, str, int]:
        """(rank, graph, node, iteration) of a ref, as `tensor` resolves them."""
        dump = self.dump
        rank = ref.rank if ref.rank in dump.ranks else self._rank
        graph_name = ref.graph or self._graph_of(ref.node)
        try:
            node = dump.graph(rank, graph_name).node(ref.node)
        except KeyError as err:
            raise SessionError(str(err.args[0]) if err.args else str(err)) from None
        iteration = ref.iteration if ref.iteration is not None else self._metadata.step - 1
        return rank, graph_name, node.name, iteration

    def tensor_trips(self, ref: TensorRef) -> int:
        """The files a control-flow loop wrote for the tensor in its iteration folder."""
        rank, graph, node, iteration = self._trip_place(ref)
        if iteration < 0:
            return 0
        index = self.dump.index(rank, graph)
        return len(index.trips(node, ref.slot, iteration, ref.is_output))

    def tensor_trip(self, ref: TensorRef, trip: int) -> np.ndarray | None:
        """The value of loop trip `trip` (1 the first; the last is what `tensor` reads)."""
        rank, graph, node, iteration = self._trip_place(ref)
        if iteration < 0:
            return None
        from tuidebug.offline.files.npy import TensorFileError

        try:
            return self.dump.value(rank, graph, node, ref.slot, iteration, ref.is_output, trip)
        except TensorFileError as err:
            raise SessionError(str(err)) from None
        finally:
            self._flush_problems()

    def tensor_entries(self, iteration: int | None = None) -> list[TensorEntry]:
        """The output tensors whose files the iteration's folders hold (constants
        included), in execution order: graph by graph in the order they run, each graph's
        kernels in its execution-order file's order."""
        from tuidebug.core.tensor_listing import entry_for

        dump = self.dump
        rank = self._rank
        it = self._metadata.step - 1 if iteration is None else iteration
        if it < 0:
            return []
        out: list[TensorEntry] = []
        for name, graph in self._graphs.items():
            index = dump.index(rank, name)
            base = dump.graph_order(rank, name) << 32
            for (node_name, io, slot), f in index.files_for(it).items():
                node = graph.get(node_name)
                if io != "output" or node is None:
                    continue
                order = base + index.execution_position(node_name)
                entry = entry_for(graph, node, slot, order, it, f.dtype)
                if entry.shape is None:
                    entry = _with_file_shape(entry, f)
                out.append(entry)
            # a statistic-only iteration: its tensors are its statistic.csv rows
            for node_name, io, slot in index.statistic_rows(it):
                node = graph.get(node_name)
                if io != "output" or node is None:
                    continue
                order = base + index.execution_position(node_name)
                out.append(entry_for(graph, node, slot, order, it))
        out.sort(key=lambda e: (e.order, e.slot))
        return out

    def dumped_statistics(self, ref: TensorRef) -> Mapping[str, float] | None:
        """The tensor's statistic.csv row at `ref.iteration` (the current step's when None)
        as numbers by `STAT_COLUMNS` key, or None when no statistic.csv names it."""
        dump = self.dump
        rank = ref.rank if ref.rank in dump.ranks else self._rank
        try:
            graph_name = ref.graph or self._graph_of(ref.node)
            index = dump.index(rank, graph_name)
        except (KeyError, SessionError):
            return None
        iteration = ref.iteration if ref.iteration is not None else self._metadata.step - 1
        if iteration < 0:
            return None
        row = index.statistic_row(ref.node, ref.slot, iteration, ref.is_output)
        self._flush_problems()  # reading the CSV may have found problems in it
        if row is None:
            return None
        return {
            k: float(v)
            for k, v in row.stats.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }

    def step_inputs(
        self, graph: str, iteration: int | None = None, rank: int | None = None
    ) -> Mapping[str, StepInputs]:
        dump = self.dump
        rank = rank if rank is not None and rank in dump.ranks else self._rank
        it = self._metadata.step - 1 if iteration is None else iteration
        if it < 0:
            return {}
        try:
            found = dump.step_inputs(rank, graph, it)
        except (KeyError, DumpError):
            return {}
        finally:
            self._flush_problems()
        return found

    def tensor_alias(self, name: str) -> tuple[str, str, int] | None:
        if self._dump is None:
            return None
        return self._dump.tensor_alias(self._rank, name)

    def source_text(self, path: str) -> list[str] | None:
        if self._dump is None:
            return None
        try:
            return self._dump.source_text(path)
        finally:
            self._flush_problems()  # a corrupt record of the text is a problem said once

    def dumped_iterations(self, graph_name: str, node: str) -> list[int]:
        try:
            return self.dump.index(self._rank, graph_name).iterations_with_data(node)
        except (KeyError, SessionError):
            return []

    def _graph_of(self, node: str) -> str:
        for name, graph in self._graphs.items():
            if graph.get(node) is not None:
                return name
        raise SessionError(f"No graph of rank {self._rank} has a node named {node!r}.")
