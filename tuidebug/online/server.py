"""The gRPC side of online debugging: the `EventListener` service of spec §1.1.

The training process (MindSpore, or our own clients in `tuidebug.client`) is the gRPC
*client*; we serve. This module is only transport: it parses every message defensively
(network input is untrusted), reassembles the chunked streams under size caps and hands
complete objects to the `OnlineSession` state machine, which decides what to answer.

Handlers are registered by hand with raw-bytes deserializers instead of the generated
`add_EventListenerServicer_to_server`, so that a message that does not parse becomes a
`FAILED` reply and one log line here rather than a gRPC-internal traceback.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb

if TYPE_CHECKING:
    from tuidebug.online.session import OnlineSession

log = logging.getLogger("tuidebug.online")

SERVICE_NAME = "debugger.EventListener"
MIB = 1024 * 1024
CHUNK_SIZE = 3 * MIB  # MindSpore's `g_chunk_size` (spec §8): graph slices and tensor pieces


class ServerStartError(Exception):
    """The server could not listen (busy port, unknown host); the message is one sentence."""


@dataclass(frozen=True)
class ServerOptions:
    """Limits of the listening server.

    The receive limit must take a 3 MiB chunk plus its envelope (node names, dims), so it is
    a little above gRPC's 4 MiB default; the send limit stays at 4 MiB because MindSpore's
    client keeps gRPC's default receive limit (spec §1.6) and would drop a bigger reply.
    """

    max_receive_message_bytes: int = 4 * MIB + 512 * 1024
    max_send_message_bytes: int = 4 * MIB
    max_workers: int = 10  # as MindInsight; one long-poll + streams + heartbeat fit easily
    max_graph_bytes: int = 1024 * MIB  # per SendGraph/SendMultiGraphs stream
    max_tensor_bytes: int = 1024 * MIB  # per tensor, as MindInsight (spec §2.8)
    max_hits: int = 100_000  # per SendWatchpointHits stream
    max_summaries: int = 100_000  # per SendTensorStats / SendTensorBase stream


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


def _reply(status: int = pb.EventReply.OK) -> pb.EventReply:
    return pb.EventReply(status=status)


def failed_reply() -> pb.EventReply:
    return _reply(pb.EventReply.FAILED)


class EventListener:
    """The nine RPCs of spec §1.1; every method answers, none raises."""

    def __init__(self, session: OnlineSession, options: ServerOptions) -> None:
        self.session = session
        self.options = options

    # ------------------------------------------------------------------ unary
    def WaitCMD(self, request: Any, context: grpc.ServicerContext) -> pb.EventReply:
        if isinstance(request, _Garbage):
            return self._garbage("WaitCMD", request, context)
        try:
            return self.session.wire_wait(request, context.is_active)
        except Exception as exc:  # a bug must not kill the client: it retries on FAILED
            log.warning("WaitCMD failed: %s: %s", type(exc).__name__, exc)
            return failed_reply()

    def SendMetadata(self, request: Any, context: grpc.ServicerContext) -> pb.EventReply:
        if isinstance(request, _Garbage):
            reply = self._garbage("SendMetadata", request, context)
            reply.version_matched = False
            return reply
        try:
            reply = self.session.wire_metadata(request, context.peer())
        except Exception as exc:
            log.warning("SendMetadata failed: %s: %s", type(exc).__name__, exc)
            reply = failed_reply()
        if reply.WhichOneof("cmd") is None:
            # MindSpore reads the oneof case before anything else (spec §1.6): always set it
            reply.version_matched = reply.status == pb.EventReply.OK
        return reply

    def SendHeartbeat(self, request: Any, context: grpc.ServicerContext) -> pb.EventReply:
        if isinstance(request, _Garbage):
            return self._garbage("SendHeartbeat", request, context)
        try:
            return self.session.wire_heartbeat(request)
        except Exception as exc:
            log.warning("SendHeartbeat failed: %s: %s", type(exc).__name__, exc)
            return failed_reply()

    # ----------------------------------------------------------------- graphs
    def SendGraph(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Any:
        """Spec §2.4: all buffers of the stream concatenated form one GraphProto."""
        buf = bytearray()
        try:
            for chunk in request_iterator:
                if isinstance(chunk, _Garbage):
                    return self._garbage("SendGraph", chunk, context)
                if len(buf) + len(chunk.buffer) > self.options.max_graph_bytes:
                    return self._too_large("graph", self.options.max_graph_bytes)
                buf += chunk.buffer
        except Exception as exc:  # the client vanished mid-stream
            log.warning("SendGraph broke off: %s", _short(exc))
            return failed_reply()
        return self._graphs("SendGraph", [bytes(buf)])

    def SendMultiGraphs(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> pb.EventReply:
        """Spec §2.4: a graph ends at every chunk with `finished=true`."""
        pieces: list[bytes] = []
        buf = bytearray()
        total = 0
        try:
            for chunk in request_iterator:
                if isinstance(chunk, _Garbage):
                    return self._garbage("SendMultiGraphs", chunk, context)
                total += len(chunk.buffer)
                if total > self.options.max_graph_bytes:
                    return self._too_large("graph set", self.options.max_graph_bytes)
                buf += chunk.buffer
                if chunk.finished:
                    pieces.append(bytes(buf))
                    buf = bytearray()
        except Exception as exc:  # the client vanished mid-stream
            log.warning("SendMultiGraphs broke off: %s", _short(exc))
            return failed_reply()
        if buf:  # a sender that forgot the last `finished`: keep what it sent
            pieces.append(bytes(buf))
        return self._graphs("SendMultiGraphs", pieces)

    def _graphs(self, rpc: str, serialized: list[bytes]) -> pb.EventReply:
        protos = []
        for data in serialized:
            try:
                protos.append(graph_pb.GraphProto.FromString(data))
            except (DecodeError, ValueError, RuntimeError) as exc:
                log.warning("%s: the graph does not parse (%s)", rpc, exc)
                return failed_reply()
        try:
            return self.session.wire_graphs(protos)
        except Exception as exc:
            log.warning("%s failed: %s: %s", rpc, type(exc).__name__, exc)
            return failed_reply()

    # ---------------------------------------------------------------- tensors
    def SendTensors(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> pb.EventReply:
        """Spec §2.8: pieces of one tensor share its names; the last has `finished=true`.
        Only tensors the session asked for are kept, each capped at `max_tensor_bytes`, so a
        client cannot make us hold more than the requested tensors."""
        expected = self.session.expected_tensor_keys()
        cap = self.options.max_tensor_bytes
        partial: dict[tuple[str, str, str], ReceivedTensor] = {}
        done: list[ReceivedTensor] = []
        broken = ""
        try:
            for piece in request_iterator:
                if isinstance(piece, _Garbage):
                    self._garbage("SendTensors", piece, context)
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
                if piece.HasField("data_type"):
                    tensor.data_type = piece.data_type
                if piece.dims:
                    tensor.dims = tuple(piece.dims)
                content = piece.tensor_content
                if content and not tensor.oversize:
                    if len(tensor.content) + len(content) > cap:
                        tensor.oversize = True
                        tensor.content = bytearray()  # MindInsight drops it too ("oversize")
                    else:
                        tensor.content += content
                if piece.finished:
                    tensor.finished = True
                    done.append(partial.pop(key))
        except Exception as exc:  # the client vanished mid-stream (cancelled, connection lost)
            log.warning("SendTensors broke off: %s", _short(exc))
            broken = "The training's tensor stream broke off."
        done.extend(partial.values())  # unfinished: the session reports them as incomplete
        try:
            self.session.wire_tensors(done, broken)
        except Exception as exc:
            log.warning("SendTensors failed: %s: %s", type(exc).__name__, exc)
            return failed_reply()
        return failed_reply() if broken else _reply()

    def SendTensorStats(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> pb.EventReply:
        return self._deliver(
            "SendTensorStats",
            request_iterator,
            self.options.max_summaries,
            self.session.wire_tensor_stats,
            "The training's statistics stream broke off.",
        )

    def SendTensorBase(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> pb.EventReply:
        return self._deliver(
            "SendTensorBase",
            request_iterator,
            self.options.max_summaries,
            self.session.wire_tensor_base,
            "The training's tensor-base stream broke off.",
        )

    def SendWatchpointHits(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> pb.EventReply:
        return self._deliver(
            "SendWatchpointHits", request_iterator, self.options.max_hits, self.session.wire_hits
        )

    # ---------------------------------------------------------------- helpers
    def _collect(self, rpc: str, items: Iterable[Any], cap: int) -> list[Any] | pb.EventReply:
        """All messages of a stream (at most `cap` kept), or a FAILED reply when the stream
        holds garbage or breaks off."""
        out: list[Any] = []
        dropped = 0
        try:
            for item in items:
                if isinstance(item, _Garbage):
                    return self._garbage(rpc, item, None)
                if len(out) < cap:
                    out.append(item)
                else:
                    dropped += 1
        except Exception as exc:  # the client vanished mid-stream
            log.warning("%s broke off: %s", rpc, _short(exc))
            return failed_reply()
        if dropped:
            log.warning("%s: kept the first %d messages, dropped %d", rpc, cap, dropped)
        return out

    def _deliver(
        self,
        rpc: str,
        items: Iterable[Any],
        cap: int,
        deliver: Callable[..., None],
        broken: str | None = None,
    ) -> pb.EventReply:
        """`_collect` the stream and hand it to the session; a failed stream is reported
        to `deliver` as `([], broken)` when `broken` is given (a view waits for it)."""
        collected = self._collect(rpc, items, cap)
        if isinstance(collected, pb.EventReply):
            if broken is not None:
                deliver([], broken)
            return collected
        try:
            deliver(collected)
        except Exception as exc:
            log.warning("%s failed: %s: %s", rpc, type(exc).__name__, exc)
            return failed_reply()
        return _reply()

    def _garbage(
        self, rpc: str, garbage: _Garbage, context: grpc.ServicerContext | None
    ) -> pb.EventReply:
        peer = context.peer() if context is not None else "a client"
        log.warning("%s from %s: not a valid message (%s)", rpc, peer, garbage.error)
        return failed_reply()

    def _too_large(self, what: str, cap: int) -> pb.EventReply:
        message = f"The training sent a {what} larger than {cap // MIB} MiB; it was refused."
        log.warning(message)
        self.session.wire_notice(message)
        return failed_reply()


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}"


def _handlers(servicer: EventListener) -> grpc.GenericRpcHandler:
    ser = pb.EventReply.SerializeToString
    unary = grpc.unary_unary_rpc_method_handler
    stream = grpc.stream_unary_rpc_method_handler
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "WaitCMD": unary(servicer.WaitCMD, _safe_parser(pb.Metadata), ser),
            "SendMetadata": unary(servicer.SendMetadata, _safe_parser(pb.Metadata), ser),
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
            "SendHeartbeat": unary(servicer.SendHeartbeat, _safe_parser(pb.Heartbeat), ser),
        },
    )


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


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


def start_server(
    session: OnlineSession,
    host: str = "127.0.0.1",
    port: int = 50051,
    options: ServerOptions | None = None,
) -> grpc.Server:
    """Listen on `host:port` (0 = any free port) and serve `session`. The bound address is
    recorded on the session (`session.address`). Raises `ServerStartError`."""
    options = options or ServerOptions()
    _check_port_free(host, port)
    server = grpc.server(
        futures.ThreadPoolExecutor(
            max_workers=options.max_workers, thread_name_prefix="tuidebug-grpc"
        ),
        options=[
            ("grpc.max_receive_message_length", options.max_receive_message_bytes),
            ("grpc.max_send_message_length", options.max_send_message_bytes),
            # without this a second server could share the port and split the clients
            ("grpc.so_reuseport", 0),
        ],
    )
    servicer = EventListener(session, options)
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
    session.attach_server(server, format_address(host, bound))
    return server
