"""SVG snapshots of the main screens (pytest-textual-snapshot).

Deterministic by construction: the in-memory session (fixed graph, seeded tensors, fixed
source label), a fixed terminal size; before the picture is taken, each flow waits for
what it shows, then for the app's pending work, and the notifications are cleared. Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from typing import Any

from tests.tui.support import CONV, RELU, make_app, settled, wait_for_screen, wait_until
from tuidebug.tui.dialogs import ConfirmScreen
from tuidebug.tui.header import SessionHeader
from tuidebug.tui.hit_list import HitList
from tuidebug.tui.tensor_view import TensorView
from tuidebug.tui.watchpoint_editor import WatchpointEditor
from tuidebug.tui.watchpoint_list import WatchpointList

SIZE = (160, 48)


async def ready(pilot: Any, *, recommended: bool = True) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("y" if recommended else "n")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    if recommended:
        table = pilot.app.query_one(WatchpointList)
        await wait_until(pilot, lambda: table.row_count == 2, what="the 2 recommended ones")
    await settled(pilot)


async def finish(pilot: Any) -> None:
    """Nothing pending, no toast on the picture."""
    await settled(pilot)
    pilot.app.clear_notifications()
    await wait_until(pilot, lambda: not pilot.app.screen.query("Toast"), what="no toasts")
    await settled(pilot)


def test_snapshot_tree_details_and_tensor(snap_compare: Any) -> None:
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node("kernel_graph_0", RELU)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="ReLU's tensor")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_hit_list(snap_compare: Any) -> None:
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("n")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count, what="the step's hits")
        await settled(pilot)
        assert "step 2/4" in str(app.query_one(SessionHeader).render())
        await pilot.press("2")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_watchpoint_editor(snap_compare: Any) -> None:
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot, recommended=False)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("w")
        await wait_for_screen(pilot, WatchpointEditor)
        await settled(pilot)  # its first condition's fields drawn before the keys
        await pilot.press("down", "down")  # from TO onto "TL Tensor above threshold"
        await pilot.press("enter", "1", "0", "0")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_help(snap_compare: Any) -> None:
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot, recommended=False)
        await pilot.press("question_mark")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_online_paused_at_hit(snap_compare: Any) -> None:
    app, _session = make_app(nan_node=RELU, live=True)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("r")
        header = app.query_one(SessionHeader)
        await wait_until(pilot, lambda: "paused at hit" in str(header.render()), what="the hit")
        await finish(pilot)
        assert "paused at hit" in str(app.query_one("#header").render())

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
