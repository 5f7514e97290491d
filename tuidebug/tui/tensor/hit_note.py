"""Above a tensor opened from a watchpoint hit: what the hit measured, and what to try.

The app words the note (`tensor_text.hit_context`: the condition and the value on the
first line, MindInsight's advice after it); `HitNote` shows the first line in one row
(a narrow pane shows its start) and the advice in up to two, which a short pane leaves
out so the numbers keep their rows. The view mounts it with its first tensor: its lines are
made with it, so what it is told before they are mounted shows as soon as they are.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tuidebug.tui.kit.labels import shown


class HitNote(Vertical):
    """The hit line and its advice (hidden when there is no hit or no tensor)."""

    DEFAULT_CSS = """
    HitNote { height: auto; }
    HitNote #tv-context {
        height: 1; color: $warning; display: none; text-wrap: nowrap; text-overflow: ellipsis;
    }
    HitNote #tv-advice { height: auto; max-height: 2; color: $text-muted; display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.note = ""  # the hit line, then its advice after a newline ("" = no hit)
        self._line = Static("", id="tv-context", markup=False)
        self._advice = Static("", id="tv-advice", markup=False)

    def compose(self) -> ComposeResult:
        yield self._line
        yield self._advice

    def show_note(self, *, visible: bool, short: bool) -> None:
        """Draw the note (`visible`: a tensor is shown; `short`: no room for the advice)."""
        hit_line, _, advice = self.note.partition("\n")
        advice = advice.strip()
        line = self._line
        line.update(shown(hit_line))
        line.display = visible and bool(hit_line)
        said = self._advice
        said.update(shown(advice))
        said.display = visible and bool(advice) and not short


__all__ = ["HitNote"]
