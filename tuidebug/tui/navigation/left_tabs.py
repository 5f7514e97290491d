"""The left pane's tabs (1 Tree, 2 Hits, 3 Stack): a TabbedContent whose tab bar draws
itself for the first frame.

Textual's tab bar is eight widgets (ContentTabs, three containers, a Tab per pane and the
underline), each styled, laid out and drawn before the first frame, and three stylesheets
parsed for them: about a tenth of `tuidebug offline`'s start to its first frame (issue 28).
Here the bar (`LeftContentTabs`, still the TabbedContent's ContentTabs, so every method
of TabbedContent finds it) has no children at first and draws the same cells itself: the
labels, their padding, the active tab's colour and the underline with its active part.
Just after the first frame it composes Textual's widgets in its place, in one screen
update. Whatever is asked of the bar meanwhile is answered from the tabs it holds (the
active tab, a tab's object and its label); what needs the real widgets (a tab hidden or
disabled, a pane added, the focus, a click) brings them at once first.

No private method of Textual is overridden: the stand-in answers through Tabs' public
ones (`validate_active`, `watch_active`, `get_content_tab`, `active_tab`, `tab_count`)
and skips Tabs' resize handler by `prevent_default`; TabbedContent finds it through
`get_child_by_type`, overridden below (Textual's matches the exact type ContentTabs).
tests/tui/test_left_tabs.py compares every cell of the stand-in with the real bar's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar, TypeVar, cast

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.renderables.bar import Bar
from textual.strip import Strip
from textual.style import Style as TextualStyle
from textual.widget import Widget
from textual.widgets import Tab, TabbedContent, TabPane
from textual.widgets.tabbed_content import ContentTab, ContentTabs

_W = TypeVar("_W", bound=Widget)

# the stand-in's states: drawing the bar itself, composing the real bar, the real bar
_DRAWN, _COMPOSING, _REAL = range(3)


class LeftContentTabs(ContentTabs):
    """The TabbedContent's tab bar, drawn by itself (no children) until `bring_tabs`
    composes Textual's widgets. Its component classes are the rules of Textual's Tab and
    Underline stylesheets that style an unfocused bar with its active tab (copied
    below), so the theme colours it as it colours those."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "left-tabs--tab",
        "left-tabs--active",
        "left-tabs--bar",
    }

    DEFAULT_CSS = """
    LeftContentTabs {
        & > .left-tabs--tab { color: $foreground 50%; }
        & > .left-tabs--active { color: $foreground; }
        & > .left-tabs--bar { color: $block-cursor-background; background: $foreground 10%; }
        &:ansi {
            & > .left-tabs--tab { text-style: dim; }
            & > .left-tabs--active { text-style: not dim bold; }
            & > .left-tabs--bar { background: $border-blurred; }
        }
    }
    """

    def __init__(self, *tabs: ContentTab, active: str, tabbed_content: TabbedContent) -> None:
        super().__init__(*tabs, active=active, tabbed_content=tabbed_content)
        self._held: tuple[ContentTab, ...] = tabs  # drawn by the stand-in, then mounted
        self._state = _DRAWN
        self._after: list[Callable[[], object]] = []  # asked meanwhile: run once composed

    @property
    def drawn_by_itself(self) -> bool:
        """Whether the bar is the stand-in still (Textual's widgets not composed yet)."""
        return self._state != _REAL

    def compose(self) -> ComposeResult:
        if self._state != _DRAWN:
            yield from super().compose()

    def on_mount(self) -> None:
        if self._state == _DRAWN:
            # after the first frame; the theme's CSS may change meanwhile: drawn again
            self.call_after_refresh(self.bring_tabs)

    def bring_tabs(self, then: Callable[[], object] | None = None) -> None:
        """Compose Textual's tab bar in the stand-in's place (once), then run `then`."""
        if then is not None:
            if self._state == _REAL:
                then()
                return
            self._after.append(then)
        if self._state == _DRAWN and self.is_attached:
            self._state = _COMPOSING
            self.call_later(self._compose_tabs)

    def composed(self) -> asyncio.Future[None]:
        """Done once Textual's bar is composed (brought now if it is not)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def finish() -> None:
            if not done.done():
                done.set_result(None)

        self.bring_tabs(finish)
        return done

    async def _compose_tabs(self) -> None:
        # one screen update: no frame shows the bar half built (the labels mounted, the
        # active one not marked, the underline without its highlight)
        with self.app.batch_update():
            await self.recompose()
            self._state = _REAL
            start, end = self._highlight_range()
            # Textual's own watcher: marks the active tab, places the underline after
            # the next refresh (from the tab's region) and posts TabActivated
            super().watch_active("", self.active)
            for underline in self.query("Underline"):
                # placed now, where the stand-in drew it (Textual's answer, the same,
                # follows the next refresh)
                underline.highlight_start, underline.highlight_end = start, end  # type: ignore[attr-defined]
            self.refresh()
            # Textual's placing runs after a refresh; one inside another widget's batch
            # update skips the layout, and from a tab with no region yet it leaves the
            # underline on an empty range: placed again once the tab has its region
            self.call_after_refresh(self._place_underline)
            after, self._after = self._after, []
            for then in after:
                then()

    def _place_underline(self, tries: int = 250) -> None:
        """The underline under the active tab once that tab is laid out (Textual's math:
        its region less its padding). While a batch update holds the layout back, every
        refresh callback runs at once: the next look is 20 ms later, `tries` at most."""
        tab = self.active_tab
        if tab is None or not self.is_attached or not tab.display:
            return
        if tab.virtual_region.width == 0:
            if tries:
                self.set_timer(0.02, lambda: self._place_underline(tries - 1))
            return
        start, end = tab.virtual_region.shrink(tab.styles.gutter).column_span
        for underline in self.query("Underline"):
            underline.highlight_start, underline.highlight_end = start, end  # type: ignore[attr-defined]

    # ---- answered from the held tabs while the bar draws itself
    def validate_active(self, active: str) -> str:
        if self._state == _REAL:
            return super().validate_active(active)
        if active and active not in {tab.id for tab in self._held}:
            raise ValueError(f"No Tab with id {active!r}")
        return active

    def watch_active(self, previously_active: str, active: str) -> None:
        if self._state == _REAL:
            super().watch_active(previously_active, active)
            return
        self.refresh()
        tab = self._tab(active)
        if tab is not None:
            self.post_message(self.TabActivated(self, tab))
        else:
            self.post_message(self.Cleared(self))

    def get_content_tab(self, tab_id: str) -> ContentTab:
        if self._state == _REAL:
            return super().get_content_tab(tab_id)
        tab = self._tab(ContentTab.add_prefix(tab_id))
        if tab is None:
            raise NoMatches(f"No tab {tab_id!r}")
        return tab

    @property
    def active_tab(self) -> Tab | None:
        if self._state == _REAL:
            return super().active_tab
        return self._tab(self.active)

    @property
    def tab_count(self) -> int:
        if self._state == _REAL:
            return super().tab_count
        return len(self._held)

    def _tab(self, tab_id: str) -> ContentTab | None:
        return next((tab for tab in self._held if tab_id and tab.id == tab_id), None)

    # ---- what needs the real widgets brings them first
    def on_resize(self, event: events.Resize) -> None:
        if self._state != _REAL:
            event.prevent_default()  # Textual's moves the underline, not composed yet

    def on_focus(self) -> None:
        self.bring_tabs()  # the focused bar looks otherwise: Textual's draws it

    def on_click(self, event: events.Click) -> None:
        if self._state == _REAL:
            return
        event.stop()
        x = 0
        for tab in self._held:
            width = tab.label.cell_length + 2
            if x <= event.x < x + width and not tab.disabled:
                self.active = tab.id or ""
                break
            x += width
        self.focus()

    # ---- the stand-in's drawing
    def _highlight_range(self) -> tuple[int, int]:
        """The underline's highlight under the active tab's label (Textual's: the tab's
        region less its padding)."""
        x = 0
        for tab in self._held:
            width = tab.label.cell_length
            if tab.id == self.active:
                return x + 1, x + 1 + width
            x += width + 2
        return 0, 0

    def render_line(self, y: int) -> Strip:
        if self._state == _REAL or y > 1:
            return super().render_line(y)
        width = self.size.width
        background = self.background_colors[1]
        pad = Style(bgcolor=background.rich_color)
        if y == 0:
            segments: list[Segment] = []
            for tab in self._held:
                active = tab.id == self.active
                name = "left-tabs--active" if active else "left-tabs--tab"
                style = self.get_component_rich_style("left-tabs--tab", name)
                segments.append(Segment(" ", pad))
                segments.extend(tab.label.render_segments(TextualStyle.from_rich_style(style)))
                segments.append(Segment(" ", pad))
            return Strip(segments).adjust_cell_length(width, pad).crop(0, width)
        bar_style = self.get_component_rich_style("left-tabs--bar")
        bar = Bar(
            highlight_range=self._highlight_range(),
            highlight_style=Style.from_color(bar_style.color),
            background_style=Style.from_color(bar_style.bgcolor),
            width=width,
        )
        console = self.app.console
        segments = list(console.render(bar, console.options.update_width(width)))
        return Strip(Segment.apply_style(segments, pad), width).crop(0, width)


class LeftTabs(TabbedContent):
    """A TabbedContent whose tab bar draws itself for the first frame (`LeftContentTabs`):
    composed with its screen (the app's start) it holds the bar's tabs; mounted later, it
    is Textual's own bar from the start."""

    def __init__(self, *, initial: str, id: str | None = None) -> None:
        super().__init__(initial=initial, id=id)
        self._initial_pane = initial

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, ContentTabs) and self._first_frame_to_come():
                # Textual's own ContentTab objects, in a bar that draws them until the
                # first frame is out (its own bar is dropped unmounted). `_tabs`, where
                # Tabs keeps the tabs it is given until it composes, is the one internal
                # of Textual read here; tests/tui/test_left_tabs.py fails if it changes
                tabs = [tab for tab in widget._tabs if isinstance(tab, ContentTab)]
                yield LeftContentTabs(*tabs, active=self._initial_pane, tabbed_content=self)
            else:
                yield widget

    def get_child_by_type(self, expect_type: type[_W]) -> _W:
        # TabbedContent finds its bar as the child of type ContentTabs exactly: the
        # stand-in is a ContentTabs of its own type
        if expect_type is ContentTabs:
            for child in self.children:
                if isinstance(child, LeftContentTabs):
                    return cast(_W, child)
        return super().get_child_by_type(expect_type)

    def _first_frame_to_come(self) -> bool:
        """Whether the tabs come with their screen, which has not drawn a frame yet (the
        app's start), and one of them is to be shown active."""
        try:
            screen = self.screen
        except NoScreen:
            return False
        return not screen.is_mounted and bool(self._initial_pane)

    def _stand_in(self) -> LeftContentTabs | None:
        """The bar, while it draws itself."""
        for child in self.children:
            if isinstance(child, LeftContentTabs) and child.drawn_by_itself:
                return child
        return None

    def get_tab(self, pane_id: str | TabPane) -> Tab:
        bar = self._stand_in()
        if bar is not None:
            # the held tab, whose label the caller may change (the hit count, even before
            # the first frame in a live session): the stand-in draws it at the next frame
            bar.refresh()
        return super().get_tab(pane_id)

    def _when_real(self, call: Callable[[], object]) -> None:
        """`call` now if the real bar is there, else once it is composed (brought now)."""
        bar = self._stand_in()
        if bar is None:
            call()
        else:
            bar.bring_tabs(call)

    def hide_tab(self, tab_id: str) -> None:
        self._when_real(lambda: super(LeftTabs, self).hide_tab(tab_id))

    def show_tab(self, tab_id: str) -> None:
        self._when_real(lambda: super(LeftTabs, self).show_tab(tab_id))

    def disable_tab(self, tab_id: str) -> None:
        self._when_real(lambda: super(LeftTabs, self).disable_tab(tab_id))

    def enable_tab(self, tab_id: str) -> None:
        self._when_real(lambda: super(LeftTabs, self).enable_tab(tab_id))

    def _awaited_when_real(self, call: Callable[[], AwaitComplete]) -> AwaitComplete:
        """`call` (a change of panes) now if the real bar is there, else once it is."""
        bar = self._stand_in()
        if bar is None:
            return call()
        composed = bar.composed()

        async def later() -> None:
            await composed
            await call()

        return AwaitComplete(later())

    def add_pane(
        self,
        pane: TabPane,
        *,
        before: TabPane | str | None = None,
        after: TabPane | str | None = None,
    ) -> AwaitComplete:
        add = super().add_pane
        return self._awaited_when_real(lambda: add(pane, before=before, after=after))

    def remove_pane(self, pane_id: str) -> AwaitComplete:
        remove = super().remove_pane
        return self._awaited_when_real(lambda: remove(pane_id))

    def clear_panes(self) -> AwaitComplete:
        return self._awaited_when_real(super().clear_panes)
