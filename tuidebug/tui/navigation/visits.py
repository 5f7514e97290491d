"""Back and forward (Alt+← / Alt+→, `[` / `]`) over the nodes and tensors the user went to.

What is kept and where back goes is `VisitHistory`'s (visit_history.py, no Textual).
`VisitNavigation` is a helper object of the `DebuggerApp` (not a mixin: watchpoint_flows.py
says why): the app tells it of every jump (`record`: going to a node, opening a tensor)
and hands it the back and forward keys; going back or forward replays the place with the
app's own calls, which must not count as new visits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.navigation.visit_history import Visit, VisitHistory

# the tensor open in the tensor view: graph, node, slot, iteration (None: none open)
OpenTensor = Callable[[], "tuple[str, str, int, int | None] | None"]
# (graph, node, slot, iteration) → open that tensor (the app's tensor request)
RequestTensor = Callable[[str, str, int, "int | None"], None]


class VisitNavigation:
    """The visits of one app (see the module docstring)."""

    def __init__(
        self, app: AppHost, open_tensor: OpenTensor, request_tensor: RequestTensor
    ) -> None:
        self._app = app
        self._open_tensor = open_tensor
        self._request_tensor = request_tensor
        self._replaying = False  # back or forward is going somewhere: not a visit

    @cached_property
    def history(self) -> VisitHistory:
        """The places visited: made when first asked for, after the first frame, which
        needs none of it (issue 28)."""
        from tuidebug.tui.navigation.visit_history import VisitHistory

        return VisitHistory()

    def here(self) -> Visit | None:
        """The place shown now: the selected node, with its tensor when that is open."""
        from tuidebug.tui.navigation.visit_history import Visit

        node, graph = self._app.current_node, self._app.current_graph
        if node is None or graph is None:
            return None
        shown = self._open_tensor()
        if shown is not None and shown[0] == graph and shown[1] == node.name:
            return Visit(graph, node.name, shown[2], shown[3])
        return Visit(graph, node.name)

    def record(
        self, graph: str, node: str, slot: int | None = None, iteration: int | None = None
    ) -> None:
        """A jump to a node, or to its output `slot` at `iteration` (not one back or
        forward makes): the place left is kept too when the tree cursor wandered there
        since the last jump."""
        from tuidebug.tui.navigation.visit_history import Visit

        if self._replaying:
            return
        self.history.leave(self.here())
        self.history.visit(Visit(graph, node, slot, iteration))

    @property
    def can_back(self) -> bool:
        """Back would go somewhere (the palette offers it then)."""
        return self.history.can_back_from(self.here())

    @property
    def can_forward(self) -> bool:
        return self.history.can_forward_from(self.here())

    def back(self) -> None:
        place = self.history.back(self.here())
        if place is None:
            self._app.notify("Nothing to go back to: no earlier node or tensor was visited.")
            return
        self._replay(place)

    def forward(self) -> None:
        place = self.history.forward(self.here())
        if place is None:
            self._app.notify("Nothing to go forward to.")
            return
        self._replay(place)

    def _replay(self, place: Visit) -> None:
        self._replaying = True
        try:
            app = self._app
            if app.go_to_node(place.graph, place.node, focus_tree=False) and place.is_tensor:
                assert place.slot is not None
                self._request_tensor(place.graph, place.node, place.slot, place.iteration)
        finally:
            self._replaying = False


__all__ = ["VisitNavigation"]
