"""An offline run (step, continue, recheck) on the demo dump: what it tells its subscribers
while it goes (one event a step, progress only for a long check, the hits once at the
stop), and `pause()`, which stops it at the next tensor with the hits found so far kept.

The demo's TensorOverflow fires from step 4 (iteration 3) on; steps 1–3 are clean. A real
check of the demo is too quick to be paused from another thread on cue, so the pause comes
from a checker wrapper: it runs the real check, then does what a pause during it does (the
session's `pause()`, and a report cut short with `cancelled=True`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tuidebug.core.session import (
    EventLog,
    HitsArrived,
    MetadataChanged,
    Notice,
    Progress,
    SessionEvent,
    SessionState,
)
from tuidebug.offline import session as offline_session
from tuidebug.offline.check.checker import CheckReport
from tuidebug.offline.session import OfflineSession


class PausingChecker:
    """The session's checker, paused once during the check of `iteration`: the report
    keeps its first `keep` outcomes, as a check stopped part-way does."""

    def __init__(self, session: OfflineSession, iteration: int, keep: int) -> None:
        self.inner = session._checker
        self.session = session
        self.iteration = iteration
        self.keep = keep
        self.paused = False
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
        assert self.inner is not None
        if self.paused or iterations != [self.iteration]:
            return self.inner.check(watches, iterations, progress=progress, cancel=cancel)
        self.paused = True
        report = self.inner.check(watches, iterations, progress=progress)
        self.session.pause()  # the user pressed p (or Esc) during this check
        assert cancel is not None and cancel.is_set()
        return dataclasses.replace(report, outcomes=report.outcomes[: self.keep], cancelled=True)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


@pytest.fixture
def demo(demo_dump: Path):  # type: ignore[no-untyped-def]
    session = OfflineSession(demo_dump)
    session.start()
    session.create_watchpoint("TO", {})
    log = EventLog()
    session.subscribe(log)
    yield session, log
    session.close()


def pause_at(session: OfflineSession, iteration: int, keep: int = 0) -> PausingChecker:
    checker = PausingChecker(session, iteration, keep)
    session._checker = checker  # type: ignore[assignment]
    return checker


def after(log: EventLog, mark: int, kind: type[SessionEvent]) -> list[Any]:
    return [e for e in log.events[mark:] if isinstance(e, kind)]


def test_a_continue_says_one_thing_a_step_and_its_hits_once(demo) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    mark = len(log.events)
    session.continue_()
    assert session.metadata.step == 4 and session.hits  # the overflow
    events = [e for e in log.events[mark:] if not isinstance(e, Notice)]
    # steps 1–4 (the first also says running), the hits of step 4, waiting
    assert len(events) == 4 + 2
    steps = [e.metadata.step for e in after(log, mark, MetadataChanged)]
    assert steps == [1, 2, 3, 4, 4]
    states = [e.metadata.state for e in after(log, mark, MetadataChanged)]
    assert states == [SessionState.RUNNING] * 4 + [SessionState.WAITING]
    arrived = after(log, mark, HitsArrived)
    assert len(arrived) == 1 and arrived[0].step == 4 and arrived[0].hits == session.hits
    assert not arrived[0].partial and not after(log, mark, Progress)


def test_a_long_check_shows_its_progress_now_and_then(
    demo, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    monkeypatch.setattr(offline_session, "PROGRESS_AFTER", 0.01)
    monkeypatch.setattr(offline_session, "PROGRESS_EVERY", 3600.0)
    inner = session._checker
    label = "Checking step 1 (iteration 0)"
    shown = threading.Event()
    session.subscribe(lambda e: shown.set() if isinstance(e, Progress) else None)

    class Slow:
        """Says its total, then nothing until the progress line is up (workers starting),
        then reports every tensor."""

        def check(self, watches: Any, iterations: Any, progress: Any, cancel: Any) -> Any:
            progress(0, 1000)
            assert shown.wait(10), "no progress line for a check that says nothing"
            for done in range(1, 1000):
                progress(done, 1000)
            progress(1000, 1000)
            return inner.check(watches, iterations, cancel=cancel)

    session._checker = Slow()
    mark = len(log.events)
    session.step()
    session._checker = inner
    shown_lines = [(e.label, e.done, e.total) for e in after(log, mark, Progress)]
    # the line comes up on its own (a timer), later reports are throttled, then it goes
    assert shown_lines == [(label, 0, 1000), (label, 1, 1)]


def test_pause_keeps_the_partial_hits_and_the_next_continue_checks_the_step_again(demo) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    checker = pause_at(session, iteration=3, keep=2)
    mark = len(log.events)
    session.continue_()
    md = session.metadata
    assert md.step == 4 and md.state is SessionState.WAITING
    assert len(session.hits) == 2 and all(h.condition.abbr == "TO" for h in session.hits)
    arrived = after(log, mark, HitsArrived)
    assert len(arrived) == 1 and arrived[0].partial and arrived[0].hits == session.hits
    said = [e.message for e in after(log, mark, Notice)]
    assert len(said) == 1 and said[0].startswith("Continue stopped at step 4; 2 hits so far.")
    assert "checked in part" in md.message
    # the next continue checks step 4 again, in full, and stops there (its hits)
    mark = len(log.events)
    session.continue_()
    assert checker.checked == [0, 1, 2, 3, 3]
    assert session.metadata.step == 4 and len(session.hits) > 2
    assert not after(log, mark, HitsArrived)[0].partial and session.metadata.message == ""
    assert not any("stopped" in e.message for e in after(log, mark, Notice))


def test_a_step_after_a_pause_is_the_interrupted_step_checked_again(demo) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    checker = pause_at(session, iteration=1)  # step 2: no hits found before the pause
    session.continue_()
    assert session.metadata.step == 2 and session.hits == ()
    assert any(
        e.message.startswith("Continue stopped at step 2; 0 hits so far.")
        for e in after(log, 0, Notice)
    )
    session.step()  # step 2 again, in full: that is the step
    assert session.metadata.step == 2 and session.metadata.message == ""
    session.step()
    assert session.metadata.step == 3
    assert checker.checked == [0, 1, 1, 2]


def test_a_pause_at_the_last_step_says_to_recheck(demo) -> None:  # type: ignore[no-untyped-def]
    session, _log = demo
    last = session.metadata.max_step
    assert last is not None
    session.reset_step(last - 1)
    pause_at(session, iteration=last - 1, keep=1)
    session.step()
    assert session.metadata.step == last and len(session.hits) == 1
    assert "recheck it" in session.metadata.message
    session.recheck()
    assert session.metadata.message == "" and len(session.hits) > 1


def test_a_paused_recheck_keeps_its_partial_hits(demo) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    session.reset_step(5)
    pause_at(session, iteration=4, keep=3)
    mark = len(log.events)
    session.recheck()
    assert len(session.hits) == 3 and after(log, mark, HitsArrived)[-1].partial
    assert any(
        e.message.startswith("Recheck stopped at step 5; 3 hits")
        for e in log.events[mark:]
        if isinstance(e, Notice)
    )
    session.reset_step(1)  # a jump forgets the partly checked step
    assert session.metadata.message == ""


def test_pause_when_nothing_runs_does_nothing(demo) -> None:  # type: ignore[no-untyped-def]
    session, log = demo
    mark = len(log.events)
    session.pause()
    session.step()
    assert session.metadata.step == 1 and log.events[mark:]
    assert not any("stopped" in e.message for e in after(log, mark, Notice))
    assert session.capabilities.can_stop_run and not session.capabilities.can_pause
