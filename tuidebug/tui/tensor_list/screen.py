"""Every tensor of the step in execution order (tfdbg's `lt`), with a health glyph each
and, beside it, min and max of the finite values and the NaN and Inf counts.

`TensorListScreen` (key `L`) lists `DebugSession.tensor_entries()`: the step's output
tensors, known without reading a value. A `ScrollView` with `render_line` draws only the
rows on screen (toolong's model), so 10⁵ tensors scroll as fast as 10. Filters (a name
regex, the category, one op type, only the unhealthy ones) and the sort are
tensor_list_rows.py's; this module is the widget side.

The health glyph (NaN, ±Inf, all zero, normal) and the numbers come from one chunked
read of each tensor (`core.tensor_health.tensor_summary`; a tensor whose values were not
dumped, from its dumped statistics: `summary_from_statistics`) in a thread worker in the
exclusive group `tensor-health`: it reads the rows on screen first, then the shown ones,
then the rest (offline; a live training is asked only for the rows the user sees, as each
read is a request to it), posting results in batches. Scrolling or filtering restarts it
with the new rows first; closing the screen or a new step cancels it. Results already
known are kept while the screen lives, so coming back costs nothing.

The app keeps one screen (installed, so its state survives closing it) and calls
`step_changed` when the step moved; Enter answers `NodeChosen(open_tensor=True)`, which
the app handles as the tree's Enter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Footer, Input, Static
from textual.worker import Worker, get_current_worker

from tuidebug.core.graph import Category
from tuidebug.core.session import DebugSession, SessionError
from tuidebug.core.tensor import TensorRef
from tuidebug.core.tensor_health import (
    Health,
    HealthCancelled,
    TensorSummary,
    summary_from_statistics,
    tensor_summary,
)
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.core.text import printable, step_text
from tuidebug.tui.kit.labels import shown
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView
from tuidebug.tui.messages import NodeChosen
from tuidebug.tui.tensor_list.rows import (
    CATEGORY_CYCLE,
    SORT_CYCLE,
    Columns,
    ListQuery,
    columns_for,
    format_numbers,
    format_row,
    header_cells,
    health_glyph,
    select,
)

HEALTH_BATCH_SECONDS = 0.1  # the worker posts what it found at most this often
HEALTH_BATCH_SIZE = 512  # …or after this many tensors
GIL_SLICE_SECONDS = 0.002  # the health pass yields the GIL at least this often
RESTART_DELAY = 0.15  # seconds of scroll quiet before the health pass follows the view
FILTER_DELAY = 0.12  # seconds of typing quiet before a big list is filtered again
BIG_LIST = 20_000  # entries from which filtering waits for a pause in the typing


class TensorRows(StyledScrollView, can_focus=True):
    """The rows: a sticky column header on line 0, one entry per line below it."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "tensor-rows--header",
        "tensor-rows--cursor",
    }

    DEFAULT_CSS = """
    TensorRows { height: 1fr; overflow-x: hidden; background: $surface; }
    TensorRows > .tensor-rows--header { color: $text-muted; background: $panel; text-style: bold; }
    TensorRows > .tensor-rows--cursor {
        color: $block-cursor-foreground; background: $block-cursor-background;
    }
    TensorRows:blur > .tensor-rows--cursor { background: $block-cursor-blurred-background; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False, id="tensors.cursor_up"),
        Binding("down", "cursor(1)", "Down", show=False, id="tensors.cursor_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="tensors.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="tensors.page_down"),
        Binding("home", "edge(0)", "First", show=False, id="tensors.first"),
        Binding("end", "edge(1)", "Last", show=False, id="tensors.last"),
        Binding("enter", "choose", "Open", id="tensors.open"),
    ]

    class Chosen(Message):
        """Enter (or a second click) on a row."""

        def __init__(self, entry: TensorEntry) -> None:
            super().__init__()
            self.entry = entry

    class ViewMoved(Message):
        """The rows on screen changed (a scroll): the health pass may follow them."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: Sequence[TensorEntry] = ()
        self.shown: list[int] = []  # indices into `entries`, in display order
        self.health: Sequence[Health | None] = ()
        self.summaries: Sequence[TensorSummary | None] = ()  # parallel to `health`
        self.cursor = 0  # position in `shown`
        self.ascii_only = False  # set on mount from the app's terminal (its -ascii class)

    def on_mount(self) -> None:
        # the app decides from the locale (terminal_caps.py) and marks itself -ascii
        self.ascii_only = self.app.has_class("-ascii")

    # ------------------------------------------------------------------- data
    def set_rows(
        self,
        entries: Sequence[TensorEntry],
        shown: list[int],
        health: Sequence[Health | None],
        summaries: Sequence[TensorSummary | None] = (),
        *,
        cursor_entry: int | None = None,
    ) -> None:
        """Show `shown` (indices of `entries`); the cursor stays on entry `cursor_entry`
        when it is still shown, else on the same position. The lists are the screen's,
        filled in place by the health pass: a refresh draws what it found."""
        self.entries, self.shown, self.health = entries, shown, health
        self.summaries = summaries
        cursor = self.cursor
        if cursor_entry is not None:
            with contextlib.suppress(ValueError):
                cursor = shown.index(cursor_entry)
        self.virtual_size = Size(self.view_width, len(shown) + 1)
        self.set_cursor(cursor)
        self.refresh()

    @property
    def view_width(self) -> int:
        return self.scrollable_content_region.width

    @property
    def page_rows(self) -> int:
        """Data rows on screen (the header takes one line)."""
        return max(self.scrollable_content_region.height - 1, 1)

    @property
    def cursor_entry(self) -> int | None:
        """The index (into `entries`) of the row under the cursor."""
        return self.shown[self.cursor] if 0 <= self.cursor < len(self.shown) else None

    def visible_entries(self) -> list[int]:
        """The entries of the rows on screen now."""
        first = self.scroll_offset.y
        return self.shown[first : first + self.page_rows]

    # ----------------------------------------------------------------- cursor
    def set_cursor(self, position: int) -> None:
        old = self.cursor
        self.cursor = min(max(position, 0), max(len(self.shown) - 1, 0))
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, force=True)
        elif self.cursor >= top + self.page_rows:
            self.scroll_to(y=self.cursor - self.page_rows + 1, animate=False, force=True)
        for position_ in (old, self.cursor):
            self.refresh_line(position_ - self.scroll_offset.y + 1)

    def action_cursor(self, delta: int) -> None:
        self.set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.set_cursor(self.cursor + direction * self.page_rows)

    def action_edge(self, last: int) -> None:
        self.set_cursor(len(self.shown) - 1 if last else 0)

    def action_choose(self) -> None:
        index = self.cursor_entry
        if index is not None:
            self.post_message(self.Chosen(self.entries[index]))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        position = self.scroll_offset.y + offset.y - 1
        if position >= len(self.shown):
            return
        if position == self.cursor:
            self.action_choose()  # a click on the cursor row opens it, as Enter
        else:
            self.set_cursor(position)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.ViewMoved())

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.view_width, len(self.shown) + 1)
        self.post_message(self.ViewMoved())

    # ----------------------------------------------------------------- render

    def render_line(self, y: int) -> Strip:
        width = self.view_width
        base = self.style_of("")
        if width <= 0:
            return Strip.blank(0, base)
        columns = columns_for(width)
        if y == 0:
            return self._header(columns, width)
        position = self.scroll_offset.y + y - 1
        if position >= len(self.shown):
            return Strip.blank(width, base)
        index = self.shown[position]
        entry = self.entries[index]
        health = self.health[index] if index < len(self.health) else None
        summary = self.summaries[index] if index < len(self.summaries) else None
        ascii_only = self.ascii_only
        glyph, glyph_style = health_glyph(health, ascii_only=ascii_only)
        line_style = self.style_of("tensor-rows--cursor") if position == self.cursor else base
        segments = [Segment(glyph, line_style + _style(glyph_style))]
        for cell, cell_style in format_numbers(summary, columns, ascii_only=ascii_only):
            segments.append(Segment(" " + cell, line_style + _style(cell_style)))
        text = " " + " ".join(format_row(entry, columns, ascii_only=ascii_only))
        segments.append(Segment(text, line_style))
        return Strip(segments).adjust_cell_length(width, line_style)

    def _header(self, columns: Columns, width: int) -> Strip:
        style = self.style_of("tensor-rows--header")
        cells = [
            title.rjust(size) if right else title.ljust(size)
            for title, size, right in header_cells(columns)
        ]
        return Strip([Segment(" ".join(cells), style)]).adjust_cell_length(width, style)


def _style(name: str) -> Style:
    """A rich style by name, parsed once: render_line asks for a few names on every line."""
    style = _STYLES.get(name)
    if style is None:
        style = _STYLES[name] = Style.parse(name)
    return style


_STYLES: dict[str, Style] = {}


class HealthFound(Message):
    """A batch of the health pass: (entry index, summary) pairs of load `generation`."""

    def __init__(
        self, generation: int, found: list[tuple[int, TensorSummary]], *, done: bool = False
    ) -> None:
        super().__init__()
        self.generation = generation
        self.found = found
        self.done = done


class EntriesLoaded(Message):
    """The step's entries (and each one's categories), or why there are none."""

    def __init__(
        self,
        generation: int,
        entries: list[TensorEntry],
        categories: list[frozenset[Category]],
        step: int,
        error: str = "",
    ) -> None:
        super().__init__()
        self.generation = generation
        self.entries = entries
        self.categories = categories
        self.step = step
        self.error = error


class TensorListScreen(Screen[None]):
    """The list of the step's tensors (see the module docstring)."""

    # The help screen (help_screen.context_help) reads it wherever the focus is in here
    # (the rows or the filter).
    CONTEXT_TITLE = "Tensor list"
    CONTEXT_HELP = """Every output tensor of the step, in execution order.
  Enter           open the tensor (the tree goes to its node)
  {tensors.filter}               filter by name (a regex; Enter or Esc returns here)
  {tensors.category}               category: all, weights, gradients, activations, parameters
  {tensors.op_type}               only the op type of this row (again: every op type)
  {tensors.problems}               only NaN / Inf / all-zero tensors
  {tensors.sort}               sort: execution order, size (largest first), op type
  {tensors.close}             close (1–6 close it and go to that pane)
The app's run keys work here (n steps): the list follows the step.
Health: N NaN, I ±Inf, F NaN or ±Inf (not told apart), 0 all zero, · normal, - no value, ! unreadable, ? not read yet
Beside it: min and max of the finite values, NaN and Inf counts"""

    DEFAULT_CSS = """
    TensorListScreen { layout: vertical; }
    TensorListScreen #tensors-status { height: 1; padding: 0 1; background: $panel; }
    TensorListScreen #tensors-filter { height: 1; border: none; padding: 0 1; }
    TensorListScreen #tensors-filter:focus { background: $boost; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="tensors.close"),
        Binding("q", "close", "Close", show=False),
        Binding("slash", "focus_filter", "Filter", id="tensors.filter"),
        Binding("k", "cycle_category", "Category", id="tensors.category"),
        Binding("t", "toggle_op_type", "Op type", id="tensors.op_type"),
        Binding("u", "problems_only", "NaN/Inf/0", id="tensors.problems"),
        Binding("s", "cycle_sort", "Sort", id="tensors.sort"),
    ]

    def __init__(self, session: DebugSession) -> None:
        super().__init__()
        self._session = session
        self.query_state = ListQuery()
        self.entries: list[TensorEntry] = []
        self._categories: list[frozenset[Category]] = []
        self.health: list[Health | None] = []
        self.summaries: list[TensorSummary | None] = []  # the numbers beside each glyph
        self._known = 0
        self.step: int | None = None  # the step listed
        self.listing = False  # the entries are being read (not `loading`: Textual's)
        self._error = ""
        self._problem = ""  # the filter's problem sentence
        self._generation = 0
        self._stale = True  # load when shown
        self._health_worker: Worker[None] | None = None
        self.health_running = False
        self._restart_timer: Timer | None = None
        self._filter_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="tensors-status", markup=False)
        yield Input(placeholder="/ filter names (regex)", id="tensors-filter")
        yield TensorRows(id="tensor-rows")
        yield Footer()

    @property
    def rows(self) -> TensorRows:
        return self.query_one(TensorRows)

    def on_mount(self) -> None:
        self.rows.focus()

    def on_screen_resume(self) -> None:
        if self._stale:
            self.reload()
        else:
            self._restart_health()

    def on_screen_suspend(self) -> None:
        # reading tensors nobody looks at costs IO (and, online, requests to the training)
        self._cancel_health()

    def step_changed(self) -> None:
        """The session's step or graphs changed: list the new step (now if shown)."""
        self._stale = True
        if self.is_current:
            self.reload()

    # ---------------------------------------------------------------- loading
    def reload(self) -> None:
        self._stale = False
        self._generation += 1
        self._cancel_health()
        self.listing = True
        self._error = ""
        self._update_status()
        self.run_worker(
            partial(self._load, self._generation),
            thread=True,
            exclusive=True,
            group="tensor-list",
            exit_on_error=False,
        )

    def _load(self, generation: int) -> None:
        """(worker) The step's entries; their categories, so a filter costs no lookup."""
        session = self._session
        step = session.metadata.step
        try:
            entries = session.tensor_entries()
            graphs = session.graphs
            categories = [
                graphs[e.graph].categories(e.node) if e.graph in graphs else frozenset()
                for e in entries
            ]
        except SessionError as exc:  # its text may quote a file or node name: escaped
            self._post(EntriesLoaded(generation, [], [], step, error=shown(exc)))
            return
        except Exception as exc:  # a bug, but a sentence rather than a dead list
            self._post(
                EntriesLoaded(generation, [], [], step, error=f"Listing failed: {shown(exc)}")
            )
            return
        if not get_current_worker().is_cancelled:
            self._post(EntriesLoaded(generation, entries, categories, step))

    def _post(self, message: Message) -> None:
        with contextlib.suppress(RuntimeError):  # the app has stopped
            self.post_message(message)

    @on(EntriesLoaded)
    def _loaded(self, message: EntriesLoaded) -> None:
        if message.generation != self._generation:
            return
        old = self.rows.cursor_entry
        key = None
        if old is not None and old < len(self.entries):
            e = self.entries[old]
            key = (e.graph, e.node, e.slot)
        self.listing = False
        self._error = message.error
        self.step = message.step
        self.entries = message.entries
        self._categories = message.categories
        self.health = [None] * len(self.entries)
        self.summaries = [None] * len(self.entries)
        self._known = 0  # entries whose health is known (a sum over 10⁵ per batch costs)
        cursor = None
        if key is not None:
            cursor = next(
                (i for i, e in enumerate(self.entries) if (e.graph, e.node, e.slot) == key), None
            )
        self._apply_query(cursor_entry=cursor)
        self._restart_health()

    # ------------------------------------------------------------- filtering
    def _apply_query(self, *, cursor_entry: int | None = None) -> None:
        rows = self.rows
        if cursor_entry is None:
            cursor_entry = rows.cursor_entry
        shown, self._problem = select(self.entries, self._categories, self.health, self.query_state)
        rows.set_rows(self.entries, shown, self.health, self.summaries, cursor_entry=cursor_entry)
        self._update_status()
        self._schedule_restart()

    def set_query(self, query: ListQuery) -> None:
        self.query_state = query
        self._apply_query()

    @on(Input.Changed, "#tensors-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        if len(self.entries) < BIG_LIST:
            self.set_query(self.query_state.with_(pattern=event.value))
        else:
            value = event.value
            self._filter_timer = self.set_timer(
                FILTER_DELAY, lambda: self.set_query(self.query_state.with_(pattern=value))
            )

    @on(Input.Submitted, "#tensors-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.set_query(self.query_state.with_(pattern=event.value))
        self.rows.focus()

    def action_focus_filter(self) -> None:
        self.query_one("#tensors-filter", Input).focus()

    def action_close(self) -> None:
        if isinstance(self.focused, Input):
            self.rows.focus()  # Esc in the filter: back to the rows, the filter kept
            return
        self.dismiss(None)

    def action_cycle_category(self) -> None:
        now = CATEGORY_CYCLE.index(self.query_state.category)
        self.set_query(
            self.query_state.with_(category=CATEGORY_CYCLE[(now + 1) % len(CATEGORY_CYCLE)])
        )

    def action_toggle_op_type(self) -> None:
        if self.query_state.op_type is not None:
            self.set_query(self.query_state.with_(op_type=None))
            return
        index = self.rows.cursor_entry
        if index is None:
            return
        self.set_query(self.query_state.with_(op_type=self.entries[index].op_type))

    def action_problems_only(self) -> None:
        self.set_query(self.query_state.with_(problems_only=not self.query_state.problems_only))

    def action_cycle_sort(self) -> None:
        now = SORT_CYCLE.index(self.query_state.sort)
        self.set_query(self.query_state.with_(sort=SORT_CYCLE[(now + 1) % len(SORT_CYCLE)]))

    @on(TensorRows.Chosen)
    def _chosen(self, event: TensorRows.Chosen) -> None:
        event.stop()
        entry = event.entry
        self.dismiss(None)
        self.app.post_message(
            NodeChosen(entry.graph, entry.node, open_tensor=True, slot=entry.slot)
        )

    # ---------------------------------------------------------------- health
    @on(TensorRows.ViewMoved)
    def _view_moved(self, event: TensorRows.ViewMoved) -> None:
        event.stop()
        self._schedule_restart()

    def _schedule_restart(self) -> None:
        """Follow the view once the scrolling pauses (not at every line of a fling)."""
        if self._restart_timer is not None:
            self._restart_timer.stop()
        self._restart_timer = self.set_timer(RESTART_DELAY, self._restart_if_needed)

    def _restart_if_needed(self) -> None:
        self._restart_timer = None
        if any(self.health[i] is None for i in self.rows.visible_entries()):
            self._restart_health()

    def _todo(self) -> list[int]:
        """Entries without a health yet: those on screen, those shown, then (offline) all."""
        health = self.health
        order = [*self.rows.visible_entries(), *self.rows.shown]
        if not self._session.capabilities.live:
            order.extend(range(len(self.entries)))
        else:
            order = order[: self.rows.page_rows]  # a live training: only what the user sees
        return [i for i in dict.fromkeys(order) if health[i] is None]

    def _restart_health(self) -> None:
        if self.listing or not self.entries or not self.is_current:
            return
        todo = self._todo()
        if not todo:
            self._update_status()
            return
        self.health_running = True
        self._health_worker = self.run_worker(
            partial(
                self._health_pass,
                self._generation,
                list(self.entries),
                todo,
                self._session.metadata.rank,
                self._session.capabilities.live,
            ),
            thread=True,
            exclusive=True,
            group="tensor-health",
            exit_on_error=False,
        )
        self._update_status()

    def _cancel_health(self) -> None:
        if self._health_worker is not None:
            self._health_worker.cancel()
            self._health_worker = None
        self.health_running = False

    def _health_pass(
        self,
        generation: int,
        entries: list[TensorEntry],
        todo: list[int],
        rank: int,
        live: bool,
    ) -> None:
        """(worker) Read each tensor of `todo` once and post its health and numbers in
        batches."""
        worker = get_current_worker()
        cancelled = lambda: worker.is_cancelled  # noqa: E731 (a closure over this worker)
        found: list[tuple[int, TensorSummary]] = []
        posted = slice_began = time.monotonic()
        for index in todo:
            if cancelled():
                return
            entry = entries[index]
            # offline, the entry's own iteration: a step that moves meanwhile cannot mix in
            iteration = None if live else entry.iteration
            ref = TensorRef(entry.node, entry.slot, iteration, rank, entry.graph)
            try:
                array = self._session.tensor(ref)
                if array is not None:
                    summary = tensor_summary(array, cancelled=cancelled)
                else:  # a statistic-only dump (statistic.csv, msprobe): what it wrote
                    stats = self._session.dumped_statistics(ref)
                    known = summary_from_statistics(stats) if stats else None
                    summary = known or TensorSummary(Health.MISSING)
            except HealthCancelled:
                return
            except Exception:  # unreadable file or dtype: the glyph says so, the pass goes on
                summary = TensorSummary(Health.UNREADABLE)
            found.append((index, summary))
            now = time.monotonic()
            if now - slice_began >= GIL_SLICE_SECONDS:
                # small tensors make this loop pure Python: hand the GIL to the UI thread
                # now and then, or a key press may wait many switch intervals for it
                time.sleep(0)
                slice_began = now
            if now - posted >= HEALTH_BATCH_SECONDS or len(found) >= HEALTH_BATCH_SIZE:
                self._post(HealthFound(generation, found))
                found, posted = [], now
        if not cancelled():
            self._post(HealthFound(generation, found, done=True))

    @on(HealthFound)
    def _health_found(self, message: HealthFound) -> None:
        if message.generation != self._generation:
            return
        for index, summary in message.found:
            if self.health[index] is None:
                self._known += 1
            self.health[index] = summary.health
            self.summaries[index] = summary
        if message.done:
            self.health_running = False
            self._health_worker = None
        if self.query_state.problems_only and message.found:
            self._apply_query()  # the newly known unhealthy tensors join the list
        else:
            self.rows.refresh()
            self._update_status()

    # ---------------------------------------------------------------- status
    def status_text(self) -> str:
        """The line above the filter: step, counts, filters, sort, health progress."""
        if self._error:
            return self._error
        step = self._session.metadata.step if self.step is None else self.step
        # the header's words for the step (core.text.step_text), here as in every title
        label = step_text(step, self._session.iteration_of_step(step))
        if self.listing:
            return f"Listing the tensors of {label}…"
        total = len(self.entries)
        if not total:
            caps = self._session.capabilities
            if not caps.step_zero_has_values and step < 1:
                return "Step 0 holds no values: step first (n)."
            return f"No tensor at {label}."
        shown = len(self.rows.shown)
        query = self.query_state
        parts = [
            label[0].upper() + label[1:],
            f"{shown:,} of {total:,} tensors" if query.filtered else f"{total:,} tensors",
        ]
        if query.category is not None:
            parts.append(f"{query.category.value}s")
        if query.op_type is not None:
            parts.append(f"op {printable(query.op_type)}")
        if query.problems_only:
            parts.append("NaN/Inf/0 only")
        parts.append(f"by {query.sort}")
        known = self._known
        if known < total:
            running = "…" if self.health_running else ""
            if self._session.capabilities.live:  # only the rows on screen are asked for
                parts.append(f"health of rows seen {known:,}{running}")
            else:
                parts.append(f"health {known:,}/{total:,}{running}")
        if self._problem:
            parts.append(self._problem)
        return " · ".join(parts)

    def _update_status(self) -> None:
        with contextlib.suppress(NoMatches):  # not composed yet
            self.query_one("#tensors-status", Static).update(Text(self.status_text()))


__all__ = ["EntriesLoaded", "HealthFound", "TensorListScreen", "TensorRows"]
