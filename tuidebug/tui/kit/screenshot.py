"""A screenshot of the app in the current directory, as the palette's entry says."""

from __future__ import annotations

import os
from typing import Any

from textual.app import App


def save_screenshot_here(app: App[Any]) -> str | None:
    """An SVG of the screen in the current directory (Textual's `deliver_screenshot`
    writes to ~/Downloads, and fails where there is none); the toast gives the full
    path. Returns it, None when it could not be written."""
    here = os.environ.get("PWD") or "the current directory"  # getcwd() can fail too
    try:
        here = os.getcwd()
        path = os.path.abspath(app.save_screenshot(path=here))
    except OSError as exc:
        app.notify(
            f"The screenshot could not be saved in {here}: {exc.strerror or exc}.",
            severity="error",
        )
        return None
    app.notify(f"Screenshot saved to {path}", timeout=10)
    return path


__all__ = ["save_screenshot_here"]
