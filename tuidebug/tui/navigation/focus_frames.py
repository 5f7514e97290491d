"""The lit border of the pane that holds the focus (the tree/hits/stack column, node details,
the tensor view), drawn without restyling what the pane holds.

A `:focus-within` rule would do it in CSS, but Textual then restyles every widget inside the
pane whenever the focus enters or leaves it (`Screen._update_focus_styles` walks the subtree
of the outermost ancestor with such a rule): the left column's tree, hit list and stack
list with their selects, ~60 widgets, on every `:` and Esc of the command line and every
pane key. Here the pane gets the class `-focus`, set on it alone (kit/own_class.py), and
app.tcss styles only the pane itself by it.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget

from tuidebug.tui.kit.own_class import set_own_class

FRAMED = ("#left", "#details", "#tensor-view")  # the panes whose border follows the focus
FOCUS_CLASS = "-focus"


class MainScreen(Screen[Any]):
    """The app's screen: the focus starts on the scope tree. Textual's default would put it
    on the first focusable widget composed, the watchpoint list, which the app then left
    for the tree: two restyles of the list (and its component styles) and a new footer
    before the first frame (issue 28)."""

    AUTO_FOCUS = "#scope-tree"


def _inside(widget: Widget | None, pane: Widget) -> bool:
    node: object = widget
    while isinstance(node, Widget):
        if node is pane:
            return True
        node = node.parent
    return False


def follow_focus(screen: Screen[Any]) -> None:
    """Keep `-focus` on whichever of the screen's framed panes holds its focused widget
    (from now on: call it once the panes are mounted)."""
    panes = [screen.query_one(selector, Widget) for selector in FRAMED]

    def focused(widget: Widget | None) -> None:
        for pane in panes:
            set_own_class(pane, _inside(widget, pane), FOCUS_CLASS)

    screen.watch(screen, "focused", focused, init=True)


__all__ = ["FOCUS_CLASS", "FRAMED", "follow_focus"]
