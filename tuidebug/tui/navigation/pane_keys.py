"""Moving around the app's panes: the pane keys (1–6), the filter key (/), and where
Esc goes back to.

`FocusHistory` (no Textual: plain unit tests) remembers where the focus was before a
jump, so Esc returns there. `Navigation` is a helper object of the `DebuggerApp` that
holds the panes it moves between; the app keeps the key actions and hands them over
(a helper object rather than a mixin, as watchpoint_flows.py says why).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Input, TabbedContent, TabPane

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.panes.hit_list import HitList
    from tuidebug.tui.panes.node_details import NodeDetails
    from tuidebug.tui.panes.scope_tree import ScopeTree
    from tuidebug.tui.panes.stack_list import StackList
    from tuidebug.tui.tensor.view import TensorView

# Pane number → (tab to show or None, widget id to focus, name)
PANES: dict[int, tuple[str | None, str, str]] = {
    1: ("tree-tab", "#scope-tree", "scope tree"),
    2: ("hits-tab", "#hit-tree", "hit list"),
    3: ("stack-tab", "#stack-lines", "stack list"),
    4: (None, "#io-list", "node details"),
    5: (None, "#tensor-view", "tensor view"),
    6: (None, "#watchpoints", "watchpoint list"),
}


class Focusable(Protocol):
    """What the history needs of a widget: whether it is still on screen."""

    @property
    def is_attached(self) -> bool: ...


F = TypeVar("F", bound=Focusable)


class FocusHistory(Generic[F]):
    """The last places the focus jumped from, newest last (at most `limit`)."""

    def __init__(self, limit: int = 20) -> None:
        self._limit = limit
        self._places: list[F] = []

    def remember(self, focused: F | None) -> None:
        """Before a jump: remember `focused` (once, however often the user jumps from it)."""
        if focused is not None and (not self._places or self._places[-1] is not focused):
            self._places.append(focused)
            del self._places[: -self._limit]

    def back(self, focused: F | None) -> F | None:
        """Where Esc goes from `focused`: the newest remembered place still on screen
        other than `focused` itself (the places passed over are forgotten)."""
        while self._places:
            previous = self._places.pop()
            if previous.is_attached and previous is not focused:
                return previous
        return None


class Navigation:
    """The app's pane keys, filter key and Esc, over the panes the app composed."""

    def __init__(
        self,
        app: AppHost,
        *,
        tabs: TabbedContent,
        scope: ScopeTree,
        hits: HitList,
        stack: Callable[[], StackList],  # the app makes it after the first frame
        details: NodeDetails,
        tensor: TensorView,
    ) -> None:
        self._app = app
        self._tabs = tabs
        self._scope = scope
        self._hits = hits
        self._stack = stack
        self._details = details
        self._tensor = tensor
        self._history: FocusHistory[Widget] = FocusHistory()

    def remember_focus(self) -> None:
        """Call before moving the focus elsewhere, so Esc can come back."""
        self._history.remember(self._app.focused)

    def filter(self) -> None:
        """/: the filter of the pane in view (the stack's search, the hits' filters, else
        the tree's name filter)."""
        self.remember_focus()
        if self._tabs.active == "stack-tab":
            self._stack().focus_search()
        elif self._tabs.active == "hits-tab":
            self._hits.focus_filters()
        else:
            self._tabs.active = "tree-tab"
            self._scope.focus_filter()

    def back(self) -> None:
        """Esc: clear the filter being typed in, put a maximized pane back, clear the
        tree's filter, else return to where the focus was before the last jump."""
        app = self._app
        focused = app.focused
        if isinstance(focused, Input):
            if focused.id == "name-filter":
                self._scope.clear_filter()
                self._scope.tree_view.focus()
                return
            if focused.id == "hit-filter-text":
                self._hits.clear_name_filter()
                self._hits.tree_view.focus()
                return
            if focused.id == "stack-search":
                self._stack().clear_search()
                app.query_one("#stack-lines").focus()
                return
        if app.screen.maximized is not None:
            app.screen.action_minimize()  # a maximized pane (palette) goes back in place
            return
        if focused is self._scope.tree_view and self._scope.clear_filter():
            return
        previous = self._history.back(focused)
        if previous is not None:
            self._activate_tab_of(previous)
            previous.focus()

    def _activate_tab_of(self, widget: Widget) -> None:
        node: Any = widget
        while node is not None:
            if isinstance(node, TabPane) and node.id:
                self._tabs.active = node.id
                return
            node = node.parent

    def focus_pane(self, number: int) -> None:
        """1–6: show the pane's tab (if it has one) and focus it."""
        tab, selector, _name = PANES[number]
        self.remember_focus()
        if tab is not None:
            self._tabs.active = tab
        if number == 4:
            self._details.focus_outputs()
            return
        if number == 5:
            if self._tensor.state != "tensor":
                # Nothing in the pane can take focus without a tensor: say how to get one.
                self._app.notify("No tensor is open: Enter on a node output (4) or a hit (2).")
                return
            self._tensor.canvas.focus()
            return
        # the Hits and Stack lists mount just after the first frame: a key before then
        # shows their tab, with nothing yet to focus
        with contextlib.suppress(NoMatches):
            self._app.query_one(selector).focus()


__all__ = ["PANES", "FocusHistory", "Focusable", "Navigation"]
