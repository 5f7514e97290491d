"""The control bar's first frame (issue 28): its buttons, all greyed then, are drawn by one
stand-in (`ControlBarShell`) that the buttons replace just after that frame. It must look
exactly like them (every cell's character and style, in several themes and sizes) and
lose nothing asked of the bar meanwhile: keys, states, capabilities, clicks after it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Button, Static

from tests.tui.support import first_frame_of, wait_until
from tuidebug.core.session import Capabilities
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.messages import ControlRequested
from tuidebug.tui.run.actions import BAR_ACTIONS, BY_ID
from tuidebug.tui.run.control_bar import BarButton, ControlBar, ControlBarShell

OFFLINE = Capabilities(can_reset_step=True)  # what `tuidebug offline` offers
# keys as the footer writes them, and some a label must survive: markup's bracket, a
# wide character, none at all (a label shorter than the button's minimum width)
ODD_KEYS = {"step": "[", "step_many": "中", "continue": "", "reset_step": "ctrl+r"}


def footer_keys(action: str) -> str:
    return {"step": "s", "step_many": "S", "continue": "c", "reset_step": "g"}.get(action, "x")


def odd_keys(action: str) -> str:
    return ODD_KEYS.get(action, "x")


class _Bar(App[None]):
    """A control bar at the foot of a screen, as the debugger lays it out, in one theme;
    its stand-in is kept until the test replaces it (`hold`)."""

    CSS = "#filler { height: 1fr; }"

    def __init__(
        self,
        theme: str,
        caps: Capabilities | None,
        key_for: Callable[[str], str] | None,
        *,
        hold: bool = True,
    ) -> None:
        super().__init__()
        self.theme = theme  # before the bar composes, as DebuggerApp sets it
        self.bar = ControlBar(id="controls", capabilities=caps)
        if hold:
            self.bar.call_after_refresh = lambda *args, **kwargs: True  # type: ignore[method-assign]
        self._key_for = key_for
        self.requested: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="filler")
        yield self.bar

    def on_mount(self) -> None:
        if self._key_for is not None:
            self.bar.set_keys(self._key_for)
        self.bar.update_enabled(lambda action: False)  # the dump is being read
        self.bar.set_status("0 hits")

    def on_control_requested(self, message: ControlRequested) -> None:
        self.requested.append(message.action)


def cells(app: App[None]) -> list[list[tuple[str, str]]]:
    """Every cell of the screen as drawn: its character and its style (the segments'
    positions and offsets left out: one widget's segments are not seven's)."""
    rows = app.screen._compositor.render_strips()
    return [
        [(char, str(segment.style or "")) for segment in strip for char in segment.text]
        for strip in rows
    ]


async def _drawn_both_ways(
    theme: str, size: tuple[int, int], caps: Capabilities | None, key_for: Callable[[str], str]
) -> tuple[list[list[tuple[str, str]]], list[list[tuple[str, str]]], bool]:
    """The screen's cells with the stand-in, then with the buttons, and whether the
    first was drawn by the stand-in. (Cells, not a screenshot: an SVG draws each segment
    apart, and one widget's segments are not seven's.)"""
    app = _Bar(theme, caps, key_for)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        bar = app.bar
        had_shell = bool(bar.query(ControlBarShell))
        if had_shell:
            assert not bar.query(BarButton)
        first = cells(app)
        bar._replace_shell()
        await pilot.pause()
        await pilot.pause()
        assert not bar.query(ControlBarShell)
        shown = [a.id for a in BAR_ACTIONS if caps is None or a.offered(caps)]
        assert [b.id for b in bar.query(BarButton)] == [f"control-{i}" for i in shown]
        assert all(b.disabled for b in bar.query(BarButton))
        return first, cells(app), had_shell


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light", "nord", "ansi-dark"])
@pytest.mark.parametrize("size", [(160, 48), (80, 24), (50, 10)])
@pytest.mark.parametrize(
    ("caps", "key_for"),
    [(OFFLINE, footer_keys), (None, footer_keys), (OFFLINE, odd_keys)],
    ids=["offline", "every-button", "odd-keys"],
)
async def test_the_stand_in_looks_exactly_like_the_greyed_buttons(
    theme: str,
    size: tuple[int, int],
    caps: Capabilities | None,
    key_for: Callable[[str], str],
) -> None:
    """Cell for cell, style for style: the bar with the stand-in and with the real disabled
    buttons, the offline session's buttons and all ten (cut at 80 and 50 columns), keys
    short, long, wide or markup-like. ANSI colours have no stand-in (a greyed button is a
    border there): the bar composes its buttons, and looks the same."""
    cells_shell, cells_buttons, had_shell = await _drawn_both_ways(theme, size, caps, key_for)
    assert had_shell == (theme != "ansi-dark")
    assert cells_shell == cells_buttons
    assert "".join(c for c, _ in cells_buttons[-1]).strip()  # the bar row is drawn


async def test_what_is_asked_while_the_stand_in_is_up_reaches_the_buttons() -> None:
    """Keys, capabilities and the status set while the stand-in draws the bar are the
    buttons' when they replace it; a click on one then runs its action."""
    app = _Bar("textual-dark", OFFLINE, None)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bar = app.bar
        assert bar.query(ControlBarShell)
        bar.set_keys(lambda action: f"<{action}>")
        online_gpu = Capabilities(live=True, can_step_node=True, can_pause=True)
        bar.set_capabilities(online_gpu)
        bar.set_status("working…")
        await pilot.pause()
        assert not bar.query(BarButton)  # all of it drawn by the stand-in so far
        shell_text = "".join(c for c, _ in cells(app)[-1])
        assert f"<step_node> {BY_ID['step_node'].bar}" in shell_text
        assert "<reset_step>" not in shell_text
        bar._replace_shell()
        await pilot.pause()
        shown = [a.id for a in BAR_ACTIONS if a.offered(online_gpu)]
        buttons = list(bar.query(BarButton))
        assert [b.id for b in buttons] == [f"control-{i}" for i in shown]
        assert [str(b.label) for b in buttons] == [
            f"<{a.id}> {a.bar}" for a in BAR_ACTIONS if a.id in shown
        ]
        assert "".join(c for c, _ in cells(app)[-1]) == shell_text
        assert "working…" in str(bar.query_one("#control-status", Static).render())
        bar.update_enabled(lambda action: action == "step")
        await pilot.pause()
        assert await pilot.click("#control-step")
        await pilot.pause()
        assert app.requested == ["run('step')"]


async def test_an_action_enabled_before_the_swap_brings_the_buttons_at_once() -> None:
    """The stand-in draws greyed buttons only: an action enabled while it is up replaces
    it before the next frame, and the button drawn is enabled."""
    app = _Bar("textual-dark", OFFLINE, footer_keys)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bar = app.bar
        assert bar.query(ControlBarShell)
        bar.update_enabled(lambda action: action == "continue")
        # at once: the stand-in is hidden now, the buttons are in the bar
        assert all(not shell.display for shell in bar.query(ControlBarShell))
        assert not bar.query_one("#control-continue", Button).disabled
        assert bar.query_one("#control-step", Button).disabled
        await pilot.pause()
        assert not bar.query(ControlBarShell)


async def test_a_bar_mounted_after_the_first_frame_or_enabled_before_it_has_no_stand_in() -> None:
    """Only a bar composed with its screen, all greyed, waits for the buttons: one
    mounted into a running screen, or told an action can run before it mounted, builds
    them at once."""
    app = _Bar("textual-dark", OFFLINE, None, hold=False)
    async with app.run_test(size=(120, 24)) as pilot:
        await wait_until(pilot, lambda: not app.bar.query(ControlBarShell), what="swap")
        later = ControlBar(capabilities=OFFLINE)
        await app.mount(later)
        assert later.query(BarButton) and not later.query(ControlBarShell)
    early = ControlBar(capabilities=OFFLINE)
    early.update_enabled(lambda action: action == "step")

    class _Early(App[None]):
        def compose(self) -> ComposeResult:
            yield early

    async with _Early().run_test(size=(120, 24)) as pilot:
        assert not early.query(ControlBarShell)
        assert not early.query_one("#control-step", Button).disabled


async def test_a_theme_in_ansi_colours_brings_the_buttons_at_once() -> None:
    """The stand-in has no ANSI look (a greyed button is a border there): switched to such
    a theme while it is up, the bar takes its buttons."""
    app = _Bar("textual-dark", OFFLINE, footer_keys)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        assert app.bar.query(ControlBarShell)
        app.theme = "ansi-dark"
        await pilot.pause()
        assert app.bar.query(BarButton) and not app.bar.query(ControlBarShell)


async def test_the_debuggers_first_frame_draws_the_stand_in_then_the_buttons(
    dump_2_10: Path,
) -> None:
    """`tuidebug offline`: the first frame's bar is the stand-in, with the keys on its
    labels; the buttons replace it right after, and then follow the session's state."""
    session = OfflineSession(str(dump_2_10))
    app = DebuggerApp(session, start_session=True)

    def probe(app: App[None]) -> list[object]:
        bar = app.query_one(ControlBar)
        shells = [s for s in bar.query(ControlBarShell) if s.display]
        row = "".join(c for c, _ in cells(app)[bar.region.y])
        return [len(shells), len(bar.query(BarButton)), row]

    with first_frame_of(probe) as first:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: bool(first) and app.loaded, what="the first frame")
            shells, buttons, row = first
            assert (shells, buttons) == (1, 0)
            step = app.key_hint("tuidebug.step")
            assert f" {step} Step " in str(row)
            bar = app.query_one(ControlBar)
            await wait_until(pilot, lambda: not bar.query(ControlBarShell), what="the buttons")
            assert str(bar.query_one("#control-step", Button).label) == f"{step} Step"
            await wait_until(
                pilot,
                lambda: not bar.query_one("#control-step", Button).disabled,
                what="step enabled once the dump is read",
            )
            await app.workers.wait_for_complete()
    session.close()
