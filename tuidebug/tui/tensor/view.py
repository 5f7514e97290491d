"""The tensor slice viewer: slice box, number table / heatmap, statistics, compare, save.

The App embeds one `TensorView` and calls `show(...)`, `show_loading(...)` or
`show_error(...)`; everything else (slicing, modes, go-to, find, saving, copying) happens
here.

Tensors may be read-only memory maps of 10⁸+ elements. Nothing on the UI thread touches
more than a bounded sample plus the cells on screen; whole-tensor passes (statistics,
histogram, compare, block-extreme heatmap, find, saving) run in thread workers
(`tensor_jobs`, `tensor_find.scan`) that answer with messages, dropped if the user has
moved on to another tensor meanwhile.

The view composes, routes keys and messages, and draws; what it holds lives beside it:
what it compares with and which mode it shows in `tensor_modes` (the prompts for another
rank or tensor are the app's, `tensor_compare`), the grid made of a slice in
`tensor_grid`, the hit above the tensor in `tensor_hit_note`, the statistics under it in
`tensor_statistics_panel`, find's state and wording in `tensor_find` and its box,
highlight and worker in `tensor_finder`, the input boxes in `tensor_inputs`, the lines of
text in `tensor_text`, the CSS, help and the children a tensor needs in `layout`.

The app's first frame shows the view empty, before any dump is read: the modules that draw
and compute (numpy's users: canvas, grid, jobs, find, format, text) are imported by the
methods that need them, when a first tensor comes, and the workers' messages are handled
by name (`_on_statistics_done`…), so none of them loads with this module (issue 28).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, cast

from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.widgets import Input, Label, Static
from typing_extensions import Self

from tuidebug.core.tensor import (
    Index,
    SliceError,
    default_slice,
    dtype_label,
    format_slice,
    parse_slice,
)
from tuidebug.tui.kit.labels import shown, shown_lines
from tuidebug.tui.kit.own_class import set_own_class
from tuidebug.tui.tensor.files import file_stem as make_file_stem
from tuidebug.tui.tensor.files import save_file_name, short_name_of
from tuidebug.tui.tensor.layout import (
    COMPACT_HEIGHT,
    EMPTY_MESSAGE,
    NARROW_WIDTH,
    SHORT_HEIGHT,
    VIEW_CSS,
    VIEW_HELP,
    BodyParts,
    mount_body,
)
from tuidebug.tui.tensor.modes import CompareState, compare_problem, parse_tolerance

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.tensor import Comparison
    from tuidebug.core.tensor_search import SearchSpec
    from tuidebug.tui.tensor.canvas import TensorCanvas, TensorHeatmap, TensorTable
    from tuidebug.tui.tensor.find import SearchKey
    from tuidebug.tui.tensor.find_box import TensorFinder
    from tuidebug.tui.tensor.format import SliceGeometry
    from tuidebug.tui.tensor.jobs import (
        CompareDone,
        HeatmapRefined,
        ReferenceRead,
        Saved,
        SearchReported,
        StatisticsDone,
    )
    from tuidebug.tui.tensor.modes import Mode

# Block-extreme heatmaps read the whole slice; above this the heatmap stays strided
# (the legend says so) rather than streaming hundreds of MB for one picture.
REFINE_LIMIT = 32 << 20


class TensorView(Vertical):
    """Shows one tensor: a slice of it as numbers or as a heatmap, plus its statistics."""

    # Read by the App's help screen (help_screen.context_help) when focus is in here; a
    # {binding id} stands for that binding's key as it is bound now.
    CONTEXT_TITLE = "Tensor view"
    CONTEXT_HELP = VIEW_HELP

    DEFAULT_CSS = VIEW_CSS  # layout.py

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "toggle_heatmap", "Heatmap", id="tensor.heatmap"),
        Binding("d", "cycle_mode", "Compare", id="tensor.compare"),
        Binding("left_parenthesis", "trip(-1)", "Earlier trip", show=False, id="tensor.trip_prev"),
        Binding("right_parenthesis", "trip(1)", "Later trip", show=False, id="tensor.trip_next"),
        Binding("R", "compare_with('rank')", "Compare rank", id="tensor.compare_rank"),
        Binding("D", "compare_with('tensor')", "Compare with…", id="tensor.compare_tensor"),
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
        self._file_stem = ""  # the saved files' default name starts with it
        self._index: Index = ()
        self._geometry: SliceGeometry | None = None
        self._heatmap = False
        # the reference (previous step, another rank or tensor), the mode, the tolerance
        self._compare = CompareState()
        # made here, not in compose: show() may come before the children are mounted
        self._parts = BodyParts()  # the hit note and the whole tensor's statistics
        self._cursor = (0, 0)  # slice coordinates; survives the diff being recomputed
        self._generation = 0  # bumps on every show(); stale worker results are dropped
        self._token = 0  # bumps on every new GridData
        self._children_ready = False
        self._built = False  # the children a tensor needs are mounted (`_build`)
        self._fitted: Size | None = None  # the size `_fit_layout` last fitted the body to
        self._made_finder: TensorFinder | None = None  # `_finder`, once made

    # ----------------------------------------------------------------- composition
    def compose(self) -> ComposeResult:
        yield Static("", id="tv-message", markup=False)  # the empty state; the rest: `_build`

    def _build(self) -> None:
        """Mount what the empty state hides, around the message (not in the first frame,
        nor their modules: issue 28). They can be queried on return."""
        if self._built or not self.is_attached:
            return
        self._built = True
        mount_body(
            self,
            self._parts.hit_note,
            self._parts.statistics,
            close_slice=self._close_slice,
            close_tolerance=self._close_tolerance,
            close_goto=self.close_goto,
            close_find=self.close_find,
        )

    @property
    def _finder(self) -> TensorFinder:
        """find (f, ], [): the box, the highlight, the search worker (find_box.py), made on
        first use (its modules load numpy, which the first frame does without)."""
        if self._made_finder is None:
            from tuidebug.tui.tensor.find_box import FindHooks, TensorFinder

            self._made_finder = TensorFinder(
                self,
                FindHooks(
                    ready=lambda: self._ready,
                    generation=lambda: self._generation,
                    key=self._search_key,
                    cursor=self._find_start,
                    check=self._check_search,
                    land=self._land,
                    update_status=self._update_status,
                    run_job=self._run_job,
                    post_result=self._post_result,
                ),
            )
        return self._made_finder

    def _end_find(self) -> None:
        """Another tensor (or none) is shown: the search ends (nothing to end before the
        first `f`)."""
        if self._made_finder is not None:
            self._made_finder.end()

    def on_mount(self) -> None:
        # `is_mounted` only turns true after this handler. The CSS already draws the empty
        # state; the inline state follows once the nested children (the slice bar's) are
        # surely mounted, which a busy app does not guarantee at this point.
        self._children_ready = True
        self.call_after_refresh(self._refresh_all)
        # Textual's layout for a scroll resizes with no Resize (`z` at 80×24 stayed compact)
        self.screen.screen_layout_refresh_signal.subscribe(self, lambda _: self.on_resize())

    def on_resize(self) -> None:
        if (self._children_ready or self.is_mounted) and self.size != self._fitted:
            with contextlib.suppress(NoMatches):
                self._fit_layout()

    def _fit_layout(self) -> None:
        """Fit the pane's rows to its size: see SHORT_HEIGHT, COMPACT_HEIGHT, NARROW_WIDTH."""
        height, width = self.size.height, self.size.width
        if not self._built:  # the children `_build` mounts take the classes' rules then
            set_own_class(self, bool(height) and height < SHORT_HEIGHT, "-short")
            set_own_class(self, bool(height) and height < COMPACT_HEIGHT, "-compact")
            return
        # each restyles the pane and the one child it styles (DEFAULT_CSS), not all ~20: the
        # pane resizes on each `:` and Esc of the command line (kit/own_class.py)
        table, stats = self.query_one("#tv-table"), self.query_one("#tv-stats")
        set_own_class(self, bool(height) and height < SHORT_HEIGHT, "-short", also=[table])
        set_own_class(self, bool(height) and height < COMPACT_HEIGHT, "-compact", also=[stats])
        narrow = bool(width) and width < NARROW_WIDTH
        self.query_one("#tv-tolerance-label", Label).update("tol" if narrow else "tolerance")
        self._fitted = self.size
        if self._state == "tensor":
            self._refresh_all()

    @property
    def _short(self) -> bool:
        return self.has_class("-short")

    def _bar_editing(self) -> bool:
        """A box of the slice bar has focus (a short pane shows the bar only then)."""
        focused = self.screen.focused if self.is_attached else None
        return focused is not None and focused.id in ("tv-slice", "tv-tolerance")

    def on_descendant_focus(self) -> None:
        if self._short and self._ready:
            self._refresh_all()

    def on_descendant_blur(self) -> None:
        if self._short and self._ready:
            self.call_after_refresh(self._refresh_all)  # after focus has landed elsewhere

    @property
    def _ready(self) -> bool:
        """The child widgets can be queried (from the Mount handler on, once built)."""
        return self._built and (self._children_ready or self.is_mounted)

    @property
    def table(self) -> TensorTable:
        return cast("TensorTable", self.query_one("#tv-table"))

    @property
    def heatmap(self) -> TensorHeatmap:
        return cast("TensorHeatmap", self.query_one("#tv-heatmap"))

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
        short_name: str = "",
        slot: int = 0,
        file_stem: str = "",
        context: str = "",
    ) -> None:
        """Display a tensor (None → an empty state saying `note`).

        `previous` enables compare mode (`d`). `file_stem` starts the default name of saved
        files (`tensor_files.file_stem`; else made of `short_name` and `slot`). `context` is
        shown above the tensor: the hit it was opened from. The array is never copied whole.
        """
        self._generation += 1
        self._title = title
        self._file_stem = file_stem or make_file_stem(short_name or short_name_of(title), slot)
        self._parts.hit_note.note = context
        self._array = None
        self._compare.clear()
        self._parts.statistics.reset()
        self._geometry = None
        self._end_find()
        if array is None:
            self._state = "empty"
            self._message = note or "No value to show."
            self._refresh_all()
            return
        from tuidebug.tui.tensor.grid import viewable

        if not viewable(array.dtype):
            self.show_error(f"Tensors of type {dtype_label(array.dtype)} cannot be shown.")
            return
        self._state = "tensor"
        self._build()
        self._message = note
        self._array = array
        self._compare.open(array, previous)
        if self._compare.keep_tolerance_for((short_name or short_name_of(title), slot)):
            self._tolerance_reset()
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
        self._end_find()
        self._title = title
        self._array = None
        self._compare.release()
        self._parts.hit_note.note = ""
        self._state = "loading"
        self._message = f"Loading {title}…" if title else "Loading…"
        self._refresh_all()

    def show_error(self, sentence: str) -> None:
        """Replace the tensor by one error sentence (e.g. the tensor could not be read)."""
        self._generation += 1
        self._end_find()
        self._array = None
        self._compare.release()
        self._parts.hit_note.note = ""
        self._state = "error"
        self._message = sentence
        self._refresh_all()

    # ---------------------------------------------------------------- data → grid
    def _displayed(self) -> np.ndarray | None:
        """The tensor the current mode shows (None while the diff is being computed)."""
        return self._compare.displayed(self._array)

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
        self._token += 1
        finder = self._made_finder
        if finder is not None and finder.state.running != self._search_key():
            finder.cancel()  # it reads what is no longer shown
        from tuidebug.tui.tensor.grid import grid_data

        stats = self._compare.displayed_stats(self._parts.statistics.stats)
        data = grid_data(array, self._index, stats, self._token)
        if cursor is None:
            cursor = self._cursor
        self._cursor = cursor
        self._geometry = data.geometry
        if self._ready:
            self.table.set_data(data, cursor)
            self.heatmap.set_data(data, cursor)
            self._start_refine()
        self._refresh_all()

    # ------------------------------------------------------------------ rendering
    def _refresh_all(self) -> None:
        if not (self._children_ready or self.is_mounted):
            return
        try:
            self._refresh_widgets()
        except NoMatches:
            self.call_after_refresh(self._refresh_all)  # mounted a moment later

    def _refresh_widgets(self) -> None:
        has_tensor = self._state == "tensor"
        if self._state != "empty":
            self._build()
        message = self.query_one("#tv-message", Static)
        message.display = not has_tensor
        message.set_class(self._state == "error", "-error")
        # the title names a node of the graph, the message may quote a file or an error
        message.update(shown_lines(self._message))
        if not self._built:  # the empty state: the message is all there is
            return
        self._parts.hit_note.show_note(visible=has_tensor, short=self._short)
        self.query_one("#tv-title").display = self._state != "empty"
        self.query_one("#tv-bar").display = has_tensor and (not self._short or self._bar_editing())
        compare_ok = has_tensor and not self._compare.problem
        self.query_one("#tv-tolerance-label").display = compare_ok
        self.query_one("#tv-tolerance").display = compare_ok
        # While the diff is computed the surfaces stay mounted (blank) so they keep focus.
        self.table.display = has_tensor and not self._heatmap
        self.heatmap.display = has_tensor and self._heatmap
        self.query_one("#tv-legend").display = has_tensor and self._heatmap
        self.query_one("#tv-status").display = has_tensor
        self.query_one("#tv-stats").display = has_tensor and not self._short
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
        from tuidebug.tui.tensor.text import title_line

        mode_text = self._compare.bracketed
        # a short pane hides the bar: its mode goes into the title
        title.update(
            title_line(
                self._title,
                self._array,
                self._geometry,
                self._message,
                mode=mode_text if self._short else "",
                versus=self._compare.versus,
            )
        )
        self.query_one("#tv-mode", Static).update(mode_text)

    def _update_legend(self) -> None:
        shown_legend = self.query_one("#tv-legend", Static)
        heatmap = self.heatmap
        data = heatmap.data
        if data is None or not self._heatmap:
            shown_legend.update("")
        else:
            from tuidebug.tui.tensor.text import legend

            shown_legend.update(legend(data.scale, heatmap.zoom.label, heatmap.method))

    def _update_status(self) -> None:
        status = self.query_one("#tv-status", Static)
        geometry = self._geometry
        compare = self._compare
        if self._array is not None and compare.mode == "diff" and compare.comparison is None:
            status.update(f"Computing the difference with {compare.reference}…")
        elif geometry is None or self._array is None:
            status.update("")
        else:
            from tuidebug.tui.tensor.text import status_line

            canvas = self.canvas
            status.update(
                status_line(
                    geometry,
                    (canvas.cursor_row, canvas.cursor_col),
                    comparison=compare.comparison,
                    reference=compare.reference_name,
                    displayed=self._displayed(),
                    find=self._finder.state,
                    key=self._search_key(),
                )
            )

    def _update_stats(self) -> None:
        self._parts.statistics.show_for(
            self._compare, has_array=self._array is not None, compact=self.has_class("-compact")
        )

    def _set_error(self, sentence: str) -> None:
        if not self._ready:
            return
        error = self.query_one("#tv-error", Static)
        error.update(shown_lines(sentence))
        error.display = bool(sentence)

    @property
    def error_text(self) -> str:
        """The inline error sentence shown under the slice box ("" when none)."""
        if not self._ready:
            return ""
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
        return self._compare.mode

    @property
    def tolerance(self) -> float:
        """The compare tolerance t ∈ [0, 1] (`t` edits it)."""
        return self._compare.tolerance

    @property
    def comparison(self) -> Comparison | None:
        """The comparison with the reference, once computed (None before, or without one)."""
        return self._compare.comparison

    @property
    def statistics_settled(self) -> bool:
        """The whole tensor's statistics are in, or the panel says why they are not."""
        return self._parts.statistics.settled

    # ------------------------------------------------------------------- workers
    def _run_job(
        self, job: Callable[[], Message | None], group: str, exclusive: bool = True
    ) -> None:
        """Run `job` in a thread worker of `group` and post its result (if any) here."""
        self.run_worker(
            lambda: self._post_result(job()),
            thread=True,
            group=group,
            exclusive=exclusive,
            exit_on_error=False,
        )

    def _post_result(self, message: Message | None) -> None:
        """Post a worker's result (if any) to this view, from the worker's thread."""
        if message is not None:
            # RuntimeError: the app is shutting down; nobody is waiting for the result.
            with contextlib.suppress(RuntimeError):
                self.post_message(message)

    def _start_statistics(self, generation: int) -> None:
        array = self._array
        if array is None or not self._ready or generation != self._generation:
            return
        from tuidebug.tui.tensor.jobs import statistics_job

        self._run_job(partial(statistics_job, generation, array), "tensor-statistics")
        self._update_stats()

    # The workers' messages are handled by name (`_on_<message>`), not `@on`: no class of
    # jobs.py or canvas.py, nor numpy, is needed before the first tensor.
    def _on_statistics_done(self, message: StatisticsDone) -> None:
        if message.generation != self._generation:
            return
        if not self._parts.statistics.take(message):
            self._update_stats()
            return
        if self._compare.mode == "current" and self._geometry is not None:
            view = self._geometry.view(self._array) if self._array is not None else None
            from tuidebug.tui.tensor.format import is_exact

            if view is not None and not is_exact(view):
                # widen the column format to the exact whole-tensor range, and let the
                # heatmap's rarest non-finite kind follow the whole tensor's counts
                self._apply()
                return
        self._update_stats()

    def _start_compare(self) -> None:
        compare = self._compare
        if self._array is None or compare.previous is None or compare.problem:
            return
        compare.comparison = None
        from tuidebug.tui.tensor.jobs import compare_job

        job = partial(
            compare_job, self._generation, self._array, compare.previous, compare.tolerance
        )
        self._run_job(job, "tensor-compare")

    def _on_compare_done(self, message: CompareDone) -> None:
        if message.generation != self._generation:
            return
        if message.result is None:
            self._compare.failed(message.problem)
            self._set_error(message.problem)
            self._apply()
        elif message.tolerance == self._compare.tolerance:  # else a newer one is computed
            self._compare.comparison = message.result
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
        from tuidebug.tui.tensor.jobs import refine_job, worker_cancelled

        job = partial(refine_job, self._generation, data, heatmap.factor, worker_cancelled)
        self._run_job(job, "tensor-heatmap")

    def _on_heatmap_refined(self, message: HeatmapRefined) -> None:
        if message.generation == self._generation:
            self.heatmap.set_image(message.image, message.factor, message.token)
            self._update_legend()

    def _on_tensor_heatmap_zoom_changed(self, event: TensorHeatmap.ZoomChanged) -> None:
        event.stop()
        self._update_legend()
        self._start_refine()

    def _on_tensor_canvas_cursor_moved(self, event: TensorCanvas.CursorMoved) -> None:
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
            value = parse_tolerance(text)
        except ValueError as exc:
            self._set_error(str(exc))
            return False
        self._set_error("")
        compare = self._compare
        compare.tolerance = value
        if compare.mode == "diff" or compare.comparison is not None:
            self._start_compare()
            if compare.mode == "diff":
                self._apply()
        self.canvas.focus()  # the keys (d, j, q…) are the grid's again
        return True

    def _close_slice(self) -> None:
        """Esc in the slice box: forget the edit, back to the grid."""
        self.query_one("#tv-slice", Input).value = self.slice_text
        self._set_error("")
        self.canvas.focus()

    def _tolerance_reset(self) -> None:
        """Another tensor: the tolerance set for the last one is back to 0, said once."""
        if self._ready:
            self.query_one("#tv-tolerance", Input).value = "0"
        self.app.notify("The compare tolerance is back to 0 for this tensor.", timeout=3)

    def _close_tolerance(self) -> None:
        self.query_one("#tv-tolerance", Input).value = f"{self._compare.tolerance:g}"
        self._set_error("")
        self.canvas.focus()

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
        from tuidebug.tui.tensor.text import GotoError, goto_cell

        try:
            cell = goto_cell(geometry, text)
        except GotoError as exc:
            self._set_error(str(exc))
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
        return self._finder.state.spec if self._made_finder is not None else None

    def _search_key(self) -> SearchKey:
        """What search results are about: the spec and the tensor, slice and mode shown.
        A statistics refresh rebuilds the grid with the same values: results survive it."""
        spec = self._finder.state.spec
        mode = self._compare.mode
        return (spec, self._generation, self._index, mode, id(self._displayed()))

    def _find_start(self) -> int | None:
        """The cursor as a flat C-order index of the slice (None: no tensor to search)."""
        if not self._require_tensor() or self._geometry is None:
            return None
        canvas = self.canvas
        return canvas.cursor_row * self._geometry.cols + canvas.cursor_col

    def _check_search(self, spec: SearchSpec) -> None:
        displayed = self._displayed()
        if displayed is not None:
            spec.matcher(displayed.dtype)  # a dtype that cannot be searched says so now

    def _land(self, key: SearchKey, flat: int, rank: int | None) -> None:
        """Put the cursor on match `flat` (scrolled into view) and say which it is."""
        geometry = self._geometry
        if geometry is None or geometry.size == 0:
            return
        row, col = divmod(flat, geometry.cols)
        self._finder.state.land(key, flat, rank)
        self._cursor = (row, col)
        self.canvas.set_cursor(row, col)
        self._update_status()

    def action_find(self) -> None:
        self._finder.open_box()

    def close_find(self) -> None:
        self.query_one("#tv-find").display = False
        self.canvas.focus()

    @on(Input.Submitted, "#tv-find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        # a spec that cannot be read is a toast too, and the keys go back to the grid as
        # after any search (a box keeping them typed every key into it); `f` reopens the
        # box with the spec, to be corrected
        self.find(event.value)
        self.close_find()

    def find(self, text: str) -> bool:
        """Look for `text` (a search spec) in the slice from the cursor on and highlight
        the matches; an empty text ends the search. A bad spec is a notice and False."""
        return self._finder.find(text)

    def action_find_next(self, direction: int) -> None:
        self._finder.find_next(direction)

    def action_clear_find(self) -> None:
        if self.search is None:
            raise SkipAction  # Esc then means the App's "back"
        self._finder.clear()

    def clear_find(self) -> None:
        """End the search: no highlight, no match note."""
        self._finder.clear()

    def _on_search_reported(self, message: SearchReported) -> None:
        self._finder.reported(message)

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
        if self._require_tensor():
            self.set_mode(self._compare.next_mode())

    def set_mode(self, mode: Mode) -> None:
        """Show the current tensor, the previous step's or their difference."""
        compare = self._compare
        if mode != "current" and compare.problem:
            self._set_error(compare.problem)
            return
        compare.mode = mode
        if compare.needs_comparison:
            self._start_compare()
        self._apply()

    # ------------------------------------------------- compare with another tensor
    class CompareRequested(Message):
        """R / D: the App finds what to compare with (another rank, a tensor it asks for)
        and answers with `compare_with`."""

        def __init__(self, view: TensorView, kind: Literal["rank", "tensor"]) -> None:
            super().__init__()
            self.view = view
            self.kind = kind

    class TripRequested(Message):
        """( / ): the App opens the same tensor's earlier or later loop trip."""

        def __init__(self, delta: int) -> None:
            super().__init__()
            self.delta = delta

    def action_trip(self, delta: int) -> None:
        if self._require_tensor():
            self.post_message(self.TripRequested(delta))

    def action_compare_with(self, kind: Literal["rank", "tensor"]) -> None:
        if self._require_tensor():
            self.post_message(self.CompareRequested(self, kind))

    def compare_with(self, label: str, read: Callable[[], np.ndarray | None]) -> None:
        """Compare the tensor shown with what `read()` returns (called in a worker; None:
        no value), named `label` ("rank 1", "conv1:0 @ step 2"): its diff is shown."""
        if not self._require_tensor():
            return
        self._set_error("")
        from tuidebug.tui.tensor.jobs import reference_job

        self._run_job(partial(reference_job, self._generation, label, read), "tensor-reference")

    def _on_reference_read(self, message: ReferenceRead) -> None:
        array = self._array
        if message.generation != self._generation or array is None:
            return
        problem = message.problem or compare_problem(array, message.array, message.label)
        if problem:
            self._set_error(problem)
            self.notify(problem, severity="warning", timeout=6)
            return
        self._compare.adopt(message.label, message.array)
        self.set_mode("diff")
        self.notify(f"Comparing with {message.label}: d cycles diff → it → current.", timeout=4)

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
        if self._require_tensor() and not self._compare.problem:
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
        from tuidebug.tui.tensor.format import full_value

        text = full_value(displayed[index])
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied {format_slice(index)} = {text}", timeout=3)

    def action_save(self, whole: bool) -> None:
        """Ask where to save the slice (or the whole tensor) of the current mode as .npy,
        offering a name that says what it holds (`tensor_files`)."""
        geometry = self._geometry
        displayed = self._displayed()
        if geometry is None or displayed is None:
            return
        target = displayed if whole else geometry.view(displayed)
        what = "the whole tensor" if whole else f"the slice {geometry.text}"
        shown_mode = "" if self._compare.mode == "current" else self._compare.label
        if shown_mode:
            what = f"{what} ({shown_mode})"
        default = save_file_name(self._file_stem, None if whole else geometry.index, shown_mode)

        def save(path: str | None) -> None:
            if path:
                from tuidebug.tui.tensor.jobs import save_job

                job = partial(save_job, target, what.removeprefix("the "), Path(path))
                self._run_job(job, "tensor-save", exclusive=False)

        from tuidebug.tui.kit.prompts import save_tensor_prompt  # on first use (issue 28)

        self.app.push_screen(save_tensor_prompt(what, default), save)

    def _on_saved(self, message: Saved) -> None:
        self.notify(message.sentence, severity=message.severity, timeout=6)
