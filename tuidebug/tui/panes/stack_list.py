"""The stack pane: the selected node's source stack, every source line of the graph with a
search box, and the nodes created at the chosen line.

The line → nodes index touches every frame of every node, so it is built in a thread
worker the first time the pane needs it for a graph, and cached per graph.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar, NamedTuple

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from tuidebug.core.graph import Graph, Node, StackFrame
from tuidebug.tui.kit.labels import plain, shown, source_place
from tuidebug.tui.messages import NodeChosen

MAX_LINES_SHOWN = 2000


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class SourceLine(NamedTuple):
    """A distinct source location (file, line, code) and the nodes whose stack holds it."""

    file_path: str
    line_no: int | None
    code_line: str
    nodes: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.file_path}\x00{self.line_no}\x00{self.code_line}"

    def label(self) -> Text:
        text = Text()
        if self.file_path:
            text.append(source_place(self.file_path, self.line_no), style="cyan")
            text.append(" ")
        text.append(shown(self.code_line.strip()) or "(no code)")
        text.append(f"  {len(self.nodes)}", style="dim")
        return text

    def matches(self, needle: str) -> bool:
        return needle in f"{self.file_path}:{self.line_no} {self.code_line}".lower()


def frame_key(frame: StackFrame) -> str:
    return f"{frame.file_path}\x00{frame.line_no}\x00{frame.code_line}"


def index_source_lines(graph: Graph) -> list[SourceLine]:
    """Every distinct source location of the graph, in first-seen order, with the nodes
    that hold it. Frames without a file (a "Corresponding code candidate:" header, a line
    naming no location) are no source line."""
    found: dict[str, tuple[StackFrame, list[str]]] = {}
    for node in graph:
        seen: set[str] = set()
        for frame in node.stack:
            if not frame.file_path:
                continue
            key = frame_key(frame)
            if key in seen:
                continue
            seen.add(key)
            entry = found.get(key)
            if entry is None:
                found[key] = (frame, [node.name])
            else:
                entry[1].append(node.name)
    return [
        SourceLine(frame.file_path, frame.line_no, frame.code_line, tuple(nodes))
        for frame, nodes in found.values()
    ]


class StackList(Vertical):
    """Left pane, tab 3."""

    CONTEXT_TITLE = "stack list"
    CONTEXT_HELP = (
        "The selected node's source stack, then every source line of the graph with the\n"
        "number of nodes created there. / searches the lines. Enter on a line of the\n"
        "node's stack opens its file at that line, each line with the nodes it created;\n"
        "{stack.source} does that for any line. Enter on a line of the graph lists its nodes\n"
        "below; Enter on a node shows it in the tree."
    )

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "view_source", "Source", id="stack.source"),
    ]

    class SourceRequested(Message):
        """Show the source file `path` around `line_no` (the app opens the view)."""

        def __init__(self, path: str, line_no: int | None) -> None:
            super().__init__()
            self.path = path
            self.line_no = line_no

    DEFAULT_CSS = """
    StackList { height: 1fr; }
    StackList #stack-search { height: 1; }
    StackList #stack-lines { height: 2fr; border: none; }
    StackList #stack-nodes-title { height: 1; background: $panel; padding: 0 1; }
    StackList #stack-nodes { height: 1fr; border: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.graph: Graph | None = None
        self.node: Node | None = None
        self._index: dict[str, list[SourceLine]] = {}
        self._by_key: dict[str, SourceLine] = {}
        self._needle = ""
        self._chosen: SourceLine | None = None
        # the app mounts this list just after its first frame (issue 28's cold start): the
        # graph and node set before then are shown on mount
        self._built = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search source lines  (/)", compact=True, id="stack-search")
        yield OptionList(id="stack-lines", compact=True)
        yield Static("choose a source line to list the nodes created there", id="stack-nodes-title")
        yield OptionList(id="stack-nodes", compact=True)

    def on_mount(self) -> None:
        self._built = True
        if self.graph is not None or self.node is not None:
            self._refresh_lines()

    # ---------------------------------------------------------------- public
    def set_graph(self, graph: Graph | None) -> None:
        if graph is self.graph:
            return
        self.graph = graph
        self.node = None
        self._chosen = None
        if self._built:
            self.query_one("#stack-nodes", OptionList).clear_options()
        self._refresh_lines()
        if graph is not None and graph.name not in self._index:
            self._build_index(graph)

    def forget_graphs(self) -> None:
        """New graphs arrived (online: a new graph was sent); drop cached indexes."""
        self._index.clear()
        self.graph = None

    def set_node(self, node: Node | None) -> None:
        self.node = node
        self._refresh_lines()

    def focus_search(self) -> None:
        if not self._built:
            return
        self.query_one("#stack-search", Input).focus()

    def clear_search(self) -> bool:
        if not self._built:
            return False
        search = self.query_one("#stack-search", Input)
        if not search.value:
            return False
        search.value = ""
        return True

    @property
    def ready(self) -> bool:
        return self.graph is not None and self.graph.name in self._index

    # -------------------------------------------------------------- building
    @work(thread=True, exclusive=True, group="stack-index")
    def _build_index(self, graph: Graph) -> None:
        lines = index_source_lines(graph)
        if get_current_worker().is_cancelled:
            return
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            self.app.call_from_thread(self._index_ready, graph, lines)

    def _index_ready(self, graph: Graph, lines: list[SourceLine]) -> None:
        self._index[graph.name] = lines
        if self.graph is graph and self.is_attached:
            with contextlib.suppress(NoMatches):  # shutting down: the lists are gone
                self._refresh_lines()

    def _refresh_lines(self) -> None:
        if not self._built:  # shown on mount
            return
        option_list = self.query_one("#stack-lines", OptionList)
        highlighted = option_list.highlighted
        option_list.clear_options()
        self._by_key = {}
        options: list[Option] = []
        node = self.node
        if node is not None:
            options.append(
                Option(plain(f"stack of {node.short_name}", style="bold underline"), disabled=True)
            )
            if not node.stack:
                options.append(Option(Text("  none recorded", style="dim"), disabled=True))
            lines_by_key = {ln.key: ln for ln in self._index.get(node.graph_name, [])}
            for i, frame in enumerate(node.stack):
                if not frame.file_path:
                    # a sub-stack header: a title inside the stack, not a line to choose
                    title = plain(f"  {frame.code_line.strip()}", style="dim italic")
                    options.append(Option(title, disabled=True))
                    continue
                key = frame_key(frame)
                line = lines_by_key.get(key) or SourceLine(
                    frame.file_path, frame.line_no, frame.code_line, (node.name,)
                )
                self._by_key[key] = line
                options.append(Option(Text("  ").append_text(line.label()), id=f"node:{i}:{key}"))
        graph = self.graph
        if graph is None:
            options.append(Option(Text("no graph loaded", style="dim"), disabled=True))
        elif graph.name not in self._index:
            options.append(Option(Text("indexing source lines…", style="dim"), disabled=True))
        else:
            all_lines = self._index[graph.name]
            shown = [ln for ln in all_lines if not self._needle or ln.matches(self._needle)]
            heading = f"source lines ({len(shown)}"
            heading += f" of {len(all_lines)})" if self._needle else ")"
            options.append(Option(Text(heading, style="bold underline"), disabled=True))
            if not all_lines:
                options.append(
                    Option(
                        Text("  this graph records no source stacks", style="dim"), disabled=True
                    )
                )
            for line in shown[:MAX_LINES_SHOWN]:
                self._by_key[line.key] = line
                options.append(Option(Text("  ").append_text(line.label()), id=f"all:{line.key}"))
            if len(shown) > MAX_LINES_SHOWN:
                options.append(
                    Option(
                        Text(f"  … {len(shown) - MAX_LINES_SHOWN} more: refine the search", "dim"),
                        disabled=True,
                    )
                )
        option_list.add_options(options)
        if highlighted is not None and highlighted < option_list.option_count:
            option_list.highlighted = highlighted

    def _show_nodes(self, line: SourceLine) -> None:
        self._chosen = line
        graph = self.graph
        title = self.query_one("#stack-nodes-title", Static)
        where = source_place(line.file_path, line.line_no, missing="(no file)")
        count = len(line.nodes)
        # `where` names a file of the graph's stacks: a Text, never markup
        title.update(Text(f"{count} node{'s' if count != 1 else ''} created at {where}"))
        nodes_list = self.query_one("#stack-nodes", OptionList)
        nodes_list.clear_options()
        options = []
        for name in line.nodes[:MAX_LINES_SHOWN]:
            node = graph.get(name) if graph is not None else None
            label = plain(node.short_name if node else name, style="cyan")
            if node is not None:
                label.append(f"  {shown(node.op_type)}", style="dim")
                label.append(f"  {shown(node.scope)}", style="dim")
            options.append(Option(label, id=name))
        nodes_list.add_options(options)
        if options:
            nodes_list.highlighted = 0

    # ---------------------------------------------------------------- events
    @on(Input.Changed, "#stack-search")
    def _search(self, event: Input.Changed) -> None:
        event.stop()
        self._needle = event.value.strip().lower()
        self._refresh_lines()

    @on(Input.Submitted, "#stack-search")
    def _search_done(self, event: Input.Submitted) -> None:
        event.stop()
        lines = self.query_one("#stack-lines", OptionList)
        # The list starts with a title row that cannot be chosen: land on the first line
        # found, so the next Enter lists its nodes.
        highlighted = lines.highlighted
        if highlighted is None or lines.get_option_at_index(highlighted).disabled:
            first = next(
                (i for i in range(lines.option_count) if not lines.get_option_at_index(i).disabled),
                None,
            )
            lines.highlighted = first
        lines.focus()

    def _line_of(self, option_id: str) -> SourceLine | None:
        key = option_id.split(":", 2)[-1] if option_id.startswith("node:") else option_id[4:]
        return self._by_key.get(key)

    @on(OptionList.OptionSelected, "#stack-lines")
    def _line_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        line = self._line_of(option_id)
        if line is None:
            return
        if option_id.startswith("node:"):
            # a frame of the node's own stack: see it in its file (that view lists the
            # nodes of every line, this one's included)
            self.post_message(self.SourceRequested(line.file_path, line.line_no))
            return
        self._show_nodes(line)
        self.query_one("#stack-nodes", OptionList).focus()

    def action_view_source(self) -> None:
        """The highlighted source line's file, whichever part of the list it is in."""
        lines = self.query_one("#stack-lines", OptionList)
        index = lines.highlighted
        option = lines.get_option_at_index(index) if index is not None else None
        line = self._line_of(option.id or "") if option is not None else None
        if line is None:
            self.notify("Highlight a source line first (the node's stack or the list).")
            return
        self.post_message(self.SourceRequested(line.file_path, line.line_no))

    @on(OptionList.OptionSelected, "#stack-nodes")
    def _node_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.graph is not None and event.option.id:
            self.post_message(NodeChosen(self.graph.name, event.option.id))
