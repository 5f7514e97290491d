"""The Textual app, its panes and screens, on the in-memory session and on real sessions."""
