"""Filling a screen's children from its `on_mount`, on a busy app too.

A screen's Mount can arrive before the widgets it composed some containers down are
mounted themselves (Textual mounts them in later steps; a busy app lets the screen's
handler run in between), so querying them there can find nothing. `fill_when_mounted`
fills at once where it can, else once the screen has drawn; a screen closed before
that is not filled at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from textual.css.query import NoMatches
from textual.dom import DOMNode


def fill_when_mounted(screen: DOMNode, fill: Callable[[], object]) -> None:
    """Call `fill` (which queries `screen`'s children) now, or after the next refresh if
    they are not mounted yet."""
    try:
        fill()
    except NoMatches:
        screen.call_after_refresh(_fill_later, fill)


def _fill_later(fill: Callable[[], object]) -> None:
    with contextlib.suppress(NoMatches):  # closed before it was drawn
        fill()


__all__ = ["fill_when_mounted"]
