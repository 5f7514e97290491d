"""The divergence pane: where the target dump stops matching the golden one, a row per
tensor in execution order, opened on the first divergence.

The pane owns its compare: it opens the two dumps and compares one step and rank in a
thread worker (engine.py), showing how far it is, and a newer request (another step, a
filter does not count) stops the older one between two tensors. The step and rank are
the host's: in the debugger they follow the session (its step keys move both dumps; `S`
and `R` here ask the session to move), alone (`tuidebug offline A --against B` on msprobe
dumps) the pane moves itself. Enter opens the pair side by side (side_by_side.py).
Every problem is one sentence in the pane and a notice, never a traceback.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from tuidebug.core.text import printable
from tuidebug.tui.divergence.engine import CompareProblem, DumpPair, Outcome, open_pair, run_compare
from tuidebug.tui.divergence.rows import (
    BAR_WIDTH,
    KIND_ORDER,
    NUMBER_WIDTH,
    Shown,
    cells,
    detail_lines,
    headers,
    shown_rows,
    summary_line,
)
from tuidebug.tui.kit.dialogs import PromptScreen
from tuidebug.tui.kit.labels import shown_lines
from tuidebug.tui.kit.name_filter import name_filter

SHORT = 24  # rows below which the status and the detail lines shrink
NAME_MIN = 22  # columns the name keeps before the numbers get theirs
# a step and rank the host moves to: (step, rank) → False when it cannot (it said why)
Mover = Callable[[int | None, int | None], bool]


class DivergenceTable(DataTable[Text]):
    """The rows; its keys are the pane's (listed by `tuidebug keys` and the help)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Side by side", id="divergence.open"),
        Binding("f", "jump('first')", "First", id="divergence.first"),
        Binding("d", "jump('next')", "Next", id="divergence.next"),
        Binding("D", "jump('previous')", "Prev", id="divergence.previous"),
        Binding("k", "cycle_kind", "Kind", id="divergence.kind"),
        Binding("slash", "filter", "Filter", id="divergence.filter"),
        Binding("S", "choose('step')", "Step", id="divergence.step"),
        Binding("R", "choose('rank')", "Rank", id="divergence.rank"),
    ]

    def action_open(self) -> None:
        pane = self._pane()
        if pane is not None:
            pane.open_highlighted()

    def action_jump(self, where: str) -> None:
        pane = self._pane()
        if pane is not None:
            pane.jump(where)

    def action_cycle_kind(self) -> None:
        pane = self._pane()
        if pane is not None:
            pane.cycle_kind()

    def action_filter(self) -> None:
        pane = self._pane()
        if pane is not None:
            pane.focus_filter()

    def action_choose(self, what: str) -> None:
        pane = self._pane()
        if pane is not None:
            pane.choose(what)

    def _pane(self) -> DivergencePane | None:
        node: Any = self.parent
        while node is not None and not isinstance(node, DivergencePane):
            node = node.parent
        return node


class FilterBox(Input):
    """The name filter: Enter goes back to the rows, Esc empties it and goes back too."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Clear filter", id="divergence.filter_close")
    ]

    def action_close(self) -> None:
        node: Any = self.parent
        while node is not None and not isinstance(node, DivergencePane):
            node = node.parent
        if node is not None:
            node.clear_filter()


class DivergencePane(Vertical):
    """See the module docstring."""

    CONTEXT_TITLE = "Divergence list"
    CONTEXT_HELP = """\
Every tensor of the target and golden dumps at one step and rank, in execution order;
the first divergence (▶) is where the list opens. A divergence: past a tolerance that
knows the dtypes (tuidebug compare --help), or NaN/Inf on one side only.

  ✓ pass  ✗ diverged  ? in one dump only  ! not compared (the line below says why)
  bar   1 − cosine or max abs error / max|golden|, log scale 1e-6 to 1; red: diverged
  {divergence.open}  the pair side by side: target, golden, difference, |difference|
  {divergence.first} / {divergence.next} / {divergence.previous}  first / next / previous divergence
  {divergence.kind}  which rows: all, diverged, not passing, unmatched or skipped, passing
  {divergence.filter}  filter by name (text, or a regular expression)
  {divergence.step} / {divergence.rank}  another step / rank: both dumps move together"""

    DEFAULT_CSS = """
    DivergencePane { height: 1fr; }
    DivergencePane #dv-status { height: auto; max-height: 3; color: $text-muted; }
    DivergencePane #dv-status.-problem { color: $error; }
    DivergencePane #dv-bar { height: 1; }
    DivergencePane #dv-filter { width: 1fr; border: none; height: 1; padding: 0 1; }
    DivergencePane #dv-kind { width: auto; padding: 0 1; color: $accent; }
    DivergencePane #dv-table { height: 1fr; }
    DivergencePane #dv-detail { height: auto; max-height: 6; background: $panel; }
    /* a short pane (80×24) keeps its rows for the list: one status line, two of detail */
    DivergencePane.-short #dv-status { max-height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    DivergencePane.-short #dv-detail { max-height: 2; }
    """

    class Opened(Message):
        """The pane opened a pair side by side (tests wait on it)."""

    def __init__(
        self,
        *,
        mover: Mover | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._mover = mover
        self._pair: DumpPair | None = None
        self._outcome: Outcome | None = None
        self._rows: list[Shown] = []
        self._kind = "all"
        self._names = name_filter("")
        self._stop = threading.Event()  # set: the compare running stops
        self._wanted: tuple[int, int] | None = None  # the step and rank asked for
        self._problem = ""
        self._progress = ""
        self._wide: int | None = None  # the width the columns were made for
        self.compares = 0  # finished compares (tests wait on it)

    def compose(self) -> ComposeResult:
        yield Static("Opening the dumps…", id="dv-status", markup=False)
        with Horizontal(id="dv-bar"):
            yield FilterBox(placeholder="filter by name  (/)", id="dv-filter")
            yield Static("▼ all", id="dv-kind", markup=False)
        table = DivergenceTable(id="dv-table", cursor_type="row", cell_padding=0)
        yield table
        yield Static("", id="dv-detail", markup=False)

    @property
    def table(self) -> DivergenceTable:
        return self.query_one(DivergenceTable)

    @property
    def pair(self) -> DumpPair | None:
        return self._pair

    @property
    def outcome(self) -> Outcome | None:
        return self._outcome

    @property
    def shown(self) -> list[Shown]:
        return self._rows

    @property
    def status_text(self) -> str:
        return str(self.query_one("#dv-status", Static).render())

    # ------------------------------------------------------------ opening, comparing
    def open(self, target: str, golden: str, step: int | None, rank: int | None) -> None:
        """Open the two dumps and compare `step` and `rank` (None: the first both have)."""
        if not self.is_mounted:
            self.call_after_refresh(self.open, target, golden, step, rank)
            return
        self._pair = None
        self._outcome = None
        self._wanted = None
        self._set_status(f"Opening {printable(target)} against {printable(golden)}…")
        self._open_worker(target, golden, step, rank)

    @work(thread=True, exclusive=True, group="divergence-open")
    def _open_worker(self, target: str, golden: str, step: int | None, rank: int | None) -> None:
        try:
            pair = open_pair(target, golden)
        except CompareProblem as err:
            self._back(self._failed, str(err))
            return
        except Exception as err:  # a bug, but the user still gets a sentence, not a traceback
            self._back(self._failed, printable(f"The dumps could not be opened: {err}."))
            return
        self._back(self._opened, pair, step, rank)

    def _back(self, callback: Callable[..., object], *args: object) -> None:
        """From a worker onto the UI thread; dropped once the app has stopped."""
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(callback, *args)

    def _opened(self, pair: DumpPair, step: int | None, rank: int | None) -> None:
        self._pair = pair
        self.follow(step, rank)

    def follow(self, step: int | None, rank: int | None) -> None:
        """Compare `step` and `rank` (the host's; None: the first both dumps have), unless
        it is what the pane shows or is comparing already."""
        pair = self._pair
        if pair is None:
            return
        wanted = (pair.steps[0] if step is None else step, pair.ranks[0] if rank is None else rank)
        if wanted == self._wanted:
            return
        self._wanted = wanted
        self._stop.set()  # the older compare stops between two tensors
        self._stop = threading.Event()
        self._progress = ""
        # the rows of another step must not pass for this one's while it is compared
        self._outcome = None
        self._rows = []
        self.table.clear(columns=True)
        self.query_one("#dv-detail", Static).update("")
        self._set_status(f"Comparing {self._where(*wanted)}…")
        self._compare_worker(pair, wanted[0], wanted[1], self._stop)

    @work(thread=True, exclusive=True, group="divergence-compare")
    def _compare_worker(self, pair: DumpPair, step: int, rank: int, stop: threading.Event) -> None:
        last = [0.0]

        def progress(done: int, total: int) -> None:
            import time

            now = time.monotonic()
            if now - last[0] > 0.1 or done == total:  # a few redraws a second, not one a tensor
                last[0] = now
                self._back(self._progressed, stop, done, total)

        try:
            outcome = run_compare(pair, step, rank, progress=progress, stopped=stop.is_set)
        except CompareProblem as err:
            if not stop.is_set():
                self._back(self._failed, str(err))
            return
        except Exception as err:  # a bug, but a sentence (the app keeps running)
            if not stop.is_set():
                self._back(self._failed, printable(f"The compare failed: {err}."))
            return
        if not stop.is_set() or outcome.stopped:
            self._back(self._compared, stop, outcome)

    def _progressed(self, stop: threading.Event, done: int, total: int) -> None:
        if stop is self._stop and self._wanted is not None:
            self._set_status(f"Comparing {self._where(*self._wanted)}: {done} of {total} tensors…")

    def _failed(self, sentence: str) -> None:
        self._set_status(sentence, problem=True)
        self.notify(sentence, severity="warning", timeout=8)

    def _compared(self, stop: threading.Event, outcome: Outcome) -> None:
        if stop is not self._stop:
            return  # a newer compare was asked for
        self._outcome = outcome
        self.compares += 1
        self._fill(select_first=True)
        pair = self._pair
        status = f"{self._where(outcome.step, outcome.rank)}: {summary_line(outcome.report, outcome.stopped)}"
        if pair is not None and pair.problems:
            status += (
                f"\n{len(pair.problems)} problem(s) reading the dumps: the compare is incomplete"
            )
            self.notify(shown_lines(pair.problems[0]), severity="warning", timeout=8)
        if not outcome.report.rows:
            status += "\nNo tensor of either dump at this step and rank."
        self._set_status(status)

    def _where(self, step: int, rank: int) -> str:
        word = "step" if self._pair is not None and self._pair.kind == "msprobe" else "iteration"
        return f"{word} {step}, rank {rank}"

    def _set_status(self, text: str, *, problem: bool = False) -> None:
        self._problem = text if problem else ""
        status = self.query_one("#dv-status", Static)
        status.update(text)
        status.set_class(problem, "-problem")

    # ------------------------------------------------------------------ the rows
    def on_resize(self) -> None:
        self.set_class(0 < self.size.height < SHORT, "-short")
        if self.size.width != self._wide and self._outcome is not None:
            self._fill(select_first=False)

    def _fill(self, *, select_first: bool) -> None:
        outcome = self._outcome
        table = self.table
        keep = self._highlighted_index()
        table.clear(columns=True)
        if outcome is None:
            return
        report = outcome.report
        self._wide = self.size.width
        # no cell padding (each cell brings its own space): the name keeps NAME_MIN
        # columns and the numbers come as room allows, cosine first
        room = self.size.width - 2 - (BAR_WIDTH + 1) - 3  # mark, bar, scroll bar
        numbers = max(0, min(3, (room - NAME_MIN) // (NUMBER_WIDTH + 1)))
        name_width = max(8, room - numbers * (NUMBER_WIDTH + 1)) - 1
        table.add_column(" ", key="mark", width=2)
        table.add_column("tensor", key="name", width=name_width + 1)
        for label in headers(report.tensor_mode)[:numbers]:
            table.add_column(Text(label, justify="right"), key=label, width=NUMBER_WIDTH + 1)
        table.add_column(" off by", key="bar", width=BAR_WIDTH + 1)
        self._rows = shown_rows(report, self._names, self._kind)
        first = report.first
        for shown in self._rows:
            table.add_row(
                *cells(
                    shown.row, first=shown.index == first, numbers=numbers, name_width=name_width
                ),
                key=str(shown.index),
            )
        target = first if select_first and first is not None else keep
        self._move_to(target)
        self._show_detail()

    def _highlighted_index(self) -> int | None:
        table = self.table
        if not self._rows or not 0 <= table.cursor_row < len(self._rows):
            return None
        return self._rows[table.cursor_row].index

    def _move_to(self, index: int | None) -> None:
        if index is None:
            return
        for position, shown in enumerate(self._rows):
            if shown.index >= index:
                self.table.move_cursor(row=position, scroll=True)
                return

    @on(DataTable.RowHighlighted, "#dv-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def _show_detail(self) -> None:
        detail = self.query_one("#dv-detail", Static)
        index = self._highlighted_index()
        if index is None or self._outcome is None:
            detail.update("No row matches the filters." if self._outcome is not None else "")
            return
        report = self._outcome.report
        detail.update(detail_lines(report.rows[index], report.tensor_mode))

    def jump(self, where: str) -> None:
        """The first, next or previous divergence among the rows shown."""
        positions = [p for p, s in enumerate(self._rows) if s.row.status == "diverged"]
        if not positions:
            self.notify("No row shown diverges.", timeout=3)
            return
        here = self.table.cursor_row
        if where == "first":
            target = positions[0]
        elif where == "next":
            target = next((p for p in positions if p > here), positions[0])
        else:
            target = next((p for p in reversed(positions) if p < here), positions[-1])
        self.table.move_cursor(row=target, scroll=True)

    def cycle_kind(self) -> None:
        self._kind = KIND_ORDER[(KIND_ORDER.index(self._kind) + 1) % len(KIND_ORDER)]
        self.query_one("#dv-kind", Static).update(f"▼ {self._kind}")
        self._fill(select_first=False)

    def focus_filter(self) -> None:
        self.query_one("#dv-filter", Input).focus()

    @on(Input.Changed, "#dv-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._names = name_filter(event.value)
        if self._names.problem:
            self.notify(self._names.problem, severity="warning", timeout=4)
        self._fill(select_first=False)

    @on(Input.Submitted, "#dv-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    def clear_filter(self) -> bool:
        """Esc in the filter box: empty it (True when there was one)."""
        box = self.query_one("#dv-filter", Input)
        had = bool(box.value)
        box.value = ""
        self.table.focus()
        return had

    # --------------------------------------------------------------- step and rank
    def choose(self, what: str) -> None:
        """Ask for another step or rank; both dumps move to it."""
        pair, wanted = self._pair, self._wanted
        if pair is None or wanted is None:
            self.notify("The dumps are still being opened.", timeout=3)
            return
        values = pair.steps if what == "step" else pair.ranks
        word = ("step" if pair.kind == "msprobe" else "iteration") if what == "step" else "rank"
        listed = ", ".join(map(str, values))
        if len(values) == 1:
            self.notify(f"Both dumps have only {word} {values[0]}.", timeout=4)
            return

        def check(value: str) -> str | None:
            if value.strip().isdigit() and int(value) in values:
                return None
            article = "an" if word[0] in "aeiou" else "a"
            return f"Give {article} {word} both dumps have: {listed}."

        def chosen(value: str | None) -> None:
            if not value:
                return
            number = int(value)
            step, rank = (number, None) if what == "step" else (None, number)
            if self._mover is not None:
                self._mover(step, rank)  # the host moves, then calls follow()
                return
            self.follow(wanted[0] if step is None else step, wanted[1] if rank is None else rank)

        current = wanted[0] if what == "step" else wanted[1]
        prompt = PromptScreen(
            f"Compare at {word} ({listed})",
            value=str(current),
            hint="Both dumps move to it. Enter compares, Esc cancels.",
            check=check,
        )
        self.app.push_screen(prompt, chosen)

    # -------------------------------------------------------------- side by side
    def open_highlighted(self) -> None:
        index = self._highlighted_index()
        outcome = self._outcome
        if index is None or outcome is None:
            return
        row = outcome.report.rows[index]
        from tuidebug.tui.divergence.side_by_side import SideBySideScreen

        pair = outcome.pairs[index] if index < len(outcome.pairs) else None
        word = "step" if self._pair is not None and self._pair.kind == "msprobe" else "iteration"
        self.app.push_screen(SideBySideScreen(row, pair, outcome.report.tensor_mode, word))
        self.post_message(self.Opened())


__all__ = ["DivergencePane", "DivergenceTable", "Mover"]
