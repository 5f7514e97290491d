"""The control bar: the run commands as buttons, for the mouse; each is the same action as
its key, and is greyed out exactly when the key is (the app's `check_action` decides).

The buttons are the run actions that have a `bar` label (run/actions.py), in the table's
order; `set_keys` puts each action's key in front, as in the footer, so the bar doubles
as the list of run keys (the footer leaves them out) and stays true when the user remaps
them.

The first frame draws the buttons as one stand-in (`ControlBarShell`): every one is greyed
then (the dump is being read), and seven buttons cost about 10 ms of that frame to style,
lay out and draw (issue 28); the buttons take its place just after it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.dom import NoScreen
from textual.widget import Widget
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


BUTTON_MIN_WIDTH = 6  # a bar button's width at least (`ControlBar BarButton` below)


class ControlBarShell(Widget):
    """The bar's buttons in the first frame, all greyed: one widget drawn cell for cell
    like the row of disabled compact `BarButton`s (tests/tui/test_control_bar_shell.py
    compares the two in several themes and sizes). Its own rules are those that style
    such a button (`BarButton.-style-default` and its `:disabled`, and the App's
    `*:disabled:can-focus`), so the theme colours it; its labels are the bar's, asked at
    each draw (`labels()`: keys set meanwhile show). Never used in ANSI colours, where
    Textual draws a greyed compact button as a border instead."""

    DEFAULT_CSS = """
    ControlBarShell {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        text-overflow: clip;
        text-style: bold;
        color: $button-foreground;
        background: $surface;
        text-opacity: 0.6;
        opacity: 0.7;  /* Textual's rule for a disabled widget that can focus */
        pointer: not-allowed;
    }
    """

    def __init__(self, labels: Callable[[], Sequence[str]]) -> None:
        super().__init__()
        self._labels = labels

    def render(self) -> Content:
        buttons: list[Content] = []
        for label in self._labels():
            # as a button draws its label: parsed as Button parses it, one cell of
            # line-pad either side, centred in what its minimum width leaves
            text = Content.from_text(label)
            excess = max(0, BUTTON_MIN_WIDTH - 2 - text.cell_length)
            left = excess // 2
            buttons.append(Content(" " * (1 + left)) + text + " " * (1 + excess - left))
        return Content("").join(buttons)


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
        # the buttons' stand-in while the first frame is drawn (`compose`), else None
        self._shell: ControlBarShell | None = None
        # the latest labels and states asked for, which a button mounted later takes too
        self._key_for: Callable[[str], str] | None = None
        self._is_enabled: Callable[[str], bool] | None = None

    def compose(self) -> ComposeResult:
        if self._before_first_frame() and not self._any_enabled():
            self._shell = ControlBarShell(self._labels)
            yield self._shell
        else:
            for action in self._shown():
                yield self._new_button(action)
        self._status = Static("", id="control-status")
        yield self._status

    def on_mount(self) -> None:
        if self._shell is not None:
            # the buttons follow the first frame, in one screen update with the
            # stand-in's removal; at once if one can run already (never drawn greyed)
            if self._any_enabled():
                self._replace_shell()
            else:
                self.call_after_refresh(self._replace_shell)
                # it draws no ANSI colours: a theme of those (the palette's) ends it too
                self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        if self._shell is not None and self.app.native_ansi_color:
            self._replace_shell()

    def _before_first_frame(self) -> bool:
        """Whether the bar comes with its screen, which has not drawn a frame yet (the
        app's start); and in colours that the stand-in can draw (not the ANSI theme's)."""
        try:
            screen = self.screen
        except NoScreen:  # not on a screen: no first frame to spare
            return False
        return not screen.is_mounted and not self.app.native_ansi_color

    def _shown(self) -> list[RunAction]:
        """The bar's actions that the session can ever do (`set_capabilities`)."""
        return [a for a in BAR_ACTIONS if self._caps is None or a.offered(self._caps)]

    def _any_enabled(self) -> bool:
        is_enabled = self._is_enabled
        return is_enabled is not None and any(is_enabled(a.id) for a in self._shown())

    def _label(self, action: RunAction) -> str:
        if self._key_for is not None:
            return f"{self._key_for(action.id)} {action.bar}"
        return action.bar or ""

    def _labels(self) -> list[str]:
        return [self._label(action) for action in self._shown()]

    def _replace_shell(self) -> None:
        """The buttons in the stand-in's place, with the labels, states and capabilities
        asked for meanwhile."""
        shell, self._shell = self._shell, None
        if shell is None or not shell.is_attached or not self.is_attached:
            return
        buttons = [self._new_button(action) for action in self._shown()]
        with self.app.batch_update():
            # its removal completes later: hidden now, so no frame draws both
            shell.display = False
            self.mount_all(buttons, before=shell)
            shell.remove()

    def _new_button(self, action: RunAction) -> BarButton:
        label = self._label(action)
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
        if self._shell is not None:
            self._shell.refresh(layout=True)  # its labels are asked when it draws
        for action in BAR_ACTIONS:
            if action.id in self._buttons:
                self._buttons[action.id].label = self._label(action)

    def update_enabled(self, is_enabled: Callable[[str], bool]) -> None:
        self._is_enabled = is_enabled
        if self._shell is not None and self.is_mounted and self._any_enabled():
            self._replace_shell()  # the stand-in draws greyed buttons only
        for action_id, button in self._buttons.items():
            button.disabled = not is_enabled(action_id)

    def set_capabilities(self, caps: Capabilities) -> None:
        """Hide buttons that can never work in this session rather than grey them forever:
        pause/terminate offline, node stepping off GPU, go-to-step and history online. One
        not built yet (`__init__`) is mounted in its place when the session offers it."""
        self._caps = caps
        if self._shell is not None:  # it draws the offered ones, and so do the buttons
            self._shell.refresh(layout=True)
            return
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
