"""Things going wrong on a live connection (spec §2.10, §2.11): a client killed in the middle
of a stream, lost heartbeats, a debugger restarted while the training retries, a debugger
gone for good. All over 127.0.0.1, every wait bounded."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.online.support import (
    TIMEOUT,
    RawClient,
    connect_raw,
    fixture_graph,
    make_session,
    wait_state,
    wait_until,
)
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.client.simulator import DumpSimulator
from tuidebug.core.session import (
    ClientDisconnected,
    Ending,
    EventLog,
    GraphsLoaded,
    SessionError,
    SessionState,
)
from tuidebug.core.tensor import TensorRef
from tuidebug.online.server import ServerStartError
from tuidebug.online.session import OnlineSession

FAST_WATCHDOG = {"heartbeat_limits": (5, 3600), "heartbeat_scale": 0.1}  # 5 s → 0.55 s


def _beat(client: RawClient, period: int = 5) -> pb.EventReply:
    return client.stub.SendHeartbeat(
        pb.Heartbeat(message="Debugger is alive", period=period), timeout=TIMEOUT
    )


def _fetch(session: OnlineSession, ref: TensorRef) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = session.tensor(ref)
        except Exception as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_client_killed_mid_stream(dump_2_0: Path) -> None:
    session, log = make_session(**FAST_WATCHDOG)
    try:
        client = connect_raw(session, fixture_graph(dump_2_0))
        stop_beats = threading.Event()

        def beats() -> None:
            while not stop_beats.wait(0.05):
                _beat(client)

        assert _beat(client).status == pb.EventReply.OK  # the watchdog runs from now on

        threading.Thread(target=beats, daemon=True).start()
        future = client.wait_future()
        wait_state(session, SessionState.WAITING)
        kernel = session.graphs["kernel_graph_0"].operators[0].name
        thread, out = _fetch(session, TensorRef(kernel))
        (req,) = future.result(timeout=TIMEOUT).view_cmd.tensors
        asked_for_more = threading.Event()
        never = threading.Event()

        def pieces() -> Iterator[graph_pb.TensorProto]:
            yield graph_pb.TensorProto(
                node_name=req.node_name, slot="0", tensor_content=b"\0" * 1024, data_type=11
            )
            asked_for_more.set()  # the first piece is on its way; now "die"
            never.wait(TIMEOUT)

        call = client.stub.SendTensors.future(pieces(), timeout=TIMEOUT)
        assert asked_for_more.wait(TIMEOUT)
        call.cancel()
        stop_beats.set()
        client.close()
        thread.join(TIMEOUT)
        never.set()
        # the stream broke off or the watchdog declared the client gone: either way an error
        assert isinstance(out.get("error"), SessionError), out
        log.wait_for(ClientDisconnected, TIMEOUT)
        wait_state(session, SessionState.DISCONNECTED)
        # the server itself is unharmed: a new training can connect
        other = connect_raw(session, fixture_graph(dump_2_0))
        future = other.wait_future()
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        other.close()
    finally:
        session.close()


def test_heartbeat_loss_resets_the_session(dump_2_0: Path) -> None:
    session, log = make_session(**FAST_WATCHDOG)
    try:
        client = connect_raw(session, fixture_graph(dump_2_0))
        assert _beat(client).status == pb.EventReply.OK
        future = client.wait_future()
        wait_state(session, SessionState.WAITING)
        for _ in range(3):
            assert _beat(client).status == pb.EventReply.OK
        # no more heartbeats: three missed periods later the client is declared gone
        event = log.wait_for(ClientDisconnected, TIMEOUT)
        assert "heartbeat" in event.reason
        wait_state(session, SessionState.DISCONNECTED)
        assert "heartbeat" in session.metadata.message
        assert session.metadata.ending is Ending.LOST  # named, not "finished" (issue 28)
        assert future.result(timeout=TIMEOUT).status == pb.EventReply.FAILED
        assert client.wait(timeout=5).status == pb.EventReply.FAILED  # protocol state reset
        assert session.graphs  # still shown until a new training arrives
        with pytest.raises(SessionError):
            session.step()
        # a new SendMetadata starts a new training session
        start = len(log.events)
        client2 = connect_raw(session, fixture_graph(dump_2_0))
        future = client2.wait_future()
        loaded = log.wait_for(GraphsLoaded, TIMEOUT, after=start)
        assert loaded.first_time
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        client.close()
        client2.close()
    finally:
        session.close()


def test_killed_simulator_is_detected_by_the_watchdog(dump_2_0: Path) -> None:
    session, log = make_session(**FAST_WATCHDOG)
    sim = DumpSimulator(dump_2_0, session.address, heartbeat_period=5, heartbeat_interval=0.05)
    thread = sim.start_thread()
    try:
        wait_state(session, SessionState.WAITING)
        session.step(1)
        wait_until(lambda: session.metadata.step == 1, what="step 1")
        wait_state(session, SessionState.WAITING)
        sim.abort()  # no goodbye, no more heartbeats
        log.wait_for(ClientDisconnected, TIMEOUT)
        wait_state(session, SessionState.DISCONNECTED)
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    finally:
        session.close()
        sim.abort()


def _restart_on(port: int) -> tuple[OnlineSession, EventLog]:
    deadline = time.monotonic() + TIMEOUT
    while True:
        session = OnlineSession("127.0.0.1", port, wait_slice=0.1, tensor_timeout=TIMEOUT)
        log = EventLog()
        session.subscribe(log)
        try:
            session.start()
            return session, log
        except ServerStartError:
            session.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_server_restarted_while_the_client_retries(dump_2_0: Path) -> None:
    first, _ = make_session()
    port = first.port
    sim = DumpSimulator(
        dump_2_0,
        first.address,
        heartbeat=False,
        reconnect=True,
        retry_delay=0.05,
        max_failures=1000,
    )
    thread = sim.start_thread()
    second = None
    try:
        wait_state(first, SessionState.WAITING)
        first.step(1)
        wait_until(lambda: first.metadata.step == 1, what="step 1")
        wait_state(first, SessionState.WAITING)
        first.close()  # the debugger goes away; the training keeps retrying WaitCMD
        second, log = _restart_on(port)
        loaded = log.wait_for(GraphsLoaded, TIMEOUT)
        assert loaded.first_time and list(loaded.graphs) == ["kernel_graph_0"]
        wait_state(second, SessionState.WAITING)
        assert second.metadata.step == 1  # the training is where it was
        second.step(1)
        wait_until(lambda: second.metadata.step == 2, what="step 2")
        wait_state(second, SessionState.WAITING)
        second.terminate()
        wait_state(second, SessionState.DONE)
        thread.join(TIMEOUT)
        assert not thread.is_alive() and sim.error == ""
    finally:
        first.close()
        if second is not None:
            second.close()
        sim.abort()


def test_client_exits_when_the_debugger_is_gone_for_good(dump_2_0: Path) -> None:
    session, _ = make_session()
    sim = DumpSimulator(dump_2_0, session.address, heartbeat=False, retry_delay=0.01)
    thread = sim.start_thread()
    try:
        wait_state(session, SessionState.WAITING)
        session.close()
        # spec §2.5: more than 5 failed WaitCMDs (with back-off) → the training exits
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert sim.client.terminated
        assert sim.cur_step == 0
    finally:
        session.close()
        sim.abort()


def test_client_reports_an_unreachable_debugger(dump_2_0: Path) -> None:
    session, _ = make_session()
    address = session.address
    session.close()  # nothing listens there any more
    sim = DumpSimulator(dump_2_0, address, heartbeat=False)
    thread = sim.start_thread()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert "Cannot reach the debugger" in sim.error
