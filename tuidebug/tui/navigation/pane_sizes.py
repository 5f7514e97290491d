"""Resizable panes (lazygit and harlequin have them): `<` / `>` move the divider between the
left column and the right one, `{` / `}` move the divider above the watchpoint list, so a
hit row cut at the left column's edge can have the columns the right side does not need.

The sizes are kept for the session: the left column as a share of the terminal's width (a
resized terminal keeps the proportion), the bottom row in rows. They are inline styles on
the panes, which win over app.tcss; while `z` maximizes a pane they are taken off, since
an inline size would win over the maximized pane's `1fr` too, and put back after.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.css.query import NoMatches

if TYPE_CHECKING:
    from textual.widget import Widget

    from tuidebug.tui.host import AppHost

# The app's bindings: each moves one divider one step (the arrows' direction on the screen).
SIZE_BINDINGS: tuple[BindingType, ...] = (
    Binding("less_than_sign", "resize_pane('left', -1)", "Narrower", show=False,
            id="tuidebug.left_narrower"),
    Binding("greater_than_sign", "resize_pane('left', 1)", "Wider", show=False,
            id="tuidebug.left_wider"),
    Binding("left_curly_bracket", "resize_pane('bottom', 1)", "Taller list", show=False,
            id="tuidebug.bottom_taller"),
    Binding("right_curly_bracket", "resize_pane('bottom', -1)", "Shorter list", show=False,
            id="tuidebug.bottom_shorter"),
)  # fmt: skip

LEFT_STEP = 4  # columns a key press moves the divider
BOTTOM_STEP = 2  # rows
MIN_LEFT = 20  # the tree's guides and a short name still read
MIN_RIGHT = 30  # node details' labels and the tensor grid's first column
MIN_BOTTOM = 4  # the watchpoint list's border, column titles and one row
MIN_MAIN = 10  # the rows above it: the tree, or node details over the tensor view


class PaneSizes:
    """The sizes the user gave the left column and the bottom row (None: app.tcss's)."""

    LEFT: ClassVar[str] = "#left"
    BOTTOM: ClassVar[str] = "#watchpoints"

    def __init__(self, app: AppHost) -> None:
        self._app = app
        self.left_share: float | None = None  # of the terminal's width
        self.bottom_rows: int | None = None
        self._watching = False

    def resize(self, which: str, direction: int) -> None:
        """One key press: `which` is "left" (direction +1 wider) or "bottom" (+1 taller)."""
        screen = self._app.screen_stack[0] if self._app.screen_stack else None
        if screen is None or self._app.screen is not screen:
            return  # a dialog is open: its keys, not the layout's
        if screen.maximized is not None:
            self._app.notify("z first: a maximized pane fills the screen.")
            return
        self._watch_maximized()
        width, height = screen.size
        pane = self._pane(self.LEFT if which == "left" else self.BOTTOM)
        if pane is None:
            return
        # from the size kept, not the pane's: keys pressed faster than the layout follows
        # each move it one step
        if which == "left":
            now = pane.outer_size.width
            if self.left_share is not None:
                now = self._clamp_left(round(self.left_share * width), width)
            cells = self._clamp_left(now + direction * LEFT_STEP, width)
            self.left_share = cells / max(1, width)
        else:
            now = pane.outer_size.height
            if self.bottom_rows is not None:
                now = self._clamp_bottom(self.bottom_rows, height)
            self.bottom_rows = self._clamp_bottom(now + direction * BOTTOM_STEP, height)
        self.apply()

    def apply(self) -> None:
        """Put the kept sizes on the panes for the terminal's size now (the app calls it on
        every resize), or take them off while a pane is maximized."""
        if not self._app.screen_stack:
            return
        screen = self._app.screen_stack[0]
        width, height = screen.size
        maximized = screen.maximized is not None
        left = self._pane(self.LEFT)
        if left is not None and self.left_share is not None:
            if maximized:
                left.styles.width = None
                left.styles.min_width = None
            else:
                cells = self._clamp_left(round(self.left_share * width), width)
                left.styles.width = cells
                left.styles.min_width = cells  # app.tcss's min-width would undo a narrower one
        bottom = self._pane(self.BOTTOM)
        if bottom is not None and self.bottom_rows is not None:
            bottom.styles.height = (
                None if maximized else self._clamp_bottom(self.bottom_rows, height)
            )

    @staticmethod
    def _clamp_left(cells: int, width: int) -> int:
        return max(MIN_LEFT, min(cells, width - MIN_RIGHT))

    @staticmethod
    def _clamp_bottom(rows: int, height: int) -> int:
        # header, control bar and footer: 4 rows that are not the main area or the list
        return max(MIN_BOTTOM, min(rows, height - 4 - MIN_MAIN))

    def _pane(self, selector: str) -> Widget | None:
        with contextlib.suppress(NoMatches):
            return self._app.screen_stack[0].query_one(selector)
        return None

    def _watch_maximized(self) -> None:
        """Follow z from the first resize on: the sizes step aside while a pane fills the
        screen (see the module docstring)."""
        if self._watching:
            return
        self._watching = True
        screen = self._app.screen_stack[0]
        screen.watch(screen, "maximized", lambda _old, _new: self.apply(), init=False)


__all__ = ["SIZE_BINDINGS", "PaneSizes"]
