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

Versions (spec §0, §1.4, §2.3): the wire protocol was the same from MindInsight 1.5 to 2.3,
and MindSpore's online debugger client exists from 1.x through the 2.3 era, so by default
every MindSpore `ms_version` is accepted (`version_matched=true`): 1.5 to 2.x silently;
older versions (no tensor base/statistics replies before MindInsight 1.5's protocol, no
heartbeats before 1.3's, a different graph transfer before 1.1's), versions from 3.0 on
(newer than any MindSpore with an online debugger client) and versions that cannot be read
(empty, `garbage`) with one warning that names what was received: logged, posted as a
`Notice` and kept as the header's banner line for the session (`check_version`).
`strict_version="X.Y"` (`tuidebug online --strict-version X.Y`) applies MindInsight X.Y's own
rule instead (`version_match`): a mismatch gets `version_matched=false` and the training
can only be terminated. Clients whose `ms_version` starts with `torch-` are our own PyTorch
adapter and are accepted without any MindSpore rule.

For those clients only, step N / continue send the real remaining count in `run_steps`
(MindSpore ignores it; MindSpore-like clients keep getting `run_steps=1`, one WaitCMD per
step): a WaitCMD round trip per step would be most of the debugger's cost on a small model.
The PyTorch client runs on its own for at most that many step ends, but comes back after a
hit or ~0.1 s whatever its budget, so pause and terminate still take effect promptly; the
steps it ran without asking are taken off the remaining count when it next reports
`cur_step`.
"""

from __future__ import annotations

import logging
import math
import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.hit_rules import stops_run
from tuidebug.core.session import (
    Capabilities,
    ClientDisconnected,
    DebugSession,
    GraphsLoaded,
    HitsArrived,
    Metadata,
    MetadataChanged,
    Notice,
    SessionError,
    SessionEvent,
    SessionState,
    TensorArrived,
    WatchpointsChanged,
)
from tuidebug.core.tensor import TensorRef, UnsupportedDataTypeError, numpy_dtype
from tuidebug.core.watch_targets import watched_nodes
from tuidebug.core.watchpoint_book import WatchpointChange
from tuidebug.core.watchpoints import resolve_targets

if TYPE_CHECKING:
    import grpc

    from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
    from tuidebug.online.server import EventListener, ReceivedTensor, ServerOptions

log = logging.getLogger("tuidebug.online")

MINDINSIGHT_VERSION = "2.3"  # the last MindInsight; the protocol tuidebug speaks
_VERSION = re.compile(r"(\d+)\.(\d+)", re.ASCII)
TORCH_VERSION_PREFIX = "torch-"
MAX_RUN_STEPS = 2**31 - 1
HEARTBEAT_LIMITS = (5, 3600)  # seconds, MindInsight's accepted `period` range (spec §2.10)
HEARTBEAT_MISSES = 3
# A SetCMD must fit in MindSpore's 4 MiB receive limit (spec §1.6) with room to spare.
MAX_SETCMD_BYTES = 3 * 1024 * 1024 + 512 * 1024

_OK = pb.EventReply.OK
_FAILED = pb.EventReply.FAILED


def parse_version(text: str) -> tuple[int, int] | None:
    """`major.minor` of a version such as `2.2.14`, `2.3.0rc1` or `1.8`; None when `text`
    does not start with two dot-separated numbers."""
    found = _VERSION.match(text.strip())
    return (int(found[1]), int(found[2])) if found else None


def parse_strict_version(text: str) -> str:
    """A `--strict-version` value as `X.Y` (`2.3`, or `2.3.0` which the rule reads the
    same); ValueError with one sentence else."""
    if not re.fullmatch(r"\d{1,4}\.\d{1,4}(\.\d{1,4})?", text.strip(), re.ASCII):
        raise ValueError(f"--strict-version must be a MindInsight version like 2.3, not {text!r}.")
    major, minor = text.strip().split(".")[:2]
    return f"{int(major)}.{int(minor)}"


@dataclass(frozen=True)
class VersionCheck:
    """The answer to a client's `ms_version`: `matched` goes on the wire as
    `version_matched`; `warning` (one sentence, naming the version received) is shown once."""

    matched: bool
    warning: str = ""


def check_version(ms_version: str, strict_version: str | None = None) -> VersionCheck:
    """Spec §2.3 with this debugger's policy (module docstring): every MindSpore version is
    accepted, with a warning for those the MindInsight 1.5–2.3 protocol may not fit;
    `strict_version` = MindInsight's own rule against that MindInsight version."""
    shown = ms_version or "(none)"
    if ms_version.startswith(TORCH_VERSION_PREFIX):
        return VersionCheck(True)
    if strict_version is not None:
        result = version_match(ms_version, strict_version)
        if result == 2:
            return VersionCheck(
                False,
                f"MindSpore {shown} does not match MindInsight {strict_version} "
                "(--strict-version); only terminate is possible.",
            )
        if result == 1:
            return VersionCheck(
                True,
                f"MindSpore {shown} is newer than MindInsight {strict_version} "
                "(--strict-version); continuing.",
            )
        return VersionCheck(True)
    version = parse_version(ms_version)
    if version is None:
        return VersionCheck(
            True,
            f"The training sent MindSpore version {ms_version!r}, which cannot be read; "
            "assuming the MindInsight 1.5–2.3 protocol (if the graph or commands fail, "
            "the training may not be a MindSpore online debugger client).",
        )
    if version < (1, 1):
        return VersionCheck(
            True,
            f"MindSpore {shown} is older than MindInsight 1.1's protocol (graphs were not "
            "sent in chunks, watchpoints had only the NaN/Inf conditions, no heartbeats or "
            "tensor statistics); the graph, watchpoints and tensors may not work.",
        )
    if version < (1, 3):
        return VersionCheck(
            True,
            f"MindSpore {shown} predates MindInsight 1.3's protocol: it sends no heartbeats "
            "(a training that vanishes is not noticed) and ignores graph names in "
            "watchpoints; tensor statistics and sizes (MindInsight 1.5) may not load either.",
        )
    if version < (1, 5):
        return VersionCheck(
            True,
            f"MindSpore {shown} predates MindInsight 1.5's protocol: ViewCMD levels and the "
            "tensor base/statistics replies came with 1.5, so tensor statistics and sizes "
            "may not load (full tensor values still do).",
        )
    if version >= (3, 0):
        return VersionCheck(
            True,
            f"MindSpore {shown} is newer than any MindSpore with an online debugger client "
            "(the last are 2.3-era releases); continuing with the MindInsight 2.3 protocol.",
        )
    return VersionCheck(True)


def version_match(ms_version: str, mi_version: str = MINDINSIGHT_VERSION) -> int:
    """MindInsight's `version_match` (spec §2.3): 0 same major.minor, 1 same major and a newer
    MindSpore minor (accepted with a warning), 2 anything else (mismatch)."""

    def major_minor(text: str) -> tuple[int, int] | None:
        parts = text.strip().split(".")
        try:
            return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        except ValueError:
            return None

    ms, mi = major_minor(ms_version), major_minor(mi_version)
    if ms is None or mi is None or ms[0] != mi[0]:
        return 2
    if ms[1] == mi[1]:
        return 0
    return 1 if ms[1] > mi[1] else 2


@dataclass(frozen=True)
class TensorBaseInfo:
    """The `base` level of a ViewCMD: DataType number, shape, size in bytes."""

    data_type: int
    shape: tuple[int, ...]
    data_size: int


@dataclass(frozen=True)
class WireStatistics:
    """The `statistics` level of a ViewCMD, as the training computed it (spec §3.7).
    `negative_count`/`positive_count` are the wire's `neg_zero_count`/`pos_zero_count`."""

    base: TensorBaseInfo
    is_bool: bool
    max_value: float
    min_value: float
    avg_value: float
    count: int
    negative_count: int
    positive_count: int
    nan_count: int
    neg_inf_count: int
    pos_inf_count: int
    zero_count: int


@dataclass
class _PendingView:
    requests: list[graph_pb.TensorProto]
    level: int
    delivered: bool = False
    done: bool = False
    error: str = ""
    results: list[Any] = field(default_factory=list)


@dataclass
class _WireWatch:
    """What was last sent to the client for a watchpoint, to filter its hits."""

    star: bool  # the node list was too big: sent `*` and filter hits here
    names: frozenset[str]


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
        self.heartbeat_limits = heartbeat_limits
        self.heartbeat_scale = heartbeat_scale
        self.max_graph_nodes = max_graph_nodes  # None = the graph reader's limit
        self.strict_version = (
            None if strict_version is None else parse_strict_version(strict_version)
        )
        self._version_warning = ""  # this training's version warning (wire_metadata)
        self.address = ""
        # what the server listens on (0.0.0.0 also means IPv6 where the machine has it)
        self.bound_addresses: tuple[str, ...] = ()
        self.listener: EventListener | None = None  # the gRPC servicer (its limits, counters)
        self._server: grpc.Server | None = None
        self._close_hooks: list[Callable[[], None]] = []

        self._view_lock = threading.Lock()
        self._closed = False

        self._meta = Metadata(mode="online", source=f"{host}:{port}")
        self._generation = 0
        self._active = False  # a client session whose WaitCMDs we answer
        # the gRPC peer ("ipv4:host:port") of that training: one training at a time is
        # served; another is refused until this one is gone (`wire_metadata`)
        self._peer = ""
        self._hb_peer = ""  # whose heartbeats the watchdog follows
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
        self._view: _PendingView | None = None
        self._tensor_cache: dict[tuple[str, str, str, int], np.ndarray | None] = {}

        self._dirty: dict[int, None] = {}  # created/updated since the last batch (ordered)
        self._deleted: set[int] = set()
        self._on_client: dict[int, _WireWatch] = {}
        self._hits: list[WatchpointHit] = []
        self._received_hits: list[pb.WatchpointHit] = []

        self._hb_stop: threading.Event | None = None
        self._hb_last = 0.0
        self._refused_peers: set[str] = set()

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
        from tuidebug.online.server import start_server

        if self._server is None:
            start_server(self, self.host, self.port, self.server_options)

    def attach_server(
        self, server: grpc.Server, address: str, bound_addresses: tuple[str, ...] = ()
    ) -> None:
        """Called by `start_server`: the session owns the server from now on."""
        self._server = server
        self.address = address
        self.bound_addresses = bound_addresses or (address,)
        port = address.rpartition(":")[2]
        self.port = int(port)
        self._set_meta(source=address)

    def add_close_hook(self, hook: Callable[[], None]) -> None:
        """Run `hook` on `close()` (e.g. stop a simulator started beside the server)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._stop_watchdog()
            self._fail_view("The debugger was closed.")
            self._cond.notify_all()
        for hook in self._close_hooks:
            try:
                hook()
            except Exception as exc:  # closing must go on whatever a hook does
                log.warning("close hook failed: %s", exc)
        if self._server is not None:
            self._server.stop(grace=1.0).wait(5.0)
        self._events.put(None)
        if threading.current_thread() is not self._dispatcher:
            self._dispatcher.join(5.0)

    # ---------------------------------------------------------------- watchpoints
    # create/update/delete are DebugSession's (the watchpoint book, under `_lock`); these
    # hooks say what is online about them: a watchpoint lives in one graph (the first when
    # none is named), its targets are checked when they are set, and every change waits in
    # `_dirty`/`_deleted` for the next SetCMD batch (spec §2.7).
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
            self._dirty[wp.id] = None
        elif wp is not None and change.kind == "deleted":
            self._dirty.pop(wp.id, None)
            self._deleted.add(wp.id)
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

    def step_node(self, target: str | None = None) -> None:
        with self._cond:
            if self._meta.backend != "GPU":
                raise SessionError("Node stepping is only possible on the GPU backend.")
            self._require_waiting("step to a node")
            name = ""
            if target is not None:
                node = self._find_node(target)
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
        array = self._decode(received, ref)
        with self._lock:
            if self._meta.step == key[3]:
                self._tensor_cache[key] = array
        if array is not None:
            self._post(TensorArrived(ref))
        return array

    def tensor_statistics(self, ref: TensorRef, previous: bool = False) -> WireStatistics | None:
        """The `statistics` level of a ViewCMD; None when the training has no such tensor."""
        request = self._tensor_request(ref, previous)
        if request is None:
            return None
        (summary,) = self._request_view([request], pb.ViewCMD.statistics)
        if summary is None:
            return None
        base = _base_info(summary.tensor_base)
        if base is None:
            return None
        s = summary.statistics
        return WireStatistics(
            base=base,
            is_bool=s.is_bool,
            max_value=s.max_value,
            min_value=s.min_value,
            avg_value=s.avg_value,
            count=s.count,
            negative_count=s.neg_zero_count,
            positive_count=s.pos_zero_count,
            nan_count=s.nan_count,
            neg_inf_count=s.neg_inf_count,
            pos_inf_count=s.pos_inf_count,
            zero_count=s.zero_count,
        )

    def tensor_base(self, ref: TensorRef, previous: bool = False) -> TensorBaseInfo | None:
        """The `base` level of a ViewCMD (type, shape, size); None when not found."""
        request = self._tensor_request(ref, previous)
        if request is None:
            return None
        (base,) = self._request_view([request], pb.ViewCMD.base)
        return None if base is None else _base_info(base)

    def _tensor_request(self, ref: TensorRef, previous: bool) -> graph_pb.TensorProto | None:
        """Spec §2.8: parameters and constants are asked by their scoped UI name with
        `truncate=true`; `iter="prev"` exists only for parameters."""
        if not ref.is_output:
            raise SessionError("A live training only sends node outputs, not inputs.")
        with self._lock:
            node = self._find_node(ref.node, ref.graph)
            step = self._meta.step
        if ref.iteration is not None and ref.iteration != step:
            if ref.iteration == step - 1:
                previous = True
            else:
                raise SessionError(
                    f"A live training only keeps step {step} (and the previous value of "
                    "parameters)."
                )
        request = graph_pb.TensorProto(node_name=ref.node, slot=str(ref.slot), iter="")
        if node is not None:
            request.node_name = node.ui_name
            request.truncate = node.kind is not NodeKind.OPERATOR
            if previous:
                if node.kind is not NodeKind.PARAMETER:
                    return None  # only parameters keep their previous value
                request.iter = "prev"
        elif previous:
            return None
        return request

    def _request_view(self, requests: list[graph_pb.TensorProto], level: int) -> list[Any]:
        """Queue one ViewCMD and block until its answer stream arrived."""
        with self._view_lock, self._cond:
            if self._closed:
                raise SessionError("The session is closed.")
            if self._meta.state is not SessionState.WAITING:
                raise SessionError(
                    "Tensor values can only be read while the training is suspended."
                )
            view = _PendingView(requests, level)
            self._view = view
            self._commands.append(
                pb.EventReply(status=_OK, view_cmd=pb.ViewCMD(tensors=requests, level=level))
            )
            self._cond.notify_all()
            finished = self._cond.wait_for(lambda: view.done, self.tensor_timeout)
            if self._view is view:
                self._view = None
            if not finished:
                self._commands = deque(c for c in self._commands if not _is_view_of(c, requests))
                raise SessionError(
                    f"The training did not send the tensor within {self.tensor_timeout:g} s."
                )
            if view.error:
                raise SessionError(view.error)
            return view.results

    def _decode(self, received: ReceivedTensor | None, ref: TensorRef) -> np.ndarray | None:
        if received is None or not received.found:
            return None
        if received.oversize:
            limit = (self.server_options.max_tensor_bytes if self.server_options else 1 << 30) >> 20
            raise SessionError(f"Tensor {ref.name} is larger than the {limit} MiB limit.")
        if not received.finished:
            raise SessionError(f"The training sent tensor {ref.name} only partly.")
        try:
            dtype = numpy_dtype(received.data_type or 0)
        except UnsupportedDataTypeError as exc:
            raise SessionError(str(exc)) from None
        dims = received.dims or ()
        content = received.content
        if dims == (0,) and len(content) == dtype.itemsize:
            dims = ()  # MindInsight: dims [0] is a scalar
        if any(d < 0 for d in dims):
            raise SessionError(f"The training sent tensor {ref.name} with a negative dimension.")
        expected = math.prod(dims) * dtype.itemsize
        if expected != len(content):
            raise SessionError(
                f"The training sent {len(content)} bytes for tensor {ref.name}, "
                f"but its shape {list(dims)} needs {expected}."
            )
        return np.frombuffer(content, dtype=dtype).reshape(dims)

    # ====================================================================== wire side
    def wire_metadata(self, md: pb.Metadata, peer: str = "") -> pb.EventReply:
        """Spec §2.3, with this debugger's policy for a second training: one training is
        served at a time. While the attached one is alive (connected, not finished, not
        terminated, heartbeats not lost), another connection's SendMetadata is refused
        (`ClientRefused`, a notice here) and its goodbye ignored; once the attached one is
        gone, the next SendMetadata starts a new session. The same connection saying hello
        again is the same training restarting its handshake (a new session, as spec §2.3)."""
        from tuidebug.online.server import ClientRefused

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
                    self._stop_watchdog()
                    self._fail_view("The training finished.")
                    self._set_meta(
                        state=SessionState.DONE, step=md.cur_step, message="Training finished."
                    )
                    self._cond.notify_all()
                return pb.EventReply(status=_OK)
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
            self._free_running = md.ms_version.startswith(TORCH_VERSION_PREFIX)
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
        self._fail_view("A new training connected.")
        self._peer = peer
        self._refused_peers.clear()
        if self._hb_stop is not None and self._hb_peer not in ("", peer):
            self._stop_watchdog()  # it follows another connection's heartbeats
        self._version_warning = ""
        self._generation += 1
        self._active = True
        # MindSpore's heartbeat thread starts before SendMetadata: a running watchdog keeps
        # watching (its next beat may be a full period away) with a fresh allowance
        self._hb_last = time.monotonic()
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
        self._dirty.clear()
        self._deleted.clear()
        self._on_client.clear()
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
        )

    def wire_graphs(self, protos: list[graph_pb.GraphProto], peer: str = "") -> pb.EventReply:
        from tuidebug.offline.graph_pb import GraphFileError, GraphTooLargeError, graph_from_proto

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
            self._client_gone("The training disconnected (its connection closed).")

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
        if self._view is not None and self._view.delivered and not self._view.done:
            self._finish_view(self._view, "The training answered without sending the tensor.")
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
            self._hits.extend(self._convert_hits(received))
            self._post(HitsArrived(tuple(self._hits), md.cur_step))
        elif new_step:
            self._post(HitsArrived((), md.cur_step))

    def _next_command(self, md: pb.Metadata) -> pb.EventReply | None:
        """What to answer a suspended client now, or None to keep it waiting."""
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
            self._stop_watchdog()
            self._set_meta(state=SessionState.DONE, message="Training terminated.")
        elif kind == "view_cmd":
            if self._view is not None and not self._view.delivered:
                self._view.delivered = True
        elif kind == "set_cmd":
            pass  # recorded when the batch was built

    # ------------------------------------------------------------ tensor answers
    def expected_tensor_keys(self) -> set[tuple[str, str, str]]:
        with self._lock:
            view = self._view
            if view is None or view.level != pb.ViewCMD.value:
                return set()
            return {(t.node_name, t.slot, t.iter) for t in view.requests}

    def wire_tensors(self, tensors: list[ReceivedTensor], broken: str = "") -> None:
        with self._cond:
            view = self._view
            if view is None or view.level != pb.ViewCMD.value or view.done:
                log.info("SendTensors without a pending request: ignored")
                return
            if broken:
                self._finish_view(view, broken)
                return
            by_key = {t.key: t for t in tensors}
            view.results = [by_key.get((r.node_name, r.slot, r.iter)) for r in view.requests]
            self._finish_view(view, "")

    def wire_tensor_stats(self, summaries: list[pb.TensorSummary], broken: str = "") -> None:
        self._paired(pb.ViewCMD.statistics, summaries, "SendTensorStats", broken)

    def wire_tensor_base(self, bases: list[pb.TensorBase], broken: str = "") -> None:
        self._paired(pb.ViewCMD.base, bases, "SendTensorBase", broken)

    def _paired(self, level: int, items: list[Any], rpc: str, broken: str) -> None:
        """Spec §2.8: these answers carry no names; they pair with the request by position."""
        with self._cond:
            view = self._view
            if view is None or view.level != level or view.done:
                log.info("%s without a pending request: ignored", rpc)
                return
            if broken:
                self._finish_view(view, broken)
                return
            n = len(view.requests)
            view.results = list(items[:n]) + [None] * (n - len(items))
            self._finish_view(view, "")

    def _finish_view(self, view: _PendingView, error: str) -> None:
        view.error = error
        view.done = True
        self._cond.notify_all()

    def _fail_view(self, error: str) -> None:
        if self._view is not None and not self._view.done:
            self._finish_view(self._view, error)

    # ----------------------------------------------------------------- hits
    def wire_hits(self, hits: list[pb.WatchpointHit]) -> None:
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

    def _convert_hits(self, received: list[pb.WatchpointHit]) -> list[WatchpointHit]:
        from tuidebug.core.conditions import ParamResult
        from tuidebug.core.watchpoints import WatchpointHit

        out: list[WatchpointHit] = []
        base = len(self._hits)
        for hit in received:
            wp = self.watchpoint_book.find(hit.id)
            if wp is None:
                log.info("hit of unknown watchpoint %d skipped", hit.id)
                continue
            node = self._find_node(hit.tensor.node_name, wp.graph_name)
            if node is None:
                log.info("hit on unknown node %s skipped", hit.tensor.node_name)
                continue
            wire = self._on_client.get(wp.id)
            if wire is not None and wire.star and node.name not in wire.names:
                continue  # we watched everything because the node list was too long
            try:
                slot = int(hit.tensor.slot or 0)
            except ValueError:
                slot = 0
            params = tuple(
                ParamResult(
                    name=p.name,
                    value=p.value,
                    disabled=p.disabled,
                    hit=p.hit,
                    actual=p.actual_value if hit.error_code == 0 and not p.disabled else None,
                )
                for p in hit.watch_condition.params
            )
            out.append(
                WatchpointHit(
                    watchpoint_id=wp.id,
                    condition=wp.condition,
                    tensor=TensorRef(
                        node=node.name, slot=slot, iteration=self._meta.step, graph=node.graph_name
                    ),
                    error_code=hit.error_code,
                    params=params,
                    order=base + len(out),
                )
            )
        return out

    def _find_node(self, name: str, graph_name: str = "") -> Node | None:
        """A node by full name or UI name; a scoped parameter name also matches by its last
        path component (spec §2.7), as MindSpore reports the watch-node name we sent."""
        graphs = list(self._graphs.values())
        if graph_name and graph_name in self._graphs:
            graphs.sort(key=lambda g: g.name != graph_name)
        for graph in graphs:
            node = graph.get(name)
            if node is None and name.startswith(graph.name + "/"):
                node = graph.get(name[len(graph.name) + 1 :])
            if node is not None:
                return node
        if "/" in name:
            short = name.rsplit("/", 1)[1]
            for graph in graphs:
                node = graph.nodes.get(short)
                if node is not None and node.kind is not NodeKind.OPERATOR:
                    return node
        return None

    # ------------------------------------------------------------ watchpoint batch
    def _watchpoint_batch(self) -> list[pb.EventReply]:
        """Spec §2.7: the pending SetCMDs, sent right before a run or recheck."""
        replies: list[pb.EventReply] = []
        for wid in sorted(self._deleted):
            if self._on_client.pop(wid, None) is not None:
                replies.append(pb.EventReply(status=_OK, set_cmd=pb.SetCMD(id=wid, delete=True)))
        self._deleted.clear()
        for wid in list(self._dirty):
            wp = self.watchpoint_book.find(wid)
            if wp is None:
                continue
            if not wp.enabled:
                if self._on_client.pop(wid, None) is not None:
                    replies.append(
                        pb.EventReply(status=_OK, set_cmd=pb.SetCMD(id=wid, delete=True))
                    )
                continue
            set_cmd, wire = self._set_cmd(wp)
            self._on_client[wid] = wire
            replies.append(pb.EventReply(status=_OK, set_cmd=set_cmd))
        self._dirty.clear()
        return replies

    def _set_cmd(self, wp: Watchpoint) -> tuple[pb.SetCMD, _WireWatch]:
        params = list(wp.wire_params())
        enabled = [p for p in params if not p.disabled]
        condition = pb.WatchCondition(
            condition=wp.condition.proto,
            value=enabled[-1].value if enabled else 0.0,  # MindInsight's legacy `value`
            params=[
                pb.WatchCondition.Parameter(
                    name=p.name, disabled=p.disabled, value=0.0 if p.disabled else p.value
                )
                for p in params
            ],
        )
        graph = self._graphs.get(wp.graph_name)
        nodes: list[Node] = []
        if graph is not None:  # MindSpore never checks constants
            nodes = watched_nodes(wp.condition, wp.targets, graph, constants=False)
        rank = self._meta.rank
        watch_nodes = [
            pb.WatchNode(
                node_name=n.ui_name,
                node_type="Parameter" if n.kind is NodeKind.PARAMETER else n.op_type,
                graph_name=n.graph_name,
                rank_id=rank,
            )
            for n in nodes
        ]
        set_cmd = pb.SetCMD(id=wp.id, watch_condition=condition, watch_nodes=watch_nodes)
        names = frozenset(n.name for n in nodes)
        if set_cmd.ByteSize() > MAX_SETCMD_BYTES:
            # too many nodes for one reply: watch everything and filter the hits here
            del set_cmd.watch_nodes[:]
            set_cmd.watch_nodes.append(pb.WatchNode(node_name="*", node_type="scope"))
            return set_cmd, _WireWatch(True, names)
        return set_cmd, _WireWatch(False, names)

    # -------------------------------------------------------------- heartbeat
    def wire_heartbeat(self, hb: pb.Heartbeat, peer: str = "") -> pb.EventReply:
        """Spec §2.10. Only the attached training's heartbeats keep it alive (before a
        training attaches, the first connection that beats is followed: MindSpore starts
        its heartbeats before SendMetadata); another's are answered and ignored."""
        with self._cond:
            if self._active and self._peer and peer and peer != self._peer:
                return pb.EventReply(status=_OK)
            if self._hb_stop is not None and self._hb_peer and peer and peer != self._hb_peer:
                self._stop_watchdog()  # a new connection beats: follow it instead
            if self._hb_stop is None:
                lo, hi = self.heartbeat_limits
                if not lo <= hb.period <= hi:
                    log.warning("heartbeat period %d s is outside %g..%g s", hb.period, lo, hi)
                    return pb.EventReply(status=_FAILED)
                self._start_watchdog((hb.period + 0.5) * self.heartbeat_scale)
                self._hb_peer = peer
            self._hb_last = time.monotonic()
        return pb.EventReply(status=_OK)

    def _start_watchdog(self, interval: float) -> None:
        stop = threading.Event()
        self._hb_stop = stop
        self._hb_last = time.monotonic()
        threading.Thread(
            target=self._watchdog,
            args=(stop, interval),
            name="tuidebug-heartbeat-watchdog",
            daemon=True,
        ).start()

    def _stop_watchdog(self) -> None:
        if self._hb_stop is not None:
            self._hb_stop.set()
            self._hb_stop = None

    def _watchdog(self, stop: threading.Event, interval: float) -> None:
        """Spec §2.10: a heartbeat is expected every `period + 0.5` s; three missed in a row
        mean the client is gone and the session is reset."""
        misses = 0
        seen = self._hb_last
        while not stop.wait(interval):
            with self._cond:
                if stop.is_set():
                    return
                if self._hb_last > seen:
                    seen = self._hb_last
                    misses = 0
                    continue
                misses += 1
                if misses < HEARTBEAT_MISSES:
                    continue
                if self._hb_stop is stop:
                    self._hb_stop = None
                if self._active:
                    self._client_gone("The training stopped sending heartbeats.")
                return

    def _client_gone(self, reason: str) -> None:
        """Reset the protocol state (graphs and hits stay visible until a new training)."""
        self._active = False
        self._generation += 1
        self._commands.clear()
        self._remaining = 0
        self._target_node = ""
        self._received_hits = []
        self._fail_view("The training disconnected.")
        self._set_meta(state=SessionState.DISCONNECTED, message=reason)
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


def _is_view_of(reply: pb.EventReply, requests: list[graph_pb.TensorProto]) -> bool:
    return reply.WhichOneof("cmd") == "view_cmd" and list(reply.view_cmd.tensors) == requests


def _base_info(base: pb.TensorBase) -> TensorBaseInfo | None:
    if base.data_size == 0 and base.data_type == 0:
        return None  # spec §2.8 "not found"
    return TensorBaseInfo(base.data_type, tuple(base.shape), base.data_size)
