"""The TUI over real dumps: MindSpore's LeNet fixtures (2.0.0 and 2.10.0) and the demo dump.

These drive `DebuggerApp` on an `OfflineSession`, as `tuidebug offline DIR` does: open,
expand, select, create a watchpoint in the editor, recheck, jump from a hit to its node,
open its tensor, enter a bad slice, switch to the heatmap, reset the step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from textual.widgets import DataTable, Input, Label, OptionList, Static

from tests.offline.dump_copy import copy_dump
from tests.offline.subgraph_dump import add_graph_without_history
from tests.tui.support import notices, settled, wait_for_screen, wait_until
from tuidebug.core.tensor import TensorRef, tensor_statistics
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen, HistoryScreen, PromptScreen
from tuidebug.tui.messages import HitChosen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import GraphTree
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.editor import WatchpointEditor

SIZE = (160, 48)


async def open_dump(pilot: Any) -> None:
    """Indexed, the recommended-watchpoints offer declined, nothing left pending."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    await settled(pilot)


async def at_step(pilot: Any, step: int) -> None:
    """The header shows `step` and the step's work (summaries, checks) is done."""
    header = pilot.app.query_one(SessionHeader)
    await wait_until(pilot, lambda: f"step {step}/" in str(header.render()), what=f"step {step}")
    await settled(pilot)


async def history_shown(pilot: Any) -> HistoryScreen:
    """The history dialog, its rows filled (they may be filled after its first refresh)."""
    screen = await wait_for_screen(pilot, HistoryScreen)
    table = screen.query_one(DataTable)
    await wait_until(pilot, lambda: table.row_count, what="the history rows")
    return screen


def choose_condition(editor: WatchpointEditor, condition_id: str) -> None:
    conditions = editor.query_one("#condition-list", OptionList)
    conditions.highlighted = next(
        i
        for i in range(conditions.option_count)
        if conditions.get_option_at_index(i).id == condition_id
    )


async def test_lenet_open_step_select_and_summary(lenet_dump: Path) -> None:
    session = OfflineSession(lenet_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        header = str(app.query_one(SessionHeader).render())
        assert str(lenet_dump) in header and "step 0/4" in header and "ready" in header
        tree = app.query_one(GraphTree)
        assert [str(n.label).split()[0] for n in tree.root.children] == ["Default", "Gradients"]
        await pilot.press("n")
        await at_step(pilot, 1)
        assert session.metadata.step == 1
        graph = next(iter(session.graphs.values()))
        conv = next(n for n in graph.operators if n.op_type == "Conv2D")
        assert app.go_to_node(graph.name, conv.name)
        assert tree.cursor_node is not None and tree.cursor_node.data.node == conv.name
        details = app.query_one(NodeDetails)
        await wait_until(pilot, lambda: details.summary_text(0), what="the Conv2D's summary")
        expected = tensor_statistics(
            session.tensor(TensorRef(conv.name, 0, None, 0, graph.name))
        ).summary_line()
        assert details.summary_text(0) == expected
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="the tensor to open")
        assert view._array is not None
        assert view._array.shape == tuple(conv.outputs[0].shape or ())


async def test_lenet_watchpoint_recheck_and_jump_to_hit(lenet_dump: Path) -> None:
    session = OfflineSession(lenet_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        await pilot.press("n")
        await at_step(pilot, 1)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        choose_condition(editor, "tensor_too_large")
        await wait_until(
            pilot, lambda: editor.query("#param-abs_mean_gt"), what="the condition's fields"
        )
        await settled(pilot)  # the editor's defaults for the condition are set
        editor.query_one("#target-select").value = "all"
        field = editor.query_one("#param-abs_mean_gt", Input)
        field.focus()
        await pilot.press("1", "enter")
        await wait_until(pilot, lambda: session.watchpoints, what="the watchpoint created")
        await settled(pilot)
        assert len(session.watchpoints) == 1
        await pilot.press("r")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count, what="the recheck's hits")
        await settled(pilot)
        rows = [
            str(leaf.label) for group in hits.tree_view.root.children for leaf in group.children
        ]
        softmax = [r for r in rows if "SparseSoftmaxCrossEntropyWithLogits" in r]
        assert softmax and "abs_mean_gt: 2.3" in softmax[0] and "step 1" in softmax[0]
        await pilot.press("2")
        leaf = next(
            leaf
            for group in hits.tree_view.root.children
            for leaf in group.children
            if "SparseSoftmax" in str(leaf.label)
        )
        hits.tree_view.move_cursor(leaf)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="the hit's tensor to open")
        assert app.current_node is not None
        assert "SparseSoftmaxCrossEntropyWithLogits" in app.current_node.name
        assert (
            "step 1 (iteration 0)" in view._title
        )  # dump iteration 0 is step 1, as the header says


async def test_lenet_bad_slice_heatmap_and_reset_step(dump_2_0: Path) -> None:
    session = OfflineSession(dump_2_0)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        await pilot.press("n")
        await at_step(pilot, 1)
        graph = next(iter(session.graphs.values()))
        weight = graph.node("conv2.weight")  # 16×6×5×5
        app.go_to_node(graph.name, weight.name)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="the weight to open")
        await settled(pilot)  # its statistics too, before the keys
        assert view._array is not None and view._array.ndim == 4
        await pilot.press("5")
        assert view.canvas.has_focus
        await pilot.press("e")  # edit the slice
        slice_box = view.query_one("#tv-slice", Input)
        assert slice_box.has_focus
        slice_box.value = "[0, 9, :, :]"  # conv2.weight has 6 input channels
        await pilot.press("enter")
        await wait_until(pilot, lambda: "9" in view.error_text, what="the slice's error")
        first_error = view.error_text
        slice_box.value = "[0, :, :, :, :]"
        await pilot.press("enter")
        # too many entries: one sentence, no crash
        await wait_until(
            pilot,
            lambda: view.error_text and view.error_text != first_error,
            what="the error for too many entries",
        )
        view.canvas.focus()
        await pilot.press("m")  # the tensor pane's own key: heatmap (map)
        await wait_until(pilot, lambda: view.canvas is view.heatmap, what="the heatmap")
        assert view._heatmap is True
        await pilot.press("m")
        assert view._heatmap is False
        await pilot.press("1", "g")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("backspace", "9", "enter")
        assert "between" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("backspace", "3", "enter")
        await at_step(pilot, 3)
        assert session.metadata.step == 3
        assert "step 3/4 (iteration 2)" in str(app.query_one(SessionHeader).render())
        # the open tensor follows the step
        await wait_until(pilot, lambda: "step 3" in view._title, what="the tensor at step 3")
        expected = session.tensor(TensorRef(weight.name, 0, 2, 0, graph.name))
        assert view._array is not None and np.array_equal(view._array, expected)


def history_table(screen: HistoryScreen) -> tuple[list[str], list[list[str]]]:
    table = screen.query_one(DataTable)
    columns = [str(c.label) for c in table.ordered_columns]
    rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return columns, rows


async def test_history_lists_graphs_without_history_file(dump_2_0: Path, tmp_path: Path) -> None:
    """A control-flow dump: sub-graph 1 has dumped iterations 1 and 2 but no history file.
    Its runs sort in with the root graph's, marked "dumped folders", and Enter on one goes
    to that step like any row."""
    root = copy_dump(dump_2_0, tmp_path / "d")
    sub = add_graph_without_history(root, 1, {1: 1, 2: 2})
    session = OfflineSession(root)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        await pilot.press("h")
        screen = await history_shown(pilot)
        assert str(screen.query_one("#history-title", Label).render()) == (
            "Graph execution history"
        )
        note = str(screen.query_one("#history-note", Static).render())
        assert note.startswith(f"1 graph has no history file ({sub}):")
        columns, rows = history_table(screen)
        assert columns == ["step", "iteration", "graph", "data", "from", "hits", "sub-graphs"]
        assert [(r[0].strip(), r[2], r[3], r[4]) for r in rows] == [
            ("1", "kernel_graph_0", "dumped", "history file"),
            ("2", "kernel_graph_0", "dumped", "history file"),
            ("2", sub, "dumped", "dumped folders"),
            ("3", "kernel_graph_0", "dumped", "history file"),
            ("3", sub, "dumped", "dumped folders"),
            ("4", "kernel_graph_0", "dumped", "history file"),
        ]
        await pilot.press("down", "down", "down", "down", "enter")  # sub-graph, step 3
        await at_step(pilot, 3)
        assert not isinstance(app.screen, HistoryScreen)
        assert session.metadata.step == 3
        assert "step 3/4 (iteration 2)" in str(app.query_one(SessionHeader).render())
        await pilot.press("h")
        screen = await history_shown(pilot)
        table = screen.query_one(DataTable)
        assert table.cursor_row == 3  # the first row of the current step
        assert history_table(screen)[1][4][0].startswith("▶")


async def test_history_without_any_history_file(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(
        dump_2_0, tmp_path / "d", keep=lambda rel: "ms_global_execution_order" not in rel
    )
    session = OfflineSession(root)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        await pilot.press("h")
        screen = await history_shown(pilot)
        title = str(screen.query_one("#history-title", Label).render())
        assert title == "Graph runs (no history file — from dumped folders)"
        assert "No graph has a usable history file" in str(
            screen.query_one("#history-note", Static).render()
        )
        columns, rows = history_table(screen)
        assert columns[4] == "from"
        assert [(r[0].strip(), r[4]) for r in rows] == [
            (str(s), "dumped folders") for s in range(1, 5)
        ]
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: session.metadata.step == 2, what="the jump to step 2")


async def test_history_with_history_file_has_no_from_column(dump_2_0: Path) -> None:
    session = OfflineSession(dump_2_0)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_dump(pilot)
        await pilot.press("h")
        screen = await history_shown(pilot)
        assert not screen.query("#history-note")
        columns, rows = history_table(screen)
        assert columns == ["step", "iteration", "graph", "data", "hits", "sub-graphs"]
        assert len(rows) == 4


async def test_demo_continue_finds_the_overflow(demo_dump: Path) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("y")  # recommended watchpoints
        await wait_until(pilot, lambda: session.watchpoints, what="the recommended watchpoints")
        await settled(pilot)
        assert len(session.watchpoints) >= 3
        # Continue until the tensor-overflow watchpoint fires (the demo's Inf arrives at
        # iteration 3); each continue stops at the first step with hits.
        for _ in range(session.metadata.max_step or 0):
            if any(h.condition.abbr == "TO" for h in session.hits):
                break
            await pilot.press("c")
            await settled(pilot)  # the continue (a worker) and the hits it found
        overflow = [h for h in session.hits if h.condition.abbr == "TO"]
        assert overflow, "the demo's overflow was not found"
        hits = app.query_one(HitList)
        rows = [
            str(leaf.label) for group in hits.tree_view.root.children for leaf in group.children
        ]
        assert any(r.startswith("TO ") and "NaN or +/-Inf" in r for r in rows)
        first = overflow[0]
        app.post_message(HitChosen(first))
        details = app.query_one(NodeDetails)
        await wait_until(
            pilot,
            lambda: (
                details.node is not None
                and details.node.name == first.tensor.node
                and details.summary_text(first.tensor.slot)
            ),
            what="the hit's node and its summary",
        )
        assert app.current_node is not None and app.current_node.name == first.tensor.node
        summary = details.summary_text(first.tensor.slot) or ""
        assert "Inf" in summary or "NaN" in summary


async def test_not_a_dump_is_a_notice_not_a_crash(tmp_path: Path) -> None:
    session = OfflineSession(tmp_path)  # an empty folder
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: notices(app), what="a notice about the folder")
        await settled(pilot)
        messages = notices(app)
        assert messages and all("Traceback" not in m for m in messages)
        assert app.is_running
        await pilot.press("n", "w", "r", "g")  # everything refuses politely
        assert app.is_running
