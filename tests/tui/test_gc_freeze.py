"""What the start and the load built is frozen out of the collector's sight once the graphs
are shown (issue 28: a full collection walked ~150,000 long-lived objects, ~0.1 s landing
on a key such as Esc), and given back to it when the app ends."""

from __future__ import annotations

import gc
from pathlib import Path

from tests.tui.support import wait_until
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp


async def test_the_loaded_app_is_frozen_and_thawed_when_it_ends(dump_2_10: Path) -> None:
    gc.unfreeze()  # whatever an earlier test left frozen is not this app's
    session = OfflineSession(dump_2_10)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.loaded, what="the dump loaded")
            await wait_until(pilot, lambda: gc.get_freeze_count() > 0, what="a frozen start")
            assert gc.get_freeze_count() > 10_000  # the app's widgets, graphs, styles
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        session.close()
