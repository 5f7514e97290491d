"""The divergence pane in the debugger: a helper object of the `DebuggerApp` (as the
watchpoint flows are) that adds the pane as a tab beside the hit list (`7 Diff`) once a
golden dump is given (`--against GOLDEN`, or the palette's "Compare with a golden dump…"),
keeps its step and rank on the session's, and moves the session when the pane's step or
rank keys ask (both dumps move together).

The target is the dump the session shows (its source folder); a session that is no dump
(a live training) says so in one notice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.widgets import TabbedContent, TabPane

from tuidebug.core.text import printable
from tuidebug.tui.divergence.pane import DivergencePane
from tuidebug.tui.kit.dialogs import PromptScreen

if TYPE_CHECKING:
    from tuidebug.core.session import Metadata
    from tuidebug.tui.host import AppHost

TAB_ID = "diverge-tab"
TAB_LABEL = "7 Diff"  # fits beside the others at 80 columns
PANE_KEY = 7


def golden_check(value: str) -> str | None:
    """The palette prompt's check: a folder (the compare itself says what else is wrong)."""
    if not value:
        return "Give the folder of the golden dump."
    if not Path(value).expanduser().is_dir():
        return f"{value} is not a folder."
    return None


class DivergenceFlows:
    """See the module docstring."""

    def __init__(self, app: AppHost, tabs: TabbedContent) -> None:
        self._app = app
        self._tabs = tabs
        self.pane: DivergencePane | None = None
        self.golden: str | None = None

    def ask_golden(self) -> None:
        """The palette's entry: ask for the golden dump's folder, then compare."""

        def chosen(value: str | None) -> None:
            if value:
                self.open(value)

        self._app.push_screen(
            PromptScreen(
                "Compare with a golden dump",
                value=self.golden or "",
                placeholder="folder of the reference dump",
                hint="The dump this one should match (same network). Enter compares, Esc cancels.",
                check=golden_check,
            ),
            chosen,
        )

    def open(self, golden: str) -> None:
        """Compare the session's dump with `golden` in the divergence tab (made once)."""
        md = self._app.metadata
        if not Path(md.source).is_dir():
            self._app.notify(
                "Only a dump can be compared with a golden dump: open it with "
                "tuidebug offline DUMP --against GOLDEN.",
                severity="warning",
            )
            return
        self.golden = golden
        made = self.pane is None
        if self.pane is None:
            self.pane = DivergencePane(mover=self._move, id="divergence")
        pane = self.pane
        step, rank = md.iteration, md.rank

        async def show() -> None:
            if made:
                await self._tabs.add_pane(TabPane(TAB_LABEL, pane, id=TAB_ID))
            self._tabs.active = TAB_ID
            pane.table.focus()
            pane.open(md.source, golden, step, rank)

        self._app.call_after_refresh(show)

    def follow(self, metadata: Metadata) -> None:
        """The session moved (a step, a rank): the compare follows, both dumps together."""
        if self.pane is not None and self.pane.pair is not None:
            self.pane.follow(metadata.iteration, metadata.rank)

    def focus(self) -> bool:
        """Key 7: show the tab and focus the rows (False: no compare is open, said so)."""
        if self.pane is None:
            self._app.notify(
                "No golden dump to compare with: Ctrl+P → Compare with a golden dump…, or "
                "tuidebug offline DUMP --against GOLDEN.",
                timeout=6,
            )
            return False
        self._tabs.active = TAB_ID
        self.pane.table.focus()
        return True

    def _move(self, iteration: int | None, rank: int | None) -> bool:
        """The pane's step or rank keys: move the session there (the pane follows it)."""
        session = self._app.session
        if rank is not None and rank != self._app.metadata.rank:
            self._app.run_session_call(
                f"Switching to rank {rank}", lambda: session.select_rank(rank)
            )
        if iteration is not None:
            max_step = self._app.metadata.max_step or 0
            step = next(
                (s for s in range(1, max_step + 1) if session.iteration_of_step(s) == iteration),
                None,
            )
            if step is None:
                self._app.notify(
                    printable(f"The session has no step showing iteration {iteration}."),
                    severity="warning",
                )
                return False
            self._app.run_session_call(f"Going to step {step}", lambda: session.reset_step(step))
        return True


__all__ = ["PANE_KEY", "TAB_ID", "DivergenceFlows", "golden_check"]
