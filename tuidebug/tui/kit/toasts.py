"""Taking down one toast while it is still up."""

from __future__ import annotations

import contextlib
from typing import Any

from textual.app import App


def withdraw_toast(app: App[Any], text: str) -> None:
    """Take down the toasts that show `text`. Textual has no public way to withdraw one
    toast (only all of them), hence its private list; a Textual without it leaves the
    toast to time out."""
    with contextlib.suppress(AttributeError, KeyError):
        for notification in list(app._notifications):
            if notification.message == text:
                app._unnotify(notification)


__all__ = ["withdraw_toast"]
