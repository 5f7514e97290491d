"""Dumps written by other tools (msprobe now; TensorFlow Debugger V2 next) as tuidebug's dump
model, so the session, the checker, the TUI, `exec` and the API read them unchanged.

Modules (this docstring is the table of contents; the package imports nothing):
- `source`: The seam: `DumpSource` (what a foreign reader answers: ranks, graphs per rank,
  iterations, one iteration's tensors with statistics and value files, blockers, refresh),
  `ForeignTensor`, `ForeignStep`, `ForeignGraph`.
- `dump`: `ForeignDump` (an `OfflineDump` over a `DumpSource`, steps read lazily and a few
  kept), `ForeignIndex`, and `open_dump`: the one function that detects a folder's layout.
- `msprobe`: msprobe dumps (issue 29) as a `DumpSource`: calls as nodes, construct.json as
  scopes, stack.json as stacks, Max/Min as the NaN/Inf counts.
- `tfdbg`: TensorFlow Debugger V2 dumps (issue 32) as a `DumpSource`: graphs from the op
  records, steps derived from the calls of the training function, health summaries (or
  FULL_TENSOR values' statistics) as each output's statistics, stacks with the dump's own
  source lines.
"""
