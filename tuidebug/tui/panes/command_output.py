"""The command line's output pane: tfdbg's command output, wrapped at its width, its
links (nodes and tensors) and the search of it (`/regex`).

`CommandOutput` keeps the last `MAX_OUTPUT_LINES` lines and draws them itself (a line-API
pane). It is the `CommandLine`'s (command_line.py), which it talks to by messages: Esc
(`Back`), a printable key that is the prompt's (`Typed`), a move of the search
(`SearchMoved`). `search_pattern` and `find_matches` are the search without Textual.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from tuidebug.commands import Link, Output, Span
from tuidebug.core.text import printable
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView
from tuidebug.tui.messages import NodeChosen, TensorRequested

__all__ = [
    "MAX_MATCHES",
    "MAX_OUTPUT_LINES",
    "CommandOutput",
    "Piece",
    "find_matches",
    "is_printable_key",
    "search_pattern",
    "wrap_offsets",
]

MAX_OUTPUT_LINES = 5000  # lines the output pane keeps, earlier commands' included
MAX_LINE_CHARS = 20_000  # a longer line (a huge eval repr) is cut: it would wrap for pages
MIN_COMMAND_WIDTH = 40  # numpy wraps printouts at the pane's width, never narrower than this
MAX_MATCHES = 10_000  # matches a search keeps: enough to step through, bounded memory


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


Match = tuple[int, int, int]  # (line number, first char, end char) of a search match


def search_pattern(text: str) -> re.Pattern[str]:
    """The regular expression of `/text`, case-insensitive unless `text` has a capital
    (vim's smartcase: `/nan` finds NaN and nan, `/MatMul` only MatMul); `re.error` when
    it is none."""
    flags = 0 if any(char.isupper() for char in text) else re.IGNORECASE
    return re.compile(text, flags)


def find_matches(
    lines: Sequence[str], first: int, pattern: re.Pattern[str], limit: int = MAX_MATCHES
) -> list[Match]:
    """Every non-empty match of `pattern` in `lines` (numbered from `first`), at most
    `limit`: an empty match (`^`, `x*`) marks nothing the eye could find."""
    found: list[Match] = []
    for offset, line in enumerate(lines):
        for match in pattern.finditer(line):
            if match.end() > match.start():
                found.append((first + offset, match.start(), match.end()))
                if len(found) >= limit:
                    return found
    return found


# Keys Textual names without finding their character (unicodedata calls "/" SOLIDUS and
# "-" HYPHEN-MINUS), so its own filter would leave the app's `/` binding live in a box
# that types it, and the footer would offer "/ Filter" there.
_UNNAMED_CHARACTERS = {"slash": "/", "minus": "-"}


def is_printable_key(key: str, character: str | None) -> bool:
    """Whether `key` types a character (for `check_consume_key`)."""
    character = character or _UNNAMED_CHARACTERS.get(key)
    return character is not None and character.isprintable()


class CommandOutput(StyledScrollView, can_focus=True):
    """The commands' output: wrapped lines, links clickable and reachable by Tab."""

    CONTEXT_TITLE = "Command output"
    CONTEXT_HELP = """Links (underlined) name nodes and tensors.
  {command_output.next_link}  next link ({command_output.previous_link}: previous)
  {command_output.next_match} / {command_output.previous_match}  next / previous match of the search (/), else link
  {command_output.follow}  go to the node in the tree; a tensor opens in the tensor view
  {command_output.back}  end the search; else close the command line
  {command_output.maximize}  maximize the command line (z again or Esc restores)
  /  search the output (a regular expression; a capital makes it case-sensitive)
  other letters  go to the prompt (no other key of the app works here)
  click  a link: the same as Enter"""

    # n / N move through links as before, or through the search's matches while there is
    # one (tfdbg's and vim's keys); each has an id of its own so keys.toml can remap it.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "next_link(1)", "Next link", id="command_output.next_link"),
        Binding(
            "shift+tab",
            "next_link(-1)",
            "Previous link",
            show=False,
            id="command_output.previous_link",
        ),
        Binding("n", "next_match(1)", "Next", show=False, id="command_output.next_match"),
        Binding("N", "next_match(-1)", "Previous", show=False, id="command_output.previous_match"),
        Binding("enter", "follow_selected", "Follow", id="command_output.follow"),
        Binding("escape", "back", "Close", id="command_output.back"),
        # z stays the pane's maximize key here, where every other letter is typed
        Binding("z", "app.maximize_pane", "Maximize", show=False, id="command_output.maximize"),
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
        "command-output--match",
        "command-output--match-current",
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
    /* as the tensor table's find: a background only, so NaN/Inf keep their colours */
    CommandOutput > .command-output--match { background: $warning 45%; text-style: bold; }
    CommandOutput > .command-output--match-current {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    """

    class Back(Message):
        """Esc in the output with no search: the command line closes."""

    class Typed(Message):
        """A printable key pressed in the output: it goes to the prompt (`:` only moves
        there, as it opens the prompt elsewhere)."""

        def __init__(self, character: str) -> None:
            super().__init__()
            self.character = character

    class SearchMoved(Message):
        """n / N moved to another match, or Esc ended the search: the panel's hint line
        says where the search stands."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[tuple[Piece, ...]] = []
        self._first = 0  # the line number of _lines[0] (older lines were dropped)
        self._rows: list[Row] = []
        self._wrap_width = 0
        self._links: dict[int, tuple[int, Link]] = {}  # link id → (line number, link)
        self._next_link = 0
        self.selected: int | None = None  # the link id Enter follows
        # the search (/regex): its matches in line order and the one shown
        self.pattern: re.Pattern[str] | None = None
        self.matches: list[Match] = []
        self._matches_on: dict[int, list[tuple[int, int, int]]] = {}  # line → (a, b, index)
        self.match_index: int | None = None

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
        self.end_search()
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
            # the sentence may quote a name from the graph: escaped as the spans are
            lines.append([Piece(printable(output.error), "error")])
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
        if self.pattern is not None:  # the matches in dropped lines go with them
            shown = self.matches[self.match_index] if self.match_index is not None else None
            self._set_matches([m for m in self.matches if m[0] >= first])
            self.match_index = self.matches.index(shown) if shown in self.matches else None

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
        for a, b, match in self._matches_on.get(number, ()):
            if a < end and b > start:
                current = match == self.match_index
                overlay = self._overlay("match-current" if current else "match")
                text.stylize(overlay, max(a, start) - start, min(b, end) - start)
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

    # -------------------------------------------------------------- search
    @property
    def searching(self) -> bool:
        return self.pattern is not None

    def search(self, pattern: re.Pattern[str]) -> int:
        """Highlight every match of `pattern` and show the first one from the top of the
        view on; returns how many there are (0: no search is left active)."""
        self.end_search()
        matches = find_matches(self.plain_lines(), self._first, pattern)
        if not matches:
            self.refresh()
            return 0
        self.pattern = pattern
        self._set_matches(matches)
        top = self._rows[self.scroll_offset.y] if self.scroll_offset.y < len(self._rows) else None
        start = (top[0], top[1]) if top is not None else (self._first, 0)
        self._show_match(next((i for i, m in enumerate(matches) if m[:2] >= start), 0))
        return len(matches)

    def _set_matches(self, matches: list[Match]) -> None:
        self.matches = matches
        self._matches_on = {}
        for index, (number, a, b) in enumerate(matches):
            self._matches_on.setdefault(number, []).append((a, b, index))

    def next_match(self, step: int) -> bool:
        """Show the next (1) or previous (-1) match, wrapping around; False if no search."""
        if self.pattern is None or not self.matches:
            return False
        at = self.match_index
        self._show_match(0 if at is None else (at + step) % len(self.matches))
        return True

    def _show_match(self, index: int) -> None:
        self.match_index = index
        number, a, _b = self.matches[index]
        row = self._row_of(number, a)
        height = self.scrollable_content_region.height
        if not self.scroll_offset.y <= row < self.scroll_offset.y + height:
            # a line of context above it, as a link is shown
            self.scroll_to(y=max(row - 1, 0), animate=False, immediate=True)
        self.refresh()

    def end_search(self) -> bool:
        """No search, no highlight; False if there was none."""
        if self.pattern is None:
            return False
        self.pattern = None
        self._set_matches([])
        self.match_index = None
        self.refresh()
        return True

    def action_next_match(self, step: int) -> None:
        """n / N: the search's next / previous match; with no search, the link's."""
        if self.next_match(step):
            self.post_message(self.SearchMoved())
        else:
            self.action_next_link(step)

    # ---------------------------------------------------- keys for the prompt
    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every printable key is the output's (its own n / N / z) or the prompt's: so
        the app's letter keys (c continues, w watches, 1–6 …) never fire here, and the
        footer does not offer them."""
        return is_printable_key(key, character)

    def on_key(self, event: events.Key) -> None:
        """A printable key that is not one of the output's own goes to the prompt, as if
        the user had typed it there (reading the output must not make a letter a command)."""
        character = event.character
        if not event.is_printable or character is None:
            return
        active = self.screen.active_bindings.get(event.key)
        if active is not None and active.node is self:
            return  # n, N, z (or what keys.toml made them): the binding acts
        event.stop()
        event.prevent_default()
        self.post_message(self.Typed(character))

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
        """Esc: end the search if there is one (as in the tensor view), else close the
        command line, maximized or not, in one press."""
        if self.end_search():
            self.post_message(self.SearchMoved())
            return
        self.post_message(self.Back())
