"""The gRPC side of online debugging: the `EventListener` service of spec §1.1.

The training process (MindSpore, or our own clients in `tuidebug.client`) is the gRPC
*client*; we serve. This module is only transport: it parses every message defensively
(network input is untrusted), reassembles the chunked streams under size caps and hands
complete objects to a `WireHandler` (the `OnlineSession` state machine), which decides what
to answer. The server knows the handler only through that protocol: `start_server` returns the
running server to whoever started it instead of calling back into the session.

Handlers are registered by hand with raw-bytes deserializers instead of the generated
`add_EventListenerServicer_to_server`, so that a message that does not parse becomes a
`FAILED` reply and one log line here rather than a gRPC-internal traceback.

Limits (any peer that can connect is untrusted; `ServerOptions` holds the numbers):
- threads: gRPC's sync server gives each call a worker thread for as long as it runs. Calls
  beyond the threads are refused at once, streams get at most `stream_slots` of them (the
  rest stay for the training's SendMetadata, WaitCMD and heartbeats), and a `CallGuard`
  cancels any call that sends nothing for `message_timeout` s or streams longer than
  `stream_timeout` s. Unary methods are served as streams for that: the wait for their
  request is bounded too.
- memory: per graph stream, per tensor, per message count, and `max_buffered_bytes` over all
  streams together (`ByteBudget`); a graph's bytes are kept once and parsed in place, and a
  large stream's memory is handed back to the system when it ends (`malloc_trim`).
- one training (one job: its ranks) at a time: only the attached training's streams are
  read; another's SendMetadata is refused with FAILED_PRECONDITION and a sentence
  (`OnlineSession`, `JobSession`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph_pb import raw_enum
from tuidebug.online.listen_address import bound_addresses, format_address

log = logging.getLogger("tuidebug.online")

SERVICE_NAME = "debugger.EventListener"
MIB = 1024 * 1024
CHUNK_SIZE = 3 * MIB  # MindSpore's `g_chunk_size` (spec §8): graph slices and tensor pieces


RESERVED_WORKERS = 4  # threads streams may never take: the training's unary calls
TRIM_AFTER_BYTES = 64 * MIB  # a call that buffered this much hands freed memory back


class ServerStartError(Exception):
    """The server could not listen (busy port, unknown host); the message is one sentence."""


@dataclass(frozen=True)
class ServerOptions:
    """Limits of the listening server.

    The receive limit must take a 3 MiB chunk plus its envelope (node names, dims), so it is
    a little above gRPC's 4 MiB default; the send limit stays at 4 MiB because MindSpore's
    client keeps gRPC's default receive limit (spec §1.6) and would drop a bigger reply.

    Every call holds a worker thread while it runs, so what a peer may hold is bounded
    (the module's "Limits"): at most `stream_slots` streams at once (the rest of the
    threads stay free for the training's SendMetadata, WaitCMD and heartbeats), every call
    cancelled when it sends nothing for `message_timeout` seconds or still streams after
    `stream_timeout`, and `max_buffered_bytes` over all streams together.
    """

    max_receive_message_bytes: int = 4 * MIB + 512 * 1024
    max_send_message_bytes: int = 4 * MIB
    max_workers: int = 32  # threads; gRPC refuses calls beyond them instead of queueing
    max_streams: int = 16  # streams at once, all peers together (capped by the threads)
    max_graph_bytes: int = 1024 * MIB  # per SendGraph/SendMultiGraphs stream
    max_tensor_bytes: int = 1024 * MIB  # per tensor, as MindInsight (spec §2.8)
    max_buffered_bytes: int = 1536 * MIB  # all streams together
    max_hits: int = 100_000  # per SendWatchpointHits stream
    max_summaries: int = 100_000  # per SendTensorStats / SendTensorBase stream
    # MindSpore writes a stream's chunks back to back (1 ms apart) and a unary request
    # arrives with its call: a call silent this long is stalled, not slow
    message_timeout: float = 30.0
    stream_timeout: float = 3600.0  # a whole stream (1 GiB at 300 kB/s still fits)

    @property
    def stream_slots(self) -> int:
        """Streams admitted at once: never so many that no thread is left for the unary
        calls of the training."""
        return max(1, min(self.max_streams, self.max_workers - RESERVED_WORKERS))

    @property
    def waiting_slots(self) -> int:
        """Unary calls admitted at once while their request has not arrived yet."""
        return max(1, self.max_workers - self.stream_slots - 2)


@dataclass
class ReceivedTensor:
    """One tensor of a `SendTensors` stream, reassembled from its ≤3 MiB pieces."""

    node_name: str
    slot: str
    iter: str
    truncate: bool
    data_type: int | None = None
    dims: tuple[int, ...] | None = None
    content: bytearray = field(default_factory=bytearray)
    finished: bool = False
    oversize: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.node_name, self.slot, self.iter)

    @property
    def found(self) -> bool:
        """MindSpore's "not found" reply carries only the names (spec §2.8)."""
        return self.data_type is not None or bool(self.content) or self.dims is not None


class _Garbage:
    """What a request deserializer returns for bytes that are not the expected message."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


M = TypeVar("M", bound=Message)


def _safe_parser(cls: type[M]) -> Callable[[bytes], M | _Garbage]:
    def parse(data: bytes) -> M | _Garbage:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            return _Garbage(f"{type(exc).__name__}: {exc}")

    return parse


def _reply(status: pb.EventReply.Status = pb.EventReply.OK) -> pb.EventReply:
    return pb.EventReply(status=status)


def failed_reply() -> pb.EventReply:
    return _reply(pb.EventReply.FAILED)


@dataclass(frozen=True)
class Refusal:
    """A call ended with a gRPC error status: the details are one sentence for the peer."""

    code: grpc.StatusCode
    details: str


class ClientRefused(Exception):
    """Raised by the session for a call it will not serve (another training is attached);
    the message is one sentence for the peer."""


# ------------------------------------------------------------------------- accounting
def malloc_trim() -> None:
    """Give freed heap memory back to the system. glibc keeps what a large stream freed
    (its 3 MiB chunks come from per-thread arenas) in the process; `malloc_trim(0)` returns
    it. A no-op where there is no glibc."""
    global _LIBC
    if _LIBC is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC = libc if hasattr(libc, "malloc_trim") else False
        except OSError:
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


class ByteBudget:
    """Bytes buffered by all streams together (`max_buffered_bytes`): a stream takes what it
    keeps chunk by chunk and gives it all back when it ends."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0  # highest `used` seen (tests and benchmarks read it)
        self.refused = 0  # streams refused for the budget
        self._lock = threading.Lock()

    def take(self, call: _Call, size: int) -> bool:
        with self._lock:
            if self.used + size > self.limit:
                self.refused += 1
                return False
            self.used += size
            self.peak = max(self.peak, self.used)
        call.buffered += size
        call.peak_buffered = max(call.peak_buffered, call.buffered)
        return True

    def give_back(self, call: _Call) -> None:
        with self._lock:
            self.used -= call.buffered
        call.buffered = 0


class _Call:
    """One call in progress, as the guard sees it."""

    __slots__ = (
        "buffered",
        "context",
        "last",
        "peak_buffered",
        "peer",
        "reading",
        "rpc",
        "started",
        "stream",
        "timed_out",
    )

    def __init__(self, rpc: str, context: grpc.ServicerContext, stream: bool) -> None:
        self.rpc = rpc
        self.context = context
        self.peer = context.peer()
        self.stream = stream
        self.started = self.last = time.monotonic()
        self.reading = True  # waiting for (more) request messages: the timeouts apply
        self.timed_out = ""  # why the guard cancelled it
        self.buffered = 0
        self.peak_buffered = 0


class CallGuard:
    """Admission and timeouts of every call (see `ServerOptions`): a thread per call is all
    gRPC's sync server offers, and its request iterators block in `next()` for as long as
    the peer likes, so a watchdog thread cancels the calls that stall; a cancelled call's
    `next()` then returns or raises at once and frees its thread."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self._calls: set[_Call] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.timed_out = 0  # calls cancelled for silence or length (tests read it)
        self.refused = 0  # calls refused for lack of a slot

    @property
    def streams(self) -> int:
        with self._lock:
            return sum(1 for c in self._calls if c.stream)

    def admit(self, rpc: str, context: grpc.ServicerContext, stream: bool) -> _Call | Refusal:
        call = _Call(rpc, context, stream)
        with self._lock:
            if stream:
                if sum(1 for c in self._calls if c.stream) >= self.options.stream_slots:
                    self.refused += 1
                    return Refusal(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"The debugger already has {self.options.stream_slots} streams open; "
                        "try again later.",
                    )
            elif (
                sum(1 for c in self._calls if c.reading and not c.stream)
                >= self.options.waiting_slots
            ):
                self.refused += 1
                return Refusal(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "The debugger has too many calls waiting for their request; try again later.",
                )
            self._calls.add(call)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="tuidebug-grpc-guard", daemon=True
                )
                self._thread.start()
        return call

    def leave(self, call: _Call) -> None:
        with self._lock:
            self._calls.discard(call)

    def messages(self, call: _Call, iterator: Iterator[Any]) -> Iterator[Any]:
        """The call's requests; each one restarts the silence clock."""
        for item in iterator:
            call.last = time.monotonic()
            yield item
        call.reading = False

    def first(self, call: _Call, iterator: Iterator[Any]) -> Any:
        """The request of a unary call (registered as a stream so its wait is bounded too);
        None when none came."""
        try:
            item = next(iterator, None)
        except Exception as exc:  # cancelled by the guard or by the peer
            log.info("%s from %s broke off: %s", call.rpc, call.peer, _short(exc))
            item = None
        call.reading = False
        return item

    def cancel_peers_except(self, peers: Collection[str]) -> None:
        """A training attached: the streams of peers other than `peers` (it, and the other
        ranks of its job) are no longer wanted."""
        with self._lock:
            doomed = [c for c in self._calls if c.stream and c.peer not in peers]
        for call in doomed:
            call.timed_out = "another training is attached"
            call.context.cancel()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        opts = self.options
        tick = min(max(min(opts.message_timeout, opts.stream_timeout) / 4, 0.02), 1.0)
        while not self._stop.wait(tick):
            now = time.monotonic()
            with self._lock:
                calls = [c for c in self._calls if c.reading and not c.timed_out]
            for call in calls:
                if now - call.last > opts.message_timeout:
                    call.timed_out = f"it sent nothing for {opts.message_timeout:g} s"
                elif call.stream and now - call.started > opts.stream_timeout:
                    call.timed_out = f"it was still streaming after {opts.stream_timeout:g} s"
                else:
                    continue
                with self._lock:
                    self.timed_out += 1
                log.warning("%s from %s cancelled: %s", call.rpc, call.peer, call.timed_out)
                call.context.cancel()


class WireHandler(Protocol):
    """What the server calls: one method per kind of message (the session's `wire_*`).
    Every `peer` is the gRPC peer of the call ("ipv4:host:port"); a `broken` stream is
    reported with one sentence instead of its items."""

    def stream_refusal(self, peer: str, graphs: bool = False) -> str:
        """Why a stream from `peer` is not served (one sentence), or ""."""
        ...

    def wire_notice(self, message: str) -> None: ...

    def wire_wait(
        self,
        md: pb.Metadata,
        is_active: Callable[[], bool],
        peer: str = "",
        on_end: Callable[[Callable[[], None]], bool] | None = None,
    ) -> pb.EventReply: ...

    def wire_metadata(self, md: pb.Metadata, peer: str = "") -> pb.EventReply:
        """May raise `ClientRefused` (answered with FAILED_PRECONDITION)."""
        ...

    def wire_heartbeat(self, hb: pb.Heartbeat, peer: str = "") -> pb.EventReply: ...

    def wire_graphs(self, protos: list[graph_pb.GraphProto], peer: str = "") -> pb.EventReply: ...

    def expected_tensor_keys(self, peer: str = "") -> set[tuple[str, str, str]]:
        """(node, slot, iter) of the tensors asked for: only those are kept."""
        ...

    def wire_tensors(
        self, tensors: list[ReceivedTensor], broken: str = "", peer: str = ""
    ) -> None: ...

    def wire_tensor_stats(self, summaries: list[Any], broken: str = "", peer: str = "") -> None: ...

    def wire_tensor_base(self, bases: list[Any], broken: str = "", peer: str = "") -> None: ...

    def wire_hits(self, hits: list[pb.WatchpointHit], peer: str = "") -> None: ...


class EventListener:
    """The nine RPCs of spec §1.1; every method answers, none raises (a refusal is a gRPC
    status with one sentence). All are registered as client streams: a unary request is
    the stream's first message, so the guard bounds the wait for it too."""

    def __init__(self, session: WireHandler, options: ServerOptions) -> None:
        self.session = session
        self.options = options
        self.guard = CallGuard(options)
        self.budget = ByteBudget(options.max_buffered_bytes)

    # -------------------------------------------------------------- plumbing
    def _run(
        self,
        rpc: str,
        requests: Iterator[Any],
        context: grpc.ServicerContext,
        body: Callable[[_Call, Iterator[Any]], pb.EventReply | Refusal],
        *,
        stream: bool,
    ) -> pb.EventReply:
        call = self.guard.admit(rpc, context, stream)
        if isinstance(call, Refusal):
            log.warning("%s from %s refused: %s", rpc, context.peer(), call.details)
            context.abort(call.code, call.details)
        try:
            result = body(call, requests)
        finally:
            self.guard.leave(call)
            trim = call.peak_buffered >= TRIM_AFTER_BYTES
            self.budget.give_back(call)
        if trim:  # `body`'s buffers are gone with its frame: hand the memory back
            malloc_trim()
        if isinstance(result, Refusal):
            context.abort(result.code, result.details)
        return result

    def _unary(
        self,
        rpc: str,
        requests: Iterator[Any],
        context: grpc.ServicerContext,
        handle: Callable[[Any, _Call], pb.EventReply | Refusal],
    ) -> pb.EventReply:
        def body(call: _Call, items: Iterator[Any]) -> pb.EventReply | Refusal:
            request = self.guard.first(call, items)
            if request is None:
                return failed_reply()
            if isinstance(request, _Garbage):
                return self._garbage(rpc, request, call.peer)
            return handle(request, call)

        return self._run(rpc, requests, context, body, stream=False)

    def _stream(
        self,
        rpc: str,
        requests: Iterator[Any],
        context: grpc.ServicerContext,
        body: Callable[[_Call, Iterator[Any]], pb.EventReply | Refusal],
        *,
        graphs: bool = False,
    ) -> pb.EventReply:
        def checked(call: _Call, items: Iterator[Any]) -> pb.EventReply | Refusal:
            refusal = self.session.stream_refusal(call.peer, graphs=graphs)
            if refusal:
                log.info("%s from %s refused: %s", rpc, call.peer, refusal)
                return Refusal(grpc.StatusCode.FAILED_PRECONDITION, refusal)
            return body(call, self.guard.messages(call, items))

        return self._run(rpc, requests, context, checked, stream=True)

    def _broke_off(self, rpc: str, call: _Call, exc: BaseException | None = None) -> str:
        """Log why a stream ended early; the sentence for the session."""
        if call.timed_out:
            log.warning("%s from %s was cancelled: %s", rpc, call.peer, call.timed_out)
            return f"The training's {_WHAT[rpc]} stream was cancelled: {call.timed_out}."
        log.warning("%s broke off: %s", rpc, _short(exc) if exc else "cancelled")
        return f"The training's {_WHAT[rpc]} stream broke off."

    def _over_budget(self, rpc: str, call: _Call) -> Refusal:
        message = (
            f"The training's {_WHAT[rpc]} stream was refused: the debugger already buffers "
            f"{self.budget.used // MIB} MiB of streams and holds at most "
            f"{self.budget.limit // MIB} MiB at once."
        )
        log.warning("%s from %s: %s", rpc, call.peer, message)
        self.session.wire_notice(message)
        return Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    # ------------------------------------------------------------------ unary
    def WaitCMD(self, requests: Iterator[Any], context: grpc.ServicerContext) -> pb.EventReply:
        def handle(request: pb.Metadata, call: _Call) -> pb.EventReply:
            try:
                return self.session.wire_wait(
                    request, context.is_active, call.peer, context.add_callback
                )
            except Exception as exc:  # a bug must not kill the client: it retries on FAILED
                log.warning("WaitCMD failed: %s: %s", type(exc).__name__, exc)
                return failed_reply()

        return self._unary("WaitCMD", requests, context, handle)

    def SendMetadata(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        def handle(request: pb.Metadata, call: _Call) -> pb.EventReply | Refusal:
            try:
                reply = self.session.wire_metadata(request, call.peer)
            except ClientRefused as exc:
                return Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
            except Exception as exc:
                log.warning("SendMetadata failed: %s: %s", type(exc).__name__, exc)
                reply = failed_reply()
            if not request.training_done and reply.status == pb.EventReply.OK:
                # the other ranks of its job keep theirs (a handler without jobs has none)
                job_peers = getattr(self.session, "job_peers", None)
                keep = set(job_peers(call.peer)) if job_peers is not None else set()
                self.guard.cancel_peers_except(keep | {call.peer})
            return reply

        reply = self._unary("SendMetadata", requests, context, handle)
        if reply.WhichOneof("cmd") is None:
            # MindSpore reads the oneof case before anything else (spec §1.6): always set it
            reply.version_matched = reply.status == pb.EventReply.OK
        return reply

    def SendHeartbeat(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        def handle(request: pb.Heartbeat, call: _Call) -> pb.EventReply:
            try:
                return self.session.wire_heartbeat(request, call.peer)
            except Exception as exc:
                log.warning("SendHeartbeat failed: %s: %s", type(exc).__name__, exc)
                return failed_reply()

        return self._unary("SendHeartbeat", requests, context, handle)

    # ----------------------------------------------------------------- graphs
    def SendGraph(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        """Spec §2.4: all buffers of the stream concatenated form one GraphProto."""
        return self._stream(
            "SendGraph",
            requests,
            context,
            lambda c, i: self._graph_stream(c, i, False),
            graphs=True,
        )

    def SendMultiGraphs(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        """Spec §2.4: a graph ends at every chunk with `finished=true`."""
        return self._stream(
            "SendMultiGraphs",
            requests,
            context,
            lambda c, i: self._graph_stream(c, i, True),
            graphs=True,
        )

    def _graph_stream(
        self, call: _Call, chunks: Iterator[Any], multi: bool
    ) -> pb.EventReply | Refusal:
        """Chunks are appended to one `bytearray` per graph, which is parsed as it is: the
        graph's bytes exist once (no joined copy), and the budget holds them until the
        graph was handed over."""
        rpc = "SendMultiGraphs" if multi else "SendGraph"
        pieces: list[bytearray] = []
        buf = bytearray()
        total = 0
        try:
            for chunk in chunks:
                if isinstance(chunk, _Garbage):
                    return self._garbage(rpc, chunk, call.peer)
                data = chunk.buffer
                total += len(data)
                if total > self.options.max_graph_bytes:
                    return self._too_large(
                        "graph set" if multi else "graph", self.options.max_graph_bytes
                    )
                if not self.budget.take(call, len(data)):
                    return self._over_budget(rpc, call)
                buf += data
                del data
                if multi and chunk.finished:
                    pieces.append(buf)
                    buf = bytearray()
        except Exception as exc:  # the client vanished mid-stream, or the guard cancelled it
            self._broke_off(rpc, call, exc)
            return failed_reply()
        if call.timed_out:  # cancelled: the iterator may just end
            self._broke_off(rpc, call)
            return failed_reply()
        if buf or not multi:  # a sender that forgot the last `finished`: keep what it sent
            pieces.append(buf)
        del buf
        protos = []
        for i, data in enumerate(pieces):
            try:
                # types-protobuf says `bytes`, but protobuf parses any buffer: a bytes() copy
                # of the graph is just what the bytearray avoids
                protos.append(graph_pb.GraphProto.FromString(data))  # type: ignore[arg-type]
            except (DecodeError, ValueError, RuntimeError) as exc:
                log.warning("%s: the graph does not parse (%s)", rpc, exc)
                return failed_reply()
            finally:
                pieces[i] = bytearray()  # its bytes are in the parsed graph now
        del pieces
        try:
            return self.session.wire_graphs(protos, call.peer)
        except Exception as exc:
            log.warning("%s failed: %s: %s", rpc, type(exc).__name__, exc)
            return failed_reply()

    # ---------------------------------------------------------------- tensors
    def SendTensors(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return self._stream("SendTensors", requests, context, self._tensor_stream)

    def _tensor_stream(self, call: _Call, pieces: Iterator[Any]) -> pb.EventReply | Refusal:
        """Spec §2.8: pieces of one tensor share its names; the last has `finished=true`.
        Only tensors the session asked for are kept, each capped at `max_tensor_bytes`, so a
        client cannot make us hold more than the requested tensors."""
        expected = self.session.expected_tensor_keys(call.peer)
        cap = self.options.max_tensor_bytes
        partial: dict[tuple[str, str, str], ReceivedTensor] = {}
        done: list[ReceivedTensor] = []
        broken = ""
        refusal: Refusal | None = None
        try:
            for piece in pieces:
                if isinstance(piece, _Garbage):
                    self._garbage("SendTensors", piece, call.peer)
                    broken = "The training sent a tensor message that does not parse."
                    break
                key = (piece.node_name, piece.slot, piece.iter)
                if key not in expected:
                    continue
                tensor = partial.get(key)
                if tensor is None:
                    tensor = partial[key] = ReceivedTensor(
                        piece.node_name, piece.slot, piece.iter, piece.truncate
                    )
                data_type = raw_enum(piece, "data_type", 5)  # bfloat16's own number too
                if data_type is not None:
                    tensor.data_type = data_type
                if piece.dims:
                    tensor.dims = tuple(piece.dims)
                content = piece.tensor_content
                if content and not tensor.oversize:
                    if len(tensor.content) + len(content) > cap:
                        tensor.oversize = True
                        tensor.content = bytearray()  # MindInsight drops it too ("oversize")
                    elif not self.budget.take(call, len(content)):
                        refusal = self._over_budget("SendTensors", call)
                        broken = refusal.details
                        break
                    else:
                        tensor.content += content
                del content
                if piece.finished:
                    tensor.finished = True
                    done.append(partial.pop(key))
        except Exception as exc:  # the client vanished mid-stream (cancelled, connection lost)
            broken = self._broke_off("SendTensors", call, exc)
        if call.timed_out and not broken:
            broken = self._broke_off("SendTensors", call)
        if broken:
            done = []
            partial.clear()
        done.extend(partial.values())  # unfinished: the session reports them as incomplete
        try:
            self.session.wire_tensors(done, broken, call.peer)
        except Exception as exc:
            log.warning("SendTensors failed: %s: %s", type(exc).__name__, exc)
            return failed_reply()
        if refusal is not None:
            return refusal
        return failed_reply() if broken else _reply()

    def SendTensorStats(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return self._stream(
            "SendTensorStats",
            requests,
            context,
            lambda c, i: self._deliver(
                "SendTensorStats", c, i, self.options.max_summaries, self.session.wire_tensor_stats
            ),
        )

    def SendTensorBase(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return self._stream(
            "SendTensorBase",
            requests,
            context,
            lambda c, i: self._deliver(
                "SendTensorBase", c, i, self.options.max_summaries, self.session.wire_tensor_base
            ),
        )

    def SendWatchpointHits(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return self._stream(
            "SendWatchpointHits",
            requests,
            context,
            lambda c, i: self._deliver(
                "SendWatchpointHits", c, i, self.options.max_hits, self.session.wire_hits, False
            ),
        )

    # ---------------------------------------------------------------- helpers
    def _deliver(
        self,
        rpc: str,
        call: _Call,
        items: Iterable[Any],
        cap: int,
        deliver: Callable[..., None],
        report_broken: bool = True,
    ) -> pb.EventReply | Refusal:
        """All messages of a stream (at most `cap` kept, and their bytes in the budget),
        handed to the session; a failed stream is reported to `deliver` as `([], broken)`
        when `report_broken` (a view waits for it)."""
        out: list[Any] = []
        dropped = 0
        broken = ""
        result: pb.EventReply | Refusal = failed_reply()
        try:
            for item in items:
                if isinstance(item, _Garbage):
                    self._garbage(rpc, item, call.peer)
                    broken = f"The training sent a {_WHAT[rpc]} message that does not parse."
                    break
                if len(out) >= cap:
                    dropped += 1
                    continue
                if not self.budget.take(call, item.ByteSize()):
                    result = self._over_budget(rpc, call)
                    broken = result.details
                    break
                out.append(item)
        except Exception as exc:  # the client vanished mid-stream
            broken = self._broke_off(rpc, call, exc)
        if call.timed_out and not broken:
            broken = self._broke_off(rpc, call)
        if broken:
            if report_broken:
                deliver([], broken, peer=call.peer)
            return result
        if dropped:
            log.warning("%s: kept the first %d messages, dropped %d", rpc, cap, dropped)
        try:
            deliver(out, peer=call.peer)
        except Exception as exc:
            log.warning("%s failed: %s: %s", rpc, type(exc).__name__, exc)
            return failed_reply()
        return _reply()

    def _garbage(self, rpc: str, garbage: _Garbage, peer: str) -> pb.EventReply:
        log.warning("%s from %s: not a valid message (%s)", rpc, peer, garbage.error)
        return failed_reply()

    def _too_large(self, what: str, cap: int) -> pb.EventReply:
        message = f"The training sent a {what} larger than {cap // MIB} MiB; it was refused."
        log.warning(message)
        self.session.wire_notice(message)
        return failed_reply()


_WHAT = {
    "SendGraph": "graph",
    "SendMultiGraphs": "graph",
    "SendTensors": "tensor",
    "SendTensorStats": "statistics",
    "SendTensorBase": "tensor-base",
    "SendWatchpointHits": "watchpoint-hit",
}


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}"


def _handlers(servicer: EventListener) -> grpc.GenericRpcHandler:
    """Every method as a client stream (see `EventListener`): on the wire a unary call is a
    stream of one message, so MindSpore's unary calls are served the same."""
    ser = pb.EventReply.SerializeToString
    stream = grpc.stream_unary_rpc_method_handler
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "WaitCMD": stream(servicer.WaitCMD, _safe_parser(pb.Metadata), ser),
            "SendMetadata": stream(servicer.SendMetadata, _safe_parser(pb.Metadata), ser),
            "SendGraph": stream(servicer.SendGraph, _safe_parser(pb.Chunk), ser),
            "SendTensors": stream(servicer.SendTensors, _safe_parser(graph_pb.TensorProto), ser),
            "SendTensorBase": stream(servicer.SendTensorBase, _safe_parser(pb.TensorBase), ser),
            "SendTensorStats": stream(
                servicer.SendTensorStats, _safe_parser(pb.TensorSummary), ser
            ),
            "SendWatchpointHits": stream(
                servicer.SendWatchpointHits, _safe_parser(pb.WatchpointHit), ser
            ),
            "SendMultiGraphs": stream(servicer.SendMultiGraphs, _safe_parser(pb.Chunk), ser),
            "SendHeartbeat": stream(servicer.SendHeartbeat, _safe_parser(pb.Heartbeat), ser),
        },
    )


def _check_port_free(host: str, port: int) -> None:
    """Bind a plain socket first: gRPC only says "Failed to bind" after logging its own
    error line, and we want one clear sentence for the user. Port 0 (any free port) is
    bound too, so an address that is not this machine's is named as such."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        raise ServerStartError(f"Cannot listen on {host}: unknown host address.") from None
    family, socktype, proto, _, addr = infos[0]
    with socket.socket(family, socktype, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does
        try:
            sock.bind(addr)
        except PermissionError:
            raise ServerStartError(
                f"Port {port} on {host} needs more privileges; choose a port above 1023."
            ) from None
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServerStartError(
                    f"Port {port} on {host} is already in use; choose another with --port."
                ) from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise ServerStartError(
                    f"Cannot listen on {host}: it is not an address of this machine "
                    "(use 127.0.0.1, or 0.0.0.0 for every interface)."
                ) from None
            raise ServerStartError(
                f"Cannot listen on {host}:{port}: {exc.strerror or exc}."
            ) from None


@dataclass(frozen=True)
class RunningServer:
    """A started server: the gRPC server, its servicer (limits, counters, the call guard),
    the address it is bound to (`host:port`, the real port when 0 was asked) and every
    address it listens on (0.0.0.0 also means IPv6 where the machine has it)."""

    server: grpc.Server
    listener: EventListener
    address: str
    bound_addresses: tuple[str, ...]


def start_server(
    handler: WireHandler,
    host: str = "127.0.0.1",
    port: int = 50051,
    options: ServerOptions | None = None,
) -> RunningServer:
    """Listen on `host:port` (0 = any free port) and serve `handler`. Raises
    `ServerStartError`. The caller owns what it gets back: stop the listener's guard, then
    the server, when it closes."""
    options = options or ServerOptions()
    _check_port_free(host, port)
    server = grpc.server(
        futures.ThreadPoolExecutor(
            max_workers=options.max_workers, thread_name_prefix="tuidebug-grpc"
        ),
        # a call beyond the threads is refused at once (RESOURCE_EXHAUSTED) instead of
        # queueing behind stalled ones, where a training's SendMetadata would wait forever
        maximum_concurrent_rpcs=options.max_workers,
        options=[
            ("grpc.max_receive_message_length", options.max_receive_message_bytes),
            ("grpc.max_send_message_length", options.max_send_message_bytes),
            # without this a second server could share the port and split the clients
            ("grpc.so_reuseport", 0),
        ],
    )
    servicer = EventListener(handler, options)
    server.add_generic_rpc_handlers((_handlers(servicer),))
    try:
        bound = server.add_insecure_port(format_address(host, port))
    except RuntimeError:
        bound = 0
    if not bound:
        raise ServerStartError(
            f"Port {port} on {host} is already in use; choose another with --port."
        )
    server.start()
    return RunningServer(
        server, servicer, format_address(host, bound), bound_addresses(host, bound)
    )
