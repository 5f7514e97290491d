"""The tensor slice viewer: slice box, number table / heatmap, statistics, compare, save.

The App embeds one `TensorView` and calls `show(...)`, `show_loading(...)` or
`show_error(...)`; everything else (slicing, modes, go-to, find, saving, copying) happens
here.

Tensors may be read-only memory maps of 10⁸+ elements. Nothing on the UI thread touches
more than a bounded sample plus the cells on screen; whole-tensor passes (statistics,
histogram, compare, block-extreme heatmap, find, saving) run in thread workers whose
results are dropped if the user has moved on to another tensor meanwhile.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker
from typing_extensions import Self

from tuidebug.core.tensor import (
    BFLOAT16,
    CompareError,
    Comparison,
    Histogram,
    Index,
    SliceError,
    TensorStatistics,
    compare,
    default_slice,
    dtype_label,
    format_slice,
    histogram,
    parse_slice,
    tensor_statistics,
)
from tuidebug.core.tensor_search import (
    MatchCount,
    SearchCancelled,
    SearchSpec,
    SearchSpecError,
    count_matches,
    describe_value,
    find_match,
    parse_search,
)
from tuidebug.tui.colormap import SPECIALS, gradient, scale_for, special_style
from tuidebug.tui.labels import shown, shown_lines
from tuidebug.tui.tensor_canvas import GridData, TensorCanvas, TensorHeatmap, TensorTable
from tuidebug.tui.tensor_format import (
    SliceGeometry,
    choose_format,
    download_name,
    finite_range,
    full_value,
    is_exact,
    parse_index_tuple,
    sample,
    short_name_of,
    short_number,
    sparkline,
    write_npy,
)

Mode = Literal["current", "previous", "diff"]
MODES: tuple[Mode, ...] = ("current", "diff", "previous")
HISTOGRAM_BINS = 40
# Smaller than core's default chunk: each numpy call on a chunk may hold the GIL for its
# whole duration, and the UI thread must get it back within a frame (16 ms).
STATISTICS_CHUNK = 1 << 20
# Block-extreme heatmaps read the whole slice; above this the heatmap stays strided
# (the legend says so) rather than streaming hundreds of MB for one picture.
REFINE_LIMIT = 32 << 20
# Find: chunks as small as the statistics' (GIL), and the match positions of one search
# are kept (8 bytes each) when there are at most this many, so ]/[ then need no scan.
SEARCH_CHUNK = STATISTICS_CHUNK
KEEP_MATCHES = 1 << 16
SEARCH_PROGRESS_AFTER = 0.3  # seconds before a running search shows its progress
DEFAULT_FIND = "nonfinite"
# (search spec, tensor generation, slice, mode, displayed array): what a result is about.
SearchKey = tuple[object, ...]


COMPACT_HEIGHT = 16  # below this many rows the statistics shrink to their summary line
EMPTY_MESSAGE = (
    "No tensor selected.\nEnter on a node output (4) or on a hit (2) opens its tensor here."
)


def _viewable(dtype: np.dtype) -> bool:
    return dtype.kind in "biuf" or dtype == BFLOAT16


def _nearest_position(positions: np.ndarray, start: int, *, backward: bool) -> int | None:
    """The first kept match at or after `start` (or the last at or before it), wrapping."""
    if positions.size == 0:
        return None
    if backward:
        at = int(np.searchsorted(positions, start, side="right")) - 1
        return int(positions[at]) if at >= 0 else int(positions[-1])
    at = int(np.searchsorted(positions, start, side="left"))
    return int(positions[at]) if at < positions.size else int(positions[0])


class _PaneBox(Input):
    """A one-line box of the tensor pane: Escape closes it through the view's `CLOSE`
    method (only while the box has focus, so the App keeps Esc)."""

    CLOSE: ClassVar[str] = ""

    def action_close(self) -> None:
        view = next((a for a in self.ancestors if isinstance(a, TensorView)), None)
        if view is not None:
            getattr(view, self.CLOSE)()


class _GotoInput(_PaneBox):
    """The go-to box."""

    CLOSE = "close_goto"
    BINDINGS: list[BindingType] = [  # noqa: RUF012
        Binding("escape", "close", "Close", show=False, id="tensor.goto_close"),
    ]


class _FindInput(_PaneBox):
    """The find box (Escape closes it, keeping the search)."""

    CLOSE = "close_find"
    BINDINGS: list[BindingType] = [  # noqa: RUF012
        Binding("escape", "close", "Close", show=False, id="tensor.find_close"),
    ]


class TensorView(Vertical):
    """Shows one tensor: a slice of it as numbers or as a heatmap, plus its statistics."""

    # Read by the App's help screen (help_screen.context_help) when focus is in here; a
    # {binding id} stands for that binding's key as it is bound now.
    CONTEXT_TITLE = "Tensor view"
    CONTEXT_HELP = """\
The tensor pane shows one slice of the selected tensor (numpy syntax, e.g. [0, :, 1:10]).
Only the cells on screen are read, so tensors of any size open at once.

  arrows, j k  move the cursor (PageUp/PageDown, Home/End: rows; Shift+Home/End: columns)
  click  select a cell
  {tensor.edit_slice}  edit the slice (Enter applies; a mistake keeps the last good slice)
  {tensor.heatmap}  table ⇄ heatmap (map) (▀ two rows per line; ? NaN, + +Inf, - −Inf)
  {tensor.zoom_in} / {tensor.zoom_out}  heatmap zoom in / out (out stops at the whole slice)
  {tensor.goto}  go to an element (index): "row, col" of the slice or a full tensor index
  {tensor.find}  find nan, inf, nonfinite, zero, > 1e3, [-1, 1]… and highlight matches
  {tensor.find_next} / {tensor.find_prev}  next / previous match (wraps around); Esc ends the search
  {tensor.compare}  current → diff → previous step (Parameters with a previous step)
  {tensor.tolerance}  compare tolerance t ∈ [0, 1]: |diff| ≤ t × max|diff| shows as 0
  {tensor.copy}  copy the value under the cursor (OSC 52 clipboard)
  {tensor.save_slice} / {tensor.save_tensor}  save the slice / the whole tensor as .npy in the current directory

Statistics are over the whole tensor (min/max/mean over finite values)."""

    DEFAULT_CSS = """
    TensorView {
        height: 1fr;
        width: 1fr;
    }
    /* The empty state before the first refresh: only the message is shown. */
    TensorView > #tv-title, TensorView > #tv-bar, TensorView > #tv-error,
    TensorView > #tv-table, TensorView > #tv-heatmap, TensorView > #tv-legend,
    TensorView > #tv-status, TensorView > #tv-stats { display: none; }
    TensorView #tv-title { height: 1; text-style: bold; }
    TensorView #tv-bar { height: 1; }
    TensorView #tv-bar Label { width: auto; padding: 0 1 0 0; color: $text-muted; }
    TensorView #tv-slice { width: 1fr; }
    TensorView #tv-tolerance-label { padding: 0 1; }
    TensorView #tv-tolerance { width: 10; }
    TensorView #tv-mode { width: auto; padding: 0 1; color: $accent; }
    TensorView #tv-error { height: auto; color: $error; }
    TensorView #tv-goto, TensorView #tv-find { height: 1; display: none; }
    TensorView #tv-message {
        height: 1fr; content-align: center middle; text-align: center; color: $text-muted;
    }
    TensorView #tv-message.-error { color: $error; }
    TensorView #tv-legend { height: 1; }
    TensorView #tv-status { height: 1; background: $panel; }
    TensorView #tv-stats { height: auto; max-height: 4; color: $text-muted; }
    """

    BINDINGS: list[BindingType] = [  # noqa: RUF012
        Binding("m", "toggle_heatmap", "Heatmap", id="tensor.heatmap"),
        Binding("d", "cycle_mode", "Compare", id="tensor.compare"),
        Binding("i", "goto", "Go to index", id="tensor.goto"),
        Binding("f", "find", "Find", id="tensor.find"),
        Binding("right_square_bracket", "find_next(1)", "Next match", id="tensor.find_next"),
        Binding("left_square_bracket", "find_next(-1)", "Prev match", id="tensor.find_prev"),
        # Only while a search is active (else SkipAction hands Esc to the App's "back").
        Binding("escape", "clear_find", "Clear find", show=False, id="tensor.find_clear"),
        Binding("s", "save(False)", "Save slice", id="tensor.save_slice"),
        Binding("S", "save(True)", "Save tensor", id="tensor.save_tensor"),
        Binding("y", "copy_value", "Copy value", id="tensor.copy"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", show=False, id="tensor.zoom_in"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False, id="tensor.zoom_out"),
        Binding("e", "edit_slice", "Slice", show=False, id="tensor.edit_slice"),
        Binding("t", "edit_tolerance", "Tolerance", show=False, id="tensor.tolerance"),
    ]

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, name: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes, name=name)
        self._state: Literal["empty", "loading", "error", "tensor"] = "empty"
        self._title = ""
        self._message = EMPTY_MESSAGE
        self._array: np.ndarray | None = None
        self._previous: np.ndarray | None = None
        self._node_type = ""
        self._short_name = ""
        self._slot = 0
        self._index: Index = ()
        self._geometry: SliceGeometry | None = None
        self._mode: Mode = "current"
        self._heatmap = False
        self._tolerance = 0.0
        self._comparison: Comparison | None = None
        self._compare_problem = ""  # why compare is unavailable ("" = available)
        self._stats: TensorStatistics | None = None
        self._histogram: Histogram | None = None
        self._stats_problem = ""
        self._cursor = (0, 0)  # slice coordinates; survives the diff being recomputed
        self._generation = 0  # bumps on every show(); stale worker results are dropped
        self._token = 0  # bumps on every new GridData
        self._children_ready = False
        # find (f, ], [): the spec typed last, the active search, and what is known of it.
        # Everything known is tagged with the SearchKey it was computed for, so a new
        # slice, mode or spec never shows a stale count or moves the cursor to a stale hit.
        self._find_text = DEFAULT_FIND
        self._search: SearchSpec | None = None
        self._search_count: tuple[SearchKey, MatchCount] | None = None
        self._search_hit: tuple[SearchKey, int, int | None] | None = None  # flat, rank
        self._search_note = ""  # "searching 'nan'… 40%" while a worker runs
        self._search_running: SearchKey | None = None  # what the worker searches

    # ----------------------------------------------------------------- composition
    def compose(self) -> ComposeResult:
        yield Static("", id="tv-title", markup=False)
        with Horizontal(id="tv-bar"):
            yield Label("slice", id="tv-slice-label")
            yield Input(placeholder="[0, :, :]", id="tv-slice", compact=True)
            yield Label("tolerance", id="tv-tolerance-label")
            yield Input("0", placeholder="0–1", id="tv-tolerance", compact=True)
            yield Static("", id="tv-mode", markup=False)
        yield Static("", id="tv-error", markup=False)
        yield _GotoInput(
            placeholder="go to element: row, col (or a full index)", id="tv-goto", compact=True
        )
        yield _FindInput(
            placeholder="find: nan, inf, +inf, -inf, nonfinite, zero, > 1e3, [-1, 1] …",
            id="tv-find",
            compact=True,
        )
        yield Static("", id="tv-message", markup=False)
        yield TensorTable(id="tv-table")
        yield TensorHeatmap(id="tv-heatmap")
        yield Static("", id="tv-legend")
        yield Static("", id="tv-status", markup=False)
        yield Static("", id="tv-stats", markup=False)

    def on_mount(self) -> None:
        # `is_mounted` only turns true after this handler. The CSS already draws the empty
        # state; the inline state follows once the nested children (the slice bar's) are
        # surely mounted, which a busy app does not guarantee at this point.
        self._children_ready = True
        self.call_after_refresh(self._refresh_all)

    def on_resize(self) -> None:
        if self._ready and self._state == "tensor":
            with contextlib.suppress(NoMatches):
                self._update_stats()  # full or compact statistics for the new height

    @property
    def _ready(self) -> bool:
        """The child widgets can be queried (from the Mount handler on)."""
        return self._children_ready or self.is_mounted

    @property
    def table(self) -> TensorTable:
        return self.query_one("#tv-table", TensorTable)

    @property
    def heatmap(self) -> TensorHeatmap:
        return self.query_one("#tv-heatmap", TensorHeatmap)

    @property
    def canvas(self) -> TensorCanvas:
        """The surface currently shown."""
        return self.heatmap if self._heatmap else self.table

    # ------------------------------------------------------------------ public API
    @property
    def state(self) -> Literal["empty", "loading", "error", "tensor"]:
        """What the pane shows: nothing, a loading note, an error sentence or a tensor."""
        return self._state

    @property
    def title(self) -> str:
        """The title of the tensor shown (or being loaded)."""
        return self._title

    def focus(self, scroll_visible: bool = True) -> Self:
        """Focus the table or heatmap (the App's pane key focuses the view itself)."""
        if self._ready and self._state == "tensor":
            self.canvas.focus(scroll_visible)
        return self

    def show(
        self,
        title: str,
        array: np.ndarray | None,
        previous: np.ndarray | None = None,
        *,
        note: str = "",
        node_type: str = "",
        short_name: str = "",
        slot: int = 0,
    ) -> None:
        """Display a tensor (None → an empty state saying `note`).

        `previous` enables compare mode (`d`). `node_type`, `short_name` and `slot` only
        name saved files (spec §6.5 download naming). The array is never copied whole.
        """
        self._generation += 1
        self._title = title
        self._node_type = node_type
        self._short_name = short_name or short_name_of(title)
        self._slot = slot
        self._array = None
        self._previous = None
        self._comparison = None
        self._stats = None
        self._histogram = None
        self._stats_problem = ""
        self._mode = "current"
        self._geometry = None
        self._end_search()
        if array is None:
            self._state = "empty"
            self._message = note or "No value to show."
            self._refresh_all()
            return
        if not _viewable(array.dtype):
            self.show_error(f"Tensors of type {dtype_label(array.dtype)} cannot be shown.")
            return
        self._state = "tensor"
        self._message = note
        self._array = array
        self._previous = previous
        self._compare_problem = self._check_previous(array, previous)
        self._index = default_slice(tuple(array.shape))
        self._set_error("")
        if self._ready:
            self.query_one("#tv-slice", Input).value = format_slice(self._index)
        self._apply(cursor=(0, 0))
        # After the first paint: the worker's first numpy calls would otherwise compete
        # with it for the GIL.
        self.call_after_refresh(self._start_statistics, self._generation)

    def show_loading(self, title: str) -> None:
        """Say that `title` is being fetched (the previous tensor is released)."""
        self._generation += 1
        self._end_search()
        self._title = title
        self._array = self._previous = None
        self._comparison = None
        self._state = "loading"
        self._message = f"Loading {title}…" if title else "Loading…"
        self._refresh_all()

    def show_error(self, sentence: str) -> None:
        """Replace the tensor by one error sentence (e.g. the tensor could not be read)."""
        self._generation += 1
        self._end_search()
        self._array = self._previous = None
        self._comparison = None
        self._state = "error"
        self._message = sentence
        self._refresh_all()

    # ---------------------------------------------------------------- data → grid
    @staticmethod
    def _check_previous(array: np.ndarray, previous: np.ndarray | None) -> str:
        if previous is None:
            return "There is no previous step to compare with."
        if previous.shape != array.shape:
            return (
                f"The previous step has shape {tuple(previous.shape)}, not "
                f"{tuple(array.shape)}, so it cannot be compared."
            )
        if previous.dtype != array.dtype:
            return (
                f"The previous step is {dtype_label(previous.dtype)}, not "
                f"{dtype_label(array.dtype)}, so it cannot be compared."
            )
        return ""

    def _displayed(self) -> np.ndarray | None:
        """The tensor the current mode shows (None while the diff is being computed)."""
        if self._mode == "previous":
            return self._previous
        if self._mode == "diff":
            return self._comparison.diff if self._comparison is not None else None
        return self._array

    def _displayed_stats(self) -> TensorStatistics | None:
        if self._comparison is not None:
            return {
                "current": self._comparison.current_stats,
                "previous": self._comparison.previous_stats,
                "diff": self._comparison.diff_stats,
            }[self._mode]
        return self._stats if self._mode == "current" else None

    def _apply(self, cursor: tuple[int, int] | None = None) -> None:
        """Rebuild the grid data for the current tensor, slice and mode."""
        array = self._displayed()
        if array is None or self._state != "tensor":
            self._geometry = None
            if self._ready:
                self.table.set_data(None)
                self.heatmap.set_data(None)
            self._refresh_all()
            return
        geometry = SliceGeometry.of(tuple(array.shape), self._index)
        view = geometry.view(array)
        low, high = finite_range(sample(view))
        format_low, format_high = low, high
        stats = self._displayed_stats()
        if not is_exact(view) and stats is not None and stats.min is not None:
            # A sample can miss the extremes; the whole tensor's range bounds the slice's.
            format_low = min(stats.min, low) if low is not None else stats.min
            format_high = max(stats.max, high) if high is not None else stats.max  # type: ignore[type-var]
        self._token += 1
        if self._search_running != self._search_key():
            self._cancel_search()  # it reads what is no longer shown
        data = GridData(
            view=view,
            geometry=geometry,
            fmt=choose_format(view.dtype, format_low, format_high),
            scale=scale_for(low, high),
            token=self._token,
        )
        if cursor is None:
            cursor = self._cursor
        self._cursor = cursor
        self._geometry = geometry
        if self._ready:
            self.table.set_data(data, cursor)
            self.heatmap.set_data(data, cursor)
            self._start_refine()
        self._refresh_all()

    # ------------------------------------------------------------------ rendering
    def _refresh_all(self) -> None:
        if not self._ready:
            return
        try:
            self._refresh_widgets()
        except NoMatches:
            self.call_after_refresh(self._refresh_all)  # mounted a moment later

    def _refresh_widgets(self) -> None:
        has_tensor = self._state == "tensor"
        self.query_one("#tv-title").display = self._state != "empty"
        message = self.query_one("#tv-message", Static)
        message.display = not has_tensor
        message.set_class(self._state == "error", "-error")
        # the title names a node of the graph, the message may quote a file or an error
        message.update(shown_lines(self._message))
        self.query_one("#tv-bar").display = has_tensor
        compare_ok = has_tensor and not self._compare_problem
        self.query_one("#tv-tolerance-label").display = compare_ok
        self.query_one("#tv-tolerance").display = compare_ok
        # While the diff is computed the surfaces stay mounted (blank) so they keep focus.
        self.table.display = has_tensor and not self._heatmap
        self.heatmap.display = has_tensor and self._heatmap
        self.query_one("#tv-legend").display = has_tensor and self._heatmap
        self.query_one("#tv-status").display = has_tensor
        self.query_one("#tv-stats").display = has_tensor
        for prompt in self.query("#tv-goto, #tv-find"):
            prompt.display = prompt.display and has_tensor
        if not has_tensor:
            self._set_error("")
        self._update_title()
        self._update_legend()
        self._update_status()
        self._update_stats()

    def _update_title(self) -> None:
        title = self.query_one("#tv-title", Static)
        if self._array is None:
            title.update(shown(self._title))
            return
        shape = "×".join(str(d) for d in self._array.shape) or "scalar"
        parts = [shown(self._title), f"{dtype_label(self._array.dtype)} [{shape}]"]
        if self._geometry is not None:
            parts.append(f"slice {self._geometry.text}")
        if self._message:
            parts.append(shown(self._message))
        title.update("  ".join(p for p in parts if p))
        mode = self.query_one("#tv-mode", Static)
        mode.update("" if self._compare_problem else f"[{self._mode}]")

    def _update_legend(self) -> None:
        legend = self.query_one("#tv-legend", Static)
        heatmap = self.heatmap
        data = heatmap.data
        if data is None or not self._heatmap:
            legend.update("")
            return
        scale = data.scale
        start, stop = scale.extent
        text = Text()
        text.append(f"{short_number(start)} ")
        for style in gradient(scale.palette_name, 16):
            text.append(" ", style)
        text.append(f" {short_number(stop)}")
        text.append("  centred on 0" if scale.diverging else "  sequential")
        for special in SPECIALS:
            text.append("  ")
            text.append(special.glyph, special_style(special))
            text.append(f" {special.label}")
        text.append(f"  zoom {heatmap.zoom.label} ({heatmap.method})  +/- zoom")
        legend.update(text)

    def _update_status(self) -> None:
        status = self.query_one("#tv-status", Static)
        geometry = self._geometry
        if self._array is not None and self._mode == "diff" and self._comparison is None:
            status.update("Computing the difference with the previous step…")
            return
        if geometry is None or self._array is None:
            status.update("")
            return
        if geometry.size == 0:
            status.update(f"The selection {geometry.text} is empty.")
            return
        canvas = self.canvas
        row, col = canvas.cursor_row, canvas.cursor_col
        index = geometry.tensor_index(row, col)
        where = f"row {row}/{geometry.rows} col {col}/{geometry.cols}"
        if self._comparison is not None:
            values = "  ".join(
                f"{name} {full_value(array[index])}"
                for name, array in (
                    ("previous", self._comparison.previous),
                    ("current", self._comparison.current),
                    ("diff", self._comparison.diff),
                )
            )
            status.update(f"{format_slice(index)}  {values}   {where}{self._find_suffix()}")
            return
        displayed = self._displayed()
        if displayed is None:
            status.update(f"{format_slice(index)} = –   {where}")
            return
        value = displayed[index]
        rank = self._rank_at(row * geometry.cols + col)
        if rank is not None:
            counted = self._known_count()
            of = (
                f"match {rank:,} of {counted.total:,}"
                if rank > 0 and counted is not None
                else "counting matches…"
            )
            text = f"{describe_value(value)} at {format_slice(index)}  ({of})   {where}"
            status.update(text + (f"   {self._search_note}" if self._search_note else ""))
            return
        status.update(f"{format_slice(index)} = {full_value(value)}   {where}{self._find_suffix()}")

    def _find_suffix(self) -> str:
        """What the status line adds about an active search away from its match."""
        if self._search_note:
            return f"   {self._search_note}"
        if self._search is None:
            return ""
        counted = self._known_count()
        total = f": {counted.total:,} matches" if counted is not None else ""
        return f"   find {self._search.text!r}{total}"

    def _rank_at(self, flat: int) -> int | None:
        """The landed match's rank (0 = not known yet) when the cursor is on it, else None."""
        hit = self._search_hit
        if hit is None or hit[0] != self._search_key() or hit[1] != flat:
            return None
        return hit[2] or 0

    def _update_stats(self) -> None:
        panel = self.query_one("#tv-stats", Static)
        if self._array is None:
            panel.update("")
            return
        if self._stats_problem:
            panel.update(f"statistics  {shown(self._stats_problem)}")
            return
        stats = self._displayed_stats()
        if stats is None:
            busy = self._mode != "current" and self._comparison is None
            panel.update("statistics  computing…" if not busy else "statistics  (after compare)")
            return
        lines = [f"{self._mode:>8}  {stats.summary_line()}"]
        if self.size.height and self.size.height < COMPACT_HEIGHT:
            # a short pane (100×30): the numbers need the rows more than the counts do
            panel.update(lines[0])
            return
        if not stats.is_bool:
            lines.append(
                f"{'counts':>8}  n={stats.count} zero={stats.zero_count} "
                f"<0={stats.negative_count} >0={stats.positive_count} NaN={stats.nan_count} "
                f"+Inf={stats.pos_inf_count} -Inf={stats.neg_inf_count}"
            )
        hist = self._histogram if self._mode == "current" else None
        if hist is not None and hist.counts.size:
            lo, hi = float(hist.edges[0]), float(hist.edges[-1])
            lines.append(
                f"{'hist':>8}  {short_number(lo)} {sparkline(hist.counts)} {short_number(hi)}"
                f"  ({hist.total} finite)"
            )
        panel.update("\n".join(lines))

    def _set_error(self, sentence: str) -> None:
        if not self._ready:
            return
        error = self.query_one("#tv-error", Static)
        error.update(shown_lines(sentence))
        error.display = bool(sentence)

    @property
    def error_text(self) -> str:
        """The inline error sentence shown under the slice box ("" when none)."""
        error = self.query_one("#tv-error", Static)
        return str(error.content) if error.display else ""

    @property
    def status_text(self) -> str:
        return str(self.query_one("#tv-status", Static).content)

    @property
    def slice_text(self) -> str:
        """The slice being shown (the last good one)."""
        return self._geometry.text if self._geometry is not None else format_slice(self._index)

    @property
    def mode(self) -> Mode:
        return self._mode

    # ------------------------------------------------------------------- workers
    def _post_back(self, generation: int, callback: Callable[[], None]) -> None:
        """Run `callback` on the UI thread if the tensor is still the one shown."""

        def guarded() -> None:
            if generation == self._generation:
                callback()

        # RuntimeError: the app is shutting down; nobody is waiting for the result.
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(guarded)

    def _start_statistics(self, generation: int) -> None:
        array = self._array
        if array is None or not self._ready or generation != self._generation:
            return
        self.run_worker(
            partial(self._statistics_work, self._generation, array),
            thread=True,
            group="tensor-statistics",
            exclusive=True,
            exit_on_error=False,
        )
        self._update_stats()

    def _statistics_work(self, generation: int, array: np.ndarray) -> None:
        try:
            stats = tensor_statistics(array, chunk=STATISTICS_CHUNK)
            hist = histogram(array, HISTOGRAM_BINS, stats=stats, chunk=STATISTICS_CHUNK)
        except (ValueError, OSError, MemoryError) as exc:
            problem = f"could not be computed: {exc}"
            self._post_back(generation, partial(self._statistics_failed, problem))
            return
        self._post_back(generation, partial(self._statistics_ready, stats, hist))

    def _statistics_ready(self, stats: TensorStatistics, hist: Histogram) -> None:
        self._stats = stats
        self._histogram = hist
        if self._mode == "current" and self._geometry is not None:
            view = self._geometry.view(self._array) if self._array is not None else None
            if view is not None and not is_exact(view):
                self._apply()  # widen the column format to the exact whole-tensor range
                return
        self._update_stats()

    def _statistics_failed(self, problem: str) -> None:
        self._stats_problem = problem
        self._update_stats()

    def _start_compare(self) -> None:
        if self._array is None or self._previous is None or self._compare_problem:
            return
        self._comparison = None
        self.run_worker(
            partial(
                self._compare_work, self._generation, self._array, self._previous, self._tolerance
            ),
            thread=True,
            group="tensor-compare",
            exclusive=True,
            exit_on_error=False,
        )

    def _compare_work(
        self, generation: int, current: np.ndarray, previous: np.ndarray, tolerance: float
    ) -> None:
        try:
            result = compare(current, previous, tolerance, chunk=STATISTICS_CHUNK)
        except (CompareError, ValueError, OSError, MemoryError) as exc:
            self._post_back(generation, partial(self._compare_failed, str(exc)))
            return
        self._post_back(generation, partial(self._compare_ready, result, tolerance))

    def _compare_ready(self, result: Comparison, tolerance: float) -> None:
        if tolerance != self._tolerance:
            return  # a newer tolerance is being computed
        self._comparison = result
        self._apply()

    def _compare_failed(self, sentence: str) -> None:
        self._compare_problem = sentence
        self._mode = "current"
        self._set_error(sentence)
        self._apply()

    def _start_refine(self) -> None:
        """Compute a block-extreme heatmap image for the current zoom in a worker."""
        heatmap = self.heatmap
        data = heatmap.data
        if not self._heatmap or data is None:
            return
        if heatmap.fitted and heatmap.zoom != heatmap.fit:
            heatmap.set_zoom(heatmap.fit, fitted=True)  # posts ZoomChanged → back here
            return
        if heatmap.factor <= 1 or data.view.size > REFINE_LIMIT:
            return
        self.run_worker(
            partial(self._refine_work, self._generation, data, heatmap.factor),
            thread=True,
            group="tensor-heatmap",
            exclusive=True,
            exit_on_error=False,
        )

    def _refine_work(self, generation: int, data: GridData, factor: int) -> None:
        from tuidebug.tui.tensor_format import block_extreme

        worker = get_current_worker()
        try:
            image = block_extreme(
                data.view, factor, lambda: worker.is_cancelled, band_elements=STATISTICS_CHUNK
            )
        except (ValueError, OSError, MemoryError):
            return  # the strided picture stays; it is already on screen
        if image is not None:
            self._post_back(generation, partial(self._refine_ready, image, factor, data.token))

    def _refine_ready(self, image: np.ndarray, factor: int, token: int) -> None:
        self.heatmap.set_image(image, factor, token)
        self._update_legend()

    @on(TensorHeatmap.ZoomChanged)
    def _zoom_changed(self, event: TensorHeatmap.ZoomChanged) -> None:
        event.stop()
        self._update_legend()
        self._start_refine()

    @on(TensorCanvas.CursorMoved)
    def _cursor_moved(self, event: TensorCanvas.CursorMoved) -> None:
        event.stop()
        other = self.table if event.canvas is self.heatmap else self.heatmap
        other.set_cursor(event.row, event.col, notify=False)
        self._cursor = (event.row, event.col)
        self._update_status()

    # ------------------------------------------------------------------- inputs
    @on(Input.Submitted, "#tv-slice")
    def _slice_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.apply_slice(event.value)

    def apply_slice(self, text: str) -> bool:
        """Show the slice `text`; on a mistake keep the last good slice and say why."""
        if self._array is None:
            return False
        try:
            index = parse_slice(text, tuple(self._array.shape))
        except SliceError as exc:
            self._set_error(str(exc))
            return False
        self._set_error("")
        self._index = index
        self.query_one("#tv-slice", Input).value = format_slice(index)
        self._apply(cursor=(0, 0))
        self.canvas.focus()
        return True

    @on(Input.Submitted, "#tv-tolerance")
    def _tolerance_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.apply_tolerance(event.value)

    def apply_tolerance(self, text: str) -> bool:
        """Set the compare tolerance t ∈ [0, 1] (spec §6.5) and recompute the diff."""
        try:
            value = float(text.strip() or "0")
        except ValueError:
            value = math.nan
        if not 0.0 <= value <= 1.0:
            self._set_error(
                f"The tolerance must be a number between 0 and 1, not {text.strip()!r}."
            )
            return False
        self._set_error("")
        self._tolerance = value
        if self._mode == "diff" or self._comparison is not None:
            self._start_compare()
            if self._mode == "diff":
                self._apply()
        return True

    @on(Input.Submitted, "#tv-goto")
    def _goto_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.goto(event.value):
            self.close_goto()

    def goto(self, text: str) -> bool:
        """Move the cursor to `row, col` of the slice, or to a full tensor index that the
        slice contains. Negative numbers count from the end."""
        geometry = self._geometry
        if geometry is None:
            return False
        numbers = parse_index_tuple(text)
        sliced = sum(isinstance(item, slice) for item in geometry.index)
        if numbers is None:
            self._set_error(f"{text.strip()!r} is not an index like 3, 17.")
            return False
        if len(numbers) == len(geometry.shape) and len(numbers) != sliced:
            cell = geometry.locate(numbers)
            if cell is None:
                self._set_error(
                    f"Element {format_slice(numbers)} is not in the slice {geometry.text}."
                )
                return False
        elif len(numbers) == sliced:
            padded = [*numbers, 0, 0][:2]
            limits = (geometry.rows, geometry.cols)
            for axis, (value, limit) in enumerate(zip(padded, limits, strict=True)):
                if not -limit <= value < limit:
                    what = "row" if axis == 0 else "column"
                    self._set_error(
                        f"The {what} {value} is out of range; the slice has {limit} {what}s."
                    )
                    return False
            cell = (padded[0] % geometry.rows, padded[1] % geometry.cols)
        else:
            self._set_error(
                f"Give {sliced} numbers for the slice or {len(geometry.shape)} for the tensor, "
                f"not {len(numbers)}."
            )
            return False
        self._set_error("")
        self.canvas.set_cursor(*cell)
        return True

    def close_goto(self) -> None:
        self.query_one("#tv-goto").display = False
        self.canvas.focus()

    # --------------------------------------------------------------------- find
    @property
    def search(self) -> SearchSpec | None:
        """The active search (None when nothing is being looked for)."""
        return self._search

    def _search_key(self) -> SearchKey:
        """What search results are about: the spec and the tensor, slice and mode shown.
        A statistics refresh rebuilds the grid with the same values: results survive it."""
        return (self._search, self._generation, self._index, self._mode, id(self._displayed()))

    def _known_count(self) -> MatchCount | None:
        """The match count of the active search over what is shown now, if computed."""
        if self._search_count is not None and self._search_count[0] == self._search_key():
            return self._search_count[1]
        return None

    def _cursor_flat(self) -> int:
        """The cursor as a flat C-order index of the slice."""
        assert self._geometry is not None
        canvas = self.canvas
        return canvas.cursor_row * self._geometry.cols + canvas.cursor_col

    def action_find(self) -> None:
        if not self._require_tensor() or self._geometry is None:
            return
        box = self.query_one("#tv-find", Input)
        box.display = True
        box.value = self._find_text  # selected on focus: typing replaces it
        box.focus()

    def close_find(self) -> None:
        self.query_one("#tv-find").display = False
        self.canvas.focus()

    @on(Input.Submitted, "#tv-find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.find(event.value):
            self.close_find()

    def find(self, text: str) -> bool:
        """Look for `text` (a search spec) in the slice from the cursor on and highlight
        the matches; an empty text ends the search. A bad spec is a notice and False."""
        if not self._require_tensor() or self._geometry is None:
            return False
        if not text.strip():
            self.clear_find()
            return True
        try:
            spec = parse_search(text)
            displayed = self._displayed()
            if displayed is not None:
                spec.matcher(displayed.dtype)  # a dtype that cannot be searched says so now
        except SearchSpecError as exc:
            self.notify(str(exc), severity="error", timeout=6)
            return False
        self._find_text = spec.text
        self._start_search(spec, self._cursor_flat(), backward=False)
        return True

    def action_find_next(self, direction: int) -> None:
        """The next (1) or previous (-1) match from the cursor, wrapping around; without
        an active search, the last spec (`nonfinite` at first) is looked for."""
        if not self._require_tensor() or self._geometry is None:
            return
        spec = self._search or parse_search(self._find_text)
        self._start_search(spec, self._cursor_flat() + direction, backward=direction < 0)

    def action_clear_find(self) -> None:
        if self._search is None:
            raise SkipAction  # Esc then means the App's "back"
        self.clear_find()

    def clear_find(self) -> None:
        """End the search: no highlight, no match note."""
        self._end_search()
        if self._ready:
            self._update_status()

    def _end_search(self) -> None:
        self._cancel_search()
        self._search = None
        self._search_count = None
        self._search_hit = None
        self._search_note = ""
        if self._ready:
            with contextlib.suppress(NoMatches):
                self.table.set_highlight(None)

    def _cancel_search(self) -> None:
        self._search_running = None
        if self._ready:
            with contextlib.suppress(NoMatches, RuntimeError):
                self.workers.cancel_group(self, "tensor-search")

    def _start_search(self, spec: SearchSpec, start: int, *, backward: bool) -> None:
        data = self.table.data
        if data is None or data.geometry.size == 0:
            return
        if spec != self._search:
            self._search = spec
            self._search_count = None
            self._search_hit = None
            self.table.set_highlight(spec)
        key = self._search_key()
        start %= data.geometry.size
        counted = self._known_count()
        self._cancel_search()
        if counted is not None and counted.positions is not None:
            # Every match is known: jump without reading the tensor again.
            flat = _nearest_position(counted.positions, start, backward=backward)
            if flat is None:
                self._search_missed(key, spec)
            else:
                self._land(key, flat, counted.rank(flat))
            return
        self._search_note = ""
        self._search_running = key
        self.run_worker(
            partial(
                self._search_work, self._generation, key, data.view, spec, start, backward, counted
            ),
            thread=True,
            group="tensor-search",
            exclusive=True,
            exit_on_error=False,
        )

    def _search_work(
        self,
        generation: int,
        key: SearchKey,
        view: np.ndarray,
        spec: SearchSpec,
        start: int,
        backward: bool,
        counted: MatchCount | None,
    ) -> None:
        """Find the match, post it, then count (once per search) to rank it."""
        worker = get_current_worker()
        began = time.monotonic()
        shown = [0.0]

        def cancelled() -> bool:
            return worker.is_cancelled

        def progress(what: str, done: int, total: int) -> None:
            now = time.monotonic()
            if now - began < SEARCH_PROGRESS_AFTER or now - shown[0] < 0.1:
                return
            shown[0] = now
            note = f"{what} {spec.text!r}… {done * 100 // max(total, 1)}%"
            self._post_back(generation, partial(self._search_progressed, key, note))

        try:
            matcher = spec.matcher(view.dtype)
            flat = find_match(
                view,
                matcher,
                start,
                backward=backward,
                progress=partial(progress, "searching"),
                chunk=SEARCH_CHUNK,
                cancelled=cancelled,
            )
            if flat is None:
                self._post_back(generation, partial(self._search_missed, key, spec))
                return
            rank = counted.rank(flat) if counted is not None else None
            self._post_back(generation, partial(self._search_landed, key, flat, rank))
            if counted is None:
                counted = count_matches(
                    view,
                    matcher,
                    keep=KEEP_MATCHES,
                    progress=partial(progress, "counting"),
                    chunk=SEARCH_CHUNK,
                    cancelled=cancelled,
                )
                self._post_back(generation, partial(self._search_counted, key, counted))
                rank = counted.rank(flat)
            if rank is None:  # too many matches to keep: count the ones before it
                before = count_matches(
                    view,
                    matcher,
                    stop=flat,
                    progress=partial(progress, "ranking"),
                    chunk=SEARCH_CHUNK,
                    cancelled=cancelled,
                )
                rank = before.total + 1
            self._post_back(generation, partial(self._search_ranked, key, flat, rank))
        except SearchCancelled:
            return
        except (ValueError, OSError, MemoryError) as exc:
            self._post_back(generation, partial(self._search_failed, key, str(exc)))

    def _search_current(self, key: SearchKey) -> bool:
        return self._search is not None and key == self._search_key() and self._ready

    def _search_progressed(self, key: SearchKey, note: str) -> None:
        if self._search_current(key):
            self._search_note = note
            self._update_status()

    def _search_landed(self, key: SearchKey, flat: int, rank: int | None) -> None:
        if self._search_current(key):
            self._search_note = ""
            self._land(key, flat, rank)

    def _land(self, key: SearchKey, flat: int, rank: int | None) -> None:
        """Put the cursor on match `flat` (scrolled into view) and say which it is."""
        geometry = self._geometry
        if geometry is None or geometry.size == 0:
            return
        row, col = divmod(flat, geometry.cols)
        self._search_hit = (key, flat, rank)
        self._cursor = (row, col)
        self.canvas.set_cursor(row, col)
        self._update_status()

    def _search_counted(self, key: SearchKey, counted: MatchCount) -> None:
        if self._search_current(key):
            self._search_count = (key, counted)

    def _search_ranked(self, key: SearchKey, flat: int, rank: int) -> None:
        if not self._search_current(key):
            return
        self._search_note = ""
        hit = self._search_hit
        if hit is not None and hit[0] == key and hit[1] == flat:
            self._search_hit = (key, flat, rank)
        self._update_status()

    def _search_missed(self, key: SearchKey, spec: SearchSpec) -> None:
        if not self._search_current(key):
            return
        self.clear_find()  # nothing to highlight or step through
        self.notify(f"No element of this slice matches {spec.text!r}.", timeout=5)

    def _search_failed(self, key: SearchKey, sentence: str) -> None:
        if self._search_current(key):
            self._search_note = ""
            self._update_status()
            self.notify(f"The search failed: {sentence}", severity="error", timeout=6)

    # ------------------------------------------------------------------ actions
    def _require_tensor(self) -> bool:
        return self._state == "tensor" and self._array is not None

    def action_toggle_heatmap(self) -> None:
        if not self._require_tensor():
            return
        had_focus = self.canvas.has_focus
        self._heatmap = not self._heatmap
        self._refresh_all()
        if had_focus:
            self.canvas.focus()
        self.canvas.set_cursor(
            self.table.cursor_row if self._heatmap else self.heatmap.cursor_row,
            self.table.cursor_col if self._heatmap else self.heatmap.cursor_col,
            notify=False,
        )
        # The heatmap only knows its size (hence its fitted zoom) after the next layout.
        self.call_after_refresh(self._start_refine)

    def action_cycle_mode(self) -> None:
        """current → diff → previous → current (only with a comparable previous step)."""
        if not self._require_tensor():
            return
        if self._compare_problem:
            self._set_error(self._compare_problem)
            return
        self._mode = MODES[(MODES.index(self._mode) + 1) % len(MODES)]
        if self._mode != "current" and self._comparison is None:
            self._start_compare()
        self._apply()

    def set_mode(self, mode: Mode) -> None:
        """Show the current tensor, the previous step's or their difference."""
        if mode != "current" and self._compare_problem:
            self._set_error(self._compare_problem)
            return
        self._mode = mode
        if mode != "current" and self._comparison is None:
            self._start_compare()
        self._apply()

    def action_goto(self) -> None:
        if not self._require_tensor() or self._geometry is None:
            return
        goto = self.query_one("#tv-goto", Input)
        goto.display = True
        goto.value = ""
        goto.focus()

    def action_edit_slice(self) -> None:
        if self._require_tensor():
            self.query_one("#tv-slice", Input).focus()

    def action_edit_tolerance(self) -> None:
        if self._require_tensor() and not self._compare_problem:
            self.query_one("#tv-tolerance", Input).focus()

    def action_zoom(self, direction: int) -> None:
        if not self._heatmap or self.heatmap.data is None:
            return
        if direction > 0:
            self.heatmap.zoom_in()
        else:
            self.heatmap.zoom_out()

    def action_copy_value(self) -> None:
        geometry = self._geometry
        displayed = self._displayed()
        if geometry is None or displayed is None or geometry.size == 0:
            return
        canvas = self.canvas
        index = geometry.tensor_index(canvas.cursor_row, canvas.cursor_col)
        text = full_value(displayed[index])
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied {format_slice(index)} = {text}", timeout=3)

    def action_save(self, whole: bool) -> None:
        """Save the slice (or the whole tensor) of the current mode to `.npy` in the cwd."""
        geometry = self._geometry
        displayed = self._displayed()
        if geometry is None or displayed is None:
            return
        target = displayed if whole else geometry.view(displayed)
        what = "tensor" if whole else f"slice {geometry.text}"
        if self._mode != "current":
            what = f"{self._mode} {what}"
        self.run_worker(
            partial(self._save_work, target, what),
            thread=True,
            group="tensor-save",
            exit_on_error=False,
        )

    def _save_work(self, target: np.ndarray, what: str) -> None:
        node_type = self._node_type or "Tensor"
        when = None
        for attempt in range(100):
            name = download_name(node_type, self._short_name, self._slot, when)
            path = Path.cwd() / name
            try:
                # "x": never overwrite an earlier download made in the same centisecond.
                with open(path, "xb") as handle:
                    write_npy(handle, target)
            except FileExistsError:
                when = (int(name.split(".")[4]) + attempt + 1) / 100
                continue
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                self._notify_from_thread(f"Could not save {name}: {reason}.", "error")
                return
            note = " (bfloat16 stored as float32)" if target.dtype == BFLOAT16 else ""
            self._notify_from_thread(f"Saved {what} to {path}{note}", "information")
            return
        self._notify_from_thread("Could not find a free file name to save to.", "error")

    def _notify_from_thread(self, text: str, severity: Literal["information", "error"]) -> None:
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(self.notify, text, severity=severity, timeout=6)
