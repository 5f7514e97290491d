"""A training that closes its channel while no call of it is in flight (after its handshake,
or while it runs a step) is seen as gone at once, and the next training is accepted at once,
not after three missed heartbeats (issue 27 §6). Real gRPC clients over 127.0.0.1."""

from __future__ import annotations

import sys
import threading
import time
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
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.session import Ending, SessionState
from tuidebug.online.peer_link import connection_open

PROMPT = 3.0  # "at once", with room for a shared machine; the heartbeats would take 15 s+

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's connection table is Linux's"
)


def _beats(client: RawClient, stop: threading.Event) -> None:
    """A MindSpore-like heartbeat every 5 s (the shortest period it may ask for)."""
    while True:
        try:
            client.stub.SendHeartbeat(pb.Heartbeat(message="alive", period=5), timeout=TIMEOUT)
        except Exception:
            return  # the channel is closed
        if stop.wait(5):
            return


def _second_training_accepted(session_address: str, within: float) -> RawClient:
    """A second training's hello, retried as MindSpore does, must succeed `within` s."""
    client = RawClient(session_address)
    deadline = time.monotonic() + within
    while True:
        try:
            assert client.hello().version_matched
            return client
        except Exception:
            if time.monotonic() > deadline:
                client.close()
                raise
            time.sleep(0.1)


@pytest.mark.timeout(60)
def test_a_channel_closed_before_waitcmd_frees_the_server_at_once(dump_2_0: Path) -> None:
    session, _log = make_session()
    stop = threading.Event()
    try:
        first = connect_raw(session, fixture_graph(dump_2_0))
        threading.Thread(target=_beats, args=(first, stop), daemon=True).start()
        wait_state(session, SessionState.LOADING)
        first.close()  # between the graph and the first WaitCMD: no call in flight
        started = time.monotonic()
        second = _second_training_accepted(session.address, PROMPT)
        assert time.monotonic() - started < PROMPT
        assert second.send_graph(fixture_graph(dump_2_0)).status == pb.EventReply.OK
        future = second.wait_future()
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        second.close()
    finally:
        stop.set()
        session.close()


@pytest.mark.timeout(60)
def test_a_channel_closed_while_a_step_runs_is_shown_disconnected_at_once(
    dump_2_0: Path,
) -> None:
    session, _log = make_session()
    stop = threading.Event()
    try:
        first = connect_raw(session, fixture_graph(dump_2_0))
        threading.Thread(target=_beats, args=(first, stop), daemon=True).start()
        future = first.wait_future()
        wait_state(session, SessionState.WAITING)
        session.step()
        assert future.result(timeout=TIMEOUT).HasField("run_cmd")
        first.close()  # the training "runs its step" and dies before its next WaitCMD
        wait_state(session, SessionState.DISCONNECTED, timeout=PROMPT)
        assert session.metadata.ending is Ending.CLOSED
        assert "closed its connection" in session.metadata.message
        second = _second_training_accepted(session.address, 1.0)
        second.close()
    finally:
        stop.set()
        session.close()


@pytest.mark.timeout(30)
def test_the_connection_probe_tells_open_from_closed_and_unknown(dump_2_0: Path) -> None:
    session, _log = make_session()
    try:
        client = connect_raw(session, fixture_graph(dump_2_0))
        peer = session._peer  # the server's name for the client's connection
        assert connection_open(peer) is True
        client.close()
        wait_until(lambda: connection_open(peer) is False, PROMPT, "the connection to close")
        assert connection_open("unix:/tmp/x") is None  # not TCP: the heartbeats decide
        assert connection_open("ipv4:not-an-address:1") is None
    finally:
        session.close()
