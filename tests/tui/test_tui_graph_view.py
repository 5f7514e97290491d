"""The neighbourhood graph view (`G`): opened from the tree, the hit list or the palette,
it draws the node with its inputs and consumers, the arrows move the selection, Enter
re-centres (the tree follows) and Enter on the centre goes there; hits are marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import Tree

from tests.tui.support import (
    CONV,
    RELU,
    make_app,
    run_palette,
    settled,
    synthetic_graph,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.neighbours.graph_screen import (
    GraphCanvas,
    GraphScreen,
    hit_counts,
    nan_inf_kinds,
)
from tuidebug.tui.panes.scope_tree import GraphTree

GRAPH = "kernel_graph_0"
WEIGHT = "layer0.weight"
LENET = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
LENET /= "mindspore_lenet_dump/ms2_0_0"


class GraphApp(App[None]):
    """The graph screen alone, over a bare app."""

    def __init__(self, screen: GraphScreen) -> None:
        super().__init__()
        self._graph_screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._graph_screen)


async def start(pilot: Any, *, accept_recommended: bool = False) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("y" if accept_recommended else "n")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    await settled(pilot)


def screen_text(canvas: GraphCanvas) -> str:
    """The canvas as drawn on the screen now (its visible rows)."""
    height = canvas.scrollable_content_region.height
    return "\n".join(canvas.render_line(y).text for y in range(height))


async def open_graph(pilot: Any) -> GraphScreen:
    await pilot.press("G")
    screen = await wait_for_screen(pilot, GraphScreen)
    await settled(pilot)
    return screen


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_graph_view_draws_moves_recentres_and_goes(size: tuple[int, int]) -> None:
    app, _session = make_app()
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        screen = await open_graph(pilot)
        canvas = screen.canvas
        assert app.focused is canvas
        assert canvas.centre == CONV and canvas.selected == CONV
        assert {CONV, RELU, WEIGHT} <= set(canvas.picture.boxes)
        drawn = screen_text(canvas)
        assert "Conv2D-op0" in drawn and "╔" in drawn  # the centre, in a double box
        assert "ReLU-op1" in drawn or size == (80, 24)  # all of it fits the large screen
        summary = str(screen.query_one("#graph-summary").render())
        assert "depth 2" in summary and "nodes" in summary
        assert CONV in str(screen.query_one("#graph-selected").render())

        await pilot.press("down")
        assert canvas.selected == RELU
        assert "ReLU-op1" in screen_text(canvas)  # scrolled into view at 80×24
        await pilot.press("up", "up")
        assert canvas.selected == WEIGHT
        await pilot.press("down", "down")
        assert canvas.selected == RELU

        await pilot.press("enter")  # re-centre: the view and the tree behind follow
        await settled(pilot)
        assert isinstance(app.screen, GraphScreen)
        assert canvas.centre == RELU and canvas.selected == RELU
        assert app.current_node is not None and app.current_node.name == RELU
        assert "ReLU-op1" in str(screen.query_one("#graph-title").render())

        await pilot.press("enter")  # on the centre: go there
        await wait_until(pilot, lambda: not isinstance(app.screen, GraphScreen), what="close")
        await settled(pilot)
        assert isinstance(app.focused, GraphTree)
        cursor = app.focused.cursor_node
        assert cursor is not None and cursor.data is not None
        assert app.current_node is not None and app.current_node.name == RELU


async def test_depth_keys_and_escape() -> None:
    app, _session = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, "Default/network-Net/layer1-Block/Add-op8")
        await settled(pilot)
        screen = await open_graph(pilot)
        canvas = screen.canvas
        two = set(canvas.picture.boxes)
        await pilot.press("plus")
        assert canvas.depth == 3 and set(canvas.picture.boxes) > two
        assert "depth 3" in str(screen.query_one("#graph-summary").render())
        await pilot.press("minus", "minus")
        assert canvas.depth == 1 and set(canvas.picture.boxes) < two
        await pilot.press("minus")
        await wait_for_notice(pilot, "Depth 1 is the smallest")
        assert canvas.depth == 1
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, GraphScreen), what="close")
        assert app.current_node is not None and app.current_node.name.endswith("Add-op8")


async def test_hits_are_marked_from_the_hit_list() -> None:
    app, session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot, accept_recommended=True)
        await pilot.press("r")  # recheck: every watchpoint hits its first nodes
        await wait_until(pilot, lambda: session.hits, what="hits")
        await settled(pilot)
        hit_node = session.hits[0].tensor.node
        await pilot.press("2")
        assert isinstance(app.focused, Tree)
        screen = await open_graph(pilot)  # from a hit: its node
        canvas = screen.canvas
        assert canvas.centre == hit_node
        assert canvas.hits.get(hit_node)
        box = canvas.picture.boxes[hit_node]
        assert canvas.picture.lines[box.y][box.x + 1] == "!"
        assert "with hits (!)" in str(screen.query_one("#graph-summary").render())
        assert "hit" in str(screen.query_one("#graph-selected").render())


async def test_reached_from_the_palette_and_listed_in_the_help() -> None:
    app, _session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        await pilot.press("G")  # nothing selected yet: the key says why it cannot
        await settled(pilot)
        assert not isinstance(app.screen, GraphScreen)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await run_palette(pilot, "Graph around")
        screen = await wait_for_screen(pilot, GraphScreen)
        assert screen.canvas.centre == CONV
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, GraphScreen), what="close")
        assert any(row[0] == "G" and "graph" in row[1] for row in app.help_keys())
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)


async def test_a_click_selects_then_centres() -> None:
    app, _session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        screen = await open_graph(pilot)
        canvas = screen.canvas
        box = canvas.picture.boxes[RELU]
        left, top = canvas.margins()
        offset = (
            left + box.x + 2 - round(canvas.scroll_x),
            top + box.y + 1 - round(canvas.scroll_y),
        )
        await pilot.click(GraphCanvas, offset=offset)
        assert canvas.selected == RELU and canvas.centre == CONV
        await pilot.click(GraphCanvas, offset=offset)
        await settled(pilot)
        assert canvas.centre == RELU


@pytest.mark.skipif(not LENET.is_dir(), reason="the shared LeNet fixture is absent")
async def test_lenet_neighbourhood() -> None:
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(LENET)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await start(pilot)
            graph = app.graphs[app.current_graph or ""]
            conv = next(n for n in graph if n.op_type == "Conv2D")
            app.go_to_node(graph.name, conv.name)
            await settled(pilot)
            screen = await open_graph(pilot)
            canvas = screen.canvas
            await pilot.press("e")  # every scope open: one box per node
            assert canvas.expanded is None and not canvas.picture.hood.scopes
            neighbours = {n.name for n in graph.inputs(conv.name) + graph.consumers(conv.name)}
            assert neighbours <= set(canvas.picture.boxes)
            for src, dst in canvas.picture.hood.edges:
                assert graph.get(src) in graph.inputs(dst)
            await pilot.press("down")
            moved = canvas.selected
            assert moved in {n.name for n in graph.consumers(conv.name)}
            await pilot.press("enter", "enter")
            await wait_until(pilot, lambda: not isinstance(app.screen, GraphScreen), what="go")
            await settled(pilot)
            assert app.current_node is not None and app.current_node.name == moved
    finally:
        session.close()


@pytest.mark.skipif(not LENET.is_dir(), reason="the shared LeNet fixture is absent")
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_scopes_close_open_and_edges_say_their_tensor(size: tuple[int, int]) -> None:
    """MindInsight's hierarchical graph: a scope of several nodes outside the centre's is
    one rounded box `…/scope (N nodes)`; Enter opens it, - on one of its nodes closes it
    again; each exit is labelled with the producer's dtype and shape."""
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(LENET)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=size) as pilot:
            await start(pilot)
            graph = app.graphs[app.current_graph or ""]
            relu = next(n for n in graph if n.op_type == "ReLU")
            app.go_to_node(graph.name, relu.name)
            await settled(pilot)
            screen = await open_graph(pilot)
            canvas = screen.canvas
            scopes = canvas.picture.hood.scopes
            assert "Gradients/" in scopes and len(scopes["Gradients/"]) > 1
            drawn = "\n".join(canvas.picture.lines)
            assert f"({len(scopes['Gradients/'])} nodes)" in drawn and "╭" in drawn
            assert "f32[" in drawn  # an edge's tensor
            assert "closed scope" in str(screen.query_one("#graph-summary").render())
            canvas.select("Gradients/")
            await settled(pilot)
            assert "Enter or + opens it" in str(screen.query_one("#graph-selected").render())
            await pilot.press("enter")  # opens the scope, selects a box inside it
            await settled(pilot)
            assert "Gradients/" not in canvas.picture.boxes
            assert canvas.selected.startswith("Gradients/")
            assert canvas.expanded is not None and "Gradients" in canvas.expanded
            while canvas.closable_scope() not in (None, "Gradients"):
                await pilot.press("minus")  # closes the inner scopes first
            await pilot.press("minus")
            await settled(pilot)
            assert canvas.selected == "Gradients/" and "Gradients/" in canvas.picture.boxes
            assert isinstance(app.screen, GraphScreen)
    finally:
        session.close()


async def test_nan_inf_boxes_are_red_other_hits_yellow() -> None:
    """A node some hit says holds NaN/Inf is marked !NaN and drawn in the error colour;
    a node with other hits is marked ! in the warning colour, as the hit list's lines."""
    graph = synthetic_graph()
    large = get_condition("TL")
    hits = [  # TL could not compare a mean with NaN in it: the NaN error bit
        WatchpointHit(1, large, TensorRef(RELU, 0, 0, 0, graph.name), ErrorCode.NAN),
        WatchpointHit(2, large, TensorRef(WEIGHT, 0, 0, 0, graph.name), 0),
    ]
    kinds = nan_inf_kinds(hits, graph)
    assert kinds == {RELU: "NaN"}
    app = GraphApp(GraphScreen(graph, CONV, hit_counts(hits, graph), nan_inf=kinds))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(pilot, GraphScreen)
        canvas = screen.canvas
        relu, weight = canvas.picture.boxes[RELU], canvas.picture.boxes[WEIGHT]
        assert canvas.picture.lines[relu.y][relu.x : relu.x + 5] == "┌!NaN"
        assert canvas.picture.lines[weight.y][weight.x : weight.x + 2] == "┌!"
        red = canvas.box_style(RELU).color
        yellow = canvas.box_style(WEIGHT).color
        assert red == canvas.style_of("graph-canvas--nan").color
        assert yellow == canvas.style_of("graph-canvas--hit").color and red != yellow
        assert "1 with NaN/Inf" in str(screen.query_one("#graph-summary").render())
        await pilot.press("escape")
