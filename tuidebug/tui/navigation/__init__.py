"""Moving around: the pane keys and Esc, back and forward over visited places, and the views
kept between uses.

Modules (this docstring is the table of contents; the package imports nothing):
- `focus_frames`: The lit border of the pane that holds the focus, drawn without
  restyling what the pane holds.
- `kept_views`: The views the app makes on their first use and keeps, so what the user set
  up in them survives closing them: the step's tensor list (`L`: its filters, sort and the
  health already read) and the command line (`:`: its output and history).
- `left_tabs`: The left pane's tabs (1 Tree, 2 Hits, 3 Stack), whose tab bar is drawn by
  one stand-in widget for the first frame and by Textual's widgets just after it.
- `maximize`: z: the focused pane fills the screen, and the pane keys while one does.
- `pane_keys`: Moving around the app's panes: the pane keys (1–6), the filter key (/), and
  where Esc goes back to.
- `pane_sizes`: Resizable panes: `<` / `>` and `{` / `}` move the dividers beside the left
  column and above the watchpoint list, the sizes kept for the session.
- `visit_history`: Back and forward over the nodes and tensors visited, like a browser's
  history.
- `visits`: Back and forward (Alt+← / Alt+→, `[` / `]`) over the nodes and tensors the user
  went to.
"""
