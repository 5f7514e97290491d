"""The screens that show the nodes around one and go to the node chosen there: downstream
of the selected hit or node (`O`), the graph around it (`G`), and a stack line's source
file with the nodes each line created (Enter in the stack list).

`NodeScreens` is a helper object of the `DebuggerApp` (not a mixin: watchpoint_flows.py
says why); the app keeps the key actions and the stack's message handler and hands them
over. Each screen answers the node chosen, and the app goes there only once the screen
has closed: going while it is still up would focus the tree behind it, and the focus
Textual restores when it closes would land on whatever had it before (the hit list's
filter, a pane the tree's tab now hides). The screens load with their first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.origins.trace import TraceTarget


class NodeScreens:
    """Open the node screens of one app (see the module docstring)."""

    def __init__(self, app: AppHost, focused_hit: Callable[[], object]) -> None:
        self._app = app
        self._focused_hit = focused_hit  # the hit under the hit list's cursor, or None

    def target(self) -> TraceTarget | None:
        """The hit under the hit list's cursor (on this rank), else the selected node."""
        from tuidebug.tui.origins.trace import trace_target  # with the first screen

        app = self._app
        return trace_target(
            self._focused_hit(), app.graphs, app.metadata.rank, app.current_graph, app.current_node
        )

    def _go_when_closed(self, graph: str) -> Callable[[str | None], None]:
        """The screen's callback: go to the node it answered, after it has closed."""

        def chosen(node: str | None) -> None:
            if node is not None:
                self._app.call_after_refresh(self._app.go_to_node, graph, node)

        return chosen

    def downstream(self) -> None:
        """O: the nodes downstream of the selected hit's or node's outputs."""
        from tuidebug.tui.neighbours.downstream_screen import DownstreamScreen

        target = self.target()
        if target is None:
            return
        app = self._app
        graph = app.graphs[target.graph]
        screen = DownstreamScreen(graph, target.node, app.session.hits, rank=app.metadata.rank)
        app.push_screen(screen, self._go_when_closed(graph.name))

    def graph_view(self) -> None:
        """G: the selected hit's or node's inputs and consumers, drawn as a small DAG."""
        from tuidebug.tui.neighbours.graph_screen import GraphScreen, hit_counts, nan_inf_kinds

        target = self.target()
        if target is None:
            return
        app = self._app
        graph = app.graphs[target.graph]

        def centred(node: str) -> None:  # the tree follows the view's centre, behind it
            app.go_to_node(graph.name, node, focus_tree=False)

        hits = app.session.hits  # this step's: the hit list's
        screen = GraphScreen(
            graph,
            target.node,
            hit_counts(hits, graph, app.metadata.rank),
            ascii=app.has_class("-ascii"),  # a terminal without UTF-8 (terminal_caps.draw_for)
            on_centre=centred,
            nan_inf=nan_inf_kinds(hits, graph, app.metadata.rank),
        )
        app.push_screen(screen, self._go_when_closed(graph.name))

    def source(self, path: str, line_no: int | None) -> None:
        """A stack line's file, each line with the nodes it created (Enter goes there)."""
        from tuidebug.commands.source import path_maps, source_roots
        from tuidebug.tui.neighbours.source_screen import SourceScreen

        def chosen(node: tuple[str, str] | None) -> None:
            if node is not None:
                self._app.call_after_refresh(self._app.go_to_node, *node)

        # a stack's path shows its file only under these folders (commands/source.py)
        # (`offline --source-root` puts its folders and PREFIX=DIR maps in the variable)
        roots = source_roots(self._app.metadata.source)
        graphs = list(self._app.graphs.values())
        screen = SourceScreen(
            graphs, path, line_no, roots, maps=path_maps(), dumped=self._app.session.source_text
        )
        self._app.push_screen(screen, chosen)


__all__ = ["NodeScreens"]
