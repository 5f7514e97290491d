"""The session's notices: every one kept for the messages dialog, a burst toasted once.

Notices often come in bursts (one per odd file of a dump): `NoticeBurst` toasts a burst
once, after the events queued with it, as bad as its worst notice (`burst_toast`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.notifications import SeverityLevel

from tuidebug.core.session import Notice
from tuidebug.tui.kit.session_text import burst_toast


class NoticeBurst:
    """The notices of one app. `toast(text, severity)` shows one; `later(callback)`
    calls it once the messages queued now are handled (the app's `call_later`)."""

    def __init__(
        self,
        toast: Callable[[str, SeverityLevel], None],
        later: Callable[[Callable[[], None]], Any],
    ) -> None:
        self._toast = toast
        self._later = later
        self.messages: list[Notice] = []  # every notice of the session, for the dialog
        self._pending: list[Notice] = []

    def add(self, notice: Notice) -> None:
        self.messages.append(notice)
        self._pending.append(notice)
        if len(self._pending) == 1:
            self._later(self._flush)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            text, severity = burst_toast(pending)
            self._toast(text, severity)


__all__ = ["NoticeBurst"]
