"""The control bar: the run commands as buttons, for the mouse; each is the same action as
its key, and is greyed out exactly when the key is (the app's `check_action` decides)."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Static

from tuidebug.tui.messages import ControlRequested

# (action, label) in the order a user reaches for them
CONTROLS: tuple[tuple[str, str], ...] = (
    ("step", "Step n"),
    ("step_many", "Step N…"),
    ("continue", "Continue c"),
    ("step_node", "Next node x"),
    ("pause", "Pause p"),
    ("terminate", "Terminate T"),
    ("reset_step", "Go to step g"),
    ("recheck", "Recheck r"),
    ("history", "History h"),
    ("new_watchpoint", "Watch w"),
)


class ControlBar(Horizontal):
    """A row of compact buttons, plus a short status on the right."""

    DEFAULT_CSS = """
    ControlBar { height: 1; background: $panel; }
    ControlBar Button { margin: 0 1 0 0; min-width: 8; }
    ControlBar #control-status { width: 1fr; content-align: right middle; color: $text-muted;
        padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        for action, label in CONTROLS:
            yield Button(label, id=f"control-{action}", compact=True)
        yield Static("", id="control-status")

    def update_enabled(self, is_enabled: Callable[[str], bool]) -> None:
        for action, _label in CONTROLS:
            self.query_one(f"#control-{action}", Button).disabled = not is_enabled(action)

    def set_live(self, live: bool, can_step_node: bool) -> None:
        """Offline sessions have no pause/terminate, and only GPU sessions step nodes: hide
        buttons that can never work rather than grey them forever."""
        for action in ("pause", "terminate"):
            self.query_one(f"#control-{action}", Button).display = live
        self.query_one("#control-step_node", Button).display = can_step_node

    def set_status(self, text: str) -> None:
        self.query_one("#control-status", Static).update(text)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("control-"):
            self.post_message(ControlRequested(button_id[len("control-") :]))
