"""Compare two runs in the TUI (issue 30): where does the target dump first stop matching
the golden one? `tuidebug offline TARGET --against GOLDEN`, or the palette's "Compare with
a golden dump…".

Modules (this docstring is the table of contents; the package imports nothing):
- `engine`: the compare the pane shows, run off the UI thread: the two dumps, their shared
  steps and ranks, one step and rank's rows with progress and a stop (no Textual).
- `rows`: the pane's rows from a report's: short names, numbers, the bar, the filters by
  name and kind, the detail lines (no Textual).
- `pane`: the divergence pane (the tab `7 Diff` beside the hit list): the rows from the
  first divergence, filters, step and rank keys, Enter for side by side.
- `side_by_side`: one pair as four tensor views: target, golden, target − golden and a
  heatmap of |target − golden|, opened on the largest difference.
- `flows`: the pane in the debugger: made with the first golden dump, following the
  session's step and rank, moving the session when the pane's keys ask.
- `standalone`: two msprobe dumps (no graph to show): the divergence list alone.
"""
