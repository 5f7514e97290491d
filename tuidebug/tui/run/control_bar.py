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
from tuidebug.tui.kit.own_class import unstyled
from tuidebug.tui.messages import ControlRequested
from tuidebug.tui.run.actions import BAR_ACTIONS, BY_ID, RunAction


class BarButton(Button, inherit_css=False):
    """A compact button of the bar: Button, styled by the rules of Button's own stylesheet
    that style a compact button of the default variant (copied below) and no others.
    Button's stylesheet (57 rules: every variant and the flat style) would otherwise be
    parsed at the start and checked against every widget each time one is styled, all to
    draw these buttons (issue 28); these look and behave the same."""

    DEFAULT_CSS = """
    BarButton:ansi.-style-default {
        border: tall $border-blurred;
        background: ansi_default;
        &:disabled {
            text-opacity: 1;
            text-style: bold dim;
            border: tall $border-blurred !important;
            background: ansi_default !important;
            pointer: not-allowed;
            &:hover {
                background: ansi_default;
            }
        }
        &:hover {
            background: $ansi-background;
            border: tall $border;
        }
        &.-active {
            background: $ansi-background !important;
            border: blank $background !important;
            tint: transparent;
        }
    }
    BarButton {
        width: auto;
        min-width: 16;
        height: auto;
        line-pad: 1;
        text-align: center;
        content-align: center middle;
        pointer: pointer;
        &.-style-default {
            text-style: bold;
            color: $button-foreground;
            background: $surface;
            border: none;
            border-top: tall $surface-lighten-1;
            border-bottom: tall $surface-darken-1;
            &.-textual-compact {
                border: none !important;
            }
            &:disabled {
                text-opacity: 0.6;
                pointer: not-allowed;
            }
            &:focus {
                text-style: $button-focus-text-style;
                background-tint: $foreground 5%;
            }
            &:hover {
                border-top: tall $surface;
                background: $surface-darken-1;
            }
            &.-active {
                background: $surface;
                border-bottom: tall $surface-lighten-1;
                border-top: tall $surface-darken-1;
                tint: $background 30%;
            }
        }
    }
    """


class ControlBar(Horizontal):
    """A row of compact buttons, plus a short status on the right."""

    DEFAULT_CSS = """
    ControlBar { height: 1; background: $panel; }
    ControlBar BarButton { margin: 0; min-width: 6; }
    ControlBar #control-status { width: 1fr; content-align: right middle; color: $text-muted;
        padding: 0 1; }
    """

    _status: Static

    def __init__(self, *, capabilities: Capabilities | None = None, id: str | None = None) -> None:
        """`capabilities`: the session's, when known: the buttons it can never use are not
        built for the first frame (a button costs as much as a pane to build and style:
        issue 28); `set_capabilities` mounts them if the session later offers them."""
        super().__init__(id=id)
        self._caps = capabilities
        self._buttons: dict[str, BarButton] = {}
        # the latest labels and states asked for, which a button mounted later takes too
        self._key_for: Callable[[str], str] | None = None
        self._is_enabled: Callable[[str], bool] | None = None

    def compose(self) -> ComposeResult:
        for action in BAR_ACTIONS:
            if self._caps is None or action.offered(self._caps):
                yield self._new_button(action)
        self._status = Static("", id="control-status")
        yield self._status

    def _new_button(self, action: RunAction) -> BarButton:
        label = action.bar or ""
        if self._key_for is not None:
            label = f"{self._key_for(action.id)} {action.bar}"
        # greyed until `update_enabled` says it can run (the app asks before its first
        # frame, when most cannot: the dump is being read): a button changing its state
        # is styled again, one born in it is not
        disabled = self._is_enabled is None or not self._is_enabled(action.id)
        button = unstyled(
            lambda: BarButton(label, id=f"control-{action.id}", compact=True, disabled=disabled)
        )
        self._buttons[action.id] = button
        return button

    def set_keys(self, key_for: Callable[[str], str]) -> None:
        """Label each button with the key that runs its action now (`key_for(action)`)."""
        self._key_for = key_for
        for action in BAR_ACTIONS:
            if action.id in self._buttons:
                self._buttons[action.id].label = f"{key_for(action.id)} {action.bar}"

    def update_enabled(self, is_enabled: Callable[[str], bool]) -> None:
        self._is_enabled = is_enabled
        for action_id, button in self._buttons.items():
            button.disabled = not is_enabled(action_id)

    def set_capabilities(self, caps: Capabilities) -> None:
        """Hide buttons that can never work in this session rather than grey them forever:
        pause/terminate offline, node stepping off GPU, go-to-step and history online. One
        not built yet (`__init__`) is mounted in its place when the session offers it."""
        self._caps = caps
        for index, action in enumerate(BAR_ACTIONS):
            offered = action.offered(caps)
            button = self._buttons.get(action.id)
            if button is not None:
                button.display = offered
            elif offered and self.is_attached:
                later = (self._buttons.get(a.id) for a in BAR_ACTIONS[index + 1 :])
                before = next((b for b in later if b is not None), self._status)
                self.mount(self._new_button(action), before=before)

    def set_status(self, text: str) -> None:
        self._status.update(text)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        button_id = event.button.id or ""
        if button_id.startswith("control-"):
            action = BY_ID[button_id[len("control-") :]]
            self.post_message(ControlRequested(action.action))
