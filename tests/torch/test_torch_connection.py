"""The PyTorch client's connection in one process: a debugger that appears after the training
started (`wait=False`), the step it shows (`step=`), the rank fields of a single training (none),
and what losing the debugger costs the training (one retry, not MindSpore's five)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import tuidebug.torch as tdb
from tests.torch.support import TinyCNN, Training, free_port, sgd_loop, torch, wait_state
from tuidebug.core.session import SessionState
from tuidebug.online.session import OnlineSession
from tuidebug.torch.ranks import process_rank

WAITING = SessionState.WAITING
FOREVER = 1_000_000


@pytest.fixture(autouse=True)
def _stop_trainings() -> Iterator[None]:
    yield
    Training.stop_all()


def batches(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(i)
    return torch.randn(4, 1, 8, 8, generator=g), torch.randn(4, 3, generator=g)


def timed_training(port: int, stamps: list[float], **attach: object) -> Training:
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    stop = threading.Event()
    body = sgd_loop(
        model,
        opt,
        FOREVER,
        batch=batches,
        stop=stop,
        before=lambda i: stamps.append(time.monotonic()),
    )
    return Training(model, body, optimizer=opt, port=port, stop=stop, **attach).start()


@pytest.mark.filterwarnings("ignore::tuidebug.torch.DebuggerWarning")
def test_late_attach_connects_when_a_debugger_appears_and_shows_its_step() -> None:
    port = free_port()
    stamps: list[float] = []
    training = timed_training(port, stamps, wait=False, step=50)
    deadline = time.monotonic() + 60
    while len(stamps) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(stamps) >= 5, "the training did not run on without a debugger"
    session = OnlineSession("127.0.0.1", port, wait_slice=0.1)
    try:
        session.start()
        wait_state(session, WAITING, timeout=60)
        assert session.metadata.step > 50  # the training's own step, not 0
        assert training.debugger is not None and training.debugger.connected
        session.terminate()
        training.join(60)
        assert isinstance(training.error, tdb.Terminated)
    finally:
        training.stop.set()
        session.close()


@pytest.mark.filterwarnings("ignore::tuidebug.torch.DebuggerWarning")
def test_losing_the_debugger_costs_one_retry_not_fifteen_seconds() -> None:
    """The default `retry_delay` (1 s): the longest pause of the training around the loss
    stays far under MindSpore's 1+2+3+4+5 s of retries."""
    session = OnlineSession("127.0.0.1", 0, wait_slice=0.1)
    session.start()
    stamps: list[float] = []
    training = timed_training(session.port, stamps)
    try:
        wait_state(session, WAITING, timeout=60)
        session.continue_()
        deadline = time.monotonic() + 60
        while len(stamps) < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
        session.close()
        lost = len(stamps)
        while len(stamps) < lost + 20 and time.monotonic() < deadline + 30:
            time.sleep(0.02)
        assert len(stamps) >= lost + 20, "the training did not go on without its debugger"
        gaps = [b - a for a, b in zip(stamps[lost - 2 :], stamps[lost - 1 :], strict=False)]
        assert max(gaps) < 8.0, f"the training stalled {max(gaps):.1f} s"
        # the training notices the loss at its next call to the debugger, which 20 fast
        # steps may not have reached yet: the loss is judged by the stall above, and the
        # flag only has to follow within a heartbeat or two
        debugger = training.debugger
        assert debugger is not None
        settle = time.monotonic() + 90
        while debugger.connected and time.monotonic() < settle:
            time.sleep(0.05)
        assert not debugger.connected
    finally:
        training.stop.set()
        training.join(60)
        session.close()


def test_a_single_training_sends_no_rank() -> None:
    assert process_rank() is None  # no process group: MindSpore's metadata, as before
