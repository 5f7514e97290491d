"""What every feature of the TUI shares and none owns: escaping and short labels, the name
filter, a styled scroll view, colour maps, terminal capabilities, dialogs and their wording,
the sentences about the session. It imports no other part of the TUI.

Modules (this docstring is the table of contents; the package imports nothing):
- `ascii_glyphs`: The ASCII form of every glyph the app draws, for a terminal without UTF-8
  (`LANG=C`).
- `colormap`: Colour maps for the tensor heatmap: value → 256-entry palette index →
  truecolor style.
- `dialogs`: Small modal dialogs: yes/no, a one-line prompt with inline validation, the run
  history.
- `fill_on_mount`: Filling a screen's children from its `on_mount`, on a busy app too
  (they may not be mounted yet: then once the screen has drawn).
- `labels`: Short text forms shared by several panes (dtype, shape, numbers, states), and
  the one path untrusted text takes onto the screen.
- `name_filter`: The name filters' matching: a regular expression, and plain text as a
  substring.
- `notice_burst`: The session's notices: every one kept for the messages dialog, a burst
  toasted once.
- `own_class`: A class that styles only the widget it is on: set without restyling its
  subtree; `unstyled` builds widgets without restyles as their constructors set classes.
- `prompts`: The questions the app asks — how many steps, which step, really terminate,
  where to save — each built here with its wording, so the app only says when to ask and
  what to do with the answer.
- `screenshot`: A screenshot of the app in the current directory, as the palette's entry
  says.
- `session_text`: Sentences the app says about its session: what the tree pane says before
  there is a graph to show (`no_graph_text`), the one toast for a burst of the session's
  notices (`burst_toast`), and which errors are meant for the user as they are
  (`is_user_error`: one sentence, shown without a "… failed:" in front).
- `start_gc`: The garbage collector, paused while the TUI starts: the CLI pauses it before
  its imports, the app resumes it once its first frame is drawn, and freezes what lives
  as long as the app once the graphs are shown.
- `styled_scroll_view`: `StyledScrollView`: a ScrollView that draws its own lines with its
  component styles.
- `teardown`: Handlers that outlive the app's screen: a late message during shutdown is
  dropped.
- `terminal_caps`: What the terminal can show, read from the environment: its colour depth
  and whether it takes UTF-8 (box drawing, half blocks); `draw_for` applies it to the app.
- `toasts`: Taking down one toast while it is still up.
"""
