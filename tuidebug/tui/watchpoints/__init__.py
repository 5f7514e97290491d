"""Watchpoints in the TUI: the list pane, the editor, the App's dialogs around them, and the
export to `--watch` specs (no Textual).

Modules (this docstring is the table of contents; the package imports nothing):
- `badges`: The watched and hit badges the tree draws: which nodes and scopes a graph's
  watchpoints watch, and how many hits each node and scope has (no Textual).
- `editor`: The watchpoint editor: pick a condition, set its thresholds, choose what it
  watches.
- `export`: Watchpoints in and out as the command line writes them.
- `flows`: The app's watchpoint dialogs: create, edit, toggle and delete one, the
  recommended set, the command line's `--watch` specs, and saving the watchpoints or the
  hits to a file.
- `hits_shown`: What the main screen shows of the session's hits: the hit list with its
  tab's count, each watchpoint's count, the tree's badges, the header's "hits at this
  step", and the "N watchpoint hits" toast; and a hit chosen in the list, opened where it is.
- `list_pane`: The watchpoint list (bottom pane).
- `pane`: The watchpoint pane of one app: its list, built when first needed.
- `shell`: The watchpoint list's shell, which the first frame shows while there is no
  watchpoint, and the list's columns, which the two share.
"""
