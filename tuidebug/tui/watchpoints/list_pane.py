"""The watchpoint list (bottom pane).

Rows show the condition (abbreviation and name), its thresholds, what it watches and how
many hits it has. Keys act on the highlighted row: Enter/e edit, d delete, space
enable/disable; the app does the work (these only post `WatchpointAction`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from tuidebug.core.graph import Category
from tuidebug.core.watchpoints import Watchpoint
from tuidebug.tui.kit.labels import number, shown
from tuidebug.tui.messages import WatchpointAction
from tuidebug.tui.watchpoints.shell import COLUMNS, FIXED_WIDTHS, column_widths, empty_sentence


def watch_params(watchpoint: Watchpoint) -> dict[str, float]:
    """The user-set parameters of a watchpoint as name → value (hidden ones left out)."""
    visible = {p.name for p in watchpoint.condition.visible_params}
    return {name: value for name, value in watchpoint.params.items() if name in visible}


def params_text(watchpoint: Watchpoint) -> str:
    values = watch_params(watchpoint)
    return ", ".join(f"{k}={number(v)}" for k, v in values.items()) or "—"


def targets_text(watchpoint: Watchpoint) -> str:
    targets = watchpoint.targets
    if not targets:
        category = watchpoint.condition.target
        return "every node" if category is Category.TENSOR else f"all {category.value}s"
    # targets name nodes and scopes of the graph (or a peer's): escaped for the screen
    names = ", ".join(shown(t.rsplit("/", 1)[-1] or t) for t in targets[:3])
    if len(targets) > 3:
        names += f" … +{len(targets) - 3}"
    return names


# where watchpoints belong to different graphs (online, one per graph), a graph column
# before "watches": which graph each belongs to
GRAPH_COLUMN = ("graph", "graph")
GRAPH_WIDTH_MAX = 24


def graph_text(watchpoint: Watchpoint) -> str:
    """The graph column's cell: the watchpoint's graph, or "every graph" (offline)."""
    return shown(watchpoint.graph_name) if watchpoint.graph_name else "every graph"


def shows_graphs(watchpoints: Sequence[Watchpoint]) -> bool:
    """Whether the list needs the graph column: its watchpoints do not all watch the same
    graph (a one-graph training's watchpoints all name it: no column)."""
    return len({wp.graph_name or "" for wp in watchpoints}) > 1


class WatchpointList(DataTable[Any]):
    """Bottom pane: the session's watchpoints."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="watchpoints.edit"),
        Binding("d,delete", "delete", "Delete", id="watchpoints.delete"),
        Binding("space", "toggle_enabled", "On/off", id="watchpoints.toggle"),
        Binding("home", "first_row", "First", show=False, id="watchpoints.first"),
        Binding("end", "last_row", "Last", show=False, id="watchpoints.last"),
    ]

    CONTEXT_TITLE = "watchpoint list"
    CONTEXT_HELP = (
        "Every watchpoint of the session. Enter or e edits the highlighted one, d deletes it\n"
        "(asks first), space enables or disables it; w creates a new one, r rechecks them all.\n"
        "The hits column counts its hits in the current hit list (2 shows them).\n"
        "Home / End go to the first / last one; ← → scroll long parameters into view."
    )

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._watchpoints: list[Watchpoint] = []
        self._hit_counts: dict[int, int] = {}
        self._widths: tuple[int, ...] = ()
        self._new_key = "w"  # named by the empty list's row

    def on_mount(self) -> None:
        # not laid out yet: the width it will have (the screen's, less the pane's border),
        # so that its first size does not build the columns again (issue 28)
        self._add_columns(self._fitting_widths(self.size.width or max(30, self.app.size.width - 2)))
        self._render_rows()

    def on_resize(self) -> None:
        self._relayout()

    def _fitting_widths(self, width: int) -> tuple[int, ...]:
        """The pane's share of each column, widened to the longest text of the long
        columns: a row is never cut short, the table scrolls sideways (←/→) instead."""
        widths = list(column_widths(width))
        # the condition's name may stay cut (its abbreviation is beside it); parameters
        # and targets are what the user set, shown whole
        texts = [(params_text(wp), targets_text(wp)) for wp in self._watchpoints]
        first = len(FIXED_WIDTHS) + 1
        for i, column in enumerate(zip(*texts, strict=True), start=first):
            widths[i] = max(widths[i], max(cell_len(text) for text in column))
        if shows_graphs(self._watchpoints):
            graph = max(cell_len(graph_text(wp)) for wp in self._watchpoints)
            widths.insert(-1, min(GRAPH_WIDTH_MAX, max(5, graph)))
        return tuple(widths)

    def _columns(self) -> tuple[tuple[str, str], ...]:
        if shows_graphs(self._watchpoints):
            return (*COLUMNS[:-1], GRAPH_COLUMN, COLUMNS[-1])
        return COLUMNS

    def _relayout(self) -> bool:
        """New column widths where the size or the texts need them (True: rows redrawn)."""
        if not self.size.width:  # not laid out yet: its first size comes with `on_resize`
            return False
        widths = self._fitting_widths(self.size.width)
        if widths == self._widths:
            return False
        self.clear(columns=True)
        self._add_columns(widths)
        self._render_rows()
        return True

    def _add_columns(self, widths: tuple[int, ...]) -> None:
        self._widths = widths
        for (key, label), size in zip(self._columns(), self._widths, strict=True):
            self.add_column(label, key=key, width=size)

    def action_first_row(self) -> None:
        """Home: the first watchpoint (DataTable's Home scrolls to the first column)."""
        self.action_scroll_top()

    def action_last_row(self) -> None:
        """End: the last watchpoint."""
        self.action_scroll_bottom()

    @property
    def watchpoints(self) -> list[Watchpoint]:
        return list(self._watchpoints)

    def set_watchpoints(self, watchpoints: Iterable[Watchpoint]) -> None:
        self._watchpoints = list(watchpoints)
        if self.is_mounted and self.columns and not self._relayout():
            self._render_rows()

    def set_new_key(self, key: str) -> None:
        """Name `key` (the one that adds a watchpoint now) in the empty list's row."""
        self._new_key = key
        if self.is_mounted and self.columns and not self._watchpoints:
            self._render_rows()

    def set_hit_counts(self, counts: Mapping[int, int]) -> None:
        self._hit_counts = dict(counts)
        if self.is_mounted and self.columns:
            self._render_rows()

    def _render_rows(self) -> None:
        keep = self.selected_id
        self.clear()
        if not self._watchpoints:
            self.add_row("", "", "", "", Text(empty_sentence(self._new_key), "dim"), "", "")
            return
        graphs = len(self._widths) > len(COLUMNS)  # the graph column is there
        for wp in self._watchpoints:
            abbr, name = wp.condition.abbr, wp.condition.name
            enabled = wp.enabled
            hits = self._hit_counts.get(wp.id, 0)
            style = "" if enabled else "dim"
            cells = [
                Text(str(wp.id), style=style),
                Text("●" if enabled else "○", style="green" if enabled else "dim"),
                Text(abbr, style="bold cyan" if enabled else "dim"),
                Text(str(hits) if hits else "", style="bold red"),
                Text(name, style=style),
                Text(params_text(wp), style=style),
            ]
            if graphs:
                cells.append(Text(graph_text(wp), style=style or "dim cyan"))
            self.add_row(*cells, Text(targets_text(wp), style=style), key=str(wp.id))
        if keep is not None:
            with contextlib.suppress(Exception):
                self.move_cursor(row=self.get_row_index(str(keep)))

    @property
    def selected_id(self) -> int | None:
        if not self._watchpoints or self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:
            return None
        return int(key) if key and key.isdigit() else None

    def _post(self, action: str) -> None:
        self.post_message(WatchpointAction(action, self.selected_id))

    def action_edit(self) -> None:
        self._post("edit")

    def action_delete(self) -> None:
        self._post("delete")

    def action_toggle_enabled(self) -> None:
        self._post("toggle")

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self._watchpoints:
            self._post("edit")
        else:
            self.post_message(WatchpointAction("new"))
