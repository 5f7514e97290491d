"""Textual messages the panes use to talk to the app (and the session's events, wrapped).

Panes never call each other: they post one of these and the app decides what happens, so a
pane can be tested alone and the data flow stays one-directional (harlequin's habit).
"""

from __future__ import annotations

from textual.message import Message

from tuidebug.core.session import SessionEvent


class SessionEventMessage(Message):
    """A session event, re-posted on the UI thread (sessions emit from any thread)."""

    def __init__(self, event: SessionEvent) -> None:
        super().__init__()
        self.event = event


class NodeChosen(Message):
    """Show a node: in the tree (expanding its scopes), in the details and the stack.

    `open_tensor` also fetches output `slot` into the tensor view.
    """

    def __init__(self, graph: str, node: str, *, open_tensor: bool = False, slot: int = 0) -> None:
        super().__init__()
        self.graph = graph
        self.node = node
        self.open_tensor = open_tensor
        self.slot = slot


class NodeHighlighted(Message):
    """The tree cursor rests on a node (or a scope when `node` is None)."""

    def __init__(self, graph: str, node: str | None, scope: str) -> None:
        super().__init__()
        self.graph = graph
        self.node = node
        self.scope = scope


class TensorRequested(Message):
    """Fetch and show one output slot of a node in the tensor view."""

    def __init__(self, graph: str, node: str, slot: int, *, iteration: int | None = None) -> None:
        super().__init__()
        self.graph = graph
        self.node = node
        self.slot = slot
        self.iteration = iteration


class GraphSwitched(Message):
    """The graph selector changed: every graph-dependent pane follows."""

    def __init__(self, graph: str) -> None:
        super().__init__()
        self.graph = graph


class WatchpointAction(Message):
    """A request from the watchpoint list: `edit`, `delete`, `toggle` or `new`."""

    def __init__(self, action: str, watchpoint_id: int | None = None) -> None:
        super().__init__()
        self.action = action
        self.watchpoint_id = watchpoint_id


class ControlRequested(Message):
    """A control-bar button, routed to the same action as its key."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action


class HitChosen(Message):
    """Jump to a hit's node and open its tensor (at the hit's iteration)."""

    def __init__(self, hit: object) -> None:
        super().__init__()
        self.hit = hit
