"""`GraphRun`, one row of a graph's execution history, in a module of its own.

`core.session` re-exports it; it lives here so that the dump layout that builds the rows
(`offline.layout.sync_rank`) and the dump model that hands them on (`offline.dump`), and
with them `tuidebug check` and `DumpAnalyzer`, can name it without importing the session
interface and the watchpoint book behind it. There is one such row for every reader: the
graph id a dump's row is found under only orders the rows, and MindInsight's 1-based step
is `iteration + 1`, so neither is a field.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GraphRun"]


@dataclass(frozen=True)
class GraphRun:
    """One row of the graph execution history (spec §5.7)."""

    iteration: int
    graph_name: str
    has_data: bool
    sub_graphs: tuple[str, ...] = ()
    # False when the graph has no history file and its runs are its dumped iteration
    # folders (offline: the sub-graphs of a control-flow net)
    from_history: bool = True
