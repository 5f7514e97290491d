"""Helpers of the PyTorch client tests: small models, a training loop in a thread, and the
session/wait helpers of the online tests (every wait is bounded, nothing sleeps to assert)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import tuidebug.torch as tdb  # noqa: E402
from tests.online.support import TIMEOUT, make_session, wait_state, wait_until  # noqa: E402

__all__ = [
    "TIMEOUT",
    "LogNet",
    "TinyCNN",
    "Training",
    "free_port",
    "make_session",
    "node_named",
    "wait_state",
    "wait_until",
]


class Log(nn.Module):
    """A leaf module that produces NaN from negative inputs (the NaN's origin in tests)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class LogNet(nn.Module):
    """fc1 → ReLU → (+ offset) → Log → fc2 → Tanh. With `offset < 0` the Log module is the
    first to produce NaN; fc2 and Tanh only pass it on."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.relu = nn.ReLU()
        self.log = Log()
        self.fc2 = nn.Linear(8, 3)
        self.act = nn.Tanh()
        self.offset = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.relu(self.fc1(x)) + self.offset
        return self.act(self.fc2(self.log(h)))


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(4 * 3 * 3, 16)
        self.sig = nn.Sigmoid()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.relu1(self.conv1(x)))
        x = torch.flatten(x, 1)
        return self.fc2(self.sig(self.fc1(x)))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_named(graph: Any, fragment: str, kind: str = "forward") -> str:
    """The one node of a `ModelGraph` whose name contains `fragment`."""
    names = [n.name for n in graph.nodes if fragment in n.name and n.kind == kind]
    assert len(names) == 1, names
    return names[0]


class Training:
    """Runs `body(debugger)` in a daemon thread after `attach`; keeps its outcome.

    Every instance is remembered so that a test's teardown can `stop_all()` of them: a
    failed test must not leave a training running on without its debugger."""

    instances: ClassVar[list[Training]] = []

    def __init__(
        self,
        model: nn.Module,
        body: Callable[[tdb.Debugger], None],
        *,
        optimizer: Any = None,
        stop: threading.Event | None = None,
        **attach: Any,
    ) -> None:
        Training.instances.append(self)
        self.stop = stop if stop is not None else threading.Event()
        self.model = model
        self.optimizer = optimizer
        self.body = body
        self.attach = attach
        self.debugger: tdb.Debugger | None = None
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.attached = threading.Event()
        self.thread = threading.Thread(target=self._run, name="test-training", daemon=True)

    def start(self) -> Training:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self.debugger = tdb.attach(self.model, self.optimizer, **self.attach)
            self.attached.set()
            self.body(self.debugger)
        except BaseException as exc:  # the test inspects it
            self.error = exc
        finally:
            self.attached.set()
            if self.debugger is not None:
                self.debugger.close()
            self.finished.set()

    def join(self, timeout: float = TIMEOUT) -> None:
        assert self.finished.wait(timeout), "the training did not finish"
        self.thread.join(timeout)

    @classmethod
    def stop_all(cls) -> None:
        for training in cls.instances:
            training.stop.set()
        cls.instances.clear()


def sgd_loop(
    model: nn.Module,
    optimizer: Any,
    steps: int,
    *,
    batch: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    before: Callable[[int], None] | None = None,
    record: list[int] | None = None,
    stop: threading.Event | None = None,
    forward: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Callable[[tdb.Debugger], None]:
    """A training body: `steps` SGD steps with `step_end()` after each (fewer if `stop`);
    `forward` replaces `model(x)` (a compiled model, an autocast region)."""
    run = forward if forward is not None else model

    def body(dbg: tdb.Debugger) -> None:
        loss_fn = nn.MSELoss()
        for i in range(steps):
            if stop is not None and stop.is_set():
                return
            if before is not None:
                before(i)
            x, y = batch(i)
            loss = loss_fn(run(x).float(), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            dbg.step_end()
            if record is not None:
                record.append(i)

    return body
