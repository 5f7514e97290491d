"""Watchpoints in the TUI: the list pane, the editor, the App's dialogs around them, and the
export to `--watch` specs (no Textual).

Modules (this docstring is the table of contents; the package imports nothing):
- `editor`: The watchpoint editor: pick a condition, set its thresholds, choose what it
  watches.
- `export`: Watchpoints in and out as the command line writes them.
- `flows`: The app's watchpoint dialogs: create, edit, toggle and delete one, the
  recommended set, the command line's `--watch` specs, and saving the watchpoints or the
  hits to a file.
- `hits_shown`: What the main screen shows of the session's hits: the hit list with its
  tab's count, each watchpoint's count, the tree's badges, the header's "hits at this
  step", and the "N watchpoint hits" toast.
- `list_pane`: The watchpoint list (bottom pane) and the watched/hit badges the tree draws.
"""
