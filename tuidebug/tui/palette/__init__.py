"""The command palette (Ctrl+P): its entries (no Textual) and the Textual provider that offers
them.

Modules (this docstring is the table of contents; the package imports nothing):
- `entries`: What the command palette (Ctrl+P) offers right now, as (title, help, action)
  entries.
- `provider`: Command palette (Ctrl+P): the commands that make sense right now, plus "go to
  node".
"""
