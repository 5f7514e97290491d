"""Sentences the app says about its session: what the tree pane says before there is a
graph to show (`no_graph_text`), the one toast for a burst of the session's notices
(`burst_toast`), and which errors are meant for the user as they are (`is_user_error`:
one sentence, shown without a "… failed:" in front). No Textual here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tuidebug.core.session import Metadata, Notice, SessionError, SessionState
from tuidebug.core.watchpoints import WatchpointError


def no_graph_text(md: Metadata) -> str:
    """What the tree pane says before there is a graph to show."""
    state = md.state
    if md.mode == "online":
        if state is SessionState.PENDING:
            host, _, port = md.source.rpartition(":")
            return (
                f"Waiting for a training to connect to {md.source}…\n\n"
                "Start the MindSpore training (GPU or Ascend) with\n"
                f"ENABLE_MS_DEBUGGER=1 MS_DEBUGGER_HOST={host or '<this host>'} "
                f"MS_DEBUGGER_PORT={port or 50051}\n\n"
                f"or replay a dump: tuidebug simulate DUMP --connect {md.source}"
            )
        if state is SessionState.MISMATCH:
            return "The training's MindSpore version does not match: terminate it (T)."
        if state is SessionState.NODE_TOO_LARGE:
            return "The training's graph is too large to show: terminate it (T)."
        if state in {SessionState.DISCONNECTED, SessionState.DONE}:
            return "The training is gone and sent no graph."
        return "Receiving the graph…"
    if state is SessionState.LOADING:
        return "Loading the dump…"
    if state is SessionState.PENDING:
        return md.message or "Nothing is loaded."
    return "This dump has no readable graph."


Severity = Literal["information", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("information", "warning", "error")  # mildest first


def _rank(notice: Notice) -> int:
    return SEVERITIES.index(notice.severity) if notice.severity in SEVERITIES else 0


def burst_toast(notices: Sequence[Notice]) -> tuple[str, Severity]:
    """One toast for notices that came together (one per odd file of a dump): the first
    one's sentence, how many more the messages dialog holds, and the worst severity."""
    text = notices[0].message
    if len(notices) > 1:
        text += f"\n(+{len(notices) - 1} more: Ctrl+P → Session messages)"
    return text, SEVERITIES[max(_rank(notice) for notice in notices)]


def is_user_error(exc: BaseException) -> bool:
    """Errors whose message is meant for the user as is (one sentence)."""
    return isinstance(exc, SessionError | WatchpointError | ValueError)


__all__ = ["Severity", "burst_toast", "is_user_error", "no_graph_text"]
