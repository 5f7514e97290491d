"""Tracing a NaN/Inf to its origin (`o`): what to trace (no Textual), the worker that runs it,
and the screen that shows it.

Modules (this docstring is the table of contents; the package imports nothing):
- `runner`: Running a NaN/Inf trace for the app: its thread worker, its progress in the
  header, Esc to cancel it, and the origin screen when it ends.
- `screen`: Where a NaN/Inf came from: the origins `core.origins` found, and the chain to
  the start.
- `trace`: Tracing a NaN/Inf to its origin, the app's side: what to trace, and the worker's
  reads.
"""
