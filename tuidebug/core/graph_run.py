"""`GraphRun`, one row of a graph's execution history, in a module of its own.

`core.session` re-exports it; it lives here so that the dump model (`offline.dump`), and
with it `tuidebug check` and `DumpAnalyzer`, can name it without importing the session
interface and the watchpoint book behind it.
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
