"""Keys: the user's keymap file, and the help screen that lists every binding.

Modules (this docstring is the table of contents; the package imports nothing):
- `help_screen`: The help screen (`?` / F1): every key of the app, and help for the pane you
  came from.
- `keymap`: The user's own keys: `keys.toml` → a Textual keymap (binding id → keys).
"""
