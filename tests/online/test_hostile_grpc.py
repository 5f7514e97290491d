"""Hostile gRPC peers against `tuidebug online`: garbage, oversized, stalled, concurrent and
competing clients, written with the raw generated stubs. Each peer gets a connection of its
own (as a separate process has: the server tells trainings apart by their connection).

The server's limits are made small and its timeouts short through `ServerOptions` so every
test is fast; memory is checked with the server's own buffered-bytes counter, never RSS.
Every test is bounded (`timeout`), every wait polls a condition."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.online.support import (
    TIMEOUT,
    RawClient,
    fixture_graph,
    make_session,
    wait_state,
    wait_until,
)
from tuidebug import cli
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.client.protocol import ClientError, ProtocolClient
from tuidebug.client.simulator import DumpSimulator
from tuidebug.core.session import (
    ClientDisconnected,
    EventLog,
    GraphsLoaded,
    Notice,
    SessionError,
    SessionState,
)
from tuidebug.online.server import EventListener, ServerOptions
from tuidebug.online.session import OnlineSession

MIB = 1024 * 1024
OK = pb.EventReply.OK
FAILED = pb.EventReply.FAILED
SHORT = 5.0  # an answer the server must give at once, even under attack


class Peer(RawClient):
    """A raw client on a connection of its own."""

    def __init__(self, address: str, backend: str = "GPU") -> None:
        self.backend = backend
        self.channel = grpc.insecure_channel(
            address, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        self.stub = pb_grpc.EventListenerStub(self.channel)


def _listener(session: OnlineSession) -> EventListener:
    assert session.listener is not None
    return session.listener


def _stalled(first: Any, release: threading.Event) -> Iterator[Any]:
    """A stream that sends one piece and then nothing until released."""
    yield first
    release.wait(TIMEOUT)


def _attach(session: OnlineSession, graph: graph_pb.GraphProto) -> tuple[Peer, grpc.Future]:
    """A training: handshake, graph, and its first WaitCMD (the session then waits)."""
    peer = Peer(session.address)
    assert peer.hello().version_matched
    assert peer.send_graph(graph).status == OK
    future = peer.wait_future()
    wait_state(session, SessionState.WAITING)
    return peer, future


@pytest.fixture
def graph(dump_2_0: Path) -> graph_pb.GraphProto:
    return fixture_graph(dump_2_0)


# ------------------------------------------------------------------ denial of service
@pytest.mark.timeout(60)
def test_stalled_streams_do_not_starve_a_training(graph: graph_pb.GraphProto) -> None:
    """12 streams that send one piece and stall: the streams beyond the slots are refused
    at once, and a training's SendMetadata is still answered at once."""
    options = ServerOptions(max_workers=8, message_timeout=30.0)
    session, _ = make_session(server_options=options)
    release = threading.Event()
    peers = [Peer(session.address) for _ in range(12)]
    try:
        calls = [
            p.stub.SendGraph.future(
                _stalled(pb.Chunk(buffer=b"\0" * 1024), release), timeout=TIMEOUT
            )
            for p in peers
        ]
        listener = _listener(session)
        slots = options.stream_slots
        assert slots < options.max_workers
        wait_until(lambda: listener.guard.streams == slots, what="the stream slots in use")
        wait_until(lambda: sum(c.done() for c in calls) == 12 - slots, what="refusals")
        refused = [c for c in calls if c.done()]
        assert all(c.code() is grpc.StatusCode.RESOURCE_EXHAUSTED for c in refused)
        assert "streams open" in refused[0].details()
        # the stalled ones hold their threads, yet a training connects at once
        training = Peer(session.address)
        reply = training.stub.SendMetadata(training.metadata(), timeout=SHORT)
        assert reply.status == OK and reply.version_matched
        # …and its attaching cancels the other peers' streams, freeing their slots
        wait_until(lambda: listener.guard.streams == 0, what="the stalled streams cancelled")
        assert training.send_graph(graph).status == OK
        future = training.wait_future()
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        training.close()
    finally:
        release.set()
        for p in peers:
            p.close()
        session.close()


@pytest.mark.timeout(60)
def test_a_stalled_stream_times_out_and_gives_everything_back() -> None:
    session, _ = make_session(server_options=ServerOptions(max_workers=8, message_timeout=0.3))
    release = threading.Event()
    peer = Peer(session.address)
    try:
        listener = _listener(session)
        call = peer.stub.SendGraph.future(
            _stalled(pb.Chunk(buffer=b"\0" * MIB), release), timeout=TIMEOUT
        )
        with pytest.raises(grpc.RpcError) as info:
            call.result(timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.CANCELLED
        assert listener.guard.timed_out == 1
        wait_until(lambda: listener.guard.streams == 0, what="the slot given back")
        assert listener.budget.peak == MIB and listener.budget.used == 0
    finally:
        release.set()
        peer.close()
        session.close()


@pytest.mark.timeout(60)
def test_a_unary_call_whose_request_never_comes_times_out() -> None:
    """A client can open a unary method as a stream and never send the request: that must
    not hold a thread for longer than `message_timeout`."""
    session, _ = make_session(server_options=ServerOptions(max_workers=8, message_timeout=0.3))
    release = threading.Event()
    peer = Peer(session.address)

    def nothing() -> Iterator[bytes]:
        release.wait(TIMEOUT)
        yield from ()

    try:
        call = peer.channel.stream_unary(
            "/debugger.EventListener/SendMetadata",
            request_serializer=None,
            response_deserializer=None,
        )
        future = call.future(nothing(), timeout=TIMEOUT)
        with pytest.raises(grpc.RpcError) as info:
            future.result(timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.CANCELLED
        assert _listener(session).guard.timed_out == 1
        assert Peer(session.address).hello().version_matched  # the server is fine
    finally:
        release.set()
        peer.close()
        session.close()


@pytest.mark.timeout(60)
def test_a_trickling_stream_is_cut_at_the_stream_timeout() -> None:
    """One byte now and then keeps the silence clock happy; the whole stream is bounded."""
    options = ServerOptions(max_workers=8, message_timeout=5.0, stream_timeout=0.5)
    session, _ = make_session(server_options=options)
    stop = threading.Event()
    peer = Peer(session.address)

    def trickle() -> Iterator[pb.Chunk]:
        while not stop.wait(0.05):
            yield pb.Chunk(buffer=b"\0")

    try:
        future = peer.stub.SendGraph.future(trickle(), timeout=TIMEOUT)
        with pytest.raises(grpc.RpcError) as info:
            future.result(timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.CANCELLED
        assert _listener(session).guard.timed_out == 1
    finally:
        stop.set()
        peer.close()
        session.close()


# ------------------------------------------------------------------------- memory
@pytest.mark.timeout(60)
def test_buffered_bytes_are_bounded_across_streams() -> None:
    """Four clients each under the per-stream cap, together over the total: the one that
    would exceed it is refused with a sentence and a notice; nothing stays accounted."""
    options = ServerOptions(max_workers=8, max_graph_bytes=8 * MIB, max_buffered_bytes=10 * MIB)
    session, log = make_session(server_options=options)
    listener = _listener(session)
    release = threading.Event()
    peers = [Peer(session.address) for _ in range(4)]

    def three_mib(gate: threading.Event) -> Iterator[pb.Chunk]:
        for _ in range(3):
            yield pb.Chunk(buffer=b"\0" * MIB)
        gate.wait(TIMEOUT)

    try:
        calls = []
        for n, p in enumerate(peers[:3], start=1):
            calls.append(p.stub.SendGraph.future(three_mib(release), timeout=TIMEOUT))
            wait_until(lambda n=n: listener.budget.used == 3 * n * MIB, what=f"{3 * n} MiB")
        # the fourth: its first MiB fits (10 MiB), its second does not
        with pytest.raises(grpc.RpcError) as info:
            peers[3].stub.SendGraph(three_mib(release), timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at most 10 MiB" in info.value.details()
        assert "at most 10 MiB" in log.wait_for(Notice, TIMEOUT).message
        assert listener.budget.used == 9 * MIB  # the refused stream gave its MiB back
        release.set()
        for call in calls:  # zeros are not a graph: refused by parsing
            assert call.result(timeout=TIMEOUT).status == FAILED
        assert listener.budget.used == 0
        assert listener.budget.peak <= options.max_buffered_bytes
    finally:
        release.set()
        for p in peers:
            p.close()
        session.close()


@pytest.mark.timeout(60)
def test_small_messages_count_in_the_budget_too(graph: graph_pb.GraphProto) -> None:
    """A count cap alone would let 100,000 hits of 4 MiB each through."""
    options = ServerOptions(max_workers=8, max_buffered_bytes=2 * MIB)
    session, _ = make_session(server_options=options)
    try:
        peer, future = _attach(session, graph)
        hit = pb.WatchpointHit(
            id=1, tensor=graph_pb.TensorProto(node_name="n" * (512 * 1024), slot="0")
        )
        with pytest.raises(grpc.RpcError) as info:
            peer.stub.SendWatchpointHits(iter([hit] * 8), timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _listener(session).budget.used == 0
        assert session.metadata.state is SessionState.WAITING
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        peer.close()
    finally:
        session.close()


# ------------------------------------------------------------- competing trainings
@pytest.mark.timeout(60)
def test_a_second_training_is_refused_while_the_first_is_attached(dump_2_0: Path) -> None:
    session, log = make_session()
    first = DumpSimulator(dump_2_0, session.address, backend="GPU", heartbeat=False)
    thread = first.start_thread()
    second = ProtocolClient(session.address, heartbeat=False)
    try:
        loaded = log.wait_for(GraphsLoaded, TIMEOUT)
        wait_state(session, SessionState.WAITING)
        source = session.metadata.source
        with pytest.raises(ClientError, match="refused this training") as info:
            second.connect()
        assert "one training at a time" in str(info.value)
        notice = log.wait_for(Notice, TIMEOUT)
        assert "refused" in notice.message and notice.severity == "warning"
        # its goodbye and its WaitCMD do not touch the attached session
        second.finish()
        assert session.metadata.state is SessionState.WAITING
        assert session.metadata.source == source
        assert session.graphs == loaded.graphs
        session.step(1)
        wait_until(lambda: session.metadata.step == 1, what="step 1 of the first training")
        wait_state(session, SessionState.WAITING)
        session.terminate()
        thread.join(TIMEOUT)
        assert first.error == ""
    finally:
        second.close()
        first.abort()
        session.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "message",
    ["SendMetadata", "SendGraph", "goodbye", "SendHeartbeat", "SendWatchpointHits", "WaitCMD"],
)
def test_a_refused_peer_cannot_touch_the_attached_session(
    graph: graph_pb.GraphProto, message: str
) -> None:
    session, _ = make_session()
    try:
        peer, future = _attach(session, graph)
        graphs = session.graphs
        other = Peer(session.address)
        other_graph = graph_pb.GraphProto()
        other_graph.CopyFrom(graph)
        other_graph.name = "someone_else"
        try:
            if message == "SendMetadata":
                other.hello()
            elif message == "SendGraph":
                other.send_graph(other_graph)
            elif message == "goodbye":
                other.stub.SendMetadata(other.metadata(training_done=True), timeout=SHORT)
            elif message == "SendHeartbeat":
                other.stub.SendHeartbeat(pb.Heartbeat(period=5), timeout=SHORT)
            elif message == "SendWatchpointHits":
                other.stub.SendWatchpointHits(iter([pb.WatchpointHit(id=1)]), timeout=SHORT)
            else:
                assert other.wait(timeout=SHORT).status == FAILED
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.FAILED_PRECONDITION
            assert "one training at a time" in exc.details()
        assert session.metadata.state is SessionState.WAITING
        assert session.graphs == graphs and not future.done()
        session.step(1)
        assert future.result(timeout=TIMEOUT).run_cmd.run_level == "step"
        other.close()
        peer.close()
    finally:
        session.close()


@pytest.mark.timeout(60)
def test_a_newcomer_takes_over_once_the_first_is_gone(graph: graph_pb.GraphProto) -> None:
    session, log = make_session()
    try:
        first, _ = _attach(session, graph)
        first.close()  # gone: its connection closes under its WaitCMD
        log.wait_for(ClientDisconnected, TIMEOUT)
        start = len(log.events)
        second = Peer(session.address)
        assert second.hello().version_matched
        notice = log.wait_for(Notice, TIMEOUT, after=start)
        assert "replaces" in notice.message
        assert second.send_graph(graph).status == OK
        future = second.wait_future()
        assert log.wait_for(GraphsLoaded, TIMEOUT, after=start).first_time
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        second.close()
    finally:
        session.close()


@pytest.mark.timeout(60)
def test_refused_simulate_exits_non_zero_with_one_sentence(
    dump_2_0: Path, graph: graph_pb.GraphProto, capsys: pytest.CaptureFixture[str]
) -> None:
    session, _ = make_session()
    try:
        peer, future = _attach(session, graph)
        code = cli.main(["simulate", str(dump_2_0), "--connect", session.address])
        assert code != 0
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and err[0].endswith("."), err
        assert "refused this training" in err[0] and "Traceback" not in err[0]
        assert session.metadata.state is SessionState.WAITING
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        peer.close()
    finally:
        session.close()


@pytest.mark.timeout(60)
def test_simulate_that_loses_the_debugger_exits_non_zero(dump_2_0: Path) -> None:
    session, _ = make_session()
    sim = DumpSimulator(dump_2_0, session.address, heartbeat=False, retry_delay=0.01)
    thread = sim.start_thread()
    try:
        wait_state(session, SessionState.WAITING)
        session.close()  # the debugger goes away for good
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert "stopped answering" in sim.error
    finally:
        sim.abort()
        session.close()


# ------------------------------------------------------------ a vanished training
_KILLED_CLIENT = """
import sys, grpc
from tuidebug._proto import debug_grpc_pb2 as pb, debug_grpc_pb2_grpc as g
from tuidebug._proto import debug_graph_pb2 as gp
stub = g.EventListenerStub(grpc.insecure_channel(sys.argv[1]))
stub.SendMetadata(pb.Metadata(device_name="0:0", backend="GPU", ms_version="2.3.0"))
stub.SendGraph(iter([pb.Chunk(buffer=open(sys.argv[2], "rb").read())]))
print("waiting", flush=True)
stub.WaitCMD(pb.Metadata(device_name="0:0", backend="GPU"))  # killed in here
"""


@pytest.mark.timeout(60)
def test_a_killed_training_without_heartbeats_shows_disconnected(
    graph: graph_pb.GraphProto, tmp_path: Path
) -> None:
    session, log = make_session()
    graph_file = tmp_path / "graph.bin"
    graph_file.write_bytes(graph.SerializeToString())
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CLIENT, session.address, str(graph_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "waiting"
        wait_state(session, SessionState.WAITING)
        proc.kill()
        proc.wait(TIMEOUT)
        event = log.wait_for(ClientDisconnected, TIMEOUT)
        assert "disconnected" in event.reason
        wait_state(session, SessionState.DISCONNECTED)
        with pytest.raises(SessionError):  # not queued for a training that is gone
            session.step(1)
    finally:
        proc.kill()
        proc.wait(TIMEOUT)
        session.close()


# ------------------------------------------------------------------------ addresses
@pytest.mark.timeout(60)
def test_wildcard_host_lists_what_it_listens_on() -> None:
    session = OnlineSession("0.0.0.0", 0, server_options=ServerOptions(max_workers=8))
    log = EventLog()
    session.subscribe(log)
    try:
        session.start()
        port = session.port
        assert f"0.0.0.0:{port}" in session.bound_addresses
        if f"[::]:{port}" in session.bound_addresses:  # the machine has IPv6
            peer = Peer(f"[::1]:{port}")
            assert peer.hello().version_matched
            peer.close()
    finally:
        session.close()
    loopback = OnlineSession("127.0.0.1", 0, server_options=ServerOptions(max_workers=8))
    try:
        loopback.start()
        assert loopback.bound_addresses == (f"127.0.0.1:{loopback.port}",)
    finally:
        loopback.close()


@pytest.mark.timeout(60)
def test_a_graph_past_a_cap_is_refused_with_a_notice(graph: graph_pb.GraphProto) -> None:
    """A peer's graph that declares 5,000,000 dimensions is refused, and the TUI is told why
    (not only the server log)."""
    hostile = graph_pb.GraphProto()
    hostile.CopyFrom(graph)
    hostile.node[0].output_type.tensor_type.shape.dim.extend(
        [graph_pb.TensorShapeProto.Dimension(size=1)] * 5_000_000
    )
    session, log = make_session()
    try:
        peer = Peer(session.address)
        assert peer.hello().version_matched
        start = len(log.events)
        assert peer.send_graph(hostile).status == FAILED
        notice = log.wait_for(Notice, TIMEOUT, after=start)
        assert "refused" in notice.message and "more than the 64" in notice.message
        peer.close()
    finally:
        session.close()


@pytest.mark.timeout(15)
def test_the_goodbye_to_a_silent_debugger_is_bounded() -> None:
    """A 'debugger' that accepts the TCP connection and never speaks: the end-of-training
    SendMetadata gives up after GOODBYE_TIMEOUT instead of gRPC's 20 s connect timeout
    (Ctrl+C of `tuidebug simulate` took that long)."""
    import socket

    from tuidebug.client import protocol

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        client = ProtocolClient(f"127.0.0.1:{silent.getsockname()[1]}", heartbeat=False)
        finished = threading.Event()
        worker = threading.Thread(target=lambda: (client.finish(), finished.set()), daemon=True)
        worker.start()
        assert finished.wait(protocol.GOODBYE_TIMEOUT + 5)
