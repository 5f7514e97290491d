"""A debugger that freezes without closing its connection (a fake gRPC servicer whose
WaitCMD and heartbeats stop answering, as a stopped or hung process does): the training's
wait at its suspension is bounded by the heartbeat deadline (`policy.HEARTBEAT_GIVE_UP`
missed heartbeats), then the training goes on without the debugger with one warning, as for
a closed connection. The client alone: a blocked WaitCMD returns as a lost connection."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from tests.torch.support import TinyCNN, Training, sgd_loop, torch
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.client.protocol import ProtocolClient

LONG = 600.0  # a frozen call's sleep; the test releases it at its end


class Frozen(pb_grpc.EventListenerServicer):  # type: ignore[misc]
    """Answers the handshake and the graph, then freezes: WaitCMD never answers and the
    heartbeats stop being answered once the first WaitCMD arrived."""

    def __init__(self) -> None:
        self.frozen = threading.Event()
        self.release = threading.Event()
        self.beats = 0

    def SendMetadata(self, request: Any, context: Any) -> pb.EventReply:
        return pb.EventReply(version_matched=True)

    def SendGraph(self, request_iterator: Any, context: Any) -> pb.EventReply:
        for _ in request_iterator:
            pass
        return pb.EventReply()

    def WaitCMD(self, request: Any, context: Any) -> pb.EventReply:
        self.frozen.set()
        self.release.wait(LONG)
        return pb.EventReply(exit=True)

    def SendHeartbeat(self, request: Any, context: Any) -> pb.EventReply:
        self.beats += 1
        if self.frozen.is_set():
            self.release.wait(LONG)
        return pb.EventReply()


@pytest.fixture
def frozen() -> Iterator[tuple[Frozen, int]]:
    servicer = Frozen()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    pb_grpc.add_EventListenerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, port
    finally:
        servicer.release.set()
        server.stop(0)


class _Provider:
    def lookup(self, name: str, slot: str, iter: str) -> None:
        return None

    def check_items(self) -> list[Any]:
        return []


@pytest.mark.parametrize("interruptible", [False, True])
def test_the_client_gives_a_frozen_debugger_up(
    frozen: tuple[Frozen, int], interruptible: bool
) -> None:
    _servicer, port = frozen
    client = ProtocolClient(
        f"127.0.0.1:{port}", heartbeat_period=1, heartbeat_give_up=2, interruptible=interruptible
    )
    try:
        assert client.connect() is True
        started = time.monotonic()
        assert client.command_loop(_Provider(), 0) is None  # type: ignore[arg-type]
        assert time.monotonic() - started < 30.0
        assert client.connection_lost and client.gave_up.is_set()
        assert not client.send_hits([pb.WatchpointHit(id=1)])  # refused at once, no crash
        client.finish(3)  # the goodbye on the closed channel: skipped, no crash
    finally:
        client.close()


@pytest.mark.filterwarnings("ignore::tuidebug.torch.DebuggerWarning")
def test_a_frozen_debugger_is_given_up_and_the_training_goes_on(
    frozen: tuple[Frozen, int], caplog: pytest.LogCaptureFixture
) -> None:
    servicer, port = frozen
    caplog.set_level(logging.INFO, logger="tuidebug.torch")
    torch.manual_seed(0)
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def batches(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(4, 1, 8, 8), torch.randn(4, 3)

    started = time.monotonic()
    training = Training(
        model, sgd_loop(model, opt, 5, batch=batches), optimizer=opt, port=port,
        heartbeat_period=1, retry_delay=0.02,
    ).start()  # fmt: skip
    training.join(60)
    assert training.error is None
    assert servicer.frozen.is_set()  # it did wait on the frozen debugger
    assert time.monotonic() - started < 45.0  # bounded: a few heartbeats, not TCP's minutes
    lost = [r for r in caplog.records if "Lost the debugger" in r.getMessage()]
    assert len(lost) == 1, [r.getMessage() for r in caplog.records]
    assert training.debugger is not None and not training.debugger.connected
