"""Where a NaN/Inf came from: the origins `core.origins` found, and the chain to the start.

One row per origin (the node where the non-finite value appeared: its inputs were finite),
certain ones first; under the table, the chain of nodes from the highlighted origin down to
the node the trace started from. Enter answers the origin so the app can go to it in the
tree and open its tensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from tuidebug.core.graph import Graph
from tuidebug.core.origins import Origin, OriginTrace
from tuidebug.tui.kit.fill_on_mount import fill_when_mounted
from tuidebug.tui.kit.labels import plain, shown

Counts = tuple[int, int, int]  # NaN, +Inf, −Inf
MAX_CHAIN = 40  # nodes of a chain shown; a deeper one is elided in the middle


def trace_notes(trace: OriginTrace) -> list[str]:
    """One line each for what makes the answer incomplete."""
    notes: list[str] = []
    if trace.truncated:
        notes.append(
            f"Stopped after reading {trace.tensors_read} tensors: more origins may lie upstream."
        )
    if trace.unknown:
        count = len(trace.unknown)
        notes.append(
            f"{count} node{'s' if count != 1 else ''} read inputs without a value "
            "(marked ?): the NaN/Inf may come from there."
        )
    if not trace.origins and not trace.truncated:
        notes.append("No origin: every non-finite node reads a non-finite input (a loop).")
    return notes


def parameter_note(trace: OriginTrace) -> str | None:
    """Which value of each parameter the trace judged: dumps write a parameter after the
    step's optimizer update, so `L`, WI/WCL and `pt` may show a weight NaN that every
    kernel of the step read finite; the trace reads the value before the update."""
    read = trace.parameters_read
    if not read:
        return None
    before = sum(1 for b in read.values() if b)
    after = len(read) - before
    parts = []
    if before:
        parts.append(
            f"{before} parameter{'s were' if before != 1 else ' was'} judged by {'their' if before != 1 else 'its'} "
            "value before this step's optimizer update (the previous step's dump); L, WI/WCL "
            "and pt show the value after it, which may be NaN."
        )
    if after:
        parts.append(
            f"{after} parameter{'s' if after != 1 else ''} had no earlier value and "
            f"{'were' if after != 1 else 'was'} judged by this step's dump (after the update)."
        )
    return " ".join(parts)


class OriginScreen(ModalScreen[tuple[str, int] | None]):
    """The trace's result; answers (origin node, slot to open) or None."""

    DEFAULT_CSS = """
    OriginScreen { align: center middle; }
    OriginScreen > Vertical {
        width: 110; max-width: 100%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    OriginScreen #origin-title { text-style: bold; padding: 1 0 0 0; }
    OriginScreen #origin-summary { color: $text-muted; }
    OriginScreen #origin-params { color: $text-muted; height: auto; }
    OriginScreen #origin-notes { color: $warning; height: auto; }
    OriginScreen DataTable { height: auto; max-height: 14; margin-top: 1; }
    OriginScreen #origin-chain { height: auto; max-height: 14; margin-top: 1; }
    OriginScreen #origin-hint { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="origins.close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(
        self,
        trace: OriginTrace,
        graph: Graph,
        where: str,
        counts: Mapping[str, Counts] | None = None,
    ) -> None:
        """`where` names the step (`step 4`); `counts`: origin → NaN/±Inf counts of its
        first non-finite slot, when they were cheap enough to get."""
        super().__init__()
        self._trace = trace
        self._graph = graph
        self._where = where
        self._counts = dict(counts or {})

    def compose(self) -> ComposeResult:
        start = self._short(self._trace.start)
        with Vertical():
            yield Label(
                plain(f"Where the NaN/Inf of {start} came from ({self._where})"), id="origin-title"
            )
            count = len(self._trace.origins)
            walked, read = len(self._trace.reached_from), self._trace.tensors_read
            yield Static(
                f"{count} origin{'s' if count != 1 else ''} · "
                f"{walked} non-finite node{'s' if walked != 1 else ''} walked · "
                f"{read} tensor{'s' if read != 1 else ''} read",
                id="origin-summary",
                markup=False,
            )
            params = parameter_note(self._trace)
            if params is not None:
                yield Static(params, id="origin-params", markup=False)
            notes = trace_notes(self._trace)
            if notes:  # a complete trace needs no line saying so
                yield Static(
                    "\n".join(shown(note) for note in notes), id="origin-notes", markup=False
                )
            yield DataTable(id="origin-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="origin-chain")
            yield Static(
                "Enter goes to the origin and opens its tensor · Esc closes", id="origin-hint"
            )

    def on_mount(self) -> None:
        fill_when_mounted(self, self._fill)

    def _short(self, name: str) -> str:
        node = self._graph.get(name)
        return node.short_name if node is not None else name.rsplit("/", 1)[-1]

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "origin", "type", "output", "NaN", "+Inf", "-Inf", "scope")
        for i, origin in enumerate(self._trace.origins):
            node = self._graph.get(origin.node)
            counts = self._counts.get(origin.node)
            nan, pos, neg = (str(c) for c in counts) if counts else ("", "", "")
            table.add_row(
                Text("" if origin.certain else "?", style="yellow"),
                plain(self._short(origin.node), style="bold cyan"),
                plain(self._type_of(origin.node)),
                ", ".join(f":{s}" for s in origin.slots) or "—",
                Text(nan, style="red"),
                Text(pos, style="red"),
                Text(neg, style="red"),
                plain(node.scope if node is not None else "", style="dim"),
                key=str(i),
            )
        if self._trace.origins:
            self._show_chain(self._trace.origins[0])
        table.focus()

    def _type_of(self, name: str) -> str:
        """The origin's op type; a parameter says which of its values was judged."""
        node = self._graph.get(name)
        if node is None:
            return ""
        before = self._trace.parameters_read.get(name)
        if before is None:
            return node.op_type
        return f"{node.op_type} (before update)" if before else f"{node.op_type} (after update)"

    def _show_chain(self, origin: Origin) -> None:
        chain = self._trace.chain(origin.node)
        if len(chain) > MAX_CHAIN:
            hidden = len(chain) - MAX_CHAIN
            chain = [*chain[: MAX_CHAIN // 2], f"… {hidden} more …", *chain[-MAX_CHAIN // 2 :]]
        text = Text("chain: ", style="bold")
        for i, name in enumerate(chain):
            if i:
                text.append(" → ", style="dim")
            style = "bold red" if i == 0 else ("bold" if i == len(chain) - 1 else "")
            text.append(shown(self._short(name)), style=style)
        self.query_one("#origin-chain", Static).update(text)

    def _origin_at(self, key: str | None) -> Origin | None:
        if key is None:
            return None
        index = int(key)
        origins = self._trace.origins
        return origins[index] if 0 <= index < len(origins) else None

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        origin = self._origin_at(event.row_key.value)
        if origin is not None:
            self._show_chain(origin)

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        origin = self._origin_at(event.row_key.value)
        if origin is not None:
            self.dismiss((origin.node, origin.slots[0] if origin.slots else 0))

    def action_close(self) -> None:
        self.dismiss(None)
