"""`SessionError`, in a module of its own so that what the sessions share (the watchpoint book)
can raise it without importing the `DebugSession` interface that uses them."""

from __future__ import annotations

__all__ = ["SessionError"]


class SessionError(Exception):
    """A user-facing failure of a session call; the message is one sentence."""
