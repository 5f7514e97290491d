"""What the App's helper objects (navigation, run controls, watchpoint flows, origin
tracing, visits, node screens, kept views, tensor compare, tensor requests, the hits
shown) may ask of the App: a Protocol instead of the `DebuggerApp` class, so the helpers
do not import the module that builds them (no import circle) and the surface they lean on
is written down in one place (the tests' fake app implements the same)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.worker import Worker

    from tuidebug.core.graph import Graph, Node
    from tuidebug.core.session import DebugSession, Metadata
    from tuidebug.tui.panes.scope_tree import TreeEntry


class AppHost(Protocol):
    """The `DebuggerApp` as its helper objects see it."""

    session: DebugSession

    # --- Textual's App
    @property
    def focused(self) -> Widget | None: ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Any = None) -> Any: ...

    def install_screen(self, screen: Screen[Any], name: str) -> None: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any) -> bool: ...

    def has_class(self, *class_names: str) -> bool: ...

    def run_worker(
        self,
        work: Callable[[], Any],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[Any]: ...

    def post_message(self, message: Message) -> bool: ...

    def query_one(self, selector: str) -> Widget: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    # --- the debugger's own
    @property
    def metadata(self) -> Metadata: ...

    graphs: dict[str, Graph]
    current_graph: str | None
    current_node: Node | None

    def guard(self, action: str) -> bool: ...

    def key_hint(self, binding_id: str) -> str: ...

    def state_changed(self) -> None: ...

    def run_session_call(
        self, label: str, call: Callable[[], object], *, control: bool = True
    ) -> None: ...

    def selected_tree_entry(self) -> TreeEntry | None: ...

    def go_to_node(self, graph_name: str, node_name: str, *, focus_tree: bool = True) -> bool: ...
