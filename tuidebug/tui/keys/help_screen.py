"""The help screen (`?` / F1): every key of the app, and help for the pane you came from.

The rows are the app's bindings with their keys as bound now (`key_rows`), worded by the
run-action table and `APP_HELP`, and greyed with the reason an action cannot run now.
Context help is read from a `CONTEXT_HELP` class attribute of the focused widget or its
nearest ancestor that has one (posting's habit), so a pane documents itself.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from tuidebug.tui.keys.keymap import active_keys, key_display
from tuidebug.tui.run.actions import RUN_ACTIONS, action_id

KeyRow = tuple[str, str, str]  # key, what it does, when it is unavailable (or "")

# What each app action does, as the help words it (the binding's description is short).
APP_HELP: Mapping[str, str] = {
    **{action.id: action.help for action in RUN_ACTIONS},
    "filter": "filter: tree name filter, stack search, hit filters",
    "command_line": "command line: tfdbg's lt, pt, ni, li, lo, ps, eval (help lists them)",
    "back": "back",
    "help": "this help",
    "maximize_pane": "maximize the focused pane (again or Esc restores; 1–6 switch panes)",
    "visit_back": "back to the node or tensor visited before (in the tensor view: Alt+← only)",
    "visit_forward": "forward again after going back (in the tensor view: Alt+→ only)",
    "quit": "quit",
    "divergence": "divergence list: where this dump first differs from a golden one "
    "(offline --against GOLDEN, or Ctrl+P)",
    # the dividers (navigation/pane_sizes.py): sizes kept for the session
    "resize_pane('left', -1)": "left column narrower (the divider moves left)",
    "resize_pane('left', 1)": "left column wider: hit rows cut at its edge show more",
    "resize_pane('bottom', 1)": "watchpoint list taller (the divider above it moves up)",
    "resize_pane('bottom', -1)": "watchpoint list shorter",
}

# Help rows the binding list does not word well: (the key as fixed text, or the ids of the
# bindings whose current keys are shown — so a remapped key shows as remapped; what it does)
EXTRA_KEYS: tuple[tuple[str | tuple[str, ...], str], ...] = (
    (
        "enter",
        "open: a node's tensor, a hit's node, a stack line's nodes or its source file, edit "
        "a watchpoint",
    ),
    (("tuidebug.back",), "back: clear a filter, or return to the previous pane"),
    (
        tuple(f"tuidebug.pane{n}" for n in range(1, 7)),
        "focus tree, hits, stack, details, tensor, watchpoints",
    ),
    ("← →", "tree: collapse / expand a scope"),
    (("tree.type_filter",), "tree: open the node type filter (/ filters by name or regex)"),
    (
        ("watchpoints.edit", "watchpoints.delete", "watchpoints.toggle"),
        "watchpoint list: edit / delete / enable-disable",
    ),
    ("ctrl+p", "command palette: state-aware commands and go to node"),
)


def key_rows(
    bindings: Sequence[BindingType], keymap: Mapping[str, str], unavailable: Callable[[str], str]
) -> list[KeyRow]:
    """The help's rows: each binding (but the pane keys and back, worded in `EXTRA_KEYS`)
    with its keys as bound now, what it does (`APP_HELP`, else its description) and
    `unavailable(action)`, why it cannot run now ("" when it can); then `EXTRA_KEYS`."""
    rows: list[KeyRow] = []
    for binding in bindings:
        assert isinstance(binding, Binding)
        if binding.action.startswith("focus_pane") or binding.action == "back":
            continue  # listed below with their fuller wording
        bound = active_keys(binding.id, keymap) if binding.id else []
        keys = ", ".join(key_display(k) for k in bound or binding.key.split(","))
        action = action_id(binding.action)  # `run('step')`: the run action step
        does = APP_HELP.get(action, binding.description)
        rows.append((keys, does, unavailable(action)))
    for key, does in EXTRA_KEYS:
        if not isinstance(key, str):
            # Textual's key names here ("escape", "space"), as these rows always had
            hints = [(active_keys(i, keymap) or [i])[0] for i in key]
            key = "1 … 6" if hints == ["1", "2", "3", "4", "5", "6"] else " / ".join(hints)
        rows.append((key, does, ""))
    return rows


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


def reflowed(text: str) -> Group:
    """A pane's help as the help screen shows it: the prose lines of a paragraph joined so
    the terminal wraps them (a `CONTEXT_HELP` is written with line breaks that fit 96
    columns, which at 80 columns left a word alone on every other line), and each run of
    "  key  what it does" rows as a grid whose second column wraps beside its key."""
    blocks: list[Text | Table] = []
    prose: list[str] = []
    rows: list[tuple[str, str]] = []

    def flush() -> None:
        if prose:
            blocks.append(Text(" ".join(prose)))
            prose.clear()
        if rows:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(no_wrap=True)
            grid.add_column()
            for key, does in rows:
                grid.add_row(Text(key), Text(does))
            blocks.append(grid)
            rows.clear()

    for line in text.splitlines():
        row = _KEY_ROW.match(line)
        if row is not None:
            if prose:
                flush()
            rows.append((row.group(1), row.group(2)))
        elif not line.strip():
            flush()
            blocks.append(Text(""))  # a blank line the text has stays a paragraph break
        else:
            if rows:
                flush()
            prose.append(line.strip())
    flush()
    return Group(*blocks)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 96; max-width: 100%; height: 90%; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1;
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
                    yield Static(reflowed(text), id="help-context")
                    yield Static("")
                yield Static(self._table(), id="help-keys")
            yield Static(
                f"{self._close_key} closes · the mouse works everywhere too",
                id="help-footer",
                markup=False,
            )

    @property
    def context_text(self) -> str:
        """The pane's help in plain text, wrapped as the screen shows it ("" for none)."""
        if self._pane_help is None:
            return ""
        width = self.query_one("#help-context").size.width or 94
        console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
        console.print(reflowed(self._pane_help[1]))
        return console.export_text()

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
