"""The left pane's tab bar in the first frame (issue 28): one widget (`LeftContentTabs`)
draws the labels and the underline itself, and Textual's eight widgets take its place just
after that frame. It must look exactly like Textual's bar (every cell's character and
style, in several themes and sizes), never show a frame of the bar half built, and answer
or keep whatever is asked of the tabs meanwhile: the active tab, a label, a hidden or
disabled tab, a pane added, a click."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher, Input, Static, Tab, TabbedContent, TabPane
from textual.widgets.tabbed_content import ContentTabs

from tests.tui.support import FakeSession, first_frame_of, wait_for_screen, wait_until
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.navigation.left_tabs import LeftContentTabs, LeftTabs

Cells = list[list[tuple[str, str]]]


class _Left(App[None]):
    """The debugger's left column (its CSS), the tabs of a TabbedContent class, the focus
    in the first pane (the scope tree's place); the stand-in kept until the test brings
    the real bar when `hold`."""

    CSS = """
    #left { width: 2fr; min-width: 36; border: round $primary-background-lighten-2; }
    #left-tabs { height: 1fr; }
    #left-tabs TabPane { padding: 0; }
    #right { width: 3fr; }
    """

    def __init__(self, theme: str, tabs: type[TabbedContent], initial: str = "tree-tab") -> None:
        super().__init__()
        self.theme = theme
        self.tabs = tabs(id="left-tabs", initial=initial)
        self.activated: list[str] = []

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="left"), self.tabs:
                with TabPane("1 Tree", id="tree-tab"):
                    yield Input(id="tree")
                with TabPane("2 Hits", id="hits-tab"):
                    yield Input(id="hits")
                yield TabPane("3 Stack", id="stack-tab")
            yield Static("details", id="right")

    def on_mount(self) -> None:
        self.query_one("#tree").focus()

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        self.activated.append(message.pane.id or "")


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in stays until the test calls `bring_tabs`."""
    monkeypatch.setattr(LeftContentTabs, "on_mount", lambda self: None)


def cells(app: App[None]) -> Cells:
    """Every cell of the screen as drawn: its character and its style (not the segments:
    one widget's are not eight's)."""
    rows = app.screen._compositor.render_strips()
    return [
        [(char, str(segment.style or "")) for segment in strip for char in segment.text]
        for strip in rows
    ]


def bar(app: App[None]) -> LeftContentTabs:
    return app.query_one("#left-tabs", LeftTabs).query_one(LeftContentTabs)


async def _textuals(
    theme: str, size: tuple[int, int], active: str = "tree-tab", hits_label: str = ""
) -> Cells:
    app = _Left(theme, TabbedContent)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.tabs.active = active
        if hits_label:
            app.tabs.get_tab("hits-tab").label = hits_label
        await wait_until(pilot, lambda: _underline_placed(app), what="Textual's underline")
        await pilot.pause()
        return cells(app)


def _underline_placed(app: App[None]) -> bool:
    """Whether the underline is under the active tab (it follows a refresh, a timer and,
    when the tab changed, an animation: a fixed pause lost that race under load)."""
    tab = app.query_one(ContentTabs).active_tab
    if tab is None or not tab.virtual_region.width:
        return False
    underline = app.query_one("Underline")
    span = tab.virtual_region.shrink(tab.styles.gutter).column_span
    return (underline.highlight_start, underline.highlight_end) == span  # type: ignore[attr-defined]


async def _brought(app: _Left, pilot: object) -> None:
    bar(app).bring_tabs()
    await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
    await pilot.pause()  # type: ignore[attr-defined]


THEMES = ["textual-dark", "textual-light", "nord", "gruvbox", "ansi-dark"]


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", [(160, 48), (80, 24), (50, 10)])
async def test_the_stand_in_looks_exactly_like_textuals_bar(
    theme: str, size: tuple[int, int], hold: None
) -> None:
    """Cell for cell, style for style: the screen with the stand-in, with Textual's bar
    (settled: its first frame has no highlight yet) and with the bar the stand-in
    brings, in dark, light, coloured and ANSI themes, wide and narrow."""
    textuals = await _textuals(theme, size)
    app = _Left(theme, LeftTabs)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert bar(app).drawn_by_itself and not app.query(Tab) and not app.query("Underline")
        assert cells(app) == textuals
        assert "1 Tree" in "".join(c for c, _ in cells(app)[1])
        await _brought(app, pilot)
        assert len(app.query(Tab)) == 3 and len(app.query("Underline")) == 1
        assert cells(app) == textuals


async def test_no_frame_shows_the_bar_half_built() -> None:
    """From the first frame to the real bar, every frame sent to the terminal draws the
    tab bar as Textual's settled bar does: no labels without the active one marked, no
    underline without its highlight."""
    size = (120, 30)
    textuals = await _textuals("textual-dark", size)
    frames: list[Cells] = []
    app = _Left("textual-dark", LeftTabs)
    display = App._display

    def record(self: App[None], screen: object, renderable: object) -> None:
        if renderable is not None:
            frames.append(cells(self)[1:3])
        display(self, screen, renderable)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(App, "_display", record)
        async with app.run_test(size=size) as pilot:
            await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
            await pilot.pause(0.05)
    assert frames
    assert all(frame == textuals[1:3] for frame in frames)


async def test_what_is_asked_before_the_swap_is_answered_or_kept(hold: None) -> None:
    """Before the real bar: the active tab changes (the pane shown, the bar drawn so,
    TabActivated posted), the tabs are counted and found, a label changed is drawn; a
    tab disabled or a pane added brings the real bar, and each shows on it."""
    size = (120, 30)
    app = _Left("textual-dark", LeftTabs)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        tabs = app.tabs
        assert tabs.active == "tree-tab" and app.activated == ["tree-tab"]
        tabs.active = "hits-tab"
        await pilot.pause()
        assert bar(app).drawn_by_itself
        assert app.query_one(ContentSwitcher).current == "hits-tab"
        assert app.activated[-1] == "hits-tab"
        assert tabs.tab_count == 3 and tabs.active_pane is not None
        assert cells(app) == await _textuals("textual-dark", size, active="hits-tab")
        tabs.active = "tree-tab"
        await pilot.pause()
        tabs.get_tab("hits-tab").label = "2 Hits (3)"  # what HitsShown does
        await pilot.pause()
        assert bar(app).drawn_by_itself  # the stand-in draws the new label
        relabelled = await _textuals("textual-dark", size, hits_label="2 Hits (3)")
        assert cells(app)[1:3] == relabelled[1:3]  # the tab rows (the focus has moved)
        tabs.disable_tab("stack-tab")
        added = tabs.add_pane(TabPane("4 More", Static("more"), id="more-tab"))
        await added
        await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
        await pilot.pause()
        assert app.query_one("#--content-tab-stack-tab", Tab).disabled
        assert [tab.label.plain for tab in app.query(Tab)] == [
            "1 Tree",
            "2 Hits (3)",
            "3 Stack",
            "4 More",
        ]
        assert "2 Hits (3)" in "".join(c for c, _ in cells(app)[1])
        tabs.active = "more-tab"
        await pilot.pause()
        assert app.query_one(ContentSwitcher).current == "more-tab"


async def test_a_click_on_the_stand_in_or_the_real_bar_shows_its_tab(hold: None) -> None:
    """A click on a label of the stand-in activates that tab (and brings the real bar,
    focused as Textual's is by a click); once it is there, its own clicks do."""
    app = _Left("textual-dark", LeftTabs)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert bar(app).drawn_by_itself
        assert await pilot.click(LeftContentTabs, offset=(10, 0))  # on "2 Hits"
        await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
        assert app.tabs.active == "hits-tab"
        assert await pilot.click("#--content-tab-stack-tab")
        await pilot.pause()
        assert app.tabs.active == "stack-tab"
        assert app.query_one(ContentSwitcher).current == "stack-tab"


async def test_tabs_mounted_after_the_first_frame_are_textuals_at_once() -> None:
    """Only tabs composed with their screen wait for the real bar."""

    class _Later(Vertical):
        def compose(self) -> ComposeResult:
            with LeftTabs(id="later", initial="b"):
                yield TabPane("A", id="a")
                yield TabPane("B", id="b")

    app = _Left("textual-dark", TabbedContent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await app.mount(_Later())
        later = app.query_one("#later", LeftTabs)
        assert not later.query(LeftContentTabs)
        assert len(later.query(Tab)) == 2
        await pilot.pause()
        assert later.active == "b"


async def test_the_debuggers_first_frame_draws_the_stand_in_then_the_tabs_keys_and_zoom(
    dump_2_10: Path,
) -> None:
    """`tuidebug offline`: the first frame's tab bar is the stand-in (no Tab mounted);
    the real bar follows, and 2, 3, 1 and a click switch tabs, `z` maximizes the pane."""
    session = OfflineSession(str(dump_2_10))
    app = DebuggerApp(session, start_session=True)

    def probe(app: App[None]) -> list[object]:
        return [len(app.query(Tab)), len(app.query(LeftContentTabs))]

    with first_frame_of(probe) as first:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: bool(first) and app.loaded, what="the load")
            assert first == [0, 1]
            tabs = app.query_one("#left-tabs", LeftTabs)

            def shown(pane: str) -> bool:
                return tabs.active == pane

            await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
            await wait_for_screen(pilot, ConfirmScreen)  # the recommended-watchpoint offer
            await pilot.press("n")
            await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="main")
            for key, pane in (("2", "hits-tab"), ("3", "stack-tab"), ("1", "tree-tab")):
                await pilot.press(key)
                await wait_until(pilot, functools.partial(shown, pane), what=f"{pane} shown")
            assert await pilot.click("#--content-tab-stack-tab")
            await wait_until(pilot, lambda: tabs.active == "stack-tab", what="clicked tab")
            await pilot.press("1", "z")
            await wait_until(
                pilot, lambda: app.screen.maximized is not None, what="the pane maximized"
            )
            await app.workers.wait_for_complete()
    session.close()


async def test_a_session_started_before_the_app_keeps_the_stand_in_for_the_first_frame() -> None:
    """A live session is started before the app: its graphs and hits are shown as the app
    mounts, the hits tab's label set before the first frame. The stand-in draws it (the
    first frame has no Tab), and Textual's bar follows with the same label."""
    session = FakeSession(live=True)
    session.start()
    app = DebuggerApp(session)
    first: list[object] = []
    display = App._display

    def first_frame(self: App[None], screen: object, renderable: object) -> None:
        if renderable is not None and not first:
            rows = ["".join(c for c, _ in row) for row in cells(self)]
            first.extend([len(self.query(Tab)), next(r for r in rows if "1 Tree" in r)])
        display(self, screen, renderable)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(App, "_display", first_frame)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
            tabs, row = first
            assert tabs == 0 and "2 Hits" in str(row)
            tab = app.query_one("#left-tabs", LeftTabs).get_tab("hits-tab")
            assert tab.label.plain == "2 Hits"
            await app.workers.wait_for_complete()


@pytest.mark.usefixtures("hold")
async def test_the_underline_is_placed_when_a_batch_update_held_the_layout_back() -> None:
    """Textual places the underline after the next refresh, from the active tab's region.
    A refresh inside another widget's batch update (the watchpoint list's swap, say) runs
    those callbacks but skips the layout: the new tab has no region yet and the underline
    was left on an empty range (seen once under load). It is placed once the tab has one."""
    app = _Left("textual-dark", LeftTabs)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        app.tabs.active = "hits-tab"  # not the first tab: its place is not where a bar starts
        await pilot.pause()
        with app.batch_update():  # held across the swap and the callbacks it schedules
            bar(app).bring_tabs()
            await wait_until(pilot, lambda: not bar(app).drawn_by_itself, what="the real bar")
            for _ in range(5):
                await pilot.pause(0.02)
        await pilot.pause(0.05)
        await pilot.pause()
        tab = bar(app).active_tab
        assert tab is not None and tab.id == "--content-tab-hits-tab"
        region = tab.virtual_region.shrink(tab.styles.gutter)
        underline = app.query_one("Underline")
        assert region.width == len("2 Hits")
        assert (underline.highlight_start, underline.highlight_end) == region.column_span  # type: ignore[attr-defined]
