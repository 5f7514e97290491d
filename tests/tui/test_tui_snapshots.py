"""SVG snapshots of the main screens (pytest-textual-snapshot).

Deterministic by construction: the in-memory session (fixed graph, seeded tensors, fixed
source label), a fixed terminal size; before the picture is taken, each flow waits for
what it shows, then for the app's pending work, and the notifications are cleared. Update after an intended change with `pytest --snapshot-update`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from textual.app import App, ComposeResult

from tests.tui.support import (
    CONV,
    RELU,
    make_app,
    settled,
    tensor_shown,
    wait_for_screen,
    wait_until,
)
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.editor import WatchpointEditor
from tuidebug.tui.watchpoints.list_pane import WatchpointList

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


class TensorViewApp(App[None]):
    """The tensor view alone: the whole 80×24 window, as when its pane is maximized."""

    def compose(self) -> ComposeResult:
        yield TensorView()


def test_snapshot_tensor_view_80x24(snap_compare: Any) -> None:
    """An SSH window: the hit's line, the slice bar, many rows of numbers, the statistics."""
    values = np.round(np.cos(np.arange(3 * 24 * 16).reshape(3, 24, 16) / 5.0) * 4, 3)
    array = values.astype(np.float32)
    array[0, 2, 3] = np.nan
    array[0, 3, 3] = np.inf
    hit_line = (
        "▲ TO contains NaN or +/-Inf  ·  Tensor overflow, watchpoint 1\n"
        "  the tensor overflowed (NaN or ±Inf) — try: check whether the operator's input "
        "tensors are normal (trace them upstream)."
    )

    async def run_before(pilot: Any) -> None:
        view = pilot.app.query_one(TensorView)
        view.show("Conv2D-op7:0  (Conv2D, step 3)", array, array * 0.5, context=hit_line)
        await tensor_shown(pilot, view)
        view.focus()
        await pilot.press("down", "right")
        await settled(pilot)

    assert snap_compare(TensorViewApp(), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_command_line_lt(
    snap_compare: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`:` then `lt -s size`: the command line's output under the panes, a link selected."""
    from tuidebug.tui.panes.command_line import CommandInput, CommandLine

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # no history of the developer's
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot, recommended=False)
        await pilot.press("colon")
        await wait_until(pilot, lambda: isinstance(app.focused, CommandInput), what="the input")
        panel = app.query_one(CommandLine)
        await pilot.press(*"lt -s size", "enter")
        await wait_until(
            pilot, lambda: panel.running is None and panel.output.line_count > 3, what="lt"
        )
        await pilot.press("shift+tab", "tab")
        await finish(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_main_screen_80x24(snap_compare: Any) -> None:
    """The main screen on an 80×24 terminal (issue 15): every pane in view, the hit list
    focused with its highlighted hit in full under it, the watchpoint list short (a short
    terminal gives the focused pane the rows the others give up)."""
    app, _session = make_app(nan_node=RELU)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("n")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count, what="the step's hits")
        await pilot.press("2")
        await finish(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
