"""The tensor pane's frame: its CSS, its help, what it says before a tensor, and the
children a tensor needs, mounted around that message when the first tensor comes.

The first frame of the app shows the pane's empty state (the message) only: the table, the
heatmap, the boxes and the modules that draw them (numpy among them) load when a tensor
is shown, not before the first frame (issue 28). This module is what `view` needs before
then, so it imports nothing heavy at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Static

if TYPE_CHECKING:
    from tuidebug.tui.tensor.hit_note import HitNote
    from tuidebug.tui.tensor.statistics_panel import StatisticsPanel

# Below this many rows the statistics shrink to their summary line.
COMPACT_HEIGHT = 16
# Below this many rows (the pane of an 80×24 window) the numbers need every row: the
# statistics go, the slice bar shows only while it is being edited (the title names the
# slice and the mode) and the table drops its horizontal scrollbar (the status says col x/N).
SHORT_HEIGHT = 10
NARROW_WIDTH = 64  # below this many columns the bar's labels shorten
EMPTY_MESSAGE = (
    "No tensor selected.\nEnter on a node output (4) or on a hit (2) opens its tensor here."
)

# The pane and its empty state: all the first frame needs (`TensorView.DEFAULT_CSS`).
VIEW_CSS = """
TensorView {
    height: 1fr;
    width: 1fr;
}
TensorView #tv-message {
    height: 1fr; content-align: center middle; text-align: center; color: $text-muted;
}
TensorView #tv-message.-error { color: $error; }
"""

# What a tensor adds to the pane: registered with the slice bar (`SliceBar`), the first
# time a tensor is shown, not before the first frame (every rule of the app's stylesheet is
# looked at each time any widget is styled: issue 28).
BODY_CSS = """
/* The empty state before the first refresh: only the message is shown. */
TensorView > #tv-title, TensorView > #tv-bar, TensorView > #tv-error,
TensorView > #tv-table, TensorView > #tv-heatmap, TensorView > #tv-legend,
TensorView > #tv-status, TensorView > #tv-stats { display: none; }
TensorView #tv-title { height: 1; text-style: bold; }
TensorView #tv-bar { height: 1; }
TensorView #tv-bar Label { width: auto; padding: 0 1 0 0; color: $text-muted; }
TensorView #tv-slice { width: 1fr; min-width: 10; }
TensorView #tv-tolerance-label { padding: 0 1; }
TensorView #tv-tolerance { width: 8; }
TensorView #tv-mode { width: auto; padding: 0 0 0 1; color: $accent; }
TensorView.-short #tv-table { scrollbar-size-horizontal: 0; }
TensorView.-compact #tv-stats { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
TensorView #tv-error { height: auto; color: $error; }
TensorView #tv-goto, TensorView #tv-find { height: 1; display: none; }
TensorView #tv-legend { height: 1; }
TensorView #tv-status { height: 1; background: $panel; }
TensorView #tv-stats {
    height: auto; max-height: 4; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
}
"""


class SliceBar(Horizontal):
    """The slice bar (`#tv-bar`), which brings the rules of the pane's body (`BODY_CSS`):
    they are the app's, not scoped to the bar."""

    SCOPED_CSS = False
    DEFAULT_CSS = BODY_CSS


class BodyParts:
    """The two children of a view that hold what it is told before they are mounted (the
    hit a tensor was opened from, its statistics): made when first asked for, with their
    modules, not in the first frame (issue 28)."""

    @cached_property
    def hit_note(self) -> HitNote:
        from tuidebug.tui.tensor.hit_note import HitNote

        return HitNote(id="tv-hit")

    @cached_property
    def statistics(self) -> StatisticsPanel:
        from tuidebug.tui.tensor.statistics_panel import StatisticsPanel

        return StatisticsPanel(id="tv-stats")


def mount_body(
    view: Widget,
    hit_note: Widget,
    statistics: Widget,
    *,
    close_slice: Callable[[], None],
    close_tolerance: Callable[[], None],
    close_goto: Callable[[], None],
    close_find: Callable[[], None],
) -> None:
    """Mount in `view` what its empty state hides, around its message `#tv-message`: the
    `hit_note`, the title, the slice bar, the error line and the key boxes above it; the
    table, the heatmap, the legend, the status and `statistics` below. `mount` registers
    them at once: they can be queried on return."""
    from tuidebug.tui.tensor.canvas import TensorHeatmap, TensorTable
    from tuidebug.tui.tensor.inputs import bar_children, key_boxes

    # one `mount` registers every widget (the bar's rules with it) before styling any
    message, bar = view.query_one("#tv-message"), SliceBar(id="tv-bar")
    title, error = (Static("", id=f"tv-{name}", markup=False) for name in ("title", "error"))
    view.mount(hit_note, title, bar, error, *key_boxes(close_goto, close_find), before=message)
    narrow = bool(view.size.width) and view.size.width < NARROW_WIDTH
    bar.mount(*bar_children(close_slice, close_tolerance, narrow=narrow))
    surfaces = TensorTable(id="tv-table"), TensorHeatmap(id="tv-heatmap")
    legend, status = Static("", id="tv-legend"), Static("", id="tv-status", markup=False)
    view.mount(*surfaces, legend, status, statistics, after=message)


# the tensor view's help (help_screen.context_help); {binding id}: its key as bound now
VIEW_HELP = """\
The tensor pane shows one slice of the selected tensor (numpy syntax, e.g. [0, :, 1:10]).
Only the cells on screen are read, so tensors of any size open at once.

  arrows, j k  move the cursor (PageUp/PageDown, Home/End: rows; Shift+Home/End: columns)
  click  select a cell
  {tensor.edit_slice}  edit the slice (Enter applies and returns to the grid; Esc gives up)
  {tensor.heatmap}  table ⇄ heatmap (map) (▀ two rows per line; ? NaN, + +Inf, - −Inf)
  {tensor.zoom_in} / {tensor.zoom_out}  heatmap zoom in / out (out stops at the whole slice)
  {tensor.goto}  go to an element (index): "row, col" of the slice or a full tensor index
  {tensor.find}  find nan, inf, nonfinite, zero, > 1e3, [-1, 1]… and highlight matches
  {tensor.find_next} / {tensor.find_prev}  next / previous match (wraps around); Esc ends the search
  {tensor.compare}  current → diff → previous step (or the tensor compared with)
  {tensor.trip_prev} / {tensor.trip_next}  earlier / later loop trip: a control-flow loop dumps one file per trip
  {tensor.compare_rank}  compare with the same tensor on another rank (multi-rank dumps)
  {tensor.compare_tensor}  compare with another tensor of the same shape (node:slot[@iteration])
  {tensor.tolerance}  compare tolerance t ∈ [0, 1]: |diff| ≤ t × max|diff| shows as 0
  {tensor.copy}  copy the value under the cursor (OSC 52 clipboard)
  {tensor.save_slice} / {tensor.save_tensor}  save the slice / the whole tensor as .npy (asks where, offers a name)

Statistics are over the whole tensor (min/max/mean over finite values)."""


__all__ = [
    "BODY_CSS",
    "COMPACT_HEIGHT",
    "EMPTY_MESSAGE",
    "NARROW_WIDTH",
    "SHORT_HEIGHT",
    "VIEW_CSS",
    "VIEW_HELP",
    "SliceBar",
    "mount_body",
]
