"""SVG snapshots of the main screens (pytest-textual-snapshot).

Deterministic by construction: the in-memory session (fixed graph, seeded tensors, fixed
source label), a fixed terminal size, workers settled and notifications cleared before the
picture is taken. Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from typing import Any

from tui_support import FakeSession

from tuidebug.tui.app import DebuggerApp

SIZE = (160, 48)
CONV = "Default/network-Net/layer0-Block/Conv2D-op0"
RELU = "Default/network-Net/layer0-Block/ReLU-op1"


async def settle(pilot: Any, rounds: int = 4) -> None:
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def make_app(**kwargs: Any) -> tuple[DebuggerApp, FakeSession]:
    session = FakeSession(nan_node=RELU, **kwargs)
    return DebuggerApp(session, start_session=True), session


async def ready(pilot: Any, *, recommended: bool = True) -> None:
    await settle(pilot)
    await pilot.press("y" if recommended else "n")
    await settle(pilot)


async def finish(pilot: Any) -> None:
    await settle(pilot)
    pilot.app.clear_notifications()
    await pilot.pause()


def test_snapshot_tree_details_and_tensor(snap_compare: Any) -> None:
    app, _session = make_app()

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node("kernel_graph_0", RELU)
        await pilot.press("enter")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_hit_list(snap_compare: Any) -> None:
    app, _session = make_app()

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("2")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_watchpoint_editor(snap_compare: Any) -> None:
    app, _session = make_app()

    async def run_before(pilot: Any) -> None:
        await ready(pilot, recommended=False)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("w")
        await settle(pilot)
        await pilot.press("down", "down")  # from TO onto "TL Tensor above threshold"
        await pilot.press("enter", "1", "0", "0")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_help(snap_compare: Any) -> None:
    app, _session = make_app()

    async def run_before(pilot: Any) -> None:
        await ready(pilot, recommended=False)
        await pilot.press("question_mark")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_online_paused_at_hit(snap_compare: Any) -> None:
    app, _session = make_app(live=True)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("r")
        await finish(pilot)
        assert "paused at hit" in str(app.query_one("#header").render())

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
