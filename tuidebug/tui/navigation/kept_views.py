"""The views the app makes on their first use and keeps, so what the user set up in them
survives closing them: the step's tensor list (`L`: its filters, sort and the health
already read) and the command line (`:`: its output and history).

`KeptViews` is a helper object of the `DebuggerApp` (not a mixin: watchpoint_flows.py
says why); the app hands it the keys and tells it when the step or the graphs changed.
Neither view, nor the command layer, loads with the app's first frame. The tensor list
loads with its first use; the command line a few seconds after the graphs (hidden, when
the start has settled), so that the first `:` shows a built panel as the later ones do
(building it on the key took 0.15–0.3 s: the command layer's import, the mount, the
first styling of its widgets; issue 28 asks 0.1 s). A `:` before then builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.screen import Screen
from textual.widgets import Footer

if TYPE_CHECKING:
    from textual.widget import AwaitMount

    from tuidebug.tui.host import AppHost
    from tuidebug.tui.panes.command_line import CommandLine
    from tuidebug.tui.tensor_list.screen import TensorListScreen


# seconds from the graphs' load to building the command line: after the load's own work
# (the tree, the recommended watchpoints' offer) and the cold-start test's look at the
# modules loaded (tests/tui/test_cold_start.py), before most users' first `:`
PREBUILD_AFTER_S = 2.5


class KeptViews:
    """The tensor list and the command line of one app, once made."""

    def __init__(self, app: AppHost) -> None:
        self._app = app
        self.tensor_list: TensorListScreen | None = None  # made by the first `L`
        self.command_line: CommandLine | None = None  # built hidden after the load, or by `:`
        self._mounting: AwaitMount | None = None  # the command line's mount, until done
        self._prebuild_planned = False

    def step_changed(self) -> None:
        """A new step or new graphs (a rank switch): the tensor list reads them again. The
        first call (the graphs loaded) plans the command line's build."""
        if self.tensor_list is not None:
            self.tensor_list.step_changed()
        if not self._prebuild_planned:
            self._prebuild_planned = True
            self._app.screen_stack[0].set_timer(PREBUILD_AFTER_S, self._prebuild)

    def _prebuild(self) -> None:
        if self.command_line is None:
            self._build_command_line(self._app.screen_stack[0])

    @property
    def tensor_list_shown(self) -> bool:
        return self.tensor_list is not None and self._app.screen is self.tensor_list

    def show_tensor_list(self) -> None:
        """L: every tensor of the step (one screen, kept: its filters and the health
        already read survive closing it)."""
        from tuidebug.tui.tensor_list.screen import TensorListScreen  # on the first L only

        app = self._app
        if self.tensor_list is None:
            self.tensor_list = TensorListScreen(app.session)
            app.install_screen(self.tensor_list, name="tensor-list")
        if app.screen is not self.tensor_list:
            app.push_screen(self.tensor_list)

    async def open_command_line(self) -> None:
        """`:` opens the command line (tfdbg's commands over this session) at the bottom
        of the main screen."""
        main = self._app.screen_stack[0]
        if self._app.screen is not main:
            return  # a dialog is up: the key is not for the main screen
        panel = self.command_line
        if panel is None:
            panel = self._build_command_line(main)
        if self._mounting is not None:  # built just before, or by the prebuild: mounted?
            await self._mounting
            self._mounting = None
        panel.open()

    def _build_command_line(self, main: Screen[Any]) -> CommandLine:
        """Mount the command line, hidden, at the bottom of the main screen (above the
        footer); `open_command_line` awaits the mount."""
        from tuidebug.commands import command_registry
        from tuidebug.tui.panes.command_line import CommandLine

        panel = self.command_line = CommandLine(
            command_registry(self._app.session), id="command-line"
        )
        self._mounting = main.mount(panel, before=main.query_one(Footer))
        return panel


__all__ = ["KeptViews"]
