"""The help screen (`?` / F1): every key of the app, and help for the pane you came from.

Context help is read from a `CONTEXT_HELP` class attribute of the focused widget or its
nearest ancestor that has one (posting's habit), so a pane documents itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

KeyRow = tuple[str, str, str]  # key, what it does, when it is unavailable (or "")


def context_help(
    widget: Widget | None, key_for: Callable[[str], str] | None = None
) -> tuple[str, str] | None:
    """(pane title, help text) of the focused widget's pane, if it documents itself.

    In the text, `{binding id}` stands for the key that runs that binding now (`key_for`,
    e.g. the app's `key_hint`, so a remapped key shows remapped), and the "  key  what it
    does" rows are lined up after the keys are filled in."""
    node = widget
    while node is not None:
        text = getattr(type(node), "CONTEXT_HELP", "")
        if text:
            title = getattr(type(node), "CONTEXT_TITLE", type(node).__name__)
            return title, _fill_keys(text, key_for or (lambda binding_id: binding_id))
        parent = node.parent
        node = parent if isinstance(parent, Widget) else None
    return None


_PLACEHOLDER = re.compile(r"\{([a-z_][\w.]*)\}")
_KEY_ROW = re.compile(r"^  (\S.*?) {2,}(\S.*)$")


def _fill_keys(text: str, key_for: Callable[[str], str]) -> str:
    lines = _PLACEHOLDER.sub(lambda m: key_for(m.group(1)), text).splitlines()
    rows = [_KEY_ROW.match(line) for line in lines]
    width = max((len(m.group(1)) for m in rows if m), default=0) + 3
    return "\n".join(
        f"  {m.group(1).ljust(width)}{m.group(2)}" if m else line
        for line, m in zip(lines, rows, strict=True)
    )


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 96; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    HelpScreen #help-title { text-style: bold; padding: 1 0 0 0; }
    HelpScreen VerticalScroll { height: 1fr; }
    HelpScreen #help-footer { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("f1", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(
        self, keys: Sequence[KeyRow], context: tuple[str, str] | None, *, close_key: str = "Esc"
    ) -> None:
        """`keys`: the rows to list, with the keys as they are bound now (the app reads
        them through the user's keymap, so a remapped key shows remapped); `close_key`:
        the key of `help.close` for the footer line, for the same reason."""
        super().__init__()
        self._keys = list(keys)
        self._pane_help = context
        self._close_key = close_key

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("tuidebug — keys", id="help-title")
            with VerticalScroll():
                if self._pane_help is not None:
                    title, text = self._pane_help
                    yield Static(Text.assemble(("Here: ", "bold"), (title, "bold cyan")))
                    yield Static(text, id="help-context", markup=False)
                    yield Static("")
                yield Static(self._table(), id="help-keys")
            yield Static(
                f"{self._close_key} closes · the mouse works everywhere too",
                id="help-footer",
                markup=False,
            )

    def _table(self) -> Table:
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        table.add_column("not available now", style="dim")
        for key, does, unavailable in self._keys:
            table.add_row(key, does, unavailable)
        return table

    def action_close(self) -> None:
        self.dismiss(None)
