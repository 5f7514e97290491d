"""Where a node's values go (`O`): every node downstream of it, nearest first, hits marked.

The counterpart of the origin screen: `o` walks upstream to where a NaN/Inf appeared,
`O` lists what the selected hit's (or node's) outputs reach, so the user sees which later
nodes a bad value spreads to and which of them hit a watchpoint too. The walk is
downstream.py's (no Textual there); Enter answers the node so the app can go to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from tuidebug.core.graph import Graph
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.kit.fill_on_mount import fill_when_mounted
from tuidebug.tui.kit.labels import plain
from tuidebug.tui.neighbours.downstream import Downstream, downstream_of


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' if count != 1 else ''}"


def downstream_summary(found: Downstream) -> str:
    """The line under the title: how many nodes, how many with hits, what is left out."""
    if not found.total:
        return "Nothing reads its outputs: it is a last node of the graph."
    text = f"{_plural(found.total, 'downstream node')} · {found.with_hits:,} with hits"
    if len(found.nodes) < found.total:
        text += f" · the nearest {len(found.nodes):,} listed"
    return text


class DownstreamScreen(ModalScreen[str | None]):
    """The downstream nodes of one node; answers the node chosen, or None."""

    # The help screen (help_screen.context_help) reads it from the focused table's screen.
    CONTEXT_TITLE = "Downstream"
    CONTEXT_HELP = """Every node the outputs of the selected hit's (or node's) node reach, nearest
first: depth 1 reads its outputs, depth 2 their outputs…; hits counts each node's
watchpoint hits at this step (o traces a NaN/Inf upstream instead).
  ↑ ↓  move (PageUp / PageDown, Home / End)
  Enter  close and go to the node in the tree
  {downstream.close}  close"""

    DEFAULT_CSS = """
    DownstreamScreen { align: center middle; }
    DownstreamScreen > Vertical {
        width: 110; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    DownstreamScreen #downstream-title { text-style: bold; }
    DownstreamScreen #downstream-summary { color: $text-muted; }
    DownstreamScreen DataTable { height: auto; max-height: 16; margin-top: 1; }
    DownstreamScreen #downstream-hint { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="downstream.close"),
        Binding("q", "close", "Close", show=False),
        # a modal screen hides the app's keys: its help key is its own (CONTEXT_HELP)
        Binding("question_mark,f1", "app.help", "Help", show=False, id="downstream.help"),
    ]

    def __init__(
        self, graph: Graph, start: str, hits: Iterable[WatchpointHit] = (), *, rank: int = 0
    ) -> None:
        super().__init__()
        self._graph = graph
        self.found = downstream_of(graph, start, hits, rank=rank)

    def _short(self, name: str) -> str:
        node = self._graph.get(name)
        return node.short_name if node is not None else name.rsplit("/", 1)[-1]

    @staticmethod
    def _tail(name: str) -> str:
        """The node with its innermost scope (`fc2-Dense/MatMul-op0`): short names repeat
        across layers, and at 80 columns the scope column is cut off."""
        return "/".join(name.split("/")[-2:])

    def compose(self) -> ComposeResult:
        found = self.found
        start = self._short(found.start)
        own = f" ({_plural(found.start_hits, 'hit')})" if found.start_hits else ""
        with Vertical():
            yield Label(plain(f"Downstream of {start}{own}"), id="downstream-title")
            yield Static(downstream_summary(found), id="downstream-summary", markup=False)
            yield DataTable(id="downstream-table", cursor_type="row", zebra_stripes=True)
            yield Static("Enter goes to the node · Esc closes", id="downstream-hint")

    def on_mount(self) -> None:
        fill_when_mounted(self, self._fill)

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        # the type before the name: at 80 columns a long name pushes what follows it off
        table.add_columns("hits", "depth", "type", "node", "scope")
        for i, item in enumerate(self.found.nodes):
            node = self._graph.get(item.name)
            table.add_row(
                Text(str(item.hits) if item.hits else "", style="bold red"),
                Text(str(item.depth), style="dim"),
                plain(node.op_type if node is not None else ""),
                plain(self._tail(item.name), style="bold cyan" if item.hits else ""),
                plain(node.scope if node is not None else "", style="dim"),
                key=str(i),
            )
        table.focus()

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is None:
            return
        index = int(key)
        if 0 <= index < len(self.found.nodes):
            self.dismiss(self.found.nodes[index].name)

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["DownstreamScreen", "downstream_summary"]
