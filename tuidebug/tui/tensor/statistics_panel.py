"""The tensor view's footer: the statistics of what it shows, over the whole tensor.

The current tensor's statistics and histogram come from a worker after the first paint
(`tensor_jobs.statistics_job`), a comparison's from the compare worker; until then the
panel says what it waits for. `StatisticsPanel` keeps the whole tensor's numbers (the
view reads them to widen the number format and order the heatmap's non-finite kinds) and
words them for the mode shown (`tensor_text.statistics_lines`). The view makes the panel
before its first frame, which shows no tensor: what words the numbers loads with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from tuidebug.tui.kit.labels import shown

if TYPE_CHECKING:
    from tuidebug.core.tensor import Histogram, TensorStatistics
    from tuidebug.tui.tensor.jobs import StatisticsDone
    from tuidebug.tui.tensor.modes import CompareState


class StatisticsPanel(Static):
    """The statistics under the grid (one summary line in a compact pane)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.stats: TensorStatistics | None = None  # the whole current tensor's
        self.histogram: Histogram | None = None
        self.problem = ""  # why they could not be computed

    @property
    def settled(self) -> bool:
        """The worker has answered: the numbers, or why there are none."""
        return self.stats is not None or bool(self.problem)

    def reset(self) -> None:
        """A new tensor: its statistics are not known yet."""
        self.stats = None
        self.histogram = None
        self.problem = ""

    def take(self, message: StatisticsDone) -> bool:
        """Keep the worker's answer; True when it brought numbers."""
        if message.stats is None or message.hist is None:
            self.problem = message.problem
            return False
        self.stats = message.stats
        self.histogram = message.hist
        return True

    def show_for(self, compare: CompareState, *, has_array: bool, compact: bool) -> None:
        """Word the statistics of what `compare`'s mode shows (nothing without a tensor)."""
        stats = compare.displayed_stats(self.stats)
        if not has_array:
            self.update("")
        elif self.problem:
            self.update(f"statistics  {shown(self.problem)}")
        elif stats is None:
            busy = compare.needs_comparison
            self.update("statistics  computing…" if not busy else "statistics  (after compare)")
        else:
            from tuidebug.tui.tensor.text import statistics_lines

            hist = self.histogram if compare.mode == "current" else None
            self.update(statistics_lines(compare.shown_name, stats, hist, compact=compact))


__all__ = ["StatisticsPanel"]
