"""The control bar: the run commands as buttons, for the mouse; each is the same action as
its key, and is greyed out exactly when the key is (the app's `check_action` decides)."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Static

from tuidebug.core.session import Capabilities
from tuidebug.tui.messages import ControlRequested

# (action, label) in the order a user reaches for them; `set_keys` puts each action's key in
# front, as in the footer, so the bar doubles as the list of run keys (the footer leaves
# them out) and stays true when the user remaps them.
CONTROLS: tuple[tuple[str, str], ...] = (
    ("step", "Step"),
    ("step_many", "Step N…"),
    ("continue", "Continue"),
    ("step_node", "Next node"),
    ("pause", "Pause"),
    ("terminate", "Terminate"),
    ("reset_step", "Go to step"),
    ("recheck", "Recheck"),
    ("history", "History"),
    ("new_watchpoint", "Watch"),
)


class ControlBar(Horizontal):
    """A row of compact buttons, plus a short status on the right."""

    DEFAULT_CSS = """
    ControlBar { height: 1; background: $panel; }
    ControlBar Button { margin: 0; min-width: 6; }
    ControlBar #control-status { width: 1fr; content-align: right middle; color: $text-muted;
        padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        for action, label in CONTROLS:
            yield Button(label, id=f"control-{action}", compact=True)
        yield Static("", id="control-status")

    def set_keys(self, key_for: Callable[[str], str]) -> None:
        """Label each button with the key that runs its action now (`key_for(action)`)."""
        for action, label in CONTROLS:
            self.query_one(f"#control-{action}", Button).label = f"{key_for(action)} {label}"

    def update_enabled(self, is_enabled: Callable[[str], bool]) -> None:
        for action, _label in CONTROLS:
            self.query_one(f"#control-{action}", Button).disabled = not is_enabled(action)

    def set_capabilities(self, caps: Capabilities) -> None:
        """Hide buttons that can never work in this session rather than grey them forever:
        pause/terminate offline, node stepping off GPU, go-to-step and history online."""
        shown = {
            "pause": caps.can_pause,
            "terminate": caps.can_terminate,
            "step_node": caps.can_step_node,
            "reset_step": caps.can_reset_step,
            "history": not caps.live,
        }
        for action, visible in shown.items():
            self.query_one(f"#control-{action}", Button).display = visible

    def set_status(self, text: str) -> None:
        self.query_one("#control-status", Static).update(text)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("control-"):
            self.post_message(ControlRequested(button_id[len("control-") :]))
