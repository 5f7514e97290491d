"""Textual messages the panes use to talk to the app (and the session's events, wrapped).

Panes never call each other: they post one of these and the app decides what happens, so a
pane can be tested alone and the data flow stays one-directional (harlequin's habit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from tuidebug.core.session import SessionEvent

if TYPE_CHECKING:
    import numpy as np
    from textual.notifications import SeverityLevel

    from tuidebug.core.graph import Graph
    from tuidebug.core.origins import OriginTrace
    from tuidebug.core.watchpoints import WatchpointHit
    from tuidebug.tui.origins.trace import Counts
    from tuidebug.tui.tensor.reads import OutputSummary


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
    """A control-bar button, routed to the same action as its key (`run('<id>')`)."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action


class HitChosen(Message):
    """Jump to a hit's node and open its tensor (at the hit's iteration)."""

    def __init__(self, hit: WatchpointHit) -> None:
        super().__init__()
        self.hit = hit


# ------------------------------------------------- what the app's workers report back
# The app's thread workers post these to the app (`post_message` is thread-safe) instead
# of calling back into it, so each result has one handler to find (`@on(...)` in app.py)
# and a test can wait for it.


class WorkerNotice(Message):
    """A sentence for the user from a worker: a toast."""

    def __init__(
        self, text: str, *, severity: SeverityLevel = "information", timeout: float | None = None
    ) -> None:
        super().__init__()
        self.text = text
        self.severity = severity
        self.timeout = timeout


class StartFailed(Message):
    """`session.start()` failed: `sentence` says why."""

    def __init__(self, sentence: str) -> None:
        super().__init__()
        self.sentence = sentence


class ControlDone(Message):
    """A run command (step, continue…) returned: the next one may start."""


class SummaryRead(Message):
    """One output's summary line for the details pane (or, with `argument`, the summary
    of the node's argument of that index: `Graph.arguments`)."""

    def __init__(
        self, node: str, slot: int, summary: OutputSummary, argument: int | None = None
    ) -> None:
        super().__init__()
        self.node = node
        self.slot = slot
        self.summary = summary
        self.argument = argument


class TensorRead(Message):
    """The answer to tensor request `request`: `array` (and `previous`) to show, or
    `error`, a sentence. A request superseded by a later one is dropped."""

    def __init__(
        self,
        request: int,
        *,
        error: str = "",
        title: str = "",
        array: np.ndarray | None = None,
        previous: np.ndarray | None = None,
        note: str = "",
        short_name: str = "",
        slot: int = 0,
        file_stem: str = "",
        context: str = "",
        trip: tuple[int, int] | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.error = error
        self.trip = trip  # (trip shown, trips) when a control-flow loop dumped several
        self.title = title
        self.array = array
        self.previous = previous
        self.note = note
        self.short_name = short_name
        self.slot = slot
        self.file_stem = file_stem  # saved files' default name (tensor_files.file_stem)
        self.context = context  # the hit it was opened from, shown above it


class StartupWatchpointsCreated(Message):
    """The command line's watchpoints exist: `given` maps each id to the spec as written."""

    def __init__(self, given: dict[int, str], created: int) -> None:
        super().__init__()
        self.given = given
        self.created = created


class TraceProgress(Message):
    """A running NaN/Inf trace has read `read` tensors."""

    def __init__(self, read: int) -> None:
        super().__init__()
        self.read = read


class TraceEnded(Message):
    """A NaN/Inf trace ended: its `trace` (None when it failed: `error` says why)."""

    def __init__(
        self,
        trace: OriginTrace | None = None,
        *,
        graph: Graph | None = None,
        iteration: int | None = None,
        step: int = 0,
        counts: dict[str, Counts] | None = None,
        error: str = "",
    ) -> None:
        super().__init__()
        self.trace = trace
        self.graph = graph
        self.iteration = iteration
        self.step = step
        self.counts = counts or {}
        self.error = error
