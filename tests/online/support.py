"""Helpers of the online tests: a session on an ephemeral loopback port, a hand-written raw
protocol client built only on the generated stubs, and bounded waits (never sleeps used as
assertions: every wait polls a condition and fails after a generous timeout)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.core.session import EventLog, SessionState
from tuidebug.online.server import ServerOptions
from tuidebug.online.session import OnlineSession

TIMEOUT = 20.0  # generous: the machine is shared; only failures ever wait this long
RPC_TIMEOUT = 20.0
MIB = 1024 * 1024


def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.01)


def wait_state(session: OnlineSession, state: SessionState, timeout: float = TIMEOUT) -> None:
    wait_until(
        lambda: session.metadata.state is state,
        timeout,
        f"state {state.value} (now {session.metadata.state.value})",
    )


def make_session(**kwargs: Any) -> tuple[OnlineSession, EventLog]:
    options = kwargs.pop("server_options", None) or ServerOptions(max_workers=8)
    kwargs.setdefault("tensor_timeout", TIMEOUT)
    kwargs.setdefault("wait_slice", 0.1)
    session = OnlineSession("127.0.0.1", 0, server_options=options, **kwargs)
    log = EventLog()
    session.subscribe(log)
    session.start()
    return session, log


def fixture_graph(dump_root: Path) -> graph_pb.GraphProto:
    """The GraphProto inside a dump's `.pb` (what MindSpore sends online)."""
    pb_file = next((dump_root / "rank_0" / "graphs").glob("*.pb"))
    model = graph_pb.ModelProto.FromString(pb_file.read_bytes())
    return model.graph


class RawClient:
    """A minimal MindSpore-like client written against the generated stubs only."""

    def __init__(self, address: str, backend: str = "GPU") -> None:
        self.backend = backend
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.EventListenerStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def metadata(self, step: int = 0, node: str = "", **kw: Any) -> pb.Metadata:
        kw.setdefault("backend", self.backend)
        kw.setdefault("ms_version", "2.3.0")
        return pb.Metadata(device_name="0:0", cur_step=step, cur_node=node, **kw)

    def hello(self, ms_version: str = "2.3.0") -> pb.EventReply:
        return self.stub.SendMetadata(self.metadata(ms_version=ms_version), timeout=RPC_TIMEOUT)

    def send_graph(self, graph: graph_pb.GraphProto, chunk: int = 3 * MIB) -> pb.EventReply:
        data = graph.SerializeToString()
        chunks = [pb.Chunk(buffer=data[i : i + chunk]) for i in range(0, len(data), chunk)]
        return self.stub.SendGraph(iter(chunks), timeout=RPC_TIMEOUT)

    def wait(self, step: int = 0, node: str = "", timeout: float = RPC_TIMEOUT) -> pb.EventReply:
        return self.stub.WaitCMD(self.metadata(step, node), timeout=timeout)

    def wait_future(self, step: int = 0, node: str = "") -> grpc.Future:
        return self.stub.WaitCMD.future(self.metadata(step, node), timeout=RPC_TIMEOUT)

    def raw_unary(self, method: str, data: bytes) -> bytes:
        call = self.channel.unary_unary(
            f"/debugger.EventListener/{method}",
            request_serializer=None,
            response_deserializer=None,
        )
        return call(data, timeout=RPC_TIMEOUT)

    def raw_stream(self, method: str, items: Iterator[bytes]) -> bytes:
        call = self.channel.stream_unary(
            f"/debugger.EventListener/{method}",
            request_serializer=None,
            response_deserializer=None,
        )
        return call(items, timeout=RPC_TIMEOUT)


def connect_raw(session: OnlineSession, graph: graph_pb.GraphProto) -> RawClient:
    """Handshake + graph; returns the client, not yet waiting."""
    client = RawClient(session.address)
    reply = client.hello()
    assert reply.version_matched
    assert client.send_graph(graph).status == pb.EventReply.OK
    return client
