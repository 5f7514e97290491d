"""The watchpoint pane of one app: its list, built when first needed.

With no watchpoint yet the first frame shows the list's shell (shell.py), not the list, a
DataTable whose module, styles and first columns cost as much as a tenth of that frame
(issue 28). `WatchpointPane` builds the list when something first asks for it, just after
that frame (`replace_shell`) at the latest; what was set on the pane meanwhile (the
watchpoints, the hit counts, the title) goes to the list when it is built, as it went to
the unmounted list before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from textual.widget import Widget

from tuidebug.tui.watchpoints.shell import PANE_ID, WatchpointListShell

if TYPE_CHECKING:
    from tuidebug.core.watchpoints import Watchpoint
    from tuidebug.tui.watchpoints.list_pane import WatchpointList


class WatchpointPane:
    """One app's watchpoint list, built when first asked for (`table`); until then it
    keeps what the app sets on it and hands it to the list when it builds it."""

    def __init__(self, watchpoints: Sequence[Watchpoint], title: str) -> None:
        self._watchpoints = list(watchpoints)
        self._hit_counts: dict[int, int] = {}
        self._title = title
        self._new_key = "w"  # the key the empty list names (a remapped one: set_new_key)
        self._shell: WatchpointListShell | None = None

    @cached_property
    def table(self) -> WatchpointList:
        """The list (built on the first call, holding what was set before)."""
        from tuidebug.tui.watchpoints.list_pane import WatchpointList

        table = WatchpointList(id=PANE_ID)
        table.border_title = self._title
        table.set_watchpoints(self._watchpoints)
        table.set_hit_counts(self._hit_counts)
        table.set_new_key(self._new_key)
        return table

    @property
    def built(self) -> bool:
        return "table" in self.__dict__

    @property
    def border_title(self) -> str:
        return str(self.table.border_title) if self.built else self._title

    @border_title.setter
    def border_title(self, title: str) -> None:
        self._title = title
        if self.built:
            self.table.border_title = title

    def set_watchpoints(self, watchpoints: Sequence[Watchpoint]) -> None:
        if self.built:
            self.table.set_watchpoints(watchpoints)
        else:
            self._watchpoints = list(watchpoints)

    def set_new_key(self, key: str) -> None:
        """Name `key`, the one that adds a watchpoint now, in the empty list's row."""
        self._new_key = key
        if self.built:
            self.table.set_new_key(key)
        elif self._shell is not None:
            self._shell.new_key = key
            self._shell.refresh()

    def set_hit_counts(self, counts: Mapping[int, int]) -> None:
        if self.built:
            self.table.set_hit_counts(counts)
        else:
            self._hit_counts = dict(counts)

    def first_frame(self) -> Widget:
        """What the first frame shows in the pane: the list where the session has
        watchpoints, else its shell (the list replaces it just after that frame)."""
        if self._watchpoints or self.built:
            return self.table
        self._shell = WatchpointListShell(self._title, self._new_key)
        return self._shell

    async def replace_shell(self, shell: Widget) -> None:
        """Put the list in the place of its first-frame shell (if the pane is that), in
        one screen update."""
        parent = shell.parent
        if not isinstance(shell, WatchpointListShell) or not isinstance(parent, Widget):
            return
        table = self.table
        if table.is_attached:
            return
        place = parent.children.index(shell)
        with shell.app.batch_update():
            # the two share the pane's id (and so its styles): the shell goes first
            await shell.remove()
            await parent.mount(table, before=place)
