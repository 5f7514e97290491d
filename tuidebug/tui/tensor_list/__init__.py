"""The step's tensors (`L`): the screen, and its rows without Textual.

Modules (this docstring is the table of contents; the package imports nothing):
- `rows`: The tensor list's rows without Textual: which entries show (filters), in which
  order (sorts), how wide each column is and what each cell says.
- `screen`: Every tensor of the step in execution order (tfdbg's `lt`), with a health glyph
  each.
"""
