"""`JobSession`: one debugger for every rank of one job (`tuidebug online` serves this).

Each rank of a job is a training process with a connection of its own, and each is served by
an `OnlineSession` (session.py), the one-training state machine, unchanged: this module
routes every wire call to the rank its connection belongs to, ties the ranks together and
shows them as one `DebugSession`.

Who is which rank: a tuidebug client (the PyTorch adapter under torch.distributed) sends its
rank, world size and job name with its SendMetadata (`core.rank_fields`). MindSpore sends
none of them: a MindSpore training is a job of one rank, served exactly as before (every call
goes to the rank-0 session and its one-training-at-a-time rule). While a job is alive,
another job (another job name or world size) is refused with one sentence.

Ranks move together. A rank of a job of several is served in lockstep (one WaitCMD per step:
no free running, see session.py), and a rank's run command passes a barrier (`_gate`): no
rank runs on from a suspension until every live rank is suspended there too, and then each
may run once. So the ranks stop at the same step end, no rank runs into a collective while
another is held, and a hit on any rank (or a pause) stops them all: the round that follows
halts every rank. The initial suspension of a job shows as waiting once every rank is there. The PyTorch client does not suspend inside a step in a
job of several ranks (its hits are sent when found and it suspends at the step end), and
node stepping is off: a rank held at a kernel would leave the others in the all-reduce.

A rank that dies (connection closed, heartbeats lost) is named in a notice, and the barrier
stops waiting for it, so the others are never held for it; ranks that never connect are
waited for `join_timeout` seconds, then named, and the job goes on with those that came.

Lock order: a rank session calls `_gate` with its own lock held, so the job's lock `_jl` is
never held while a rank session's lock is taken; rank sessions are woken by `_waker`, a
thread that holds no other lock.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph import NodeKind
from tuidebug.core.hit_rules import stops_run
from tuidebug.core.rank_fields import RankInfo, rank_info
from tuidebug.core.session import (
    Capabilities,
    ClientDisconnected,
    DebugSession,
    Ending,
    GraphsLoaded,
    HitsArrived,
    Metadata,
    MetadataChanged,
    Notice,
    SessionError,
    SessionEvent,
    SessionState,
    WatchpointsChanged,
)
from tuidebug.core.watchpoint_book import WatchpointBook
from tuidebug.online.server import ClientRefused, RunningServer, start_server
from tuidebug.online.session import OnlineSession

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.graph import Graph
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
    from tuidebug.online.server import EventListener, ReceivedTensor, ServerOptions
    from tuidebug.online.views import TensorBaseInfo, WireStatistics

__all__ = ["JobSession"]

log = logging.getLogger("tuidebug.online")

_ENDED = (SessionState.DONE, SessionState.DISCONNECTED)


class JobSession(DebugSession):
    """Every rank of one job behind one `DebugSession` (module docstring)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 50051,
        *,
        server_options: ServerOptions | None = None,
        join_timeout: float = 10.0,
        **rank_options: Any,
    ) -> None:
        """`rank_options`: passed to every rank's `OnlineSession` (strict_version, the
        heartbeat and timeout test hooks)."""
        self._book_lock = threading.RLock()
        super().__init__(lock=self._book_lock)
        self.host = host
        self.port = port
        self.server_options = server_options
        self.join_timeout = join_timeout
        self._rank_options = rank_options
        self.address = ""
        self.bound_addresses: tuple[str, ...] = ()
        self.listener: EventListener | None = None
        self._server: RunningServer | None = None
        self._close_hooks: list[Callable[[], None]] = []
        self._closed = False

        self._jl = threading.RLock()  # the job's state; see "Lock order"
        self._ranks: dict[int, OnlineSession] = {}
        self._peers: dict[str, int] = {}  # connection -> rank, for the current job
        self._job: RankInfo | None = None  # None: a job of one rank (MindSpore, single)
        self._selected = 0
        self._present: dict[int, int] = {}  # rank -> token of its WaitCMD inside the gate
        self._tokens = 0
        # rank -> [halt pending]: may run from this suspension (see `_gate`)
        self._grants: dict[int, list[bool]] = {}
        self._stop_pending = False  # a hit or a pause: the next round halts every rank
        self._terminating = False
        self._dead: dict[int, str] = {}
        self._ended: set[int] = set()
        self._joined_at: float | None = None
        self._missing_said = False
        self._rank_hits: dict[int, tuple[WatchpointHit, ...]] = {}
        self._wp_maps: dict[int, dict[int, int]] = {}  # rank -> {job id: rank's id}
        # one mirroring at a time (a rank's graphs may arrive while the user creates one);
        # never taken by a thread holding a rank's lock
        self._mirror_lock = threading.Lock()
        self._refresh_lock = threading.Lock()  # never taken with a rank's lock held
        self._note = ""  # the job's banner line (a lost rank, the first offending rank)
        self._graphs_shown = False
        self._meta = Metadata(mode="online", source=f"{host}:{port}")

        self._events: queue.SimpleQueue[SessionEvent | None] = queue.SimpleQueue()
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="tuidebug-job-events", daemon=True
        )
        self._dispatcher.start()
        self._wake = threading.Event()
        self._waker = threading.Thread(
            target=self._wake_ranks, name="tuidebug-job-waker", daemon=True
        )
        self._waker.start()
        self._rank_session(0)

    # ============================================================== the job's ranks
    @property
    def multi(self) -> bool:
        """A job of several ranks is attached (or was, and is still shown)."""
        return self._job is not None

    @property
    def job(self) -> RankInfo | None:
        return self._job

    @property
    def rank_sessions(self) -> Mapping[int, OnlineSession]:
        """Every rank's session (tests, the sentinel)."""
        with self._jl:
            return dict(self._ranks)

    def first_offending_rank(self) -> int | None:
        """The rank of the first hit in execution order (`hits_now`), None without hits."""
        hits = self.hits_now()
        return hits[0].tensor.rank if hits else None

    def _rank_session(self, rank: int) -> OnlineSession:
        with self._jl:
            session = self._ranks.get(rank)
            if session is None:
                session = OnlineSession(
                    self.host, self.port, server_options=self.server_options, **self._rank_options
                )
                session.subscribe(partial(self._on_rank_event, rank))
                self._ranks[rank] = session
            return session

    def _selected_session(self) -> OnlineSession:
        with self._jl:
            return self._ranks.get(self._selected) or self._ranks[0]

    def _session_of(self, peer: str) -> OnlineSession:
        """The session serving `peer`'s calls (rank 0's for a connection of no job)."""
        with self._jl:
            rank = self._peers.get(peer) if self._job is not None else None
            return self._ranks[rank if rank is not None else 0]

    def _live(self) -> set[int]:
        """Ranks of the job that are connected and have not ended (with `_jl` held)."""
        return {r for r in self._peers.values() if r not in self._dead and r not in self._ended}

    def _job_alive(self) -> bool:
        with self._jl:
            sessions = list(self._ranks.values()) if self._job is not None else [self._ranks[0]]
        return any(s._active for s in sessions)

    def _reset_job(self, info: RankInfo | None) -> None:
        """A new job attaches (with `_jl` held): forget the previous one's ranks."""
        self._job = info
        self._peers.clear()
        self._present.clear()
        self._grants.clear()
        self._stop_pending = self._terminating = False
        self._dead.clear()
        self._ended.clear()
        self._joined_at = None
        self._missing_said = False
        self._rank_hits.clear()
        self._wp_maps.clear()
        self._note = ""
        self._selected = 0
        self._graphs_shown = False
        for rank, session in self._ranks.items():
            session.gate = partial(self._gate, rank) if info is not None else None
            session.lockstep = info is not None
        if info is not None:
            self._own_book.clear()

    # ============================================================== the barrier
    def _gate(self, rank: int, md: pb.Metadata) -> bool:
        """Called by rank `rank`'s session (its lock held) before it answers a WaitCMD:
        True lets it answer. Only a run command (step, node) moves a training past its
        suspension, so only a rank about to get one is held: SetCMDs, views, rechecks and
        exit go as they come (ranks may have different numbers of them queued).

        A rank runs on a *grant*. Grants are given to every live rank at once, when every
        live rank is suspended (in a WaitCMD) and none still holds one: they were all at
        the same suspension point. A rank spends its grant when it runs; a round that
        halts (a hit on any rank, a pause, since the last round) halts each rank the first
        time it comes through, and the grant stays for the command the user gives next."""
        session = self._ranks[rank]
        if not _wants_to_run(session):
            return True
        wake = False
        with self._jl:
            if self._terminating or self._job is None or rank in self._dead:
                return True
            grant = self._grants.get(rank)
            if grant is None:
                live = self._live()
                if rank not in self._present or not self._joined(live):
                    return False
                if not live <= self._present.keys() or any(r in self._grants for r in live):
                    return False  # a rank is running, or still behind (an unspent grant)
                halt_all = self._stop_pending
                self._stop_pending = False
                self._grants = {r: [halt_all] for r in live}
                grant = self._grants[rank]
                wake = len(live) > 1
            halt = grant[0]
            grant[0] = False
            if not halt:
                del self._grants[rank]  # spent: it runs now
        if wake:
            self._wake.set()
        if halt:
            session.halt()
        return True

    def _joined(self, live: set[int]) -> bool:
        """Every rank of the job connected, or `join_timeout` passed since the first did
        (then the missing ones are named once). With `_jl` held."""
        assert self._job is not None
        if len(self._peers) >= self._job.world_size:
            return True
        if self._joined_at is None or time.monotonic() - self._joined_at < self.join_timeout:
            return False
        if not self._missing_said:
            self._missing_said = True
            missing = sorted(set(range(self._job.world_size)) - set(self._peers.values()))
            self._post(
                Notice(
                    f"Rank(s) {_ranks_text(missing)} of {self._job.world_size} did not connect "
                    f"within {self.join_timeout:g} s; the debugger goes on with rank(s) "
                    f"{_ranks_text(sorted(live))}.",
                    "warning",
                )
            )
        return True

    def _wake_ranks(self) -> None:
        """Wake every rank's waiting WaitCMD (a round opened, a rank left); and, while a
        job's ranks are still connecting, notice when `join_timeout` has passed."""
        while True:
            woken = self._wake.wait(0.5)
            self._wake.clear()
            if self._closed:
                return
            with self._jl:
                sessions = list(self._ranks.values())
                joining = self._job is not None and len(self._peers) < self._job.world_size
                late = joining and not self._missing_said and self._joined(self._live())
            if late:
                self._refresh()
            if not woken:
                continue
            for session in sessions:
                with session._cond:
                    session._cond.notify_all()

    # ============================================================== wire side
    def stream_refusal(self, peer: str, graphs: bool = False) -> str:
        with self._jl:
            known = peer in self._peers
            multi = self._job is not None
        if multi and not known and self._job_alive():
            return (
                "The debugger is attached to another job and serves one job at a time; "
                "send SendMetadata first."
            )
        return self._session_of(peer).stream_refusal(peer, graphs)

    def job_peers(self, peer: str) -> set[str]:
        """The connections of `peer`'s job (the server keeps their streams when `peer`
        attaches); empty outside a job of several ranks."""
        with self._jl:
            return set(self._peers) if peer in self._peers else set()

    def wire_notice(self, message: str) -> None:
        self._post(Notice(message, "warning"))

    def wire_metadata(self, md: pb.Metadata, peer: str = "") -> pb.EventReply:
        """A job's rank joins its job's session; a training of no job (MindSpore) goes to
        rank 0's session; another job while one is alive is refused (`ClientRefused`)."""
        if md.training_done:
            return self._session_of(peer).wire_metadata(md, peer)
        info = rank_info(md)
        if info is not None and info.world_size == 1:
            info = None
        alive = self._job_alive()
        single_refuses = False
        with self._jl:
            current = self._job
            if info is None:
                if current is not None:
                    if alive:
                        raise ClientRefused(self._refusal(current))
                    self._reset_job(None)
                session = self._ranks[0]
            else:
                same = current is not None and (current.job, current.world_size) == (
                    info.job,
                    info.world_size,
                )
                if not same and alive and current is None:
                    single_refuses = True  # a single training is attached: its sentence
                elif not same and alive and current is not None:
                    raise ClientRefused(self._refusal(current))
                elif not same:
                    self._reset_job(info)
        if single_refuses:
            return self._ranks[0].wire_metadata(md, peer)
        if info is not None:
            with self._jl:
                session = self._rank_session(info.rank)
                session.gate = partial(self._gate, info.rank)
                session.lockstep = True
                if session._active and session._peer not in ("", peer):
                    raise ClientRefused(
                        f"Rank {info.rank} of this job is already attached from "
                        f"{session._peer}; two processes say they are the same rank."
                    )
                for old in [p for p, r in self._peers.items() if r == info.rank]:
                    del self._peers[old]
                self._peers[peer] = info.rank
                self._dead.pop(info.rank, None)
                self._ended.discard(info.rank)
                self._wp_maps.pop(info.rank, None)
                if self._joined_at is None:
                    self._joined_at = time.monotonic()
        reply = session.wire_metadata(md, peer)
        self._refresh()
        return reply

    def _refusal(self, job: RankInfo) -> str:
        name = f" {job.job}" if job.job else ""
        return (
            f"The debugger is attached to job{name} ({job.world_size} ranks) and serves one "
            "job at a time; stop that job or wait until it ends."
        )

    def wire_wait(
        self,
        md: pb.Metadata,
        is_active: Callable[[], bool],
        peer: str = "",
        on_end: Callable[[Callable[[], None]], bool] | None = None,
    ) -> pb.EventReply:
        with self._jl:
            rank = self._peers.get(peer) if self._job is not None else None
            token = 0
            if rank is not None:
                self._tokens += 1
                token = self._present[rank] = self._tokens
        session = self._session_of(peer)
        if rank is not None:
            self._wake.set()  # this rank may complete a round the others wait in
        try:
            return session.wire_wait(md, is_active, peer, on_end)
        finally:
            if rank is not None:
                with self._jl:
                    if self._present.get(rank) == token:
                        del self._present[rank]

    def wire_heartbeat(self, hb: pb.Heartbeat, peer: str = "") -> pb.EventReply:
        with self._jl:
            known = peer in self._peers
            multi = self._job is not None
        if multi and not known:
            return pb.EventReply(status=pb.EventReply.OK)  # a rank before its SendMetadata
        return self._session_of(peer).wire_heartbeat(hb, peer)

    def wire_graphs(self, protos: list[Any], peer: str = "") -> pb.EventReply:
        return self._session_of(peer).wire_graphs(protos, peer)

    def expected_tensor_keys(self, peer: str = "") -> set[tuple[str, str, str]]:
        return self._session_of(peer).expected_tensor_keys(peer)

    def wire_tensors(self, tensors: list[ReceivedTensor], broken: str = "", peer: str = "") -> None:
        self._session_of(peer).wire_tensors(tensors, broken, peer)

    def wire_tensor_stats(self, summaries: list[Any], broken: str = "", peer: str = "") -> None:
        self._session_of(peer).wire_tensor_stats(summaries, broken, peer)

    def wire_tensor_base(self, bases: list[Any], broken: str = "", peer: str = "") -> None:
        self._session_of(peer).wire_tensor_base(bases, broken, peer)

    def wire_hits(self, hits: list[pb.WatchpointHit], peer: str = "") -> None:
        session = self._session_of(peer)
        with self._jl:
            if self._job is not None and peer in self._peers and (not hits or stops_run(hits)):
                self._stop_pending = True  # a hit on any rank stops them all
        session.wire_hits(hits, peer)

    # ============================================================ rank events
    def _on_rank_event(self, rank: int, event: SessionEvent) -> None:
        """A rank session's event (on its dispatcher thread, no lock held)."""
        with self._jl:
            multi = self._job is not None and rank in self._peers.values()
            if self._job is None and rank != 0:
                return
        if not multi:
            if rank == 0:
                self._post(event)
            return
        if isinstance(event, MetadataChanged):
            state = event.metadata.state
            if state in _ENDED:
                self._rank_ended(rank, event.metadata)
            self._refresh()
        elif isinstance(event, GraphsLoaded):
            self._mirror_all(rank)
            with self._jl:
                shown = rank == self._selected
                first = not self._graphs_shown
                if shown:
                    self._graphs_shown = True
            if shown:
                self._post(GraphsLoaded(event.graphs, first_time=first))
        elif isinstance(event, HitsArrived):
            with self._jl:
                wp_ids = {v: k for k, v in self._wp_maps.get(rank, {}).items()}
            tagged = tuple(
                replace(
                    h,
                    watchpoint_id=wp_ids.get(h.watchpoint_id, h.watchpoint_id),
                    tensor=replace(h.tensor, rank=rank),
                )
                for h in event.hits
            )
            with self._jl:
                self._rank_hits[rank] = tagged
            self._post(HitsArrived(self.hits_now(), event.step, event.partial))
            self._refresh()
        elif isinstance(event, WatchpointsChanged):
            return  # the job's book is the one shown
        elif isinstance(event, Notice):
            self._post(Notice(f"Rank {rank}: {event.message}", event.severity))
        elif isinstance(event, ClientDisconnected):
            self._post(ClientDisconnected(f"Rank {rank}: {event.reason}"))
        else:
            self._post(event)

    def _rank_ended(self, rank: int, meta: Metadata) -> None:
        """A rank finished, was terminated, or died: the barrier stops waiting for it."""
        with self._jl:
            if rank in self._dead or rank in self._ended:
                return
            self._present.pop(rank, None)
            self._grants.pop(rank, None)
            died = meta.state is SessionState.DISCONNECTED
            if died:
                self._dead[rank] = meta.ending.value or "gone"
                others = sorted(self._live())
            else:
                self._ended.add(rank)
        self._wake.set()
        if died:
            sentence = (
                f"Rank {rank} is gone ({meta.ending.value or 'connection lost'}) at step "
                f"{meta.step}; the other rank(s) ({_ranks_text(others) or 'none'}) are no "
                "longer held for it, and their next collective with it fails or waits for "
                "the process group's timeout."
            )
            with self._jl:
                self._note = sentence
            log.warning("%s", sentence)
            self._post(Notice(sentence, "error"))

    def hits_now(self) -> tuple[WatchpointHit, ...]:
        """Every rank's hits in execution order across ranks. A rank's hits arrive in its
        own order, but ranks are compared by where the hit's node runs in the graph: a kernel
        before a parameter (the weights are checked at the step end, after an all-reduce
        spread a fault to every rank), kernels in the graph's order (execution order), then
        the lower rank. The first hit is the first offending rank's."""
        with self._jl:
            per_rank = {r: (self._ranks[r], h) for r, h in self._rank_hits.items() if h}
        keyed = []
        for rank, (session, hits) in per_rank.items():
            positions = {
                (g.name, name): (node.kind is NodeKind.PARAMETER, i)
                for g in session.graphs.values()
                for i, (name, node) in enumerate(g.nodes.items())
            }
            far = (True, len(positions))
            for hit in hits:
                where = positions.get((hit.tensor.graph, hit.tensor.node), far)
                keyed.append(((*where, rank, hit.order), hit))
        keyed.sort(key=lambda pair: pair[0])
        return tuple(hit for _, hit in keyed)

    def _refresh(self) -> None:
        """Recompute the job's header from its ranks' (multi) and publish it if it changed.
        One at a time: two callers (a rank's event, the user's command) must not publish in
        the wrong order, the staler one last."""
        with self._refresh_lock:
            self._refresh_now()

    def _refresh_now(self) -> None:
        with self._jl:
            job = self._job
            if job is None:
                return
            live = sorted(self._live())
            ranks = tuple(sorted(self._peers.values())) or (0,)
            joined = len(self._peers) >= job.world_size or self._missing_said
            sessions = {r: self._ranks[r] for r in ranks if r in self._ranks}
            selected = self._selected
            note = self._note
            dead = dict(self._dead)
        metas = {r: s.metadata for r, s in sessions.items()}
        base = metas.get(selected) or self._ranks[0].metadata
        states = [metas[r].state for r in live if r in metas]
        ending = base.ending
        if not live:
            state = SessionState.DISCONNECTED if dead else SessionState.DONE
            ending = Ending.LOST if dead else base.ending
        elif SessionState.MISMATCH in states:
            state = SessionState.MISMATCH
        elif SessionState.NODE_TOO_LARGE in states:
            state = SessionState.NODE_TOO_LARGE
        elif not joined:
            state = SessionState.LOADING
            waiting = sorted(set(range(job.world_size)) - set(ranks))
            note = note or f"Waiting for rank(s) {_ranks_text(waiting)} to connect."
        elif all(s is SessionState.WAITING for s in states):
            state = SessionState.WAITING
        elif any(s in (SessionState.RUNNING, SessionState.SENDING) for s in states):
            state = SessionState.RUNNING
        else:
            state = SessionState.LOADING
        first = self.first_offending_rank()
        if first is not None and state is SessionState.WAITING and len(ranks) > 1:
            hit = self.hits_now()[0]
            note = note or (
                f"First offending rank: {first} ({hit.tensor.node} at step {hit.step})."
            )
        name = f"job {job.job}" if job.job else "job"
        new = base.with_(
            source=f"{name}, {len(ranks)} of {job.world_size} ranks",
            state=state,
            rank=selected,
            ranks=ranks,
            message=note or base.message,
            ending=ending if state in _ENDED else Ending.NONE,
        )
        with self._jl:
            if new == self._meta:
                return
            self._meta = new
        self._post(MetadataChanged(new))

    # ================================================================ DebugSession
    @property
    def watchpoint_book(self) -> WatchpointBook:
        """The job's own book for a job of several ranks, rank 0's otherwise."""
        if getattr(self, "_job", None) is None and getattr(self, "_ranks", None):
            return self._ranks[0].watchpoint_book
        return self._own_book

    @watchpoint_book.setter
    def watchpoint_book(self, book: WatchpointBook) -> None:
        self._own_book = book

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        caps = self._selected_session().capabilities
        return replace(caps, can_step_node=False) if self._job is not None else caps

    @property
    def metadata(self) -> Metadata:
        if self._job is None:
            return self._ranks[0].metadata
        return self._meta

    @property
    def graphs(self) -> Mapping[str, Graph]:
        return self._selected_session().graphs

    @property
    def hits(self) -> Sequence[WatchpointHit]:
        if self._job is None:
            return self._ranks[0].hits
        return self.hits_now()

    def start(self) -> None:
        """Start listening on `host:port` (raises `ServerStartError` on a busy port)."""
        if self._server is None:
            running = start_server(self, self.host, self.port, self.server_options)
            self._server = running
            self.listener = running.listener
            self.address = running.address
            self.bound_addresses = running.bound_addresses
            self.port = int(running.address.rpartition(":")[2])

    def add_close_hook(self, hook: Callable[[], None]) -> None:
        self._close_hooks.append(hook)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        for session in list(self._ranks.values()):
            session.close()
        if self._server is not None:
            self._server.listener.guard.stop()
        for hook in self._close_hooks:
            try:
                hook()
            except Exception as exc:  # closing must go on whatever a hook does
                log.warning("close hook failed: %s", exc)
        if self._server is not None:
            self._server.server.stop(grace=1.0).wait(5.0)
        self._events.put(None)
        if threading.current_thread() is not self._dispatcher:
            self._dispatcher.join(5.0)

    def select_rank(self, rank: int) -> None:
        with self._jl:
            if self._job is None or rank not in self._peers.values():
                raise SessionError(
                    "This session has a single rank."
                    if self._job is None
                    else f"There is no rank {rank}."
                )
            self._selected = rank
        self._post(GraphsLoaded(dict(self._ranks[rank].graphs), first_time=False))
        self._refresh()

    # ---------------------------------------------------------------- watchpoints
    def create_watchpoint(
        self,
        condition: str,
        params: Mapping[str, float],
        targets: Sequence[str] = (),
        graph_name: str | None = None,
    ) -> Watchpoint:
        if self._job is None:
            return self._ranks[0].create_watchpoint(condition, params, targets, graph_name)
        wp = super().create_watchpoint(condition, params, targets, graph_name)
        with self._mirror_lock:
            for rank in self._live_sorted():
                self._mirror(rank, wp)
        return wp

    def update_watchpoint(
        self,
        watchpoint_id: int,
        params: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> Watchpoint:
        if self._job is None:
            return self._ranks[0].update_watchpoint(watchpoint_id, params, targets, enabled)
        wp = super().update_watchpoint(watchpoint_id, params, targets, enabled)
        for rank in self._live_sorted():
            rid = self._wp_maps.get(rank, {}).get(watchpoint_id)
            if rid is not None:
                self._ranks[rank].update_watchpoint(rid, params, targets, enabled)
        return wp

    def delete_watchpoint(self, watchpoint_id: int) -> None:
        if self._job is None:
            self._ranks[0].delete_watchpoint(watchpoint_id)
            return
        super().delete_watchpoint(watchpoint_id)
        for rank in self._live_sorted():
            rid = self._wp_maps.get(rank, {}).pop(watchpoint_id, None)
            if rid is not None:
                self._ranks[rank].delete_watchpoint(rid)

    def _live_sorted(self) -> list[int]:
        with self._jl:
            return sorted(self._live())

    def _mirror(self, rank: int, wp: Watchpoint) -> None:
        """Create the job's watchpoint `wp` on rank `rank` and remember its id there."""
        session = self._ranks[rank]
        if not session.graphs:
            return  # given with the rest when its graphs arrive (`_mirror_all`)
        with self._jl:
            if wp.id in self._wp_maps.get(rank, {}):
                return
        try:
            mine = session.create_watchpoint(wp.condition.id, wp.params, wp.targets, wp.graph_name)
            if not wp.enabled:
                session.update_watchpoint(mine.id, enabled=False)
        except Exception as exc:  # a rank whose graph differs: said, the others go on
            self._post(Notice(f"Rank {rank}: watchpoint {wp.id} was not set: {exc}", "warning"))
            return
        with self._jl:
            self._wp_maps.setdefault(rank, {})[wp.id] = mine.id

    def _mirror_all(self, rank: int) -> None:
        """A rank's graphs arrived: give it every watchpoint of the job it lacks."""
        with self._mirror_lock:
            for wp in self._own_book.all():
                self._mirror(rank, wp)

    def _watch_graph(self, graph_name: str | None) -> str | None:
        return self._selected_session()._watch_graph(graph_name)

    def _check_targets(self, watchpoint: Watchpoint, targets_changed: bool) -> None:
        self._selected_session()._check_targets(watchpoint, targets_changed)

    def _forget_watchpoint(self, watchpoint_id: int) -> None:
        with self._jl:
            for rank, hits in self._rank_hits.items():
                self._rank_hits[rank] = tuple(h for h in hits if h.watchpoint_id != watchpoint_id)

    # -------------------------------------------------------------------- control
    def _all_live(self) -> list[OnlineSession]:
        with self._jl:
            return [self._ranks[r] for r in sorted(self._live())]

    def _require_job_waiting(self, what: str) -> list[OnlineSession]:
        if self._meta.state is not SessionState.WAITING:
            raise SessionError(f"Cannot {what} now: the job is {self._meta.state.value}.")
        return self._all_live()

    def step(self, count: int = 1) -> None:
        if self._job is None:
            self._ranks[0].step(count)
            return
        for session in self._require_job_waiting("run the training"):
            session.step(count)
        self._refresh()  # running now: a caller reading the state at once must not see waiting

    def continue_(self) -> None:
        if self._job is None:
            self._ranks[0].continue_()
            return
        for session in self._require_job_waiting("run the training"):
            session.continue_()
        self._refresh()

    def recheck(self) -> None:
        if self._job is None:
            self._ranks[0].recheck()
            return
        for session in self._require_job_waiting("recheck the watchpoints"):
            session.recheck()
        self._refresh()

    def pause(self) -> None:
        if self._job is None:
            self._ranks[0].pause()
            return
        if self._meta.state not in (SessionState.RUNNING, SessionState.SENDING):
            raise SessionError("Pause is only possible while the training is running.")
        with self._jl:
            self._stop_pending = True  # every rank stops at the next round
        self._wake.set()

    def terminate(self) -> None:
        if self._job is None:
            self._ranks[0].terminate()
            return
        sessions = self._all_live()
        if not sessions:
            raise SessionError("There is no training to terminate.")
        with self._jl:
            self._terminating = True
        for session in sessions:
            with contextlib.suppress(SessionError):  # that rank ended meanwhile
                session.terminate()
        self._wake.set()

    def step_node(self, target: str | None = None) -> None:
        if self._job is None:
            self._ranks[0].step_node(target)
            return
        raise SessionError(
            "Node stepping is off in a job of several ranks: a rank held at a kernel would "
            "leave the others waiting in a collective."
        )

    # -------------------------------------------------------------------- tensors
    def _session_for(self, ref: TensorRef) -> OnlineSession:
        if self._job is None:
            return self._ranks[0]
        with self._jl:
            session = self._ranks.get(ref.rank) if ref.rank in self._peers.values() else None
        return session or self._selected_session()

    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        return self._session_for(ref).tensor(ref, previous)

    def tensor_statistics(self, ref: TensorRef, previous: bool = False) -> WireStatistics | None:
        return self._session_for(ref).tensor_statistics(ref, previous)

    def tensor_base(self, ref: TensorRef, previous: bool = False) -> TensorBaseInfo | None:
        return self._session_for(ref).tensor_base(ref, previous)

    # ================================================================= internals
    def _post(self, event: SessionEvent) -> None:
        self._events.put(event)

    def _dispatch(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            try:
                self.emit(event)
            except Exception as exc:  # a broken listener must not stop the others' events
                log.warning("session listener failed on %s: %s", type(event).__name__, exc)


def _wants_to_run(session: OnlineSession) -> bool:
    """Whether `session`'s next answer lets its training run (with its lock held)."""
    commands = session._commands
    if commands:
        head = commands[0]
        return head.WhichOneof("cmd") == "run_cmd" and head.run_cmd.run_level in ("step", "node")
    return session._remaining != 0 or bool(session._target_node)


def _ranks_text(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks)
