"""`OnlineSession`: the debugger side of a live training, as a `DebugSession`.

The state machine follows MindInsight's server (spec §2.5–§2.13): the training's `WaitCMD`
long-polls a command queue fed by the user's actions; step N and continue are delivered as
repeated single steps (MindSpore ignores `run_steps`) and stop at hits, except at a batch of
error-code-4-only hits (no previous step value yet); pause is never forwarded; watchpoint
edits are sent as a batch of SetCMDs right before the next run or recheck; tensor values are
fetched with ViewCMDs whose answers arrive on separate streams and are paired with the
request. The gRPC transport (`server.py`) calls the `wire_*` methods; the TUI calls the
`DebugSession` methods. Events go out on a dispatcher thread so neither side ever blocks the
other (a listener may call back into the session).

The seams live in modules of their own: the version rule (`versions.py`: every MindSpore
version is accepted by default, a warning is logged, posted as a `Notice` and kept as the
header's banner line for the session; `--strict-version` applies MindInsight's rule),
ViewCMD requests and their pairing (`views.py`), the SetCMD batch and the hits coming back
(`wire_watchpoints.py`), the heartbeat watchdog (`heartbeat.py`) and the watch on the
training's connection between its calls (`peer_link.py`). What stays here is the
state machine that ties them together. Watchpoint create/update/delete is DebugSession's
(core/watchpoint_book.py); the hooks below only say what is online about them.

Clients whose `ms_version` starts with `torch-` are our own PyTorch adapter. For those clients
only, step N / continue send the real remaining count in `run_steps`
(MindSpore ignores it; MindSpore-like clients keep getting `run_steps=1`, one WaitCMD per
step): a WaitCMD round trip per step would be most of the debugger's cost on a small model.
The PyTorch client runs on its own for at most that many step ends, but comes back after a
hit or ~0.1 s whatever its budget, so pause and terminate still take effect promptly; the
steps it ran without asking are taken off the remaining count when it next reports
`cur_step`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph import Graph, NodeKind
from tuidebug.core.hit_rules import stops_run
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
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoint_book import WatchpointChange
from tuidebug.core.watchpoints import resolve_targets
from tuidebug.online.heartbeat import HEARTBEAT_LIMITS, HeartbeatWatchdog
from tuidebug.online.peer_link import ConnectionWatch
from tuidebug.online.server import ClientRefused, RunningServer, start_server
from tuidebug.online.versions import TORCH_VERSION_PREFIX, check_version, parse_strict_version
from tuidebug.online.views import (
    TensorBaseInfo,
    ViewRequests,
    WireStatistics,
    base_info,
    decode_tensor,
    is_view_of,
    tensor_request,
    wire_statistics,
)
from tuidebug.online.wire_watchpoints import SetCommands, find_node

if TYPE_CHECKING:
    from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
    from tuidebug.online.server import EventListener, ReceivedTensor, ServerOptions

log = logging.getLogger("tuidebug.online")

MAX_RUN_STEPS = 2**31 - 1

_OK = pb.EventReply.OK
_FAILED = pb.EventReply.FAILED


class OnlineSession(DebugSession):
    """A live training session served over gRPC (spec §2)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 50051,
        *,
        server_options: ServerOptions | None = None,
        tensor_timeout: float = 120.0,
        wait_slice: float = 0.5,
        heartbeat_limits: tuple[float, float] = HEARTBEAT_LIMITS,
        heartbeat_scale: float = 1.0,
        max_graph_nodes: int | None = None,
        strict_version: str | None = None,
    ) -> None:
        """`strict_version` ("X.Y"): MindInsight X.Y's version rule instead of accepting
        every MindSpore (module docstring); ValueError when malformed.
        `heartbeat_limits`/`heartbeat_scale` are test hooks: the watchdog expects a
        heartbeat every `(period + 0.5) * heartbeat_scale` seconds."""
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        super().__init__(lock=self._lock)
        self.host = host
        self.port = port
        self.server_options = server_options
        self.tensor_timeout = tensor_timeout
        self.wait_slice = wait_slice
        self.max_graph_nodes = max_graph_nodes  # None = the graph reader's limit
        self.strict_version = (
            None if strict_version is None else parse_strict_version(strict_version)
        )
        self._version_warning = ""  # this training's version warning (wire_metadata)
        self.address = ""
        # what the server listens on (0.0.0.0 also means IPv6 where the machine has it)
        self.bound_addresses: tuple[str, ...] = ()
        self.listener: EventListener | None = None  # the gRPC servicer (its limits, counters)
        self._server: RunningServer | None = None
        self._close_hooks: list[Callable[[], None]] = []

        self._closed = False

        self._meta = Metadata(mode="online", source=f"{host}:{port}")
        self._generation = 0
        self._active = False  # a client session whose WaitCMDs we answer
        # the gRPC peer ("ipv4:host:port") of that training: one training at a time is
        # served; another is refused until this one is gone (`wire_metadata`)
        self._peer = ""
        self._graphs: dict[str, Graph] = {}
        self._graphs_pending = False  # received, not yet published (spec §2.4 receive_graph)
        self._published_once = False
        self._commands: deque[pb.EventReply] = deque()
        self._remaining = 0  # steps still to send one by one; -1 = continue
        # our PyTorch client: run commands carry the remaining count (module docstring)
        self._free_running = False
        # steps the client had ended when it was last given a step budget (free running)
        self._free_base: int | None = None
        self._target_node = ""
        self._initial = True  # the client is still in its initial suspension
        self._waiter = 0  # ticket of the WaitCMD allowed to take commands
        self._last_step = 0
        self._last_node = ""
        self._views = ViewRequests(self._cond)
        self._tensor_cache: dict[tuple[str, str, str, int], np.ndarray | None] = {}

        self._set_commands = SetCommands()
        self._hits: list[WatchpointHit] = []
        self._received_hits: list[pb.WatchpointHit] = []

        self._watchdog = HeartbeatWatchdog(
            self._cond, self._heartbeats_lost, heartbeat_limits, heartbeat_scale
        )
        # a connection closed between calls is seen from the kernel, not after 3 heartbeats
        self._link = ConnectionWatch(self._cond, self._connection_closed)
        self._refused_peers: set[str] = set()
        # job.py: its barrier (False holds a WaitCMD); one WaitCMD per step (no free running)
        self.gate: Callable[[pb.Metadata], bool] | None = None
        self.lockstep = False

        self._events: queue.SimpleQueue[SessionEvent | None] = queue.SimpleQueue()
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="tuidebug-online-events", daemon=True
        )
        self._dispatcher.start()

    # ================================================================ DebugSession
    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        backend = self._meta.backend
        return Capabilities(
            live=True,
            can_step=True,
            can_continue=True,
            can_pause=True,
            can_terminate=True,
            can_step_node=backend == "GPU",
            can_reset_step=False,
            can_compare_previous=True,
            step_zero_has_values=True,
            weight_init_only_at_step_zero=True,  # spec §2.6: at the initial suspension only
        )

    @property
    def metadata(self) -> Metadata:
        return self._meta

    @property
    def graphs(self) -> Mapping[str, Graph]:
        with self._lock:
            return dict(self._graphs)

    @property
    def hits(self) -> Sequence[WatchpointHit]:
        with self._lock:
            return tuple(self._hits)

    def start(self) -> None:
        """Start listening on `host:port` (raises `ServerStartError` on a busy port)."""
        if self._server is None:
            running = start_server(self, self.host, self.port, self.server_options)
            self._server = running  # the session owns the server from now on
            self.listener = running.listener
            self.address = running.address
            self.bound_addresses = running.bound_addresses
            self.port = int(running.address.rpartition(":")[2])
            self._set_meta(source=running.address)

    def add_close_hook(self, hook: Callable[[], None]) -> None:
        """Run `hook` on `close()` (e.g. stop a simulator started beside the server)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._watchdog.stop()
            self._link.stop()
            self._views.fail("The debugger was closed.")
            self._cond.notify_all()
        if self._server is not None:
            self._server.listener.guard.stop()  # no call may wait on the session any more
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

    # ---------------------------------------------------------------- watchpoints
    # create/update/delete are DebugSession's (the watchpoint book, under `_lock`); these
    # hooks say what is online about them: a watchpoint lives in one graph (the first when
    # none is named), its targets are checked when they are set, and every change waits in
    # `_set_commands` for the next SetCMD batch (spec §2.7).
    def _watch_graph(self, graph_name: str | None) -> str | None:
        return self._graph_for(graph_name).name

    def _check_targets(self, watchpoint: Watchpoint, targets_changed: bool) -> None:
        if targets_changed:  # raises for unknown targets
            resolve_targets(
                watchpoint.condition, watchpoint.targets, self._graph_for(watchpoint.graph_name)
            )

    def _watchpoints_changed(self, change: WatchpointChange) -> None:
        wp = change.watchpoint
        if wp is not None and change.kind in ("created", "updated"):
            self._set_commands.changed(wp.id)
        elif wp is not None and change.kind == "deleted":
            self._set_commands.removed(wp.id)
        self._post(WatchpointsChanged(change.watchpoints))

    def _forget_watchpoint(self, watchpoint_id: int) -> None:
        self._hits = [h for h in self._hits if h.watchpoint_id != watchpoint_id]
        self._post(HitsArrived(tuple(self._hits), self._meta.step))

    def _graph_for(self, graph_name: str | None) -> Graph:
        if not self._graphs:
            raise SessionError("No graph has been received from the training yet.")
        if graph_name is None:
            return next(iter(self._graphs.values()))
        graph = self._graphs.get(graph_name)
        if graph is None:
            raise SessionError(f"There is no graph named {graph_name}.")
        return graph

    # -------------------------------------------------------------------- control
    def step(self, count: int = 1) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RUN_STEPS:
            raise SessionError(f"The step count must be between 1 and {MAX_RUN_STEPS}.")
        self._run(count)

    def continue_(self) -> None:
        """Run until a step has hits. Like offline, hits that are all error code 4 ("the
        previous step value cannot be found") do not stop it; they are still published."""
        self._run(-1)

    def _run(self, count: int) -> None:
        with self._cond:
            self._require_waiting("run the training")
            batch = self._watchpoint_batch()
            self._commands.extend(batch)
            if batch and self._initial:
                # spec §2.6: the initial-suspension recheck is what evaluates
                # weight_initialization (INIT is checked only then)
                self._commands.append(_run_cmd("recheck"))
            self._remaining = count - 1 if count > 0 else -1
            self._commands.append(_run_cmd("step", steps=self._run_steps(count)))
            self._target_node = ""
            self._set_state(SessionState.SENDING, message="")
            self._cond.notify_all()

    def _run_steps(self, count: int) -> int:
        """`run_steps` for a step command covering `count` steps (-1: continue): the real
        count for our PyTorch client, 1 for MindSpore (which ignores it, spec §2.6)."""
        if not self._free_running:
            return 1
        return count if count > 0 else MAX_RUN_STEPS

    def pause(self) -> None:
        with self._cond:
            if self._closed:
                raise SessionError("The session is closed.")
            if self._meta.state not in (SessionState.RUNNING, SessionState.SENDING):
                raise SessionError("Pause is only possible while the training is running.")
            # spec §2.6: never forwarded; the training stops at its next suspension point
            self._commands = deque(c for c in self._commands if c.WhichOneof("cmd") != "run_cmd")
            self._remaining = 0
            self._target_node = ""
            self._set_meta(message="Pausing at the next suspension point.")
            self._cond.notify_all()

    def terminate(self) -> None:
        with self._cond:
            if self._closed:
                raise SessionError("The session is closed.")
            if not self._active:
                raise SessionError("There is no training to terminate.")
            self._commands.clear()
            self._remaining = 0
            self._target_node = ""
            self._commands.append(pb.EventReply(status=_OK, exit=True))
            self._set_meta(message="Terminating the training.")
            if self._meta.state is SessionState.WAITING:
                self._set_state(SessionState.SENDING)
            self._cond.notify_all()

    def halt(self) -> None:
        """End a step N / continue here (with `_cond` held): another rank of the job hit."""
        self._remaining = 0
        self._target_node = ""
        self._commands = deque(c for c in self._commands if c.WhichOneof("cmd") != "run_cmd")

    def step_node(self, target: str | None = None) -> None:
        with self._cond:
            if self._meta.backend != "GPU":
                raise SessionError("Node stepping is only possible on the GPU backend.")
            self._require_waiting("step to a node")
            name = ""
            if target is not None:
                node = find_node(self._graphs, target)
                if node is None or node.kind is not NodeKind.OPERATOR:
                    raise SessionError(f"{target} is not a kernel of the graph.")
                name = node.name
            self._commands.extend(self._watchpoint_batch())
            self._commands.append(_run_cmd("node", node_name=""))
            self._remaining = 0
            self._target_node = name
            self._set_state(SessionState.SENDING, message="")
            self._cond.notify_all()

    def recheck(self) -> None:
        with self._cond:
            self._require_waiting("recheck the watchpoints")
            self._commands.extend(self._watchpoint_batch())
            self._commands.append(_run_cmd("recheck"))
            self._set_state(SessionState.SENDING, message="")
            self._cond.notify_all()

    def _require_waiting(self, what: str) -> None:
        if self._closed:
            raise SessionError("The session is closed.")
        state = self._meta.state
        if state is SessionState.MISMATCH:
            raise SessionError("The MindSpore version does not match; only terminate is possible.")
        if state is SessionState.NODE_TOO_LARGE:
            raise SessionError("The graph is too large to show; only terminate is possible.")
        if state is not SessionState.WAITING:
            raise SessionError(f"Cannot {what} now: the training is {state.value}.")

    # -------------------------------------------------------------------- tensors
    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        request = self._tensor_request(ref, previous)
        if request is None:
            return None
        with self._lock:
            key = (request.node_name, request.slot, request.iter, self._meta.step)
            if key in self._tensor_cache:
                return self._tensor_cache[key]
        (received,) = self._request_view([request], pb.ViewCMD.value)
        limit = self.server_options.max_tensor_bytes if self.server_options else 1 << 30
        array = decode_tensor(received, ref, limit, request.node_name)
        with self._lock:
            if self._meta.step == key[3]:
                self._tensor_cache[key] = array
        return array

    def tensor_statistics(self, ref: TensorRef, previous: bool = False) -> WireStatistics | None:
        """The `statistics` level of a ViewCMD; None when the training has no such tensor."""
        request = self._tensor_request(ref, previous)
        if request is None:
            return None
        (summary,) = self._request_view([request], pb.ViewCMD.statistics)
        return wire_statistics(summary)

    def tensor_base(self, ref: TensorRef, previous: bool = False) -> TensorBaseInfo | None:
        """The `base` level of a ViewCMD (type, shape, size); None when not found."""
        request = self._tensor_request(ref, previous)
        if request is None:
            return None
        (base,) = self._request_view([request], pb.ViewCMD.base)
        return None if base is None else base_info(base)

    def _tensor_request(self, ref: TensorRef, previous: bool) -> graph_pb.TensorProto | None:
        with self._lock:
            node = find_node(self._graphs, ref.node, ref.graph)
            step = self._meta.step
        return tensor_request(ref, previous, node, step)

    def _request_view(self, requests: list[graph_pb.TensorProto], level: int) -> list[Any]:
        """Queue one ViewCMD and block until its answer stream arrived."""

        def ready() -> None:
            if self._closed:
                raise SessionError("The session is closed.")
            if self._meta.state is not SessionState.WAITING:
                raise SessionError(
                    "Tensor values can only be read while the training is suspended."
                )

        def withdraw(requests: list[graph_pb.TensorProto]) -> None:
            self._commands = deque(c for c in self._commands if not is_view_of(c, requests))

        return self._views.request(
            requests,
            level,
            ready=ready,
            send=lambda reply: self._commands.append(reply),
            withdraw=withdraw,
            timeout=self.tensor_timeout,
        )

    # ====================================================================== wire side
    def wire_metadata(self, md: pb.Metadata, peer: str = "") -> pb.EventReply:
        """Spec §2.3, with this debugger's policy for a second training: one training is
        served at a time. While the attached one is alive (connected, not finished, not
        terminated, heartbeats not lost), another connection's SendMetadata is refused
        (`ClientRefused`, a notice here) and its goodbye ignored; once the attached one is
        gone, the next SendMetadata starts a new session. The same connection saying hello
        again is the same training restarting its handshake (a new session, as spec §2.3)."""
        with self._cond:
            if self._closed:
                return pb.EventReply(status=_FAILED)
            if md.training_done:
                # spec §2.3: the goodbye message, no version handling; only the attached
                # training's goodbye ends the session
                if self._peer and peer and peer != self._peer:
                    log.info("goodbye from %s, which is not the attached training: ignored", peer)
                    return pb.EventReply(status=_OK)
                if self._active or self._meta.state is SessionState.DISCONNECTED:
                    self._active = False
                    self._watchdog.stop()
                    self._link.stop()
                    self._views.fail("The training finished.")
                    self._set_meta(
                        state=SessionState.DONE,
                        step=md.cur_step,
                        message=Ending.FINISHED.sentence,
                        ending=Ending.FINISHED,
                    )
                    self._cond.notify_all()
                return pb.EventReply(status=_OK)
            if self._active and self._peer and peer and peer != self._peer:
                self._drop_if_closed()
            if self._active and self._peer and peer and peer != self._peer:
                self._refused(peer)
                raise ClientRefused(
                    f"The debugger is attached to another training ({self._peer}) and serves "
                    "one training at a time; stop that training or wait until it ends."
                )
            previous, was_shown = self._peer, self._published_once
            self._new_session(md, peer)
            if was_shown and previous and previous != peer:
                self._post(
                    Notice(
                        f"A new training connected from {peer or 'an unknown address'}; "
                        f"it replaces the one from {previous}, which is gone.",
                        "information",
                    )
                )
            torch = md.ms_version.startswith(TORCH_VERSION_PREFIX)
            self._free_running = torch and not self.lockstep
            check = check_version(md.ms_version, self.strict_version)
            if not check.matched:
                self._set_meta(state=SessionState.MISMATCH, message=check.warning)
                self._post(Notice(check.warning, "error"))
            elif check.warning:
                # once per training: the log, a notice, and the header's banner line
                # whenever it has nothing else to say (`_set_meta`)
                log.warning("%s", check.warning)
                self._version_warning = check.warning
                self._set_meta(message=check.warning)
                self._post(Notice(check.warning, "warning"))
            self._cond.notify_all()
            # spec §1.6: the oneof member must be *set*, even to false
            return pb.EventReply(status=_OK, version_matched=check.matched)

    def _refused(self, peer: str) -> None:
        """A notice once per refused connection (a peer retrying must not flood the TUI)."""
        log.warning("a second training (%s) was refused: %s is attached", peer, self._peer)
        if peer in self._refused_peers:
            return
        if len(self._refused_peers) >= 64:
            self._refused_peers.clear()
        self._refused_peers.add(peer)
        self._post(
            Notice(
                f"A second training ({peer}) tried to connect and was refused: this debugger "
                f"serves one training at a time, and the one from {self._peer} is attached.",
                "warning",
            )
        )

    def stream_refusal(self, peer: str, graphs: bool = False) -> str:
        """Why a stream from `peer` is not served (one sentence), or "": only the attached
        training's streams are read; a graph may also start a session when none is
        attached (a graph without SendMetadata)."""
        with self._lock:
            if self._closed:
                return "The debugger is closing."
            if self._active and self._peer and peer and peer != self._peer:
                self._drop_if_closed()
            if self._active and self._peer and peer and peer != self._peer:
                return (
                    f"The debugger is attached to another training ({self._peer}) and serves "
                    "one training at a time."
                )
            if not graphs and not self._active:
                return "No training is attached to the debugger; send SendMetadata first."
            return ""

    def _new_session(self, md: pb.Metadata, peer: str) -> None:
        """Spec §2.3: a SendMetadata always starts a new training session."""
        if self._active:
            log.info("the training restarted its handshake; the previous session is reset")
        self._views.fail("A new training connected.")
        self._peer = peer
        self._refused_peers.clear()
        self._link.follow(peer)
        if self._watchdog.follows_another(peer):
            self._watchdog.stop()  # it follows another connection's heartbeats
        self._version_warning = ""
        self._generation += 1
        self._active = True
        # MindSpore's heartbeat thread starts before SendMetadata: a running watchdog keeps
        # watching (its next beat may be a full period away) with a fresh allowance
        self._watchdog.refresh()
        self._graphs = {}
        self._graphs_pending = False
        self._published_once = False
        self._commands.clear()
        self._remaining = 0
        self._free_running = False
        self._free_base = None
        self._target_node = ""
        self._initial = True
        self._last_step = md.cur_step
        self._last_node = md.cur_node
        self._tensor_cache.clear()
        self.watchpoint_book.clear()  # publishes the empty list when there were some
        self._set_commands.reset()
        self._hits = []
        self._received_hits = []
        self._set_meta(
            source=peer or self._meta.source,
            state=SessionState.PENDING,
            step=md.cur_step,
            backend=md.backend or "Ascend",  # MindInsight's default (spec §1.2)
            device=md.device_name.split(":", 1)[0],
            ms_version=md.ms_version,
            cur_node=md.cur_node,
            graph_names=(),
            message="",
            ending=Ending.NONE,
        )

    def wire_graphs(self, protos: list[graph_pb.GraphProto], peer: str = "") -> pb.EventReply:
        from tuidebug.core.graph_pb import GraphFileError, GraphTooLargeError, graph_from_proto

        with self._lock:
            if self._closed:
                return pb.EventReply(status=_FAILED)
            if self._active and self._peer and peer and peer != self._peer:
                return pb.EventReply(status=_FAILED)  # another training's graph
            if self._meta.state is SessionState.MISMATCH:
                return pb.EventReply(status=_OK)  # spec §2.3: ignored until terminate
            generation = self._generation
        graphs: dict[str, Graph] = {}
        try:
            for proto in protos:
                if self.max_graph_nodes is None:
                    graph = graph_from_proto(proto)
                else:
                    graph = graph_from_proto(proto, limit=self.max_graph_nodes)
                graphs[graph.name] = graph
        except GraphTooLargeError as exc:
            with self._lock:
                self._set_meta(state=SessionState.NODE_TOO_LARGE, message=str(exc))
            self._post(Notice(str(exc), "error"))
            return pb.EventReply(status=_OK)
        except GraphFileError as exc:  # past a cap (5M dimensions…): refused, and said
            self._post(Notice(f"The training's graph was refused: {exc}", "error"))
            return pb.EventReply(status=_FAILED)
        with self._cond:
            if generation != self._generation:
                return pb.EventReply(status=_FAILED)
            if not self._active:  # a graph without SendMetadata: accept it as a session
                self._active = True
                self._peer = peer
                self._link.follow(peer)
            self._graphs = graphs
            self._graphs_pending = True
            self._remaining = 0  # spec §2.6: a new graph clears the run state
            self._target_node = ""
            self._set_meta(state=SessionState.LOADING, graph_names=tuple(graphs))
            self._cond.notify_all()
        return pb.EventReply(status=_OK)

    def wire_wait(
        self,
        md: pb.Metadata,
        is_active: Callable[[], bool],
        peer: str = "",
        on_end: Callable[[Callable[[], None]], bool] | None = None,
    ) -> pb.EventReply:
        """Spec §2.5: the long poll. `on_end` registers a callback for the end of this call
        (gRPC's `context.add_callback`): a WaitCMD that ends without our answer means its
        connection is gone, so the training shows as disconnected at once and pending
        commands fail, heartbeats or not."""
        with self._cond:
            if not self._active or self._closed:
                return pb.EventReply(status=_FAILED)
            if self._peer and peer and peer != self._peer:
                return pb.EventReply(status=_FAILED)  # a refused training (spec §2.5 retries)
            # a refused client (version, graph size) waits for terminate like MindInsight's
            # mismatch state, instead of being failed into an exit loop
            mismatch = self._meta.state in (SessionState.MISMATCH, SessionState.NODE_TOO_LARGE)
            if not mismatch and not self._graphs:
                return pb.EventReply(status=_FAILED)  # spec §2.5: no graph yet
            self._waiter += 1
            ticket = self._waiter
            generation = self._generation
            self._cond.notify_all()  # an older WaitCMD (a dead connection) gives way
            if not mismatch:
                self._suspended(md)
            answered = False

            def ended() -> None:
                with self._cond:
                    if not answered:
                        self._wait_lost(ticket, generation)

            if on_end is not None and not on_end(ended):
                self._wait_lost(ticket, generation)  # the call was over before we looked
            try:
                while True:
                    if self._closed or generation != self._generation or ticket != self._waiter:
                        return pb.EventReply(status=_FAILED)
                    if not is_active():
                        self._wait_lost(ticket, generation)
                        return pb.EventReply(status=_FAILED)  # nobody is listening any more
                    reply = self._next_command(md)
                    if reply is not None:
                        return reply
                    self._cond.wait(self.wait_slice)
            finally:
                answered = True

    def _wait_lost(self, ticket: int, generation: int) -> None:
        """The current WaitCMD ended without an answer: the training's connection is gone
        (a newer WaitCMD of the same training replaced it otherwise)."""
        if (
            ticket == self._waiter
            and generation == self._generation
            and self._active
            and not self._closed
        ):
            self._client_gone(Ending.CLOSED)

    def _suspended(self, md: pb.Metadata) -> None:
        """The client reports a suspension point: new step/node, graph and hit publishing."""
        new_step = md.cur_step > self._last_step
        new_node = md.cur_node != self._last_node
        if new_step or new_node:
            self._tensor_cache.clear()
        if new_step:
            self._hits = []  # spec §2.5: hits belong to a step
        if self._free_base is not None:
            # a free-running client ran `ran` step ends on the budget we gave it; the first
            # was already taken off `_remaining` when the command was sent
            ran = _steps_ended(md.cur_step, md.cur_node) - self._free_base
            self._free_base = None
            if self._remaining > 0 and ran > 1:
                self._remaining = max(0, self._remaining - (ran - 1))
        self._last_step = max(self._last_step, md.cur_step)
        self._last_node = md.cur_node
        self._views.unanswered()
        changes: dict[str, Any] = {"step": md.cur_step, "cur_node": md.cur_node}
        if md.backend:
            changes["backend"] = md.backend
        self._set_meta(**changes)
        if self._graphs_pending:
            self._graphs_pending = False
            self._post(GraphsLoaded(dict(self._graphs), first_time=not self._published_once))
            self._published_once = True
        if self._received_hits:
            received, self._received_hits = self._received_hits, []
            self._hits.extend(
                self._set_commands.hits(
                    received, self.watchpoint_book, self._graphs, self._meta.step, len(self._hits)
                )
            )
            self._post(HitsArrived(tuple(self._hits), md.cur_step))
        elif new_step:
            self._post(HitsArrived((), md.cur_step))

    def _next_command(self, md: pb.Metadata) -> pb.EventReply | None:
        """What to answer a suspended client now, or None to keep it waiting."""
        if self.gate is not None and not self.gate(md):
            return None
        if self._commands:
            reply = self._commands.popleft()
            self._delivered(reply)
            return reply
        state = self._meta.state
        if state in (SessionState.MISMATCH, SessionState.NODE_TOO_LARGE):
            return None
        if self._remaining != 0:
            # spec §2.6: step N / continue are single steps sent one by one (a free-running
            # client is given all that remain)
            steps = self._run_steps(self._remaining)
            if self._remaining > 0:
                self._remaining -= 1
            self._note_budget()
            self._set_state(SessionState.RUNNING)
            return _run_cmd("step", steps=steps)
        if self._target_node:
            if md.cur_node != self._target_node:
                self._set_state(SessionState.RUNNING)
                return _run_cmd("node", node_name="")
            self._target_node = ""
        if state is not SessionState.WAITING and state is not SessionState.DONE:
            self._set_state(SessionState.WAITING, message="")
        return None

    def _note_budget(self) -> None:
        """A step command leaves now: remember where the client's step budget starts."""
        if self._free_running:
            self._free_base = _steps_ended(self._last_step, self._last_node)

    def _delivered(self, reply: pb.EventReply) -> None:
        kind = reply.WhichOneof("cmd")
        if kind == "run_cmd":
            level = reply.run_cmd.run_level
            if level == "recheck":
                self._hits = []
                self._post(HitsArrived((), self._meta.step))
            else:
                self._initial = False
                if level == "step":
                    self._note_budget()
            self._set_state(SessionState.RUNNING, message="")
        elif kind == "exit":
            self._active = False
            self._watchdog.stop()
            self._set_meta(
                state=SessionState.DONE,
                message=Ending.TERMINATED.sentence,
                ending=Ending.TERMINATED,
            )
        elif kind == "view_cmd":
            self._views.delivered()
        elif kind == "set_cmd":
            pass  # recorded when the batch was built

    # ------------------------------------------------------------ tensor answers
    def expected_tensor_keys(self, peer: str = "") -> set[tuple[str, str, str]]:
        return self._views.expected_keys()

    def wire_tensors(self, tensors: list[ReceivedTensor], broken: str = "", peer: str = "") -> None:
        self._views.answer_values(tensors, broken)

    def wire_tensor_stats(self, summaries: list[Any], broken: str = "", peer: str = "") -> None:
        self._views.answer_by_position(pb.ViewCMD.statistics, summaries, "SendTensorStats", broken)

    def wire_tensor_base(self, bases: list[Any], broken: str = "", peer: str = "") -> None:
        self._views.answer_by_position(pb.ViewCMD.base, bases, "SendTensorBase", broken)

    # ----------------------------------------------------------------- hits
    def wire_hits(self, hits: list[pb.WatchpointHit], peer: str = "") -> None:
        with self._cond:
            if not self._active:
                return
            # spec §2.6: any hit stops step N / continue / run-to-node — except a batch of
            # "previous step value cannot be found" errors only (error code 4): they only
            # say the training has no earlier step to compare with yet, so stopping there
            # would halt every continue at its first step (same policy as offline). They
            # are still published with their step.
            # (an empty hit message stops the run too)
            if not hits or stops_run(hits):
                self._remaining = 0
                self._target_node = ""
                if self._meta.state is SessionState.RUNNING:
                    self._commands = deque(
                        c for c in self._commands if c.WhichOneof("cmd") != "run_cmd"
                    )
            self._received_hits.extend(hits)  # published at the next WaitCMD (new step first)
            self._cond.notify_all()

    def _watchpoint_batch(self) -> list[pb.EventReply]:
        """Spec §2.7: the pending SetCMDs, sent right before a run or recheck."""
        return self._set_commands.batch(self.watchpoint_book, self._graphs, self._meta.rank)

    # -------------------------------------------------------------- heartbeat
    def wire_heartbeat(self, hb: pb.Heartbeat, peer: str = "") -> pb.EventReply:
        """Spec §2.10. Only the attached training's heartbeats keep it alive (before a
        training attaches, the first connection that beats is followed: MindSpore starts
        its heartbeats before SendMetadata); another's are answered and ignored."""
        with self._cond:
            if self._active and self._peer and peer and peer != self._peer:
                return pb.EventReply(status=_OK)
            if not self._watchdog.beat(hb.period, peer):
                return pb.EventReply(status=_FAILED)
        return pb.EventReply(status=_OK)

    def _heartbeats_lost(self) -> None:
        """The watchdog's verdict (with `_cond` held): three heartbeats missed."""
        if self._active:
            self._client_gone(Ending.LOST)

    def _connection_closed(self) -> None:
        """The connection watch's verdict (with `_cond` held): the kernel shows the attached
        training's connection closed, though no call of it was in flight."""
        if self._active:
            self._client_gone(Ending.CLOSED)

    def _drop_if_closed(self) -> None:
        """Another training knocks: the attached one may have closed its connection since
        the watch last looked (with `_lock` held), and must not keep the other out."""
        if self._link.gone(self._peer):
            self._connection_closed()

    def _client_gone(self, ending: Ending) -> None:
        """Reset the protocol state (graphs and hits stay visible until a new training)."""
        reason = ending.sentence
        self._active = False
        self._link.stop()
        self._generation += 1
        self._commands.clear()
        self._remaining = 0
        self._target_node = ""
        self._received_hits = []
        self._views.fail("The training disconnected.")
        self._set_meta(state=SessionState.DISCONNECTED, message=reason, ending=ending)
        self._post(ClientDisconnected(reason))
        self._cond.notify_all()

    def wire_notice(self, message: str) -> None:
        self._post(Notice(message, "warning"))

    # ================================================================= internals
    def _set_state(self, state: SessionState, **changes: Any) -> None:
        self._set_meta(state=state, **changes)

    def _set_meta(self, **changes: Any) -> None:
        with self._lock:
            if changes.get("message") == "" and self._version_warning:
                changes["message"] = self._version_warning  # the banner's resting text
            new = self._meta.with_(**changes)
            if new == self._meta:
                return
            self._meta = new
            self._post(MetadataChanged(new))

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


def _steps_ended(cur_step: int, cur_node: str) -> int:
    """Steps a client has finished at a suspension: at a kernel (GPU node suspension,
    `cur_node` set) `cur_step` is the step in progress, at a step end the one just ended."""
    return cur_step - 1 if cur_node else cur_step


def _run_cmd(level: str, *, steps: int | None = None, node_name: str | None = None) -> Any:
    run = pb.RunCMD(run_level=level)
    if steps is not None:
        run.run_steps = steps
    if node_name is not None:
        run.node_name = node_name  # "" is still "set" (spec §1.6)
    return pb.EventReply(status=_OK, run_cmd=run)
