"""Browser-like navigation: back / forward (`[` `]`, Alt+← Alt+→) over the nodes and
tensors visited, and the downstream view (`O`) beside the upstream origin trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, TabbedContent

from tests.tui.support import (
    CONV,
    RELU,
    make_app,
    run_palette,
    settled,
    synthetic_graph,
    tensor_shown,
    wait_for_screen,
    wait_until,
)
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.navigation.visit_history import Visit
from tuidebug.tui.neighbours.downstream_screen import DownstreamScreen
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.tensor_list.screen import TensorListScreen

GRAPH = "kernel_graph_0"
MATMUL = "Default/network-Net/layer0-Block/MatMul-op2"


async def loaded(pilot: Any) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")  # no recommended watchpoints
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer to close"
    )
    await settled(pilot)


async def open_from_list(pilot: Any, node: str) -> None:
    """Open `node`'s tensor from the tensor list (a jump, as a user makes one)."""
    await pilot.press("L")
    screen = await wait_for_screen(pilot, TensorListScreen)
    await wait_until(pilot, lambda: screen.entries and not screen.listing, what="the entries")
    names = [screen.entries[i].node for i in screen.rows.shown]
    screen.rows.set_cursor(names.index(node))
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: pilot.app._open_tensor is not None and pilot.app._open_tensor[1] == node,
        what=f"the tensor of {node}",
    )
    await tensor_shown(pilot, pilot.app.query_one(TensorView))


def at(app: Any) -> tuple[str | None, str | None]:
    """(the selected node, the node whose tensor is open)."""
    node = app.current_node.name if app.current_node is not None else None
    tensor = app._open_tensor[1] if app._open_tensor is not None else None
    return node, tensor


async def test_back_and_forward_return_to_the_nodes_and_tensors_visited() -> None:
    app, _session = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await open_from_list(pilot, RELU)
        await open_from_list(pilot, CONV)
        assert at(app) == (CONV, CONV)
        assert app._visits.history.places() == [Visit(GRAPH, RELU, 0), Visit(GRAPH, CONV, 0)]

        await pilot.press("left_square_bracket")
        await tensor_shown(pilot, app.query_one(TensorView))
        assert at(app) == (RELU, RELU)
        assert len(app._visits.history) == 2  # going back is not a visit
        await pilot.press("right_square_bracket")
        await tensor_shown(pilot, app.query_one(TensorView))
        assert at(app) == (CONV, CONV)
        await pilot.press("alt+left")
        await settled(pilot)
        assert at(app) == (RELU, RELU)
        await pilot.press("alt+right")
        await settled(pilot)
        assert at(app) == (CONV, CONV)
        await pilot.press("right_square_bracket")  # nothing ahead: said, nothing moves
        await settled(pilot)
        assert at(app) == (CONV, CONV)
        assert any("forward" in n.message for n in app._notifications)


async def test_back_works_from_the_tensor_view_with_alt_arrows_only() -> None:
    app, _session = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await open_from_list(pilot, RELU)
        await open_from_list(pilot, CONV)
        await pilot.press("5")  # the tensor view: [ and ] are its find previous / next
        view = app.query_one(TensorView)
        assert app.focused is view.canvas
        await pilot.press("left_square_bracket")
        await settled(pilot)
        assert at(app) == (CONV, CONV)  # [ was the tensor view's, not back
        await pilot.press("alt+left")
        await tensor_shown(pilot, view)
        assert at(app) == (RELU, RELU)


async def test_a_node_the_tree_cursor_rested_on_is_kept_when_leaving_it() -> None:
    app, _session = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await open_from_list(pilot, CONV)  # the tree's cursor on CONV, focused
        await pilot.press("down")  # the cursor moves on: not a visit
        await wait_until(pilot, lambda: at(app)[0] == RELU, what="the cursor on ReLU")
        assert len(app._visits.history) == 1
        await open_from_list(pilot, MATMUL)  # a jump: ReLU, where the cursor was, is kept
        assert [p.node for p in app._visits.history.places()] == [CONV, RELU, MATMUL]
        await pilot.press("left_square_bracket")
        await settled(pilot)
        assert at(app)[0] == RELU
        await pilot.press("left_square_bracket")
        await settled(pilot)
        assert at(app) == (CONV, CONV)


async def test_downstream_lists_the_consumers_with_their_hits_and_enter_goes_there() -> None:
    app, session = make_app()
    graph = synthetic_graph()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        session.create_watchpoint("tensor_overflow", {}, [MATMUL])
        session.recheck()  # one hit, on the MatMul two nodes below the Conv2D
        await wait_until(pilot, lambda: app.query_one(HitList).hit_count == 1, what="the hit")
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await pilot.press("O")
        screen = await wait_for_screen(pilot, DownstreamScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count, what="the downstream rows")
        assert table.row_count == len(graph.affected(CONV))
        first = [str(cell) for cell in table.get_row_at(0)]
        assert first[:4] == [
            "",
            "1",
            "ReLU",
            "layer0-Block/ReLU-op1",
        ]  # the direct consumer, nearest first
        second = [str(cell) for cell in table.get_row_at(1)]
        assert second[:4] == ["1", "2", "MatMul", "layer0-Block/MatMul-op2"]  # its hit marked
        assert "1 with hits" in str(screen.query_one("#downstream-summary").render())
        await pilot.press("down", "enter")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, DownstreamScreen), what="the screen to close"
        )
        assert at(app)[0] == MATMUL
        await pilot.press("left_square_bracket")  # the jump is a visit: back to the Conv2D
        await settled(pilot)
        assert at(app)[0] == CONV


async def test_downstream_of_the_focused_hit() -> None:
    app, session = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        session.create_watchpoint("tensor_overflow", {}, [MATMUL])
        session.recheck()
        await wait_until(pilot, lambda: app.query_one(HitList).hit_count == 1, what="the hit")
        await pilot.press("2")
        tree = app.query_one(HitList).tree_view
        leaf = next(
            leaf for group in tree.root.children for leaf in group.children if leaf.data is not None
        )
        tree.move_cursor(leaf)
        await settled(pilot)
        await pilot.press("O")
        screen = await wait_for_screen(pilot, DownstreamScreen)
        assert screen.found.start == MATMUL and screen.found.start_hits == 1
        assert screen.found.nodes[0].name.endswith("Add-op3")
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, DownstreamScreen), what="the screen to close"
        )


async def test_going_from_downstream_opened_in_the_hit_list_focuses_the_tree(
    demo_dump: Path,
) -> None:
    """Enter in the downstream screen goes to the node once the screen has closed: going
    while it was up, the focus Textual restored afterwards landed in the tree's name
    filter (the demo's deep scopes take a few frames to reveal)."""
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("y")  # the recommended watchpoints
        await wait_until(pilot, lambda: session.watchpoints, what="the watchpoints")
        await settled(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: session.hits, what="hits")
        await settled(pilot)
        await pilot.press("2", "down", "down")
        await settled(pilot)
        assert app.focused is app.query_one(HitList).tree_view
        await pilot.press("O")
        screen = await wait_for_screen(pilot, DownstreamScreen)
        chosen = screen.found.nodes[0].name
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, DownstreamScreen), what="the screen to close"
        )
        await settled(pilot)
        assert at(app)[0] == chosen
        assert app.focused is app.query_one("#scope-tree"), f"focus is on {app.focused!r}"
        assert app.query_one("#left-tabs", TabbedContent).active == "tree-tab"


async def test_the_palette_goes_back_and_forward() -> None:
    app, _session = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        titles = [c.title for c in app.palette_commands()]
        assert "Back" not in titles and "Forward" not in titles  # one place visited
        app.go_to_node(GRAPH, RELU)
        await settled(pilot)
        assert "Back" in [c.title for c in app.palette_commands()]
        await run_palette(pilot, "Back")
        await wait_until(pilot, lambda: at(app)[0] == CONV, what="back at the Conv2D")
        assert "Forward" in [c.title for c in app.palette_commands()]
        await run_palette(pilot, "Forward")
        await wait_until(pilot, lambda: at(app)[0] == RELU, what="forward at the ReLU")
