"""A statistic-only dump in the TUI: the tensor view shows the statistics statistic.csv holds
and says that the values were not dumped; a watchpoint the CSV cannot decide is a notice."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.constructed import statistic_dump as sd
from tests.tui.support import settled, wait_for_notice, wait_until
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.tensor.reads import NOT_DUMPED
from tuidebug.tui.tensor.view import TensorView

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "constructed" / "statistic_new"
SIZE = (120, 40)


async def test_a_statistic_only_tensor_shows_its_statistics() -> None:
    session = OfflineSession(FIXTURE)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO", "TL:abs_mean_gt=1"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        await settled(pilot)
        await pilot.press("n")
        await wait_until(pilot, lambda: session.metadata.step == 1, what="step 1")
        notice = await wait_for_notice(pilot, "abs_mean_gt")
        assert "statistic-only" in notice and "TensorTooLarge" in notice
        await wait_until(pilot, lambda: bool(session.hits), what="the overflow hit")
        assert {h.tensor.node for h in session.hits if h.error_code == 0} == {sd.LOG}
        graph = next(iter(app.graphs))
        app._request_tensor(graph, sd.LOG, 0, None)
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view.state == "error", what="the statistics")
        shown = str(view.query_one("#tv-message", Static).content)
        assert NOT_DUMPED in shown
        assert "NaN 0" in shown and "-Inf 2" in shown and "max 0.693147" in shown
