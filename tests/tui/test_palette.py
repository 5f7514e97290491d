"""What the command palette offers, from a `PaletteState` snapshot (no app, no Pilot)."""

from __future__ import annotations

from typing import Any

from textual.actions import parse

from tests.tui.support import synthetic_graph
from tuidebug.core.session import Metadata, SessionState
from tuidebug.tui.palette.entries import PaletteState, palette_entries

PANES = {1: "scope tree", 2: "hit list"}


def state(**changes: Any) -> PaletteState:
    graph = synthetic_graph()
    values: dict[str, Any] = {
        "enabled": set(),
        "graphs": {graph.name: graph},
        "current_graph": graph.name,
        "metadata": Metadata("offline", "/d", state=SessionState.WAITING, step=1, max_step=4),
        "panes": PANES,
    }
    values.update(changes)
    return PaletteState(**values)


def entries(**changes: Any) -> dict[str, tuple[str, str]]:
    return {e.title: (e.help, e.action) for e in palette_entries(state(**changes), str.upper)}


def test_enabled_run_actions_come_first_with_their_keys() -> None:
    offered = palette_entries(state(enabled={"continue", "step"}), lambda i: f"<{i}>")
    assert [(e.title, e.action) for e in offered[:2]] == [
        ("Step", "run('step')"),
        ("Continue", "run('continue')"),
    ]
    assert offered[0].help == "Run one step and check the watchpoints  (<tuidebug.step>)"
    assert "Pause" not in [e.title for e in offered]


def test_what_the_session_holds_decides_the_rest() -> None:
    bare = entries()
    assert "Apply the recommended watchpoints" not in bare
    assert "Copy watchpoints as a check command" not in bare and "Save hits…" not in bare
    assert "Session messages" not in bare
    full = entries(enabled={"new_watchpoint"}, has_watchpoints=True, has_hits=True, messages=3)
    assert full["Apply the recommended watchpoints"][1] == "apply_recommended"
    assert full["Save watchpoints to file…"][1] == "save_watchpoints"
    assert full["Save hits…"] == (
        "Every hit as JSON, like tuidebug check --json  (HITS.SAVE in the hit list)",
        "save_hits",
    )
    assert full["Session messages"][0] == "3 notices from the session (files skipped, …)"


def test_graphs_ranks_kernel_and_panes() -> None:
    other = synthetic_graph("kernel_graph_1")
    graphs = {"kernel_graph_0": synthetic_graph(), "kernel_graph_1": other}
    node = next(iter(other)).name
    md = Metadata("online", "h:1", state=SessionState.WAITING, rank=0, ranks=(0, 1), cur_node=node)
    offered = entries(graphs=graphs, metadata=md)
    assert "Show graph kernel_graph_0" not in offered  # the one shown
    help_text, action = offered["Show graph kernel_graph_1"]
    assert help_text == "Switch the tree to this graph"
    assert parse(action) == ("", "show_graph", ("kernel_graph_1",))
    assert parse(offered["Switch to rank 1"][1]) == ("", "select_rank", (1,))
    assert "Switch to rank 0" not in offered
    kernel = offered["Go to the current kernel"]
    assert parse(kernel[1])[1:] == ("go_to_node", ("kernel_graph_0", node))
    assert offered["Focus hit list"] == ("Key 2", "focus_pane(2)")


def test_odd_names_survive_the_action_string() -> None:
    name = 'it\'s "odd", (really)\\'
    graph = synthetic_graph(name)
    offered = entries(graphs={name: graph, "g": synthetic_graph("g")}, current_graph="g")
    assert parse(offered[f"Show graph {name}"][1]) == ("", "show_graph", (name,))


def test_maximize_or_restore_and_the_fixed_tail() -> None:
    titles = list(entries(can_maximize=True))
    assert titles[-4:] == ["Help: keys", "Maximize the focused pane", "Theme…", "Screenshot"]
    restore = entries(maximized=True, can_maximize=True)
    # the app's own action (the whole pane, toggled), not Textual's screen.maximize, which
    # ran on the palette's screen and maximized nothing
    assert restore["Restore the pane"][1] == "maximize_pane"
    assert entries(can_maximize=True)["Maximize the focused pane"][1] == "maximize_pane"
    assert "Maximize the focused pane" not in restore


def test_back_forward_and_the_tensor_compares() -> None:
    bare = entries()
    assert "Back" not in bare and "Forward" not in bare
    assert not any(title.startswith("Compare the tensor") for title in bare)
    md = Metadata("offline", "/d", state=SessionState.WAITING, step=1, rank=0, ranks=(0, 1))
    offered = entries(can_go_back=True, can_go_forward=True, tensor_shown=True, metadata=md)
    assert offered["Back"] == (
        "To the node or tensor visited before  (TUIDEBUG.VISIT_BACK)",
        "visit_back",
    )
    assert offered["Forward"][1] == "visit_forward"
    rank = offered["Compare the tensor with another rank"]
    assert parse(rank[1]) == ("", "compare_tensor", ("rank",))
    assert rank[0].endswith("(TENSOR.COMPARE_RANK in the tensor view)")
    other = offered["Compare the tensor with another tensor…"]
    assert parse(other[1]) == ("", "compare_tensor", ("tensor",))
    # one rank: nothing to compare with there
    one_rank = entries(tensor_shown=True)
    assert "Compare the tensor with another rank" not in one_rank
    assert "Compare the tensor with another tensor…" in one_rank
