"""Command palette (Ctrl+P): the commands that make sense right now, plus "go to node".

Commands are asked from the app each time the palette opens (`palette_commands`), so a
paused online session offers Continue while a running one offers Pause, and commands the
session cannot do are not offered at all; which ones is palette.py's `palette_entries`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider

from tuidebug.tui.kit.labels import markup_safe

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

    from tuidebug.core.graph import Graph

MAX_NODE_HITS = 40


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    run: Callable[[], object]


class PaletteHost(Protocol):
    """What the provider needs from the app (kept narrow so it can be faked in tests)."""

    def palette_commands(self) -> list[PaletteCommand]: ...

    def palette_graph(self) -> Graph | None: ...

    def palette_go_to_node(self, graph: str, node: str) -> None: ...


class DebuggerCommands(Provider):
    """State-aware commands and node search for the current graph."""

    def _host(self) -> PaletteHost | None:
        app = self.app
        return app if hasattr(app, "palette_commands") else None  # type: ignore[return-value]

    async def discover(self) -> Hits:
        host = self._host()
        if host is None:
            return
        for command in host.palette_commands():
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        host = self._host()
        if host is None:
            return
        matcher = self.matcher(query)
        for command in host.palette_commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.run, help=command.help)
        graph = host.palette_graph()
        if graph is None or len(query.strip()) < 2:
            return
        needle = query.strip().lower()
        found = 0
        for node in graph:
            # A substring test first: the fuzzy matcher is too slow for 50,000 names.
            if needle not in node.name.lower():
                continue
            # names from the graph: escaped (the palette reads titles and help as markup)
            title = f"Go to node {markup_safe(node.short_name)}"
            score = max(matcher.match(title), 0.1) * 0.9  # commands outrank nodes
            yield Hit(
                score,
                matcher.highlight(title),
                partial(host.palette_go_to_node, graph.name, node.name),
                text=title,
                help=markup_safe(f"{node.op_type} · {node.scope or graph.name}"),
            )
            found += 1
            if found >= MAX_NODE_HITS:
                break


def calling_screen(app: App[Any]) -> Screen[Any]:
    """The screen the palette was asked from (asked while it is open: not the palette)."""
    return next(
        (s for s in reversed(app.screen_stack) if not isinstance(s, CommandPalette)),
        app.screen,
    )


def run_from_palette(app: App[Any], screen: Screen[Any], action: str) -> None:
    """Run a palette entry's action: `screen.…` ones on the screen the palette was asked
    from (as they always were), the others on the app."""
    if action.startswith("screen."):
        app.call_later(app.run_action, action.removeprefix("screen."), screen)
    else:
        app.call_later(app.run_action, action)
