"""The shared TUI waits (tests/tui/support.py): they return once their condition holds,
wait as long as a worker runs, and fail with a sentence naming what they waited for
instead of hanging or passing early."""

from __future__ import annotations

import threading

import pytest
from textual.app import App, ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Label

from tests.tui.support import settled, wait_for_notice, wait_for_screen, wait_until

pytestmark = pytest.mark.timeout(60)


class Plain(App[None]):
    def compose(self) -> ComposeResult:
        yield Label("plain")


class Dialog(ModalScreen[None]):
    def compose(self) -> ComposeResult:
        yield Label("dialog")


async def test_wait_until_returns_when_the_condition_holds() -> None:
    app = Plain()
    async with app.run_test() as pilot:
        app.call_later(app.notify, "later")
        text = await wait_for_notice(pilot, "ate")
        assert text == "later"
        app.call_later(app.push_screen, Dialog())
        assert isinstance(await wait_for_screen(pilot, Dialog), Dialog)


async def test_wait_until_fails_naming_what_it_waited_for() -> None:
    app = Plain()
    async with app.run_test() as pilot:
        with pytest.raises(pytest.fail.Exception, match=r"Waited 0\.2 s for the moon to rise"):
            await wait_until(pilot, lambda: False, what="the moon to rise", timeout=0.2)


async def test_wait_until_treats_a_missing_widget_as_not_yet() -> None:
    app = Plain()
    async with app.run_test() as pilot:
        app.call_later(app.mount, Label("late", id="late"))
        await wait_until(pilot, lambda: app.query_one("#late") is not None, what="#late")


async def test_settled_waits_for_a_running_worker_and_its_result() -> None:
    app = Plain()
    release = threading.Event()
    delivered: list[str] = []

    def work() -> None:
        release.wait(10)
        app.call_from_thread(delivered.append, "result")

    async with app.run_test() as pilot:
        app.run_worker(work, thread=True)
        # a fixed pause or two returns while the worker still runs
        await pilot.pause()
        await pilot.pause()
        assert delivered == []
        threading.Timer(0.3, release.set).start()
        await settled(pilot)
        assert delivered == ["result"]


async def test_settled_fails_naming_the_worker_that_never_ends() -> None:
    app = Plain()
    release = threading.Event()
    async with app.run_test() as pilot:
        app.run_worker(lambda: release.wait(10), thread=True, name="stuck")
        try:
            with pytest.raises(pytest.fail.Exception, match="still pending: worker 'stuck'"):
                await settled(pilot, timeout=0.3)
        finally:
            release.set()
