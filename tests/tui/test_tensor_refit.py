"""The tensor pane refits its body to every size it gets, with or without a Resize event.

At 80×24, `z` on the tensor pane sometimes left it "compact" (the statistics' counts line
gone, the tolerance label cut to "tol"): Textual refreshes a layout made for a scroll
(`Screen._refresh_layout(scroll=True)`) without posting Resize to a widget it grew. The
pane now also refits after each layout whose size is not the one it fitted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Label

from tests.tui.support import settled, tensor_shown, wait_until
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.tensor.view import TensorView


def _label(view: TensorView) -> str:
    return str(view.query_one("#tv-tolerance-label", Label).render())


async def _matmul_shown(app: DebuggerApp, pilot: Any) -> TensorView:
    """A MatMul's output in the tensor pane, at step 1 (step 0 holds no values): the
    recommended watchpoints declined (`n`), then one step (`n`)."""
    await wait_until(pilot, lambda: app.loaded, what="the dump loaded")
    await settled(pilot)
    await pilot.press("n")
    await settled(pilot)
    await pilot.press("n")
    await wait_until(pilot, lambda: (app.session.metadata.step or 0) >= 1, what="step 1")
    await settled(pilot)
    graph = app.current_graph
    assert graph is not None
    node = next(n for n in app.graphs[graph].nodes.values() if n.op_type == "MatMul")
    app._request_tensor(graph, node.name, 0, None)
    view = app.query_one(TensorView)
    await tensor_shown(pilot, view)
    return view


async def test_the_maximized_tensor_pane_at_80x24_is_neither_compact_nor_narrow(
    demo_dump: Path,
) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            view = await _matmul_shown(app, pilot)
            await pilot.press("5")
            await settled(pilot)
            assert view.has_class("-compact") and _label(view) == "tol"  # a small pane
            await pilot.press("z")
            await wait_until(
                pilot,
                lambda: not view.has_class("-compact") and _label(view) == "tolerance",
                what="the maximized pane refitted",
            )
    finally:
        session.close()


async def test_a_layout_without_a_resize_refits_the_pane(demo_dump: Path) -> None:
    """The mechanism itself, made certain: the pane believes it was fitted to another size
    (as when its Resize never came); the next layout refit it."""
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            view = await _matmul_shown(app, pilot)
            view.add_class("-compact")  # what a missed Resize left behind
            view._fitted = None
            app.screen.refresh(layout=True)
            await wait_until(
                pilot, lambda: not view.has_class("-compact"), what="the pane refitted"
            )
    finally:
        session.close()
