"""Pilot tests of issue 28's "first offender on top": the hit list puts real hits first,
folds each watchpoint's check errors into one line, and names the first NaN/Inf tensor
above the list; the history marks the steps with hits and NaN/Inf."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tui.support import CONV, RELU, make_app, settled, wait_for_screen, wait_until
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.session import HitsArrived
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.hit_list import HitList


async def _nan_step(pilot: Any, session: Any) -> HitList:
    """The app at a NaN step: WCL (#1) failed on two weights with NaN, TO (#2) hit twice."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await settled(pilot)
    wcl = session.create_watchpoint("weight_change_too_large", {"abs_mean_update_ratio_gt": 1.0})
    to = session.create_watchpoint("tensor_overflow", {})
    graph = next(iter(session.graphs))

    def ref(node: str) -> TensorRef:
        return TensorRef(node, 0, 0, 0, graph)

    hits = (
        WatchpointHit(wcl.id, wcl.condition, ref("layer0.weight"), ErrorCode.NAN, (), 90, 1),
        WatchpointHit(wcl.id, wcl.condition, ref("layer1.weight"), ErrorCode.INF, (), 91, 1),
        WatchpointHit(to.id, to.condition, ref(CONV), 0, (), 3, 1),
        WatchpointHit(to.id, to.condition, ref(RELU), 0, (), 4, 1),
    )
    session._hits = list(hits)
    session.emit(HitsArrived(hits, 1))
    hit_list = pilot.app.query_one(HitList)
    await wait_until(pilot, lambda: hit_list.hit_count == 4, what="the 4 hits")
    await pilot.press("2")
    await settled(pilot)
    return hit_list


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_real_hits_first_errors_folded_and_the_first_offender_named(
    size: tuple[int, int],
) -> None:
    app, session = make_app()
    async with app.run_test(size=size) as pilot:
        hit_list = await _nan_step(pilot, session)
        tree = hit_list.tree_view
        groups = tree.root.children
        # TO (#2) has real hits: it comes before WCL (#1), which has check errors only
        assert [str(g.label).split()[0] for g in groups] == ["#2", "#1"]
        assert [type(leaf.data).__name__ for leaf in groups[0].children] == ["WatchpointHit"] * 2
        (fold,) = groups[1].children
        assert str(fold.label).startswith("2 check errors: Tensor contains NaN.")
        assert not fold.is_expanded and len(fold.children) == 2
        # the alert: the first to run of the tensors with NaN/Inf, counted by kind
        alert = hit_list.alert_text
        assert alert.startswith("first NaN/Inf: Conv2D-op0 at step 1 (iteration 0) — ")
        assert alert.endswith("1 NaN, 1 ±Inf, 2 NaN-or-Inf tensors")
        assert hit_list.query_one("#hit-alert").display
        # the cursor waits on the first offender, the group's title in view above it
        assert tree.cursor_node is groups[0].children[0]
        assert tree.scroll_y == 0
        # Enter on the fold opens it; a new hit list keeps it open
        tree.focus()
        tree.move_cursor(fold)
        await pilot.press("enter")
        await wait_until(pilot, lambda: fold.is_expanded, what="the fold to open")
        session.emit(HitsArrived(tuple(session._hits), 1))
        await settled(pilot)
        assert hit_list.tree_view.root.children[1].children[0].is_expanded


async def test_no_alert_without_nan_or_inf() -> None:
    app, session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await settled(pilot)
        wcl = session.create_watchpoint("weight_change_too_large", {"abs_mean_update_ratio_gt": 1})
        graph = next(iter(session.graphs))
        no_prev = WatchpointHit(
            wcl.id, wcl.condition, TensorRef("layer0.weight", 0, 0, 0, graph), ErrorCode.NO_PREV
        )
        session.emit(HitsArrived((no_prev,), 1))
        hit_list = app.query_one(HitList)
        await wait_until(pilot, lambda: hit_list.hit_count == 1, what="the hit")
        assert hit_list.alert_text == ""
        assert not hit_list.query_one("#hit-alert").display


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_the_watchpoint_list_names_each_watchpoints_graph_when_they_differ(
    size: tuple[int, int],
) -> None:
    from textual.coordinate import Coordinate

    from tuidebug.tui.watchpoints.list_pane import WatchpointList

    app, session = make_app()
    async with app.run_test(size=size) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await settled(pilot)
        table = app.query_one(WatchpointList)
        session.create_watchpoint("tensor_overflow", {})
        await wait_until(pilot, lambda: len(table.watchpoints) == 1, what="one watchpoint")
        assert "graph" not in [str(c.label) for c in table.columns.values()]
        # watchpoints of one graph each (an online training of several graphs)
        session.create_watchpoint("tensor_overflow", {}, graph_name="kernel_graph_7")
        await wait_until(pilot, lambda: len(table.watchpoints) == 2, what="two watchpoints")
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[-2:] == ["graph", "watches"]
        assert [str(table.get_cell_at(Coordinate(r, len(labels) - 2))) for r in (0, 1)] == [
            "every graph",
            "kernel_graph_7",
        ]


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_the_history_counts_hits_per_step_and_marks_nan_inf(size: tuple[int, int]) -> None:
    from textual.coordinate import Coordinate
    from textual.widgets import DataTable

    from tuidebug.tui.kit.dialogs import HistoryScreen

    app, session = make_app()
    async with app.run_test(size=size) as pilot:
        await _nan_step(pilot, session)
        await pilot.press("h")
        screen = await wait_for_screen(pilot, HistoryScreen)
        strip = str(screen.query_one("#history-strip").render())
        assert "1✖4" in strip  # step 1: 4 hits, NaN/Inf among them
        table = screen.query_one(DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        hits = labels.index("hits")
        assert str(table.get_cell_at(Coordinate(0, hits))) == "4 NaN/Inf"
        assert str(table.get_cell_at(Coordinate(1, hits))) == ""  # not checked yet


async def test_typing_a_filter_keeps_the_alert_without_working_it_out_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The alert names the first NaN/Inf of every hit, whatever the filters let through:
    each key typed in the name filter rebuilds the list, not the alert (a NaN step has
    thousands of hits to scan)."""
    from tuidebug.core import hit_rules  # the hit list loads it with the first hits

    app, session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        hit_list = await _nan_step(pilot, session)
        alert = hit_list.alert_text
        assert alert.startswith("first NaN/Inf: Conv2D-op0 at step 1 (iteration 0) — ")
        scans: list[int] = []
        real = hit_rules.nan_inf_summary

        def counted(hits: Any) -> Any:
            scans.append(1)
            return real(hits)

        monkeypatch.setattr(hit_rules, "nan_inf_summary", counted)
        hit_list.focus_filters()
        await pilot.press("R", "e", "L", "u")
        await wait_until(pilot, lambda: hit_list.shown_count == 1, what="the ReLU hit alone")
        assert scans == []
        assert hit_list.alert_text == alert
        assert hit_list.query_one("#hit-alert").display
        hit_list.clear_name_filter()
        await settled(pilot)
        assert hit_list.shown_count == 4
        assert scans == [] and hit_list.alert_text == alert
