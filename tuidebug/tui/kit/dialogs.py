"""Small modal dialogs: yes/no, a one-line prompt with inline validation, the run history."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Static

from tuidebug.core.session import GraphRun
from tuidebug.tui.kit.fill_on_mount import fill_when_mounted
from tuidebug.tui.kit.labels import plain, shown_lines


class ConfirmScreen(ModalScreen[bool]):
    """A question answered with y/n (or Enter on a button; Esc = no)."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 70; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    ConfirmScreen #confirm-title { text-style: bold; margin-bottom: 1; }
    ConfirmScreen #confirm-scroll { height: auto; max-height: 60vh; margin-bottom: 1; }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "answer(False)", "Cancel", id="confirm.cancel"),
    ]

    def __init__(
        self,
        title: str,
        body: str,
        *,
        yes: str = "Yes",
        no: str = "No",
        destructive: bool = False,
    ) -> None:
        """`destructive=True` (terminate, delete): Enter lands on the safe answer; only
        `y` or a deliberate Tab goes ahead."""
        super().__init__()
        self._title = title
        self._body = body
        self._yes = yes
        self._no = no
        self._destructive = destructive

    def compose(self) -> ComposeResult:
        with Vertical():
            # the body may quote session messages, node and file names: escaped, no markup
            yield Label(plain(self._title), id="confirm-title")
            with VerticalScroll(id="confirm-scroll"):
                yield Static(shown_lines(self._body), id="confirm-body", markup=False)
            with Horizontal():
                if self._yes == self._no:  # a message to read, not a question: one button
                    yield Button(f"{self._yes} (Esc)", variant="primary", id="confirm-yes")
                    return
                yield Button(f"{self._no} (n)", id="confirm-no")
                yield Button(
                    f"{self._yes} (y)",
                    variant="error" if self._destructive else "primary",
                    id="confirm-yes",
                )

    def on_mount(self) -> None:
        # The buttons sit two levels down and are not always mounted yet when the screen's
        # Mount arrives (a busy app): then focus them once the screen has drawn.
        if not self._focus_default():
            self.call_after_refresh(self._focus_default)

    def _focus_default(self) -> bool:
        try:
            self.query_one("#confirm-no" if self._destructive else "#confirm-yes").focus()
        except NoMatches:
            return False
        return True

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")


class PromptScreen(ModalScreen[str | None]):
    """Ask for one value. `check` returns an error sentence or None; the dialog stays open,
    showing the sentence under the input, until the value is acceptable or Esc."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 64; height: auto; border: thick $accent; background: $surface; padding: 1 2;
    }
    PromptScreen #prompt-title { text-style: bold; margin-bottom: 1; }
    PromptScreen #prompt-error { color: $error; height: auto; }
    PromptScreen #prompt-hint { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="prompt.cancel")
    ]

    def __init__(
        self,
        title: str,
        *,
        value: str = "",
        placeholder: str = "",
        hint: str = "Enter to accept, Esc to cancel",
        check: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self._title = title
        self._value = value
        self._placeholder = placeholder
        self._hint = hint
        self._check = check

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self._title), id="prompt-title")
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt-input")
            yield Static("", id="prompt-error", markup=False)
            yield Static(self._hint, id="prompt-hint")

    def on_mount(self) -> None:
        if not self._focus_input():  # see ConfirmScreen.on_mount
            self.call_after_refresh(self._focus_input)

    def _focus_input(self) -> bool:
        try:
            self.query_one("#prompt-input", Input).focus()
        except NoMatches:
            return False
        return True

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Changed, "#prompt-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#prompt-error", Static).update("")

    @on(Input.Submitted, "#prompt-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        error = self._check(value) if self._check else None
        if error:
            self.query_one("#prompt-error", Static).update(shown_lines(error))
            return
        self.dismiss(value)


def int_check(low: int, high: int | None, what: str) -> Callable[[str], str | None]:
    """A `PromptScreen` check for an integer in [low, high]."""

    def check(value: str) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return f"The {what} must be a whole number."
        if high is None and number < low:
            return f"The {what} must be at least {low}."
        if high is not None and not low <= number <= high:
            return f"The {what} must be between {low} and {high}."
        return None

    return check


def path_check() -> Callable[[str], str | None]:
    """A `PromptScreen` check for a file to write: its folder must exist and it must not be
    a folder; an existing file is replaced only when Enter is pressed on it a second time."""
    warned: list[str] = []

    def check(value: str) -> str | None:
        if not value:
            return "Give a file name."
        path = Path(value).expanduser()
        if path.is_dir():
            return f"{value} is a folder; give a file name."
        folder = path.parent
        if not folder.is_dir():
            return f"There is no folder {folder}."
        if path.exists() and warned[-1:] != [value]:
            warned.append(value)
            return f"{value} exists: press Enter again to replace it."
        return None

    return check


def hits_cell(record: tuple[int, int, bool] | None) -> Text:
    """The history's hits cell of one step: `35 NaN/Inf`, `6`, `2 errors`, `0`, or blank
    for a step not checked this session."""
    if record is None:
        return Text("")
    real, errors, nan_inf = record
    if nan_inf:
        return Text(f"{real + errors} NaN/Inf", style="bold red")
    if real:
        return Text(str(real), style="red")
    if errors:
        return Text(f"{errors} error{'s' if errors != 1 else ''}", style="yellow")
    return Text("0", style="dim")


def step_strip(hits: Mapping[int, tuple[int, int, bool]], current: int) -> Text:
    """One line over the history: each checked step with its hit count, the NaN/Inf steps
    marked ✖ in red (TensorBoard Debugger V2's execution timeline, in one row)."""
    out = Text("steps  ")
    for step in sorted(hits):
        real, errors, nan_inf = hits[step]
        mark = "✖" if nan_inf else ("▲" if real else "·")
        style = "bold red" if nan_inf else ("red" if real else "dim")
        label = f"{step}{mark}{real + errors if nan_inf else real or ''}"
        out.append(label, style=style + (" reverse" if step == current else ""))
        out.append("  ")
    return out


class HistoryScreen(ModalScreen[int | None]):
    """The graph execution history (spec §5.7). Enter on a row answers its step number so
    the app can offer to jump there.

    Runs of graphs without a history file (`GraphRun.from_history` false: the sub-graphs of
    a control-flow net, or every graph of a dump without usable history) are listed with the
    others, marked "dumped folders" in a `from` column, and the title and a note line say
    so instead of claiming a history."""

    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical {
        width: 90; max-width: 100%; height: auto; max-height: 80%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    HistoryScreen #history-title { text-style: bold; padding: 1 0; }
    HistoryScreen #history-note { color: $warning; padding: 0 0 1 0; }
    HistoryScreen DataTable { height: auto; max-height: 30; }
    HistoryScreen #history-hint { color: $text-muted; }
    HistoryScreen #history-strip { padding: 0 0 1 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="history.close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(
        self,
        runs: Sequence[GraphRun],
        current_step: int,
        can_jump: bool,
        hits: Mapping[int, tuple[int, int, bool]] | None = None,
    ) -> None:
        super().__init__()
        self._runs = list(runs)
        self._current = current_step
        self._can_jump = can_jump
        # step → (real hits, check errors, NaN/Inf) of the steps checked so far (the hit
        # list's record): a hits column and a strip of the steps, like DV2's timeline
        self._hits = dict(hits or {})

    def compose(self) -> ComposeResult:
        title, note = self._title_and_note()
        with Vertical():
            yield Label(title, id="history-title")
            if note:  # it names graphs of the dump
                yield Static(shown_lines(note), id="history-note", markup=False)
            if self._hits:
                yield Static(step_strip(self._hits, self._current), id="history-strip")
            yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            hint = "Enter jumps to that step, Esc closes" if self._can_jump else "Esc closes"
            yield Static(hint, id="history-hint")

    def on_mount(self) -> None:
        fill_when_mounted(self, self._fill)

    def _title_and_note(self) -> tuple[str, str]:
        without = list(dict.fromkeys(r.graph_name for r in self._runs if not r.from_history))
        if not without:
            return "Graph execution history", ""
        if len(without) == len({r.graph_name for r in self._runs}):
            return (
                "Graph runs (no history file — from dumped folders)",
                "No graph has a usable history file, so each row is a dumped iteration folder.",
            )
        shown = ", ".join(without[:4])
        if len(without) > 4:
            shown += f" and {len(without) - 4} more"
        which = "graph has" if len(without) == 1 else "graphs have"
        return (
            "Graph execution history",
            f"{len(without)} {which} no history file ({shown}): "
            "their rows are their dumped iteration folders, marked “dumped folders”.",
        )

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        marked = any(not r.from_history for r in self._runs)
        columns = ["step", "iteration", "graph", "data"]
        if marked:
            columns.append("from")
        table.add_columns(*columns, "hits", "sub-graphs")
        if not self._runs:
            table.add_row("—", "—", "this session records no graph runs", "", "", "")
        for i, run in enumerate(self._runs):
            step = run.iteration + 1
            mark = "▶ " if step == self._current else "  "
            cells: list[str | Text] = [
                Text(f"{mark}{step}", style="bold" if step == self._current else ""),
                str(run.iteration),
                plain(run.graph_name),
                Text("dumped", style="green") if run.has_data else Text("no data", style="dim"),
            ]
            if marked:
                cells.append(
                    Text("history file")
                    if run.from_history
                    else Text("dumped folders", style="yellow")
                )
            cells.append(hits_cell(self._hits.get(step)))
            table.add_row(*cells, plain(", ".join(run.sub_graphs)), key=str(i))
        current = next(
            (i for i, run in enumerate(self._runs) if run.iteration + 1 == self._current), None
        )
        if current is not None:
            table.move_cursor(row=current)  # Enter right away re-opens where we are
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if not self._can_jump or not self._runs or event.row_key.value is None:
            return
        run = self._runs[int(event.row_key.value)]
        self.dismiss(run.iteration + 1)
