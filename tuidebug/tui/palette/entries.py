"""What the command palette (Ctrl+P) offers right now, as (title, help, action) entries.

`palette_entries` reads a `PaletteState` snapshot the app takes each time the palette
asks, so a paused session offers Continue and a running one Pause, and commands the
session cannot do are not offered at all. Each entry names a Textual action of the app
(`step`, `go_to_node('kernel_graph_0', 'Default/…')`, `screen.maximize`…), which the app
runs when the entry is chosen. No Textual here: plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from tuidebug.core.graph import Graph
from tuidebug.core.session import Metadata
from tuidebug.tui.run.actions import RUN_ACTIONS


@dataclass(frozen=True)
class PaletteEntry:
    title: str
    help: str
    action: str  # a Textual action string: "run('step')", "focus_pane(3)", "screen.minimize"


@dataclass(frozen=True)
class PaletteState:
    """What the palette's offer depends on, taken when the palette asks."""

    enabled: Collection[str]  # the run actions that can run now
    graphs: Mapping[str, Graph]
    current_graph: str | None
    metadata: Metadata
    panes: Mapping[int, str]  # pane number → its name ("scope tree")
    has_watchpoints: bool = False
    has_hits: bool = False
    messages: int = 0  # notices the session sent
    maximized: bool = False  # a pane is maximized (the palette offers to restore it)
    can_maximize: bool = False  # the focused widget can be maximized
    can_go_back: bool = False  # back (over the nodes and tensors visited) goes somewhere
    can_go_forward: bool = False
    tensor_shown: bool = False  # the tensor view shows a tensor (it can be compared)
    comparing: bool = False  # a golden dump is compared with (the divergence tab is there)


def _call(name: str, *args: object) -> str:
    """An action string with arguments; repr() quotes any graph or node name safely (the
    action parser reads the arguments as Python literals)."""
    return f"{name}({', '.join(repr(arg) for arg in args)})"


def palette_entries(state: PaletteState, key_for: Callable[[str], str]) -> list[PaletteEntry]:
    """The palette's commands, most useful first. `key_for(binding id)`: the key that runs
    a binding now (the user's, if remapped), shown in the help of keyed commands."""
    entries: list[PaletteEntry] = []
    add = entries.append
    for action in RUN_ACTIONS:
        if action.id in state.enabled:
            title, help_text = action.palette
            key = key_for(action.binding_id)
            add(PaletteEntry(title, f"{help_text}  ({key})", action.action))
    if state.graphs and "new_watchpoint" in state.enabled:
        add(
            PaletteEntry(
                "Apply the recommended watchpoints",
                "Overflow, all-zero, weight change, vanishing gradient… on the loaded graphs",
                "apply_recommended",
            )
        )
    if state.has_watchpoints:
        add(
            PaletteEntry(
                "Copy watchpoints as a check command",
                "tuidebug check DUMP --watch SPEC …, to the clipboard",
                "copy_check_command",
            )
        )
        add(
            PaletteEntry(
                "Save watchpoints to file…",
                "One --watch spec a line, for --watch-file",
                "save_watchpoints",
            )
        )
    if state.has_hits:
        add(
            PaletteEntry(
                "Save hits…",
                f"Every hit as JSON, like tuidebug check --json  ({key_for('hits.save')}"
                " in the hit list)",
                "save_hits",
            )
        )
    md = state.metadata
    if state.tensor_shown:
        if len(md.ranks) > 1:
            add(
                PaletteEntry(
                    "Compare the tensor with another rank",
                    "The same tensor on another rank: its difference, then its value  "
                    f"({key_for('tensor.compare_rank')} in the tensor view)",
                    _call("compare_tensor", "rank"),
                )
            )
        add(
            PaletteEntry(
                "Compare the tensor with another tensor…",
                "Any tensor of the same shape, NODE:SLOT@ITERATION  "
                f"({key_for('tensor.compare_tensor')} in the tensor view)",
                _call("compare_tensor", "tensor"),
            )
        )
    if state.can_go_back:
        add(
            PaletteEntry(
                "Back",
                f"To the node or tensor visited before  ({key_for('tuidebug.visit_back')})",
                "visit_back",
            )
        )
    if state.can_go_forward:
        add(
            PaletteEntry(
                "Forward",
                f"Again to where back came from  ({key_for('tuidebug.visit_forward')})",
                "visit_forward",
            )
        )
    if md.cur_node:
        where = next((g for g in state.graphs.values() if g.get(md.cur_node)), None)
        if where is not None:
            add(
                PaletteEntry(
                    "Go to the current kernel",
                    f"Where the training is suspended: {md.cur_node.rsplit('/', 1)[-1]}",
                    _call("go_to_node", where.name, md.cur_node),
                )
            )
    for name in state.graphs:
        if name != state.current_graph:
            add(
                PaletteEntry(
                    f"Show graph {name}", "Switch the tree to this graph", _call("show_graph", name)
                )
            )
    for rank in md.ranks:
        if rank != md.rank and len(md.ranks) > 1:
            add(
                PaletteEntry(
                    f"Switch to rank {rank}",
                    "Load this rank's graphs and hits",
                    _call("select_rank", rank),
                )
            )
    add(
        PaletteEntry(
            "Compare with a golden dump…",
            "Where does this dump stop matching a reference run? The divergence list (7)",
            "compare_golden",
        )
    )
    for number, name in state.panes.items():
        add(PaletteEntry(f"Focus {name}", f"Key {number}", _call("focus_pane", number)))
    if state.comparing:
        add(PaletteEntry("Focus divergence list", "Key 7", "divergence"))
    add(
        PaletteEntry(
            "Command line",
            f"tfdbg's commands: lt, pt, ni, li, lo, ps, eval  ({key_for('tuidebug.command_line')})",
            "command_line",
        )
    )
    add(PaletteEntry("Help: keys", "Key ? or F1", "help"))
    if state.messages:
        add(
            PaletteEntry(
                "Session messages",
                f"{state.messages} notices from the session (files skipped, …)",
                "messages",
            )
        )
    maximize = key_for("tuidebug.maximize")
    if state.maximized:
        add(
            PaletteEntry("Restore the pane", f"Undo maximize  ({maximize} or Esc)", "maximize_pane")
        )
    elif state.can_maximize:
        add(
            PaletteEntry(
                "Maximize the focused pane",
                f"It fills the screen; {maximize} again or Esc restores it  ({maximize})",
                "maximize_pane",
            )
        )
    add(PaletteEntry("Theme…", "Change the colours", "change_theme"))
    add(
        PaletteEntry(
            "Screenshot", "Save an SVG of the screen in the current directory", "screenshot_soon"
        )
    )
    return entries


__all__ = ["PaletteEntry", "PaletteState", "palette_entries"]
