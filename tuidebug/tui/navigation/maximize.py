"""z: the focused pane fills the screen, and the pane keys while one does.

Textual's own maximize would enlarge only the focused widget (the tree without its
filter, or nothing for a pane whose focus sits in a container), so z maximizes the whole
pane that holds the focus; z again or Esc (pane_keys.py) restores the layout.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widget import Widget

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost

# Widget ids of the panes z maximizes: the left column (tree, hits and stack tabs with
# their filters), node details, tensor view, watchpoint list, the command line (`:`).
PANE_IDS = frozenset({"left", "details", "tensor-view", "watchpoints", "command-line"})
PANES_BY_NUMBER = {4: "details", 5: "tensor-view", 6: "watchpoints"}  # 1–3: "left"


def pane_of(widget: Widget | None) -> Widget | None:
    """The pane that holds `widget` (the whole pane, not the tree or table inside it,
    so its filter row and tabs are maximized with it)."""
    node: Any = widget
    while isinstance(node, Widget):
        if node.id in PANE_IDS:
            return node
        node = node.parent
    return None


def toggle_maximized(app: AppHost) -> None:
    """z (and the palette): maximize the focused pane, or put a maximized one back."""
    screen = app.screen
    if isinstance(screen, ModalScreen):
        return
    if screen.maximized is not None:
        screen.minimize()
        return
    pane = pane_of(screen.focused)
    if pane is None:
        app.notify("Focus a pane first (1–6), then press z to maximize it.")
        return
    screen.maximized = pane


def maximize_instead(app: AppHost, number: int) -> None:
    """A pane key while one pane fills the screen shows that pane full-screen in its
    place (on a small terminal, z then 1–6 flips between whole panes). Call it before
    focusing the pane, as Textual only focuses what the maximized view shows."""
    screen = app.screen
    if screen.maximized is None:
        return
    pane_id = "left" if number <= 3 else PANES_BY_NUMBER.get(number, "")
    with contextlib.suppress(NoMatches):
        screen.maximized = app.query_one(f"#{pane_id}")


__all__ = ["PANE_IDS", "maximize_instead", "pane_of", "toggle_maximized"]
