"""A class that styles only the widget it is on: set without restyling its subtree.

Textual restyles a widget's whole subtree when one of its classes changes, since a selector
such as `.-open Input` may depend on it. Where no selector styles anything *inside* the
widget by that class, that is work for nothing, and on a pane it is the whole cost of a key:
the command line's `:` and Esc restyled the control bar's buttons and the pane's own
children twice each (about half of the 0.1 s a key may take, issue 28). `set_own_class`
changes the class and restyles the widget alone (with the few descendants the caller names
where a rule styles those by it); tests/tui/test_own_class.py reads the rules to check.
`unstyled` builds widgets whose constructors set classes without restyling them either.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import TypeVar

from textual.widget import Widget


def set_own_class(widget: Widget, add: bool, name: str, *, also: Iterable[Widget] = ()) -> bool:
    """`widget.set_class(add, name)`, restyling `widget` alone, and `also`: the descendants
    that a rule styles by the class (`TensorView.-short #tv-table`), when there are a few.
    True if the class changed."""
    if widget.has_class(name) == add:
        return False
    widget.set_class(add, name, update=False)
    if widget.is_attached:
        widget.app.stylesheet.update_nodes({widget, *also}, animate=True)
    return True


T = TypeVar("T")


def unstyled(build: Callable[[], T]) -> T:
    """`build()` outside the app's context: a widget's constructor (Button's, OptionList's)
    sets its classes, and in the app's context each one restyles it, more than once before
    it is even mounted (issue 28: 14 of the first frame's ~70 style passes); mounting
    styles it whatever its classes."""
    return contextvars.Context().run(build)


__all__ = ["set_own_class", "unstyled"]
