"""`tuidebug offline TARGET --against GOLDEN` on two msprobe dumps: they have no graph for
the debugger's panes to show, so the divergence list fills the screen alone, with its own
step and rank keys (S, R) and the same side-by-side screen on Enter.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Static

from tuidebug.core.text import printable
from tuidebug.tui.divergence.pane import DivergencePane


class CompareApp(App[int]):
    """The divergence list of two dumps, alone."""

    TITLE = "tuidebug compare"
    CSS = """
    #cmp-header { height: 1; background: $panel; padding: 0 1; text-style: bold; }
    #divergence { border: round $primary-darken-2; height: 1fr; }
    #divergence:focus-within { border: round $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="compare.quit"),
        Binding("question_mark,f1", "help", "Help", id="compare.help"),
    ]

    def __init__(self, target: str, golden: str, *, source_label: str | None = None) -> None:
        """`source_label` replaces the two paths in the header (stable screenshots)."""
        super().__init__()
        self._target = target
        self._golden = golden
        self._label = source_label

    def compose(self) -> ComposeResult:
        label = self._label or f"{self._target}  against  {self._golden}"
        yield Static(printable(f"tuidebug  COMPARE  {label}"), id="cmp-header", markup=False)
        pane = DivergencePane(id="divergence")
        pane.border_title = "Divergence"
        yield pane
        yield Footer()

    @property
    def pane(self) -> DivergencePane:
        return self.query_one(DivergencePane)

    def on_mount(self) -> None:
        self.pane.open(self._target, self._golden, None, None)
        self.pane.table.focus()

    def action_help(self) -> None:
        from tuidebug.tui.divergence.pane import DivergenceTable
        from tuidebug.tui.divergence.side_by_side import SideBySideScreen
        from tuidebug.tui.keys.help_screen import HelpScreen, context_help, key_rows
        from tuidebug.tui.keys.keymap import key_display

        keys = {
            b.id: key_display(b.key.split(",")[0])
            for b in [*DivergenceTable.BINDINGS, *SideBySideScreen.BINDINGS]
            if isinstance(b, Binding) and b.id
        }
        if isinstance(self.screen, HelpScreen):
            return
        context = context_help(self.focused, lambda binding_id: keys.get(binding_id, binding_id))
        self.push_screen(HelpScreen(key_rows(self.BINDINGS, {}, lambda action: ""), context))


def run_compare_app(target: str, golden: str) -> int:
    """Run the compare screen until the user quits."""
    app = CompareApp(target, golden)
    return int(app.run() or 0)


__all__ = ["CompareApp", "run_compare_app"]
