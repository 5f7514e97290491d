"""The *training* side of the MindSpore debugger protocol, reusable by any training loop.

`ProtocolClient` does what MindSpore's `debugger.cc`/`grpc_client.cc` do (spec §2): the
metadata handshake, graph chunking at 3 MiB (SendGraph / SendMultiGraphs), the WaitCMD
command loop with MindSpore's failure and back-off rules (§2.5, §2.11), a heartbeat thread
(§2.10), ViewCMD answers at the value/statistics/base levels with the §2.8 "not found"
replies, and watchpoints applied from SetCMDs and evaluated here with the shared condition
engine (`core.scan_engine.evaluate`), hits sent in execution order (§2.9).

What is specific to a training — which tensors exist at a suspension point — comes from a
`TensorProvider`; the dump simulator and a PyTorch adapter each implement one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, TypedDict, cast

import grpc
import numpy as np

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.core import scan_engine
from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    CheckRequest,
    CheckResult,
    ConditionType,
    Param,
)
from tuidebug.core.graph_pb import put_raw_enum
from tuidebug.core.scan_engine import evaluate
from tuidebug.core.tensor import (
    DT_BOOL,
    UnsupportedDataTypeError,
    data_type_of,
    tensor_statistics,
)
from tuidebug.core.text import printable

log = logging.getLogger("tuidebug.client")
GOODBYE_TIMEOUT = 3.0  # seconds the end-of-training SendMetadata may take
# seconds `close` waits for gRPC's channel to close: a call that Ctrl+C interrupted can
# leave `Channel.close()` waiting forever for it (seen on a loaded machine), and the exit
# must not wait with it
CLOSE_TIMEOUT = 2.0

CHUNK_SIZE = 3 * 1024 * 1024  # MindSpore's g_chunk_size (spec §8)
HEARTBEAT_MESSAGE = "Debugger is alive"
MAX_WAIT_FAILURES = 5  # spec §2.5: more than this many failures in a row → Exit
HEARTBEAT_MAX_FAILURES = 5
HEARTBEAT_RETRY = 0.5
HEARTBEAT_TIMEOUT = 10.0  # seconds one heartbeat may take (less with a shorter interval)

_INIT = int(ConditionType.INIT)


class ClientError(Exception):
    """The debugger cannot be reached or refused us; the message is one sentence."""


@dataclass(frozen=True)
class RunCommand:
    """Why the command loop returned: resume with `level` "step" or "node".

    `steps` is the RunCMD's `run_steps` (at least 1). MindSpore ignores it (spec §2.6) and
    so do the simulator and equality, so MindSpore-like clients behave as before; our own
    PyTorch client may run that many step ends before its next WaitCMD."""

    level: str
    node_name: str = ""
    steps: int = field(default=1, compare=False)


@dataclass(frozen=True)
class CheckItem:
    """One tensor loaded at a suspension point, offered to the watchpoint check."""

    node_name: str  # kernel full name, or parameter name (`conv1.weight`)
    slot: int
    order: int  # execution position: hits are sent sorted by it
    is_parameter: bool
    load: Callable[[], np.ndarray | None]
    load_previous: Callable[[], np.ndarray | None] | None = None
    # Optional own evaluation (e.g. statistics on a GPU without copying the tensor to the
    # host): called with the requests and whether a change condition wants the previous
    # value; returns one result per request, or None when the tensor is not available.
    evaluate: Callable[[Sequence[CheckRequest], bool], Sequence[CheckResult] | None] | None = None
    # Optional evaluation started now and finished later by the provider (a device's
    # statistics queued now, read back with other tensors' at a check point): called like
    # `evaluate`; what it returns is the provider's own business.
    launch: Callable[[Sequence[CheckRequest], bool], object] | None = None


@dataclass(frozen=True)
class Selection:
    """One tensor and the watchpoints that check it now (`ProtocolClient.select`)."""

    item: CheckItem
    chosen: tuple[tuple[ClientWatchpoint, str], ...]  # (watchpoint, the name it watches)
    requests: list[CheckRequest]
    wants_previous: bool  # a change condition wants the previous value


class TensorProvider(Protocol):
    """The tensors of the training at its current suspension point."""

    def lookup(self, name: str, slot: str, iter: str) -> np.ndarray | None:
        """The tensor `<name>:<slot>` (`iter="prev"`: a parameter's previous-step value).
        `name` is already truncated when the request asked for it (spec §2.8)."""
        ...

    def check_items(self) -> Iterable[CheckItem]:
        """The tensors the watchpoints may check now, in execution order."""
        ...


@dataclass(frozen=True)
class ClientWatchpoint:
    """A watchpoint as the training holds it: exactly what the SetCMD said."""

    id: int
    condition: int
    params: tuple[Param, ...]
    nodes: tuple[tuple[str, str], ...]  # (node_name, node_type)

    @property
    def request(self) -> CheckRequest:
        return CheckRequest(self.condition, self.params)

    def match(self, tensor_node: str) -> str | None:
        """The watch-node name that makes `tensor_node` watched, or None (spec §2.7: exact
        name, `*` scope, or the last path component of a scoped name). Like the 2.x client,
        a real scope prefix does not match — servers expand scopes into leaves. The first
        watch node (in SetCMD order) that matches gives the name."""
        star, exact, tails = self._index
        best: tuple[int, str] | None = None
        if star is not None:
            best = (star, tensor_node)
        for candidate in (exact.get(tensor_node), tails.get(tensor_node)):
            if candidate is not None and (best is None or candidate[0] < best[0]):
                best = candidate
        return best[1] if best is not None else None

    @cached_property
    def _index(self) -> tuple[int | None, dict[str, tuple[int, str]], dict[str, tuple[int, str]]]:
        """(position of a `*` scope, exact names, last path components) → (first position,
        watch-node name): `match` is called per tensor and watchpoint, and a recommended
        watchpoint lists every gradient node, so a scan of the node list each time would
        make a step-end check quadratic in the graph size."""
        star: int | None = None
        exact: dict[str, tuple[int, str]] = {}
        tails: dict[str, tuple[int, str]] = {}
        for pos, (name, node_type) in enumerate(self.nodes):
            if node_type == "scope":
                if name == "*" and star is None:
                    star = pos
                continue
            exact.setdefault(name, (pos, name))
            if "/" in name:
                tails.setdefault(name.rsplit("/", 1)[1], (pos, name))
        return star, exact, tails


def watchpoint_from_set_cmd(cmd: pb.SetCMD) -> ClientWatchpoint:
    cond = cmd.watch_condition
    return ClientWatchpoint(
        id=cmd.id,
        condition=int(cond.condition),
        params=tuple(Param(p.name, p.value, p.disabled) for p in cond.params),
        nodes=tuple((n.node_name, n.node_type) for n in cmd.watch_nodes),
    )


def split_chunks(data: bytes | memoryview, size: int = CHUNK_SIZE) -> Iterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), size):
        yield bytes(view[start : start + size])


class ProtocolClient:
    """One training process talking to one debugger (spec §2.2)."""

    def __init__(
        self,
        target: str,
        *,
        backend: str = "GPU",
        ms_version: str = "2.3.0",
        device_id: int = 0,
        root_graph_id: int = 0,
        heartbeat_period: int = 30,
        heartbeat_interval: float | None = None,
        heartbeat: bool = True,
        retry_delay: float = 1.0,
        max_failures: int = MAX_WAIT_FAILURES,
        reconnect: bool = False,
        chunk_size: int = CHUNK_SIZE,
        interruptible: bool = True,
        extra_metadata: bytes = b"",
        heartbeat_give_up: int = 0,
    ) -> None:
        """`extra_metadata`: protobuf wire bytes merged into every `Metadata` sent (the rank
        fields of `core.rank_fields`, which MindSpore's schema does not have).
        `retry_delay` scales MindSpore's back-off (n·1 s after the n-th failure).
        `reconnect=True` (not MindSpore behaviour) re-sends metadata and graphs when the
        server answers WaitCMD with FAILED, so a restarted debugger picks the training up.
        `heartbeat_give_up=N` (not MindSpore behaviour, which waits on a frozen debugger
        until TCP gives up): after N heartbeats in a row not answered within their timeout,
        the debugger is given up as if its connection had closed: every call in flight
        (a WaitCMD blocked on a debugger that froze without closing its connection) is
        cancelled and `command_loop` returns None with `connection_lost`; 0: never."""
        self.target = target
        self.backend = backend
        self.ms_version = ms_version
        self.device_id = device_id
        self.root_graph_id = root_graph_id
        self.heartbeat_period = heartbeat_period
        self.heartbeat_interval = (
            heartbeat_interval if heartbeat_interval is not None else float(heartbeat_period)
        )
        self.heartbeat_enabled = heartbeat
        self.retry_delay = retry_delay
        self.max_failures = max_failures
        self.reconnect = reconnect
        self.chunk_size = chunk_size
        # False: WaitCMD is a plain blocking call, which `stop()` cannot interrupt but which
        # answers in about a third of the time of a polled future (no thread hand-off): a
        # training that suspends at every step end pays this round trip every step.
        self.interruptible = interruptible
        self.extra_metadata = extra_metadata
        self.heartbeat_give_up = heartbeat_give_up
        # set by the heartbeat thread when it gave the debugger up (see heartbeat_give_up)
        self.gave_up = threading.Event()

        self.watchpoints: dict[int, ClientWatchpoint] = {}
        self.initial_suspension = True
        self.terminated = False
        # True when the command loop gave up on an unreachable debugger (as opposed to an
        # exit command): adapters may then keep training instead of stopping
        self.connection_lost = False
        self.version_matched: bool | None = None
        self.graphs: list[bytes] = []
        self._checked: set[tuple[int, str, int, int]] = set()
        # float64-stage work seen on big tensors: past scan_engine's threshold, the compiled
        # kernel is loaded in the background for the rest of the run
        self._float64_bytes = 0
        self._checked_step: int | None = None
        self._stop = threading.Event()
        self._hb_stop = threading.Event()
        self._hb_thread: threading.Thread | None = None
        self._channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", 4 * 1024 * 1024),
                ("grpc.max_send_message_length", chunk_size + 1024 * 1024),
                # a connection of its own, as a separate training process has: the debugger
                # tells trainings apart by their connection (gRPC shares one between the
                # channels of a process otherwise)
                ("grpc.use_local_subchannel_pool", 1),
            ],
        )
        self._stub = pb_grpc.EventListenerStub(self._channel)

    # ------------------------------------------------------------- lifecycle
    def connect(self, cur_step: int = 0, graph_num: int = 1) -> bool | None:
        """Start the heartbeat, then SendMetadata. Returns `version_matched` (None when the
        reply had no such field: "MindInsight too old", the training must exit).
        Raises `ClientError` when the debugger cannot be reached or answers FAILED."""
        if self.heartbeat_enabled:
            self._start_heartbeat()
        self.version_matched = self._handshake(cur_step, graph_num)
        if self.version_matched is None:
            self.terminated = True
        return self.version_matched

    def _handshake(self, cur_step: int, graph_num: int) -> bool | None:
        md = self._metadata(cur_step, "", graph_num=graph_num)
        try:
            reply = self._call(self._stub.SendMetadata, md)
        except grpc.RpcError as exc:
            refused = _refusal(exc)
            if refused:
                raise ClientError(
                    f"The debugger at {self.target} refused this training: {refused}."
                ) from None
            raise ClientError(
                f"Cannot reach the debugger at {self.target} ({_code(exc)}); start "
                "`tuidebug online` (or MindInsight) there first."
            ) from None
        if reply.status != pb.EventReply.OK:
            raise ClientError("The debugger refused the training's metadata.")
        if reply.WhichOneof("cmd") != "version_matched":
            log.error("MindInsight version is too old")
            return None
        if not reply.version_matched:
            log.warning("the debugger reports a version mismatch")
        return reply.version_matched

    def send_graphs(self, graphs: Sequence[graph_pb.GraphProto | bytes]) -> bool:
        """Spec §2.4: one graph by SendGraph, several by SendMultiGraphs."""
        self.graphs = [g if isinstance(g, bytes) else g.SerializeToString() for g in graphs]
        return self._send_graphs()

    def _send_graphs(self) -> bool:
        if not self.graphs:
            return True
        try:
            if len(self.graphs) == 1:
                chunks = (pb.Chunk(buffer=c) for c in split_chunks(self.graphs[0], self.chunk_size))
                reply = self._call(self._stub.SendGraph, chunks)
            else:
                reply = self._call(self._stub.SendMultiGraphs, self._multi_chunks())
        except grpc.RpcError as exc:
            log.error("sending the graph failed: %s", _code(exc))
            return False
        return reply.status == pb.EventReply.OK

    def _multi_chunks(self) -> Iterator[pb.Chunk]:
        for data in self.graphs:
            pieces = list(split_chunks(data, self.chunk_size)) or [b""]
            for i, piece in enumerate(pieces):
                yield pb.Chunk(buffer=piece, finished=i == len(pieces) - 1)

    def finish(self, cur_step: int = 0) -> None:
        """End of training (spec §2.11): SendMetadata with `training_done`, then close."""
        self._stop_heartbeat()
        try:
            # bounded: a goodbye to a debugger that never answers must not hold up the exit
            # (Ctrl+C waited for gRPC's 20 s connect timeout)
            self._stub.SendMetadata(
                self._metadata(cur_step, "", training_done=True), timeout=GOODBYE_TIMEOUT
            )
        except grpc.RpcError as exc:
            log.info("final SendMetadata failed: %s", _code(exc))
        except ValueError:  # the channel was closed: the debugger was given up meanwhile
            log.info("final SendMetadata skipped: the debugger was given up")
        self.close()

    def stop(self) -> None:
        """Interrupt a blocked command loop (from another thread); it returns as on exit."""
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        self._stop_heartbeat()
        closer = threading.Thread(
            target=self._channel.close, name="tuidebug-channel-close", daemon=True
        )
        closer.start()
        closer.join(CLOSE_TIMEOUT)
        if closer.is_alive():
            log.info("the gRPC channel did not close within %g s: left to the exit", CLOSE_TIMEOUT)

    # ------------------------------------------------------------ command loop
    def command_loop(
        self, provider: TensorProvider, cur_step: int, cur_node: str = ""
    ) -> RunCommand | None:
        """Suspend: serve commands until a run command (returned) or exit (None)."""
        failures = 0
        rehandshaken = False  # a FAILED right after a new handshake counts as a failure
        md = self._metadata(cur_step, cur_node)
        while not self._stop.is_set():
            reply = self._wait_cmd(md)
            if self.gave_up.is_set():  # missed heartbeats: gone, as a closed connection
                self.terminated = True
                self.connection_lost = True
                return None
            if reply is None or reply.status != pb.EventReply.OK:
                if reply is not None and self.reconnect and not rehandshaken:
                    rehandshaken = True
                    if self._rehandshake(cur_step):
                        continue
                rehandshaken = False
                failures += 1
                if failures > self.max_failures:
                    # MindSpore's words; the caller says what it means for the training
                    log.info("Failed to connect to MindInsight debugger server")
                    self.terminated = True
                    self.connection_lost = True
                    self._stop_heartbeat()
                    return None
                if self._stop.wait(failures * self.retry_delay):
                    break
                continue
            failures = 0
            rehandshaken = False
            kind = reply.WhichOneof("cmd")
            if kind is None:
                continue  # MindSpore: "unknown command", ask again at once
            if kind == "set_cmd":
                self._apply_set_cmd(reply.set_cmd)
            elif kind == "view_cmd":
                self._answer_view(reply.view_cmd, provider)
            elif kind == "run_cmd":
                level = reply.run_cmd.run_level
                if level == "recheck":
                    hits = self.check(provider, cur_step, recheck=True)
                    if hits:
                        self.send_hits(hits)
                elif level in ("step", "node"):
                    self.initial_suspension = False
                    node = reply.run_cmd.node_name if level == "node" else ""
                    steps = max(1, reply.run_cmd.run_steps) if level == "step" else 1
                    return RunCommand(level, node, steps)
                else:
                    log.error("unknown run level %r: exiting", level)
                    self._exit()
                    return None
            elif kind == "exit":
                self._exit()
                return None
            else:  # version_matched inside the loop is an error for MindSpore (spec §2.5)
                log.error("unexpected %s in WaitCMD reply: exiting", kind)
                self._exit()
                return None
        self._exit()
        return None

    def _exit(self) -> None:
        self.terminated = True
        self._stop_heartbeat()

    def _wait_cmd(self, md: pb.Metadata) -> pb.EventReply | None:
        """WaitCMD without a deadline (as MindSpore), interruptible by `stop()` unless the
        client was made with `interruptible=False`."""
        if self.gave_up.is_set():  # its channel is closed
            return None
        if not self.interruptible:
            try:
                return self._stub.WaitCMD(md)
            except grpc.RpcError as exc:
                log.info("WaitCMD failed: %s", _code(exc))
                return None
            except ValueError:  # the channel was closed under the call (given up)
                return None
        future = self._stub.WaitCMD.future(md)
        while not self._stop.is_set():
            try:
                return future.result(timeout=0.2)
            except grpc.FutureTimeoutError:
                continue
            except grpc.RpcError as exc:
                log.info("WaitCMD failed: %s", _code(exc))
                return None
        future.cancel()
        return None

    def _rehandshake(self, cur_step: int) -> bool:
        """A fresh debugger has no graph: introduce ourselves again (our extension)."""
        try:
            matched = self._handshake(cur_step, len(self.graphs))
        except ClientError:
            return False
        if matched is None:
            return False
        self.watchpoints.clear()
        self._checked.clear()
        return bool(matched) and self._send_graphs()

    # ---------------------------------------------------------------- SetCMD
    def _apply_set_cmd(self, cmd: pb.SetCMD) -> None:
        if cmd.delete:
            self.watchpoints.pop(cmd.id, None)
            return
        if cmd.id < 0:
            log.warning("watchpoint with negative id %d ignored", cmd.id)
            return
        self.watchpoints[cmd.id] = watchpoint_from_set_cmd(cmd)  # same id replaces (§2.7)

    # --------------------------------------------------------------- checks
    def _earn_kernel(self, tensor: np.ndarray, requests: list[CheckRequest], prev: bool) -> None:
        if tensor.size >= scan_engine.KERNEL_MIN_ELEMENTS and scan_engine.needs_float64_stage(
            requests, prev
        ):
            self._float64_bytes += tensor.nbytes
            if self._float64_bytes < scan_engine.KERNEL_WAIT_BYTES:  # never wait: a training
                scan_engine.prepare_kernel(self._float64_bytes)

    def check(
        self,
        provider: TensorProvider,
        cur_step: int,
        *,
        recheck: bool = False,
        per_kernel: bool = False,
        items: Iterable[CheckItem] | None = None,
    ) -> list[pb.WatchpointHit]:
        """Evaluate the watchpoints on the loaded tensors (spec §2.9, §3.5 "when").

        During the initial suspension only INIT conditions run, and INIT runs only then.
        `per_kernel` (GPU kernel-by-kernel checks) skips the change conditions. Each
        (tensor, watchpoint) pair is checked once per step unless `recheck`."""
        selections = self.select(
            provider.check_items() if items is None else items,
            cur_step,
            recheck=recheck,
            per_kernel=per_kernel,
        )
        results: list[Sequence[CheckResult] | None] = []
        for sel in selections:
            item = sel.item
            if item.evaluate is not None:
                results.append(item.evaluate(sel.requests, sel.wants_previous))
                continue
            tensor = item.load()
            if tensor is None:
                results.append(None)
                continue
            previous = None
            if item.load_previous is not None and sel.wants_previous:
                previous = item.load_previous()
            self._earn_kernel(tensor, sel.requests, previous is not None)
            results.append(evaluate(tensor, sel.requests, previous))
        return self.hits_of(selections, results)

    def select(
        self,
        items: Iterable[CheckItem],
        cur_step: int,
        *,
        recheck: bool = False,
        per_kernel: bool = False,
    ) -> list[Selection]:
        """Which watchpoints check which of `items` now (the "when" rules of `check`); each
        chosen (tensor, watchpoint) pair counts as checked for this step."""
        if self._checked_step != cur_step:
            self._checked.clear()
            self._checked_step = cur_step
        wps = list(self.watchpoints.values())
        if not wps:
            return []
        selections: list[Selection] = []
        for item in items:
            chosen: list[tuple[ClientWatchpoint, str]] = []
            for wp in wps:
                if (wp.condition == _INIT) != self.initial_suspension:
                    continue
                if per_kernel and wp.condition in CHANGE_CONDITIONS:
                    continue
                key = (wp.id, item.node_name, item.slot, cur_step)
                if not recheck and key in self._checked:
                    continue
                watch_name = wp.match(item.node_name)
                if watch_name is None:
                    continue
                self._checked.add(key)
                chosen.append((wp, watch_name))
            if chosen:
                selections.append(
                    Selection(
                        item,
                        tuple(chosen),
                        [wp.request for wp, _ in chosen],
                        any(wp.condition in CHANGE_CONDITIONS for wp, _ in chosen),
                    )
                )
        return selections

    def hits_of(
        self,
        selections: Sequence[Selection],
        results: Sequence[Sequence[CheckResult] | None],
    ) -> list[pb.WatchpointHit]:
        """The hits of evaluated selections (None: the tensor was not available), in kernel
        execution order (spec §2.9)."""
        hits: list[tuple[int, int, pb.WatchpointHit]] = []
        for sel, evaluated in zip(selections, results, strict=True):
            if evaluated is None:
                continue
            for (wp, watch_name), result in zip(sel.chosen, evaluated, strict=True):
                if not result.reported:
                    continue
                hit = pb.WatchpointHit(
                    id=wp.id,
                    error_code=result.error_code,
                    tensor=graph_pb.TensorProto(
                        node_name=watch_name, slot=str(sel.item.slot), finished=True
                    ),
                    watch_condition=pb.WatchCondition(
                        # the number the SetCMD carried; the stub types the (open, proto3)
                        # enum field with its generated class, which is an int at run time
                        condition=cast(pb.WatchCondition.Condition, wp.condition),
                        params=[
                            pb.WatchCondition.Parameter(
                                name=p.name,
                                disabled=p.disabled,
                                value=p.value,
                                hit=p.hit,
                                actual_value=p.actual if p.actual is not None else 0.0,
                            )
                            for p in result.params
                        ],
                    ),
                )
                hits.append((sel.item.order, len(hits), hit))
        hits.sort(key=lambda h: (h[0], h[1]))  # spec §2.9: by kernel execution order
        return [h for _, _, h in hits]

    def send_hits(self, hits: Sequence[pb.WatchpointHit]) -> bool:
        try:
            reply = self._call(self._stub.SendWatchpointHits, iter(hits))
        except grpc.RpcError as exc:
            log.info("SendWatchpointHits failed: %s", _code(exc))  # only logged (§2.11)
            return False
        return reply.status == pb.EventReply.OK

    # --------------------------------------------------------------- ViewCMD
    def _answer_view(self, view: pb.ViewCMD, provider: TensorProvider) -> None:
        found: list[tuple[graph_pb.TensorProto, np.ndarray | None]] = []
        for request in view.tensors:
            name = request.node_name
            if request.truncate:
                name = name.rsplit("/", 1)[-1]
            try:
                array = provider.lookup(name, request.slot, request.iter)
            except Exception as exc:  # a bad file is "not found", never a crashed training
                log.warning("cannot load %s:%s: %s", name, request.slot, exc)
                array = None
            found.append((request, array))
        try:
            if view.level == pb.ViewCMD.value:
                self._call(self._stub.SendTensors, self._value_pieces(found))
            elif view.level == pb.ViewCMD.statistics:
                self._call(self._stub.SendTensorStats, iter([_summary(a) for _, a in found]))
            elif view.level == pb.ViewCMD.base:
                self._call(self._stub.SendTensorBase, iter([_base(a) for _, a in found]))
        except grpc.RpcError as exc:
            log.info("answering a ViewCMD failed: %s", _code(exc))  # only logged (§2.11)

    def _value_pieces(
        self, found: list[tuple[graph_pb.TensorProto, np.ndarray | None]]
    ) -> Iterator[graph_pb.TensorProto]:
        """Spec §2.8 value level: ≤3 MiB pieces, `finished` on the last one; a tensor we do
        not have is one message with the names and `finished=true`."""
        for request, array in found:
            names: _TensorNames = {
                "node_name": request.node_name,
                "slot": request.slot,
                "iter": request.iter,
                "truncate": request.truncate,
            }
            encoded = _encode(array)
            if encoded is None:
                yield graph_pb.TensorProto(finished=True, **names)
                continue
            data_type, dims, flat = encoded
            # its own bytes, no copy (flat is C-contiguous; a uint8 view, since a buffer of
            # ml_dtypes' bfloat16 cannot be cast)
            view = flat.view(np.uint8).data
            total = len(view)
            for start in range(0, max(total, 1), self.chunk_size):  # an empty tensor: 1 piece
                stop = min(start + self.chunk_size, total)
                piece = graph_pb.TensorProto(
                    tensor_content=bytes(view[start:stop]),
                    dims=dims,
                    finished=stop >= total,
                    **names,
                )
                # bfloat16's number is tuidebug's own, unknown to the closed proto2 enum
                put_raw_enum(piece, "data_type", 5, data_type)
                yield piece

    # ------------------------------------------------------------- heartbeat
    def _start_heartbeat(self) -> None:
        if self._hb_thread is not None and self._hb_thread.is_alive():
            return
        self._hb_stop.clear()
        self._hb_thread = threading.Thread(
            target=self._heartbeat_loop, name="tuidebug-client-heartbeat", daemon=True
        )
        self._hb_thread.start()

    def _stop_heartbeat(self) -> None:
        self._hb_stop.set()

    def _heartbeat_loop(self) -> None:
        """Spec §2.10: every period; retry every 0.5 s on failure; give up after 5."""
        failures = 0
        beat = pb.Heartbeat(message=HEARTBEAT_MESSAGE, period=self.heartbeat_period)
        timeout = min(HEARTBEAT_TIMEOUT, max(1.0, self.heartbeat_interval))
        while not self._hb_stop.is_set():
            try:
                reply = self._stub.SendHeartbeat(beat, timeout=timeout)
                ok = reply.status == pb.EventReply.OK
            except (grpc.RpcError, ValueError):  # ValueError: the channel was closed
                ok = False
            if ok:
                failures = 0
                delay = self.heartbeat_interval
            else:
                failures += 1
                if self.heartbeat_give_up and failures >= self.heartbeat_give_up:
                    self._give_up(failures)
                    return
                if failures >= HEARTBEAT_MAX_FAILURES:
                    log.warning("heartbeat failed %d times: stopped", failures)
                    return
                delay = HEARTBEAT_RETRY
            if self._hb_stop.wait(delay):
                return

    def _give_up(self, missed: int) -> None:
        """The debugger missed `missed` heartbeats: cancel every call in flight by closing
        the channel (a blocking WaitCMD cannot be cancelled otherwise); the command loop
        then returns as for a lost connection and the adapter says so once."""
        if self._hb_stop.is_set():
            return  # closed or finished meanwhile: nothing is waiting
        log.info("the debugger at %s missed %d heartbeats: given up", self.target, missed)
        self.gave_up.set()
        self.connection_lost = True
        self._channel.close()

    # ----------------------------------------------------------------- helpers
    def _metadata(
        self, cur_step: int, cur_node: str, *, training_done: bool = False, graph_num: int = 0
    ) -> pb.Metadata:
        md = pb.Metadata(
            device_name=f"{self.device_id}:{self.root_graph_id}",
            cur_step=cur_step,
            backend=self.backend,
            cur_node=cur_node,
            training_done=training_done,
            graph_num=graph_num or len(self.graphs),
            ms_version=self.ms_version,
        )
        if self.extra_metadata:
            md.MergeFromString(self.extra_metadata)
        return md

    def _call(self, method: grpc.UnaryUnaryMultiCallable, request: object) -> pb.EventReply:
        try:
            return method(request)
        except ValueError:  # the channel was closed: the debugger was given up
            if self.gave_up.is_set():
                raise _GaveUp() from None
            raise


# ---------------------------------------------------------------------------- encoding
class _TensorNames(TypedDict):
    """The fields that name a requested tensor, repeated in every piece of its answer."""

    node_name: str
    slot: str
    iter: str
    truncate: bool


def _encode(
    array: np.ndarray | None,
) -> tuple[graph_pb.DataType, list[int], np.ndarray] | None:
    """(DataType, dims, C-ordered little-endian array) or None when not sendable."""
    if array is None:
        return None
    arr = np.asarray(array)
    try:
        # the stub types DataType fields with the generated enum class: an int at run time
        data_type = cast(graph_pb.DataType, data_type_of(arr.dtype))
    except UnsupportedDataTypeError:
        return None
    dims = [int(d) for d in arr.shape]  # before ascontiguousarray, which makes 0-d 1-d
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return data_type, dims, np.ascontiguousarray(arr).reshape(-1)


def _base(array: np.ndarray | None) -> pb.TensorBase:
    encoded = _encode(array)
    if encoded is None:
        return pb.TensorBase(data_size=0, data_type=0, shape=[0])  # spec §2.8 not found
    data_type, dims, flat = encoded
    return pb.TensorBase(data_type=data_type, shape=dims, data_size=flat.nbytes)


def _summary(array: np.ndarray | None) -> pb.TensorSummary:
    """Spec §3.7 counters (the wire's `neg_zero_count`/`pos_zero_count` count negative /
    positive elements, ±Inf included)."""
    encoded = _encode(array)
    if encoded is None:
        return pb.TensorSummary(
            tensor_base=pb.TensorBase(data_size=0, data_type=0, shape=[]),
            statistics=pb.Statistics(max_value=float("-inf"), min_value=float("inf")),
        )
    data_type, dims, flat = encoded
    try:
        st = tensor_statistics(flat)
    except UnsupportedDataTypeError:
        st = None
    stats = pb.Statistics(count=int(flat.size), is_bool=data_type == DT_BOOL)
    if st is not None:
        stats.nan_count = st.nan_count
        stats.pos_inf_count = st.pos_inf_count
        stats.neg_inf_count = st.neg_inf_count
        stats.zero_count = st.zero_count
        stats.neg_zero_count = st.negative_count + st.neg_inf_count
        stats.pos_zero_count = st.positive_count + st.pos_inf_count
        if st.true_count is not None:  # st.is_bool, written so that the count narrows
            stats.max_value = float(bool(st.true_count))
            stats.min_value = float(not st.false_count)
            stats.avg_value = st.true_count / st.count if st.count else 0.0
        elif st.min is not None and st.max is not None:
            stats.max_value = st.max
            stats.min_value = st.min
            stats.avg_value = st.mean if st.mean is not None else 0.0
        else:
            stats.max_value = float("nan") if st.nan_count else float("-inf")
            stats.min_value = float("nan") if st.nan_count else float("inf")
    return pb.TensorSummary(
        tensor_base=pb.TensorBase(data_type=data_type, shape=dims, data_size=flat.nbytes),
        statistics=stats,
    )


class _GaveUp(grpc.RpcError):
    """A call on the channel closed when the debugger missed its heartbeats."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the debugger stopped answering its heartbeats"


def _refusal(exc: grpc.RpcError) -> str:
    """The debugger's own sentence when it refused the call on purpose (another training is
    attached, too many calls), escaped for a terminal; "" for any other failure."""
    code = exc.code() if hasattr(exc, "code") else None
    if code not in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return ""
    details = exc.details() if hasattr(exc, "details") else ""
    text = printable(" ".join(str(details or "").split()))[:300].rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _code(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    return code.name.lower() if code is not None else str(exc)


__all__ = [
    "CHUNK_SIZE",
    "CheckItem",
    "ClientError",
    "ClientWatchpoint",
    "ProtocolClient",
    "RunCommand",
    "TensorProvider",
    "split_chunks",
    "watchpoint_from_set_cmd",
]
