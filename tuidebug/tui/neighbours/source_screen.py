"""The source view: a file of the graph's stacks, each line with the nodes it created
(tfdbg's `ps`), opened from the stack pane on one of its lines.

`commands/source.py` reads the file (the dump's own copy when it holds one, as a tfdbg dump
does: no local file needed; else bounded, regular files only: its path comes from the
graph) and indexes the nodes per line; when the file is not on this machine (a dump
copied from the training server), or is outside the source roots (a stack may name
`/etc/shadow`: the dump's folder, the working folder, `TUIDEBUG_SOURCE_ROOTS`), it gives
the lines the stacks quote, and the view says so (and, for the latter, how to allow it). `SourceCode` draws only the lines on screen (`ScrollView` + `render_line`), so a file
of 10⁵ lines opens as fast as a short one; syntax colours (Rich's `Syntax`, Pygments)
arrive from a thread worker after the first paint. Every line is escaped before it is
coloured or shown: a file is untrusted text too.

The cursor starts on the stack's line, centred. The nodes created at the cursor's line are
listed under the code: Enter (or a click on the line's note) goes to its node, or to the
list when there are several; Enter on a node of the list goes there in the tree.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from tuidebug.commands.source import SourceLine, SourceText, source_lines
from tuidebug.core.graph import Graph, distinct_short_names
from tuidebug.core.text import printable
from tuidebug.tui.kit.labels import plain, shown
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView

MAX_HIGHLIGHT_CHARS = 1 << 20  # larger files stay uncoloured: Pygments takes seconds on them
MAX_NODES_LISTED = 500
NOTE_NAMES = 3  # node names written after a line; the rest is counted

NodeRef = tuple[str, str]  # (graph name, node name)


def code_text(line: str) -> str:
    """A source line as the view shows it: tabs expanded, anything else unprintable escaped."""
    return printable(line.expandtabs(4))


def node_labels(nodes: Sequence[NodeRef]) -> dict[str, str]:
    """Each node's name as a line's note or its node list shows it: the short name, with
    the scope tail that tells it apart from another node shown there with the same one.
    Only the nodes shown count: a line of `model(x)` created 10⁵ nodes, and its note is
    drawn on every frame."""
    return distinct_short_names(name for _graph, name in nodes)


def line_note(nodes: Sequence[NodeRef]) -> str:
    """`◂ Conv2D-op5, ReLU-op6 +3`: the nodes a line created, short (`fc1/MatMul-op0`,
    `fc2/MatMul-op0`: a helper called from several cells creates namesakes on one line)."""
    if not nodes:
        return ""
    labels = node_labels(nodes[:NOTE_NAMES])
    names = [printable(labels[name]) for _graph, name in nodes[:NOTE_NAMES]]
    more = f" +{len(nodes) - NOTE_NAMES}" if len(nodes) > NOTE_NAMES else ""
    return "◂ " + ", ".join(names) + more


def highlight(lines: Sequence[str], path: str) -> list[Text] | None:
    """The (escaped) lines coloured by Pygments' lexer for `path`; None when there is no
    lexer for it or the file is too large to colour."""
    if sum(len(line) + 1 for line in lines) > MAX_HIGHLIGHT_CHARS:
        return None
    from rich.syntax import Syntax  # Pygments loads with the first file shown

    code = "\n".join(lines)
    lexer = Syntax.guess_lexer(path, code)  # by the file name, its content between namesakes
    if lexer == "default":
        return None
    # ansi_dark: the terminal's own 16 colours, which suit its background, light or dark
    text = Syntax(code, lexer, theme="ansi_dark").highlight(code)
    text.style = ""
    parts = text.split("\n", allow_blank=True)
    return list(parts[: len(lines)]) if len(parts) >= len(lines) else None


class SourceCode(StyledScrollView, can_focus=True):
    """The file's lines with a gutter (● a line that created nodes, ▶ the stack's line)
    and the created nodes after each line."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "source-code--gutter",
        "source-code--note",
        "source-code--target",
        "source-code--cursor",
    }

    DEFAULT_CSS = """
    SourceCode { height: 1fr; background: $surface; }
    SourceCode > .source-code--gutter { color: $text-muted; }
    SourceCode > .source-code--note { color: $accent; }
    SourceCode > .source-code--target { background: $warning 25%; }
    SourceCode > .source-code--cursor {
        color: $block-cursor-foreground; background: $block-cursor-background;
    }
    SourceCode:blur > .source-code--cursor { background: $block-cursor-blurred-background; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False, id="source.up"),
        Binding("down", "cursor(1)", "Down", show=False, id="source.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="source.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="source.page_down"),
        Binding("home", "edge(0)", "First line", show=False, id="source.first"),
        Binding("end", "edge(1)", "Last line", show=False, id="source.last"),
        Binding("n", "next_noted(1)", "Next with nodes", id="source.next"),
        Binding("N", "next_noted(-1)", "Previous with nodes", id="source.previous"),
        Binding("enter", "choose", "Go to node", id="source.choose"),
    ]

    class CursorMoved(Message):
        """The cursor is on another line."""

    class Chosen(Message):
        """Enter (or a click on its note) on the cursor's line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[SourceLine] = []
        self.codes: list[str] = []  # escaped, tabs expanded
        self.coloured: list[Text] | None = None
        self.cursor = 0  # row (index into `lines`)
        self.target: int | None = None  # the row of the stack's line
        self._gutter = 0
        self._moved = False  # the user moved the cursor: a resize no longer re-centres

    # ------------------------------------------------------------------- data
    def set_lines(self, lines: list[SourceLine], target_line: int | None) -> None:
        """Show `lines`; the cursor on `target_line` (the nearest line when it is absent)."""
        self.lines = lines
        self.codes = [code_text(line.text) for line in lines]
        self.coloured = None
        self._gutter = len(str(lines[-1].line_no)) + 4 if lines else 4
        width = max(
            (
                cell_len(code) + 2 + cell_len(line_note(line.nodes))
                for code, line in zip(self.codes, lines, strict=True)
            ),
            default=0,
        )
        self.virtual_size = Size(self._gutter + width, len(lines))
        self.target = self.row_of(target_line) if target_line is not None else None
        self.cursor = self.target if self.target is not None else 0
        self._moved = False
        self.refresh()
        self.call_after_refresh(self.centre_cursor)
        self.post_message(self.CursorMoved())

    def set_coloured(self, coloured: list[Text]) -> None:
        if len(coloured) == len(self.lines):
            self.coloured = coloured
            self.refresh()

    def row_of(self, line_no: int) -> int | None:
        """The row showing `line_no`, else the nearest row; None when there are no lines."""
        if not self.lines:
            return None
        if self.lines[-1].line_no == len(self.lines) and 1 <= line_no <= len(self.lines):
            return line_no - 1  # the whole file: row = line - 1
        return min(range(len(self.lines)), key=lambda r: abs(self.lines[r].line_no - line_no))

    @property
    def line(self) -> SourceLine | None:
        return self.lines[self.cursor] if 0 <= self.cursor < len(self.lines) else None

    # ----------------------------------------------------------------- moving
    def centre_cursor(self) -> None:
        height = self.scrollable_content_region.height
        self.scroll_to(y=max(0, self.cursor - height // 2), animate=False, immediate=True)

    def on_resize(self, _event: events.Resize) -> None:
        # the first centring can run before the layout's final height (the note above
        # wraps, the terminal is resized): keep the stack's line centred until the user moves
        if not self._moved:
            self.call_after_refresh(self.centre_cursor)

    def set_cursor(self, row: int) -> None:
        if not self.lines:
            return
        row = max(0, min(row, len(self.lines) - 1))
        if row == self.cursor:
            return
        self.cursor = row
        self._moved = True
        height = self.scrollable_content_region.height
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)
        self.refresh()
        self.post_message(self.CursorMoved())

    def action_cursor(self, change: int) -> None:
        self.set_cursor(self.cursor + change)

    def action_page(self, direction: int) -> None:
        self.set_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_edge(self, end: int) -> None:
        self.set_cursor(len(self.lines) - 1 if end else 0)

    def action_next_noted(self, direction: int) -> None:
        rows = range(self.cursor + direction, len(self.lines) if direction > 0 else -1, direction)
        found = next((r for r in rows if self.lines[r].nodes), None)
        if found is None:
            self.notify(
                "No further line created a node."
                if direction > 0
                else "No earlier line created a node."
            )
            return
        self.set_cursor(found)

    def action_choose(self) -> None:
        if self.line is not None:
            self.post_message(self.Chosen())

    def on_click(self, event: events.Click) -> None:
        row = event.y + round(self.scroll_y)
        if not 0 <= row < len(self.lines):
            return
        self.set_cursor(row)
        line = self.lines[row]
        x = event.x + round(self.scroll_x)
        note_at = self._gutter + cell_len(self.codes[row]) + 2
        if line.nodes and x >= note_at:
            self.post_message(self.Chosen())  # a click on the note follows it

    # ----------------------------------------------------------------- render

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.style_of("")
        row = round(self.scroll_y) + y
        if row >= len(self.lines) or width <= 0:
            return Strip.blank(max(width, 0), base)
        line = self.lines[row]
        if row == self.cursor:
            background = base + self.style_of("source-code--cursor")
        elif row == self.target:
            background = base + self.style_of("source-code--target")
        else:
            background = base
        marker = "▶" if row == self.target else ("●" if line.nodes else " ")
        gutter = f"{marker}{line.line_no:>{self._gutter - 4}} │ "
        text = Text(gutter, style=self.style_of("source-code--gutter"))
        coloured = self.coloured
        if coloured is not None:
            text.append_text(coloured[row])
        else:
            text.append(self.codes[row])
        note = line_note(line.nodes)
        if note:
            text.append("  ")
            text.append(note, style=self.style_of("source-code--note"))
        segments = [
            Segment(segment.text, background + segment.style if segment.style else background)
            for segment in text.render(self.app.console)
        ]
        x = round(self.scroll_x)
        return Strip(segments).crop_extend(x, x + width, background)


class SourceScreen(ModalScreen[NodeRef | None]):
    """A source file around a stack line; answers the (graph, node) chosen, or None."""

    # The help screen (help_screen.context_help) reads it from the focused widget's screen.
    CONTEXT_TITLE = "Source view"
    CONTEXT_HELP = """A file of the stacks, opened on the stack line; ◂ notes the nodes a line created.
  {source.up} {source.down} {source.page_up} {source.page_down}  move the cursor
  {source.first} / {source.last}  first / last line
  {source.next} / {source.previous}  next / previous line that created nodes
  {source.choose}  go to the line's node (several: to the list under the code, Enter there)
  click  a line's note: the same as Enter
  {source.close}  close"""

    DEFAULT_CSS = """
    SourceScreen { align: center middle; }
    SourceScreen > Vertical {
        width: 100%; height: 100%; border: thick $accent; background: $surface; padding: 0 1;
    }
    SourceScreen #source-title { text-style: bold; }
    SourceScreen #source-note { color: $text-muted; height: auto; }
    SourceScreen #source-nodes-title { height: 1; background: $panel; padding: 0 1; }
    SourceScreen #source-nodes { height: auto; max-height: 6; border: none; }
    SourceScreen #source-hint { color: $text-muted; height: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="source.close"),
        Binding("q", "close", "Close", show=False),
        # a modal screen hides the app's keys: its help key is its own (CONTEXT_HELP)
        Binding("question_mark,f1", "app.help", "Help", show=False, id="source.help"),
    ]

    def __init__(
        self,
        graphs: Sequence[Graph],
        path: str,
        line_no: int | None,
        roots: Sequence[str] = (),
        *,
        maps: Sequence[tuple[str, str]] = (),
        dumped: Callable[[str], list[str] | None] | None = None,
    ) -> None:
        """`roots`: the folders whose files a stack's path may show (`source_roots`);
        `maps`: where another machine's paths lie here (`path_maps`); `dumped`: the dump's
        own copy of a file (`DebugSession.source_text`), shown first when it has one."""
        super().__init__()
        self._dumped = dumped
        self._graphs = list(graphs)
        self._path = path
        self._roots = tuple(roots)
        self._maps = tuple(maps)
        self._line_no = line_no
        self._created: list[NodeRef] = []  # the nodes listed under the code
        self.found_path = path
        self.whole_file: bool | None = None  # None: still reading
        self.code = SourceCode(id="source-code")

    def compose(self) -> ComposeResult:
        where = self._path + (f":{self._line_no}" if self._line_no is not None else "")
        with Vertical():
            yield Label(plain(where), id="source-title")
            yield Static("Reading the file…", id="source-note", markup=False)
            yield self.code
            yield Static("", id="source-nodes-title", markup=False)
            yield OptionList(id="source-nodes", compact=True)
            yield Static(
                "n / N next / previous line with nodes · Enter goes to its node · Esc closes",
                id="source-hint",
                markup=False,
            )

    def on_mount(self) -> None:
        self.code.focus()
        self._read()

    @work(thread=True, exclusive=True, group="source")
    def _read(self) -> None:
        """Read and index in a thread (a big file, a graph of 10⁵ nodes), colour after."""
        worker = get_current_worker()
        found = source_lines(
            self._graphs, self._path, self._roots, maps=self._maps, dumped=self._dumped
        )
        if worker.is_cancelled:
            return
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            self.app.call_from_thread(self._shown, found)
        lines = found.lines
        if not found.whole or not lines:
            return
        coloured = highlight([code_text(line.text) for line in lines], found.path)
        if coloured is None or worker.is_cancelled:
            return
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(self.code.set_coloured, coloured)

    def _shown(self, source: SourceText) -> None:
        lines, found, whole = source.lines, source.path, source.whole
        self.found_path = found
        self.whole_file = whole
        try:
            note = self.query_one("#source-note", Static)
        except NoMatches:  # closed before the file was read
            return
        noted = sum(1 for line in lines if line.nodes)
        if whole:
            text = f"{len(lines)} lines · {noted} created nodes (●)"
            if source.from_dump:
                text += " · from the dump's own copy of the file"
            elif found != self._path:
                text += f" · read from {printable(found)}"
            if self._line_no is not None and self._line_no > len(lines):
                text += (
                    f" · the file has no line {self._line_no}: it changed since the graph was made?"
                )
        else:
            plural = "s" if len(lines) != 1 else ""
            if source.outside:  # here, but a stack's path outside the roots: says how to allow
                quoted = f"Only the {len(lines)} line{plural} its stacks quote are shown."
                text = f"{printable(source.outside)} {quoted if lines else 'No stack quotes a line of it.'}"
            elif lines:
                text = (
                    f"The file is not on this machine: only the {len(lines)} line{plural} its "
                    "stacks quote are shown."
                )
            else:
                text = "The file is not on this machine, and no stack quotes a line of it."
        note.update(text)
        self.code.set_lines(lines, self._line_no)

    @on(SourceCode.CursorMoved)
    def _cursor_moved(self, event: SourceCode.CursorMoved) -> None:
        event.stop()
        line = self.code.line
        title = self.query_one("#source-nodes-title", Static)
        nodes_list = self.query_one("#source-nodes", OptionList)
        nodes_list.clear_options()
        self._created = list(line.nodes) if line is not None else []
        if line is None:
            title.update("")
            return
        count = len(self._created)
        title.update(
            f"line {line.line_no}: {count} node{'s' if count != 1 else ''} created here"
            if count
            else f"line {line.line_no}: no node created here"
        )
        several_graphs = len({graph for graph, _name in self._created}) > 1
        labels = node_labels(self._created[:MAX_NODES_LISTED])
        options = []
        for index, (graph_name, name) in enumerate(self._created[:MAX_NODES_LISTED]):
            graph = next((g for g in self._graphs if g.name == graph_name), None)
            node = graph.get(name) if graph is not None else None
            label = plain(labels[name], style="cyan")
            if node is not None:
                label.append(f"  {shown(node.op_type)}", style="dim")
                label.append(f"  {shown(node.scope)}", style="dim")
            if several_graphs:
                label.append(f"  ({shown(graph_name)})", style="dim")
            options.append(Option(label, id=str(index)))
        if count > MAX_NODES_LISTED:
            more = count - MAX_NODES_LISTED
            options.append(Option(Text(f"… {more} more", style="dim"), disabled=True))
        nodes_list.add_options(options)

    @on(SourceCode.Chosen)
    def _line_chosen(self, event: SourceCode.Chosen) -> None:
        event.stop()
        if not self._created:
            self.notify("No node was created at this line.")
        elif len(self._created) == 1:
            self.dismiss(self._created[0])
        else:
            nodes_list = self.query_one("#source-nodes", OptionList)
            nodes_list.highlighted = 0
            nodes_list.focus()

    @on(OptionList.OptionSelected, "#source-nodes")
    def _node_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self._created[int(event.option.id)])

    def action_close(self) -> None:
        if self.focused is not None and self.focused.id == "source-nodes":
            self.code.focus()  # Esc in the node list returns to the code first
            return
        self.dismiss(None)


__all__ = ["SourceCode", "SourceScreen", "code_text", "highlight", "line_note", "node_labels"]
