"""The tensor pane's one-line boxes: the slice (e) and tolerance (t) boxes of its bar, and
those that open on a key: go to an element (i) and find (f).

Each box closes on Escape through the callback the view gives it (only while the box has
focus, so the App keeps Esc elsewhere); the bar's boxes stay, and Escape just hands the
keys back to the grid. Their bindings have ids, so `keys.toml` can
remap them; this module's name sorts between tensor_canvas and tensor_view, which keeps
`tuidebug keys` listing them where it always did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Input, Label, Static


class PaneBox(Input):
    """A one-line box of the tensor pane that `close` hides again."""

    def __init__(
        self,
        close: Callable[[], None],
        value: str = "",
        *,
        placeholder: str,
        id: str,
        compact: bool = True,
    ) -> None:
        super().__init__(value, placeholder=placeholder, id=id, compact=compact)
        self._close = close

    def action_close(self) -> None:
        self._close()


class GotoInput(PaneBox):
    """The go-to box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", show=False, id="tensor.goto_close"),
    ]


class FindInput(PaneBox):
    """The find box (Escape closes it, keeping the search)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", show=False, id="tensor.find_close"),
    ]


class SliceInput(PaneBox):
    """The slice box (Escape puts back the slice shown and returns to the grid)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back to the grid", show=False, id="tensor.slice_close"),
    ]


class ToleranceInput(PaneBox):
    """The compare tolerance box (Escape puts back the tolerance in use)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back to the grid", show=False, id="tensor.tolerance_close"),
    ]


def bar_children(
    close_slice: Callable[[], None], close_tolerance: Callable[[], None], *, narrow: bool
) -> list[Widget]:
    """What the tensor pane's bar (#tv-bar) holds: the slice and tolerance boxes with their
    labels, and the compare mode's name (the tolerance's label is short in a narrow pane)."""
    return [
        Label("slice", id="tv-slice-label"),
        SliceInput(close_slice, placeholder="[0, :, :]", id="tv-slice"),
        Label("tol" if narrow else "tolerance", id="tv-tolerance-label"),
        ToleranceInput(close_tolerance, "0", placeholder="0–1", id="tv-tolerance"),
        Static("", id="tv-mode", markup=False),
    ]


def key_boxes(close_goto: Callable[[], None], close_find: Callable[[], None]) -> list[Widget]:
    """The boxes a key opens under the bar: go to an element (i) and find (f)."""
    return [
        GotoInput(
            close_goto,
            placeholder="go to element: row, col (or a full index)",
            id="tv-goto",
            compact=True,
        ),
        FindInput(
            close_find,
            placeholder="find: nan, inf, +inf, -inf, nonfinite, zero, > 1e3, [-1, 1] …",
            id="tv-find",
            compact=True,
        ),
    ]


__all__ = [
    "FindInput",
    "GotoInput",
    "PaneBox",
    "SliceInput",
    "ToleranceInput",
    "bar_children",
    "key_boxes",
]
