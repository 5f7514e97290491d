"""The TUI during an offline run, on the demo dump (TensorOverflow fires from step 4 on):
the panes refresh once, when the run stops, with no tensor read for the steps it passes
through and about one session event a step; `p` or Esc stops a continue during a check,
the hits that check found so far are listed and one toast says where it stopped.

A real check of the demo is over before a key could reach it, so the stopped check is a
checker wrapper's: it runs the real check, then shows progress and waits for the stop."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.tui.support import notices, settled, wait_until
from tuidebug.core.session import Progress, SessionEvent, SessionState
from tuidebug.offline.check.checker import CheckReport
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList

SIZE = (160, 48)
OVERFLOW_STEP = 4  # the demo's first Inf is at iteration 3
NODE = "Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0"


class Counters:
    """Session events the app receives, hit-list rebuilds, and tensor reads (summaries,
    the open tensor) made while the session runs or after it stopped."""

    def __init__(self, app: DebuggerApp, session: OfflineSession, monkeypatch: Any) -> None:
        self.events: list[SessionEvent] = []
        self.rebuilds = 0
        self.reads_running = 0
        self.reads_after = 0
        forward = app._on_session_event_thread

        def received(event: SessionEvent) -> None:
            self.events.append(event)
            forward(event)

        app._on_session_event_thread = received  # type: ignore[method-assign]
        rebuild = HitList._rebuild

        def counted(hit_list: HitList) -> None:
            self.rebuilds += 1
            rebuild(hit_list)

        monkeypatch.setattr(HitList, "_rebuild", counted)
        read = session.tensor

        def counted_read(*args: Any, **kwargs: Any) -> Any:
            if session.metadata.state is SessionState.RUNNING:
                self.reads_running += 1
            else:
                self.reads_after += 1
            return read(*args, **kwargs)

        session.tensor = counted_read  # type: ignore[method-assign]

    def reset(self) -> None:
        self.events.clear()
        self.rebuilds = self.reads_running = self.reads_after = 0


async def ready(pilot: Any, session: OfflineSession) -> None:
    """Loaded, the --watch TO watchpoint created, at step 1 with a kernel's tensor open."""
    app = pilot.app
    await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump and TO")
    await settled(pilot)
    await pilot.press("n")
    await wait_until(pilot, lambda: session.metadata.step == 1, what="step 1")
    await settled(pilot)
    graph = next(iter(app.graphs))
    app.go_to_node(graph, NODE)
    app._request_tensor(graph, NODE, 0, None)
    await settled(pilot)


def stopped_at(session: OfflineSession, app: DebuggerApp, step: int) -> bool:
    md = session.metadata
    return md.step == step and md.state is SessionState.WAITING and not app._runs.busy


async def test_a_continue_refreshes_the_panes_once_at_its_stop(
    demo_dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    counters = Counters(app, session, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, session)
        counters.reset()
        await pilot.press("c")
        await wait_until(
            pilot, lambda: stopped_at(session, app, OVERFLOW_STEP), what="the overflow's step"
        )
        await settled(pilot)
        assert counters.rebuilds == 1  # the hit list, once, at the stop
        assert counters.reads_running == 0  # nothing read for steps 2 and 3
        assert counters.reads_after >= 2  # the summary and the open tensor, at step 4
        steps = OVERFLOW_STEP - 1
        # A step each, then the hits and the stop. A step whose check is slow (a loaded
        # machine) adds its progress line and that line's end: those are not refreshes.
        events = [e for e in counters.events if not isinstance(e, Progress)]
        assert len(events) <= steps + 2, events
        assert app.query_one(HitList).hit_count == len(session.hits) > 0
    session.close()


class StoppableChecker:
    """The session's checker; at `iteration` it checks, then reports progress until the
    run is stopped, and returns the first `keep` outcomes as a stopped check does."""

    def __init__(self, session: OfflineSession, iteration: int, keep: int) -> None:
        self.inner = session._checker
        self.iteration = iteration
        self.keep = keep
        self.waiting = threading.Event()
        self.checked: list[int] = []

    def check(
        self,
        watches: Sequence[Any],
        iterations: Iterable[int],
        progress: Any = None,
        cancel: threading.Event | None = None,
        **kwargs: Any,
    ) -> CheckReport:
        iterations = list(iterations)
        self.checked.extend(iterations)
        assert self.inner is not None and cancel is not None
        if iterations != [self.iteration] or self.waiting.is_set():
            return self.inner.check(watches, iterations, progress=progress, cancel=cancel)
        report = self.inner.check(watches, iterations)
        self.waiting.set()
        deadline = time.monotonic() + 30
        done = 0
        while not cancel.is_set() and time.monotonic() < deadline:
            done = min(done + 1, 99)
            progress(done, 100)  # a long check: the header shows it after a while
            cancel.wait(0.05)
        assert cancel.is_set(), "the run was not stopped"
        return dataclasses.replace(report, outcomes=report.outcomes[: self.keep], cancelled=True)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


@pytest.mark.parametrize("key", ["p", "escape"])
async def test_p_or_esc_stops_a_continue_and_keeps_its_partial_hits(
    demo_dump: Path, key: str
) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, session)
        checker = StoppableChecker(session, iteration=OVERFLOW_STEP - 1, keep=2)
        session._checker = checker  # type: ignore[assignment]
        header = app.query_one(SessionHeader)
        await pilot.press("c")
        await wait_until(
            pilot,
            lambda: checker.waiting.is_set() and "p or Esc stops" in str(header.render()),
            what="a long check of step 4, its progress and how to stop it",
            explain=lambda: str(header.render()),
        )
        assert f"Checking step {OVERFLOW_STEP}" in str(header.render())
        before = set(notices(app))
        await pilot.press(key)
        await wait_until(
            pilot, lambda: stopped_at(session, app, OVERFLOW_STEP), what="the stop at step 4"
        )
        await settled(pilot)
        assert app.query_one(HitList).hit_count == 2 == len(session.hits)
        toasts = [m for m in notices(app) if m not in before]
        assert toasts == [
            f"Continue stopped at step {OVERFLOW_STEP}; 2 hits so far. "
            + (session.metadata.message)
        ]
        text = str(header.render())
        assert "checked in part" in text and "stops" not in text and "Checking" not in text
        # the next continue checks step 4 again, in full, and stops there
        await pilot.press("c")
        await wait_until(
            pilot,
            lambda: stopped_at(session, app, OVERFLOW_STEP) and len(session.hits) > 2,
            what="step 4 checked in full",
        )
        await settled(pilot)
        assert checker.checked[-2:] == [OVERFLOW_STEP - 1, OVERFLOW_STEP - 1]
        assert app.query_one(HitList).hit_count == len(session.hits)
        assert "checked in part" not in str(header.render())
    session.close()


async def test_p_when_nothing_runs_says_why(demo_dump: Path) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="loaded")
        await settled(pilot)
        await pilot.press("p")
        await wait_until(
            pilot,
            lambda: any("Nothing is running" in m for m in notices(app)),
            what="why p does nothing now",
        )
    session.close()
