"""The views the app makes on their first use and keeps, so what the user set up in them
survives closing them: the step's tensor list (`L`: its filters, sort and the health
already read) and the command line (`:`: its output and history).

`KeptViews` is a helper object of the `DebuggerApp` (not a mixin: watchpoint_flows.py
says why); the app hands it the keys and tells it when the step or the graphs changed.
Both views, and the command layer, load with their first use, not with the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.panes.command_line import CommandLine
    from tuidebug.tui.tensor_list.screen import TensorListScreen


class KeptViews:
    """The tensor list and the command line of one app, once made."""

    def __init__(self, app: AppHost) -> None:
        self._app = app
        self.tensor_list: TensorListScreen | None = None  # made by the first `L`
        self.command_line: CommandLine | None = None  # mounted by the first `:`

    def step_changed(self) -> None:
        """A new step or new graphs (a rank switch): the tensor list reads them again."""
        if self.tensor_list is not None:
            self.tensor_list.step_changed()

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
            from tuidebug.commands import command_registry
            from tuidebug.tui.panes.command_line import CommandLine

            panel = self.command_line = CommandLine(
                command_registry(self._app.session), id="command-line"
            )
            await main.mount(panel, before=main.query_one(Footer))
        panel.open()


__all__ = ["KeptViews"]
