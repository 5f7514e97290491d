"""Pilot tests of issue 28's expert features in the main screen: W watches a scope whole,
R groups the hits by rank, `<` `>` `{` `}` move the dividers (kept for the session); and
two 80×24 defects: the watchpoint editor's parameter inputs, the help's reflowed text."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, Label, OptionList, Select

from tests.tui.support import CONV, RELU, make_app, settled, wait_for_screen, wait_until
from tuidebug.core.session import HitsArrived
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.watchpoints.editor import WatchpointEditor

GRAPH = "kernel_graph_0"
LAYER0 = "Default/network-Net/layer0-Block"
SIZES = [(160, 48), (80, 24)]


async def start(pilot: Any) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")  # no recommended watchpoints
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer gone"
    )
    await settled(pilot)


def pick(editor: WatchpointEditor, condition: str) -> None:
    conditions = editor.query_one("#condition-list", OptionList)
    conditions.highlighted = next(
        i
        for i in range(conditions.option_count)
        if conditions.get_option_at_index(i).id == condition
    )


# ------------------------------------------------------------------- W: a scope whole
async def test_w_on_a_node_watches_its_scope_whatever_the_condition() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await pilot.press("W")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        target = editor.query_one("#target-select", Select)
        await wait_until(pilot, lambda: target.value == f"scope:{LAYER0}", what="the scope")
        # a weight condition keeps the scope (it holds layer0.weight), where w would pick
        # every weight
        pick(editor, "weight_overflow")
        await wait_until(
            pilot,
            lambda: editor.spec is not None and editor.spec.id == "weight_overflow",
            what="WO picked",
        )
        assert target.value == f"scope:{LAYER0}"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(session.watchpoints) == 1, what="the watchpoint")
        wp = session.watchpoints[0]
        assert wp.condition.abbr == "WO" and wp.targets == (LAYER0,)


async def test_w_on_a_scope_row_and_a_scope_without_the_conditions_kind() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZES[1]) as pilot:
        await start(pilot)
        await pilot.press("1")  # the tree, its cursor on the first scope: Default
        await pilot.press("down")  # Gradients: no weight there
        await pilot.press("W")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        assert editor.scope == "Gradients" and editor.node is None
        pick(editor, "weight_overflow")
        target = editor.query_one("#target-select", Select)
        # the scope would be refused for a weight condition: the category is offered
        await wait_until(pilot, lambda: target.value == "category", what="all weights")


# ------------------------------------------------------------------ R: hits by rank
async def test_r_groups_the_hits_by_rank() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZES[1]) as pilot:
        await start(pilot)
        to = session.create_watchpoint("tensor_overflow", {})
        hits = tuple(
            WatchpointHit(to.id, to.condition, TensorRef(node, 0, 0, rank, GRAPH), 0, (), i, 1)
            for i, (node, rank) in enumerate([(CONV, 1), (RELU, 0), (CONV, 0)])
        )
        hit_list = app.query_one(HitList)
        hit_list.set_context(session.graphs, (0, 1))  # as a session of two ranks does
        session._hits = list(hits)
        session.emit(HitsArrived(hits, 1))
        await wait_until(pilot, lambda: hit_list.hit_count == 3, what="the 3 hits")
        await pilot.press("2")
        await settled(pilot)
        tree = hit_list.tree_view
        assert [str(g.label).split()[0] for g in tree.root.children] == ["#1"]
        await pilot.press("R")
        await wait_until(pilot, lambda: hit_list.by_rank, what="grouped by rank")
        sections = tree.root.children
        assert [str(s.label) for s in sections] == ["rank 0  2 hits", "rank 1  1 hit"]
        (group,) = sections[0].children
        assert [leaf.data.tensor.node for leaf in group.children] == [RELU, CONV]
        assert " r0" not in str(group.children[0].label)  # its section says the rank
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        await pilot.press("R")
        await wait_until(pilot, lambda: not hit_list.by_rank, what="by watchpoint again")
        assert [str(g.label).split()[0] for g in tree.root.children] == ["#1"]


async def test_r_is_not_offered_with_one_rank() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await start(pilot)
        await pilot.press("2", "R")
        await settled(pilot)
        assert not app.query_one(HitList).by_rank


# ------------------------------------------------------------- the dividers
@pytest.mark.parametrize("size", SIZES)
async def test_dividers_move_and_stay_for_the_session(size: tuple[int, int]) -> None:
    app, _session = make_app()
    width, height = size
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        left, bottom = app.query_one("#left"), app.query_one("#watchpoints")
        before_left, before_bottom = left.outer_size.width, bottom.outer_size.height
        await pilot.press("2", "greater_than_sign", "greater_than_sign")
        await wait_until(
            pilot, lambda: left.outer_size.width == before_left + 8, what="a wider column"
        )
        await pilot.press("left_curly_bracket")
        await wait_until(
            pilot, lambda: bottom.outer_size.height == before_bottom + 2, what="a taller list"
        )
        # z: the maximized pane fills the screen, then the sizes come back
        await pilot.press("z")
        await wait_until(pilot, lambda: left.outer_size.width == width, what="maximized")
        await pilot.press("z")
        await wait_until(pilot, lambda: left.outer_size.width == before_left + 8, what="back")
        # held at the edges: the right column keeps 30 columns, the tree 20
        await pilot.press(*["greater_than_sign"] * 40)
        await wait_until(pilot, lambda: left.outer_size.width == width - 30, what="widest")
        await pilot.press(*["less_than_sign"] * 40)
        await wait_until(pilot, lambda: left.outer_size.width == 20, what="narrowest")
        await pilot.press(*["right_curly_bracket"] * 20)
        await wait_until(pilot, lambda: bottom.outer_size.height == 4, what="shortest")
        # a resized terminal keeps the left column's share
        await pilot.press(*["greater_than_sign"] * 5)
        share = left.outer_size.width / width
        await pilot.resize_terminal(width + 40, height)
        await wait_until(
            pilot,
            lambda: abs(left.outer_size.width - round(share * (width + 40))) <= 1,
            what="the same share of a wider terminal",
        )


# ------------------------------------------------------------------ 80×24 defects
@pytest.mark.parametrize("size", SIZES)
async def test_editor_parameter_inputs_show_at_every_size(size: tuple[int, int]) -> None:
    app, _session = make_app()
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        pick(editor, "weight_initialization")
        await wait_until(
            pilot,
            lambda: editor.query_one("#param-zero_percentage_ge", Input),
            what="WI's parameter input",
        )
        await settled(pilot)
        box = editor.query_one("#param-zero_percentage_ge", Input)
        assert box.value == "100"  # MindInsight's prefilled default
        label = box.parent.query_one(Label) if box.parent is not None else None
        assert label is not None
        assert box.region.width >= 12, box.region  # a box to type in, not cut off
        screen_right = editor.query_one("#editor-right")
        assert box.region.right <= screen_right.region.right
        if size[0] < 100:  # the label stands over its input
            assert label.region.y < box.region.y
        else:  # side by side where there is room
            assert label.region.y == box.region.y


async def test_help_text_reflows_at_80_columns() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZES[1]) as pilot:
        await start(pilot)
        await pilot.press("2", "question_mark")
        screen = await wait_for_screen(pilot, HelpScreen)
        await settled(pilot)
        lines = [line for line in screen.context_text.splitlines() if line.strip()]
        # the hard line breaks used to leave a word or two alone on every other line
        assert all(len(line.split()) > 2 for line in lines[:-1]), lines
        assert len(lines) <= 14, lines
