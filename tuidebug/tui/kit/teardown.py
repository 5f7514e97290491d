"""Handlers that outlive the app's screen: a late message during shutdown is dropped.

Messages can still arrive while the app shuts down and its screen and panes are already
gone (quitting right after a load, a session event racing the exit). The app keeps its
panes from compose, but the panes look up their own children, and the focus needs a
screen: such a late message is dropped, not a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from textual.app import ScreenStackError
from textual.css.query import NoMatches


def tolerate_teardown(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an app's message handler: NoMatches or ScreenStackError (the screen, or a
    pane's child, gone at shutdown) ends it quietly, returning None."""

    @functools.wraps(method)
    def handler(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (NoMatches, ScreenStackError):
            return None

    return handler


__all__ = ["tolerate_teardown"]
