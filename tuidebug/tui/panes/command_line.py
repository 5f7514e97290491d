"""The command line (`:`): tfdbg's commands typed in the TUI, their output in a pane below.

`:` mounts a `CommandLine` panel at the bottom of the main screen the first time (so the
command layer loads on that key, not at start) and focuses its input. Enter runs the line
through the one `CommandRegistry` the app built over its session, in a thread worker (a
`pt` or `lt` may read files or wait for the training), and appends the echo and the
output to `CommandOutput`, a line-API pane that wraps at its width and keeps the last
`MAX_OUTPUT_LINES` lines. Spans that name a node or a tensor are links: a click, or Tab /
Enter in the output, posts `NodeChosen` (and `TensorRequested` for a tensor) to the app,
as the tree and the hit list do.

The commands' semantic styles (`header`, `nan`, …) become component classes of the output,
so the theme colours them; every text reaches the screen as a `rich.text.Text` (the
command layer has made it printable), never as markup. ↑/↓ browse the history by prefix;
it persists in `$XDG_STATE_HOME/tuidebug/command_history` (bounded; a file that cannot be
read or written is no history, never an error).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Static

from tuidebug.commands import CommandRegistry, History, Link, Output, Span
from tuidebug.core.text import printable
from tuidebug.offline.files.regular_file import open_regular
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView
from tuidebug.tui.messages import NodeChosen, TensorRequested

__all__ = [
    "CommandInput",
    "CommandLine",
    "CommandOutput",
    "command_history_file",
    "load_history",
    "save_history",
]

MAX_OUTPUT_LINES = 5000  # lines the output pane keeps, earlier commands' included
MAX_LINE_CHARS = 20_000  # a longer line (a huge eval repr) is cut: it would wrap for pages
MAX_CANDIDATES_SHOWN = 20
HISTORY_LIMIT = 500
MAX_HISTORY_BYTES = 1 << 20
MAX_HISTORY_LINE = 4096
MIN_COMMAND_WIDTH = 40  # numpy wraps printouts at the pane's width, never narrower than this


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


# ====================================================================== output
@dataclass(frozen=True)
class Piece:
    """A run of text in one style; `link` is the id of its link in the pane, if any."""

    text: str
    style: str = ""
    link: int | None = None


Row = tuple[int, int, int]  # (line number, first char, end char): one screen row of a line


def wrap_offsets(text: str, width: int) -> list[tuple[int, int]]:
    """Where `text` breaks into rows of at most `width` cells (a hard wrap, as tfdbg's)."""
    width = max(width, 1)
    if not text:
        return [(0, 0)]
    if text.isascii():  # printable ASCII (the common case): one cell a character
        return [(i, min(i + width, len(text))) for i in range(0, len(text), width)]
    rows: list[tuple[int, int]] = []
    start = cells = 0
    for i, char in enumerate(text):
        size = get_character_cell_size(char)
        if cells + size > width and i > start:
            rows.append((start, i))
            start, cells = i, 0
        cells += size
    rows.append((start, len(text)))
    return rows


class CommandOutput(StyledScrollView, can_focus=True):
    """The commands' output: wrapped lines, links clickable and reachable by Tab."""

    CONTEXT_TITLE = "Command output"
    CONTEXT_HELP = """Links (underlined) name nodes and tensors.
  {command_output.next_link}  next link (shift+Tab / N: previous)
  {command_output.follow}  go to the node in the tree; a tensor opens in the tensor view
  {command_output.back}  back to the command line
  z  maximize the command line (z again or Esc restores)
  click  a link: the same as Enter"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab,n", "next_link(1)", "Next link", id="command_output.next_link"),
        Binding(
            "shift+tab,N",
            "next_link(-1)",
            "Previous link",
            show=False,
            id="command_output.previous_link",
        ),
        Binding("enter", "follow_selected", "Follow", id="command_output.follow"),
        Binding("escape", "back", "Command line", id="command_output.back"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "command-output--header",
        "command-output--dim",
        "command-output--bold",
        "command-output--error",
        "command-output--warning",
        "command-output--nan",
        "command-output--inf",
        "command-output--zero",
        "command-output--highlight",
        "command-output--ok",
        "command-output--echo",
        "command-output--link",
        "command-output--selected",
    }

    DEFAULT_CSS = """
    CommandOutput {
        height: 1fr;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-gutter: stable;
    }
    CommandOutput > .command-output--header { color: $accent; text-style: bold; }
    CommandOutput > .command-output--dim { color: $text-muted; }
    CommandOutput > .command-output--bold { text-style: bold; }
    CommandOutput > .command-output--error { color: $text-error; text-style: bold; }
    CommandOutput > .command-output--warning { color: $text-warning; }
    CommandOutput > .command-output--nan { color: #ff40ff; text-style: bold; }
    CommandOutput > .command-output--inf { color: #ffd200; text-style: bold; }
    CommandOutput > .command-output--zero { color: $text-muted; text-style: italic; }
    CommandOutput > .command-output--highlight { background: $warning 45%; text-style: bold; }
    CommandOutput > .command-output--ok { color: $text-success; }
    CommandOutput > .command-output--echo { color: $text-primary; text-style: bold; }
    CommandOutput > .command-output--link { text-style: underline; }
    CommandOutput > .command-output--selected { text-style: reverse; }
    """

    class Back(Message):
        """Esc in the output: the command line takes the focus again."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[tuple[Piece, ...]] = []
        self._first = 0  # the line number of _lines[0] (older lines were dropped)
        self._rows: list[Row] = []
        self._wrap_width = 0
        self._links: dict[int, tuple[int, Link]] = {}  # link id → (line number, link)
        self._next_link = 0
        self.selected: int | None = None  # the link id Enter follows

    # ------------------------------------------------------------ styles
    def _overlay(self, name: str) -> Style:
        """A component class's own style (no background), cached: resolving CSS costs more
        than drawing a row. A style the pane does not know adds nothing."""
        key = f"+{name}"
        style = self._styles.get(key)
        if style is None:
            component = f"command-output--{name}"
            style = (
                self.get_component_rich_style(component, partial=True)
                if component in self.COMPONENT_CLASSES
                else Style()
            )
            self._styles[key] = style
        return style

    def _style(self, name: str) -> Style:
        """A semantic style as a Rich style over the pane's own."""
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style + self._overlay(name) if name else self.rich_style
            self._styles[name] = style
        return style

    # ------------------------------------------------------------- content
    @property
    def line_count(self) -> int:
        return len(self._lines)

    def plain_lines(self) -> list[str]:
        """The lines as text (tests and the snapshot's checks read them)."""
        return ["".join(piece.text for piece in line) for line in self._lines]

    def links(self) -> list[Link]:
        """Every link still shown, oldest first."""
        return [link for _line, link in self._links.values()]

    def clear(self) -> None:
        self._lines.clear()
        self._rows.clear()
        self._links.clear()
        self._first = 0
        self.selected = None
        self._update_size()
        self.refresh()

    def append_echo(self, line: str) -> int:
        """Append `> line`; returns its line number (the output is shown from there)."""
        number = self._first + len(self._lines)
        self._append([(Piece("> ", "echo"), Piece(printable(line), "echo"))])
        return number

    def append_output(self, output: Output) -> None:
        """A command's lines, then its error sentence (one line, in the error style)."""
        lines: list[list[Piece]] = [self._pieces(spans) for spans in output.lines]
        if len(lines) > MAX_OUTPUT_LINES - 2:
            more = len(lines) - (MAX_OUTPUT_LINES - 2)
            lines = lines[: MAX_OUTPUT_LINES - 2]
            lines.append(
                [Piece(f"… {more:,} more lines; append > FILE to write them all.", "warning")]
            )
        if output.error is not None:
            lines.append([Piece(output.error, "error")])
        self._append(lines)

    def append_note(self, text: str, style: str = "dim") -> None:
        self._append([[Piece(printable(text), style)]])

    def _pieces(self, spans: tuple[Span, ...]) -> list[Piece]:
        pieces: list[Piece] = []
        room = MAX_LINE_CHARS
        for span in spans:
            text = span.text[:room]
            room -= len(text)
            link_id: int | None = None
            if span.link is not None and text:
                link_id = self._next_link
                self._next_link += 1
                self._links[link_id] = (-1, span.link)  # its line number is set on append
            pieces.append(Piece(text, span.style, link_id))
            if room <= 0:
                pieces.append(Piece("…", "dim"))
                break
        return pieces

    def _append(self, lines: Sequence[Sequence[Piece]]) -> None:
        width = self._width()
        for pieces in lines:
            number = self._first + len(self._lines)
            line = tuple(pieces)
            self._lines.append(line)
            for piece in line:
                if piece.link is not None:
                    self._links[piece.link] = (number, self._links[piece.link][1])
            self._rows.extend(self._wrap(number, line, width))
        self._trim()
        self._update_size()
        self.refresh()

    def _trim(self) -> None:
        extra = len(self._lines) - MAX_OUTPUT_LINES
        if extra <= 0:
            return
        del self._lines[:extra]
        self._first += extra
        first = self._first
        self._rows = self._rows[bisect_right(self._rows, (first, -1, -1)) :]
        self._links = {k: v for k, v in self._links.items() if v[0] >= first}
        if self.selected is not None and self.selected not in self._links:
            self.selected = None

    # ------------------------------------------------------------ geometry
    def _width(self) -> int:
        width = self.scrollable_content_region.width
        if width <= 0:
            width = 80  # not laid out yet: rewrapped at the first resize
        self._wrap_width = width
        return width

    @property
    def text_width(self) -> int:
        """The width the commands format for (numpy's line width)."""
        return max(self.scrollable_content_region.width, MIN_COMMAND_WIDTH)

    def _wrap(self, number: int, line: tuple[Piece, ...], width: int) -> list[Row]:
        text = "".join(piece.text for piece in line)
        return [(number, a, b) for a, b in wrap_offsets(text, width)]

    def _rewrap(self) -> None:
        top = (
            self._rows[self.scroll_offset.y]
            if self._rows and self.scroll_offset.y < len(self._rows)
            else None
        )
        width = self._width()
        self._rows = [
            row
            for i, line in enumerate(self._lines)
            for row in self._wrap(self._first + i, line, width)
        ]
        self._update_size()
        if top is not None:  # keep the line that was at the top there
            self.scroll_to(y=self._row_of(top[0], top[1]), animate=False, immediate=True)
        self.refresh()

    def _update_size(self) -> None:
        self.virtual_size = Size(self._wrap_width or 1, len(self._rows))

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._wrap_width:
            self._rewrap()

    def _row_of(self, number: int, char: int) -> int:
        """The screen row showing character `char` of line `number`."""
        return max(bisect_right(self._rows, (number, char, 1 << 62)) - 1, 0)

    def show_from(self, number: int) -> None:
        """Scroll so line `number` is at the top (as far as the content allows): a new
        command's output is read from its start, as a pager shows it."""
        self.scroll_to(y=self._row_of(max(number, self._first), 0), animate=False, immediate=True)

    # -------------------------------------------------------------- render
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = self.scroll_offset.y + y
        if index >= len(self._rows) or width <= 0:
            return Strip.blank(max(width, 0), self._style(""))
        number, start, end = self._rows[index]
        text = Text(end="", no_wrap=True)
        at = 0
        for piece in self._lines[number - self._first]:
            a, b = at, at + len(piece.text)
            at = b
            if b <= start or a >= end:
                continue
            part = piece.text[max(start, a) - a : min(end, b) - a]
            style = self._style(piece.style)
            if piece.link is not None:
                style += self._link_style(piece.link)
            text.append(part, style)
        strip = Strip(list(text.render(self.app.console)))
        return strip.crop_extend(0, width, self._style(""))

    def _link_style(self, link_id: int) -> Style:
        overlay = self._overlay("link")
        if link_id == self.selected:
            overlay += self._overlay("selected")
        return overlay + Style.from_meta({"@click": f"follow_link({link_id})"})

    def link_positions(self) -> list[tuple[Link, int, int]]:
        """(link, x, y) of the first cell of each link on screen, relative to the pane."""
        found: list[tuple[Link, int, int]] = []
        top = self.scroll_offset.y
        for y in range(self.scrollable_content_region.height):
            if top + y >= len(self._rows):
                break
            number, start, end = self._rows[top + y]
            at = 0
            for piece in self._lines[number - self._first]:
                a, b = at, at + len(piece.text)
                at = b
                if piece.link is not None and start <= a < end:
                    line_text = "".join(p.text for p in self._lines[number - self._first])
                    x = cell_len(line_text[start:a])
                    found.append((self._links[piece.link][1], x, y))
        return found

    # --------------------------------------------------------------- links
    def action_next_link(self, step: int) -> None:
        """Select the next (step 1) or previous (-1) link; from none, the first one in
        view (or the last, going back)."""
        ids = list(self._links)
        if not ids:
            self.app.bell()
            return
        if self.selected in self._links:
            at = ids.index(self.selected) + step
            chosen = ids[at % len(ids)]
        else:
            top = self.scroll_offset.y
            bottom = top + max(self.scrollable_content_region.height - 1, 0)
            rows = [self._row_of(self._links[i][0], 0) for i in ids]
            if step > 0:
                chosen = next((i for i, r in zip(ids, rows, strict=True) if r >= top), ids[0])
            else:
                before = [i for i, r in zip(ids, rows, strict=True) if r <= bottom]
                chosen = before[-1] if before else ids[-1]
        self.select_link(chosen)

    def select_link(self, link_id: int) -> None:
        self.selected = link_id
        number = self._links[link_id][0]
        row = self._row_of(number, self._link_start(link_id))
        if (
            not self.scroll_offset.y
            <= row
            < self.scroll_offset.y + self.scrollable_content_region.height
        ):
            self.scroll_to(y=max(row - 1, 0), animate=False, immediate=True)
        self.refresh()

    def _link_start(self, link_id: int) -> int:
        number = self._links[link_id][0]
        at = 0
        for piece in self._lines[number - self._first]:
            if piece.link == link_id:
                return at
            at += len(piece.text)
        return 0

    def action_follow_selected(self) -> None:
        if self.selected is None or self.selected not in self._links:
            self.action_next_link(1)  # Enter with nothing selected picks the first in view
            if self.selected is None:
                return
        self.action_follow_link(self.selected)

    def action_follow_link(self, link_id: int) -> None:
        """Go to the link's node; a tensor link also opens the tensor (at its iteration)."""
        found = self._links.get(link_id)
        if found is None:
            return
        self.selected = link_id
        self.refresh()
        link = found[1]
        self.post_message(NodeChosen(link.graph, link.node))
        if link.slot is not None:
            self.post_message(
                TensorRequested(link.graph, link.node, link.slot, iteration=link.iteration)
            )

    def action_back(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        self.post_message(self.Back())


# ======================================================================= input
class CommandInput(Input):
    """The line typed; its keys (Tab, ↑, ↓, Esc) are the panel's bindings."""

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
  {command.links}  to the output, where Tab / Enter follow links
  {command.close}  close (the output stays for the next :)"""

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
    CommandLine:focus-within { border: round $accent; }
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
        self.border_title = "Command line"
        self.border_subtitle = "Tab completes · ↑↓ history · shift+Tab links · Esc closes"

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
        self.add_class("-open")
        self.screen.add_class("-command-open")
        self.input.focus()

    def close(self) -> None:
        screen = self.screen
        if screen.maximized is not None and self._holds(screen.maximized):
            screen.minimize()
        self.remove_class("-open")
        screen.remove_class("-command-open")
        self._show_hint("")
        back = self._return_to
        self._return_to = None
        if back is not None and back.is_attached and back.display:
            back.focus()
        else:
            screen.focus_next()

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
        screen = self.screen
        if screen.maximized is not None and self._holds(screen.maximized):
            screen.minimize()  # Esc first restores the layout, as in the panes
            return
        self.close()

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
        self.input.focus()

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

    # ----------------------------------------------------------------- run
    @on(Input.Submitted, "#command-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        line = event.value.strip()
        if not line:
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

    def run_line(self, line: str) -> None:
        """Echo `line` and run it in a thread worker; its output follows the echo."""
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
        self.border_subtitle = "Tab completes · ↑↓ history · shift+Tab links · Esc closes"

    def _show_hint(self, text: str) -> None:
        self.hint.update(Text(printable(text)))
        self.hint.set_class(bool(text), "-shown")


def _candidates_text(candidates: tuple[str, ...], word: str) -> str:
    """The candidates as a shell lists them: what follows the typed folder, up to
    `MAX_CANDIDATES_SHOWN` of them."""
    folder = word[: word.rfind("/") + 1]
    shown = [printable(c[len(folder) :] if c.startswith(folder) else c) for c in candidates]
    text = "  ".join(shown[:MAX_CANDIDATES_SHOWN])
    if len(shown) > MAX_CANDIDATES_SHOWN:
        text += f"  … {len(shown) - MAX_CANDIDATES_SHOWN} more"
    return f"{len(candidates)} candidates: {text}"
