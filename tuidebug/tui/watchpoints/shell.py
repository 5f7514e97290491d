"""The watchpoint list's shell, which the first frame shows while there is no watchpoint,
and the list's columns, which the two share.

The list is a DataTable: importing it and its module, building its styles and its first
columns cost as much as a tenth of the first frame (issue 28). The shell looks the same
(the frame, the title, the column titles and the empty sentence) in one text; pane.py
puts the list in its place just after that frame.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

PANE_ID = "watchpoints"
# (key, header); the hit count sits before the long columns so a narrow terminal keeps it
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "#"),
    ("on", "on"),
    ("abbr", "cond"),
    ("hits", "hits"),
    ("name", "condition"),
    ("params", "parameters"),
    ("targets", "watches"),
)
# the list's one row while there is no watchpoint: short enough for the condition column
# of an 80-column terminal (14 cells; "none yet: press w" was cut to "none yet: pres")
EMPTY_SENTENCE = "none: press w"


def empty_sentence(key: str) -> str:
    """The empty list's row, naming the key that adds a watchpoint now (a remapped one)."""
    return EMPTY_SENTENCE.removesuffix("w") + key


FIXED_WIDTHS = (3, 2, 4, 4)
# condition, parameters, watches: their widths at most, and the share of what is left
FLEX_MAX = (30, 44, 44)
FLEX_SHARE = (0.3, 0.38, 0.32)


def column_widths(total: int) -> tuple[int, ...]:
    """Column widths for a table `total` cells wide (borders, scrollbar and the two cells
    of padding per column taken off), the long columns sharing what remains."""
    padding = 2 * len(COLUMNS)
    room = max(30, total - 4 - padding - sum(FIXED_WIDTHS))
    flex = tuple(
        max(8, min(limit, int(room * share)))
        for limit, share in zip(FLEX_MAX, FLEX_SHARE, strict=True)
    )
    return (*FIXED_WIDTHS, *flex)


class WatchpointListShell(Static):
    """The watchpoint pane of the first frame while the session has no watchpoint: the
    pane's frame and title, the column titles and the empty sentence, drawn as one text.
    The list itself is a DataTable, whose styles and first columns cost as much as a
    tenth of the first frame (issue 28): the app puts it in this one's place just after
    that frame (pane.py), long before the dump is read."""

    # DataTable's colours for its background, column titles and unfocused cursor row
    COMPONENT_CLASSES: ClassVar[set[str]] = {"shell--header", "shell--cursor"}
    DEFAULT_CSS = """
    WatchpointListShell {
        background: $surface;
        color: $foreground;
        & > .shell--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .shell--header { background: ansi_bright_blue; color: ansi_default; }
        & > .shell--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    def __init__(self, title: str, new_key: str = "w") -> None:
        super().__init__("", id=PANE_ID, markup=False)
        self.border_title = title
        self.new_key = new_key  # the key the empty sentence names

    def render(self) -> Text:
        # the DataTable's layout: each column padded by one cell either side, the titles
        # on the header's colours, the empty sentence dim in the condition column of the
        # first row, which has the (unfocused) cursor
        widths = column_widths(self.size.width or 160)
        header = Text(style=self.get_component_rich_style("shell--header"))
        row = Text(style=self.get_component_rich_style("shell--cursor"))
        for (key, label), width in zip(COLUMNS, widths, strict=True):
            header.append(f" {label[:width]:<{width}} ")
            cell = empty_sentence(self.new_key) if key == "name" else ""
            row.append(" ")
            row.append(f"{cell[:width]:<{width}}", style="dim" if cell else "")
            row.append(" ")
        for line in (header, row):  # both reach across the whole pane, as the table's do
            line.pad_right(max(0, self.size.width - line.cell_len))
        return Text("\n").join([header, row])
