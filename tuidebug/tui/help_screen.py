"""The help screen (`?` / F1): every key of the app, and help for the pane you came from.

Context help is read from a `CONTEXT_HELP` class attribute of the focused widget or its
nearest ancestor that has one (posting's habit), so a pane documents itself.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def context_help(widget: Widget | None) -> tuple[str, str] | None:
    """(pane title, help text) of the focused widget's pane, if it documents itself."""
    node = widget
    while node is not None:
        text = getattr(type(node), "CONTEXT_HELP", "")
        if text:
            return getattr(type(node), "CONTEXT_TITLE", type(node).__name__), text
        parent = node.parent
        node = parent if isinstance(parent, Widget) else None
    return None


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
