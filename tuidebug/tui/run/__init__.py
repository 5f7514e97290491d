"""Step, continue, pause, terminate, watch…: the run-action table (no Textual), the App's side
of each action, and the control bar.

Modules (this docstring is the table of contents; the package imports nothing):
- `actions`: The run actions — step, continue, pause, watch… — in one table, and when each
  may run.
- `control_bar`: The control bar: the run commands as buttons, for the mouse; each is the
  same action as its key, and is greyed out exactly when the key is (the app's
  `check_action` decides).
- `controls`: The app's side of the run actions: what each one does when it may run, the
  snapshot its guard reads, and the control bar that shows them.
"""
