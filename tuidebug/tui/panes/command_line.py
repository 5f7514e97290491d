"""The command line (`:`): tfdbg's commands typed in the TUI, their output in a pane below.

`:` shows a `CommandLine` panel at the bottom of the main screen and focuses its input.
The app builds it hidden a few seconds after the graphs load (navigation/kept_views.py:
the command layer loads then, not with the first frame; a `:` before then builds it), and
`:` and Esc only show and hide it: one restyle of the panel, and of the two panes whose
rows it takes on a short terminal. What the key costs beyond that is Textual laying out
and redrawing the panes it shrinks (benchmarks/bench_tui.py --only command). Enter runs the line
through the one `CommandRegistry` the app built over its session, in a thread worker (a
`pt` or `lt` may read files or wait for the training), and appends the echo and the
output to `CommandOutput` (command_output.py), a line-API pane that wraps at its width and
keeps the last `MAX_OUTPUT_LINES` lines. Spans that name a node or a tensor are links: a click, or Tab /
Enter in the output, posts `NodeChosen` (and `TensorRequested` for a tensor) to the app,
as the tree and the hit list do.

The panel is a place to type: one Esc closes it from the prompt or the output (a search
running is ended first, as in the tensor view's find); a printable key pressed in the
output goes to the prompt (the output keeps only its own keys: n / N, z), and a key the
app binds to a run action (step, continue, …) never fires from inside the panel.
A line starting with `/` searches the output instead of running a command (tfdbg's
`/regex`): every match is highlighted, Enter again or n / N in the output move between
them, Esc ends the search.

The commands' semantic styles (`header`, `nan`, …) become component classes of the output,
so the theme colours them; every text reaches the screen as a `rich.text.Text` (the
command layer has made it printable), never as markup. ↑/↓ browse the history by prefix;
it persists in `$XDG_STATE_HOME/tuidebug/command_history` (bounded; a file that cannot be
read or written is no history, never an error).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from tuidebug.commands import CommandRegistry, History, Output
from tuidebug.core.text import printable
from tuidebug.offline.files.regular_file import open_regular
from tuidebug.tui.kit.own_class import set_own_class
from tuidebug.tui.panes.command_output import (
    MAX_MATCHES,
    CommandOutput,
    is_printable_key,
    search_pattern,
)

__all__ = [
    "CommandInput",
    "CommandLine",
    "CommandOutput",
    "command_history_file",
    "load_history",
    "save_history",
]

MAX_CANDIDATES_SHOWN = 20
HISTORY_LIMIT = 500
MAX_HISTORY_BYTES = 1 << 20
MAX_HISTORY_LINE = 4096


# ================================================================= history file
def command_history_file(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/tuidebug/command_history`, else `~/.local/state/tuidebug/…`."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME", "").strip()
    # the XDG spec: a relative XDG_STATE_HOME is invalid and must be ignored
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path("~/.local/state").expanduser()
    return base / "tuidebug" / "command_history"


def load_history(path: Path, limit: int = HISTORY_LIMIT) -> History:
    """The saved history; a missing, unreadable or odd file gives what could be read."""
    history = History(limit=limit)
    try:
        # a FIFO or a device in its place must not block the first `:`
        with open_regular(path) as handle:
            raw = handle.read(MAX_HISTORY_BYTES)
    except OSError:
        return history
    for data in raw.splitlines()[-limit:]:
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        # only lines the input could have produced: one printable line of sane length
        if line.strip() and len(line) <= MAX_HISTORY_LINE and line.isprintable():
            history.add(line)
    return history


def save_history(history: History, path: Path) -> bool:
    """Write the history (newest last); False when it could not be (never an exception:
    a read-only home must not cost the user their command)."""
    partial = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(f"{line}\n" for line in history.lines).encode("utf-8")
        # a fresh name (O_EXCL): nothing planted at a guessable name is written through
        fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(partial, path)
        partial = ""
    except (OSError, ValueError):  # ValueError: a line that is no UTF-8 (a lone surrogate)
        return False
    finally:
        if partial:  # the write or the rename failed: leave no temporary file behind
            with contextlib.suppress(OSError):
                os.unlink(partial)
    return True


# ======================================================================= input
class CommandInput(Input):
    """The line typed; its keys (Tab, ↑, ↓, Esc) are the panel's bindings.

    Coming back to it (from the output, or after following a link) keeps the cursor where
    it was, not the text selected: a letter typed in the output then continues the line
    instead of replacing it."""

    def __init__(self, *, placeholder: str, id: str) -> None:
        super().__init__(placeholder=placeholder, id=id, select_on_focus=False)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        # Input's own test misses `/` (Textual finds no character for "slash"), which
        # left the app's `/ Filter` in the footer of a box that types the slash
        return is_printable_key(key, character)

    DEFAULT_CSS = """
    CommandInput {
        border: none;
        height: 1;
        padding: 0;
        width: 1fr;
        background: $surface;
    }
    CommandInput:focus { border: none; background: $surface; }
    """


class CommandFinished(Message):
    """A command ran (in the worker): its line and what it printed."""

    def __init__(self, line: str, output: Output) -> None:
        super().__init__()
        self.line = line
        self.output = output


IDLE_SUBTITLE = "Tab completes · ↑↓ history · shift+Tab links · /regex finds · Esc closes"


# ======================================================================= panel
class CommandLine(Vertical):
    """The `:` panel: output above, the hint line, the input at the bottom."""

    CONTEXT_TITLE = "Command line"
    CONTEXT_HELP = """tfdbg's commands over this session (help lists them, NAME -h their flags):
  lt -t MatMul -s size   the step's tensors, filtered and sorted
  pt NAME[0:2, :] -s     a tensor or a slice, and its statistics
  ni NAME -a -t          a node's attributes and stack;  li / lo NAME -r: input / consumer trees
  ps [FILE]              source files, or a file with the nodes each line created
  eval "np.abs(`NAME:0`).max()"   numpy over tensors;  CMD > FILE writes the output to FILE
  {command.complete}  complete a command, flag, node name or path
  {command.history_previous} / {command.history_next}  history (what is typed is the prefix searched)
  {command.links}  to the output, where Tab / Enter follow links (letters typed there come back here)
  /REGEX                 search the output (case-insensitive unless a capital): Enter again moves on
  {command.close}  end the search; else close (the output stays for the next :)"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "complete", "Complete", id="command.complete"),
        Binding("up", "history(-1)", "History", show=False, id="command.history_previous"),
        Binding("down", "history(1)", "History", show=False, id="command.history_next"),
        Binding("shift+tab", "focus_output", "Links", id="command.links"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="command.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="command.page_down"),
        Binding("ctrl+l", "clear", "Clear", show=False, id="command.clear"),
        Binding("escape", "close", "Close", id="command.close"),
    ]

    DEFAULT_CSS = """
    CommandLine {
        display: none;
        height: 40%;
        min-height: 8;
        border: round $primary-background-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
    }
    CommandLine.-open { display: block; }
    CommandLine.-focus { border: round $accent; }
    CommandLine #command-hint {
        height: auto;
        max-height: 4;
        color: $text-muted;
        display: none;
    }
    CommandLine #command-hint.-shown { display: block; }
    CommandLine #command-row { height: 1; }
    CommandLine #command-prompt { width: 2; color: $accent; text-style: bold; }
    """

    def __init__(
        self, registry: CommandRegistry, *, history_file: Path | None = None, id: str | None = None
    ) -> None:
        """`registry`: the one registry of the app's session. `history_file`: where the
        history persists (default `command_history_file()`, read when first opened)."""
        super().__init__(id=id)
        self.registry = registry
        self.history_file = history_file
        self.history: History | None = None
        self.running: str | None = None  # the line running now
        self._echo_line = 0  # the output line echoing it
        self._return_to: Widget | None = None
        self._shown_value: str | None = None  # the value we set (not typed by the user)
        self._hint_text = ""  # what the hint line shows
        self._rows_of: list[Widget] | None = None  # the panes a short terminal hides for it
        self.border_title = "Command line"
        self.border_subtitle = IDLE_SUBTITLE

    def compose(self) -> ComposeResult:
        self.output = CommandOutput(id="command-output")
        self.hint = Static("", id="command-hint", markup=False)
        self.input = CommandInput(
            placeholder="lt, pt NAME[SLICE], ni, li, lo, ps, eval … (help lists them)",
            id="command-input",
        )
        yield self.output
        yield self.hint
        with Horizontal(id="command-row"):
            yield Static(":", id="command-prompt", markup=False)
            yield self.input

    # ---------------------------------------------------------- open / close
    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        """Show the panel and focus the input; Esc returns the focus where it was."""
        if self.history is None:
            self.history = load_history(self._history_path())
        focused = self.app.focused
        if focused is not None and not self._holds(focused):
            self._return_to = focused
        self._set_open(True)
        self.input.focus()

    def close(self) -> None:
        screen = self.screen
        if screen.maximized is not None and self._holds(screen.maximized):
            screen.minimize()
        self._set_open(False)
        self._show_hint("")
        back = self._return_to
        self._return_to = None
        if back is not None and back.is_attached and back.display:
            back.focus()
        else:
            screen.focus_next()

    def _set_open(self, shown: bool) -> None:
        """Show or hide the panel with one restyle of the panel alone (own_class.py): `-open`
        and the lit border's `-focus` change together, as the prompt takes the focus when it
        opens and the focus leaves it when it closes (two restyles of it before)."""
        if self.has_class("-open") != shown or self.has_class("-focus") != shown:
            self.set_class(shown, "-open", "-focus", update=False)
            if self.is_attached:
                self.app.stylesheet.update_nodes({self}, animate=True)
        self._give_rows()

    def _give_rows(self) -> None:
        """On a short terminal the open panel takes the rows of the watchpoint list and the
        control bar (app.tcss): the class goes on those two alone, since a class on the
        screen restyles all its widgets. Only there: on a tall terminal the class changes
        nothing but costs a restyle and a redraw of the list on each `:` and Esc. A resize
        across the threshold while the panel is open calls this again (`on_resize`)."""
        take = self.is_open and self.screen.has_class("-short")
        if self._rows_of is None:
            self._rows_of = list(self.screen.query("#watchpoints, #controls"))
        for pane in self._rows_of:
            set_own_class(pane, take, "-command-open")

    def on_resize(self) -> None:
        # after the app's on_resize, which sets Screen.-short for the new height
        self._give_rows()

    # The lit border while the focus is inside: a class on the panel alone (own_class.py),
    # as :focus-within would restyle its children on each move of the focus in or out.
    def on_descendant_focus(self) -> None:
        self._frame()

    def on_descendant_blur(self) -> None:
        self._frame()

    def _frame(self) -> None:
        focused = self.screen.focused
        set_own_class(self, focused is not None and self._holds(focused), "-focus")

    def _holds(self, widget: Widget) -> bool:
        node: object = widget
        while isinstance(node, Widget):
            if node is self:
                return True
            node = node.parent
        return False

    def _history_path(self) -> Path:
        return self.history_file if self.history_file is not None else command_history_file()

    # --------------------------------------------------------------- actions
    def action_close(self) -> None:
        """Esc: end the search if there is one, else close, maximized or not (close puts
        the layout back): one press, wherever the focus is in the panel."""
        if self.end_search():
            return
        self.close()

    def end_search(self) -> bool:
        """End the output's search (its `/…` line leaves the prompt); False if none."""
        if not self.output.end_search():
            return False
        if self.input.value.startswith("/"):
            self._set_value("", 0)
        self._show_hint("")
        return True

    def action_focus_output(self) -> None:
        self.output.focus()

    def action_page(self, direction: int) -> None:
        if direction < 0:
            self.output.scroll_page_up(animate=False)
        else:
            self.output.scroll_page_down(animate=False)

    def action_clear(self) -> None:
        self.output.clear()

    def action_history(self, direction: int) -> None:
        history = self.history
        if history is None:
            return
        line = history.previous(self.input.value) if direction < 0 else history.next()
        if line is None:
            self.app.bell()
            return
        self._set_value(line, len(line))

    def _set_value(self, value: str, cursor: int) -> None:
        self._shown_value = value
        self.input.value = value
        self.input.cursor_position = cursor

    @on(Input.Changed, "#command-input")
    def _typed(self, event: Input.Changed) -> None:
        if event.value != self._shown_value and self.history is not None:
            self.history.reset()  # typing starts a new prefix search
        self._shown_value = None

    @on(CommandOutput.Back)
    def _back_from_output(self, event: CommandOutput.Back) -> None:
        event.stop()
        self.close()

    @on(CommandOutput.Typed)
    def _typed_in_output(self, event: CommandOutput.Typed) -> None:
        """A letter pressed in the output goes where it was meant: the prompt (replacing
        a selected search, as typing in the prompt would)."""
        event.stop()
        self.input.focus()
        if event.character == ":":
            return  # `:` means "the prompt": it moves there and types nothing
        box = self.input
        start, end = sorted(box.selection)
        box.replace(event.character, start, end)

    @on(CommandOutput.SearchMoved)
    def _search_moved(self, event: CommandOutput.SearchMoved) -> None:
        event.stop()
        if not self.output.searching and self.input.value.startswith("/"):
            self._set_value("", 0)  # Esc in the output ended it
        self._show_search_status()

    def on_key(self, event: events.Key) -> None:
        """A key the app binds to a run action (step, continue, …: a user's keys.toml may
        put one on a key the prompt does not type) stops here: nothing typed or read in
        the panel may move the training."""
        if event.is_printable:
            return  # the prompt typed it, or the output sent it there
        active = self.screen.active_bindings.get(event.key)
        if active is not None and active.node is self.app and _is_run(active.binding.action):
            event.stop()
            event.prevent_default()

    # ------------------------------------------------------------- complete
    def action_complete(self) -> None:
        value, cursor = self.input.value, self.input.cursor_position
        head, tail = value[:cursor], value[cursor:]
        completion = self.registry.complete(head)
        word = head[completion.start :]
        candidates = completion.candidates
        if not candidates:
            # the registry's sentence says why (a name no line can carry, eval outside `…`)
            nothing = f"Nothing completes {word!r}." if word else "Nothing to complete here."
            self._show_hint(completion.note or nothing)
            self.app.bell()
            return
        if len(candidates) == 1:
            new = candidates[0]
            # a finished word gets its space, as a shell's; a scope goes on one level at a time
            if not new.endswith("/") and not tail.startswith(" "):
                new += " "
            self._show_hint("")
        else:
            new = completion.common if len(completion.common) > len(word) else word
            self._show_hint(_candidates_text(candidates, word))
        head = head[: completion.start] + new
        self._set_value(head + tail, len(head))

    # --------------------------------------------------------- run or search
    @on(Input.Submitted, "#command-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        line = event.value.strip()
        if not line:
            return
        if line.startswith("/"):
            self._search(line)
            return
        if self.running is not None:
            self._show_hint(f"Still running {self.running!r}; wait for it to finish.")
            return
        history = self.history
        if history is not None:
            history.add(line)
            save_history(history, self._history_path())
        self._set_value("", 0)
        self.run_line(line)

    # --------------------------------------------------------------- search
    def _search(self, line: str) -> None:
        """`/regex`: highlight its matches and show the first from the top of the view;
        the same line again shows the next. The line stays, selected, so Enter moves on
        and typing replaces it (as the tensor view's find box)."""
        text = line[1:]
        output = self.output
        if not text:
            if not output.next_match(1):
                self._show_hint("Type a regular expression after /, e.g. /nan|inf.")
                self.app.bell()
            else:
                self._show_search_status()
            return
        try:
            pattern = search_pattern(text)
        except re.error as err:
            self._show_hint(f"/{text} is not a regular expression: {err}.")
            self.app.bell()
            return
        if output.pattern is not None and output.pattern.pattern == pattern.pattern:
            output.next_match(1)
        else:
            if self.history is not None:  # a search is a line worth ↑ too, as in tfdbg
                self.history.add(line)
                save_history(self.history, self._history_path())
            if not output.search(pattern):
                self._show_hint(f"Nothing in the output matches /{text}.")
                self.app.bell()
                return
        self._set_value(line, len(line))
        self.input.select_all()
        self._show_search_status()

    def _show_search_status(self) -> None:
        output = self.output
        if output.pattern is None or output.match_index is None:
            self._show_hint("")
            return
        count = len(output.matches)
        total = f"{count:,}+" if count >= MAX_MATCHES else f"{count:,}"
        self._show_hint(
            f"/{output.pattern.pattern}: match {output.match_index + 1:,} of {total}"
            " · Enter or n next, N previous (in the output) · Esc ends the search"
        )

    # ----------------------------------------------------------------- run
    def run_line(self, line: str) -> None:
        """Echo `line` and run it in a thread worker; its output follows the echo."""
        self.output.end_search()  # a new output is read from its start, unsearched
        self.running = line
        self._echo_line = self.output.append_echo(line)
        self.output.show_from(self._echo_line)
        self._show_hint(f"running: {line} …")
        self.border_subtitle = "running…"
        self.registry.context.width = self.output.text_width
        self.run_worker(
            lambda: self._run_in_thread(line),
            name="command",
            group="command",
            thread=True,
            exit_on_error=False,
        )

    def _run_in_thread(self, line: str) -> None:
        try:
            output = self.registry.run(line)
        except Exception as err:  # a bug in a command: a sentence, never a traceback
            output = Output.failure(f"{line.split()[0]} failed: {type(err).__name__}: {err}.")
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            self.post_message(CommandFinished(line, output))

    @on(CommandFinished)
    def _finished(self, message: CommandFinished) -> None:
        message.stop()
        self.running = None
        self.output.append_output(message.output)
        self.output.selected = None
        self.output.show_from(self._echo_line)
        self._show_hint("")
        self.border_subtitle = IDLE_SUBTITLE

    def _show_hint(self, text: str) -> None:
        if text == self._hint_text:
            return  # each Esc clears it: an update would lay the panel out again for nothing
        self._hint_text = text
        self.hint.update(Text(printable(text)))
        self.hint.set_class(bool(text), "-shown")


def _is_run(action: str) -> bool:
    """Whether an app action is a run action: every one is `run('<id>')` (run/actions.py)."""
    return action.startswith("run(")


def _candidates_text(candidates: tuple[str, ...], word: str) -> str:
    """The candidates as a shell lists them: what follows the typed folder, up to
    `MAX_CANDIDATES_SHOWN` of them."""
    folder = word[: word.rfind("/") + 1]
    shown = [printable(c[len(folder) :] if c.startswith(folder) else c) for c in candidates]
    text = "  ".join(shown[:MAX_CANDIDATES_SHOWN])
    if len(shown) > MAX_CANDIDATES_SHOWN:
        text += f"  … {len(shown) - MAX_CANDIDATES_SHOWN} more"
    return f"{len(candidates)} candidates: {text}"
