"""The control bar: the run commands as buttons, for the mouse; each is the same action as
its key, and is greyed out exactly when the key is (the app's `check_action` decides).

The buttons are the run actions that have a `bar` label (run/actions.py), in the table's
order; `set_keys` puts each action's key in front, as in the footer, so the bar doubles
as the list of run keys (the footer leaves them out) and stays true when the user remaps
them."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Static

from tuidebug.core.session import Capabilities
from tuidebug.tui.messages import ControlRequested
from tuidebug.tui.run.actions import BAR_ACTIONS, BY_ID


class ControlBar(Horizontal):
    """A row of compact buttons, plus a short status on the right."""

    DEFAULT_CSS = """
    ControlBar { height: 1; background: $panel; }
    ControlBar Button { margin: 0; min-width: 6; }
    ControlBar #control-status { width: 1fr; content-align: right middle; color: $text-muted;
        padding: 0 1; }
    """

    _buttons: dict[str, Button]
    _status: Static

    def compose(self) -> ComposeResult:
        self._buttons = {}
        for action in BAR_ACTIONS:
            button = Button(action.bar or "", id=f"control-{action.id}", compact=True)
            self._buttons[action.id] = button
            yield button
        self._status = Static("", id="control-status")
        yield self._status

    def set_keys(self, key_for: Callable[[str], str]) -> None:
        """Label each button with the key that runs its action now (`key_for(action)`)."""
        for action in BAR_ACTIONS:
            self._buttons[action.id].label = f"{key_for(action.id)} {action.bar}"

    def update_enabled(self, is_enabled: Callable[[str], bool]) -> None:
        for action_id, button in self._buttons.items():
            button.disabled = not is_enabled(action_id)

    def set_capabilities(self, caps: Capabilities) -> None:
        """Hide buttons that can never work in this session rather than grey them forever:
        pause/terminate offline, node stepping off GPU, go-to-step and history online."""
        for action in BAR_ACTIONS:
            self._buttons[action.id].display = action.offered(caps)

    def set_status(self, text: str) -> None:
        self._status.update(text)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("control-"):
            action = BY_ID[button_id[len("control-") :]]
            self.post_message(ControlRequested(action.action))
